"""Which overload a call reaches (Note [Choosing the overload] in resolve/opcalls.py), with the
arguments the extractor keeps (Note [Arguments of operator calls] in extract/parse.py)."""
from __future__ import annotations

import textwrap

import pytest

from atenmap.extract.native_yaml import parse_operators
from atenmap.extract.parse import extract
from atenmap.resolve.opcalls import OperatorTable

# The schemas as 2.6.0's native_functions.yaml writes them.
YAML = textwrap.dedent("""
    - func: arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
    - func: arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
    - func: arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
    - func: arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)
    - func: arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)
    - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    - func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
    - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
    - func: add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)
    - func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
    - func: add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
    - func: empty.names(int[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
    - func: empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
    - func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
    - func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
    - func: sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
    - func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
    - func: mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
    - func: _adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
    - func: exp(Tensor self) -> Tensor
    - func: index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)
      autogen: index_put.out
    - func: index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
    - func: _index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor(a!)
      autogen: _index_put_impl, _index_put_impl.out
""")


@pytest.fixture(scope="module")
def table():
    ops = parse_operators(YAML)
    return OperatorTable([str(op.name) for op in ops], lambda base: [o for o in ops if o.name.name == base])


def _args_of(code: str, callee: str) -> tuple[str, str, bool, str]:
    src = ("namespace at { namespace native {\n" + textwrap.dedent(code) + "\n}}").encode()
    f = next(f for f in extract(src, "cpp") if f.kind == "call" and f.name == callee)
    return f.name, f.qual, f.detail == "member", f.arg


def pick(table, code: str, callee: str):
    name, qual, member, arg = _args_of(code, callee)
    call = table.classify(name, qual, member)
    return table.candidates(call, ("self:Tensor, " + arg if arg else "self:Tensor") if member else arg)


def test_arange_out_reaches_start_out_by_arity(table):
    """2.6.0 TensorFactories.cpp:176: arange.out's native is at::arange_out(result, 0, end, 1)."""
    code = """
        Tensor& arange_out(const Scalar& end, Tensor& result) {
          return at::arange_out(result, /*start=*/0, end, /*step=*/1);
        }"""
    assert _args_of(code, "arange_out")[3] == "result:Tensor, 0, end:Scalar, 1"
    found, certain = pick(table, code, "arange_out")
    assert certain and [n for n, _ in found] == ["arange.start_out"], found


@pytest.mark.parametrize("code,callee,want", [
    ("Tensor f(const Tensor& a, const Tensor& b) { return at::add(a, b); }", "add", "add.Tensor"),
    ("Tensor f(const Tensor& a, const Scalar& s) { return at::add(a, s); }", "add", "add.Scalar"),
    ("Tensor f(const Tensor& a) { return at::add(a, 2, 3); }", "add", "add.Scalar"),
    # outputs first for _out, last for _outf: the out tensor is never taken for a Scalar
    ("Tensor& f(const Tensor& a, const Scalar& s, Tensor& out) { return at::add_out(out, a, s); }", "add_out",
     "add.Scalar_out"),
    ("Tensor& f(const Tensor& a, const Tensor& b, Tensor& out) { return at::add_outf(a, b, 1, out); }", "add_outf",
     "add.out"),
    # a member call: self is the first argument
    ("void f(Tensor& self, const Tensor& o) { self.add_(o); }", "add_", "add_.Tensor"),
    ("void f(Tensor& self) { self.add_(1.5); }", "add_", "add_.Scalar"),
    # named-tensor overloads need a Dimname; TensorOptions stands for the dtype group (TensorFactories.cpp)
    ("Tensor f(const TensorOptions& options) { return at::empty({0}, options); }", "empty", "empty.memory_format"),
    ("Tensor f(const Tensor& a) { DimVector dims; return a.sum(dims, true); }", "sum", "sum.dim_IntList"),
    # Dropout.cpp: `alpha * a` before `noise.mul_(a)` is no declaration of a; `double a` is
    ("void f(Tensor noise, double p) { constexpr double alpha = 1.7; double a = 1. / p;\n"
     "  auto b = noise.add(-1).mul_(alpha * a); noise.mul_(a); }", "mul_", None),
])
def test_types_and_out_position_decide(table, code, callee, want):
    if want is None:  # the last call of that name
        src = ("namespace at { namespace native {\n" + textwrap.dedent(code) + "\n}}").encode()
        f = [f for f in extract(src, "cpp") if f.kind == "call" and f.name == callee][-1]
        assert f.arg == "a:double"
        found, certain = table.candidates(table.classify(f.name, f.qual, True), "self:Tensor, " + f.arg)
        assert certain and [n for n, _ in found] == ["mul_.Scalar"], found
        return
    found, certain = pick(table, code, callee)
    assert certain and [n for n, _ in found] == [want], found


def test_undecided_calls_show_each_candidate_with_why(table):
    """x's type is not written in the function: add.Tensor and add.Scalar both take (a, x)."""
    found, certain = pick(table, "Tensor f(const Tensor& a) { auto x = g(); return at::add(a, x); }", "add")
    assert not certain and [n for n, _ in found] == ["add.Tensor", "add.Scalar"]
    assert all("the call does not tell them apart" in why for _, why in found)


def test_unqualified_calls_of_private_operators_only(table):
    # Note [Unqualified calls in at::native]: `return _adaptive_avg_pool2d_symint(input, output_size);`
    name, qual, member, _ = _args_of("Tensor f(const Tensor& input) { return _adaptive_avg_pool2d_symint(input, s); }",
                                     "_adaptive_avg_pool2d_symint")
    assert table.classify(name, qual, member) is None  # not a qualified operator call
    assert table.unqualified(name).base == "_adaptive_avg_pool2d"
    assert table.unqualified("exp") is None  # a kernel lambda's exp(x) is the math library's
    assert table.unqualified("__shfl_down") is None


def test_an_out_overload_torchgen_makes_reaches_its_functional_overload(table):
    """Note [An out= overload torchgen makes]: ``at::index_put_out`` names ``index_put.out``, which only
    index_put_'s ``autogen:`` makes; its kernel calls ``index_put``. ``_index_put_impl.out``'s functional
    overload is autogenerated too: nothing. A base with an out= overload in the yaml keeps its reading."""
    from atenmap.resolve.opcalls import OpCall

    found, certain = table.candidates(OpCall("index_put", "out"))
    assert [n for n, _why in found] == ["index_put"] and not certain
    assert "index_put.out is torchgen's (autogen of index_put_)" in found[0][1]
    assert table.candidates(OpCall("_index_put_impl", "out")) == ([], False)
    assert [n for n, _why in table.candidates(OpCall("add", "out"))[0]] == ["add.out"]
