"""The extractor's façade: source bytes in, ``Fact`` records out (``extract_file``).

One file is read once: its text is masked (blanking.py), parsed once (treesitter.py, the only
module that imports ``tree_sitter``), and the one query of its language (the query files of the
patterns of extract/registry.py, joined) is run once over the tree. Each capture goes to the
handler its pattern names (Note [Adding a pattern] in registry.py):

    @definition.function / .class, @reference.include   definitions.py
    @reference.call / .functor_* / .stub_arg / .vexing_call, @definition.lambda   calls.py
    @reference.launch                                    launches.py
    DECLARE/DEFINE/REGISTER_*_DISPATCH                   dispatch.py
    functions of files tree-sitter could not fit         textblocks.py (brace matching)
    same-file macro uses                                 macro_uses.py (expanded, parsed once each)
    jiterator strings, conditions, binding markers       jiterator.py, preproc.py, bindings.py

Lines in ``Fact`` are 1-based (tree-sitter rows are 0-based; converted in unit.py and nowhere else).
See docs/architecture.md, "The extractor".
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Callable

from atenmap.extract import calls, jiterator, macros, preproc, registry
from atenmap.extract.bindings import binding_markers
from atenmap.extract.blanking import STRINGIFY, blank_attributes, blank_jiterator_code, mask_code
from atenmap.extract.fact import Fact
from atenmap.extract.languages import LANGUAGES, language_of
from atenmap.extract.macro_uses import add_macro_facts
from atenmap.extract.nodes import last_component, strip_templates
from atenmap.extract.textblocks import add_recovered_functions, broken, namespace_lookup, text_blocks
from atenmap.extract.treesitter import Capture, captures, grammar_versions, parser, run_query
from atenmap.extract.unit import Scopes, Unit
from atenmap.kinds import FactKind

__all__ = ["Capture", "Fact", "LANGUAGES", "captures", "extract", "extract_file", "grammar_versions",
           "language_of", "last_component", "strip_templates"]



@lru_cache(maxsize=4)
def _dispatch(generation: int) -> tuple[dict, dict, tuple, frozenset[str], frozenset[str]]:
    """The registry's patterns as parse.py dispatches them (extract/registry.py), once per registry
    generation: capture -> handler of the DEFINITION and the REFERENCE patterns, the TEXT handlers
    in order, the captures of the query without calls, and registry.call_kinds()."""
    definitions, references, texts = {}, {}, []
    for p in registry.PATTERNS:
        fn = _handler(p.handler)
        if p.stage is registry.Stage.TEXT:
            texts.append(fn)
        else:
            (definitions if p.stage is registry.Stage.DEFINITION else references)[p.capture] = fn
    without_calls = frozenset(p.capture for p in registry.patterns(calls=False))
    return definitions, references, tuple(texts), without_calls, registry.call_kinds()


def _handler(handler: registry.Handler) -> Callable:
    """A pattern's handler: a callable, or ``"module:function"`` of atenmap.extract."""
    if callable(handler):
        return handler
    module, name = handler.split(":")
    return getattr(importlib.import_module(f"atenmap.extract.{module}"), name)


def _patterns() -> tuple[dict, dict, tuple, frozenset[str], frozenset[str]]:
    return _dispatch(registry.generation())


def extract_file(src: bytes, lang: str, bindings: bool = False,
                 kinds: frozenset[str] | None = None) -> tuple[bool, list[Fact]]:
    """``(has_error_nodes, facts)`` for one file's bytes. ``bindings``: the file is a generated
    Python binding (python_torch_functions_*.cpp): also report its ``// aten::OP(...)`` markers.
    ``kinds``: the caller keeps only facts of these kinds (None: all); when none of them is made
    by a reference (registry.call_kinds), calls are not read (the facts of ``kinds`` are the same)."""
    calls_too = kinds is None or not kinds.isdisjoint(_patterns()[4])
    facts, has_error = _extract(src, "cpp" if lang == "objcpp" else lang, calls_too=calls_too)
    facts.extend(_jit_facts(src))
    _set_conditions(src, facts)
    if bindings:
        facts.extend(binding_markers(src, facts))
    return has_error, facts


def extract(src: bytes, lang: str) -> list[Fact]:
    """Facts of one source text, each with the preprocessor condition in force at its line."""
    facts, _ = _extract(src, lang)
    facts.extend(_jit_facts(src))
    _set_conditions(src, facts)
    return facts


def _jit_facts(src: bytes) -> list[Fact]:
    """See Note [Jiterator kernels] in jiterator.py."""
    return [Fact(str(kind), name, name, line, line, arg=value) for kind, name, value, line in jiterator.jit_facts(src)]


