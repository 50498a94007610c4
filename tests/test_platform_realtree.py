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


def test_mm_on_rocm_ranks_gemm_internals_last_else_after_the_default_hipblaslt(real_index_26):
    """Note [An else-if chain's earlier tests] (extract/enclosing.py): gemm_internal<float>'s last else
    (CUDABlas.cpp:1035, after ``#ifdef USE_ROCM else if (… == Ck)`` :1031 and ``if (… == Cublaslt)``
    :1028) runs for neither value on ROCm, whose default is Cublaslt: the hipBLAS call comes after
    every hipBLASLt run; on CUDA (default Cublas) its label and place are as before."""
    rocm = real_index_26.chain("mm", keys=["CUDA"], platform="rocm").runs
    sgemm = next(i for i, r in enumerate(rocm) if (r.name, r.loc.line) == ("cublasSgemm (hipblasSgemm on ROCm)", 828))
    runtime = [w.text for w in rocm[sgemm].when if w.kind == "runtime" and w.text.startswith("BLAS")]
    assert runtime == ["BLAS library: not Cublaslt and not Ck [#if defined(USE_ROCM)] "
                       "(torch.backends.cuda.preferred_blas_library)"]
    lt = max(i for i, r in enumerate(rocm) if r.name.startswith("cublasLt"))
    assert lt < sgemm
    ck = next(r for r in rocm if (r.name, r.loc.line) == ("at::native::gemm_internal_ck", 1032))
    assert [w.text for w in ck.when if w.kind == "runtime" and w.text.startswith("BLAS")] == [
        "BLAS library: Ck (torch.backends.cuda.preferred_blas_library)"]
    cuda = real_index_26.chain("mm", keys=["CUDA"]).runs
    sgemm = next(r for r in cuda if (r.name, r.loc.line) == ("cublasSgemm", 828))
    assert [w.text for w in sgemm.when if w.kind == "runtime" and w.text.startswith("BLAS")] == [
        "BLAS library: not Cublaslt (torch.backends.cuda.preferred_blas_library)"]


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
    # the float and double ones, a qualified most vexing parse (Note [Calls tree-sitter misreads] in extract/calls.py)
    assert {("at::native::gemm_internal_ck", CUDABLAS, 1032), ("at::native::gemm_internal_ck", CUDABLAS, 1016)} <= mm
    ck = [r.loc.line for r in real_index_26.chain("mm", keys=["CUDA"], platform="rocm").runs
          if r.name == "at::native::gemm_internal_ck"]
    assert ck[0] == 1032  # gemm_internal<float>'s, first
    addmm = {(r.name, r.loc.file, r.loc.line) for r in real_index_26.chain("addmm", keys=["CUDA"], platform="rocm").runs}
    assert ("cublasLtMatmul (hipblasLtMatmul on ROCm)", CUDABLAS, 1311) in addmm  # gemm_and_bias
    cuda = {r.name for r in real_index_26.chain("mm", keys=["CUDA"]).runs}
    assert "cublasSgemm" in cuda and not any("hipblas" in n or "rocblas" in n or "_ck" in n for n in cuda)


def test_cub_on_rocm_is_hipcub(real_index_26):
    """Note [CUB on ROCm] in resolve/hipify.py: cub.cuh:585 calls NO_ROCM(at_cuda_detail)::cub::DeviceSelect::Unique,
    ::cub:: on ROCm, which hipify makes hipcub::; ATen's own wrapper (Embedding.cu:363) keeps its name."""
    rocm = _runs(real_index_26, "embedding_renorm_", "rocm")
    assert ("at_cuda_detail::cub::DeviceSelect::Unique (hipcub::DeviceSelect::Unique on ROCm)",
            "aten/src/ATen/cuda/cub.cuh", 585) in rocm
    assert ("cuda::cub::unique", "aten/src/ATen/native/cuda/Embedding.cu", 363) in rocm
    cuda = _runs(real_index_26, "embedding_renorm_", "cuda")
    assert ("at_cuda_detail::cub::DeviceSelect::Unique", "aten/src/ATen/cuda/cub.cuh", 585) in cuda


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


@pytest.mark.parametrize("op", ["lstm.input", "lstm.data", "gru.input"])
def test_rnn_on_rocm_reaches_the_miopen_rnn_calls(real_index_26, op):
    """RNN.cpp's lstm calls lstm_miopen_stub; RNN_miopen.cpp's lstm_miopen hands its work to
    _miopen_impl, which calls the operator at::miopen_rnn (Note [A stub kernel that calls an
    operator] in resolve/chain.py). Lines checked by hand in RNN_miopen.cpp (2.6.0)."""
    rocm = real_index_26.chain(op, keys=["CUDA"], platform="rocm").runs
    assert [(r.name, r.loc.file, r.loc.line, r.via[-1]) for r in rocm[:2]] == [
        ("miopenRNNForwardTraining", MIOPEN + "RNN_miopen.cpp", 527, "aten::miopen_rnn"),
        ("miopenRNNForwardInference", MIOPEN + "RNN_miopen.cpp", 538, "aten::miopen_rnn")]
    assert all(r.role == "library" for r in rocm[:2])
    cuda = real_index_26.chain(op, keys=["CUDA"]).runs  # unchanged: no MIOpen run under the default platform
    assert not any(r.name.startswith("miopen") for r in cuda)


