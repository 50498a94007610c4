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
    # calls, member calls and casts in statements define nothing (``data`` in an if's condition may)
    for word in (b"size", b"foo", b"i", b"static_cast", b"x"):
        assert word not in names, word
    assert defscan.name_key("at::native::MulFunctor::operator()") == "operator"
    assert defscan.name_key("~Guard") == "Guard"
    assert defscan.name_key("operator_1_norm") == "operator_1_norm"
