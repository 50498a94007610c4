"""Issue 25's vendor paths on the real 2.6.0 tree: each runtime-chosen vendor path is in the chain
and its runs name the setting (tests/test_vendor_paths.py has the fixture patterns)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.realtree


def _names(chain, key):
    out, todo = set(), list(next(k for k in chain.keys if k.key == key).steps)
    while todo:
        s = todo.pop()
        out.add(s.symbol)
        todo += s.children
    return out


def _when(chain, name):
    return [w.text for r in chain.runs if r.name == name for w in r.when if w.kind == "runtime"]


def test_linalg_drivers_label_cusolver_and_magma(real_index_26):
    ch = real_index_26.chain("linalg_cholesky_ex.L", keys=["CUDA"])
    assert {"magma_spotrf_batched", "cusolverDnSpotrfBatched"} <= _names(ch, "CUDA")
    assert any("linalg library: Magma" in w for w in _when(ch, "magma_spotrf_batched"))
    assert any("linalg library: Cusolver or default" in w for w in _when(ch, "cusolverDnSpotrfBatched"))
    svd = real_index_26.chain("linalg_svd.U", keys=["CUDA"])
    assert any(w.startswith("linalg library: Magma") for w in _when(svd, "magma_sgesdd"))
    assert any(w.startswith("linalg library: not Magma") for w in _when(svd, "cusolverDnSgesvd"))
    # Note [Vendor-named ATen helpers]: MagmaUtils.h's magma_int_cast is ATen's, not a MAGMA call
    assert "magma_int_cast" not in _names(svd, "CUDA")


def test_addmm_cublaslt_epilogue_and_blas_library(real_index_26):
    ch = real_index_26.chain("addmm.out", keys=["CUDA"])
    assert any(w.startswith("addmm cuBLASLt epilogue: yes") for w in _when(ch, "at::cuda::blas::gemm_and_bias"))
    assert any(w.startswith("addmm cuBLASLt epilogue: no") for w in _when(ch, "at::cuda::blas::gemm"))
    assert any(w.startswith("BLAS library: Cublaslt") for w in _when(ch, "cublasLtMatmul"))


def test_rocm_only_else_if_is_no_choice_of_a_cuda_build(real_index_26):
    """CUDABlas.cpp's gemm_internal<float>: the else after ``#ifdef USE_ROCM else if (… == Ck) #endif``
    is the else of the Cublaslt if in a CUDA build."""
    ch = real_index_26.chain("mm", keys=["CUDA"])
    when = _when(ch, "cublasSgemm")
    assert [w for w in when if w.startswith("BLAS library")] == [
        "BLAS library: not Cublaslt (torch.backends.cuda.preferred_blas_library)"]
    assert not any("Ck" in w.text for r in ch.runs for w in r.when)


def test_cudnn_v7_and_v8_paths(real_index_26):
    ch = real_index_26.chain("cudnn_convolution", keys=["CUDA"])
    assert {"cudnnBackendExecute", "cudnnConvolutionForward"} <= _names(ch, "CUDA")
    assert _when(ch, "cudnnConvolutionForward") == ["cuDNN API: v7 (TORCH_CUDNN_V8_API_DISABLED=1 picks v7)"]
    assert any(w.startswith("cuDNN API: v8") for w in _when(ch, "cudnnBackendExecute"))


@pytest.mark.parametrize("op", ["mv", "addmv.out"])
def test_cpu_gemv_fast_path_reaches_fortran_blas(real_index_26, op):
    assert {"sgemv_", "dgemv_"} <= _names(real_index_26.chain(op, keys=["CPU"]), "CPU")


def test_cpu_gemm_stub_registration(real_index_26):
    names = _names(real_index_26.chain("mm", keys=["CPU"]), "CPU")
    assert "at::native::cpublas::(anonymous namespace)::cpublas_gemm_impl" in names
