"""Kernel names as profilers print them -> KernelName. Pure text: no index, no torch.

The names below are real: each was seen in a public torch.profiler / Nsight dump (see LIBRARY_RULES.seen).
"""
from __future__ import annotations

import random
import shutil

import pytest

from atenmap.resolve import libraries
from atenmap.resolve.kernelname import demangling as dm
from atenmap.resolve.kernelname import reader
from atenmap.errors import AtenmapError
from atenmap.resolve.kernelname import KINDS, LIBRARY_RULES, MAX_NAME_CHARS, MAX_NESTING, KernelName, LambdaRef, demangle, demangle_many, parse_kernel_name, split_template_args, strip_templates

ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
ADD_MANGLED = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
SUM_OP = (
    "at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>"
    "::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>"
)
SUM = f"void at::native::reduce_kernel<512, 1, {SUM_OP} >({SUM_OP})"
SOFTMAX = (
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>"
    "(float*, float const*, int, int, int, bool const*, int, bool)"
)
RADIX = (
    "void at::native::radixSortKVInPlace<-2, -1, 128, 32, float, long, unsigned int>"
    "(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, unsigned int, "
    "at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, bool)"
)
SGEMM_XMMA = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
    "execute_kernel__5x_cublas"
)
COPY_LAMBDA = (
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const"
    "::{lambda()#7}::operator()() const::{lambda(float)#1}"
)
COPY = (
    f"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<{COPY_LAMBDA}>"
    f"(at::TensorIteratorBase&, {COPY_LAMBDA} const&)::{{lambda(int)#1}}>"
    "(int, at::native::gpu_kernel_impl_nocast<...same...>(...)::{lambda(int)#1})"
)
SOFTMAX_BWD = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(float*, float const*, float const*, long)"
)
EXP = (
    "void at::native::unrolled_elementwise_kernel<at::native::exp_kernel_cuda(at::TensorIteratorBase&)"
    "::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
    "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(...)"
)


def fields(k: KernelName, *names: str) -> dict:
    return {n: getattr(k, n) for n in names}


# --- the names the lookup must get right ----------------------------------------------------------------


def test_vectorized_add():
    k = parse_kernel_name(ADD)
    assert fields(k, "kind", "function", "qualname", "namespaces", "library", "truncated") == {
        "kind": "kernel",
        "function": "vectorized_elementwise_kernel",
        "qualname": "at::native::vectorized_elementwise_kernel",
        "namespaces": ("at", "native"),
        "library": None,
        "truncated": False,
    }
    assert k.template_args == ("4", "at::native::CUDAFunctor_add<float>", "std::array<char*, 3ul>")
    assert k.functors == ("at::native::CUDAFunctor_add",)  # std::array is not code of the operator
    assert k.lambdas == ()
    assert k.raw == ADD and k.demangled == ADD and str(k) == ADD
    assert k.detail == "ATen kernel at::native::vectorized_elementwise_kernel applying at::native::CUDAFunctor_add"
    assert k.notes == ()


def test_sum_reduce_records_functor_class_and_lambda_in_operator_call():
    k = parse_kernel_name(SUM)
    assert (k.kind, k.qualname) == ("kernel", "at::native::reduce_kernel")
    assert k.template_args == ("512", "1", SUM_OP)
    assert k.functors == ("at::native::ReduceOp", "at::native::func_wrapper_t", "at::native::sum_functor")
    assert k.lambdas == (
        LambdaRef(
            enclosing="at::native::sum_functor::operator()",
            enclosing_name="sum_functor",  # what to search for: operator() alone finds nothing
            ordinal=1,
            signature="(at::TensorIterator&)",
            chain=("{lambda(float, float)#1}",),
        ),
    )  # the same lambda in the parameter list is not repeated


def test_softmax_in_anonymous_namespace():
    k = parse_kernel_name(SOFTMAX)
    assert fields(k, "kind", "function", "qualname", "namespaces", "functors", "lambdas", "library") == {
        "kind": "kernel",
        "function": "softmax_warp_forward",
        "qualname": "(anonymous namespace)::softmax_warp_forward",
        "namespaces": ("(anonymous namespace)",),
        "functors": (),
        "lambdas": (),
        "library": None,
    }
    assert k.template_args == ("float", "float", "float", "8", "false", "false")


def test_radix_sort_negative_template_values_and_parameter_types_are_not_functors():
    k = parse_kernel_name(RADIX)
    assert (k.kind, k.qualname) == ("kernel", "at::native::radixSortKVInPlace")
    assert k.template_args == ("-2", "-1", "128", "32", "float", "long", "unsigned int")
    assert k.functors == ()  # TensorInfo is in the parameter list only


