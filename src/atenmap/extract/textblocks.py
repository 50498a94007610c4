"""Namespaces and functions of files tree-sitter could not fit together, by brace matching."""
from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from atenmap.extract.blanking import mask_code
from atenmap.extract.dispatch import IMPL_MACROS
from atenmap.extract.nodes import is_upper_name, last_component
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node
    from atenmap.extract.unit import Unit


# Note [Namespaces of broken files]
# When tree-sitter cannot fit a file together (an `#if` that splits braces, an unknown macro
# in a declaration) it wraps the rest of the file in an ERROR node: the functions inside are
# still found, but their `namespace at::native {` is not. For files with ERROR nodes we read
# namespaces by matching braces in the text instead, skipping comments, literals, preprocessor
# lines and the `#else`/`#elif` branches of conditionals (the first branch is the one kept).

# not a query: files tree-sitter cannot fit together (brace matching)
_BRACE_OR_NS = re.compile(rb"[{}]|\b(?:inline\s+)?namespace\b(?:\s+([A-Za-z_][\w:]*))?\s*(?=\{)")
# not a query: files tree-sitter cannot fit together
_AFTER_PARAMS = re.compile(rb"^(?:\s|const\b|override\b|noexcept\b|final\b|mutable\b|volatile\b|&|->\s*[\w:<>,\s&*]+)*$")
# not a query: files tree-sitter cannot fit together
_NAME_BEFORE = re.compile(rb"((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*$")
# not a query: files tree-sitter cannot fit together
_IMPL_HEAD = re.compile(rb"\b(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)\s*\(([^()]*)\)\s*$")
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
    for m in _BRACE_OR_NS.finditer(masked):
        tok = m.group(0)
        if tok == b"{":
            fn = None
            if pending is None and all(f[1] is not None for f in stack):
                fn = _function_before(masked, m.start())
            stack.append((m.start(), pending, fn))
            pending = None
        elif tok == b"}":
            if stack:
                start, name, fn = stack.pop()
                if name is not None:
                    namespaces.append((start, m.end(), name))
                elif fn is not None:
                    functions.append((fn[0], m.end(), fn[0], fn[1]))
        else:
            name = m.group(1)
            pending = name.decode() if name else "(anonymous namespace)"
    return namespaces, functions


def _function_before(masked: bytes, brace: int) -> tuple[int, str] | None:
    """``(name_byte, name)`` when the ``{`` at ``brace`` opens a function body ``name(...) ... {``."""
    close = masked.rfind(b")", max(0, brace - 400), brace)
    if close < 0 or not _AFTER_PARAMS.match(masked[close + 1:brace]):
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
    m = _NAME_BEFORE.search(masked, max(0, i - 200), i)
    if m is None:
        # TORCH_IMPL_FUNC(name) (params) { -- the name is the macro's argument
        mm = _IMPL_HEAD.search(masked, max(0, i - 200), i)
        if mm is not None:
            return mm.start(1), mm.group(1).decode() + "(" + re.sub(rb"\s+", b"", mm.group(2)).decode() + ")"
        return None
    if m.group(1).rsplit(b"::", 1)[-1] in _NOT_FUNCTIONS or is_upper_name(m.group(1).decode()):
        return None
    return m.start(1), m.group(1).decode()


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