def _set_conditions(src: bytes, facts: list[Fact]) -> None:
    """See Note [Preprocessor conditions] in preproc.py."""
    if b"#if" not in src and b"# if" not in src:
        return
    conds = preproc.read_conditions(src.decode("utf-8", "replace"))
    if not conds:
        return
    for f in facts:
        f.cond = conds.at(f.line)


def _extract(src: bytes, lang: str, line_offset: int = 0, fixed_line: int | None = None,
             via_macro: str = "", base_namespace: str = "",
             objects: dict[str, str] | None = None, calls_too: bool = True) -> tuple[list[Fact], bool]:
    """The extraction steps, in order: parse, definitions and references from the query,
    functions tree-sitter lost (brace matching), references placed in their functions, macro uses.
    ``fixed_line``: ``src`` is a macro's expansion, every fact goes on that line. ``calls_too``:
    False leaves out the facts of registry.call_kinds (made or not: the caller drops them)."""
    unit = _parse(src, lang, line_offset, fixed_line, via_macro, base_namespace)
    _collect(unit, calls_too)
    if unit.cut_ends and not unit.text_fns:  # a function cut at its body's end: what it swallowed
        spans, unit.text_fns = text_blocks(unit.masked_blocks())  # (Note [A function ends where its body ends])
        if unit.text_ns is None:
            unit.text_ns = namespace_lookup(spans)
    add_recovered_functions(unit)
    text = src.decode("utf-8", "replace") if fixed_line is None else ""
    if text:
        unit.macro_defs = macros.read_defines(text)
    _add_references(unit, calls_too)
    if calls_too:
        calls.add_object_args(unit, objects)
    for text_pattern in _patterns()[2]:
        text_pattern(unit)
    if unit.macro_defs:
        add_macro_facts(unit, text, _extract)
    return unit.facts, unit.tree.root_node.has_error


def _parse(src: bytes, lang: str, line_offset: int, fixed_line: int | None, via_macro: str,
           base_namespace: str) -> Unit:
    text = blank_attributes(src, lang)
    if STRINGIFY in text:  # Note [Jiterator code is a string]
        masked = mask_code(text, balanced_branches=True)
        text = blank_jiterator_code(text, masked, text_blocks(masked)[1])
    tree = parser(lang).parse(text)
    unit = Unit(src, text, lang, tree, line_offset, fixed_line, via_macro, base_namespace)
    if fixed_line is None and broken(tree.root_node):
        spans, unit.text_fns = text_blocks(unit.masked_blocks())
        unit.text_ns = namespace_lookup(spans)
    return unit


def _collect(unit: Unit, calls_too: bool = True) -> None:
    """Run the query: definitions become facts now; references wait until every function is known.
    ``calls_too=False``: the query without the calls _add_references would drop."""
    definitions, references = _patterns()[:2]
    for capname, caps in run_query(unit.lang, unit.tree.root_node, calls=calls_too):
        node = caps[capname]
        make = definitions.get(capname)
        if make is not None:
            make(unit, node, caps)
        elif capname in references:
            unit.refs.append((node, caps, capname))


def _add_references(unit: Unit, calls_too: bool = True) -> None:
    """Calls, launches, lambdas, stub arguments: each placed in its enclosing function.
    ``calls_too=False``: only lambdas and the calls that may be ``m.impl(...)`` (torch_impl)."""
    _defs, references, _texts, without_calls, _kinds = _patterns()
    scopes = Scopes(unit)
    unit.funcs = scopes.funcs
    seen_launch: set[tuple[int, int]] = set()
    class_ = FactKind.CLASS  # once: an enum member's lookup costs ~150 ns, this loop runs per fact
    unit.classes = {f.name for f in unit.facts if f.kind == class_}
    # A call with a kernel_call_syntax child (<<<>>>, only the CUDA grammar has it) is also a
    # match of the launch pattern, on the same node, and is reported by it.
    launched = {(n.start_byte, n.end_byte) for n, _caps, name in unit.refs if name == "reference.launch"}
    for node, caps, capname in unit.refs:
        if not calls_too and capname not in without_calls:
            continue  # the query without calls matched it, or a handler of that query handed it on
        if launched and capname == "reference.call" and (node.start_byte, node.end_byte) in launched:
            continue  # reported by the launch pattern
        scope = scopes.at(node.start_byte, node.end_byte)
        if capname == "reference.launch":
            if (node.start_byte, node.end_byte) in seen_launch:
                continue
            seen_launch.add((node.start_byte, node.end_byte))
        references[capname](unit, node, caps, scope, scopes)
