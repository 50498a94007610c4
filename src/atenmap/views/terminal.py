"""Lines that fit a terminal: spans with a style and an optional link, cut to a width, painted
with colour and OSC-8 hyperlinks only where a terminal shows them.

Note [Terminal output]
~~~~~~~~~~~~~~~~~~~~~~
Text views build each line as spans (``Span``), then ``Terminal.render`` fits and paints them:

* width: ``$COLUMNS`` when set, else the terminal's width when stdout is a terminal, else none —
  a script reading a pipe gets whole lines (``--wide`` asks for whole lines anywhere). A line
  longer than the width loses its end to ``…``; a location column is shortened in the middle
  (``aten/src/…/cuda/CUDALoops.cuh:158``) so the file name and line survive.
* colour: only on a terminal, never with ``NO_COLOR`` set (no-color.org) or ``TERM=dumb``.
* hyperlinks (OSC-8): only on a terminal; the text stays ``path:line`` and the link target is
  the permalink (bundled index) or the local file.
"""
from __future__ import annotations

from atenmap.config import printable

import os
from dataclasses import dataclass
from typing import Iterable, Mapping, TextIO

ELLIPSIS = "…"

# Span style -> SGR parameters.
_SGR = {
    "heading": "1", "dim": "2", "generated": "33", "warning": "33",
    "role.launch": "1;32", "role.jit": "1;32", "role.kernel": "32", "role.native": "36", "role.library": "1;35",
    "role.register": "35", "role.stub_call": "34", "role.yaml": "2", "role.meta": "2",
    "role.lowering": "1;36", "role.decomposition": "33", "role.fallback": "1;33", "role.template": "36",
    "role.extern": "35", "role.pattern": "2",
}


@dataclass(frozen=True)
class Span:
    text: str
    style: str = ""  # a key of _SGR, or "" for plain
    url: str | None = None  # OSC-8 link target


Line = tuple[Span, ...]


def plain(line: Iterable[Span]) -> str:
    return "".join(s.text for s in line)


def shorten_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by ``…``: the file name and
    line survive whole when they fit, then as many directories before them as leave room for the
    path's start (``aten/src/…/cuda/CUDALoops.cuh:158``)."""
    if len(text) <= width:
        return text
    scheme = text[:4] if text.startswith("gen:") and width > 12 else ""  # See views/text.py's GEN
    if scheme:
        return scheme + shorten_middle(text[4:], width - 4)
    parts = text.split("/")
    tail = parts[-1]
    if len(parts) < 2 or len(tail) + 2 > width:
        return ELLIPSIS + text[len(text) - width + 1:] if width > 1 else text[:width]
    i = len(parts) - 1
    while i > 1 and len(parts[i - 1]) + 1 + len(tail) <= (width - 2) * 2 // 3:
        i -= 1
        tail = f"{parts[i]}/{tail}"
    room = width - 2 - len(tail)  # "…/" joins head and tail
    head = text[:room]
    if "/" in head:
        head = head[: head.rindex("/") + 1]
    return f"{head}{ELLIPSIS}/{tail}"


def fold_prefix(prefix: str, depth: int, levels: int | None) -> str:
    """A tree's indentation (3 characters a level) kept to its last ``levels`` levels: deeper
    lines show their depth as a number where the dropped levels were (`` 9›│  ├─ ``)."""
    if levels is None or len(prefix) <= 3 * levels:
        return prefix
    keep = 3 * (levels - 1)
    return f"{depth}›".rjust(3) + (prefix[-keep:] if keep else "")


