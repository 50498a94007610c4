"""Issue 25 on the real PyTorch 2.6.0 tree: re-dispatch by arguments (Note [Choosing the overload]),
helpers a native delegates to (Note [Helpers a native delegates to]), the functions a loop's
lambda calls (Note [Lambdas a loop runs]) and the backward of composite ops (Note [Composite ops'
backward]), each at its exact file:line."""
from __future__ import annotations

import pytest

from .test_chain_realtree import has, steps

pytestmark = pytest.mark.realtree


def _under(parent, role, symbol_part):
    return has(list(parent.walk())[1:], role, symbol_part)


def test_arange_out_redispatches_to_start_out(real_index_26):
    s = steps(real_index_26, "arange.out", "CPU")
    call = has(s, "op_call", "aten::arange_out", "native/TensorFactories.cpp", 176)
    assert "overload arange.start_out (the only one taking these 4 arguments)" in call.detail
    has(list(call.walk()), "yaml", "arange.start_out", "native/native_functions.yaml", 805)
    has(list(call.walk()), "stub_call", "arange_stub", "native/RangeFactories.cpp", 248)


@pytest.mark.parametrize("op,key,helper,file,line,stub,call_line", [
    ("angle", "CPU", "unary_op_impl_float", "native/UnaryOps.cpp", 419, "angle_stub", 575),
    ("cumsum.out", "CUDA", "impl_func_cum_ops", "native/ReduceOps.cpp", 475, "cumsum_stub", 496),
    ("argmax.out", "CPU", "argmax_argmin_impl", "native/ReduceOps.cpp", 1727, "argmax_stub", 1766),
    ("max.dim_max", "CUDA", "minmax_out_impl", "native/TensorCompare.cpp", 627, "max_stub", 651),
])
def test_stub_passed_to_a_helper_sits_under_it(real_index_26, op, key, helper, file, line, stub, call_line):
    s = steps(real_index_26, op, key)
    h = has(s, "helper", helper, file, line)
    assert f"{file.split('/')[-1]}:{call_line}" in h.detail and "delegates to it" in h.detail
    _under(h, "stub_call", stub)


@pytest.mark.parametrize("op,helper,line,stub", [
    ("exponential_", "templates::exponential_impl_", 338, "exponential_stub"),
    ("geometric_", "templates::geometric_impl_", None, "geometric_stub"),
    ("normal_", "templates::normal_impl_", None, "normal_stub"),
])
def test_distribution_templates_in_the_header_are_steps(real_index_26, op, helper, line, stub):
    s = steps(real_index_26, op, "CPU")
    h = has(s, "helper", helper, "native/DistributionTemplates.h", line)
    _under(h, "stub_call", stub)


@pytest.mark.parametrize("op,key,loop,fn,file,line", [
    ("angle", "CPU", "cpu_kernel_vec", "angle_impl", "native/cpu/zmath.h", 43),
    # torchgen's UfuncCPUKernel_add.cpp: first in the Bool case's cpu_kernel, then in every cpu_kernel_vec
    ("add.out", "CPU", "cpu_kernel", "ufunc::add", "native/ufunc/add.h", 15),
    ("digamma.out", "CUDA", "gpu_kernel", "calc_digamma", "native/Math.h", 375),
])
def test_lambdas_passed_to_loops_reach_the_function_they_call(real_index_26, op, key, loop, fn, file, line):
    s = steps(real_index_26, op, key)
    step = has(s, "call", fn, file, line)
    assert f"per-element code: called in the lambda passed to {loop}" in step.detail


def test_dense_matmul_backward_is_its_decomposition(real_index_26):
    b = real_index_26.backward("matmul", keys=["CPU", "CUDA"], expand=False)
    assert b.node == "MatmulBackward0" and b.composite_keys == ("CPU", "CUDA")
    assert b.entry_keys == ("NestedTensorCPU", "NestedTensorCUDA")
    assert b.keys == ()  # the entry's formulas do not run for dense tensors
    mm = next(d for d in b.decomposed if d.op == "mm")
    assert (mm.call.file, mm.call.line, mm.node, mm.via) == ("aten/src/ATen/native/LinearAlgebra.cpp", 2033,
                                                             "MmBackward0", "matmul")
    assert {"MmBackward0", "BmmBackward0", "DotBackward0", "MvBackward0"} <= set(b.nodes())
    assert "MatmulBackward0" not in b.nodes()
    lin = real_index_26.backward("linear", keys=["CUDA"], expand=False)
    assert "AddmmBackward0" in lin.nodes() and lin.composite_keys == ("CUDA",)
    mm_own = real_index_26.backward("mm", keys=["CPU"], expand=False)
    assert mm_own.composite_keys == () and mm_own.nodes() == ("MmBackward0",)


def test_magma_path_is_labelled_with_its_condition(real_index_26):
    """Note [Vendor paths under #if]: the MAGMA drivers of cuda/linalg/BatchLinearAlgebra.cpp."""
    s = steps(real_index_26, "linalg_cholesky_ex.L", "CUDA")
    call = has(s, "call", "magmaCholesky", "cuda/linalg/BatchLinearAlgebra.cpp", 462)
    assert call.detail.endswith("[#if AT_MAGMA_ENABLED()]"), call.detail
    lib = has(list(call.walk()), "library", "magma_dpotrf_gpu", "cuda/linalg/BatchLinearAlgebra.cpp", 466)
    assert lib.detail == "MAGMA [#if AT_MAGMA_ENABLED()]"


def test_half_specialization_reaches_cublas_gemm_ex(real_index_26):
    """Note [Explicit specializations per dtype]: gemm_internal<at::Half> calls
    gemm_internal_cublas<at::Half> (its specialization, not the float one), which calls cublasGemmEx."""
    s = steps(real_index_26, "mm.out", "CUDA")
    half = has(s, "call", "gemm_internal_cublas", "ATen/cuda/CUDABlas.cpp", 863)
    has(list(half.walk()), "library", "cublasGemmEx", "ATen/cuda/CUDABlas.cpp", 914)
    bf16 = has(s, "call", "gemm_internal_cublas", "ATen/cuda/CUDABlas.cpp", 959)
    has(list(bf16.walk()), "library", "cublasGemmEx", "ATen/cuda/CUDABlas.cpp", 980)
    has(s, "library", "cublasSgemm", "ATen/cuda/CUDABlas.cpp", 828)
