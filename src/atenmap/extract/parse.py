"""The one module that imports ``tree_sitter``: source bytes in, ``Fact`` records out.

The extraction rules are the tag queries in ``queries/*.scm``; this module runs them and turns
each capture into a flat ``Fact``. It hides py-tree-sitter's changing API (``Query`` /
``QueryCursor``) behind ``run_query``.

Lines in ``Fact`` are 1-based (tree-sitter rows are 0-based; converted here and nowhere else).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Callable, Iterator

import tree_sitter as ts

from atenmap.extract import jiterator, macros, objects, preproc

from atenmap.extract.languages import LANGUAGES, language_of  # noqa: E402,F401 (by path alone, without tree_sitter)


@dataclass(slots=True)
class Fact:
    """One thing found in a file. ``scope`` is the index (in the same file's fact list) of the
    enclosing function fact, or -1. Kinds:

    function      name=unqualified, qual=qualified (namespace::Class::name), arg=signature-ish
    global        a ``__global__`` CUDA kernel (otherwise like function)
    impl_func     TORCH_IMPL_FUNC(name)
    meta_func     TORCH_META_FUNC(name) / TORCH_META_FUNC2(name, overload) -> name_overload
    class         struct/class with a body (functors)
    macro_block   NAME(args) { ... } with NAME a macro (TORCH_LIBRARY_IMPL, ...)
    declare_dispatch / define_dispatch / register_dispatch   name=stub; arg=kernel (register),
                  type (declare); detail=macro name (REGISTER_CUDA_DISPATCH, ...)
    call          name=callee's last component, qual=callee as written (templates dropped;
                  ``Type::method`` for a member call on a local of a named class type, see
                  Note [Member calls on locals]), detail="member" for a.b() calls, targs=the
                  explicit template arguments as written (``f<A, B>(x)`` -> ``A, B``)
    launch        name=kernel launched with <<<>>>, detail=launch configuration
                  detail="object_arg" for a functor object passed by name (arg=the object; see
                  Note [Functor objects passed by name] in objects.py), detail="macro_arg" for a
                  function handed to a macro (Note [Functions handed to a macro]); arg=the identifier
                  arguments of a ``*jitted_gpu*`` launcher call
    torch_impl    m.impl("op", fn): name=op, arg=fn text
    include       name=included path
    jit_name      ``constexpr char NAME[] = "fn";``: arg=fn (Note [Jiterator kernels] in jiterator.py)
    jit_code      ``NAME = jiterator_stringify(``: the line of the jiterator code string

    Every fact has ``cond``: the preprocessor condition in force at its line, see
    Note [Preprocessor conditions] in preproc.py. ``function`` facts of explicit specializations
    have detail ``specialization<ARGS>`` (Note [Explicit specializations]).
    """

    kind: str
    name: str
    qual: str
    line: int
    end_line: int
    namespace: str = ""
    scope: int = -1
    arg: str = ""
    detail: str = ""
    via_macro: str = ""
    cond: str = ""
    targs: str = ""


# Note [Attribute macros]
# ATen decorates declarations with export and attribute macros (TORCH_API, C10_HOST_DEVICE,
# C10_LAUNCH_BOUNDS_1(...), GPU_LAMBDA, ...). Unexpanded, tree-sitter reads them as types or
# calls and recovers with ERROR nodes that can swallow whole functions. We overwrite them with
# spaces of the same length before parsing, so byte offsets and line numbers are unchanged.
_ATTR_WORDS = (
    r"TORCH_API|TORCH_CUDA_CPP_API|TORCH_CUDA_CU_API|TORCH_HIP_API|TORCH_XPU_API|TORCH_PYTHON_API|"
    r"C10_API|C10_EXPORT|C10_IMPORT|C10_HIDDEN|CAFFE2_API|TORCH_CUDA_API|AT_CUDA_API|"
    r"C10_HOST_DEVICE|C10_DEVICE|C10_HOST|GPU_LAMBDA|C10_ALWAYS_INLINE|C10_ALWAYS_INLINE_ATTRIBUTE|"
    r"C10_NOINLINE|C10_UNUSED|C10_NODISCARD|C10_LAUNCH_BOUNDS_0|C10_RESTRICT|C10_FORCE_INLINE|"
    r"C10_ALWAYS_INLINE_UNLESS_MOBILE|C10_HOST_CONSTEXPR|C10_HOST_CONSTEXPR_EXCEPT_WIN_CUDA|"
    r"C10_CONSTEXPR_EXCEPT_WIN_CUDA|CPU_CAPABILITY_INLINE|TORCH_NOINLINE|C10_USED|AT_NOINLINE"
)
_ATTR_CALLS = (
    r"C10_LAUNCH_BOUNDS_1|C10_LAUNCH_BOUNDS_2|__launch_bounds__|C10_DEPRECATED_MESSAGE|"
    r"C10_DIAGNOSTIC_PUSH_AND_IGNORED_IF_DEFINED|__attribute__|__declspec|alignas|C10_ALIGNAS"
)
# CUDA keywords the cpp grammar does not know (headers shared by .cpp and .cu use them).
_CUDA_WORDS = r"__global__|__host__|__device__|__forceinline__|__noinline__|__shared__|__constant__|__restrict__|__inline__"
_PAREN = rb"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_BLANK_CPP = re.compile(
    rb"\b(?:" + (_ATTR_WORDS + "|" + _CUDA_WORDS).encode() + rb")\b|\b(?:" + _ATTR_CALLS.encode() + rb")\s*" + _PAREN
)
_BLANK_CUDA = re.compile(
    rb"\b(?:" + _ATTR_WORDS.encode() + rb")\b|\b(?:" + _ATTR_CALLS.encode() + rb")\s*" + _PAREN
)


def _spaces(m: re.Match) -> bytes:
    return re.sub(rb"[^\n]", b" ", m.group(0))


_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b(?:[^\n]*\\\r?\n)*[^\n]*", re.M)


def blank_attributes(src: bytes, lang: str) -> bytes:
    """Replace attribute macros and ``#define``/``#undef`` lines by spaces (same length,
    newlines kept). See Note [Attribute macros] and Note [Defines are read as text]."""
    return _DEFINE.sub(_spaces, (_BLANK_CUDA if lang == "cuda" else _BLANK_CPP).sub(_spaces, src))


# Note [Defines are read as text]
# tree-sitter-cpp cannot place a `#define` inside a function body (ATen defines launch macros
# such as SMALL_INDEX in the middle of index_select_out_cuda_impl); the rest of the file then
# becomes an ERROR node. Definitions are therefore read by macros.read_defines and blanked out
# before parsing.


@lru_cache(maxsize=None)
def _language(lang: str) -> ts.Language:
    if lang == "cuda":
        import tree_sitter_cuda

        return ts.Language(tree_sitter_cuda.language())
    import tree_sitter_cpp

    return ts.Language(tree_sitter_cpp.language())


@lru_cache(maxsize=None)
def _query(lang: str) -> ts.Query:
    text = resources.files("atenmap.extract.queries").joinpath("cpp.scm").read_text()
    if lang == "cuda":
        text += "\n" + resources.files("atenmap.extract.queries").joinpath("cuda.scm").read_text()
    return ts.Query(_language(lang), text)


@lru_cache(maxsize=None)
def _parser(lang: str) -> ts.Parser:
    return ts.Parser(_language(lang))


def grammar_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("tree-sitter", "tree-sitter-cpp", "tree-sitter-cuda"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:  # pragma: no cover - installed from source
            out[dist] = "unknown"
    return out


def run_query(lang: str, node: ts.Node) -> Iterator[tuple[str, dict[str, ts.Node]]]:
    """Yield ``(pattern_capture_name, {capture: node})`` for each match of the language's query."""
    cursor = ts.QueryCursor(_query(lang))
    mains = _MAIN_CAPTURE.setdefault(lang, {})
    for pattern, caps in cursor.matches(node):
        main = mains.get(pattern)
        if main is None:
            main = mains[pattern] = next(k for k in caps if "." in k)
        yield main, {k: v[0] for k, v in caps.items()}


