"""Namespaces and functions of files tree-sitter could not fit together, by brace matching."""
from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from atenmap.extract.blanking import mask_code
from atenmap.extract.dispatch import IMPL_MACROS
from atenmap.extract.nodes import WORD_BYTES, is_upper_name, last_component
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node
    from atenmap.extract.unit import Unit


# Note [Namespaces of broken files]
# When tree-sitter cannot fit a file together (an `#if` that splits braces, an unknown macro
# in a declaration) it wraps the rest of the file in an ERROR node: the functions inside are
# still found, but their `namespace at::native {` is not. For files with ERROR nodes we read
# namespaces by matching braces in the text instead, skipping comments, literals, preprocessor
# lines and the `#else`/`#elif` branches of conditionals (the first branch is the one kept, unless
# every branch balances its braces: Note [Balanced #else branches] in blanking.py).

# Note [Brace matching as string code]
# The braces, namespace heads, function heads and TORCH_IMPL_FUNC heads of a file tree-sitter cannot
# fit are read from its masked text (comments, literals and preprocessor lines blanked) by string
# code: each is a fixed run of words and punctuation next to a brace or a parenthesis. It replaced
# regexes of the same shapes, with the same answers on every input of both test trees' files and
# fuzz (bench/regex_equal.py).
_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_IDENT_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_AFTER_WORDS = (b"const", b"override", b"noexcept", b"final", b"mutable", b"volatile")
_RETURN_TYPE = frozenset(WORD_BYTES | set(b":<>,&*") | set(_WS))  # what ``-> type`` is made of
_IMPL_HEADS = {b"TORCH_IMPL_FUNC", b"TORCH_META_FUNC", b"TORCH_META_FUNC2", b"TORCH_PRECOMPUTE_META_FUNC",
               b"TORCH_PRECOMPUTE_META_FUNC2"}
_NOT_FUNCTIONS = {b"if", b"for", b"while", b"switch", b"catch", b"return", b"sizeof", b"decltype", b"alignof",
                  b"static_assert", b"defined"}


def text_blocks(masked: bytes) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, int, str]]]:
    """Namespaces ``(start, end, name)`` and namespace-level function bodies
    ``(start, end, name_byte, name)`` found by brace matching in ``masked`` (the text as
    blanking.mask_code leaves it). See Note [Namespaces of broken files]."""
    namespaces: list[tuple[int, int, str]] = []
    functions: list[tuple[int, int, int, str]] = []
    stack: list[tuple[int, str | None, tuple[int, str] | None]] = []
    pending: str | None = None
    for at, tok in _tokens(masked):
        if tok == b"{":
            fn = None
            if pending is None and all(f[1] is not None for f in stack):
                fn = _function_before(masked, at)
            stack.append((at, pending, fn))
            pending = None
        elif tok == b"}":
            if stack:
                start, name, fn = stack.pop()
                if name is not None:
                    namespaces.append((start, at + 1, name))
                elif fn is not None:
                    functions.append((fn[0], at + 1, fn[0], fn[1]))
        else:
            pending = tok.decode() if tok else "(anonymous namespace)"
    return namespaces, functions


def _tokens(masked: bytes) -> list[tuple[int, bytes]]:
    """``(byte, token)`` of each ``{``, ``}`` and namespace head in ``masked``, in order; a head
    (``[inline] namespace [name] {``, the brace not included) gives its name, b"" for none."""
    out = []
    for brace in (b"{", b"}"):
        at = masked.find(brace)
        while at >= 0:
            out.append((at, brace))
            at = masked.find(brace, at + 1)
    at = masked.find(b"namespace")
    while at >= 0:
        head = _namespace_head(masked, at)
        if head is None:
            at = masked.find(b"namespace", at + 1)
        else:
            out.append((at, head[1]))
            at = masked.find(b"namespace", head[0])
    out.sort()
    return out


