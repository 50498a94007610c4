"""The branches around a line of one file: read at query time for ``atenmap --why``, never stored.

Note [Branches on the way]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Which of a function's calls and launches runs is decided in the function's own text:
CUDALoops.cuh's gpu_kernel_impl_nocast takes ``if (contiguous) { return launch_vectorized_kernel
(...); }`` and otherwise falls through to launch_legacy_kernel; launch_vectorized_kernel picks a
launch by ``switch (vec_size) { case 4: ... }``; Loops.cuh's gpu_kernel leaves early when
``!iter.can_use_32bit_indexing()``. For a line of a function, the branches that hold there are
the constructs whose span contains it, inside the innermost function definition only:

    if      the consequence of an ``if``                     ``if (contiguous)``
    else    the ``else`` of an ``if``                        ``else of if (contiguous)``
    return  what follows ``if (c) return ...;`` (or a block  ``after if (contiguous) return``
            ending in a return, with no else) in its block
    ternary one side of ``c ? a : b``                        ``c ? here : …`` / ``c ? … : here``
    switch  the body of a ``switch``                         ``switch (vec_size)``
    case    one ``case``/``default`` of it                   ``case 4:``
    dispatch an ``AT_DISPATCH_*`` macro's argument list       the macro's name and arguments

The ``if``/``switch`` constructs come from tree-sitter (queries/branches.scm); the AT_DISPATCH_*
macros from the text by balanced parentheses, since torchgen's ``AT_DISPATCH_CASE(a, ...)
AT_DISPATCH_CASE(b, ...)`` (UfuncCUDA_add.cu) makes tree-sitter recover with ERROR nodes that
hide every second case. An ``else`` of a literal ``if (false)`` (torchgen's ``if (false) {} else
if (...)`` chains) holds always and is left out.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from atenmap.extract import macros, parse, preproc
from atenmap.extract.blanking import CODE_NOISE, spaces
from atenmap.extract.nodes import is_word


@dataclass(frozen=True)
class Branch:
    kind: str  # if, else, return, ternary, switch, case, dispatch
    text: str  # as the source writes it ("if (contiguous)"); dispatch: the macro's name
    line: int  # 1-based line of the construct (the ``else`` keyword's for else)
    start: int  # the bytes where it holds
    end: int
    args: tuple[str, ...] = ()  # dispatch: the macro's arguments as written (a long one, the lambda: …)


_TRIVIAL = {"(false)", "(0)"}


def _case_head(text: str) -> str | None:
    """A case label node's text up to its label's colon (``case 4:``, ``case ConvBackend::Cudnn:``,
    ``default :``), or None: after ``case`` (a whole word) the first ``:`` that is no half of a
    ``::``; after ``default``, blanks and a ``:`` not followed by another one."""
    if text.startswith("case") and not is_word(text[4:5]):
        colon = text.find(":", 4)
        while colon >= 0 and text.startswith(":", colon + 1):
            colon = text.find(":", colon + 2)  # past the whole ``::`` of a qualified enumerator
        return text[:colon + 1] if colon >= 0 else None
    if text.startswith("default"):
        rest = text[7:].lstrip()
        if rest.startswith(":") and not rest.startswith("::"):
            return text[:len(text) - len(rest) + 1]
    return None


# AT_DISPATCH_* are macros whose lambda argument tree-sitter cannot tie to the macro: their uses are
# found in the masked text by string code (the word, then its parenthesis), as a regex of the same
# shape did, with the same uses on every file of both test trees and fuzz (bench/regex_equal.py).
_DISPATCH_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")  # ``\w`` in bytes


def dispatch_uses(masked: bytes) -> list[tuple[int, int, bytes]]:
    """``(start, after, name)`` of each ``AT_DISPATCH_X (`` in ``masked``: the name a whole word's
    start, upper-case letters, digits and ``_``; ``after``: the byte after its ``(``."""
    out = []
    at = masked.find(b"AT_DISPATCH_")
    while at >= 0:
        end = at + 12
        while end < len(masked) and masked[end] in _DISPATCH_NAME:
            end += 1
        paren = end
        while paren < len(masked) and masked[paren] in b" \t\n\r\x0b\x0c":
            paren += 1
        if end > at + 12 and (at == 0 or masked[at - 1] not in _WORD) and masked[paren:paren + 1] == b"(":
            out.append((at, paren + 1, masked[at:end]))
            at = masked.find(b"AT_DISPATCH_", paren + 1)
        else:
            at = masked.find(b"AT_DISPATCH_", at + 1)
    return out


def _flat(text: bytes) -> str:
    return " ".join(text.decode("utf-8", "replace").split())


class FileBranches:
    """The branches of one file's bytes (``src``), found once; ``around(line)`` for each site."""

    def __init__(self, src: bytes, lang: str):
        self.src = src
        self._lines = [0] + [m.end() for m in re.finditer(rb"\n", src)]  # byte where each line starts
        self.functions: list[tuple[int, int]] = []
        self.branches: list[Branch] = []
        for match in parse.captures(src, lang, "branches"):
            self._add(match)
        self.branches.extend(self._dispatches())
        self._conds: preproc.Conditions | None = None

    def _line_of(self, byte: int) -> int:
        return bisect.bisect_right(self._lines, byte)

    def _add(self, match: list[parse.Capture]) -> None:
        caps = {c.name: c for c in match}
        main = next(c for c in match if c.name.startswith("branch."))
        kind = main.name.removeprefix("branch.")
        if kind == "function":
            self.functions.append((main.start, main.end))
            return
        cond = caps.get("cond")
        head = _flat(self.src[main.start:cond.end]) if cond is not None else ""
        cond_text = _flat(self.src[cond.start:cond.end]) if cond is not None else ""
        add = self.branches.append
        if kind == "if" and cond_text not in _TRIVIAL:
            add(Branch("if", head, main.line, caps["then"].start, caps["then"].end))
        elif kind == "else" and cond_text not in _TRIVIAL:
            add(Branch("else", f"else of {head}", caps["else"].line, caps["else"].start, caps["else"].end))
        elif kind == "return" and cond_text not in _TRIVIAL:
            add(Branch("return", f"after {head} return", main.line, main.end, main.parent_end))
        elif kind == "ternary":
            add(Branch("ternary", f"{cond_text} ? here : …", main.line, caps["then"].start, caps["then"].end))
            add(Branch("ternary", f"{cond_text} ? … : here", caps["else"].line, caps["else"].start, caps["else"].end))
        elif kind == "switch":
            add(Branch("switch", head, main.line, caps["body"].start, caps["body"].end))
        elif kind == "case":
            label = _case_head(self.src[main.start:main.end].decode("utf-8", "replace"))
            add(Branch("case", " ".join(label.split()) if label is not None else "case", main.line, main.start, main.end))

    def _dispatches(self) -> list[Branch]:
        """AT_DISPATCH_* uses, by balanced parentheses in the text (comments and literals masked)."""
        if b"AT_DISPATCH_" not in self.src:
            return []
        masked = CODE_NOISE.sub(spaces, self.src)
        out = []
        for start, after, name in dispatch_uses(masked):
            close = macros.balanced_paren(masked, after - 1)
            if close < 0:
                continue
            i = close - 1  # the macro's closing parenthesis
            inner = self.src[after:i].decode("utf-8", "replace")
            args = tuple(" ".join(a.split()) if len(a) < 200 else "…" for a in macros.split_args(inner))
            out.append(Branch("dispatch", name.decode(), self._line_of(start), after, i, args))
        return out

    def offset(self, line: int, name: str = "") -> int:
        """The byte of ``name`` on 1-based ``line`` (its first non-blank byte when not there)."""
        if not 1 <= line <= len(self._lines):
            return -1
        start = self._lines[line - 1]
        end = self._lines[line] if line < len(self._lines) else len(self.src)
        text = self.src[start:end]
        at = text.find(name.encode()) if name else -1
        if at < 0:
            at = len(text) - len(text.lstrip())
        return start + at

    def around(self, line: int, name: str = "") -> list[Branch]:
        """The branches holding at ``name`` on ``line``, outermost first, within the innermost
        function there (dispatch macros included wherever they are). See Note [Branches on the way]."""
        pos = self.offset(line, name)
        if pos < 0:
            return []
        inside = [f for f in self.functions if f[0] <= pos < f[1]]
        lo, hi = max(inside) if inside else (0, len(self.src))
        out = [b for b in self.branches if b.start <= pos < b.end
               and (b.kind == "dispatch" or lo <= b.start and b.end <= hi)]
        return sorted(out, key=lambda b: (b.line, b.start))

    def condition(self, line: int) -> tuple[str, int]:
        """The preprocessor condition at ``line`` and the line of the directive that opens it
        (Note [Preprocessor conditions]); ``("", 0)`` outside any conditional."""
        if self._conds is None:
            self._conds = preproc.read_conditions(self.src.decode("utf-8", "replace"))
        cond = self._conds.at(line)
        if not cond:
            return "", 0
        opened = line
        while opened > 1 and (self._conds.at(opened - 1) == cond or self._conds.at(opened - 1).startswith(cond + " && ")):
            opened -= 1
        return cond, opened - 1


__all__ = ["Branch", "FileBranches"]
