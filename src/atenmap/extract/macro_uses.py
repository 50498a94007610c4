"""Facts made by same-file macros: expanded and parsed (Note [Macro-made kernels] in macros.py)."""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Callable

from atenmap.extract import macros
from atenmap.extract.dispatch import balanced_paren
from atenmap.extract.fact import Fact
from atenmap.extract.nodes import scope_names
from atenmap.extract.unit import Scopes, Unit
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Tree


_FOLLOWED = frozenset({FactKind.CALL, FactKind.LAUNCH})  # looked up once: these loops run per fact
_LAUNCH = FactKind.LAUNCH


def _namespace_at(tree: Tree, byte: int) -> str:
    node = tree.root_node.descendant_for_byte_range(byte, byte)
    if node is None:
        return ""
    ns, _ = scope_names(node, tree.root_node)
    return "::".join(ns)


_BODY_NODES = {"compound_statement", "initializer_list", "field_declaration_list", "lambda_expression",
               "function_definition"}


def _inside_function(tree: Tree, byte: int) -> bool:
    """Is ``byte`` inside a function or class body (rather than at namespace level)?"""
    node = tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None:
        body = node.child_by_field_name("body") if node.type == "function_definition" else None
        if body is not None and byte < body.start_byte:
            node = node.parent  # the head of a definition (See Note [Macro-made definition heads])
            continue
        if node.type in _BODY_NODES:
            return True
        node = node.parent
    return False


# Note [Launches in function-local macros]
# ATen defines launch macros inside the function that uses them (SMALL_INDEX / LARGE_INDEX in
# index_select_out_cuda_impl and index_add_cuda_impl, Indexing.cu). Their `<<<>>>` is reported at
# the line of the `<<<` inside the #define body, with via_macro `SMALL_INDEX (used at line N)`,
# scoped to the function of the use. One launch fact per function and `<<<` line: N is the first
# use in that function (SMALL_INDEX is used four times, with different dims, per function).
# Calls inside such macros, and launches of macros defined outside the using function, stay on
# the line of the use (via_macro = the macro name).


Extract = Callable[..., tuple[list[Fact], bool]]  # parse._extract: the extraction of a text, for the expansions


# Note [Macro uses read once]
# A file's function-like #defines are read once (macros.read_defines, each body cleaned of comments
# and continuations once); its uses of them are found in one scan of the text (every use, each
# marked whether it starts its line); each distinct expansion is made once (``Expansions``: a use
# with the same macro, arguments and #defines in force reuses it: 12 % of the uses in 2.6.0). The
# uses inside functions are parsed together, in one text (Note [Launches in function-local
# macros]); each namespace-level use that defines something is parsed on its own (its facts go
# on its line, in its namespace: Note [Macro-made kernels] in macros.py).


class Expansions:
    """``expand(use)`` -> the use's expansion, memoised by macro, arguments and the #defines in
    force at its line (Defines.at picks by line: two uses with the same definitions before them
    expand alike)."""

    def __init__(self, defs: macros.Defines):
        self.defs = defs
        self._lines = sorted(d.line for ds in defs.all.values() for d in ds)
        self._done: dict[tuple[str, tuple[str, ...], int], str] = {}

    def expand(self, use: macros.MacroUse) -> str:
        key = (use.name, use.args, bisect.bisect_right(self._lines, use.line))
        out = self._done.get(key)
        if out is None:
            out = self._done[key] = macros.expand(use, self.defs)
        return out


# Note [Macro uses in broken files]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In a file tree-sitter cannot fit together (Note [Namespaces of broken files] in textblocks.py) its
# tree may hold a namespace as a function: cudnn/RNN.cpp's ``namespace {`` (lines 2221-2748 of 2.6.0)
# is read as a function_definition's body, so ``ONE_HIDDEN_RNN(gru, CUDNN_GRU)`` there, which defines
# ``gru_cudnn`` and registers it to ``gru_cudnn_stub``, looked like a use inside a function and was
# never expanded. Where the file's namespaces were read by brace matching, whether a use is inside a
# function, and its namespace, are read from that reading too (a use in a class body the tree saw
# stays a class member's, as before).
def _inside_text_function(unit: Unit, byte: int) -> bool:
    """Whether ``byte`` is inside a function body the brace matching found (Note [Macro uses in broken
    files])."""
    if any(start <= byte < end for start, end, _, _ in unit.text_fns):
        return True
    node = unit.tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None:  # a class body the tree did see (kernel_backward.h's FIELD(part1, bias) uses)
        if node.type == "field_declaration_list":
            return True
        node = node.parent
    return False


def add_macro_facts(unit: Unit, text: str, extract: Extract) -> None:
    """Facts made by the file's own macros (``text``: the file decoded), in two groups: those
    inside function bodies, then those of namespace-level uses. See Note [Macro uses read once]."""
    defs = unit.macro_defs
    uses = macros.find_uses(text, defs, anywhere=True)
    if not uses:
        return
    expansions = Expansions(defs)
    unit.facts.extend(expand_in_functions(unit, text, uses, expansions, extract))
    interesting = macros.interesting_names(defs)
    base = len(unit.facts)
    for f in expand_macro_uses(unit, [u for u in uses if u.line_start and u.name in interesting], expansions,
                               extract):
        if f.scope >= 0:
            f.scope += base
        unit.facts.append(f)