def _namespace_head(masked: bytes, at: int) -> tuple[int, bytes] | None:
    """``(end, name)`` of the head ``namespace [name] {`` whose word starts at ``at`` (``end``: its
    ``{``), None when the word is part of another or no ``{`` follows."""
    end = at + 9
    if (at and masked[at - 1] in WORD_BYTES) or (end < len(masked) and masked[end] in WORD_BYTES):
        return None
    name_at = _skip_blanks(masked, end)
    name_end = name_at
    if name_at > end and name_at < len(masked) and masked[name_at] in _IDENT_FIRST:
        name_end += 1
        while name_end < len(masked) and (masked[name_end] in WORD_BYTES or masked[name_end] == 0x3A):
            name_end += 1
    brace = _skip_blanks(masked, name_end)
    if masked[brace:brace + 1] != b"{":
        return None
    return brace, masked[name_at:name_end]


def _function_before(masked: bytes, brace: int) -> tuple[int, str] | None:
    """``(name_byte, name)`` when the ``{`` at ``brace`` opens a function body ``name(...) ... {``."""
    close = masked.rfind(b")", max(0, brace - 400), brace)
    if close < 0 or not _after_params(masked[close + 1:brace]):
        return None
    depth, i = 0, close
    while i >= 0 and brace - i < 20000:
        c = masked[i]
        if c == 0x29:  # )
            depth += 1
        elif c == 0x28:  # (
            depth -= 1
            if depth == 0:
                break
        elif c in (0x3B, 0x7B, 0x7D):  # ; { }
            return None
        i -= 1
    else:
        return None
    m = _name_before(masked, max(0, i - 200), i)
    if m is None:
        # TORCH_IMPL_FUNC(name) (params) { -- the name is the macro's argument
        mm = _impl_head(masked, max(0, i - 200), i)
        if mm is not None:
            return mm[0], mm[1].decode() + "(" + re.sub(rb"\s+", b"", mm[2]).decode() + ")"
        return None
    if m[1].rsplit(b"::", 1)[-1] in _NOT_FUNCTIONS or is_upper_name(m[1].decode()):
        return None
    return m[0], m[1].decode()


