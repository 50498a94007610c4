"""``--platform rocm`` on the real 2.6.0 tree (Note [The ROCm side of #if] in resolve/conditions.py):
native/miopen's bodies are under ``#if AT_ROCM_ENABLED()``; on ROCm their MIOpen calls run, at
lines checked by hand in native/miopen/Conv_miopen.cpp and BatchNorm_miopen.cpp."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.realtree

MIOPEN = "aten/src/ATen/native/miopen/"


def _runs(ix, op, platform):
    return [(r.name, r.file, r.line) for r in ix.chain(op, keys=["CUDA"], platform=platform).runs]


@pytest.mark.parametrize("op, run", [
    ("miopen_convolution", ("miopenConvolutionForward", MIOPEN + "Conv_miopen.cpp", 734)),
    ("miopen_batch_norm", ("miopenBatchNormalizationForwardTraining", MIOPEN + "BatchNorm_miopen.cpp", 119)),
])
def test_rocm_runs_the_miopen_calls(real_index_26, op, run):
    assert run in _runs(real_index_26, op, "rocm")
    assert not any(n.startswith("miopen") for n, _, _ in _runs(real_index_26, op, "cuda"))  # as before


def test_cuda_is_the_default(real_index_26):
    assert real_index_26.chain("mm", keys=["CUDA"]) == real_index_26.chain("mm", keys=["CUDA"], platform="cuda")


CUDABLAS = "aten/src/ATen/cuda/CUDABlas.cpp"


def test_conv2d_on_rocm_runs_miopen_first_and_no_cudnn(real_index_26):
    """Note [What a ROCm build leaves out] (resolve/rocmbuild.py): _select_conv_backend's use_cudnn
    branches are never taken, cuDNN's bodies are not built; MIOpen takes cuDNN's place."""
    rocm = real_index_26.chain("conv2d", keys=["CUDA"], platform="rocm").runs
    first = next(r for r in rocm if r.name == "miopenConvolutionForward")
    assert (first.loc.file, first.loc.line, first.via[-1]) == (MIOPEN + "Conv_miopen.cpp", 734, "aten::miopen_convolution")
    assert all(r.loc.file.startswith(MIOPEN) for r in rocm[:5])  # MIOpen leads
    assert not any("cudnn" in r.name.lower() or "/cudnn/" in r.loc.file for r in rocm)
    cuda = real_index_26.chain("conv2d", keys=["CUDA"]).runs  # unchanged: cuDNN first
    assert cuda[0].loc.file.startswith("aten/src/ATen/native/cudnn/")


@pytest.mark.parametrize("op", ["batch_norm", "lstm.input"])
def test_batch_norm_and_rnn_on_rocm_run_no_cudnn(real_index_26, op):
    rocm = real_index_26.chain(op, keys=["CUDA"], platform="rocm").runs
    assert not any("cudnn" in r.name.lower() or "/cudnn/" in r.loc.file for r in rocm)
    if op == "batch_norm":
        assert (rocm[0].name, rocm[0].loc.file, rocm[0].loc.line) == (
            "miopenBatchNormalizationForwardTraining", MIOPEN + "BatchNorm_miopen.cpp", 119)


def test_mm_on_rocm_shows_hipblas_rocblas_hipblaslt_and_ck(real_index_26):
    """CUDABlas.cpp's USE_ROCM branches and the hipify names (Note [hipify names] in resolve/hipify.py)."""
    mm = {(r.name, r.loc.file, r.loc.line) for r in real_index_26.chain("mm", keys=["CUDA"], platform="rocm").runs}
    assert ("cublasSgemm (hipblasSgemm on ROCm)", CUDABLAS, 828) in mm
    assert ("cublasLtMatmul (hipblasLtMatmul on ROCm)", CUDABLAS, 416) in mm
    assert ("rocblas_gemm_ex", CUDABLAS, 878) in mm  # gemm_internal_cublas<at::Half>'s USE_ROCM branch
    assert ("at::native::gemm_internal_ck", CUDABLAS, 1080) in mm  # BlasBackend::Ck (native/hip/ck_gemm_half.hip)
    addmm = {(r.name, r.loc.file, r.loc.line) for r in real_index_26.chain("addmm", keys=["CUDA"], platform="rocm").runs}
    assert ("cublasLtMatmul (hipblasLtMatmul on ROCm)", CUDABLAS, 1311) in addmm  # gemm_and_bias
    cuda = {r.name for r in real_index_26.chain("mm", keys=["CUDA"]).runs}
    assert "cublasSgemm" in cuda and not any("hipblas" in n or "rocblas" in n or "_ck" in n for n in cuda)


def test_rocprof_gemm_kernel_reaches_the_rocm_blas_calls(real_index_26):
    m = real_index_26.kernel("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0_APM1_ABV0")
    assert (m.library, m.family, m.dtype) == ("Tensile", "gemm", "float")
    calls = {(s.symbol, s.file, s.line) for s in m.library_calls}
    assert ("rocblas_gemm_ex", CUDABLAS, 878) in calls and ("cublasSgemm", CUDABLAS, 828) in calls
    assert m.operators[0] == "aten::mm [CUDA]"
    bn = real_index_26.kernel("MIOpenBatchNormFwdTrainSpatial")
    assert (bn.library, bn.family) == ("MIOpen", "batch norm")
    assert ("miopenBatchNormalizationForwardTraining", MIOPEN + "BatchNorm_miopen.cpp", 119) in {
        (s.symbol, s.file, s.line) for s in bn.library_calls}