ATTENTION = "aten/src/ATen/native/transformers/cuda/attention.cu"
FLASH_HIP = "aten/src/ATen/native/transformers/hip/flash_attn/flash_api.hip"


@pytest.mark.parametrize("op, runs", [
    # attention.cu's #ifdef USE_ROCM branch: `using aotriton::v2::flash::attn_fwd;` then attn_fwd(...)
    ("_efficient_attention_forward", {("aotriton::v2::flash::attn_fwd", ATTENTION, 1199),
                                      ("aotriton::v2::flash::attn_fwd_compact_varlen", ATTENTION, 1178)}),
    ("_scaled_dot_product_efficient_attention", {("aotriton::v2::flash::attn_fwd", ATTENTION, 1199)}),
    # pytorch_flash::mha_fwd / mha_varlen_fwd: on ROCm defined in flash_api.hip (read as text)
    ("_flash_attention_forward", {("aotriton::v2::flash::attn_fwd", FLASH_HIP, 224),
                                  ("aotriton::v2::flash::attn_fwd_compact_varlen", FLASH_HIP, 381)}),
    ("_scaled_dot_product_flash_attention", {("aotriton::v2::flash::attn_fwd", FLASH_HIP, 224)}),
])
def test_attention_on_rocm_runs_aotriton(real_index_26, op, runs):
    """Lines checked by hand in 2.6.0's attention.cu and hip/flash_attn/flash_api.hip."""
    rocm = real_index_26.chain(op, keys=["CUDA"], platform="rocm").runs
    got = {(r.name, r.loc.file, r.loc.line) for r in rocm}
    assert runs <= got
    assert all(r.role == "library" and r.name.startswith("aotriton::v2::flash::attn_fwd") for r in rocm)
    assert not any("/flash_attn/" in r.loc.file and r.loc.file.startswith("aten/src/ATen/native/transformers/cuda/")
                   or "/mem_eff_attention/" in r.loc.file for r in rocm)  # not built on ROCm
    cuda = real_index_26.chain(op, keys=["CUDA"]).runs  # unchanged: the CUDA kernels, no AOTriton
    assert cuda and not any("aotriton" in r.name for r in cuda)


def test_rocprof_gemm_kernel_on_rocm_lists_rocm_calls_first(real_index_26):
    """Note [ROCm calls first] (resolve/kernelplatform.py): on rocm the calls spelled as a ROCm
    library's own come before the hipified cuBLAS ones; the cuda answer keeps the index's order."""
    from atenmap.resolve.kernelplatform import for_platform
    from atenmap.resolve.libraries import ROCM_FAMILIES, library_of_call

    m = real_index_26.kernel("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0_APM1_ABV0")
    rocm = for_platform(real_index_26.store, m, "rocm").library_calls
    native = [" (" not in s.symbol and library_of_call(s.symbol).family in ROCM_FAMILIES for s in rocm]
    assert native[0] and native == sorted(native, reverse=True)  # all the ROCm-named ones, then the rest
    assert (rocm[0].symbol, rocm[0].file, rocm[0].line) == ("rocblas_gemm_strided_batched_ex", CUDABLAS, 539)
    assert ("cublasSgemm (hipblasSgemm on ROCm)", CUDABLAS, 828) in {(s.symbol, s.file, s.line) for s in rocm}
    assert for_platform(real_index_26.store, m, "cuda") is m


CUDNN = "aten/src/ATen/native/cudnn/"


def _natives(ix, op, platform, key="CUDA"):
    return [(s.loc.file, s.loc.line) for s in ix.chain(op, keys=[key], platform=platform).keys[0].walk()
            if s.role == "native"]


