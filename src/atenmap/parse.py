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

from . import macros

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


def blank_attributes(src: bytes, lang: str) -> bytes:
    """Replace attribute macros by spaces (same length, newlines kept). See Note [Attribute macros]."""
    return (_BLANK_CUDA if lang == "cuda" else _BLANK_CPP).sub(_spaces, src)


@lru_cache(maxsize=None)
def _language(lang: str) -> ts.Language:
    if lang == "cuda":
        import tree_sitter_cuda

        return ts.Language(tree_sitter_cuda.language())
    import tree_sitter_cpp

    return ts.Language(tree_sitter_cpp.language())


@lru_cache(maxsize=None)
def _query(lang: str) -> ts.Query:
    text = resources.files("atenmap.queries").joinpath("cpp.scm").read_text()
    if lang == "cuda":
        text += "\n" + resources.files("atenmap.queries").joinpath("cuda.scm").read_text()
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
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur or out:
        out.append("".join(cur).strip())
    return [a for a in out if a]


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
# Extraction


def language_of(path: str) -> str | None:
    """Grammar for a file name; ``.mm`` (Objective-C++) is read with the C++ grammar as a fallback."""
    suffix = path[path.rfind("."):] if "." in path else ""
    if suffix == ".mm":
        return "objcpp"
    return LANGUAGES.get(suffix)


def extract_file(src: bytes, lang: str) -> tuple[bool, list[Fact]]:
    """``(has_error_nodes, facts)`` for one file's bytes."""
    facts, has_error = _extract(src, "cpp" if lang == "objcpp" else lang)
    return has_error, facts


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
    macro_defs: dict[str, macros.MacroDef] = {}

    def line_of(node: ts.Node, end: bool = False) -> int:
        if fixed_line is not None:
            return fixed_line
        return (node.end_point if end else node.start_point)[0] + 1 + line_offset

    def ns_of(node: ts.Node) -> tuple[str, str]:
        ns, cls = _scope_names(node)
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
                    head = src[node.start_byte:inner.start_byte]
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
        elif capname in ("reference.call", "reference.launch"):
            calls.append((node, caps, capname))
        elif capname == "reference.include":
            path = _text(caps["name"]).strip('"<>')
            facts.append(Fact("include", path, path, line_of(node), line_of(node), via_macro=via_macro))
        elif capname == "definition.macro":
            # The body runs to the last continued line: tree-sitter's node stops at a comment.
            body = src[caps["params"].end_byte:macros.define_end(src, node.start_byte)].decode("utf-8", "replace")
            md = macros.MacroDef.from_parts(_text(caps["name"]), _text(caps["params"]), body, line_of(node))
            macro_defs[md.name] = md

    # Calls: the enclosing function is the innermost function range holding the call.
    funcs.sort()
    starts = [f[0] for f in funcs]
    seen_launch: set[tuple[int, int]] = set()
    for node, caps, capname in calls:
        if capname == "reference.call" and any(
            c.type == "kernel_call_syntax" for c in node.children
        ):
            continue  # reported by the launch pattern
        fnode = caps["name"]
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
        ftype = fnode.type
        member = ""
        if ftype in ("identifier", "qualified_identifier", "template_function"):
            qual = strip_templates(_text(fnode))
        elif ftype == "field_expression":
            field = fnode.child_by_field_name("field")
            if field is None:
                continue
            qual = strip_templates(_text(field))
            member = "member"
        else:
            continue
        if not qual or "(" in qual:
            continue
        name = last_component(qual)
        if _UPPER.match(name):
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


def _expand_macro_uses(src: bytes, tree: ts.Tree, lang: str,
                       defs: dict[str, macros.MacroDef], line_offset: int) -> list[Fact]:
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
