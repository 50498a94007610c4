"""Issue 10's patterns on the real PyTorch 2.6.0 tree, with exact file:line: kernels chosen by
template arguments, every registration form, the lazy CUDA linalg pair, library layers down to the
vendor call, and the reverse lookup from inside a library wrapper."""
from __future__ import annotations

import pytest

from .conftest import cli_run
from .test_chain_realtree import has, steps

pytestmark = pytest.mark.realtree


def test_template_argument_chooses_the_stub(real_index_26):
    """normal_ -> templates::normal_impl_<NormalStub, Generator> -> NormalStub::operator() -> normal_stub."""
    s = steps(real_index_26, "normal_", "CUDA")
    functor = has(s, "helper", "NormalStub::operator()", "native/Distributions.cpp", 262)
    assert "template argument" in functor.detail
    has(s, "stub_call", "normal_stub", "native/Distributions.cpp", 263)
    has(s, "register", "REGISTER_DISPATCH(normal_stub, normal_kernel)", "native/cuda/DistributionNormal.cu", 13)


def test_lazy_linalg_loader_and_real_registration(real_index_26):
    s = steps(real_index_26, "linalg_eig.out", "CUDA")
    lazy = has(s, "register", "lazy_linalg_eig_kernel", "native/cuda/LinearAlgebraStubs.cpp", 150)
    assert "[#if defined(BUILD_LAZY_CUDA_LINALG)]" in lazy.detail
    has(s, "register", "REGISTER_CUDA_DISPATCH(linalg_eig_stub, linalg_eig_kernel)",
        "native/cuda/linalg/BatchLinearAlgebra.cpp", 2096)
    has(s, "library", "magma_sgeev", "native/cuda/linalg/BatchLinearAlgebra.cpp", 767)


def test_no_cpu_kernel_is_said_so(real_index_26):
    s = steps(real_index_26, "convolution_backward", "CPU")
    reg = has(s, "register", "REGISTER_NO_CPU_DISPATCH(cudnn_convolution_backward_stub", "native/Convolution.cpp", 632)
    assert "no cpu kernel" in reg.detail and not reg.children


def test_library_wrappers_are_followed_to_the_vendor_call(real_index_26):
    s = steps(real_index_26, "mm.out", "CUDA")
    has(s, "library", "at::cuda::blas::gemm_and_bias", "native/cuda/Blas.cpp")
    lt = has(s, "library", "cublasLtMatmul", "cuda/CUDABlas.cpp", 1311)
    assert lt.detail == "cuBLASLt"
    spec = has(s, "call", "at::cuda::blas::gemm [specialization<", "cuda/CUDABlas.cpp")
    assert "ATen's wrapper of cuBLAS" in spec.detail


def test_where_inside_a_library_wrapper_lists_mm(capsys, real_index_26, shared_cache, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    code, out, _ = cli_run(capsys, "where", "aten/src/ATen/cuda/CUDABlas.cpp:828", "-s", real_index_26.source.root,
                           "--limit", "100")
    assert code == 0 and "gemm_internal_cublas" in out and "aten::mm.out [CUDA]" in out


def test_reduction_functor_in_an_argument_list(real_index_26):
    s = steps(real_index_26, "argmax.out", "CUDA")
    has(s, "call", "ArgMaxOps", "native/SharedReduceOps.h")
    has(s, "launch", "reduce_kernel", "native/cuda/Reduce.cuh", 890)
