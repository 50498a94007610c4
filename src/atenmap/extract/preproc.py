"""The preprocessor condition in force at each line of a file, read from the text.

Note [Preprocessor conditions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen keeps ROCm-only, lazy-linalg and per-toolkit code in the same files as the CUDA code, behind
``#ifdef USE_ROCM``, ``#if defined(BUILD_LAZY_CUDA_LINALG)``, ``#if AT_MAGMA_ENABLED()`` ... A
fact's ``cond`` is the stack of the conditionals around its line, outermost first, joined with
`` && ``:

    #if A          -> A
    #ifdef X       -> defined(X)
    #ifndef X      -> !defined(X)
    #elif B        -> !(A) && B            (every earlier branch negated, then B)
    #else          -> !(A)                 (after #if A / #elif B: !(A) && !(B))

Conditions are copied as written (comments dropped, whitespace collapsed, continuation lines
joined); nothing is evaluated. An include guard (``#ifndef FOO_H`` directly followed by
``#define FOO_H``, before any code) and ``#pragma once`` are not conditions. Lines outside any
conditional have the empty condition.
"""
from __future__ import annotations

import bisect
import re

from atenmap.extract.blanking import replace_comments  # comments inside a #if line
from atenmap.extract.linestart import line_matches

# not a query: preprocessor text (#if lines)
_DIRECTIVE = re.compile(
    r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)


def _clean(text: str) -> str:
    if "\\" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    if "/" in text:
        text = replace_comments(text, " ")
    return " ".join(text.split())


MAX_DEPTH = 32
MAX_BRANCHES = 32
MAX_COND = 4096
CUT = "…"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_COND else text[:MAX_COND] + CUT


class Conditions:
    """``at(line)`` -> the condition in force at a 1-based line. See Note [Preprocessor conditions]."""

    def __init__(self, starts: list[int], conds: list[str]):
        self._starts = starts
        self._conds = conds

    def __bool__(self) -> bool:
        """False when no line has a condition (no conditionals but an include guard)."""
        return any(self._conds)

    def at(self, line: int) -> str:
        i = bisect.bisect_right(self._starts, line) - 1
        return self._conds[i] if i >= 0 else ""


def _frame_text(branches: list[str], current: str | None) -> str:
    """One conditional's condition: earlier branches negated, then the current one (None: #else);
    at most MAX_BRANCHES of them (Note [Bounded conditions])."""
    parts = [f"!({b})" for b in branches[:MAX_BRANCHES]]
    if len(branches) > MAX_BRANCHES:
        parts.append(CUT)
    if current is not None:
        parts.append(current)
    return " && ".join(parts)


def _joined(stack: list[tuple[list[str], str | None, bool]], texts: list[str | None]) -> str:
    """The condition of a stack of conditionals, bounded as Note [Bounded conditions] says.
    ``texts``: each frame's _frame_text (None for a guard), kept beside the stack so that a
    directive makes only its own frame's text."""
    parts, size = [], 0
    for text in texts[:MAX_DEPTH]:
        if text is not None:
            parts.append(text)
            size += len(parts[-1]) + 4
            if size > MAX_COND:
                break
    joined = " && ".join(parts)
    if len(stack) > MAX_DEPTH and len(joined) <= MAX_COND:
        joined += " && " + CUT
    return _cut(joined)


def read_conditions(text: str) -> Conditions:
    """Scan the directives of one file; see Note [Preprocessor conditions]."""
    starts: list[int] = [1]
    conds: list[str] = [""]
    # Each frame: (branches seen so far, current branch text or None for #else, is_guard)
    stack: list[tuple[list[str], str | None, bool]] = []
    texts: list[str | None] = []  # _frame_text of each frame of the stack (None: an include guard)
    first = True
    line, pos = 1, 0
    for m in line_matches(_DIRECTIVE, "#", text):
        kind, rest = m.group(1), _cut(_clean(m.group(2)))
        line += text.count("\n", pos, m.start())
        pos = m.start()
        end_line = line + m.group(0).count("\n")
        if kind in ("if", "ifdef", "ifndef"):
            guard = first and kind in ("ifndef", "if") and _is_guard(text, m, kind, rest)
            cur = rest if kind == "if" else f"defined({rest})" if kind == "ifdef" else f"!defined({rest})"
            stack.append(([], cur, guard))
            texts.append(None if guard else _frame_text([], cur))
        elif kind in ("elif", "else") and stack:
            branches, cur, guard = stack.pop()
            texts.pop()
            if cur is not None:
                branches.append(cur)  # in place: a long #elif chain copies nothing
            stack.append((branches, rest if kind == "elif" else None, guard))
            texts.append(None if guard else _frame_text(branches, stack[-1][1]))
        elif kind == "endif" and stack:
            stack.pop()
            texts.pop()
        else:
            continue
        first = False
        joined = _joined(stack, texts)
        # The directive's own lines belong to the enclosing condition; the new one starts after it.
        if starts[-1] == end_line + 1:
            conds[-1] = joined
        else:
            starts.append(end_line + 1)
            conds.append(joined)
    return Conditions(starts, conds)


def _is_guard(text: str, m: re.Match, kind: str, rest: str) -> bool:
    """``#ifndef X`` / ``#if !defined(X)`` followed by ``#define X``, with no code before it."""
    name = rest if kind == "ifndef" else (re.fullmatch(r"!\s*defined\s*\(?\s*(\w+)\s*\)?", rest) or [None, None])[1]
    if not name:
        return False
    if _code_before(replace_comments(text[:m.start()], "")):
        return False
    nxt = text[m.end():].lstrip("\r\n \t").split("\n", 1)[0]
    return _defined_name(nxt) == name


# Note [An include guard's lines as string code]
# The two lines around an include guard's #ifndef are read by string code: a line that starts with
# code, and ``#define NAME`` alone on its line (a ``//`` comment may follow). They replaced regexes
# with the same answers on every #ifndef/#if of both test trees and fuzz (bench/regex_equal.py).
def _code_before(text: str) -> bool:
    """Whether a line of ``text`` starts (after spaces and tabs) with code: not a blank, ``#``,
    ``/`` or ``*``."""
    for line in text.split("\n"):
        first = line.lstrip(" \t")[:1]
        if first and not first.isspace() and first not in "#/*":
            return True
    return False


def _defined_name(line: str) -> str | None:
    """NAME of a line ``#define NAME`` (spaces and tabs anywhere between, a ``//`` comment after);
    ``line`` holds no newline."""
    rest = line.lstrip(" \t")
    if rest[:1] != "#":
        return None
    rest = rest[1:].lstrip(" \t")
    if rest[:6] != "define" or rest[6:7] not in (" ", "\t"):
        return None
    rest = rest[6:].lstrip(" \t")
    n = 0
    while n < len(rest) and (rest[n].isalnum() or rest[n] == "_"):
        n += 1
    tail = rest[n:].lstrip(" \t")
    return rest[:n] if n and (not tail or tail[:2] == "//") else None