def test_cublas_xmma_gemm():
    k = parse_kernel_name(SGEMM_XMMA)
    assert fields(k, "kind", "library", "function", "qualname", "namespaces", "detail") == {
        "kind": "library",
        "library": "cuBLAS",
        "function": SGEMM_XMMA,
        "qualname": SGEMM_XMMA,
        "namespaces": (),
        "detail": "cuBLAS GEMM kernel (sm80 xmma, f32)",
    }


def test_memcpy_dtod():
    k = parse_kernel_name("Memcpy DtoD (Device -> Device)")
    assert fields(k, "kind", "library", "function", "qualname", "detail") == {
        "kind": "memcpy",
        "library": None,
        "function": "",
        "qualname": "",
        "detail": "device-to-device memory copy issued by copy_/to()/clone()",
    }


def test_direct_copy_keeps_both_lambda_chains_operator_lambda_first():
    k = parse_kernel_name(COPY)
    assert (k.kind, k.qualname, k.functors) == ("kernel", "at::native::elementwise_kernel", ())
    assert k.template_args[:2] == ("128", "2")
    copy, wrapper = k.lambdas
    assert copy == LambdaRef(
        enclosing="at::native::direct_copy_kernel_cuda",
        enclosing_name="direct_copy_kernel_cuda",
        ordinal=3,
        signature="(at::TensorIteratorBase&)",
        chain=("{lambda()#3}", "{lambda()#7}", "{lambda(float)#1}"),
    )
    assert (wrapper.enclosing, wrapper.enclosing_name, wrapper.ordinal, wrapper.chain) == (
        "at::native::gpu_kernel_impl_nocast",
        "gpu_kernel_impl_nocast",
        1,
        ("{lambda(int)#1}",),
    )
    assert wrapper.signature == f"(at::TensorIteratorBase&, {COPY_LAMBDA} const&)"  # the full one, not "(...)"
    assert str(copy) == (
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::{lambda()#7}::{lambda(float)#1}"
    )
    assert k.truncated  # "<...same...>" and "(...)" are abbreviations
    assert k.detail.endswith("running a lambda from at::native::direct_copy_kernel_cuda")


def test_softmax_backward_epilogue_in_nested_anonymous_namespace():
    k = parse_kernel_name(SOFTMAX_BWD)
    assert k.qualname == "at::native::(anonymous namespace)::cunn_SoftMaxBackward"
    assert k.namespaces == ("at", "native", "(anonymous namespace)")
    assert k.functors == ("at::native::(anonymous namespace)::SoftMaxBackwardEpilogue",)
    assert k.template_args[-1] == "at::native::(anonymous namespace)::SoftMaxBackwardEpilogue"


def test_exp_lambda_chain():
    k = parse_kernel_name(EXP)
    assert k.qualname == "at::native::unrolled_elementwise_kernel"
    assert k.lambdas == (
        LambdaRef(
            enclosing="at::native::exp_kernel_cuda",
            enclosing_name="exp_kernel_cuda",
            ordinal=2,
            signature="(at::TensorIteratorBase&)",
            chain=("{lambda()#2}", "{lambda()#2}", "{lambda(float)#1}"),
        ),
    )
    assert k.functors == (
        "TrivialOffsetCalculator",
        "at::native::memory::LoadWithCast",
        "at::native::memory::StoreWithCast",
    )
    assert len(k.template_args) == 7 and k.template_args[1] == "std::array<char*, 2ul>"


def test_mangled_name_demangles_to_the_same_record():
    k = parse_kernel_name(ADD_MANGLED)
    assert k.raw == ADD_MANGLED
    assert k.demangled == ADD
    plain = parse_kernel_name(ADD)
    for f in ("kind", "function", "qualname", "namespaces", "template_args", "functors", "lambdas", "detail"):
        assert getattr(k, f) == getattr(plain, f), f


@pytest.mark.parametrize(
    "name, library, function, qualname",
    [
        ("gemv2T_kernel_val", "cuBLAS", "gemv2T_kernel_val", "gemv2T_kernel_val"),
        ("ampere_sgemm_128x64_nn", "cuBLAS", "ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        (
            "at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...>",
            "CUB",
            "DeviceRadixSortOnesweepKernel",
            "at_cuda_detail::cub::DeviceRadixSortOnesweepKernel",
        ),
        (
            "cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)",
            "CUTLASS",
            "Kernel2",
            "cutlass::Kernel2",
        ),
        (
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0",
            "cuDNN",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0",
        ),
        ("void vector_fft_r2c<…>", "cuFFT", "vector_fft_r2c", "vector_fft_r2c"),
        (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "NCCL",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        ),
        ("triton_poi_fused_add_0", "Triton", "triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_plain_library_names(name, library, function, qualname):
    k = parse_kernel_name(name)
    assert (k.kind, k.library, k.function, k.qualname) == ("library", library, function, qualname)
    assert k.detail


def test_library_details():
    assert parse_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)").detail.startswith(
        "NCCL AllReduce kernel (Sum; f32; RING/LL)"
    )
    assert parse_kernel_name("triton_poi_fused_add_0").detail.startswith("Triton pointwise kernel generated by torch.compile")
    assert "fusing add_mul" in parse_kernel_name("triton_red_fused_add_mul_1").detail
    assert parse_kernel_name("at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...>").detail.startswith(
        "CUB DeviceRadixSortOnesweepKernel (radix sort), launched from ATen through at::cuda::cub"
    )
    assert "(radix sort)" in parse_kernel_name("cub::CUB_200700_860_1200_NS::DeviceRadixSortOnesweepKernel<x>(int)").detail
    assert "launched from ATen" not in parse_kernel_name("cub::DeviceScanKernel<x>(int)").detail
    assert parse_kernel_name("ampere_sgemm_128x64_nn").detail == "cuBLAS GEMM kernel (ampere sgemm)"
    assert "usually launched by cuBLAS" in parse_kernel_name(
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)"
    ).detail
    assert parse_kernel_name(
        "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x"
    ).detail.startswith("cuDNN fused attention backward kernel (sm90)")
    assert parse_kernel_name(
        "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x32x32_stage4_warpsize4x1x1_g1_"
        "tensor16x8x16_execute_kernel__5x_cudnn"
    ).detail == "cuDNN convolution forward kernel (sm80 xmma, implicit GEMM, f16)"
    assert parse_kernel_name("cublasLt::splitKreduce_kernel<32, 16, int, float>(int)").detail == (
        "cuBLASLt split-K reduction, the second pass of a split-K GEMM kernel"
    )
    assert "(Cholesky)" in parse_kernel_name("void potrf_alg2_cta_upper<double2, double, 32>(int, int, double2*)").detail


# --- library rules: every rule has a real name proving it matches, and the first match wins ------------

RULE_FIXTURES = {
    # rule index in LIBRARY_RULES -> a real name (see the rule's `seen`)
    0: "ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
    1: "triton_tem_fused_mm_0",
    2: "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, "
    "Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>"
    "(pytorch_flash::Flash_fwd_params)",
    3: "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 128, 4, false, false, cutlass::half_t>>(Flash_fwd_params)",
    4: "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int>>>(int)",
    5: "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
    "true, 64, 64, 64, true, true>::Params)",
    6: "void attention_kernel_batched_impl<PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80>>(int)",
    7: "void cudnn::bn_fw_inf_1C11_kernel_NHWC<__half, float, true, 1>(float, float, cudnnTensorStruct, __half const*)",
    8: "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_stage3_warpsize4x1x1_g1_"
    "tensor16x8x16_kernel",
    9: "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>(int, int, int, float const*)",
    10: "void my_kernel<cusolverDnParams>(int)",
    11: "void geqr2_smem<double, double, 8, 6, 4>(int, int, double*, unsigned long, double*, int)",
    12: "void trsm_template_batched_lNL_kernel<float, 4, 32>(magma_diag_t, int, int, float, float**, int)",
    13: "magma_iset_pointer_kernel(int**, int*, int, int, int, int)",
    14: "cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, false, false>"
    "(cublasLt::cublasSplitKParams<float>, float const*)",
    15: "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    16: "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma",
    17: "volta_sgemm_32x128_tn",
    18: "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_TNT",
    19: "gemmSN_NN_kernel",
    20: "gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7, false>(int)",
    21: "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<int>>>(int)",
    22: "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8",
    23: "void thrust::cuda_cub::core::_kernel_agent<thrust::cuda_cub::__parallel_for::ParallelForAgent<thrust::cuda_cub"
    "::__uninitialized_fill::functor<thrust::device_ptr<int>, int>, unsigned long>, thrust::cuda_cub::"
    "__uninitialized_fill::functor<thrust::device_ptr<int>, int>, unsigned long>(thrust::cuda_cub::"
    "__uninitialized_fill::functor<thrust::device_ptr<int>, int>, unsigned long)",
    24: "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, "
    "at_cuda_detail::cub::NullType, unsigned long long>::Policy900, (bool)0, long, at_cuda_detail::cub::NullType>(int)",
    25: "void DSE::vector_fft<0, 1, 256, 16, 16, 1, float, float, float2>(float2*, float2*, int, int3, int3)",
    26: "regular_fft_factor",
    27: "void my_kernel<cufftComplex>(int)",
    28: "CUTENSOR_NAMESPACE::permutationKernelPLC3<CUTENSOR_NAMESPACE::Params>(int)",
    29: "void csrmv_kernel<cusparseSpMVAlg_t>(int)",
    30: "CudaCodeGen::kernel5(CudaCodeGen::Tensor<float, 3>, CudaCodeGen::Tensor<float, 3>)",
    31: "void transformer_engine::normalization::ln_fwd_tuned_kernel<transformer_engine::normalization::Params>(int)",
    32: "naive_conv_fwd_nchw_float",
    33: "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASLT_ASAE01_ASCE01",
    34: "void rocblas_gemvt_kernel<256, float, float const*, float*>(int, int, float, long)",
    35: "device_gemm_xdl_cshuffle_v3",
    36: "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<float>, true, 1>(int)",
}


def test_every_library_rule_has_a_fixture():
    assert sorted(RULE_FIXTURES) == list(range(len(LIBRARY_RULES)))
    for rule in LIBRARY_RULES:
        assert rule.where in ("name", "qualname", "text") and rule.seen and rule.library


@pytest.mark.parametrize("index", sorted(RULE_FIXTURES))
def test_library_rule_fixture_is_claimed_by_that_rule(index):
    k = parse_kernel_name(RULE_FIXTURES[index])
    facts = libraries.KernelFacts(k.demangled, k.function, k.qualname, k.namespaces)
    rule, _ = libraries.match_kernel(facts)
    assert rule is LIBRARY_RULES[index], (rule.library, rule.pattern.pattern)
    assert (k.kind, k.library) == ("library", rule.library)
    assert k.function and k.detail


@pytest.mark.parametrize(
    "name",
    [
        # ATen code that merely mentions a library in its template arguments stays ATen's.
        "void at::native::foo_kernel<at::native::cudnn_helper<float>, cublasHandle_t>(int)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::gemv_like_functor<float>>(int)",
        # Unqualified library patterns do not apply to qualified ATen names.
        "void at::native::fft_c2c_kernel<float>(int)",
        "void at::native::triton_poi_like<int>(int)",
    ],
)
def test_aten_names_are_not_claimed_by_libraries(name):
    k = parse_kernel_name(name)
    assert (k.kind, k.library) == ("kernel", None)


@pytest.mark.parametrize(
    "name, library",
    [
        ("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn", "cuBLAS"),
        ("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f...", "cuBLAS"),
        ("nvjet_tst_128x24_64x11_2x1_v_bz_TNT", "cuBLAS"),
        ("void gemv2N_kernel_val<float, float, float, int=128, int=32, int=4, int=4, int=1>(float, float, "
         "cublasGemv2Params_v2<float, float, float>)", "cuBLAS"),
        ("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*)", "cuBLAS"),
        ("maxwell_scudnn_128x128_relu_interior_nn_v1", "cuDNN"),
        ("void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)2>(int)", "cuDNN"),
        ("void cub::CUB_200802_SM_900::EmptyKernel<void>()", "CUB"),
        ("pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<int>(int)", "flash-attention"),
        ("fmha_cutlassB_f16_aligned_128x128_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<int>::Params)",
         "mem-efficient-attention"),
        ("triton_red_fused__to_copy_mean_mul_pow_rsqrt_0", "Triton"),
        ("triton_per_fused_native_layer_norm_1", "Triton"),
        ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
        ("void ormtr_gemv_c<float, 4>(int)", "cuSOLVER"),
        ("void potrf_alg2_cta_upper<double2, double, int=32>(int, int, double2*, unsigned long, int*)", "cuSOLVER"),
        # cuSOLVER's and MAGMA's kernels that take cuBLAS's types are theirs (H200, torch.linalg)
        ("void cusolverDnXfill_kernel<float>(cublasFillMode_t, long, long, float*, long, float)", "cuSOLVER"),
        ("void blocksize_decision_kernel<float, float, 512>(cublasFillMode_t, int, int, float*, int*, "
         "sytrfExchangeParams<float, float>)", "cuSOLVER"),
        ("xxtrf4_set_info_ker(int, int*)", "cuSOLVER"),
        ("void lacpy_kernel<float, float, 5, 3>(long, long, float const*, long, long, float*, long, long, int, int, long)",
         "cuSOLVER"),
    ],
)
def test_more_real_library_names(name, library):
    k = parse_kernel_name(name)
    assert (k.kind, k.library) == ("library", library)


def test_library_kernels_keep_function_and_qualname_for_the_lookup():
    k = parse_kernel_name(RULE_FIXTURES[24])
    assert k.function == "DeviceRadixSortOnesweepKernel"
    assert k.qualname == "at_cuda_detail::cub::DeviceRadixSortOnesweepKernel"
    assert k.namespaces == ("at_cuda_detail", "cub")
    assert k.template_args[1] == "(bool)0"


# --- the same kernel as other tools print it ----------------------------------------------------------------

NCU_MUL = (
    "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)3>>(int, T2, T3)"
)


def test_nsight_compute_spelling():
    k = parse_kernel_name(NCU_MUL + " (1024, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 9.0")
    assert k.demangled == NCU_MUL
    assert k.qualname == "at::native::vectorized_elementwise_kernel"
    assert k.template_args == (
        "(int)4",
        "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>",
        "std::array<char *, (unsigned long)3>",
    )
    assert k.functors == ("at::native::BinaryFunctor", "at::native::binary_internal::MulFunctor")
    assert k.notes == ("ignored Nsight Compute's launch suffix",)
    old = parse_kernel_name(
        "void DSE::vector_fft<(int)0, (int)1, (int)256, (int)16, (int)16, (int)1, float, float, float2>(T9 *, T9 *, "
        "int, int3, int3), 2023-May-07 14:57:45, Context 1, Stream 7"
    )
    assert (old.library, old.qualname, old.functors) == ("cuFFT", "DSE::vector_fft", ())  # float2 is a value type


def test_nsight_compute_unnamed_namespace_reads_as_anonymous_namespace():
    k = parse_kernel_name(
        "void at_cuda_detail::cub::DeviceSegmentedRadixSortKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<float, "
        "long, int>::Policy900, (bool)1, (bool)0, float, long, at::native::<unnamed>::offset_t, int>(const T4 *, T4 *)"
    )
    assert "at::native::(anonymous namespace)::offset_t" in k.functors
    assert "at::native::(anonymous namespace)::offset_t" in k.template_args
    assert "<unnamed>" in k.demangled  # demangled keeps the tool's text


def test_nvprof_spelling():
    k = parse_kernel_name(
        "void gemmSN_NN_kernel<double, int=128, int=2, int=4, int=8, int=4, int=4, cublasGemvTensorStridedBatched"
        "<double const >, cublasGemvTensorStridedBatched<double>>(cublasGemmSmallNParams<double const , "
        "cublasGemvTensorStridedBatched<double const >, double>)"
    )
    assert (k.library, k.function, k.template_args[1]) == ("cuBLAS", "gemmSN_NN_kernel", "int=128")


def test_profiler_table_cut():
    row = (
        "void at::native::vectorized_elementwise_kernel<4, at...         0.00%       0.000us         0.00%       "
        "0.000us       0.000us       2.426ms         0.08%       2.426ms       1.002us          2420  "
    )
    k = parse_kernel_name(row)
    assert (k.kind, k.qualname, k.truncated) == ("kernel", "at::native::vectorized_elementwise_kernel", True)
    assert k.demangled == "void at::native::vectorized_elementwise_kernel<4, at..."
    assert k.template_args == ("4", "at")
    assert k.functors == ()  # "at" was cut mid-name: not a class
    assert "ignored the table columns after the name" in k.notes
    assert any("max_name_column_width" in n for n in k.notes)


def test_cut_function_name_is_a_prefix():
    k = parse_kernel_name("void at_cuda_detail::cub::DeviceRadixSortOnesweepKer...")
    assert (k.library, k.function, k.truncated) == ("CUB", "DeviceRadixSortOnesweepKer", True)


def test_nsys_stats_row_with_leading_columns_and_cut_name():
    k = parse_kernel_name(
        "      1.3       1001705612       1200     834754.7     782929.0     467457    1424002     236740.2   "
        "void cub::CUB_200802_SM_610::DeviceRadixSortOnesweepKernel<cub::CUB_200802_SM_610::detail::radix::p."
    )
    assert (k.library, k.qualname, k.truncated, k.functors) == (
        "CUB",
        "cub::CUB_200802_SM_610::DeviceRadixSortOnesweepKernel",
        True,
        (),
    )
    assert "ignored the table columns before the name" in k.notes


def test_unclosed_brackets_mean_cut():
    k = parse_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, at::na")
    assert k.truncated and "brackets are not closed: the name was cut short" in k.notes
    assert k.functors == ("at::native::BinaryFunctor",)
    assert k.template_args == ("4", "at::native::BinaryFunctor<float, at::na")


def test_clone_suffix_and_whitespace():
    k = parse_kernel_name("  void  at::native::foo_kernel<int>(int)  [clone .kd]\n")
    assert (k.qualname, k.demangled) == ("at::native::foo_kernel", "void at::native::foo_kernel<int>(int)")


def test_space_before_parameter_list_as_nvprof_prints_cutlass():
    k = parse_kernel_name("void cutlass::Kernel (cutlass_70_wmma_tensorop_f16_s161616gemm_f16_16x16_64x2_tn_align8Params)")
    assert (k.kind, k.library, k.qualname) == ("library", "CUTLASS", "cutlass::Kernel")


# --- demangling -------------------------------------------------------------------------------------------

needs_cxxfilt = pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt not on PATH")
needs_cxa = pytest.mark.skipif(dm._cxa_functions() is None, reason="no __cxa_demangle in this C++ runtime")


def test_demangle_leaves_other_names_alone():
    assert demangle(ADD) == ADD
    assert demangle("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert demangle("_Zgarbage") == "_Zgarbage"
    assert demangle("") == ""


@needs_cxxfilt
def test_cxxfilt_backend():
    assert dm._demangle_cxxfilt((ADD_MANGLED, "_Zgarbage")) == [ADD, None]


@needs_cxa
def test_cxa_backend_matches_cxxfilt_text():
    assert dm._demangle_cxa(ADD_MANGLED) == ADD
    assert dm._demangle_cxa("_Zgarbage") is None


def test_demangle_many_keeps_order_and_duplicates():
    names = [ADD_MANGLED, "plain", ADD_MANGLED, "_Zgarbage", f"  {ADD_MANGLED}  "]
    out = demangle_many(names)
    if demangle(ADD_MANGLED) == ADD_MANGLED:  # pragma: no cover - neither backend on this machine
        pytest.skip("no demangler available")
    assert out == [ADD, "plain", ADD, "_Zgarbage", ADD]
    assert demangle_many([]) == []


@needs_cxa
def test_without_cxxfilt_ctypes_demangles(monkeypatch):
    monkeypatch.setattr(dm.shutil, "which", lambda name: None)
    dm._demangle_batch.cache_clear()
    try:
        assert demangle(ADD_MANGLED) == ADD
    finally:
        dm._demangle_batch.cache_clear()


def test_without_any_demangler_the_mangling_still_names_the_function(monkeypatch):
    monkeypatch.setattr(dm.shutil, "which", lambda name: None)
    monkeypatch.setattr(dm, "_cxa_functions", lambda: None)
    dm._demangle_batch.cache_clear()
    try:
        assert demangle(ADD_MANGLED) == ADD_MANGLED
        k = parse_kernel_name(ADD_MANGLED)
    finally:
        dm._demangle_batch.cache_clear()
    assert k.demangled == ADD_MANGLED  # failure keeps the raw name
    assert (k.kind, k.qualname, k.function) == ("kernel", "at::native::vectorized_elementwise_kernel", "vectorized_elementwise_kernel")
    assert k.notes == ("could not demangle the name; read at::native::vectorized_elementwise_kernel from the mangling",)


def test_mangled_name_cut_by_a_table():
    k = parse_kernel_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFu...")
    assert (k.qualname, k.truncated) == ("at::native::vectorized_elementwise_kernel", True)


@pytest.mark.parametrize(
    "mangled, name",
    [
        (ADD_MANGLED, "at::native::vectorized_elementwise_kernel"),
        ("_Z23implicit_convolve_sgemmIffLi1024EEviii", "implicit_convolve_sgemm"),
        ("_ZN2at6native55_GLOBAL__N__19095488_22_DistributionUniform_cu_67fa25cf43distribution_elementwise_grid_"
         "stride_kernelIfLi4E", "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"),
        ("_ZNSt5arrayIiLm3EE4fillEv", "std::array"),
        ("_ZN2at6native99short", "at::native"),
        ("_Z", None),
        ("not mangled", None),
        ("_Z99999999999999999999", None),
    ],
)
def test_partial_demangle(mangled, name):
    assert dm.partial_demangle(mangled) == name


def test_mangled_anonymous_namespace_and_lambdas():
    k = parse_kernel_name(
        "_ZN2at6native55_GLOBAL__N__19095488_22_DistributionUniform_cu_67fa25cf43distribution_elementwise_grid_"
        "stride_kernelIfLi4EZNS0_9templates4cuda21uniform_and_transformIN3c104HalfEfPNS_17CUDAGeneratorImplEZZZNS4_"
        "14uniform_kernelIS9_EEvRNS_18TensorIteratorBaseEddT_ENKUlvE_clEvENKUlvE1_clEvEUlfE_EEvSC_T1_T2_EUlP24curand"
        "StatePhilox4_32_10E0_ZNS1_27distribution_nullary_kernelIS7_f6float4S9_SL_SG_EEvSC_SI_RKT3_T4_EUlifE_EEvlNS_"
        "15PhiloxCudaStateESH_SI_"
    )
    if k.demangled == k.raw:  # pragma: no cover - no demangler here
        pytest.skip("no demangler available")
    assert k.qualname == "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
    first = k.lambdas[0]
    assert (first.enclosing, first.ordinal, first.chain) == (
        "at::native::templates::cuda::uniform_kernel",
        1,
        ("{lambda()#1}", "{lambda()#3}", "{lambda(float)#1}"),
    )
    assert "c10::Half" not in k.functors  # dtypes are not code


# --- helpers the lookup reuses -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, args",
    [
        ("<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >",
         ["4", "at::native::CUDAFunctor_add<float>", "std::array<char*, 3ul>"]),
        ("4, Foo<a, b>, c", ["4", "Foo<a, b>", "c"]),
        ("f(int, int)::{lambda(float, float)#1}, x", ["f(int, int)::{lambda(float, float)#1}", "x"]),
        ("<(int)4, (bool)0>", ["(int)4", "(bool)0"]),
        ("<4, Foo<a, b", ["4", "Foo<a, b"]),  # cut: runs to the end
        ("<>", []),
        ("", []),
        ("   ", []),
        ("single", ["single"]),
        ("a, ", ["a", ""]),
        ("Cmp<&X::operator<, 2>, y", ["Cmp<&X::operator<, 2>", "y"]),
        ("<-2, -1, 128>", ["-2", "-1", "128"]),
    ],
)
def test_split_template_args(text, args):
    assert split_template_args(text) == args


@pytest.mark.parametrize(
    "text, stripped",
    [
        ("at::native::sum_functor<float, float, float>::operator()", "at::native::sum_functor::operator()"),
        ("at::native::vectorized_elementwise_kernel", "at::native::vectorized_elementwise_kernel"),
        ("a<b<c>, d>::e<f>", "a::e"),
        ("X::operator<", "X::operator<"),
        ("X::operator<<<int>", "X::operator<<"),
        ("at::native::<unnamed>::offset_t", "at::native::(anonymous namespace)::offset_t"),
        ("foo<4, at", "foo"),
        ("", ""),
    ],
)
def test_strip_templates(text, stripped):
    assert strip_templates(text) == stripped


# --- memory operations and host-side names ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, kind, detail_start",
    [
        ("Memcpy HtoD (Pageable -> Device)", "memcpy", "host-to-device memory copy"),
        ("Memcpy HtoD (Pinned -> Device)", "memcpy", "host-to-device memory copy"),
        ("Memcpy DtoH (Device -> Pageable)", "memcpy", "device-to-host memory copy"),
        ("Memcpy PtoP (Device -> Device)", "memcpy", "peer-to-peer memory copy"),
        ("Memset (Device)", "memset", "device memory fill"),
        ("Memset (Unknown)", "memset", "device memory fill"),
        ("[CUDA memcpy Host-to-Device]", "memcpy", "host-to-device memory copy"),
        ("[CUDA memcpy DtoH]", "memcpy", "device-to-host memory copy"),
        ("[CUDA memcpy Device-to-Device]", "memcpy", "device-to-device memory copy"),
        ("[CUDA memset]", "memset", "device memory fill"),
        ("MemcpyH2D", "memcpy", "host-to-device memory copy"),
        ("cudaMemcpyAsync", "memcpy", "host-side call cudaMemcpyAsync"),
        ("cuMemcpyHtoDAsync_v2", "memcpy", "host-side call cuMemcpyHtoDAsync"),
        ("cudaMemsetAsync", "memset", "host-side call cudaMemsetAsync"),
        ("cudaLaunchKernel", "unknown", "host-side API call cudaLaunchKernel"),
        ("cudaStreamSynchronize_v3020", "unknown", "host-side API call cudaStreamSynchronize"),
        ("ncclAllReduce", "unknown", "host-side API call ncclAllReduce"),
        ("aten::add.Tensor", "unknown", "operator name aten::add.Tensor"),
        ("                         Memcpy DtoD (Device -> Device)         0.00%       0.000us", "memcpy",
         "device-to-device memory copy"),
    ],
)
def test_non_kernels(name, kind, detail_start):
    k = parse_kernel_name(name)
    assert (k.kind, k.function, k.library, k.functors, k.lambdas) == (kind, "", None, (), ())
    assert k.detail.startswith(detail_start), k.detail


