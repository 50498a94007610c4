"""Code reached by name on the real PyTorch 2.6.0 tree, with exact file:line: functor objects passed
by name (each resolved in the file that uses it: Indexing.cu, ScatterGatherKernel.cu and
WeightNorm.cu each have their own ReduceAdd), alias-typed reduction functors, device functions as
template arguments, jiterator kernels, a CUB call handed to CUB_WRAPPER, and libraries that run
cuBLAS inside their own calls (tests/test_functors.py)."""
from __future__ import annotations

import pytest

from .test_chain_realtree import has, steps

pytestmark = pytest.mark.realtree

IDX = "native/cuda/Indexing.cu"


def test_namespace_functor_object_in_launch_macros(real_index_26):
    """index_add_cuda_impl: SMALL_INDEX/LARGE_INDEX launches take `static ReduceAdd reduce_add;`."""
    s = steps(real_index_26, "index_add.out", "CUDA")
    add = has(s, "helper", "(anonymous namespace)::ReduceAdd::operator()", IDX, 365)
    assert f"{IDX}:1077" in add.detail and "passed as the object reduce_add" in add.detail
    assert not [x for x in s if "ReduceAdd" in x.symbol and "WeightNorm" in (x.file or "")]


def test_each_reduction_object_passed_to_the_helper(real_index_26):
    s = steps(real_index_26, "index_reduce.out", "CUDA")
    for cls, line, use in (("ReduceMultiply", 355, 1326), ("ReduceAdd", 365, 1328),
                           ("ReduceMaximum", 384, 1338), ("ReduceMinimum", 374, 1340)):
        step = has(s, "helper", f"{cls}::operator()", IDX, line)
        assert f"{IDX}:{use}" in step.detail


def test_same_class_name_in_another_file_is_that_files(real_index_26):
    s = steps(real_index_26, "scatter_add.out", "CUDA")
    step = has(s, "call", "at::native::ReduceAdd::operator()", "native/cuda/ScatterGatherKernel.cu", 34)
    assert "ScatterGatherKernel.cu:497" in step.detail


def test_alias_typed_reduction_functor(real_index_26):
    """std_var_kernel_impl: `using ops_t = WelfordOps<...>; ops_t ops(...); gpu_reduce_kernel(iter, ops, ...)`."""
    s = steps(real_index_26, "std.correction_out", "CUDA")
    w = has(s, "call", "at::native::WelfordOps", "native/SharedReduceOps.h", 97)
    assert "object ops at aten/src/ATen/native/cuda/ReduceMomentKernel.cu:20" in w.detail


@pytest.mark.parametrize("op,fn,line,use", [
    ("upsample_nearest1d.out", "nearest_neighbor_compute_source_index", 132, 206),
    ("_upsample_nearest_exact1d.out", "nearest_neighbor_exact_compute_source_index", 146, 216),
])
def test_device_function_as_a_template_argument(real_index_26, op, fn, line, use):
    s = steps(real_index_26, op, "CUDA")
    step = has(s, "call", f"at::native::{fn}", "native/cuda/UpSample.cuh", line)
    assert f"UpSampleNearest1d.cu:{use}" in step.detail and "template argument" in step.detail


def test_jiterator_kernel_at_its_code_string(real_index_26):
    s = steps(real_index_26, "lgamma.out", "CUDA")
    jit = has(s, "jit", "lgamma_kernel", "native/cuda/Math.cuh", 411)
    assert "lgamma_kernel_vectorized<N>_kernel" in jit.detail
    assert "named by lgamma_name at aten/src/ATen/native/cuda/UnaryGammaKernels.cu:104" in jit.detail
    assert "UnaryGammaKernels.cu:111" in jit.detail


def test_jiterator_names_of_one_function_and_a_concatenated_string(real_index_26):
    """polygamma_kernel_cuda runs digamma, trigamma or polygamma; polygamma_string = zeta_string + ..."""
    s = steps(real_index_26, "polygamma.out", "CUDA")
    has(s, "jit", "digamma", "native/cuda/Math.cuh", 231)
    has(s, "jit", "trigamma", "native/cuda/Math.cuh", 385)
    has(s, "jit", "polygamma", "native/cuda/Math.cuh", 418)


def test_const_char_jiterator_name(real_index_26):
    s = steps(real_index_26, "special_legendre_polynomial_p.out", "CUDA")
    jit = has(s, "jit", "legendre_polynomial_p_forward", "native/cuda/Math.cuh")
    assert "legendre_polynomial_p.cu:13" in jit.detail


def test_cub_call_handed_to_cub_wrapper(real_index_26):
    s = steps(real_index_26, "segment_reduce", "CUDA")
    lib = has(s, "library", "cub::DeviceSegmentedReduce::Reduce", "native/cuda/SegmentReduce.cu", 495)
    assert lib.detail == "CUB"

