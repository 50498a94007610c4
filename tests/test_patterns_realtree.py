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


@pytest.mark.parametrize("op,line", [("max", 47), ("min", 25)])
@pytest.mark.parametrize("key", ["CPU", "CUDA"])
def test_native_overload_is_the_one_the_wrapper_calls(real_index_26, op, line, key):
    """Note [Native overload selection]: not the anonymous-namespace __device__ max of
    cuda/AveragePool2d.cu:28 / AveragePool3d.cu:31, nor the __device__ template of cuda/UpSample.cuh:42,
    nor max.other's max(self, other) of BinaryOps.cpp:1497."""
    ch = real_index_26.chain(op, keys=[key])
    natives = [(s.file, s.line) for s in ch.keys[0].walk() if s.role == "native"]
    assert natives == [("aten/src/ATen/native/ReduceAllOps.cpp", line)]
    assert not any(f"definitions named {op}" in w for w in ch.warnings)


def test_max_reaches_its_reduction(real_index_26):
    s = steps(real_index_26, "max", "CUDA")
    has(s, "kernel", "max_all_kernel_impl", "native/cuda/ReduceOps.cpp", 77)
    has(s, "call", "MaxNanFunctor::operator()", "native/cuda/ReduceMaxValuesKernel.cu", 22)


@pytest.mark.parametrize("op,launcher,line,method,kernel,launch", [
    ("kthvalue.values", "KthValueLauncher", 170, 176, "gatherKthValue", 193),
    ("median.dim_values", "MedianLauncher", 207, 213, "gatherMedian", 230),
    ("nanmedian.dim_values", "MedianLauncher", 207, 213, "gatherMedian", 230),
])
def test_launcher_objects(real_index_26, op, launcher, line, method, kernel, launch):
    """Note [Launcher objects]: run_launcher<scalar_t, index_t>(..., KthValueLauncher(k)) calls
    l.template launch<...>() (SortingCommon.cuh); the launcher's launch() is what launches."""
    s = steps(real_index_26, op, "CUDA")
    obj = has(s, "helper", launcher, "native/cuda/Sorting.cu", line)
    assert "object made here and passed on" in obj.detail
    has(s, "helper", f"{launcher}::launch", "native/cuda/Sorting.cu", method)
    has(s, "launch", kernel, "native/cuda/Sorting.cu", launch)


def test_sorter_objects_of_sort_key_value_inplace(real_index_26):
    """sortCommon(SmallBitonicSort{}, ...) / MediumRadixSort{}: sorter.template sort<A>(...) in cuda/Sort.cu."""
    s = steps(real_index_26, "sort.stable", "CUDA")
    has(s, "call", "at::native::sortKeyValueInplace", "native/cuda/Sort.cu", 361)
    has(s, "call", "at::native::SmallBitonicSort", "native/cuda/Sort.cu", 47)
    has(s, "call", "SmallBitonicSort::sort", "native/cuda/Sort.cu", 49)
    has(s, "launch", "bitonicSortKVInPlace", "native/cuda/Sort.cu", 82)
    has(s, "launch", "bitonicSortKVInPlace", "native/cuda/Sort.cu", 93)
    has(s, "call", "LTOp::operator()", "native/cuda/SortingCommon.cuh", 56)
    has(s, "launch", "radixSortKVInPlace", "native/cuda/Sort.cu", 265)
    t = steps(real_index_26, "topk", "CUDA")
    has(t, "launch", "bitonicSortKVInPlace", "native/cuda/Sort.cu", 82)
    has(t, "helper", "GTOp::operator()", "native/cuda/SortingCommon.cuh", 48)


def test_launch_through_a_function_pointer(real_index_26):
    """Note [Launches through a variable]: impl_fptr<<<...>>> in cuda/DistanceKernel.cu."""
    s = steps(real_index_26, "_cdist_forward", "CUDA")
    launch = has(s, "launch", "cdist_kernel_cuda_impl", "native/cuda/DistanceKernel.cu", 234)
    assert "__global__ cdist_kernel_cuda_impl at line 188; through the variable impl_fptr" in launch.detail
    has(s, "call", "dists::zero", "native/cuda/DistanceKernel.cu", 36)


def test_flash_attention_kernel_made_by_a_macro_head(real_index_26):
    """Note [Macro-made definition heads], Note [Specializations in other files], Note [Launches
    through a variable]: DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...) { ... } and
    ``auto kernel = &flash_fwd_kernel<...>; kernel<<<...>>>``, reached through run_mha_fwd_<T, 128>."""
    tmpl = "native/transformers/cuda/flash_attn/flash_fwd_launch_template.h"
    k = real_index_26.kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
                             "false, cutlass::half_t>, false, false, false, false, true, true, false>(Flash_fwd_params)")
    assert k.definition.file.endswith(tmpl) and k.definition.line == 35
    s = steps(real_index_26, "_flash_attention_forward", "CUDA")
    has(s, "helper", "pytorch_flash::run_mha_fwd_",
        "native/transformers/cuda/flash_attn/kernels/flash_fwd_hdim128_bf16_sm80.cu", 11)
    has(s, "launch", "flash_fwd_kernel", tmpl, 93)


def test_shared_native_helper_reaching_a_stub(real_index_26):
    """Note [Shared native helpers]: cuda/SpectralOps.cpp:395 calls at::native::_fft_fill_with_conjugate_symmetry_."""
    s = steps(real_index_26, "_fft_r2c", "CUDA")
    has(s, "helper", "_fft_fill_with_conjugate_symmetry_", "native/SpectralOps.cpp", 1198)
    has(s, "stub_call", "fft_fill_with_conjugate_symmetry_stub", "native/SpectralOps.cpp", 1284)
    has(s, "launch", "_fft_conjugate_copy_kernel", "native/cuda/SpectralOps.cu", 111)


def test_unnamed_namespace_helper_named_through_its_namespace(real_index_26):
    """at::native::mexp(a) reaches at::native::(anonymous namespace)::mexp; the directly called
    native function at::native::_compute_linear_combination starts its own depth."""
    s = steps(real_index_26, "linalg_matrix_exp", "CUDA")
    has(s, "helper", "(anonymous namespace)::mexp", "native/LinearAlgebra.cpp", 2710)
    has(s, "launch", "_elemwise_kernel", "native/cuda/FunctionOfAMatrixUtilsKernel.cu", 40)


def test_reverse_lookup_through_a_launcher_object(real_index_26):
    m = real_index_26.kernel("void at::native::(anonymous namespace)::gatherMedian<float, unsigned int, 1>(...)")
    assert [(s.file, s.line) for s in m.launches] == [("aten/src/ATen/native/cuda/Sorting.cu", 230)]
    # the name spells median (issue 20); nanmedian runs the same launcher
    assert m.operators[0] == "aten::median.dim_values [CUDA]" and "aten::nanmedian.dim_values [CUDA]" in m.operators
