"""The one module that imports ``tree_sitter``: source bytes in, ``Fact`` records out.

The extraction rules are the tag queries in ``queries/*.scm``; this module runs them and turns
each capture into a flat ``Fact``. It hides py-tree-sitter's changing API (``Query`` /
``QueryCursor``) behind ``run_query``.

Lines in ``Fact`` are 1-based (tree-sitter rows are 0-based; converted here and nowhere else).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterator

import tree_sitter as ts

from atenmap.extract import macros

LANGUAGES = {".cpp": "cpp", ".cc": "cpp", ".h": "cpp", ".hpp": "cpp", ".cu": "cuda", ".cuh": "cuda"}


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
    call          name=callee's last component, qual=callee as written (templates dropped),
                  detail="member" for a.b() calls
    launch        name=kernel launched with <<<>>>, detail=launch configuration
    torch_impl    m.impl("op", fn): name=op, arg=fn text
    include       name=included path
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
    for _, caps in cursor.matches(node):
        main = next(k for k in caps if "." in k)
        yield main, {k: v[0] for k, v in caps.items()}


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
    definitions sit)? Small ERROR nodes inside statements do not hide definitions."""
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


def language_of(path: str) -> str | None:
    """Grammar for a file path; ``.mm`` (Objective-C++) is read with the C++ grammar as a fallback.
    Headers in a ``cuda/`` folder hold device code (``__global__`` kernels, ``<<<>>>`` launches:
    native/cuda/DistributionTemplates.h) and get the CUDA grammar, a superset of C++."""
    suffix = path[path.rfind("."):] if "." in path else ""
    if suffix == ".mm":
        return "objcpp"
    lang = LANGUAGES.get(suffix)
    if lang == "cpp" and suffix in (".h", ".hpp") and "/cuda/" in "/" + path:
        return "cuda"
    return lang


def extract_file(src: bytes, lang: str, bindings: bool = False) -> tuple[bool, list[Fact]]:
    """``(has_error_nodes, facts)`` for one file's bytes. ``bindings``: the file is a generated
    Python binding (python_torch_functions_*.cpp): also report its ``// aten::OP(...)`` markers."""
    facts, has_error = _extract(src, "cpp" if lang == "objcpp" else lang)
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


def extract(src: bytes, lang: str, line_offset: int = 0, fixed_line: int | None = None,
            via_macro: str = "", base_namespace: str = "") -> list[Fact]:
    """Facts of one source text. ``fixed_line``: every fact gets that line (macro expansions)."""
    return _extract(src, lang, line_offset, fixed_line, via_macro, base_namespace)[0]


