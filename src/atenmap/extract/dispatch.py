"""Registrations and dispatch stubs: DECLARE_DISPATCH / DEFINE_DISPATCH / REGISTER_*_DISPATCH."""
from __future__ import annotations

from typing import TYPE_CHECKING

from atenmap.extract import macros
from atenmap.extract.fact import Fact
from atenmap.extract.nodes import scope_names, split_call_args
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.unit import Unit


IMPL_MACROS = {
    "TORCH_IMPL_FUNC": FactKind.IMPL_FUNC,
    "TORCH_META_FUNC": FactKind.META_FUNC,
    "TORCH_META_FUNC2": FactKind.META_FUNC,
    "TORCH_PRECOMPUTE_META_FUNC": FactKind.META_FUNC,
    "TORCH_PRECOMPUTE_META_FUNC2": FactKind.META_FUNC,
}
_MACRO_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"


def is_dispatch_macro(name: str) -> bool:
    """DECLARE_DISPATCH, DEFINE_DISPATCH, or REGISTER_*DISPATCH (``REGISTER_DISPATCH``,
    ``REGISTER_ARCH_DISPATCH``, ``ALSO_REGISTER_AVX512_DISPATCH``: capitals, digits and ``_``)."""
    if name in ("DECLARE_DISPATCH", "DEFINE_DISPATCH"):
        return True
    name = name.removeprefix("ALSO_")
    return (len(name) >= len("REGISTER_DISPATCH") and name.startswith("REGISTER_") and name.endswith("DISPATCH")
            and not name.strip(_MACRO_LETTERS))


def dispatch_fact(unit: Unit, macro: str, args: list[str], line: int, namespace: str, scope: int) -> Fact:
    """DECLARE_DISPATCH / DEFINE_DISPATCH / every REGISTER_*_DISPATCH form; detail = the macro."""
    stub = args[0] if args else ""
    if macro == "DECLARE_DISPATCH":
        return unit.fact(FactKind.DECLARE_DISPATCH, args[-1] if args else "", args[-1] if args else "", line,
                         namespace=namespace, scope=scope, arg=args[0] if len(args) > 1 else "", detail=macro)
    if macro == "DEFINE_DISPATCH":
        return unit.fact(FactKind.DEFINE_DISPATCH, stub, stub, line, namespace=namespace, scope=scope, detail=macro)
    kernel = args[-1] if len(args) >= 2 and macro not in _NO_KERNEL_MACROS else ""
    return unit.fact(FactKind.REGISTER_DISPATCH, stub, stub, line, namespace=namespace, scope=scope,
                     arg=kernel.lstrip("&").strip(), detail=macro)


_DISPATCH_KINDS = frozenset({FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH})
_NO_KERNEL_MACROS = {"REGISTER_NO_CPU_DISPATCH", "REGISTER_NO_AVX512_DISPATCH"}

# Note [Dispatch macros read as text]
# DECLARE_DISPATCH / DEFINE_DISPATCH / REGISTER_*_DISPATCH sit at namespace level, one per
# statement, often split over lines, without semicolons, or with a function type as argument
# (`DECLARE_DISPATCH(void (*)(TensorIterator&), x_stub)`): shapes tree-sitter reads as calls only
# some of the time. Besides the call_expressions of the query, each line that starts with one of
# these macros is read as text (balanced parentheses, top-level commas); a use found both ways is
# reported once. #define bodies are blanked before this (Note [Defines are read as text]).
# The uses are found by bytes.find of the macros' words and string code around them (the macro's
# whole upper-case word first on its line, then its parenthesis): it replaced a regex of that shape,
# with the same uses on every file of both test trees and fuzz (bench/regex_equal.py).
_UPPER_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def dispatch_uses(text: bytes) -> list[tuple[int, int, bytes]]:
    """``(start, after, macro)`` of each DECLARE_DISPATCH / DEFINE_DISPATCH / [ALSO_]REGISTER_*DISPATCH
    that starts its line (spaces and tabs before it) and is followed by ``(``; ``after``: the byte
    after that parenthesis."""
    starts = set()
    for word in (b"DECLARE_DISPATCH", b"DEFINE_DISPATCH", b"REGISTER_"):
        at = text.find(word)
        while at >= 0:
            starts.add(at - 5 if word == b"REGISTER_" and text[max(0, at - 5):at] == b"ALSO_" else at)
            at = text.find(word, at + 1)
    out = []
    for start in sorted(starts):
        if text[text.rfind(b"\n", 0, start) + 1:start].strip(b" \t"):
            continue
        end = start
        while end < len(text) and text[end] in _UPPER_WORD:
            end += 1
        paren = end
        while paren < len(text) and text[paren] in b" \t":
            paren += 1
        if text[paren:paren + 1] == b"(" and _is_dispatch_use(text[start:end]):
            out.append((start, paren + 1, text[start:end]))
    return out


def _is_dispatch_use(word: bytes) -> bool:
    if word in (b"DECLARE_DISPATCH", b"DEFINE_DISPATCH"):
        return True
    body = word[5:] if word.startswith(b"ALSO_") else word
    return body.startswith(b"REGISTER_") and body.endswith(b"DISPATCH") and len(body) >= 17


def add_dispatch_macros_from_text(unit: Unit) -> None:
    text = unit.text
    if b"_DISPATCH" not in text or (b"REGISTER_" not in text and b"DECLARE_DISPATCH" not in text
                                    and b"DEFINE_DISPATCH" not in text):
        return  # no dispatch_uses: every one holds one of these (AT_DISPATCH_* alone is not one)
    have = {(f.line, f.detail) for f in unit.facts if f.detail and f.kind in _DISPATCH_KINDS}
    row, last = 0, 0  # newlines before the match, counted on from the previous one
    for start, after, word in dispatch_uses(unit.text):
        macro = word.decode()
        row, last = row + unit.text.count(b"\n", last, start), start
        line = unit.fixed_line or row + 1 + unit.line_offset
        if (line, macro) in have or not is_dispatch_macro(macro):
            continue
        close = balanced_paren(unit.text, after - 1)
        if close < 0:
            continue
        args = split_call_args(unit.text[after - 1:close].decode("utf-8", "replace"))
        node = unit.tree.root_node.descendant_for_byte_range(start, start)
        namespace = unit.text_ns(start) if unit.text_ns is not None else (
            "::".join(scope_names(node, unit.tree.root_node)[0]) if node is not None else "")
        if unit.base_namespace:
            namespace = "::".join(p for p in (unit.base_namespace, namespace) if p)
        unit.facts.append(dispatch_fact(unit, macro, args, line, namespace, -1))
        have.add((line, macro))


def balanced_paren(text: bytes, start: int) -> int:
    """Index just past the ``)`` matching ``text[start] == '('``, or -1 (within 4000 bytes)."""
    return macros.balanced_paren(text, start, 4000)