def tree_levels(width: int | None, used: int, room: int = 24) -> int | None:
    """How many 3-character tree levels a line of ``width`` can indent when ``used`` characters
    are taken by its other columns and ``room`` are kept for the name (None: no width, no cap)."""
    return None if width is None else max(2, (width - used - room) // 3)


def _chunks(text: str, first: int, room: int) -> list[str]:
    """``text`` in pieces of at most ``first`` then ``room`` characters, each cut just before or
    after a ``::`` or ``/`` in its second half when there is one."""
    out, size = [], first
    while len(text) > size:
        cut = max(text.rfind("::", 0, size - 1) + 2, text.rfind("/", 0, size) + 1)
        cut = size if text.startswith(("/", "::"), size) or cut <= size // 2 else cut
        out.append(text[:cut])
        text, size = text[cut:], room
    return out + [text]


def hang(name: str, indent: int, width: int | None) -> list[str]:
    """``name`` on continuation lines of at most ``width`` characters: at ``indent`` when it fits
    there, else as far right as it fits (the last column left for ``…``), else in pieces (cut after ``::`` or ``/``) at two spaces.
    A name is never shortened, so it can be found whole unless it is wider than the terminal."""
    if width is None or indent + len(name) < width:
        return [" " * indent + name]
    if len(name) + 3 <= width:  # one column left free: what follows the name is cut to "…" there
        return [" " * (width - 1 - len(name)) + name]
    return ["  " + p for p in _chunks(name, width - 2, width - 2)]


def wrap_words(text: str, width: int | None, indent: str = "") -> list[str]:
    """``text`` broken at spaces into lines of at most ``width``, continuations starting with
    ``indent``; a word longer than a line goes on in pieces (:func:`_chunks`). Never mid-word
    otherwise; whole when there is no width."""
    if width is None or len(text) <= width:
        return [text]
    lines: list[str] = []
    cur = ""
    for word in text.split(" "):
        if cur and len(cur) + 1 + len(word) <= width:
            cur += " " + word
            continue
        room = width - len(cur) - 1 if cur else width - len(indent if lines else "")
        if len(word) > width - len(indent) and room > 8:  # a long path: fill this line, go on below
            first, *rest = _chunks(word, room, width - len(indent))
            lines.append(f"{cur} {first}" if cur else (indent if lines else "") + first)
            lines += [indent + p for p in rest[:-1]]
            cur = indent + rest[-1] if rest else ""
            continue
        if cur:
            lines.append(cur)
        cur = (indent if lines else "") + word
    return lines + ([cur] if cur.strip() else [])


def fit(line: Iterable[Span], width: int | None) -> Line:
    """``line`` cut to ``width`` visible characters, ending in ``…`` when cut; whole when None."""
    spans = tuple(line)
    if width is None or len(plain(spans)) <= width:
        return spans
    out: list[Span] = []
    room = width - 1
    for s in spans:
        if room <= 0:
            break
        out.append(Span(s.text[:room], s.style, s.url))
        room -= len(out[-1].text)
    out.append(Span(ELLIPSIS))
    return tuple(out)


@dataclass(frozen=True)
class Terminal:
    """How text is written: ``width`` (None: never cut), ``color``, ``links`` (OSC-8)."""

    width: int | None = None
    color: bool = False
    links: bool = False

    @classmethod
    def detect(cls, stream: TextIO, env: Mapping[str, str] | None = None, wide: bool = False) -> "Terminal":
        """See Note [Terminal output]."""
        env = os.environ if env is None else env
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        width = None
        if not wide:
            cols = env.get("COLUMNS", "")
            if cols.isdigit() and int(cols) > 0:
                width = int(cols)
            elif tty:
                import shutil  # only for a terminal: its import costs every piped query ~2 ms

                width = shutil.get_terminal_size((120, 24)).columns
        dumb = env.get("TERM", "") == "dumb"
        return cls(width=width, color=tty and not dumb and not env.get("NO_COLOR"), links=tty and not dumb)

    def render(self, line: Iterable[Span]) -> str:
        out = []
        for s in fit(line, self.width):
            text = printable(s.text)  # a file name or yaml string cannot forge lines or escapes
            if self.color and s.style in _SGR and text.strip():
                text = f"\x1b[{_SGR[s.style]}m{text}\x1b[0m"
            if self.links and s.url:
                text = f"\x1b]8;;{s.url}\x1b\\{text}\x1b]8;;\x1b\\"
            out.append(text)
        return "".join(out)

    def lines(self, lines: Iterable[Iterable[Span]]) -> list[str]:
        return [self.render(ln) for ln in lines]