def _extract(src: bytes, lang: str, line_offset: int = 0, fixed_line: int | None = None,
             via_macro: str = "", base_namespace: str = "") -> tuple[list[Fact], bool]:
    text = blank_attributes(src, lang)
    tree = _parser(lang).parse(text)
    facts: list[Fact] = []
    funcs: list[tuple[int, int, int]] = []  # (start_byte, end_byte, fact index)
    calls: list[tuple[ts.Node, dict[str, ts.Node], str]] = []
    macro_defs = macros.read_defines(src.decode("utf-8", "replace")) if fixed_line is None else {}

    def line_of(node: ts.Node, end: bool = False) -> int:
        if fixed_line is not None:
            return fixed_line
        return (node.end_point if end else node.start_point)[0] + 1 + line_offset

    text_ns = None
    text_fns: list[tuple[int, int, int, str]] = []
    if fixed_line is None and _broken(tree.root_node):
        spans, text_fns = text_blocks(text)
        text_ns = _namespace_lookup(spans)

    def ns_of(node: ts.Node) -> tuple[str, str]:
        ns, cls = _scope_names(node)
        if text_ns is not None:
            ns = [p for p in text_ns(node.start_byte).split("::") if p]
        if base_namespace:
            ns = [base_namespace] + ns
        return "::".join(ns), "::".join(cls)

    for capname, caps in run_query(lang, tree.root_node):
        node = caps[capname]
        if capname == "definition.function":
            fd = _function_declarator(caps["name"])
            if fd is None:
                continue
            inner = fd.child_by_field_name("declarator")
            if inner is None:
                continue
            namespace, cls = ns_of(node)
            start = line_of(node)
            end = line_of(node, end=True)
            if inner.type == "function_declarator":
                # MACRO(args) (params) { body } -- TORCH_IMPL_FUNC and friends.
                mac = inner.child_by_field_name("declarator")
                margs = inner.child_by_field_name("parameters")
                if mac is None or margs is None:
                    continue
                mname = _text(mac)
                args = _split_args(_text(margs))
                kind = _IMPL_MACROS.get(mname)
                if kind is None or not args:
                    continue
                name = "_".join(args[:2]) if mname.endswith("2") else args[0]
                fact = Fact(kind, name, f"{namespace}::{mname}({', '.join(args)})".lstrip(":"), start, end,
                            namespace, detail=mname, via_macro=via_macro)
            else:
                raw = _text(inner)
                if node.child_by_field_name("type") is None and inner.type == "identifier" and _UPPER.match(raw):
                    params = fd.child_by_field_name("parameters")
                    fact = Fact("macro_block", raw, raw, start, end, namespace,
                                arg=_text(params) if params is not None else "", via_macro=via_macro)
                else:
                    qual = strip_templates(raw)
                    prefix = "::".join(p for p in (namespace, cls) if p)
                    if qual.startswith("::"):
                        qual = qual[2:]
                    elif prefix:
                        qual = f"{prefix}::{qual}"
                    # __global__ may sit before the node's start when it was blanked (cpp grammar)
                    lead = src[max(0, node.start_byte - 200):node.start_byte]
                    cut = max(lead.rfind(b";"), lead.rfind(b"}"), lead.rfind(b"{"))
                    head = lead[cut + 1:] + src[node.start_byte:inner.start_byte]
                    kind = "global" if b"__global__" in head else "function"
                    fact = Fact(kind, last_component(qual), qual, start, end, namespace, via_macro=via_macro)
            funcs.append((node.start_byte, node.end_byte, len(facts)))
            facts.append(fact)
        elif capname == "definition.class":
            namespace, cls = ns_of(node)
            name = strip_templates(_text(caps["name"]))
            qual = "::".join(p for p in (namespace, cls, name) if p)
            facts.append(Fact("class", last_component(name), qual, line_of(node), line_of(node, True),
                              namespace, via_macro=via_macro))
        elif capname in ("reference.call", "reference.launch", "reference.stub_arg", "reference.functor_decl",
                         "definition.lambda"):
            calls.append((node, caps, capname))
        elif capname == "reference.include":
            path = _text(caps["name"]).strip('"<>')
            facts.append(Fact("include", path, path, line_of(node), line_of(node), via_macro=via_macro))

    # Functions tree-sitter lost inside ERROR nodes, found by brace matching instead.
    known = sorted((s, e) for s, e, idx in funcs if facts[idx].kind != "macro_block")
    known_starts = [k[0] for k in known]
    for start, end, name_byte, name in text_fns:
        i = bisect.bisect_right(known_starts, start) - 1
        j = bisect.bisect_left(known_starts, start)
        if (i >= 0 and known[i][1] > start) or (j < len(known) and known[j][0] < end):
            continue
        line = text.count(b"\n", 0, name_byte) + 1 + line_offset
        end_line = text.count(b"\n", 0, end) + 1 + line_offset
        ns = text_ns(start) if text_ns else ""
        funcs.append((start, end, len(facts)))
        if "(" in name:  # TORCH_IMPL_FUNC(x) and friends
            mname, _, rest = name.partition("(")
            args = [a for a in rest.rstrip(")").split(",") if a]
            kind = _IMPL_MACROS[mname]
            fname = "_".join(args[:2]) if mname.endswith("2") else args[0]
            facts.append(Fact(kind, fname, f"{ns}::{mname}({', '.join(args)})".lstrip(":"), line, end_line, ns,
                              detail=mname, via_macro=via_macro))
            continue
        qual = name if name.startswith(ns + "::") or not ns else f"{ns}::{name}"
        facts.append(Fact("function", last_component(name), qual, line, end_line,
                          ns, detail="found by brace matching (tree-sitter ERROR region)", via_macro=via_macro))
    # Calls: the enclosing function is the innermost function range holding the call.
    # A macro-shaped block (NAME(args) {...}) only scopes calls when it is TORCH_LIBRARY*.
    funcs = [f for f in funcs if facts[f[2]].kind != "macro_block" or facts[f[2]].name.startswith("TORCH_LIBRARY")]
    funcs.sort()
    starts = [f[0] for f in funcs]
    seen_launch: set[tuple[int, int]] = set()
    local_classes = {f.name for f in facts if f.kind == "class"}
    for node, caps, capname in calls:
        if capname == "reference.call" and any(
            c.type == "kernel_call_syntax" for c in node.children
        ):
            continue  # reported by the launch pattern
        fnode = caps.get("name")
        scope = -1
        i = bisect.bisect_right(starts, node.start_byte) - 1
        while i >= 0:
            s, e, idx = funcs[i]
            if s <= node.start_byte and node.end_byte <= e:
                scope = idx
                break
            i -= 1
        line = line_of(node)
        if capname == "reference.launch":
            key = (node.start_byte, node.end_byte)
            if key in seen_launch:
                continue
            seen_launch.add(key)
            qual = strip_templates(_text(fnode))
            facts.append(Fact("launch", last_component(qual), qual, line, line, scope=scope,
                              detail=re.sub(r"\s+", " ", _text(caps["config"])), via_macro=via_macro))
            continue
        if capname == "definition.lambda":
            decl = node.child_by_field_name("declarator")
            params = decl.child_by_field_name("parameters") if decl is not None else None
            ptext = _text(params) if params is not None else "()"
            arity = len(_split_args(ptext))
            facts.append(Fact("lambda", f"lambda#{arity}", f"lambda{re.sub(chr(92) + 's+', ' ', ptext)}",
                              line_of(node), line_of(node, True), scope=scope, arg=str(arity), via_macro=via_macro))
            continue
        if capname == "reference.functor_decl":
            if _text(fnode) in local_classes:
                facts.append(Fact("call", _text(fnode), _text(fnode), line_of(node), line_of(node), scope=scope,
                                  detail="functor", via_macro=via_macro))
            continue
        if capname == "reference.stub_arg":
            facts.append(Fact("call", _text(fnode), _text(fnode), line_of(fnode), line_of(fnode), scope=scope,
                              detail="argument", via_macro=via_macro))
            continue
        ftype = fnode.type
        member = ""
        if ftype in ("identifier", "qualified_identifier", "template_function"):
            qual = strip_templates(_text(fnode))
        elif ftype == "compound_literal_expression":
            # sum_functor<scalar_t>{}(iter): calls the functor's operator()
            tnode = fnode.child_by_field_name("type") or (fnode.named_children or [None])[0]
            if tnode is None:
                continue
            qual = strip_templates(_text(tnode)) + "::operator()"
        elif ftype == "field_expression":
            field = fnode.child_by_field_name("field")
            if field is None:
                continue
            qual = strip_templates(_text(field))
            member = "member"
        else:
            continue
        if not qual or "(" in qual.replace("operator()", ""):
            continue
        name = last_component(qual)
        if _UPPER.match(name):
            if name in macro_defs:
                continue  # expanded below
            if _DISPATCH_MACRO.match(name):
                args = _split_args(_text(caps["args"]))
                facts.append(_dispatch_fact(name, args, line, ns_of(node)[0], scope, via_macro))
            continue
        if member and name in ("impl", "impl_UNBOXED") and scope >= 0:
            args = _split_args(_text(caps["args"]))
            if len(args) >= 2 and args[0].startswith('"'):
                facts.append(Fact("torch_impl", args[0].strip('"'), args[0].strip('"'), line, line,
                                  scope=scope, arg=args[1], via_macro=via_macro))
                continue
        facts.append(Fact("call", name, qual, line, line, scope=scope, detail=member, via_macro=via_macro))

    if macro_defs and fixed_line is None:
        facts.extend(_expand_in_functions(src, macro_defs, funcs, starts, lang, line_offset))
    if macro_defs and fixed_line is None:
        base = len(facts)
        for f in _expand_macro_uses(src, tree, lang, macro_defs, line_offset):
            if f.scope >= 0:
                f.scope += base
            facts.append(f)
    return facts, tree.root_node.has_error


