"""The extractor's façade: source bytes in, ``Fact`` records out (``extract_file``).

One file is read once: its text is masked (blanking.py), parsed once (treesitter.py, the only
module that imports ``tree_sitter``), and the one query of its language (queries/*.scm, one file
per fact kind) is run once over the tree. Each capture goes to the module of its kind:

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

from atenmap.extract import calls, definitions, jiterator, launches, macros, preproc
from atenmap.extract.bindings import binding_markers
from atenmap.extract.blanking import blank_attributes
from atenmap.extract.dispatch import add_dispatch_macros_from_text
from atenmap.extract.fact import Fact
from atenmap.extract.languages import LANGUAGES, language_of
from atenmap.extract.macro_uses import add_macro_facts
from atenmap.extract.nodes import last_component, strip_templates
from atenmap.extract.textblocks import add_recovered_functions, broken, namespace_lookup, text_blocks
from atenmap.extract.treesitter import Capture, captures, grammar_versions, parser, run_query
from atenmap.extract.unit import Scopes, Unit

__all__ = ["Capture", "Fact", "LANGUAGES", "captures", "extract", "extract_file", "grammar_versions",
           "language_of", "last_component", "strip_templates"]

# The captures that make a fact as soon as they are seen ...
_DEFINITIONS = {
    "definition.function": definitions.function,
    "definition.class": definitions.class_,
    "reference.include": definitions.include,
}
# ... and those that wait until every function of the text is known (their scope).
_REFERENCES = {
    "reference.call": calls.call,
    "reference.launch": launches.launch,
    "reference.stub_arg": calls.stub_arg,
    "reference.functor_decl": calls.functor_decl,
    "reference.functor_arg": calls.functor_arg,
    "definition.lambda": calls.lambda_,
}
_MISREAD = ("reference.vexing_call", "reference.braced_call")
# The kinds of the facts those references (but lambdas and ``m.impl`` calls) and the object
# arguments make. A caller that keeps none of them (build._AUTOGRAD_KINDS: 90k calls of the
# generated autograd files dropped) gets its facts without reading them: ``calls_too=False``.
CALL_KINDS = frozenset({"call", "launch", "declare_dispatch", "define_dispatch", "register_dispatch"})


def extract_file(src: bytes, lang: str, bindings: bool = False,
                 kinds: frozenset[str] | None = None) -> tuple[bool, list[Fact]]:
    """``(has_error_nodes, facts)`` for one file's bytes. ``bindings``: the file is a generated
    Python binding (python_torch_functions_*.cpp): also report its ``// aten::OP(...)`` markers.
    ``kinds``: the caller keeps only facts of these kinds (None: all); when none of them is made
    by a reference (CALL_KINDS), calls are not read (the facts of ``kinds`` are the same)."""
    calls_too = kinds is None or not kinds.isdisjoint(CALL_KINDS)
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
    return [Fact(kind, name, name, line, line, arg=value) for kind, name, value, line in jiterator.jit_facts(src)]


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
    False leaves out the facts of CALL_KINDS (made or not: the caller drops them)."""
    unit = _parse(src, lang, line_offset, fixed_line, via_macro, base_namespace)
    _collect(unit, calls_too)
    add_recovered_functions(unit)
    text = src.decode("utf-8", "replace") if fixed_line is None else ""
    if text:
        unit.macro_defs = macros.read_defines(text)
    _add_references(unit, calls_too)
    if calls_too:
        calls.add_object_args(unit, objects)
    add_dispatch_macros_from_text(unit)
    if unit.macro_defs:
        add_macro_facts(unit, text, _extract)
    return unit.facts, unit.tree.root_node.has_error


def _parse(src: bytes, lang: str, line_offset: int, fixed_line: int | None, via_macro: str,
           base_namespace: str) -> Unit:
    text = blank_attributes(src, lang)
    tree = parser(lang).parse(text)
    unit = Unit(src, text, lang, tree, line_offset, fixed_line, via_macro, base_namespace)
    if fixed_line is None and broken(tree.root_node):
        spans, unit.text_fns = text_blocks(unit.masked())
        unit.text_ns = namespace_lookup(spans)
    return unit


def _collect(unit: Unit, calls_too: bool = True) -> None:
    """Run the query: definitions become facts now; references wait until every function is known.
    ``calls_too=False``: the query without the calls _add_references would drop."""
    for capname, caps in run_query(unit.lang, unit.tree.root_node, calls=calls_too):
        node = caps[capname]
        make = _DEFINITIONS.get(capname)
        if make is not None:
            make(unit, node, caps)
        elif capname in _REFERENCES or capname in _MISREAD:
            unit.refs.append((node, caps, capname))


def _add_references(unit: Unit, calls_too: bool = True) -> None:
    """Calls, launches, lambdas, stub arguments: each placed in its enclosing function.
    ``calls_too=False``: only lambdas and the calls that may be ``m.impl(...)`` (torch_impl)."""
    scopes = Scopes(unit)
    unit.funcs = scopes.funcs
    seen_launch: set[tuple[int, int]] = set()
    unit.classes = {f.name for f in unit.facts if f.kind == "class"}
    # A call with a kernel_call_syntax child (<<<>>>, only the CUDA grammar has it) is also a
    # match of the launch pattern, on the same node, and is reported by it.
    launched = {(n.start_byte, n.end_byte) for n, _caps, name in unit.refs if name == "reference.launch"}
    for node, caps, capname in unit.refs:
        if not calls_too and capname != "definition.lambda" and not (
                capname == "reference.call" and calls.may_be_impl(caps)):
            continue
        if launched and capname == "reference.call" and (node.start_byte, node.end_byte) in launched:
            continue  # reported by the launch pattern
        scope = scopes.at(node.start_byte, node.end_byte)
        if capname == "reference.launch":
            if (node.start_byte, node.end_byte) in seen_launch:
                continue
            seen_launch.add((node.start_byte, node.end_byte))
        if capname in _MISREAD:
            calls.misread(unit, node, caps, scope, scopes, capname)
        else:
            _REFERENCES[capname](unit, node, caps, scope, scopes)