def expand_in_functions(unit: Unit, text: str, uses: list[macros.MacroUse], expansions: Expansions,
                        extract: Extract) -> list[Fact]:
    """Calls and launches inside same-file macros used in function bodies. Uses are found in the
    text: ``SMALL_INDEX(scalar_t, index_t, unsigned int, 1, 1, -2);`` reads as a declaration to
    tree-sitter, not as a call. See Note [Launches in function-local macros]."""
    defs = expansions.defs
    scopes = Scopes(unit)
    batch: list[tuple[macros.MacroUse, int, str]] = []
    for use in uses:
        scope = scopes.at(use.offset)
        if scope < 0:
            continue
        body = expansions.expand(use).replace("\r", " ").replace("\n", " ")
        if body.strip():
            batch.append((use, scope, body))
    if not batch:
        return []
    # One parse for all uses: each expansion is a one-line function on line i + 1.
    joined = "\n".join(f"void __atenmap_macro_body_{i}__() {{ {body} ;}}" for i, (_, _, body) in enumerate(batch))
    sub, _ = extract(joined.encode(), unit.lang, objects=unit.objects)
    lines = text.split("\n")
    out: list[Fact] = []
    seen: set[tuple[int, int]] = set()
    launches_seen: dict[int, int] = {}  # batch index -> launches of that use so far
    direct = _direct_launches(unit)
    for f in sub:
        if f.kind not in _FOLLOWED or not 1 <= f.line <= len(batch):
            continue
        use, scope, _ = batch[f.line - 1]
        f.line = f.end_line = use.line + unit.line_offset
        f.scope = scope
        f.via_macro = use.name
        if f.kind == _LAUNCH:
            ordinal = launches_seen.get(id(use), 0)
            launches_seen[id(use)] = ordinal + 1
            at = _launch_line_in_define(lines, defs.at(use.name, use.line), ordinal, unit.facts[scope])
            if at is not None:
                if (scope, at) in seen:
                    continue
                seen.add((scope, at))
                f.line = f.end_line = at + unit.line_offset
                f.via_macro = f"{use.name} (used at line {use.line + unit.line_offset})"
            elif _in_arguments(f, use, scope, direct, unit.line_offset):
                continue  # Note [Launches passed to a macro]
        out.append(f)
    return out


# Note [Launches passed to a macro]
# A launch written in a macro's arguments (the lambda handed to Loss.cu's own
# AT_DISPATCH_NLL_LOSS_INDEX_TYPES, whose body pastes it once per index type) is in the file's text,
# and the parse of the file finds it at its `<<<` line. The expansion finds it again, once per
# paste, at the line of the macro's use: those copies are dropped, so that a launch is reported
# once, at its `<<<` line (a launch in the macro's own body is not in the file's functions and stays).
def _direct_launches(unit: Unit) -> dict[tuple[int, str], list[int]]:
    out: dict[tuple[int, str], list[int]] = {}
    for f in unit.facts:
        if f.kind == _LAUNCH and not f.via_macro:
            out.setdefault((f.scope, f.name), []).append(f.line)
    return out


def _in_arguments(f: Fact, use: macros.MacroUse, scope: int, direct: dict, offset: int) -> bool:
    """Whether the parse of the file found launch ``f`` of an expansion of ``use`` in the use's text."""
    last = use.line + offset + sum(a.count("\n") for a in use.args) + 1
    return any(use.line + offset <= line <= last for line in direct.get((scope, f.name), ()))


def _launch_line_in_define(lines: list[str], d: macros.MacroDef, ordinal: int, scope: Fact) -> int | None:
    """1-based line of the ``ordinal``-th ``<<<`` in the body of ``d`` when ``d`` is defined
    inside the function ``scope``; else None."""
    if not scope.line <= d.line <= scope.end_line:
        return None
    n = d.line - 1
    seen = 0
    while n < len(lines):
        seen_before = seen
        seen += lines[n].count("<<<")
        if seen > ordinal:
            return n + 1 if seen_before <= ordinal else None
        if not lines[n].rstrip(" \t\r").endswith("\\"):
            return None
        n += 1
    return None


# Note [Macro-made definition heads]
# flash_attn/flash_fwd_launch_template.h writes its kernels as
# ``DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, bool Is_dropout, ...) { body }`` with a macro that
# expands to ``template<typename Kernel_traits, ...> __global__ void flash_fwd_kernel(...)``: the macro
# makes only the head, the body follows the use in the file. Such a use is at namespace level (the
# head of a definition, not inside one), and its expansion is parsed with an empty body so that the
# ``__global__`` is a definition at the use's line; the body's own calls are not scoped to it.


def _with_following_body(src: bytes, offset: int, expanded: str) -> str:
    """``expanded`` + `` {}`` when the use at ``offset`` is followed by ``{`` and the expansion ends
    in a declarator. See Note [Macro-made definition heads]."""
    close = balanced_paren(src, src.find(b"(", offset))
    if close < 0 or not src[close:close + 200].lstrip().startswith(b"{"):
        return expanded
    return expanded + " {}" if expanded.rstrip().endswith(")") else expanded


def expand_macro_uses(unit: Unit, uses: list[macros.MacroUse], expansions: Expansions,
                      extract: Extract) -> list[Fact]:
    """The namespace-level ``uses`` of macros that define something. See Note [Macro-made kernels]
    in macros.py."""
    out: list[Fact] = []
    for use in uses:
        if _inside_function(unit.tree, use.offset) if unit.text_ns is None else _inside_text_function(unit, use.offset):
            continue
        expanded = expansions.expand(use)
        if not expanded:
            continue
        expanded = _with_following_body(unit.src, use.offset, expanded)
        namespace = _namespace_at(unit.tree, use.offset) if unit.text_ns is None else unit.text_ns(use.offset)
        sub, _ = extract(expanded.encode(), unit.lang, fixed_line=use.line + unit.line_offset,
                          via_macro=use.name, base_namespace=namespace)
        base = len(out)
        for f in sub:
            if f.scope >= 0:
                f.scope += base
            out.append(f)
    return out