_MAIN_CAPTURE: dict[str, dict[int, str]] = {}  # lang -> pattern index -> its @definition./@reference. capture


@dataclass(frozen=True, slots=True)
class Capture:
    """One capture of a reader's query (``captures``), as plain data: the node's byte span and
    1-based first line, and where its parent ends (the block an early ``return`` leaves)."""

    name: str
    start: int
    end: int
    line: int
    parent_end: int


@lru_cache(maxsize=None)
def _reader_query(lang: str, name: str) -> ts.Query:
    return ts.Query(_language(lang), resources.files("atenmap.extract.queries").joinpath(f"{name}.scm").read_text())


def captures(src: bytes, lang: str, query: str) -> list[list[Capture]]:
    """Every match of ``queries/<query>.scm`` in ``src``, each as its captures. ``src`` is parsed
    as the extractor parses it (attribute macros and #defines blanked, same bytes and lines: Note
    [Attribute macros]); for readers of one file's structure at query time (extract/branches.py)."""
    lang = "cpp" if lang == "objcpp" else lang
    tree = _parser(lang).parse(blank_attributes(src, lang))
    out = []
    for _pattern, caps in ts.QueryCursor(_reader_query(lang, query)).matches(tree.root_node):
        out.append([Capture(k, n.start_byte, n.end_byte, n.start_point[0] + 1,
                            n.parent.end_byte if n.parent is not None else n.end_byte)
                    for k, nodes in caps.items() for n in nodes])
    return out


# ---------------------------------------------------------------------------------------------
# Names


_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def strip_templates(text: str) -> str:
    """``at::native::gemm<float>`` -> ``at::native::gemm``; nested ``<>`` too; operators kept."""
    if "<" not in text:
        return text if " " not in text and "\n" not in text and "\t" not in text else re.sub(r"\s+", "", text)
    text = re.sub(r"\s+", "", text)
    text = text.replace("operator<<", "operator\x01").replace("operator<", "operator\x02")
    prev = None
    while prev != text:
        prev, text = text, _TEMPLATE_ARGS.sub("", text)
    return text.replace("\x01", "<<").replace("\x02", "<")


def last_component(qual: str) -> str:
    if "operator" in qual:
        i = qual.find("operator")
        return qual[i:]
    return qual.rsplit("::", 1)[-1]


_IMPL_MACROS = {
    "TORCH_IMPL_FUNC": "impl_func",
    "TORCH_META_FUNC": "meta_func",
    "TORCH_META_FUNC2": "meta_func",
    "TORCH_PRECOMPUTE_META_FUNC": "meta_func",
    "TORCH_PRECOMPUTE_META_FUNC2": "meta_func",
}
_DISPATCH_MACRO = re.compile(r"^(?:DECLARE_DISPATCH|DEFINE_DISPATCH|(?:ALSO_)?REGISTER_[A-Z0-9_]*DISPATCH)$")
_UPPER = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def _text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace")


def _split_args(text: str) -> list[str]:
    """Split ``(a, f<b, c>(d), e)`` at depth-0 commas."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return [a for a in macros.split_args(text, angles=True) if a]


def _function_declarator(decl: ts.Node) -> ts.Node | None:
    for _ in range(6):
        if decl is None:
            return None
        if decl.type == "function_declarator":
            return decl
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in decl.named_children if c.type.endswith("declarator")]
            nxt = named[-1] if named else None
        decl = nxt
    return None


def _scope_names(node: ts.Node) -> tuple[list[str], list[str]]:
    """Enclosing namespaces and classes, outermost first."""
    ns: list[str] = []
    cls: list[str] = []
    p = node.parent
    while p is not None:
        t = p.type
        if t == "namespace_definition":
            name = p.child_by_field_name("name")
            ns.append(_text(name).replace(" ", "") if name is not None else "(anonymous namespace)")
        elif t in ("class_specifier", "struct_specifier"):
            name = p.child_by_field_name("name")
            if name is not None:
                cls.append(strip_templates(_text(name)))
        p = p.parent
    ns.reverse()
    cls.reverse()
    return ns, cls


# ---------------------------------------------------------------------------------------------
# Namespaces by brace matching

# Note [Namespaces of broken files]
# When tree-sitter cannot fit a file together (an `#if` that splits braces, an unknown macro
# in a declaration) it wraps the rest of the file in an ERROR node: the functions inside are
# still found, but their `namespace at::native {` is not. For files with ERROR nodes we read
# namespaces by matching braces in the text instead, skipping comments, literals, preprocessor
# lines and the `#else`/`#elif` branches of conditionals (the first branch is the one kept).

_CODE_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_BRACE_OR_NS = re.compile(rb"[{}]|\b(?:inline\s+)?namespace\b(?:\s+([A-Za-z_][\w:]*))?\s*(?=\{)")
_AFTER_PARAMS = re.compile(rb"^(?:\s|const\b|override\b|noexcept\b|final\b|mutable\b|volatile\b|&|->\s*[\w:<>,\s&*]+)*$")
_NAME_BEFORE = re.compile(rb"((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*$")
_IMPL_HEAD = re.compile(rb"\b(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)\s*\(([^()]*)\)\s*$")
_NOT_FUNCTIONS = {b"if", b"for", b"while", b"switch", b"catch", b"return", b"sizeof", b"decltype", b"alignof",
                  b"static_assert", b"defined"}


def _mask_code(src: bytes) -> bytes:
    """Preprocessor lines, #else branches, comments and literals blanked (offsets kept)."""
    return _CODE_NOISE.sub(_spaces, _mask_preprocessor(src))


def text_blocks(src: bytes) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, int, str]]]:
    """Namespaces ``(start, end, name)`` and namespace-level function bodies
    ``(start, end, name_byte, name)`` found by brace matching. See Note [Namespaces of broken files]."""
    masked = _mask_code(src)
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
    if m.group(1).rsplit(b"::", 1)[-1] in _NOT_FUNCTIONS or _UPPER.match(m.group(1).decode()):
        return None
    return m.start(1), m.group(1).decode()


def text_namespaces(src: bytes) -> list[tuple[int, int, str]]:
    """``(start_byte, end_byte, name)`` of each namespace body, found by brace matching."""
    return text_blocks(src)[0]