def _dispatch_fact(macro: str, args: list[str], line: int, namespace: str, scope: int, via: str) -> Fact:
    stub = args[0] if args else ""
    if macro == "DECLARE_DISPATCH":
        return Fact("declare_dispatch", args[-1] if args else "", args[-1] if args else "", line, line,
                    namespace, scope, arg=args[0] if len(args) > 1 else "", detail=macro, via_macro=via)
    if macro == "DEFINE_DISPATCH":
        return Fact("define_dispatch", stub, stub, line, line, namespace, scope, detail=macro, via_macro=via)
    kernel = args[-1] if len(args) >= 2 else ""
    return Fact("register_dispatch", stub, stub, line, line, namespace, scope, arg=kernel.lstrip("&").strip(),
                detail=macro, via_macro=via)


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
        if node.type in _BODY_NODES:
            return True
        node = node.parent
    return False


def _expand_in_functions(src: bytes, defs: macros.Defines, funcs: list[tuple[int, int, int]],
                         starts: list[int], lang: str, line_offset: int) -> list[Fact]:
    """Calls and launches inside same-file macros used in function bodies (e.g. SMALL_INDEX's
    ``<<<>>>`` in index_select_out_cuda_impl), placed on the line of the use. Uses are found in
    the text: ``SMALL_INDEX(scalar_t, index_t, unsigned int, 1, 1, -2);`` reads as a declaration
    to tree-sitter, not as a call."""
    text = src.decode("utf-8", "replace")
    batch: list[tuple[macros.MacroUse, int, str]] = []
    for use in macros.find_uses(text, defs, anywhere=True):
        scope = -1
        i = bisect.bisect_right(starts, use.offset) - 1
        while i >= 0:
            s, e, idx = funcs[i]
            if s <= use.offset < e:
                scope = idx
                break
            i -= 1
        if scope < 0:
            continue
        body = macros.expand(use, defs).replace("\r", " ").replace("\n", " ")
        if body.strip():
            batch.append((use, scope, body))
    if not batch:
        return []
    # One parse for all uses: each expansion is a one-line function on line i + 1.
    joined = "\n".join(f"void __atenmap_macro_body_{i}__() {{ {body} ;}}" for i, (_, _, body) in enumerate(batch))
    out: list[Fact] = []
    for f in extract(joined.encode(), lang):
        if f.kind not in ("call", "launch") or not 1 <= f.line <= len(batch):
            continue
        use, scope, _ = batch[f.line - 1]
        f.line = f.end_line = use.line + line_offset
        f.scope = scope
        f.via_macro = use.name
        out.append(f)
    return out


def _expand_macro_uses(src: bytes, tree: ts.Tree, lang: str,
                       defs: macros.Defines, line_offset: int) -> list[Fact]:
    """See Note [Macro-made kernels] in macros.py."""
    out: list[Fact] = []
    for use in macros.find_uses(src.decode("utf-8", "replace"), defs):
        if _inside_function(tree, use.offset):
            continue
        expanded = macros.expand(use, defs)
        if not expanded:
            continue
        namespace = _namespace_at(tree, use.offset)
        sub = extract(expanded.encode(), lang, fixed_line=use.line + line_offset, via_macro=use.name,
                      base_namespace=namespace)
        base = len(out)
        for f in sub:
            if f.scope >= 0:
                f.scope += base
            out.append(f)
    return out