def test_copy_details_mention_memory_kind():
    assert "pageable (not pinned)" in parse_kernel_name("Memcpy HtoD (Pageable -> Device)").detail
    assert "pinned" in parse_kernel_name("Memcpy HtoD (Pinned -> Device)").detail
    assert "the CPU waits" in parse_kernel_name("Memcpy DtoH (Device -> Pageable)").detail


def test_unknown_text():
    k = parse_kernel_name("hello world")
    assert (k.kind, k.library, k.detail) == ("unknown", None, "not recognised as a kernel name")
    assert parse_kernel_name("(((").kind == "unknown"
    assert parse_kernel_name("::").function == ""


# --- errors and bounded work -----------------------------------------------------------------------------------


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_empty_name_raises(empty):
    with pytest.raises(AtenmapError, match="empty kernel name"):
        parse_kernel_name(empty)


def test_long_input_is_cut_with_a_note():
    k = parse_kernel_name("void at::native::foo_kernel<" + "int, " * MAX_NAME_CHARS + "int>(int)")
    assert k.truncated and k.qualname == "at::native::foo_kernel"
    assert len(k.demangled) <= MAX_NAME_CHARS
    assert any("only the first" in n for n in k.notes)


PATHOLOGICAL = {
    "open angles": "void f" + "<a" * 40000,
    "balanced deep": "void f" + "<a" * 20000 + ">" * 20000,
    "open parens": "(" * 65000,
    "closers": ")>]}" * 16000,
    "deep lambdas": "".join(f"a::f{i}(x)::{{lambda(" for i in range(3000)) + ")#1}" * 3000,
    "many args": "f<" + ", ".join(["a::b<c>"] * 8000) + ">(int)",
    "operators": "operator<" * 7000,
    "colons": "::" * 30000,
    "spaces": "a" + " " * 60000 + "1",
    "space run": "a" + " " * 60000 + "b",
    "mangled": "_Z" + "N2at" * 16000,
}