def _mask_preprocessor(src: bytes) -> bytes:
    """Blank preprocessor lines (with continuations) and #else/#elif branches, keeping offsets."""
    out = []
    skipping: list[bool] = []
    cont = False
    for line in src.split(b"\n"):
        stripped = line.lstrip()
        directive = cont or stripped.startswith(b"#")
        if stripped.startswith(b"#") and not cont:
            d = stripped[1:].lstrip()
            if d.startswith(b"if"):
                skipping.append(False)
            elif d.startswith((b"else", b"elif")) and skipping:
                skipping[-1] = True
            elif d.startswith(b"endif") and skipping:
                skipping.pop()
        cont = directive and line.rstrip().endswith(b"\\")
        out.append(b" " * len(line) if directive or any(skipping) else line)
    return b"\n".join(out)


def _broken(root: ts.Node, depth: int = 4, min_lines: int = 15) -> bool:
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


def _namespace_lookup(spans: list[tuple[int, int, str]]):
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


# ---------------------------------------------------------------------------------------------
# Extraction


def extract_file(src: bytes, lang: str, bindings: bool = False) -> tuple[bool, list[Fact]]:
    """``(has_error_nodes, facts)`` for one file's bytes. ``bindings``: the file is a generated
    Python binding (python_torch_functions_*.cpp): also report its ``// aten::OP(...)`` markers."""
    facts, has_error = _extract(src, "cpp" if lang == "objcpp" else lang)
    facts.extend(_jit_facts(src))
    _set_conditions(src, facts)
    if bindings:
        facts.extend(_binding_markers(src, facts))
    return has_error, facts


_BINDING = re.compile(rb"^[ \t]*// aten::([A-Za-z_]\w*(?:\.\w+)?)\(", re.M)


def _binding_markers(src: bytes, facts: list[Fact]) -> list[Fact]:
    """Note [Python bindings]: torchgen's python_*functions*.cpp and python_variable_methods.cpp
    put ``// aten::add.Tensor(...)`` right above the ``dispatch_add`` lambda of each overload,
    inside the ``THPVariable_add`` binding. A ``binding`` fact records it, scoped to that function."""
    funcs = sorted((f.line, f.end_line, i) for i, f in enumerate(facts) if f.kind == "function")
    out = []
    for m in _BINDING.finditer(src):
        line = src.count(b"\n", 0, m.start()) + 1
        scope = -1
        for start, end, i in funcs:
            if start <= line <= end:
                scope = i
        op = m.group(1).decode()
        out.append(Fact("binding", op, op, line, line, scope=scope))
    return out


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


