"""The extractor's layout: one module owns tree-sitter, each fact kind has its query file, the
extractor hash covers every module and query, and the text readers keep their answers on the
inputs that used to make them slow (deep #if nesting, many uses on one line)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from atenmap import freshness
from atenmap.extract import blanking, macros, parse, preproc, registry, treesitter
from atenmap.kinds import FactKind

SRC = Path(parse.__file__).resolve().parent.parent  # src/atenmap


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_treesitter_py_imports_tree_sitter():
    importers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                       if any(m == "tree_sitter" or m.startswith("tree_sitter.") for m in _imports(p)))
    assert importers == ["extract/treesitter.py"]


def test_every_query_file_is_loaded_and_hashed():
    folder = SRC / "extract/queries"
    loaded = {q for lang in ("cpp", "cuda") for calls in (True, False) for q in registry.query_files(lang, calls)}
    readers = {"branches"}  # read at query time by extract/branches.py, not part of the index
    assert {p.stem for p in folder.glob("*.scm")} == loaded | readers
    assert {f"extract/queries/{q}.scm" for q in loaded} <= set(freshness.EXTRACTOR_FILES)


def test_extractor_hash_covers_every_module_extract_file_uses():
    closure = _extract_closure()
    assert {"treesitter", "calls", "definitions", "launches", "macro_uses"} <= closure
    assert {f"extract/{m}.py" for m in closure} <= set(freshness.EXTRACTOR_FILES)


def _extract_closure() -> set[str]:
    """The extract/ modules parse.py and the registry's handlers import, directly or through each other."""
    seen, todo = set(), ["parse"] + [p.handler.split(":")[0] for p in registry.PATTERNS if isinstance(p.handler, str)]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        for m in _imports(SRC / f"extract/{mod}.py"):
            if m.startswith("atenmap.extract."):
                todo.append(m.rsplit(".", 1)[1])
        text = (SRC / f"extract/{mod}.py").read_text()
        for line in text.splitlines():  # from atenmap.extract import a, b
            if line.startswith("from atenmap.extract import "):
                todo += [n.strip() for n in line.split("import", 1)[1].split(",")]
    return seen


def test_each_capture_kind_has_a_handler():
    caps = set()
    for lang in ("cpp", "cuda"):
        for calls in (True, False):
            q = treesitter.extract_query(lang, calls)
            caps |= {q.capture_name(i) for i in range(q.capture_count)}
    mains = {c for c in caps if "." in c}
    definitions, references = parse._patterns()[:2]
    assert mains == {p.capture for p in registry.PATTERNS if p.query is not None}
    assert mains | {"reference.braced_call"} == set(definitions) | set(references)


def test_the_query_files_and_call_kinds_derived_from_the_registry():
    """The registry's order gives the joined queries their order (the order of matches, and so of
    facts), as the tables it replaced listed them."""
    assert registry.query_files("cpp") == ("definitions", "calls", "lambdas", "includes", "misread_calls",
                                           "tensor_operators")
    assert registry.query_files("cuda") == registry.query_files("cpp") + ("launches",)
    assert registry.query_files("cpp", False) == ("definitions", "lambdas", "includes", "impl_calls")
    assert registry.query_files("cuda", False) == registry.query_files("cpp", False)
    assert registry.call_kinds() == {FactKind.CALL, FactKind.LAUNCH, FactKind.DECLARE_DISPATCH,
                                     FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH}


def test_a_pattern_without_a_query_says_what_makes_it():
    for p in registry.PATTERNS:
        assert (p.query is None) == bool(p.made_by), p.capture


def test_namespace_of_a_function_inside_deep_if_nesting():
    n = 3000
    src = (b"namespace at { namespace native {\n" + b"#if A\n" * n
           + b"void deep_kernel() { helper(); }\n" + b"#endif\n" * n + b"}}\n")
    _, facts = parse.extract_file(src, "cpp")
    fn = next(f for f in facts if f.kind == "function" and f.name == "deep_kernel")
    assert (fn.qual, fn.line) == ("at::native::deep_kernel", n + 2)
    call = next(f for f in facts if f.kind == "call" and f.name == "helper")
    assert facts[call.scope] is fn
    assert fn.cond.startswith("A && A && ")


