"""Editor integration: quickfix lines, the command that opens an editor at a step, OSC-8 links.

``render_lines`` writes one ``path:line:col: role symbol — detail`` line per step that has a file,
the format of grep -n / compilers that vim's ``-q``/``:cfile``, emacs' compilation mode and VS
Code's problem matchers read. Steps are numbered in that order (``located_steps``); ``atenmap
open --step N`` opens the N-th.
"""
from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from atenmap.config import printable
from atenmap.errors import AtenmapError
from atenmap.model import Chain, Excerpt, Role, Step
from atenmap.views.terminal import Span, Terminal
from atenmap.views import UsageError

# Preferred step to open when none is asked for: the first launch, else kernel, else native.
DEFAULT_ROLES = (Role.LAUNCH, Role.KERNEL, Role.NATIVE)


def located_steps(chain: Chain) -> list[Step]:
    """Steps with a file, in tree order (Python bindings, then each key), each (file, line, role,
    symbol) once."""
    seen: set[tuple] = set()
    out = []
    for root in [*chain.bindings, *(s for kc in chain.keys for s in kc.steps)]:
        for s in root.walk():
            k = (s.file, s.line, s.role, s.symbol)
            if s.file is None or s.line is None or k in seen:
                continue
            seen.add(k)
            out.append(s)
    return out


def step_path(chain: Chain, step: Step, absolute: bool = True) -> str:
    return str(Path(chain.source.root, step.file)) if absolute else step.file


def render_lines(chain: Chain, absolute: bool = False) -> list[str]:
    """``path:line:1: role symbol — detail`` per located step (paths relative to the source root
    unless ``absolute``)."""
    out = []
    for s in located_steps(chain):
        mark = " [generated]" if s.generated else ""
        detail = f" — {s.detail}" if s.detail else ""
        out.append(printable(f"{step_path(chain, s, absolute)}:{s.line}:1: {s.role} {s.symbol}{mark}{detail}"))
    return out


def pick_step(chain: Chain, number: int | None = None, role: str | None = None) -> Step:
    """The step ``atenmap open`` opens: the ``number``-th located step (1-based), the first of
    ``role``, or the chain's first run (Chain.runs, main path first: what runs first), else the
    first launch, kernel or native step, else the yaml entry."""
    steps = located_steps(chain)
    if not steps:
        raise AtenmapError(f"{chain.op.name}: no step of the chain has a file to open")
    if number is not None and role is not None:
        raise UsageError("give --step or --role, not both")
    if number is not None:
        if not 1 <= number <= len(steps):
            raise AtenmapError(f"--step {number}: {chain.op.name} has steps 1..{len(steps)} "
                               "(numbered as `atenmap lines` prints them)")
        return steps[number - 1]
    if role is None:
        first = next((r for r in chain.runs if r.loc is not None), None)
        if first is not None:
            return Step(first.role, first.name, first.loc, generated=first.generated)
    for r in (role,) if role else DEFAULT_ROLES:
        hit = next((s for s in steps if s.role == r), None)
        if hit is not None:
            return hit
    if role:
        have = ", ".join(dict.fromkeys(s.role for s in steps))
        raise AtenmapError(f"--role {role}: {chain.op.name} has no such step with a file (roles: {have})")
    return steps[0]


# ---- editor commands ------------------------------------------------------------------------
_PLUS_LINE = {"vim", "nvim", "vi", "gvim", "mvim", "view", "vim.tiny", "vim.basic", "vim.nox", "vim.gtk3",
              "nvi", "elvis", "emacs", "emacsclient", "nano", "rnano", "pico", "micro", "kak", "joe", "mg",
              "gedit", "kate", "jed", "ne"}
_GOTO = {"code", "codium", "code-insiders", "code-oss", "vscodium", "cursor", "windsurf"}
_COLON = {"subl", "sublime_text", "hx", "helix", "zed", "mate"}


def editor_from_env(env: dict[str, str] | None = None) -> list[str]:
    """``$VISUAL`` else ``$EDITOR``, split like a shell would; UsageError when neither is set."""
    env = os.environ if env is None else env
    for var in ("VISUAL", "EDITOR"):
        value = env.get(var, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as exc:
                raise UsageError(f"${var}={value!r} cannot be split into words: {exc}") from None
            if argv:
                return argv
    raise UsageError("no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=vim)")


def editor_command(editor: list[str], path: str, line: int) -> list[str]:
    """The argv that opens ``path`` at ``line`` in ``editor`` (its own argv, options kept)."""
    name = os.path.basename(editor[0]).lower().removesuffix(".exe")
    if name in _PLUS_LINE:
        return [*editor, f"+{line}", path]
    if name in _GOTO:
        return [*editor, "--goto", f"{path}:{line}"]
    if name in _COLON:
        return [*editor, f"{path}:{line}"]
    return [*editor, path]


def excerpt_lines(ex: Excerpt, term: Terminal | None = None) -> list[str]:
    """``atenmap show``: the place and its file, then numbered lines, ``>`` at the asked line; long
    lines cut to the terminal's width."""
    term = term or Terminal()
    width = len(str(ex.first + len(ex.lines) - 1))
    out = [(Span(ex.place, "heading"), Span(f"  ({ex.path})", "dim"))]
    for i, text in enumerate(ex.lines, ex.first):
        mark = ">" if i == ex.line else " "
        out.append((Span(f"{mark} {i:>{width}}  ", "heading" if i == ex.line else "dim"), Span(text.expandtabs(4))))
    return term.lines(out)


# ---- OSC-8 hyperlinks -----------------------------------------------------------------------
def hyperlinks_supported(stream: TextIO | None = None, env: dict[str, str] | None = None) -> bool:
    """A terminal that can show OSC-8 links: a tty, not ``TERM=dumb``, no ``NO_COLOR``."""
    stream = sys.stdout if stream is None else stream
    env = os.environ if env is None else env
    if "NO_COLOR" in env or env.get("TERM", "") in ("dumb", ""):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def hyperlink(text: str, abs_path: str, line: int | None = None, stream: TextIO | None = None,
              env: dict[str, str] | None = None) -> str:
    """``text`` as an OSC-8 link to ``file://HOST/abs_path#LINE`` (kitty's hyperlinked_grep
    convention) when ``stream`` (stdout) is a terminal that shows them; plain ``text`` otherwise."""
    if not hyperlinks_supported(stream, env):
        return text
    url = f"file://{quote(socket.gethostname())}{quote(abs_path)}" + (f"#{line}" if line else "")
    return f"\x1b]8;;{url}\x1b\\{text}\x1b]8;;\x1b\\"
