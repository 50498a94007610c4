"""The reverse score of issue 20 on the real 2.6.0 tree: every kernel name PyTorch's OpInfo database ran
on an H200 (fixtures/oracle) is looked up as a user would, and the operators atenmap ranks are compared
with the ops the oracle saw launch it (bench/bench_reverse.py; what is right comes from the oracle only).
The floors sit a little below today's measurement and only go up. Targets (issue 20): in-tree, launching
op first >= 90 % and in the first three >= 97 %; library, named >= 95 % and op in the first three >= 85 %."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from .conftest import REPO

pytestmark = pytest.mark.realtree

# measured 2026-12-04, raised 2026-12-06 and 2026-12-07 for issue 38 (docs/kernels.md has the tables): fp32 names
FLOORS = {
    ("in-tree float32", "source"): 98.0,  # 98.7
    ("in-tree float32", "first_base"): 91.9,  # 92.3 (90.5 before the library round, 90.3 before issue 38)
    ("in-tree float32", "top3_base"): 98.2,  # 98.5 (97.8 before the library round, 97.1 before issue 38)
    ("in-tree bfloat16", "top3_base"): 97.9,  # 98.2 (97.4 before the library round; 95.1)
    ("in-tree bfloat16", "first_base"): 91.4,  # 91.8 (89.7 before the library round; 89.2)
    ("library float32", "library"): 99.5,  # 100.0 (99.2 before the jiterator kernels were named as NVRTC's; 96.0)
    ("library float32", "top3_base"): 90.0,  # 90.5 (86.5 before issue 38's fourth round; 76.2)
    # by overload, as the oracle records it: 90.5 / 90.2 after issue 38's Truth IV (87.2 / 86.9 after
    # Note [Plain calls of a kernel], 76.6 / 74.5 before), in the first three 96.5 / 95.9
    ("in-tree float32", "first"): 90.0,
    ("in-tree bfloat16", "first"): 89.7,
    ("in-tree float32", "top3"): 96.0,
    ("in-tree bfloat16", "top3"): 95.4,
    ("library bfloat16", "library"): 99.5,  # 100.0 (95.7)
    ("library bfloat16", "top3_base"): 95.0,  # 95.7 (82.6 before issue 38's fourth round)
}


@pytest.fixture(scope="module")
def reverse(real_index_26, shared_cache, tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_reverse", REPO / "bench" / "bench_reverse.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_reverse"] = bench
    spec.loader.exec_module(bench)
    out = tmp_path_factory.mktemp("reverse") / "reverse.json"
    mp = pytest.MonkeyPatch()
    mp.setenv("ATENMAP_CACHE", str(shared_cache))  # the index real_index_26 built
    try:
        assert bench.main(["--tree", real_index_26.source.root, "--json", str(out)]) == 0
    finally:
        mp.undo()
    return json.loads(out.read_text())


@pytest.mark.parametrize("row,column", sorted(FLOORS))
def test_reverse_score_floors(reverse, row, column):
    cell = reverse["table"][row]
    assert cell[column] >= FLOORS[(row, column)], (row, column, cell)


# issue 38's plain rule (a kernel whose function name is no token of the tree is a library's), measured
# 2026-12-07: the jiterator kernels named as NVRTC's (Note [Jiterator kernels are named as NVRTC's]) took
# "library named" from 71.4 / 73.1 % to 97.1 / 94.0 %; what is left is ATen's own kernels of a newer
# torch (CatArrayBatchedCopy_alignedK_contig), which no library runs
PLAIN_FLOORS = {
    ("library float32", "library"): 96.5,  # 97.1
    ("library bfloat16", "library"): 93.5,  # 94.0
    ("library float32", "top3_base"): 92.0,  # 92.4
    ("memory float32", "library"): 100.0,
}


@pytest.fixture(scope="module")
def reverse_plain(real_index_26, shared_cache, tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_reverse", REPO / "bench" / "bench_reverse.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path_factory.mktemp("reverse") / "reverse_plain.json"
    mp = pytest.MonkeyPatch()
    mp.setenv("ATENMAP_CACHE", str(shared_cache))  # the index real_index_26 built
    try:
        assert bench.main(["--tree", real_index_26.source.root, "--rule", "plain", "--json", str(out)]) == 0
    finally:
        mp.undo()
    return json.loads(out.read_text())


@pytest.mark.parametrize("row,column", sorted(PLAIN_FLOORS))
def test_reverse_plain_rule_floors(reverse_plain, row, column):
    cell = reverse_plain["table"][row]
    assert cell[column] >= PLAIN_FLOORS[(row, column)], (row, column, cell)


def test_jiterator_kernels_name_nvrtc(real_index_26):
    # Note [Jiterator kernels are named as NVRTC's]: a jitted reduction is reduction_template.cuh's
    # `reduction_${name}_kernel`, from jitted_gpu_reduce_kernel<prod_name, ...>
    m = real_index_26.kernel("reduction_prod_kernel")
    assert (m.library, m.family) == ("jiterator", "reduction")
    assert [(s.file, s.line) for s in m.functors][:1] == [("aten/src/ATen/native/cuda/ReduceSumProdKernel.cu", 94)]
    assert m.hits[0].op == "aten::prod"
    # mul's complex-half string: its jitted call after a `jiterator_stringify(template ...)` in the function
    # is read (Note [Jiterator code is a string]), so the jit line is that call's
    m = real_index_26.kernel("mul_kernel_vectorized4_kernel")
    assert m.library == "jiterator"
    assert [(s.file, s.line) for s in m.functors][:1] == [("aten/src/ATen/native/cuda/BinaryMulKernel.cu", 29)]
    assert m.hits[0].op == "aten::mul.Tensor"
    m = real_index_26.kernel("lgamma_kernel_vectorized4_kernel")
    assert m.library == "jiterator" and m.functors[0].symbol == 'lgamma_name = "lgamma_kernel"'


def _answer(reverse, fragment: str) -> list[list[str]]:
    return [r["verdict"]["answer"] for r in reverse["names"] if fragment in r["kernel"]]


@pytest.mark.parametrize("fragment,first", [
    ("CUDAFunctor_add<float>, std::array<char*, 3ul> >(int", "aten::add.Tensor [CUDA]"),  # before index_select
    ("hardsigmoid_kernel(at::TensorIteratorBase&)", "aten::hardsigmoid [CUDA]"),  # a lambda in an anonymous namespace
    ("log10_kernel_cuda", "aten::log10 [CUDA]"),  # log10 before log
    ("uniform_and_transform<float, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::uniform_kernel",
     "aten::uniform_ [CUDA]"),  # UniformStub handed to uniform_impl_ as a template argument
    ("lgamma_kernel_vectorized4_kernel", "aten::lgamma [CUDA]"),  # a jiterator kernel
    ("sm80_xmma_gemm_f32f32_f32f32_f32_", "aten::mm [CUDA]"),  # cuBLAS: mm before _int_mm and _scaled_mm
    ("softmax_warp_forward<float, float, float, 3, true, false>", "aten::_log_softmax [CUDA]"),  # template flags
    ("softmax_warp_backward<float, float, float, 3, false, false>", "aten::_softmax_backward_data [CUDA]"),
    ("ReduceOp<float, at::native::NormTwoOps<float, float, float, true>, unsigned int, float, 4, 4> >(at:",
     "aten::linalg_vector_norm [CUDA]"),  # norm reaches it through linalg_vector_norm
    ("BUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >",
     "aten::div.Tensor [CUDA]"),  # div_true_kernel_cuda builds BUnaryFunctor<MulFunctor> itself
    # Note [Plain calls of a kernel]: index_select_cuda calls index_select_out_cuda, where calls
    # at::native::where_self_out, nonzero_cuda nonzero_out_cuda: a profile records the functional op
    ("indexSelectSmallIndex<float, long, unsigned int, 1, 1, -2>", "aten::index_select [CUDA]"),
    ("where_kernel_impl(at::TensorIterator&)::{lambda()#1}", "aten::where.self [CUDA]"),
    ("write_indices<long>", "aten::nonzero [CUDA]"),
    ("max_unpooling2d_forward_kernel<float>", "aten::max_unpool2d [CUDA]"),
    # Note [Stubs of one name]: cpublas::copy_stub is not the copy_stub copy_kernel_cuda is registered for
    ("direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}", "aten::copy_ [CompositeExplicitAutograd]"),
    # cat is structured_delegate cat.out with keys of its own (SparseCUDA...): its CUDA key is kept
    ("CatArrayBatchedCopy_alignedK_contig<at::native::(anonymous namespace)::OpaqueType<4u>", "aten::cat [CUDA]"),
    # issue 38, Truth IV: which overload the name says. Note [Overloads a kernel's name says]
    ("random_from_to_kernel<at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, unsigned long, long", "aten::random_.from [CUDA]"),
    ("bernoulli_tensor_cuda_kernel<float, float>", "aten::bernoulli_.Tensor [CUDA]"),
    # Note [A kernel function's parameters mirror its overload]: normal_kernel(self, mean, std) is normal_'s
    ("normal_and_transform<float, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<",
     "aten::normal_ [CUDA]"),
    # Note [Joining words that name an operator]
    ("logical_and_kernel_cuda(at::TensorIterator&)::{lambda()#2}::operator()() const::{lambda()#7}",
     "aten::logical_and.out [CUDA]"),
    # Note [Template flags of a functor]: _cuda_scatter_gather_internal_kernel<is_scatter_like = false, ...>
    ("_cuda_scatter_gather_internal_kernel<false, at::native::OpaqueType<4>, int>", "aten::gather [CUDA]"),
    # Note [Template arguments handed down by callers]: tril_cuda hands triu_tril_cuda_template<false>
    ("triu_tril_kernel<float, int, false, 2, false>", "aten::tril [CUDA]"),
    ("triu_tril_kernel<float, int, false, 2, true>", "aten::tril_ [CUDA]"),  # Note [A kernel's inplace flag]
    ("triu_tril_kernel<float, int, true, 2, true>", "aten::triu_ [CUDA]"),
    ("masked_scale_kernel<bool, float, float>", "aten::native_dropout_backward [CUDA]"),  # dropout_backward_cuda<bool>
    # Note [Operands a loop functor takes]: CompareFunctor::operator()(a, b), two device inputs
    ("gpu_kernel_impl_nocast<at::native::(anonymous namespace)::CompareFunctor<float> >", "aten::ge.Tensor [CUDA]"),
])
def test_first_operator_of_real_patterns(reverse, fragment, first):
    answers = _answer(reverse, fragment)
    assert answers and all(a[:1] == [first] for a in answers), answers[:3]


@pytest.mark.parametrize("fragment,first,three", [
    # two functors: ne shares CompareEqFunctor with eq only, fmax only the BinaryFunctor wrapper
    ("BinaryFunctor<int, int, bool, at::native::(anonymous namespace)::CompareEqFunctor<int> >", "aten::eq",
     "aten::ne"),
    # sub runs add_stub: CUDAFunctor_add spells add, sub reaches it as closely (a tie, said in the reason)
    ("CUDAFunctor_add<float>, std::array<char*, 3ul>, 4, TrivialOffsetCalculator", "aten::add", "aten::sub"),
    # SmallBitonicSort::sort is no composite sort's kernel: the walk reaches topk
    ("bitonicSortKVInPlace<-1, -1, 16, 16, float, long, at::native::GTOp<float, true>", None, "aten::topk"),
    # a function handed by address is no functor
    ("upsample_nearest1d_out_frame<float, &at::native::nearest_neighbor_compute_source_index>",
     "aten::upsample_nearest1d", None),
    # cuBLAS routines ATen never calls run inside MAGMA/cuSOLVER; typeless solver helpers keep typed calls
    ("trmv_kernel_64addr<int, float, 512, true, false, false>", "aten::linalg_eig", None),
    ("unblocked_LDinv_UDinv_kernel<float>", "aten::linalg_ldl_factor_ex", None),
    ("cusolverDnXfill_kernel<int>", "aten::linalg_eig", None),
    ("kernel::init_scales_blocks_list<512l, 64l>", "aten::linalg_eig", None),
    # LAPACK words: xxtrf any factorization, laswp LU's row swaps (factor and solve), ormqr
    ("xxtrf4_set_info_ker", "aten::cholesky", "aten::linalg_lu_factor_ex"),
    ("laswp_kernel<float, false>", None, "aten::linalg_lu_solve"),
    # a cuDNN layout transform runs around any cuDNN convolution: forward, transposed, backward
    ("nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true", None, "aten::cudnn_convolution_transpose"),
    # Note [Householder steps]: larfg serves geev's Hessenberg reduction as well as QR
    ("larfg_kernel_fast<float, float, 6>", "aten::linalg_qr", "aten::linalg_eig"),
    ("set_tau_from_block_householders<float, 256l>", "aten::linalg_qr", "aten::linalg_eig"),
    # Note [Solves run trsm]: getrsBatched runs cuBLAS's batched trsm for lu_solve
    ("batch_trsm_left_kernel<float, 64, 4, 3, false, false, false>", "aten::triangular_solve", "aten::linalg_lu_solve"),
    ("ormqr_cta_kernel<float, 4, 1>", "aten::ormqr", None),
    # CUB: the policy names the algorithm; DeviceSelect::Unique is a selection
    ("DeviceReduceByKeyKernel<at_cuda_detail::cub::detail::rle::encode::policy_hub<long, long>",
     "aten::unique_consecutive", None),
    ("select::policy_hub<float, at_cuda_detail::cub::NullType, int, false", None, "aten::_unique"),
    ("radix::policy_hub<float, at_cuda_detail::cub::NullType, unsigned long long>", None, "aten::_unique"),
])
def test_operators_of_real_patterns(reverse, fragment, first, three):
    answers = _answer(reverse, fragment)
    assert answers, fragment
    for a in answers:
        ops = [x.split(" ")[0].split(".")[0] for x in a]
        assert first is None or ops[0] == first, a
        assert three is None or three in ops[:3], a
        assert "aten::tile" not in ops  # a CUB kernel's own words (SingleTile) name no operator


def test_a_shared_functor_says_it_cannot_tell(real_index_26):
    m = real_index_26.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                             "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    sub = next(h for h in m.hits if h.op.startswith("aten::sub"))
    assert "cannot tell them apart" in sub.reason and sub.step == m.hits[0].step


def test_library_kernels_say_their_family_and_calls(real_index_26):
    m = real_index_26.kernel("sm80_xmma_dgrad_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3"
                             "_warpsize1x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn")
    assert (m.library, m.family, m.dtype) == ("cuDNN", "conv dgrad", "float")
    assert m.hits[0].op == "aten::cudnn_convolution_transpose"
    m = real_index_26.kernel("ampere_sgemm_128x64_nn")
    calls = {s.symbol for s in m.library_calls}
    assert {"cublasSgemm", "cublasGemmEx", "cublasLtMatmul"} <= calls and "cublasDgemm" not in calls
    assert all(s.file == "aten/src/ATen/cuda/CUDABlas.cpp" or s.file.startswith("aten/") for s in m.library_calls)
    ops = [h.op for h in m.hits]
    assert ops.index("aten::mm") < ops.index("aten::_int_mm") if "aten::_int_mm" in ops else True


def test_aten_helpers_are_no_library_calls(real_index_26):
    # magma_int_cast (native/cuda/linalg/MagmaUtils.h) is ATen's, though named like MAGMA's routines
    m = real_index_26.kernel("magma_iset_pointer_kernel(int**, int*, int, int, int, int, int)")
    assert m.library == "MAGMA" and m.library_calls
    assert not [s for s in m.library_calls if s.symbol.endswith("magma_int_cast")]
    assert not any("the kernel's own code" in h.reason for h in m.hits)


def test_a_kernel_handed_to_a_callback_finds_its_launch_and_operator(real_index_26):
    # Note [Kernels passed to a callback]: no launch names fmha_cutlassF_* (the launch is
    # `kernel_fn<<<...>>>`); the dispatcher's table hands it to the lambda that launches it
    m = real_index_26.kernel("fmha_cutlassF_f32_aligned_64x64_rf_sm80(AttentionKernel<float, cutlass::arch::Sm80, "
                             "true, 64, 64, 64, true, true>::Params)")
    assert [(s.file, s.line) for s in m.launches] == [("aten/src/ATen/native/transformers/cuda/attention.cu", 1383)]
    assert m.launches[0].symbol.startswith("fmha_cutlassF_f32_aligned_64x64_rf_sm80<<<")
    assert m.hits[0].op == "aten::_efficient_attention_forward"
    m = real_index_26.kernel("fmha_cutlassB_f32_aligned_64x64_k32_sm80")
    assert m.hits[0].op == "aten::_efficient_attention_backward" and m.launches[0].line == 745


def test_a_true_flag_names_the_log_softmax_backward(real_index_26):
    # Note [Template flags of a kernel]: is_log_softmax at the true (the half/backward oracle's name)
    m = real_index_26.kernel("void (anonymous namespace)::softmax_warp_backward<float, float, float, 2, true, false>"
                             "(float*, float const*, float const*, int, int, int, bool const*)")
    assert m.hits[0].op == "aten::_log_softmax_backward_data"


def test_an_out_forms_overload_name_is_its_output_not_the_overload(real_index_26):
    # Note [Overloads a kernel's name says]: avg_pool3d_backward.grad_input is named after its out= tensor,
    # which the kernel's name says too (it writes grad_input): the functional overload stays first
    m = real_index_26.kernel("void at::native::(anonymous namespace)::avg_pool3d_cuda_update_grad_input<float, float>"
                             "(at::PackedTensorAccessor64<float const, 4ul, at::DefaultPtrTraits>, "
                             "at::PackedTensorAccessor64<float, 4ul, at::DefaultPtrTraits>, int, int, int, int, int, "
                             "int, int, int, int, bool, int, int)")
    assert [h.op for h in m.hits][:2] == ["aten::avg_pool3d_backward", "aten::avg_pool3d_backward.grad_input"]