@pytest.mark.parametrize("case", sorted(PATHOLOGICAL))
def test_pathological_input_is_read(case):
    """Read without error, within the caps (how fast: bench/bench_guards.py)."""
    k = parse_kernel_name(PATHOLOGICAL[case])
    assert k.kind in KINDS
    assert len(k.lambdas) <= reader._MAX_LAMBDAS and len(k.functors) <= reader._MAX_FUNCTORS


def test_deep_nesting_is_noted():
    k = parse_kernel_name("void f<" + "a<" * (MAX_NESTING + 10) + "b" + ">" * (MAX_NESTING + 11) + "(int)")
    assert any("nested deeper than" in n for n in k.notes)


_FUZZ_TOKENS = [
    "<", ">", "(", ")", "[", "]", "{", "}", "::", ",", " ", "#1", "lambda(", "{lambda()#2}", "operator()",
    "operator<", "operator>>", " const", "&", "*", "...", "…", "(anonymous namespace)", "<unnamed>", "at", "native",
    "void ", "int", "float", "cub", "cublas", "cudnn", "thrust", "nccl", "Kernel", "triton_poi_", "_Z", "N2at", "E",
    "Memcpy ", "DtoD", " (Device -> Device)", "Memset", "[CUDA memcpy", "]", "4ul", "-2", "(int)", "T1", "\n", "\t",
    "é", "\x00", "😀", "  ", "0.00%", "sm80_xmma_gemm_", "->", "=", "$", "~", "'", '"', "\\",
]


