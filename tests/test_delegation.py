"""Helpers a native delegates to (Note [Helpers a native delegates to]), the functions a loop's
lambda calls (Note [Lambdas a loop runs]) and re-dispatch by arguments (Note [Choosing the
overload]), on the fixture tree's imitations of UnaryOps.cpp, Distributions.cpp, TensorFactories.cpp,
cpu/UnaryOpsKernel.cpp and torchgen's UfuncCPUKernel_add.cpp."""
from __future__ import annotations


def _steps(ix, op, key):
    ch = ix.chain(op, keys=[key])
    return list(ch.keys[0].walk())


def _one(steps, role, symbol_end):
    found = [s for s in steps if s.role == role and s.symbol.endswith(symbol_end)]
    assert len(found) == 1, [(s.role, s.symbol) for s in steps]
    return found[0]


def _under(parent, role, symbol_end):
    return [c for c in parent.children if c.role == role and c.symbol.endswith(symbol_end)]


def test_stub_passed_to_a_helper_sits_under_the_helper(mini_index):
    s = _steps(mini_index, "angle", "CPU")
    helper = _one(s, "helper", "unary_op_impl_float")
    assert (helper.file, helper.line) == ("aten/src/ATen/native/DelegatedOps.cpp", 14)
    assert "delegates to it" in helper.detail and "DelegatedOps.cpp:24" in helper.detail
    stub = _under(helper, "stub_call", "angle_stub")
    assert stub and "passed as an argument" in stub[0].detail


def test_template_helper_in_a_header_holds_its_functor(mini_index):
    s = _steps(mini_index, "exponential_", "CPU")
    helper = _one(s, "helper", "templates::exponential_impl_")
    assert (helper.file, helper.line) == ("aten/src/ATen/native/DelegateHelpers.h", 16)
    functor = _under(helper, "helper", "ExponentialStub::operator()")
    assert functor and any(x.role == "stub_call" and x.symbol == "exponential_stub" for x in functor[0].walk())


def test_lambda_passed_to_cpu_kernel_reaches_the_function_it_calls(mini_index):
    s = _steps(mini_index, "angle", "CPU")
    loop = _one(s, "call", "cpu_kernel_vec")
    inner = _under(loop, "call", "angle_impl")
    assert inner and (inner[0].file, inner[0].line) == ("aten/src/ATen/native/cpu/zmath.h", 7)
    assert "per-element code: called in the lambda passed to cpu_kernel_vec" in inner[0].detail


def test_generated_ufunc_kernel_reaches_the_ufunc_inner_loop(mini_index_gen):
    """add.out on CPU: torchgen's UfuncCPUKernel_add.cpp passes lambdas calling ufunc::add to cpu_kernel_vec."""
    s = _steps(mini_index_gen, "add.out", "CPU")
    loop = _one(s, "call", "cpu_kernel_vec")
    inner = _under(loop, "call", "ufunc::add")
    assert inner and (inner[0].file, inner[0].line) == ("aten/src/ATen/native/ufunc/add.h", 6)


def test_redispatch_picks_the_overload_by_arguments(mini_index):
    """arange.out's native calls at::arange_out(result, 0, end, 1): arange.start_out, not itself."""
    s = _steps(mini_index, "arange.out", "CPU")
    call = _one(s, "op_call", "aten::arange_out")
    assert "overload arange.start_out (the only one taking these 4 arguments)" in call.detail
    assert [c.symbol for c in call.children] == ["arange.start_out"]
    assert any(x.role == "stub_call" and x.symbol == "arange_stub" for x in call.walk())


def test_vendor_path_under_if_is_labelled(mini_index):
    """Note [Vendor paths under #if]: cpu/DistributionKernels.cpp's MKL path, as in the fixture."""
    s = _steps(mini_index, "exponential_", "CPU")
    lib = _one(s, "library", "vdRngExponential")
    assert (lib.file, lib.line) == ("aten/src/ATen/native/cpu/DelegatedKernels.cpp", 23)
    assert lib.detail.startswith("MKL") and lib.detail.endswith("[#if AT_MKL_ENABLED()]"), lib.detail
