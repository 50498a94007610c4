"""The definition pre-scan (defscan.py, Note [An exact definition pre-scan]) on the fixture
tree and on the shapes its rules are about; the whole real trees: test_defscan_realtree.py."""
from __future__ import annotations

from atenmap import defscan
from atenmap.kinds import FactKind

from .conftest import FIXTURE_TREE


def test_every_fixture_definition_is_a_candidate(mini_index):
    kinds = defscan.KINDS
    assert FactKind.FUNCTION in kinds and FactKind.REGISTER_DISPATCH in kinds and FactKind.CLASS in kinds
    scanned: dict[str, set[bytes]] = {}
    checked = 0
    for kind in kinds:
        for f in mini_index.store.facts_of_kind(kind):
            if f.file not in scanned:
                scanned[f.file] = defscan.scan_file((FIXTURE_TREE / f.file).read_bytes())
            assert defscan.name_key(f.name).encode() in scanned[f.file], (f.file, f.line, f.kind, f.name)
            checked += 1
    assert checked > 100


SHAPES = b"""
template<> void lapackLu<c10::complex<double>>(int m, int *info) {
}
template <typename T>
inline std::enable_if_t<std::is_floating_point_v<T>, T>
calc_erfinv(T y) {
}
Foo::Foo(int a) : a_(a), b_{a} {}
bool Foo::operator()(int x) const { return x; }
Tensor operator_1_norm(const Tensor& t) { return t; }
Foo::~Foo() = default;
struct C10_API alignas(16) Packed : Base<int> { int x; };
TORCH_META_FUNC2(scatter, src)(const Tensor& self) {}
REGISTER_DISPATCH(add_stub, &add_kernel);
#define MAKE_KERNEL(op) static void op##_kernel(TensorIterator& iter) { }
MAKE_KERNEL(exp)
void body() {
  if (x.size(0) == data(y)) { }
  foo(i);
  return static_cast<int>(i);
}
"""


def test_shapes():
    names = defscan.scan_file(SHAPES)
    for word in (b"lapackLu", b"calc_erfinv", b"Foo", b"operator", b"operator_1_norm", b"Packed",
                 b"scatter_src", b"add_stub", b"exp_kernel", b"body"):
        assert word in names, word
    # calls, member calls and casts in statements define nothing, nor a call in an if's condition
    for word in (b"size", b"foo", b"i", b"static_cast", b"x", b"data"):
        assert word not in names, word
    assert defscan.name_key("at::native::MulFunctor::operator()") == "operator"
    assert defscan.name_key("~Guard") == "Guard"
    assert defscan.name_key("operator_1_norm") == "operator_1_norm"


def test_control_heads_and_dispatch_arguments_define_nothing():
    names = defscan.scan_file(b"""
void f() {
  if (common_dtype(x) == y) { }
  else if constexpr (is_same(a, b)) { }
  for (auto v : values(t)) { }
  while (more(it)) { }
  switch (kind(t)) { }
  AT_DISPATCH_FLOATING_TYPES(iter.common_dtype(), "f_cuda", [&] { gpu_kernel(iter, F()); });
}
// slow; if (n) is large use the other
void g(int n) {
}
while (a(b(c(d(e))))) {
""")
    for word in (b"common_dtype", b"is_same", b"values", b"more", b"kind", b"f_cuda", b"iter"):
        assert word not in names, word
    # a comment is read as a space (``; if (n)`` in it no control head); deeper than three levels: named
    for word in (b"f", b"g", b"a", b"AT_DISPATCH_FLOATING_TYPES"):
        assert word in names, word


def test_a_scope_is_where_a_class_namespace_or_qualifier_writes_it():
    cands = defscan.Candidates()
    texts = {"head.h": b"struct MulFunctor { int operator()(int a) const { return a; } };",
             "out.cpp": b"int MulFunctor<int>::operator()(int a) const { return a; }",
             "ns.cpp": b"namespace at::MulFunctor { int operator()(int a); }",
             "word.cpp": b"// MulFunctor\nstruct Other { int operator()(int a) const { return a; } };",
             "suffix.cpp": b"struct dtype { int operator()(int a) const { return a; } };"}
    for rel, data in texts.items():
        cands.add(rel, data)
    rels = sorted(texts)
    assert cands.qualifying("MulFunctor", rels) == ["head.h", "ns.cpp", "out.cpp"]
    assert cands.qualifying("type", rels) == ["suffix.cpp"]  # Store.by_name_qual's instr finds type:: in dtype::


def test_comments_lambda_bodies_and_template_parameters_define_nothing():
    parts = defscan.Parts()
    names = defscan.scan_file(b"""
// calls commented() here {
/* and here: block_commented(x) { */
void kernel(TensorIteratorBase& iter) {
  gpu_kernel(iter, []GPU_LAMBDA(float a) -> float {
    return a;
  });
  auto s = jiterator_stringify(
      template <typename T> T abs_kernel(T x) {
        return x;
      });
  const char* msg = "quoted(x) {";
#ifdef USE_ROCM
  if (rocm_only(x)) {
#endif
  }
}
template <typename scalar_t, class F, template <typename> class PtrTraits = Default, class SF = int>
inline scalar_t parallel_reduce(const F& f, const SF& sf) {
}
template <class T>
struct Holder : Base<T> {
};
void with_default(int x, std::vector<int> v = {}) {
}
#if !HAS_CUDNN_V8()
void split_head(
#else
void split_head_v7(
#endif
    int a) {
}
Guard::Guard(int n)
    : flag_(std::any_of(v.begin(), v.end(), [](int x) {
        return x;
      })) {
}
""", parts)
    for word in (b"commented", b"block_commented", b"gpu_kernel", b"jiterator_stringify", b"quoted", b"rocm_only"):
        assert word not in names, word
    for word in (b"F", b"SF", b"PtrTraits"):  # template parameters: no class head
        assert word not in parts.classes, word
    # what a definition's own head names: a lambda's or a jiterator function's brace is theirs; a
    # default ``= {}`` and a head split by #if branches are the function's own; a constructor's
    # mem-initializer lambda does not hide the constructor
    for word in (b"kernel", b"GPU_LAMBDA", b"abs_kernel", b"parallel_reduce", b"with_default", b"split_head",
                 b"split_head_v7", b"Guard"):
        assert word in names, word
    assert {b"Holder", b"Base", b"T"} <= parts.classes


def test_a_digit_separator_is_no_character_literal():
    # C++14 ``1'000``: the quotes are a number's, not a literal's, so the code between two of them is read
    names = defscan.scan_file(b"constexpr int64_t kBig = 1'000; int after_separators(int x) { return x * 2'0; }\n"
                              b"char c = L'{'; int after_wide(int y) {\n  return y;\n}\n")
    assert b"after_separators" in names and b"after_wide" in names
