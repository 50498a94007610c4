"""ROCm's names (issue 36): the cuDNN predicates a ROCm build never takes (resolve/rocmbuild.py),
hipify's renames of CUDA library calls (resolve/hipify.py), and rocprof's kernel names in `atenmap
kernel` (resolve/libraries.py's ROCm records; Note [Dtypes in Tensile names] in kernelname/encoding.py)."""
from __future__ import annotations

import pytest

from atenmap.api import Index
from atenmap.resolve import hipify, rocmbuild
from atenmap.resolve.kernelname import parse_kernel_name
from atenmap.resolve.kernelname.encoding import dtype_of, family_of

from .conftest import cli_run


@pytest.mark.parametrize("cond, never", [
    ("if (params.use_cudnn(input, weight))", True),  # Convolution.cpp's ConvParams
    ("if (params.use_cudnn_depthwise(input, weight))", True),
    ("if (at::cudnn_is_acceptable(_input))", True),  # RNN.cpp
    ("if (a && detail::getCUDAHooks().compiledWithCuDNN() && b)", True),  # _select_batch_norm_backend
    ("if ((use_cudnn(x) || cudnn_is_acceptable(y)) && z)", True),
    ("if (params.use_miopen(input, weight, bias_sizes_opt.has_value()))", False),
    ("if (!detail::getCUDAHooks().compiledWithCuDNN())", False),  # negated: taken
    ("if (a || use_cudnn(x))", False),
    ("if (cudnn_enabled && x)", False),  # torch.backends.cudnn.enabled: a setting, gates MIOpen too
    ("if (detail::getCUDAHooks().versionCuDNN() >= 5110L)", False),  # a comparison, not the call alone
    ("if (at::native::cudnnv8_enabled_check_debug())", False),  # v8/v7, inside cuDNN code
])
def test_cudnn_predicates_a_rocm_build_never_takes(cond, never):
    assert rocmbuild.never_taken(cond) is never


def test_what_a_rocm_build_leaves_out():
    assert rocmbuild.leaves_out("AT_CUDNN_ENABLED()") and not rocmbuild.leaves_out("AT_ROCM_ENABLED()")
    assert not rocmbuild.built("aten/src/ATen/cudnn/Handle.cpp")
    assert rocmbuild.built("aten/src/ATen/native/cudnn/ConvPlaceholders.cpp")  # hipified, built, placeholders
    assert rocmbuild.counterpart("Cudnn") == "Miopen" and rocmbuild.counterpart("CudnnTranspose") == "MiopenTranspose"
    assert rocmbuild.counterpart("CudaDepthwise2d") == "CudaDepthwise2d"


@pytest.mark.parametrize("name, rocm", [
    ("cublasSgemm", "hipblasSgemm"), ("cublasLtMatmul", "hipblasLtMatmul"), ("::cublasLtMatmulDescSetAttribute",
                                                                            "hipblasLtMatmulDescSetAttribute"),
    ("cudaMemcpyAsync", "hipMemcpyAsync"), ("cublasSetStream", "hipblasSetStream"),
    ("cudnnConvolutionForward", None),  # MIOpen is not a rename of cuDNN
    ("at::cuda::blas::gemm", None), ("CUDACachingAllocator::memcpyAsync", None), ("rocblas_gemm_ex", None),
    # Note [CUB on ROCm]: NO_ROCM(at_cuda_detail)::cub::X is ::cub::X on ROCm, which hipify makes hipcub::X
    ("at_cuda_detail::cub::DeviceSelect::Unique", "hipcub::DeviceSelect::Unique"),
    ("::cub::DeviceRadixSort::SortPairs", "hipcub::DeviceRadixSort::SortPairs"), ("cub::DeviceScan::InclusiveSum",
                                                                                 "hipcub::DeviceScan::InclusiveSum"),
    ("cuda::cub::unique", None), ("at::cuda::cub::inclusive_scan", None),  # ATen's own wrappers
])
def test_hipify_names(name, rocm):
    assert hipify.rocm_name(name) == rocm
    assert hipify.shown(name) == (f"{name} ({rocm} on ROCm)" if rocm else name)