@pytest.mark.parametrize("op, stub, real, run", [
    # (operator, the #if !AT_CUDNN_ENABLED() stub, the cuDNN definition, its cuDNN call); lines checked by hand (2.6.0)
    ("_cudnn_rnn", ("RNN.cpp", 51), ("RNN.cpp", 1384), ("cudnnRNNForwardTraining", "RNN.cpp", 1561)),
    ("cudnn_batch_norm", ("BatchNorm.cpp", 19), ("BatchNorm.cpp", 123),
     ("cudnnBatchNormalizationForwardTrainingEx", "BatchNorm.cpp", 213)),
    ("cudnn_grid_sampler", ("GridSampler.cpp", 23), ("GridSampler.cpp", 84),
     ("cudnnSpatialTfSamplerForward", "GridSampler.cpp", 115)),
    ("cudnn_affine_grid_generator", ("AffineGridGenerator.cpp", 22), ("AffineGridGenerator.cpp", 76),
     ("cudnnSpatialTfGridGeneratorForward", "AffineGridGenerator.cpp", 94)),
    ("cudnn_convolution", ("ConvPlaceholders.cpp", 27), ("ConvShared.cpp", 240), None),
])
def test_cuda_picks_the_cudnn_definition_and_rocm_the_stub(real_index_26, op, stub, real, run):
    """Note [Build-configuration macros] (resolve/conditions.py): a CUDA build has cuDNN, so of the
    definitions on both sides of #if AT_CUDNN_ENABLED() the chain picks the cuDNN one only (before: both,
    "variants under #if"; _cudnn_rnn: only the stub, its real one had lost its namespace, Note [Balanced
    #else branches] in extract/blanking.py); a ROCm build has no cuDNN: the stub."""
    assert _natives(real_index_26, op, "cuda") == [(CUDNN + real[0], real[1])]
    assert _natives(real_index_26, op, "rocm") == [(CUDNN + stub[0], stub[1])]
    runs = real_index_26.chain(op, keys=["CUDA"]).runs
    assert runs and not any("!AT_CUDNN_ENABLED()" in w.text for r in runs for w in r.when)  # nothing from the stub
    if run is not None:
        assert (run[0], CUDNN + run[1], run[2]) in {(r.name, r.loc.file, r.loc.line) for r in runs}
        assert not real_index_26.chain(op, keys=["CUDA"], platform="rocm").runs


@pytest.mark.parametrize("op", ["lstm.input", "gru.input", "rnn_tanh.input"])
def test_rnn_on_cuda_reaches_the_cudnn_rnn_calls(real_index_26, op):
    """RNN.cpp's lstm calls lstm_cudnn_stub; cudnn/RNN.cpp's lstm_cudnn (gru_cudnn, rnn_tanh_cudnn: made by
    the ONE_HIDDEN_RNN macro, Note [Macro uses in broken files] in extract/macro_uses.py) reaches only
    cuDNN's descriptor and size calls itself and hands the work to the operator at::_cudnn_rnn (Note [A
    stub kernel that calls an operator] in resolve/chain.py). Lines checked by hand in cudnn/RNN.cpp."""
    chain = real_index_26.chain(op, keys=["CUDA"])
    runs = [(r.name, r.loc.file, r.loc.line, r.via[-1] if r.via else "") for r in chain.runs]
    # first: the dropout seed's random_ (get_dropout_state, cudnn/RNN.cpp:2367, ``.random_(gen).item<int64_t>()``)
    # is a number for the host, ranked after (Note [An operator called for a host scalar] in resolve/runs.py)
    assert runs[0] == ("cudnnRNNForwardTraining", CUDNN + "RNN.cpp", 1561, "aten::_cudnn_rnn")
    assert ("cudnnRNNForwardInference", CUDNN + "RNN.cpp", 1619, "aten::_cudnn_rnn") in runs[:5]
    seed = [i for i, r in enumerate(runs) if r[3] == "aten::random_"]
    assert seed and seed[0] > 3  # still in the answer
    assert not any(n == "index_elementwise_kernel" for n, *_ in runs)  # Device::index() is no aten::index
    registered = {(s.loc.file, s.loc.line) for s in chain.keys[0].walk() if s.role == "register"}
    line = {"lstm.input": 2745, "gru.input": 2685, "rnn_tanh.input": 2686}[op]
    assert (CUDNN + "RNN.cpp", line) in registered


@pytest.mark.parametrize("op", ["_scaled_dot_product_flash_attention", "scaled_dot_product_attention"])
def test_sdpa_on_rocm_leads_with_the_dense_aotriton_call(real_index_26, op):
    """SDPA calls at::_flash_attention_forward(q, k, v, std::nullopt, std::nullopt, ...) over 14 lines,
    into a definition of 15 parameters over 18 (Note [Arguments one per line] in resolve/runs.py): the
    bound std::nullopt makes `if (cumulative_sequence_length_q.has_value())` false, so the varlen call
    (flash_api.hip:381) is dead for this caller and attn_fwd (flash_api.hip:224) runs first."""
    runs = real_index_26.chain(op, keys=["CUDA"], platform="rocm").runs
    assert (runs[0].name, runs[0].loc.file, runs[0].loc.line) == ("aotriton::v2::flash::attn_fwd", FLASH_HIP, 224)
    assert not any(r.name.endswith("_varlen") for r in runs)
    direct = real_index_26.chain("_flash_attention_forward", keys=["CUDA"], platform="rocm").runs
    assert {r.name for r in direct} == {"aotriton::v2::flash::attn_fwd", "aotriton::v2::flash::attn_fwd_compact_varlen"}