def test_else_mask_with_deep_nesting():
    src = b"#if A\nkeep();\n#else\n" * 200 + b"hidden();\n" + b"#endif\n" * 200 + b"after();\n"
    masked = blanking.mask_preprocessor(src)
    assert len(masked) == len(src) and masked.count(b"\n") == src.count(b"\n")
    assert b"hidden" not in masked and b"keep" in masked and masked.endswith(b"after();\n")


def test_balanced_else_branches_are_kept_for_brace_matching_only():
    """Note [Balanced #else branches] (extract/blanking.py): every branch balanced -> all read; a branch
    that opens or closes a brace the other does not (a function head or a `} else` split by #if) -> the
    first branch only, as before; the deep-nesting bound stays linear."""
    both = b"#if !A()\nnamespace at {\nvoid f() {}\n}\n#else\nnamespace at {\nvoid g() {}\n}\n#endif\n"
    split_head = b"#if A\nvoid f() {\n#else\nvoid f(int) {\n#endif\n}\n"
    split_else = b"void f() {\n  if (a) {\n#ifdef X\n  } else if (b) {\n#else\n  } else {\n#endif\n  }\n}\n"
    assert b"void g()" in blanking.mask_code(both, balanced_branches=True)
    assert b"void g()" not in blanking.mask_code(both)  # the other readers keep the first branch
    for src in (split_head, split_else):
        assert blanking.mask_code(src, balanced_branches=True) == blanking.mask_code(src)
    deep = b"#if A\n{\n#else\n" * 200 + b"{\n" + b"#endif\n}\n" * 200
    assert len(blanking.mask_code(deep, balanced_branches=True)) == len(deep)


CUDNN_SHAPED = b"""#include <ATen/ATen.h>
#if !AT_CUDNN_ENABLED()
namespace at { namespace native {
Tensor _foo(const Tensor& a) {
  TORCH_CHECK(false, "_foo: ATen not compiled with cuDNN support");
}
} // namespace native
} // namespace at
#else
namespace at { namespace native {
namespace {
struct Params {
#ifndef V8
  void set(int64_t mode){
#else
  void set(int64_t mode, bool packed) {
#endif
    this->mode = mode;
  }
  int64_t mode;
};
} // namespace
Tensor _foo(const Tensor& a) {
  return a;
}
} // namespace native
} // namespace at
#endif
"""


def test_namespaces_of_a_broken_file_in_its_else_branch():
    """cudnn/RNN.cpp's shape (a function head split by #ifndef makes tree-sitter give up): the #else
    branch's definitions get their namespace from the brace matching (before: none, so the chain's
    at::native lookup never found the cuDNN _cudnn_rnn, only the stub)."""
    err, facts = parse.extract_file(CUDNN_SHAPED, "cpp")
    got = [(f.line, f.qual, f.cond) for f in facts if f.kind == "function" and f.name == "_foo"]
    assert err and got == [(4, "at::native::_foo", "!AT_CUDNN_ENABLED()"),
                           (23, "at::native::_foo", "!(!AT_CUDNN_ENABLED())")]


def test_macro_uses_on_one_line_and_at_line_start():
    text = "#define K(x) void x##_k() {}\nK(a) K(b)\n  K(c)\nint y = K(d);\n"
    defs = macros.read_defines(text)
    uses = macros.find_uses(text, defs, anywhere=True)
    assert [(u.name, u.args, u.line, u.line_start) for u in uses] == [
        ("K", ("a",), 2, True), ("K", ("b",), 2, False), ("K", ("c",), 3, True), ("K", ("d",), 4, False)]
    assert [(u.args, u.line) for u in macros.find_uses(text, defs)] == [(("a",), 2), (("c",), 3)]


def test_macro_use_offsets_count_bytes():
    text = "// é\n#define K(x) void x##_k() {}\nK(a)\n"
    use = macros.find_uses(text, macros.read_defines(text))[0]
    assert text.encode()[use.offset:use.offset + 4] == b"K(a)"


def test_conditions_beyond_the_depth_bound():
    text = "".join(f"#if C{i}\n" for i in range(40)) + "x;\n" + "#endif\n" * 40
    cond = preproc.read_conditions(text).at(41)
    assert cond.startswith("C0 && C1 && ") and cond.endswith(" && C31 && " + preproc.CUT)