@pytest.mark.parametrize("name, library, family, dtype", [
    ("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0_APM1_ABV0", "Tensile", "gemm", "float"),
    ("Cijk_Ailk_Bljk_HB_MT128x128x16_SN", "Tensile", "gemm", "half"),
    ("Cijk_Alik_Bljk_BB_MT64x64x16", "Tensile", "gemm", "bf16"),
    ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN", "Tensile", "gemm", "half"),
    ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x16", "Tensile", "gemm", "bf16"),
    ("Cijk_Ailk_Bljk_DB_MT64x64x8", "Tensile", "gemm", "double"),
    ("naive_conv_fwd_nchw_float", "MIOpen", "conv fprop", "float"),
    ("naive_conv_wrw_nchw_half", "MIOpen", "conv wgrad", "half"),
    ("naive_conv_bwd_nhwc_bf16", "MIOpen", "conv dgrad", "bf16"),
    ("MIOpenConvUni", "MIOpen", "conv fprop", ""),
    ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "MIOpen", "conv fprop", "float"),
    ("MIOpenBatchNormFwdTrainSpatial", "MIOpen", "batch norm", ""),
    ("device_gemm_xdl_cshuffle_v3", "CK", "gemm", ""),
])
def test_rocprof_kernel_names(name, library, family, dtype):
    k = parse_kernel_name(name)
    assert (k.kind, k.library, family_of(k), dtype_of(k)) == ("library", library, family, dtype)


def test_hipified_aten_kernels_keep_their_cuda_names():
    """A hipified ATen kernel has the CUDA name: it stays ATen's, no library claims it."""
    k = parse_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                          "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    assert k.kind == "kernel" and k.library is None


def test_tensile_kernel_finds_the_blas_calls_a_rocm_build_renames(mini_tree, capsys):
    """The fixture's CUDABlas-like cublasSgemm is hipblasSgemm on ROCm, which runs Tensile: `atenmap
    kernel Cijk_…` lists it; a CUDA kernel's lookup is unchanged (cuBLAS's family)."""
    with Index.open(mini_tree, codegen=False) as ix:
        m = ix.kernel("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0")
        assert (m.library, m.family, m.dtype) == ("Tensile", "gemm", "float")
        assert ("cublasSgemm", "aten/src/ATen/cuda/MiniBlas.cpp") in {(s.symbol, s.file) for s in m.library_calls}
    code, out, _ = cli_run(capsys, "kernel", "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0", "-s", str(mini_tree),
                           "--no-codegen", errors_only=True)
    assert code == 0 and out.startswith("kernel: Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0  [library: Tensile, gemm, float]")


def test_rocm_version_is_a_rocm_term():
    """1.13.1's CUDABlas.cpp: ``#elif defined(ROCM_VERSION) && ROCM_VERSION >= 21000`` around rocblas_hdot
    is ROCm-only code (Note [ROCm code under the CUDA key]): a CUDA chain leaves its rocBLAS calls out."""
    from atenmap.resolve import conditions

    cond = "!(defined(CUDA_VERSION) && CUDA_VERSION >= 8000) && defined(ROCM_VERSION) && ROCM_VERSION >= 21000"
    assert conditions.rocm_only(cond) and conditions.excluded(cond) and not conditions.excluded(cond, "rocm")


def test_kernel_on_rocm_lists_rocm_named_calls_first(mini_tree):
    """Note [ROCm calls first] (resolve/kernelplatform.py): a Tensile kernel's calls on rocm put the
    rocBLAS call before the hipified cublasSgemm; on cuda the index's order stays."""
    import shutil

    from atenmap.resolve.kernelplatform import for_platform

    from .conftest import FIXTURE_TREE

    shutil.copy(FIXTURE_TREE.parent / "rocm" / "MiniRocblas.cpp", mini_tree / "aten/src/ATen/cuda/MiniRocblas.cpp")
    with Index.open(mini_tree, codegen=False) as ix:
        m = ix.kernel("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0")
        cuda = [(s.symbol, s.file, s.line) for s in for_platform(ix.store, m, "cuda").library_calls]
        rocm = [(s.symbol, s.file, s.line) for s in for_platform(ix.store, m, "rocm").library_calls]
    assert cuda == [(s.symbol, s.file, s.line) for s in m.library_calls]
    assert cuda == [("cublasSgemm", "aten/src/ATen/cuda/MiniBlas.cpp", 24), ("rocblas_gemm_ex", "aten/src/ATen/cuda/MiniRocblas.cpp", 7)]
    assert rocm == [("rocblas_gemm_ex", "aten/src/ATen/cuda/MiniRocblas.cpp", 7),
                    ("cublasSgemm (hipblasSgemm on ROCm)", "aten/src/ATen/cuda/MiniBlas.cpp", 24)]
