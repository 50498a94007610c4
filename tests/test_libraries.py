"""resolve/libraries.py: the one table of vendor libraries, read by the resolver (calls), the kernel-name
parser (kernel names) and the kernel lookup (families)."""
from __future__ import annotations

import pytest

from atenmap.resolve import libraries
from atenmap.resolve.kernelname import library_of_kernel
from atenmap.resolve.libraries import LIBRARIES, by_name, library_of, library_of_call, same_family


@pytest.mark.parametrize(
    "qual, name, family",
    [
        ("cublasSgemm", "cuBLAS", "cuBLAS"),
        ("cublasGemmEx", "cuBLAS", "cuBLAS"),
        ("cublasGemmStridedBatchedEx", "cuBLAS", "cuBLAS"),
        ("cublasLtMatmul", "cuBLASLt", "cuBLAS"),
        ("::cublasLtMatmulDescSetAttribute", "cuBLASLt", "cuBLAS"),
        ("at::cuda::blas::gemm", "cuBLAS (at::cuda::blas)", "cuBLAS"),
        ("at::cuda::blas::scaled_gemm", "cuBLAS (at::cuda::blas)", "cuBLAS"),
        ("cudnnConvolutionForward", "cuDNN", "cuDNN"),
        ("cudnn_frontend::ExecutionPlanBuilder", "cuDNN", "cuDNN"),
        ("cufftXtMakePlanMany", "cuFFT", "cuFFT"),
        ("cufftXtExec", "cuFFT", "cuFFT"),
        ("cufftExecC2C", "cuFFT", "cuFFT"),
        ("cufftMakePlanMany64", "cuFFT", "cuFFT"),
        ("cusolverDnXgeqrf", "cuSOLVER", "cuSOLVER/MAGMA"),
        ("at::cuda::solver::geqrf", "cuSOLVER", "cuSOLVER/MAGMA"),
        ("magma_sgeqrf_gpu", "MAGMA", "cuSOLVER/MAGMA"),
        ("cusparseSpMM", "cuSPARSE", "cuSPARSE"),
        ("at_cuda_detail::cub::DeviceRadixSort::SortPairs", "CUB", "CUB"),
        ("at::cuda::cub::inclusive_scan", "CUB", "CUB"),
        ("thrust::sort", "thrust", "thrust"),
        ("ncclAllReduce", "NCCL", "NCCL"),
        ("torch::cuda::nccl::all_reduce", "NCCL", "NCCL"),
        ("at::native::cpublas::gemm", "CPU BLAS (at::native::cpublas)", "BLAS"),
        ("cpublas::gemm_stub", "CPU BLAS (at::native::cpublas)", "BLAS"),
        ("sgemm_", "BLAS", "BLAS"),
        ("cblas_sgemm", "BLAS", "BLAS"),
        ("dgetrf_", "LAPACK", "LAPACK"),
        ("ideep::convolution_forward::compute", "oneDNN", "oneDNN"),
        ("dnnl::matmul", "oneDNN", "oneDNN"),
        ("DftiComputeForward", "MKL", "MKL"),
        ("DftiCreateDescriptor", "MKL", "MKL"),
        ("vdRngGaussian", "MKL", "MKL"),
        ("vslNewStream", "MKL", "MKL"),
        ("vslSkipAheadStream", "MKL", "MKL"),
        ("pocketfft::c2c", "pocketfft", "pocketfft"),
        ("pocketfft::r2c", "pocketfft", "pocketfft"),
        ("pocketfft::c2r", "pocketfft", "pocketfft"),
        ("miopenConvolutionForward", "MIOpen", "MIOpen"),
    ],
)
def test_calls_name_library_and_family(qual, name, family):
    lib = library_of_call(qual)
    assert lib is not None and (lib.name, lib.family) == (name, family)
    assert library_of(qual) == name


@pytest.mark.parametrize(
    "qual",
    ["thrust::device_ptr", "thrust::make_counting_iterator", "cub::get_num_bits", "thrust::plus", "pocketfft::shape_t",
     "at::native::add_kernel", "gpu_kernel", "at::native::_cufft_get_plan_cache_size", "_mkldnn_gemm_i8i8i32_with_blas"],
)
def test_ordinary_code_and_helpers_are_no_library(qual):
    assert library_of_call(qual) is None and library_of(qual) is None


def test_names_are_unique_and_every_rule_belongs_to_its_record():
    names = [lib.name for lib in LIBRARIES]
    assert len(names) == len(set(names))
    for lib in LIBRARIES:
        assert by_name(lib.name) is lib
        assert all(rule.library == lib.name for rule in lib.kernels)
        assert lib.calls is not None or lib.kernels, lib.name
        assert (lib.calls is None) == (not lib.like), lib.name  # a call pattern comes with its preselection


@pytest.mark.parametrize(
    "kernel, name",
    [
        ("ampere_sgemm_128x64_tn", "cuBLAS"),
        ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(cublasLt::cublasSplitKParams<float>)", "cuBLASLt"),
        ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)", "CUTLASS"),
        ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_kernel", "cuDNN"),
        ("void vector_fft<4096, 8, 1, 0, float, float2>(int)", "cuFFT"),
    ],
)
def test_kernels_name_the_library(kernel, name):
    lib = library_of_kernel(kernel)
    assert lib is not None and lib.name == name


def test_aten_kernels_are_no_library():
    assert library_of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                             "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)") is None


def test_a_kernel_and_a_call_compare_on_family():
    # a cuBLASLt or CUTLASS kernel comes from a cuBLAS call or ATen's blas wrapper
    for kernel in ("cuBLASLt", "CUTLASS", "cuBLAS"):
        assert same_family(kernel, library_of_call("at::cuda::blas::gemm"))
        assert same_family(by_name(kernel), library_of_call("cublasGemmEx"))
    assert same_family("cuSOLVER", library_of_call("magma_sgeqrf_gpu"))
    assert not same_family("cuDNN", "cuBLAS")
    assert not same_family(None, None) and not same_family("cuBLAS", None)


def test_family_preselection_covers_every_call_of_the_family():
    import fnmatch

    quals = ["cublasSgemm", "cublasLtMatmul", "at::cuda::blas::gemm", "at::cuda::solver::geqrf", "magma_sgeqrf_gpu",
             "cusolverDnXgeqrf", "at::cuda::cub::inclusive_scan", "cufftXtExec", "cudnn_frontend::ExecutionPlanBuilder"]
    for q in quals:
        lib = library_of_call(q)
        likes = libraries.family_calls_like(lib)
        assert any(fnmatch.fnmatchcase(q.lower(), p.replace("%", "*").replace("_", "?").lower()) for p in likes), q


def test_a_front_end_s_plan_building_is_set_up_but_its_execute_is_work():
    # Note [Set-up calls]: cudnn_frontend builds plans (Library.setup); its graph's execute runs one
    from atenmap.resolve.libraries import is_setup_call
    assert is_setup_call("cudnn_frontend::TensorBuilder") and is_setup_call("cudnn_frontend::ExecutionPlan::getWorkspaceSize")
    assert not is_setup_call("cudnn_frontend::graph::Graph::execute")
    assert not is_setup_call("cudnnBackendExecute") and is_setup_call("cudnnSetStream")