def test_scopes_at_is_the_last_enclosing_function_in_start_order():
    """Scopes.at (which jumps over functions that end too early) answers as a scan back over every
    function starting at or before the span would: the last one, in start order, that holds it;
    overlapping spans (text-recovered functions) and shared starts included."""
    import bisect
    import random

    from atenmap.extract.fact import Fact
    from atenmap.extract.unit import Scopes

    class _Unit:  # the two fields Scopes reads
        def __init__(self, funcs):
            self.funcs = funcs
            self.facts = [Fact("function", f"f{k}", f"f{k}", 1, 1) for k in range(len(funcs))]

    rng = random.Random(7)
    for _ in range(500):
        funcs = []
        for k in range(rng.randint(0, 25)):
            a = rng.randint(0, 200)
            funcs.append((a, a + rng.randint(0, 80), k))
        scopes = Scopes(_Unit(funcs))
        ordered = sorted(funcs)
        for _ in range(30):
            start = rng.randint(0, 290)
            end = start + rng.choice([0, rng.randint(0, 30)])
            i = bisect.bisect_right([f[0] for f in ordered], start)
            want = next((idx for s, e, idx in reversed(ordered[:i]) if s <= start and end <= e), -1)
            assert scopes.at(start, end) == want


def test_word_matches_are_the_word_boundary_regex_matches():
    """objects._word_matches (bytes.find of the first word, then a match there) finds what the
    pattern behind ``\\b`` finds with finditer: words glued to others skipped, matches not overlapping."""
    from atenmap.extract import objects

    text = (b"using A = Foo<int>; xusing B = Bar; _using C = Baz;\nusing D=Qux<T>;using E = F;"
            b"typedef Foo<int> G; my_typedef Bar H; typedef typename X::Y Z;usingusing W = V;")
    for pattern, word in ((objects._USING, b"using"), (objects._TYPEDEF, b"typedef")):
        want = [m.span() for m in re.compile(rb"\b" + pattern.pattern).finditer(text)]
        assert [m.span() for m in objects._word_matches(pattern, text, word)] == want
        assert want  # the sample has some


def test_line_start_patterns_match_as_finditer():
    """Note [Line-start patterns]: the same matches as the pattern's finditer, on indented,
    continued, mid-line and CRLF directives, in text and in bytes."""
    from atenmap.extract.linestart import line_matches

    text = ("#define A(x) x\n  # define B(y) \\\n  #if x\n#define C(z)\nx #define D(q) \\\n#define E(r) 1\n"
            "#if A\n# elif B\n #else\n\t#endif\r\n#defineF(a)\n#  define  Q(a) \\\r\n #if a\r\nint x;#if y\n#if")
    cases = [(macros._DEFINE_FN, "#", text), (preproc._DIRECTIVE, "#", text), (blanking._DEFINE, b"#", text.encode()),
             (macros._DEFINE_FN, re.compile(r"#[ \t]*define[ \t]"), text)]  # a hint may be a pattern too
    for pattern, hint, src in cases:
        expected = [(m.span(), m.groups()) for m in pattern.finditer(src)]
        assert expected and [(m.span(), m.groups()) for m in line_matches(pattern, hint, src)] == expected
    # a literal hint (blanking's '#' lines), searched with find: the same matches
    indent = " \t\r\x0b\x0c"
    expected = [m.span() for m in blanking._HASH_LINE.finditer(text.encode())]
    assert len(expected) > 10 and [m.span() for m in line_matches(blanking._HASH_LINE, b"#", text.encode(), indent)] == expected


def test_every_regex_of_the_extractor_says_why_it_is_not_a_query():
    """Regexes over source text stay only where tree-sitter cannot see (preprocessor text, macro
    bodies, comments, files it cannot fit, unparsed bytes); each says why on its line or the one above."""
    missing = []
    for path in sorted((SRC / "extract").glob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "re.compile(" in line and not line.lstrip().startswith("#") and "``re.compile" not in line:
                said = (line + (lines[i - 1] if i else "")).lower()
                if "not a query" not in said:
                    missing.append(f"{path.name}:{i + 1}")
    assert missing == []