def _fuzz_strings(count: int, seed: int):
    rng = random.Random(seed)
    alphabet = "<>(){}[]:,#&*. _-=$~'\"\\aZz09\n\té😀\x00"
    real = [ADD, SUM, SOFTMAX, RADIX, SGEMM_XMMA, COPY, SOFTMAX_BWD, EXP, NCU_MUL, *RULE_FIXTURES.values()]
    for i in range(count):
        mode = i % 4
        if mode == 0:
            yield "".join(rng.choice(_FUZZ_TOKENS) for _ in range(rng.randint(1, 60)))
        elif mode == 1:
            yield "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        elif mode == 2:  # a real name, cut and mutated
            s = list(rng.choice(real))
            for _ in range(rng.randint(1, 8)):
                op = rng.random()
                pos = rng.randrange(len(s)) if s else 0
                if op < 0.4 and s:
                    del s[pos]
                elif op < 0.8:
                    s.insert(pos, rng.choice(alphabet))
                else:
                    s = s[: pos + 1]
            yield "".join(s)
        else:
            yield "".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 80)))


def test_fuzz_never_raises():
    for text in _fuzz_strings(4000, seed=20240607):
        if not text.strip():
            with pytest.raises(AtenmapError):
                parse_kernel_name(text)
            continue
        k = parse_kernel_name(text)
        assert k.raw == text
        assert k.kind in KINDS
        assert isinstance(k.function, str) and isinstance(k.qualname, str)
        assert all(isinstance(a, str) for a in k.template_args)
        assert all(isinstance(f, str) and f for f in k.functors)
        assert all(isinstance(x, LambdaRef) for x in k.lambdas)
        assert (k.library is not None) == (k.kind == "library")
        assert k.detail


def test_fuzz_mangled_names_never_raise():
    rng = random.Random(7)
    names = ["_Z" + "".join(rng.choice("NESILTZ0123456789_abcvfiE") for _ in range(rng.randint(0, 120))) for _ in range(150)]
    out = demangle_many(names)
    assert len(out) == len(names)
    for name in names:
        assert parse_kernel_name(name).kind in KINDS


@pytest.mark.parametrize("name, params", [
    ("void at::native::(anonymous namespace)::adaptivemaxpool<float>(float const*, float*, long*, int, long)", 5),
    ("void g<(anonymous namespace)::X<int, 2> >(std::array<char*, 3ul>, int)", 2),
    ("k()", 0), ("void f<int>(void)", 0), ("reduction_prod_kernel", None),
])
def test_the_parameters_a_name_shows_are_counted(name, params):
    # commas inside template arguments are not parameters; a name without a list says nothing
    assert parse_kernel_name(name).params == params