def _skip_blanks(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _after_params(text: bytes) -> bool:
    """Whether ``text`` (between a parameter list's ``)`` and a ``{``) holds only blanks, ``const``,
    ``override``, ``noexcept``, ``final``, ``mutable``, ``volatile`` (whole words), ``&`` and ``-> type``."""
    at, n = 0, len(text)
    while at < n:
        c = text[at]
        if c in _WS or c == 0x26:  # blank, &
            at += 1
        elif text[at:at + 2] == b"->":
            end = at + 2
            while end < n and text[end] in _RETURN_TYPE:
                end += 1
            if end == at + 2:
                return False
            at = end
        else:
            word = next((w for w in _AFTER_WORDS if text[at:at + len(w)] == w), None)
            if word is None or (at + len(word) < n and text[at + len(word)] in WORD_BYTES):
                return False
            at += len(word)
    return True


def _name_before(masked: bytes, lo: int, end: int) -> tuple[int, bytes] | None:
    """``(start, name)`` of the (qualified, maybe ``~``) name that ends ``masked[lo:end]`` before
    its trailing blanks, from its first byte that can start it; None when it does not end in one."""
    end = len(masked[lo:end].rstrip(_WS)) + lo
    start = _ident_before(masked, lo, end)
    if start < 0:
        return None
    at = start
    if at - 1 >= lo and masked[at - 1] == 0x7E:  # ~
        at -= 1
        start = at
    while at - 2 >= lo and masked[at - 2:at] == b"::":
        first = _ident_before(masked, lo, at - 2)
        if first < 0:
            break
        start = at = first
    return start, masked[start:end]


def _ident_before(masked: bytes, lo: int, end: int) -> int:
    """Where the identifier that ends at ``end`` starts (its leftmost letter or ``_`` within the
    run of word bytes, not before ``lo``); -1 when none ends there."""
    at = end
    while at > lo and masked[at - 1] in WORD_BYTES:
        at -= 1
    while at < end and masked[at] not in _IDENT_FIRST:
        at += 1
    return at if at < end else -1


def _impl_head(masked: bytes, lo: int, end: int) -> tuple[int, bytes, bytes] | None:
    """``(start, macro, argument)`` of ``TORCH_IMPL_FUNC(arg)`` (& co) that ends ``masked[lo:end]``
    before its trailing blanks; the macro's word begins a word (the byte before ``lo`` counts)."""
    close = len(masked[lo:end].rstrip(_WS)) + lo - 1
    if close < lo or masked[close] != 0x29:
        return None
    open_ = masked.rfind(b"(", lo, close)
    if open_ < 0 or masked.find(b")", open_, close) >= 0:
        return None
    word_end = len(masked[lo:open_].rstrip(_WS)) + lo
    start = word_end
    while start > 0 and masked[start - 1] in WORD_BYTES:
        start -= 1
    if start < lo or masked[start:word_end] not in _IMPL_HEADS:
        return None
    return start, masked[start:word_end], masked[open_ + 1:close]


def text_namespaces(src: bytes) -> list[tuple[int, int, str]]:
    """``(start_byte, end_byte, name)`` of each namespace body, found by brace matching."""
    return text_blocks(mask_code(src))[0]


def broken(root: Node, depth: int = 4, min_lines: int = 15) -> bool:
    """Has tree-sitter given up on a large region near the top (where namespaces and function
    definitions sit), or closed a namespace early (an ``#ifdef`` between ``}`` and ``else``:
    CUDABlas.cpp)? Small ERROR nodes inside statements do not hide definitions."""
    if not root.has_error:
        return False
    if root.type == "ERROR":
        return True
    stack = [(root, 0)]
    while stack:
        node, d = stack.pop()
        for c in node.children:
            if c.type == "ERROR" and c.end_point[0] - c.start_point[0] >= min_lines:
                return True
            if d == 0 and c.type == "ERROR" and c.child_count and c.children[0].type == "}":
                return True  # a stray `}` at file level: some namespace was closed early
            if d + 1 < depth and c.has_error and c.type in ("namespace_definition", "declaration_list",
                                                               "translation_unit", "linkage_specification",
                                                               "preproc_if", "preproc_ifdef", "preproc_else"):
                stack.append((c, d + 1))
    return False


def namespace_lookup(spans: list[tuple[int, int, str]]):
    """byte -> enclosing namespaces, by bisection over the segments between span boundaries."""
    events = sorted({0, *(s for s, _, _ in spans), *(e for _, e, _ in spans)})
    names = []
    for pos in events:
        inside = sorted((s, n) for s, e, n in spans if s <= pos < e)
        names.append("::".join(n for _, n in inside))

    def at(byte: int) -> str:
        i = bisect.bisect_right(events, byte) - 1
        return names[i] if i >= 0 else ""
    return at


def add_recovered_functions(unit: Unit) -> None:
    """Functions tree-sitter lost inside ERROR nodes, found by brace matching instead.
    See Note [Namespaces of broken files]."""
    facts = unit.facts
    if not unit.text_fns:
        return
    newlines = [m.start() for m in re.finditer(b"\n", unit.text)]  # a line by bisection, not a count per function
    block = FactKind.MACRO_BLOCK
    known = sorted((s, e) for s, e, idx in unit.funcs if facts[idx].kind != block)
    known_starts = [k[0] for k in known]
    for start, end, name_byte, name in unit.text_fns:
        i = bisect.bisect_right(known_starts, start) - 1
        j = bisect.bisect_left(known_starts, start)
        if (i >= 0 and known[i][1] > start) or (j < len(known) and known[j][0] < end):
            continue
        line = bisect.bisect_left(newlines, name_byte) + 1 + unit.line_offset
        end_line = bisect.bisect_left(newlines, end) + 1 + unit.line_offset
        ns = unit.text_ns(start) if unit.text_ns else ""
        unit.funcs.append((start, end, len(facts)))
        if "(" in name:  # TORCH_IMPL_FUNC(x) and friends
            mname, _, rest = name.partition("(")
            args = [a for a in rest.rstrip(")").split(",") if a]
            fname = "_".join(args[:2]) if mname.endswith("2") else args[0]
            facts.append(unit.fact(IMPL_MACROS[mname], fname, f"{ns}::{mname}({', '.join(args)})".lstrip(":"),
                                   line, end_line, namespace=ns, detail=mname))
            continue
        qual = name if name.startswith(ns + "::") or not ns else f"{ns}::{name}"
        facts.append(unit.fact(FactKind.FUNCTION, last_component(name), qual, line, end_line, namespace=ns,
                               detail="found by brace matching (tree-sitter ERROR region)"))