@dataclass
class _Unit:
    """One parse of a source text and the state its extraction steps share. Facts point at their
    enclosing function by index (``scope``); ``funcs`` are ``(start_byte, end_byte, fact index)``."""

    src: bytes
    text: bytes
    lang: str
    tree: ts.Tree
    line_offset: int = 0
    fixed_line: int | None = None
    via_macro: str = ""
    base_namespace: str = ""
    text_ns: Callable[[int], str] | None = None
    text_fns: list[tuple[int, int, int, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    funcs: list[tuple[int, int, int]] = field(default_factory=list)
    refs: list[tuple[ts.Node, dict[str, ts.Node], str]] = field(default_factory=list)
    receivers: dict[tuple[int, str], tuple[int, str]] = field(default_factory=dict)  # see _receiver_type
    template_params: set[str] | None = None
    objects: dict[str, str] = field(default_factory=dict)  # namespace-scope object -> class (objects.py)

    def line_of(self, node: ts.Node, end: bool = False) -> int:
        if self.fixed_line is not None:
            return self.fixed_line
        return (node.end_point if end else node.start_point)[0] + 1 + self.line_offset

    def ns_of(self, node: ts.Node) -> tuple[str, str]:
        ns, cls = _scope_names(node)
        if self.text_ns is not None:
            ns = [p for p in self.text_ns(node.start_byte).split("::") if p]
        if self.base_namespace:
            ns = [self.base_namespace] + ns
        return "::".join(ns), "::".join(cls)

    def fact(self, kind: str, name: str, qual: str, line: int, end_line: int = 0, namespace: str = "",
             scope: int = -1, arg: str = "", detail: str = "", targs: str = "") -> Fact:
        return Fact(kind, name, qual, line, end_line or line, namespace, scope, arg, detail, self.via_macro,
                    "", targs)


def _extract(src: bytes, lang: str, line_offset: int = 0, fixed_line: int | None = None,
             via_macro: str = "", base_namespace: str = "",
             objects: dict[str, str] | None = None) -> tuple[list[Fact], bool]:
    """The extraction steps, in order: parse, definitions and references from the queries,
    functions tree-sitter lost (brace matching), references placed in their functions, macro uses."""
    unit = _parse(src, lang, line_offset, fixed_line, via_macro, base_namespace)
    _collect(unit)
    _add_recovered_functions(unit)
    macro_defs = macros.read_defines(src.decode("utf-8", "replace")) if fixed_line is None else {}
    _add_references(unit, macro_defs)
    _add_object_args(unit, objects)
    _add_dispatch_macros_from_text(unit)
    if macro_defs:
        unit.facts.extend(_expand_in_functions(unit, macro_defs))
        base = len(unit.facts)
        for f in _expand_macro_uses(unit, macro_defs):
            if f.scope >= 0:
                f.scope += base
            unit.facts.append(f)
    return unit.facts, unit.tree.root_node.has_error


def _parse(src: bytes, lang: str, line_offset: int, fixed_line: int | None, via_macro: str,
           base_namespace: str) -> _Unit:
    text = blank_attributes(src, lang)
    tree = _parser(lang).parse(text)
    unit = _Unit(src, text, lang, tree, line_offset, fixed_line, via_macro, base_namespace)
    if fixed_line is None and _broken(tree.root_node):
        spans, unit.text_fns = text_blocks(text)
        unit.text_ns = _namespace_lookup(spans)
    return unit


_REFERENCES = ("reference.call", "reference.launch", "reference.stub_arg", "reference.functor_decl",
               "reference.functor_arg", "definition.lambda", "reference.vexing_call")


def _collect(unit: _Unit) -> None:
    """Run the query: definitions become facts now; references wait until every function is known."""
    for capname, caps in run_query(unit.lang, unit.tree.root_node):
        node = caps[capname]
        if capname == "definition.function":
            if _is_braced_call(node, caps["name"]):
                unit.refs.append((node, caps, "reference.braced_call"))
                continue
            fact = _definition_fact(unit, node, caps)
            if fact is not None:
                unit.funcs.append((node.start_byte, node.end_byte, len(unit.facts)))
                unit.facts.append(fact)
        elif capname == "definition.class":
            namespace, cls = unit.ns_of(node)
            name = strip_templates(_text(caps["name"]))
            qual = "::".join(p for p in (namespace, cls, name) if p)
            unit.facts.append(unit.fact("class", last_component(name), qual, unit.line_of(node),
                                        unit.line_of(node, True), namespace=namespace))
        elif capname in _REFERENCES:
            unit.refs.append((node, caps, capname))
        elif capname == "reference.include":
            path = _text(caps["name"]).strip('"<>')
            unit.facts.append(unit.fact("include", path, path, unit.line_of(node)))


def _definition_fact(unit: _Unit, node: ts.Node, caps: dict[str, ts.Node]) -> Fact | None:
    """A function body: a function (or ``__global__``), a TORCH_IMPL_FUNC-style block, or a
    macro-shaped block ``NAME(args) { ... }``."""
    fd = _function_declarator(caps["name"])
    inner = fd.child_by_field_name("declarator") if fd is not None else None
    if inner is None:
        return None
    namespace, cls = unit.ns_of(node)
    start, end = unit.line_of(node), unit.line_of(node, end=True)
    if inner.type == "function_declarator":
        # MACRO(args) (params) { body } -- TORCH_IMPL_FUNC and friends.
        mac, margs = inner.child_by_field_name("declarator"), inner.child_by_field_name("parameters")
        if mac is None or margs is None:
            return None
        mname, args = _text(mac), _split_args(_text(margs))
        kind = _IMPL_MACROS.get(mname)
        if kind is None or not args:
            return None
        name = "_".join(args[:2]) if mname.endswith("2") else args[0]
        return unit.fact(kind, name, f"{namespace}::{mname}({', '.join(args)})".lstrip(":"), start, end,
                         namespace=namespace, detail=mname)
    raw = _text(inner)
    if raw in _STATEMENT_WORDS:
        return None  # `else if (x) {` after an #ifdef that closed the function early (CUDABlas.cpp)
    if node.child_by_field_name("type") is None and inner.type == "identifier" and _UPPER.match(raw):
        params = fd.child_by_field_name("parameters")
        return unit.fact("macro_block", raw, raw, start, end, namespace=namespace,
                         arg=_text(params) if params is not None else "")
    qual = strip_templates(raw)
    prefix = "::".join(p for p in (namespace, cls) if p)
    if qual.startswith("::"):
        qual = qual[2:]
    elif prefix:
        qual = f"{prefix}::{qual}"
    # __global__ may sit before the node's start when it was blanked (cpp grammar)
    lead = unit.src[max(0, node.start_byte - 200):node.start_byte]
    cut = max(lead.rfind(b";"), lead.rfind(b"}"), lead.rfind(b"{"))
    head = lead[cut + 1:] + unit.src[node.start_byte:inner.start_byte]
    kind = "global" if b"__global__" in head else "function"
    return unit.fact(kind, last_component(qual), qual, start, end, namespace=namespace,
                     arg=_signature(head, fd), detail=_specialization(node, inner))


# Note [Function signatures]
# A definition's ``arg`` keeps what decides whether a call from another translation unit can reach
# it: the linkage and execution-space words written before the name (``static``, ``__global__``,
# ``__device__``, ``__host__``; C10_HOST_DEVICE / C10_DEVICE / C10_HOST spelled out) and the number
# of parameters: ``static __device__ params=2``, ``params=3 defaults=1``, ``params=1+`` (variadic).
# Functions recovered by brace matching have an empty ``arg``: unknown, never filtered on.
_SPEC_WORDS = {b"static": ("static",), b"__global__": ("__global__",), b"__device__": ("__device__",),
               b"__host__": ("__host__",), b"C10_HOST_DEVICE": ("__host__", "__device__"),
               b"C10_DEVICE": ("__device__",), b"C10_HOST": ("__host__",)}
_SPEC_RE = re.compile(rb"\b(?:" + b"|".join(_SPEC_WORDS) + rb")\b")
_COMMENT_RE = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)


def _signature(head: bytes, fd: ts.Node) -> str:
    """See Note [Function signatures]."""
    words: list[str] = []
    for m in _SPEC_RE.finditer(_COMMENT_RE.sub(b" ", head)):
        words.extend(w for w in _SPEC_WORDS[m.group(0)] if w not in words)
    params = fd.child_by_field_name("parameters")
    kids = [c for c in params.named_children if c.type != "comment"] if params is not None else []
    variadic = params is not None and any(c.type in ("variadic_parameter_declaration", "...")
                                          for c in params.children)
    n = sum(1 for c in kids if c.type in ("parameter_declaration", "optional_parameter_declaration")
            and _text(c) != "void")
    defaults = sum(1 for c in kids if c.type == "optional_parameter_declaration")
    words.append(f"params={n}{'+' if variadic else ''}")
    if defaults:
        words.append(f"defaults={defaults}")
    return " ".join(words)


_STATEMENT_WORDS = {"if", "for", "while", "switch", "catch", "return", "else", "do"}


# Note [Explicit specializations]
# CUDABlas.cpp defines each dtype of at::cuda::blas::gemm as `template <> void gemm<float>(...) {}`.
# The function fact keeps the plain name (gemm, qual at::cuda::blas::gemm, templates stripped as
# for every definition) and records the specialization's arguments in detail: `specialization<float>`.


def _specialization(node: ts.Node, declarator: ts.Node) -> str:
    parent = node.parent
    if parent is None or parent.type != "template_declaration":
        return ""
    params = parent.child_by_field_name("parameters")
    if params is None or params.named_child_count:
        return ""
    targs = _template_args(declarator)
    return f"specialization<{targs}>" if targs else ""


def _template_args(node: ts.Node) -> str:
    """``float`` of ``gemm<float>`` / ``at::cuda::blas::gemm<float>`` / ``l.launch<T, 2>``; else ''."""
    for _ in range(4):
        if node.type in ("template_function", "template_method", "template_type"):
            args = node.child_by_field_name("arguments")
            return " ".join(_text(args)[1:-1].split()) if args is not None else ""
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
            if node is None:
                return ""
        elif node.type in ("field_expression", "dependent_name"):
            node = node.child_by_field_name("field") if node.type == "field_expression" else node.named_children[0]
            if node is None:
                return ""
        else:
            return ""
    return ""


def _add_recovered_functions(unit: _Unit) -> None:
    """Functions tree-sitter lost inside ERROR nodes, found by brace matching instead.
    See Note [Namespaces of broken files]."""
    facts = unit.facts
    known = sorted((s, e) for s, e, idx in unit.funcs if facts[idx].kind != "macro_block")
    known_starts = [k[0] for k in known]
    for start, end, name_byte, name in unit.text_fns:
        i = bisect.bisect_right(known_starts, start) - 1
        j = bisect.bisect_left(known_starts, start)
        if (i >= 0 and known[i][1] > start) or (j < len(known) and known[j][0] < end):
            continue
        line = unit.text.count(b"\n", 0, name_byte) + 1 + unit.line_offset
        end_line = unit.text.count(b"\n", 0, end) + 1 + unit.line_offset
        ns = unit.text_ns(start) if unit.text_ns else ""
        unit.funcs.append((start, end, len(facts)))
        if "(" in name:  # TORCH_IMPL_FUNC(x) and friends
            mname, _, rest = name.partition("(")
            args = [a for a in rest.rstrip(")").split(",") if a]
            fname = "_".join(args[:2]) if mname.endswith("2") else args[0]
            facts.append(unit.fact(_IMPL_MACROS[mname], fname, f"{ns}::{mname}({', '.join(args)})".lstrip(":"),
                                   line, end_line, namespace=ns, detail=mname))
            continue
        qual = name if name.startswith(ns + "::") or not ns else f"{ns}::{name}"
        facts.append(unit.fact("function", last_component(name), qual, line, end_line, namespace=ns,
                               detail="found by brace matching (tree-sitter ERROR region)"))


class _Scopes:
    """byte -> index of the innermost enclosing function fact. A macro-shaped block
    (NAME(args) {...}) only scopes references when it is TORCH_LIBRARY*."""

    def __init__(self, unit: _Unit):
        self.funcs = sorted(f for f in unit.funcs if unit.facts[f[2]].kind != "macro_block"
                            or unit.facts[f[2]].name.startswith("TORCH_LIBRARY"))
        self.starts = [f[0] for f in self.funcs]
        self._spans = {i: (s, e) for s, e, i in self.funcs}

    def span(self, idx: int) -> tuple[int, int]:
        """Byte range of the function fact ``idx``."""
        return self._spans.get(idx, (0, 0))

    def at(self, start: int, end: int | None = None) -> int:
        end = start if end is None else end
        i = bisect.bisect_right(self.starts, start) - 1
        while i >= 0:
            s, e, idx = self.funcs[i]
            if s <= start and end <= e:
                return idx
            i -= 1
        return -1


def _add_references(unit: _Unit, macro_defs: macros.Defines | dict) -> None:
    """Calls, launches, lambdas, stub arguments: each placed in its enclosing function."""
    scopes = _Scopes(unit)
    unit.funcs = scopes.funcs
    seen_launch: set[tuple[int, int]] = set()
    local_classes = {f.name for f in unit.facts if f.kind == "class"}
    for node, caps, capname in unit.refs:
        if capname == "reference.call" and any(c.type == "kernel_call_syntax" for c in node.children):
            continue  # reported by the launch pattern
        scope = scopes.at(node.start_byte, node.end_byte)
        if capname == "reference.launch":
            if (node.start_byte, node.end_byte) in seen_launch:
                continue
            seen_launch.add((node.start_byte, node.end_byte))
            qual = strip_templates(_text(caps["name"]))
            line = unit.line_of(node)
            config = re.sub(r"\s+", " ", _text(caps["config"]))
            targets = _assigned_kernels(unit, scopes.span(scope), qual, node.start_byte) if scope >= 0 else {}
            for target, targs in (targets or {"": ""}).items():
                unit.facts.append(unit.fact("launch", last_component(target or qual), target or qual, line,
                                            scope=scope, arg=qual if target else "", detail=config, targs=targs))
        elif capname == "definition.lambda":
            unit.facts.append(_lambda_fact(unit, node, scope))
        elif capname == "reference.functor_decl":
            if _text(caps["name"]) in local_classes:
                unit.facts.append(unit.fact("call", _text(caps["name"]), _text(caps["name"]), unit.line_of(node),
                                            scope=scope, detail="functor"))
        elif capname == "reference.functor_arg":
            qual = strip_templates(_text(caps["name"]))
            name = last_component(qual)
            if scope >= 0 and name[:1].isupper() and name.isidentifier():
                unit.facts.append(unit.fact("call", name, qual, unit.line_of(node), scope=scope, detail="functor_arg"))
        elif capname == "reference.stub_arg":
            fnode = caps["name"]
            unit.facts.append(unit.fact("call", _text(fnode), _text(fnode), unit.line_of(fnode), scope=scope,
                                        detail="argument"))
        elif capname in ("reference.vexing_call", "reference.braced_call"):
            fact = _misread_call_fact(unit, node, caps, capname, scope)
            if fact is not None:
                unit.facts.append(fact)
        else:
            fact = _call_fact(unit, node, caps, scope, scopes, macro_defs)
            if fact is not None:
                unit.facts.append(fact)


def _add_object_args(unit: _Unit, inherited: dict[str, str] | None) -> None:
    """See Note [Functor objects passed by name] in objects.py."""
    if not unit.funcs:
        return
    masked = _mask_code(unit.text)
    scopes = _Scopes(unit)
    table = objects.aliases(masked, scopes.at)
    classes = [(f.line, f.end_line) for f in unit.facts if f.kind == "class"]
    newlines = [m.start() for m in re.finditer(b"\n", unit.text)] if classes else []

    def in_class(pos: int) -> bool:
        line = bisect.bisect_left(newlines, pos) + 1 + unit.line_offset
        return any(lo < line <= hi for lo, hi in classes)

    unit.objects = objects.namespace_objects(masked, scopes.at, table, in_class)
    seen: set[tuple[int, int, str]] = set()
    for use in objects.object_uses(masked, scopes.at, scopes.span, table, {**(inherited or {}), **unit.objects}):
        qual = strip_templates(use.type)
        name = last_component(qual)
        line = unit.fixed_line if unit.fixed_line is not None else (
            unit.text.count(b"\n", 0, use.pos) + 1 + unit.line_offset)
        if not name.isidentifier() or (use.scope, line, name) in seen:
            continue
        seen.add((use.scope, line, name))
        unit.facts.append(unit.fact("call", name, qual, line, scope=use.scope, arg=use.name, detail="object_arg"))


# Note [Launches through a variable]
# ``impl_fptr<<<grid, block, 0, stream>>>(...)`` in cuda/DistanceKernel.cu launches whichever
# ``cdist_kernel_cuda_impl<scalar_t, dists<scalar_t>::two>`` was assigned to the local ``impl_fptr``;
# flash_attn's ``auto kernel = &flash_fwd_kernel<Kernel_traits, ...>; kernel<<<...>>>(params)`` does
# the same. A launch of a name the function assigns (``name = [&]kernel<...>`` or ``name = kernel;``,
# read as text before the launch) is a launch of each distinct function assigned: one fact per
# kernel, ``name`` the kernel, ``arg`` the variable as written, ``targs`` the template arguments of
# every assignment of that kernel, each once (``scalar_t, dists<scalar_t>::p, dists<scalar_t>::zero``).
_ASSIGNED = rb"(?<![\w.>])%s\s*=(?!=)\s*&?\s*((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*([<;])"


def _assigned_kernels(unit: _Unit, span: tuple[int, int], name: str, limit: int) -> dict[str, str]:
    """kernel -> template arguments. See Note [Launches through a variable]."""
    if not name.isidentifier():
        return {}
    text = unit.text[span[0]:limit]
    out: dict[str, list[str]] = {}
    for m in re.finditer(_ASSIGNED % re.escape(name.encode()), text):
        target = m.group(1).decode()
        if target in ("nullptr", "NULL", name):
            continue
        args = out.setdefault(target, [])
        if m.group(2) == b"<":
            end = text.find(b";", m.end())
            inner = text[m.end():end].decode("utf-8", "replace").rsplit(">", 1)[0] if end > 0 else ""
            for a in macros.split_args(inner, angles=True):
                a = " ".join(a.split())
                if a and a not in args:
                    args.append(a)
    return {t: ", ".join(a) for t, a in out.items()}


def _lambda_fact(unit: _Unit, node: ts.Node, scope: int) -> Fact:
    decl = node.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters") if decl is not None else None
    ptext = _text(params) if params is not None else "()"
    arity = len(_split_args(ptext))
    return unit.fact("lambda", f"lambda#{arity}", f"lambda{re.sub(chr(92) + 's+', ' ', ptext)}",
                     unit.line_of(node), unit.line_of(node, True), scope=scope, arg=str(arity),
                     detail=_receiving_call(node))


def _receiving_call(lam: ts.Node) -> str:
    """The last name of the function a lambda is passed to directly (``cpu_kernel_vec`` in
    ``cpu_kernel_vec(iter, [=](scalar_t a) {...}, ...)``), or ''. See Note [Lambdas a loop runs] in
    resolve/chain.py."""
    args = lam.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    fn = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
    if fn is None or fn.type not in ("identifier", "qualified_identifier", "template_function"):
        return ""
    return last_component(strip_templates(_text(fn)))


# Note [Calls tree-sitter misreads]
# Two call shapes common in ATen are not call_expressions to tree-sitter-cpp:
#   gemm_internal_cublas<float>(CUDABLAS_GEMM_ARGS(float));   -- the most vexing parse: a declaration
#       of `CUDABLAS_GEMM_ARGS` with type `gemm_internal_cublas<float>` (parenthesized declarator);
#   gpu_reduce_kernel<scalar_t, out_t>(iter, ops, typename ops_t::acc_t{});  -- a braced argument
#       makes it a function definition nested in the body (C++ has no nested functions).
# Inside a function body both are reported as call facts, with their template arguments in targs.


def _is_braced_call(node: ts.Node, declarator: ts.Node) -> bool:
    """A typeless ``f<T>(args, X{}) {}`` directly in a block: no nested functions in C++, so a call
    with a braced argument, misread. Macro-shaped blocks (``CUDA_KERNEL_LOOP(i, n) {``) are not."""
    if node.parent is None or node.parent.type != "compound_statement" or node.child_by_field_name("type"):
        return False
    fd = _function_declarator(declarator)
    callee = fd.child_by_field_name("declarator") if fd is not None else None
    if callee is not None and callee.type == "qualified_identifier":
        callee = callee.child_by_field_name("name")
    return callee is not None and callee.type == "template_function"


def _misread_call_fact(unit: _Unit, node: ts.Node, caps: dict[str, ts.Node], capname: str,
                       scope: int) -> Fact | None:
    if scope < 0:
        return None
    if capname == "reference.vexing_call":
        callee = caps["name"]
        qual = strip_templates(_text(callee.child_by_field_name("name") or callee)
                               if callee.type == "template_type" else _text(callee))
    else:
        fd = _function_declarator(caps["name"])
        callee = fd.child_by_field_name("declarator") if fd is not None else None
        if callee is None or callee.type not in ("identifier", "qualified_identifier", "template_function"):
            return None
        qual = strip_templates(_text(callee))
    name = last_component(qual)
    if not qual or _UPPER.match(name):
        return None
    if capname == "reference.braced_call":
        # the function objects made in the misread argument list (ArgMaxOps<acc_t>{}, NormOps<...>{p})
        for m in _BRACED_OBJECT.finditer(_text(caps["name"])):
            unit.facts.append(unit.fact("call", m.group(1).rsplit("::", 1)[-1], m.group(1), unit.line_of(node),
                                        scope=scope, detail="functor_arg"))
    return unit.fact("call", name, qual, unit.line_of(node), scope=scope, targs=_template_args(callee))


_BRACED_OBJECT = re.compile(r"(?<![\w:])((?:\w+::)*[A-Z]\w*)\s*(?:<[^(){};]*>)?\s*\{")


def _call_fact(unit: _Unit, node: ts.Node, caps: dict[str, ts.Node], scope: int, scopes: "_Scopes",
               macro_defs) -> Fact | None:
    """A call_expression: a plain or member call, a dispatch macro, or ``m.impl("op", fn)``."""
    fnode = caps["name"]
    ftype = fnode.type
    member = ""
    if ftype in ("identifier", "qualified_identifier", "template_function"):
        qual = strip_templates(_text(fnode))
    elif ftype == "compound_literal_expression":
        # sum_functor<scalar_t>{}(iter): calls the functor's operator()
        tnode = fnode.child_by_field_name("type") or (fnode.named_children or [None])[0]
        if tnode is None:
            return None
        qual = strip_templates(_text(tnode)) + "::operator()"
    elif ftype == "field_expression":
        fld = fnode.child_by_field_name("field")
        if fld is not None and fld.type == "dependent_name" and fld.named_child_count:
            fld = fld.named_children[0]  # l.template launch<T>(...)
        if fld is None:
            return None
        qual = strip_templates(_text(fld))
        member = "member"
        receiver_type = _receiver_type(unit, fnode, scope, scopes)
        if receiver_type and qual:
            qual = f"{receiver_type}::{qual}"
    else:
        return None
    if not qual or "(" in qual.replace("operator()", ""):
        return None
    name = last_component(qual)
    line = unit.line_of(node)
    if _UPPER.match(name):
        if name not in macro_defs and not _DISPATCH_MACRO.match(name) and scope >= 0:
            return _macro_callee(unit, caps["args"], line, scope)
        if name in macro_defs or not _DISPATCH_MACRO.match(name):
            return None  # same-file macros are expanded by _expand_in_functions
        args = _split_args(_text(caps["args"]))
        return _dispatch_fact(unit, name, args, line, unit.ns_of(node)[0], scope)
    if member and name in ("impl", "impl_UNBOXED") and scope >= 0:
        args = _split_args(_text(caps["args"]))
        if len(args) >= 2 and args[0].startswith('"'):
            return unit.fact("torch_impl", args[0].strip('"'), args[0].strip('"'), line, scope=scope, arg=args[1])
    arg = ""
    if jiterator.is_launcher(name):
        arg = ",".join(a.strip() for a in _split_args(_text(caps["args"])) if a.strip().isidentifier())
    elif scope >= 0 and (member or qual.startswith(_OPERATOR_SPELLINGS) and not qual.startswith("at::native::")):
        arg = _operator_call_args(unit, caps["args"], scope, scopes)
    return unit.fact("call", name, qual, line, scope=scope, detail=member, arg=arg,
                     targs=_template_args(fnode) if ftype != "identifier" and b"<" in fnode.text else "")


# Note [Arguments of operator calls]
# ``at::arange_out(result, 0, end, 1)`` inside ``arange.out`` reaches ``arange.start_out``: which
# overload a call reaches is decided by its arguments (resolve/opcalls.py). A call spelled like an
# operator call (``at::x``, ``at::_ops::x::call``, ``at::cuda::x``, a member call ``self.x(...)``)
# keeps its argument list in ``arg``, whitespace collapsed, each argument cut to 40 characters; an
# argument that is a name declared in the same function (a parameter or local) is written
# ``name:Type`` with its declared type's last word (``result:Tensor``, ``end:Scalar``). The whole
# text is cut to 400 characters, ending in "…" when cut.
_OPERATOR_SPELLINGS = ("at::", "_ops::", "::at::")


def _operator_call_args(unit: _Unit, args: ts.Node, scope: int, scopes: "_Scopes") -> str:
    """See Note [Arguments of operator calls]."""
    out = []
    for a in args.named_children:
        if a.type == "comment":
            continue
        text = " ".join(_text(a).split())
        if a.type == "identifier":
            typ = _declared_type(unit, scopes.span(scope)[0], text, a.start_byte)
            text += ":" + typ if typ else ""
        out.append(text[:40])
    joined = ", ".join(out)
    return joined if len(joined) <= 400 else joined[:399] + "…"


def _declared_type(unit: _Unit, lo: int, name: str, limit: int) -> str:
    """The last word of the type ``name`` is first declared with between ``lo`` (the function's
    start, so parameters count) and ``limit``: ``Tensor``, ``Scalar``, ``double``; '' if none."""
    text, word = unit.text, name.encode()
    pos = text.find(word, lo, limit)
    while pos >= 0:
        end = pos + len(word)
        if not _is_word_byte(text[pos - 1]) and not _is_word_byte(text[end]):
            after = text[end:end + 80].lstrip()[:1]
            if after and after in b"({=;,)[:":
                m = _BUILTIN_BEFORE.search(text, max(lo, pos - 40), pos)
                typ = m.group(1).decode() if m else _type_before(text, pos, lo)
                typ = re.sub(r"^(?:const\s+)?(?:\w+::)*", "", typ).split()[-1] if typ.strip() else ""
                if _TYPE_WORD.match(typ):
                    return typ
        pos = text.find(word, end, limit)
    return ""


_BUILTIN_BEFORE = re.compile(rb"(?:\A|[\s(,;{])(?:const\s+)?(int64_t|int32_t|int|double|float|bool|size_t|long|char)"
                             rb"\s*[&*]?\s*\Z")
# A declared type's last word that is a type: a class name (Tensor, IntArrayRef), a builtin or a
# ``*_t`` typedef; not ``alpha`` in ``alpha * a``, which reads backwards like a pointer declaration.
_TYPE_WORD = re.compile(r"[A-Z]\w*\Z|(?:int|double|float|bool|char|long|short|unsigned|size_t|\w+_t)\Z")


# Note [Functions handed to a macro]
# ``CUB_WRAPPER(cub::DeviceSegmentedReduce::Reduce, in, out, ...)`` (cuda/cub.cuh, defined in a
# header, so not expanded here) calls its first argument, twice (workspace query, then the work).
# A macro call from another file whose first argument is a bare qualified name gets a ``call``
# fact of that name, detail ``macro_arg``, at the macro's line; the resolver keeps only those that
# are library calls (cub::..., cublas...), so ``TORCH_CHECK(ns::flag, ...)`` adds nothing to a chain.


def _macro_callee(unit: _Unit, args: ts.Node, line: int, scope: int) -> Fact | None:
    """See Note [Functions handed to a macro]."""
    first = args.named_children[0] if args.named_child_count else None
    if first is None or first.type != "qualified_identifier":
        return None
    qual = strip_templates(_text(first))
    return unit.fact("call", last_component(qual), qual, line, scope=scope, detail="macro_arg")


# Note [Member calls on locals]
# `KthvalueLauncher l(k); ... l.launch<scalar_t>(...)` calls KthvalueLauncher::launch. When the
# receiver of a member call is a local or parameter declared in the same function with a named
# class type (`Foo l(...)`, `Foo l{...}`, `auto l = Foo{...}`, `const Foo& l`), the call's qual is
# `Foo::method` (templates stripped); otherwise just `method`. detail stays "member".


_NOT_TYPES = {"return", "auto", "const", "else", "case", "new", "delete", "throw", "typename", "struct", "class",
              "using", "goto", "co_return", "co_await", "co_yield", "sizeof", "decltype", "static", "inline",
              "volatile", "unsigned", "signed", "int", "long", "short", "char", "bool", "float", "double", "void",
              "operator", "template", "namespace", "virtual", "explicit", "friend", "mutable", "extern", "if",
              "while", "for", "switch", "do", "constexpr", "register", "default", "public", "private", "protected"}
def _receiver_type(unit: _Unit, fexpr: ts.Node, scope: int, scopes: "_Scopes") -> str:
    """The class a member call's receiver was declared with in the same function, or ''."""
    receiver = fexpr.child_by_field_name("argument")
    if receiver is None or receiver.type != "identifier" or scope < 0:
        return ""
    name = _text(receiver)
    key = (scope, name)
    found = unit.receivers.get(key)
    if found is None:
        found = _declaration_in(unit, scopes.span(scope), name, fexpr.start_byte)
        if found[1] and "::" not in found[1] and found[1] in _template_parameters(unit):
            found = (found[0], "")  # `Launcher l` in run_launcher<..., Launcher>: a template parameter
        unit.receivers[key] = found
    pos, typ = found
    return typ if typ and pos < fexpr.start_byte else ""


def _declaration_in(unit: _Unit, span: tuple[int, int], name: str, limit: int) -> tuple[int, str]:
    """``(byte, type)`` of the first declaration of ``name`` in the function's text: a parameter or
    local ``Foo name``, ``const Foo<T>& name``, ``Foo name(...)``, ``Foo name{...}`` or
    ``auto name = Foo{...}``, before byte ``limit`` (the first member call through it); ``(0, '')``
    when none. Read as text, and only for receivers of member calls: a query over every
    declaration of every file cost 12 % of the index time."""
    text, lo, hi = unit.text, span[0], min(span[1], limit)
    word = name.encode()
    pos = text.find(word, lo, hi)
    while pos >= 0:
        end = pos + len(word)
        if not _is_word_byte(text[pos - 1]) and not _is_word_byte(text[end]):
            after = text[end:end + 80].lstrip()
            if after[:1] and after[:1] in b"({=;,)[:":
                typ = _type_before(text, pos, lo)
                if typ == "auto" and after[:1] == b"=":
                    t = _AUTO_INIT.match(after)
                    typ = t.group(1).decode() if t else ""
                if typ and typ != "auto":
                    return pos, strip_templates(typ)
        pos = text.find(word, end, hi)
    return 0, ""


def _is_word_byte(c: int) -> bool:
    return c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


_AUTO_INIT = re.compile(rb"=\s*((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*(?:<[^;{}()]*>)?)\s*\{")


def _type_before(text: bytes, pos: int, lo: int) -> str:
    """The declared type written right before ``pos`` (``const Foo<T>& ``), read backwards down to
    ``lo``; '' if what precedes is not a type (an operator, a keyword, a comma, the function start)."""
    i = pos
    while i > lo and text[i - 1] in b" \t\r\n&*":
        i -= 1
    end = i
    while True:
        if i > lo and text[i - 1] == 0x3E:  # '>': template arguments, balanced
            depth = 0
            while i > lo:
                c = text[i - 1]
                i -= 1
                if c == 0x3E:
                    depth += 1
                elif c == 0x3C:
                    depth -= 1
                    if depth == 0:
                        break
                elif c in b";{}()":
                    return ""
            if depth:
                return ""
            while i > lo and text[i - 1] in b" \t":
                i -= 1
        j = i
        while j > lo and _is_word_byte(text[j - 1]):
            j -= 1
        if j == i or 0x30 <= text[j] <= 0x39:
            return ""
        i = j
        if i - 2 >= lo and text[i - 2:i] == b"::":
            i -= 2
            continue
        break
    if i > lo and text[i - 1] not in b" \t\r\n(,;{}":
        return ""
    typ = text[i:end].decode("utf-8", "replace")
    head = typ.split("<", 1)[0].strip()
    if head == "const":
        return ""
    return typ if head == "auto" or head not in _NOT_TYPES else ""


_TEMPLATE_PARAM = re.compile(rb"\b(?:typename|class)\s+([A-Za-z_]\w*)\s*(?=[,>=])")


def _template_parameters(unit: _Unit) -> set[str]:
    """Names of the template type parameters declared anywhere in the file (read once)."""
    if unit.template_params is None:
        unit.template_params = {m.decode() for m in _TEMPLATE_PARAM.findall(unit.text)}
    return unit.template_params


def _dispatch_fact(unit: _Unit, macro: str, args: list[str], line: int, namespace: str, scope: int) -> Fact:
    """DECLARE_DISPATCH / DEFINE_DISPATCH / every REGISTER_*_DISPATCH form; detail = the macro."""
    stub = args[0] if args else ""
    if macro == "DECLARE_DISPATCH":
        return unit.fact("declare_dispatch", args[-1] if args else "", args[-1] if args else "", line,
                         namespace=namespace, scope=scope, arg=args[0] if len(args) > 1 else "", detail=macro)
    if macro == "DEFINE_DISPATCH":
        return unit.fact("define_dispatch", stub, stub, line, namespace=namespace, scope=scope, detail=macro)
    kernel = args[-1] if len(args) >= 2 and macro not in _NO_KERNEL_MACROS else ""
    return unit.fact("register_dispatch", stub, stub, line, namespace=namespace, scope=scope,
                     arg=kernel.lstrip("&").strip(), detail=macro)


_NO_KERNEL_MACROS = {"REGISTER_NO_CPU_DISPATCH", "REGISTER_NO_AVX512_DISPATCH"}

# Note [Dispatch macros read as text]
# DECLARE_DISPATCH / DEFINE_DISPATCH / REGISTER_*_DISPATCH sit at namespace level, one per
# statement, often split over lines, without semicolons, or with a function type as argument
# (`DECLARE_DISPATCH(void (*)(TensorIterator&), x_stub)`): shapes tree-sitter reads as calls only
# some of the time. Besides the call_expressions of the query, each line that starts with one of
# these macros is read as text (balanced parentheses, top-level commas); a use found both ways is
# reported once. #define bodies are blanked before this (Note [Defines are read as text]).
_DISPATCH_USE = re.compile(
    rb"^[ \t]*(DECLARE_DISPATCH|DEFINE_DISPATCH|(?:ALSO_)?REGISTER_[A-Z0-9_]*DISPATCH)[ \t]*\(", re.M)


def _add_dispatch_macros_from_text(unit: _Unit) -> None:
    if b"DISPATCH" not in unit.text:
        return
    have = {(f.line, f.detail) for f in unit.facts if f.detail and f.kind.endswith("_dispatch")}
    for m in _DISPATCH_USE.finditer(unit.text):
        macro = m.group(1).decode()
        line = unit.fixed_line or unit.text.count(b"\n", 0, m.start(1)) + 1 + unit.line_offset
        if (line, macro) in have or not _DISPATCH_MACRO.match(macro):
            continue
        close = _balanced_paren(unit.text, m.end() - 1)
        if close < 0:
            continue
        args = _split_args(unit.text[m.end() - 1:close].decode("utf-8", "replace"))
        node = unit.tree.root_node.descendant_for_byte_range(m.start(1), m.start(1))
        namespace = unit.text_ns(m.start(1)) if unit.text_ns is not None else (
            "::".join(_scope_names(node)[0]) if node is not None else "")
        if unit.base_namespace:
            namespace = "::".join(p for p in (unit.base_namespace, namespace) if p)
        unit.facts.append(_dispatch_fact(unit, macro, args, line, namespace, -1))
        have.add((line, macro))


def _balanced_paren(text: bytes, start: int) -> int:
    """Index just past the ``)`` matching ``text[start] == '('``, or -1 (within 4000 bytes)."""
    return macros.balanced_paren(text, start, 4000)


def _namespace_at(tree: ts.Tree, byte: int) -> str:
    node = tree.root_node.descendant_for_byte_range(byte, byte)
    if node is None:
        return ""
    ns, _ = _scope_names(node)
    return "::".join(ns)


_BODY_NODES = {"compound_statement", "initializer_list", "field_declaration_list", "lambda_expression",
               "function_definition"}


def _inside_function(tree: ts.Tree, byte: int) -> bool:
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


def _expand_in_functions(unit: _Unit, defs: macros.Defines) -> list[Fact]:
    """Calls and launches inside same-file macros used in function bodies. Uses are found in the
    text: ``SMALL_INDEX(scalar_t, index_t, unsigned int, 1, 1, -2);`` reads as a declaration to
    tree-sitter, not as a call. See Note [Launches in function-local macros]."""
    text = unit.src.decode("utf-8", "replace")
    scopes = _Scopes(unit)
    batch: list[tuple[macros.MacroUse, int, str]] = []
    for use in macros.find_uses(text, defs, anywhere=True):
        scope = scopes.at(use.offset)
        if scope < 0:
            continue
        body = macros.expand(use, defs).replace("\r", " ").replace("\n", " ")
        if body.strip():
            batch.append((use, scope, body))
    if not batch:
        return []
    # One parse for all uses: each expansion is a one-line function on line i + 1.
    joined = "\n".join(f"void __atenmap_macro_body_{i}__() {{ {body} ;}}" for i, (_, _, body) in enumerate(batch))
    sub, _ = _extract(joined.encode(), unit.lang, objects=unit.objects)
    lines = text.split("\n")
    out: list[Fact] = []
    seen: set[tuple[int, int]] = set()
    launches_seen: dict[int, int] = {}  # batch index -> launches of that use so far
    for f in sub:
        if f.kind not in ("call", "launch") or not 1 <= f.line <= len(batch):
            continue
        use, scope, _ = batch[f.line - 1]
        f.line = f.end_line = use.line + unit.line_offset
        f.scope = scope
        f.via_macro = use.name
        if f.kind == "launch":
            ordinal = launches_seen.get(id(use), 0)
            launches_seen[id(use)] = ordinal + 1
            at = _launch_line_in_define(lines, defs.at(use.name, use.line), ordinal, unit.facts[scope])
            if at is not None:
                if (scope, at) in seen:
                    continue
                seen.add((scope, at))
                f.line = f.end_line = at + unit.line_offset
                f.via_macro = f"{use.name} (used at line {use.line + unit.line_offset})"
        out.append(f)
    return out


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
    close = _balanced_paren(src, src.find(b"(", offset))
    if close < 0 or not src[close:close + 200].lstrip().startswith(b"{"):
        return expanded
    return expanded + " {}" if expanded.rstrip().endswith(")") else expanded


def _expand_macro_uses(unit: _Unit, defs: macros.Defines) -> list[Fact]:
    """See Note [Macro-made kernels] in macros.py."""
    out: list[Fact] = []
    for use in macros.find_uses(unit.src.decode("utf-8", "replace"), defs):
        if _inside_function(unit.tree, use.offset):
            continue
        expanded = macros.expand(use, defs)
        if not expanded:
            continue
        expanded = _with_following_body(unit.src, use.offset, expanded)
        namespace = _namespace_at(unit.tree, use.offset)
        sub, _ = _extract(expanded.encode(), unit.lang, fixed_line=use.line + unit.line_offset,
                          via_macro=use.name, base_namespace=namespace)
        base = len(out)
        for f in sub:
            if f.scope >= 0:
                f.scope += base
            out.append(f)
    return out
