"""Reverse lookup ranking (issue 20): what a kernel name says -> operators ranked like a person would.

Pure parts (resolve/ranking.py, resolve/kernelname/encoding.py) are tested on names as profilers print
them; the lookup itself on the fixture tree (fixtures/pytorch-mini)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from atenmap.cli import main
from atenmap.model import Step
from atenmap.model_answers import KernelMatch, OperatorHit
from atenmap.resolve.kernelflags import flag_idents, launch_template_args
from atenmap.resolve.kernelname import parse_kernel_name
from atenmap.resolve.kernelname.encoding import call_dtype, dtype_of, family_of, guess_vendor
from atenmap.resolve.ranking import Candidate, name_words, rank_key, spelled, std_words
from atenmap.views.kernel import kernel_lines

from .conftest import FIXTURE_TREE


def _order(ops: list[tuple[str, str]], own: list[str], function: str = "", dist: dict | None = None) -> list[str]:
    """The ops (name, key) ranked for a kernel whose own code is named ``own``."""
    cands = [Candidate(op, key, (dist or {}).get(op, 1), 0) for op, key in ops]
    o, f = name_words(own), name_words([function])
    return [c.op for c in sorted(cands, key=lambda c: rank_key(c, o, f))]


def test_words_of_a_name():
    assert {"add"} <= set(name_words(["CUDAFunctor_add"])) and "cuda" not in name_words(["CUDAFunctor_add"])
    words = name_words(["LogSoftMaxForwardEpilogue"])
    assert {"log", "soft", "max", "softmax", "logsoftmax"} <= set(words)
    assert {"log", "log10"} <= set(name_words(["log10_kernel_cuda"]))
    assert set(std_words("void f<std::plus<float> >(int)")) == {"sum", "add"}
    assert spelled("native_group_norm", set(name_words(["GroupNormKernelImplInternal"])))
    assert not spelled("index_select", set(name_words(["CUDAFunctor_add"])))


def test_what_the_name_spells_comes_before_distance():
    # CUDAFunctor_add is also reached by index_select on SparseCUDA, as closely
    ops = [("index_select", "SparseCUDA"), ("sub.Tensor", "CUDA"), ("add.out", "CUDA"), ("add.Tensor", "CUDA")]
    assert _order(ops, ["CUDAFunctor_add"], dist={"index_select": 0})[:2] == ["add.Tensor", "add.out"]


def test_functional_then_inplace_then_out():
    ops = [("mul.out", "CUDA"), ("mul_.Tensor", "CUDA"), ("mul.Tensor", "CUDA")]
    assert _order(ops, ["MulFunctor"]) == ["mul.Tensor", "mul_.Tensor", "mul.out"]


def test_device_key_before_composite_before_other_devices():
    ops = [("mul.Tensor", "SparseCUDA"), ("mul.Tensor", "CompositeExplicitAutograd"), ("mul.Tensor", "CUDA")]
    cands = [Candidate(op, key, 1, 0) for op, key in ops]
    words = name_words(["MulFunctor"])
    assert [c.key for c in sorted(cands, key=lambda c: rank_key(c, words, {}))] == [
        "CUDA", "CompositeExplicitAutograd", "SparseCUDA"]


def test_the_name_says_first_then_longer():
    assert _order([("floor", "CUDA"), ("div.Tensor_mode", "CUDA")], ["div_floor_kernel_cuda"])[0] == "div.Tensor_mode"
    assert _order([("log", "CUDA"), ("log10", "CUDA")], ["log10_kernel_cuda"])[0] == "log10"
    assert _order([("normal_", "CUDA"), ("log_normal_", "CUDA")], ["log_normal_kernel"])[0] == "log_normal_"
    # the __global__ function's words help the functor's: indexFuncSmallIndex<..., ReduceAdd>
    assert _order([("add.out", "CUDA"), ("index_add.out", "CUDA")], ["ReduceAdd"], "indexFuncSmallIndex")[0] == \
        "index_add.out"
    # a word of the functor inside a name: std::plus in a scan -> cumsum before logcumsumexp
    cands = [Candidate("_logcumsumexp", "CUDA", 1, 0), Candidate("cumsum", "CUDA", 1, 0)]
    own = std_words("tensor_kernel_scan_outer_dim<float, unsigned int, std::plus<float> >")
    assert min(cands, key=lambda c: rank_key(c, own, {})).op == "cumsum"


@pytest.mark.parametrize("name,dtype,family", [
    ("ampere_sgemm_128x64_nn", "float", "gemm"),
    ("volta_h1688gemm_128x128_ldg8_nn", "half", "gemm"),
    ("ampere_s1688gemm_fp32_128x128_nn", "tf32", "gemm"),
    ("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn", "bf16", "gemm"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>(int)", "float", "gemv"),
    ("cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>(int)", "bf16", "splitK reduce"),
    ("sm80_xmma_dgrad_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_warpsize1x2x1_g1_ffma"
     "_aligna4_alignc4_execute_kernel__5x_cudnn", "float", "conv dgrad"),
    ("void potrf_alg2_cta_upper<double2, double, 32>(int, int, double2*)", "double", "potrf"),
    ("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<at_cuda_detail::cub::detail::scan::policy_hub<"
     "float, float, float, unsigned int, std::plus<float> >::Policy1000>(int)", "float", "scan"),
    ("void at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel<at_cuda_detail::cub::ScanTileState<int, "
     "true>, int*>(int)", "int32", "selection"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul> >(int)", "bf16", "elementwise"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MaxOps<float>, unsigned int, "
     "float, 4, 4> >(int)", "float", "reduction"),
])
def test_family_and_dtype_from_the_name(name, dtype, family):
    k = parse_kernel_name(name)
    assert (family_of(k), dtype_of(k)) == (family, dtype)


def test_call_dtypes():
    assert [call_dtype(c) for c in ("cublasSgemm", "cublasDgemmStridedBatched", "cublasGemmEx", "cublasLtMatmul",
                                    "at::cuda::blas::int8_gemm", "magma_zgetrf_gpu", "cusolverDnXpotrf")] == \
        ["float", "double", "", "", "int8", "complex128", ""]


def test_vendor_kernels_of_no_namespace():
    assert guess_vendor(parse_kernel_name("void ipiv_lower_diag<float, 32>(int, void*, int, int*, int)")) == \
        ("cuSOLVER", "getrf", True)
    assert guess_vendor(parse_kernel_name("void preprocess_kernel<float>(real_complex_args_t<unsigned int>)"))[:2] == \
        ("cuFFT", "fft")
    # no routine in the name: a guess, and said to be one
    assert guess_vendor(parse_kernel_name("void find_nan_kernel<256l, float>(long, float const*, long, int*)")) == \
        ("cuSOLVER", "", False)
    assert guess_vendor(parse_kernel_name("void my_kernel(int*, long)")) is None


def test_a_lambda_that_wraps_another_is_loop_machinery():
    k = parse_kernel_name(
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::pow_kernel("
        "at::TensorIteratorBase&)::{lambda(float, float)#1}>(at::TensorIteratorBase&, at::native::pow_kernel("
        "at::TensorIteratorBase&)::{lambda(float, float)#1} const&)::{lambda(int)#1}>(int)")
    wraps = {lam.enclosing_name: lam.wraps for lam in k.lambdas}
    assert wraps == {"pow_kernel": False, "gpu_kernel_impl_nocast": True}


# ---- the lookup on the fixture tree ------------------------------------------------------------------

def test_jiterator_kernel_on_fixture(mini_index):
    # jitted_gpu_kernel</*name=*/mini_lgamma_name, ...> with mini_lgamma_name = "mini_lgamma_kernel"
    for name in ("mini_lgamma_kernel_vectorized4_kernel", "mini_lgamma_kernel_kernel"):
        m = mini_index.kernel(name)
        jit = [s for s in m.functors if s.role == "jit"]
        assert jit and jit[0].file == "aten/src/ATen/native/cuda/FunctorObjects.cu" and jit[0].line == 54
        assert m.hits[0].op == "aten::mini_functors.out" and m.hits[0].step == jit[0]
        # Note [Jiterator kernels are named as NVRTC's]: no file holds the name, so the answer's first
        # line names what compiled it, as for a library's kernel; the ATen source stays the jit step
        assert (m.library, m.family) == ("jiterator", "elementwise")
        assert kernel_lines(m)[0] == f"kernel: {name}  [library: jiterator, elementwise]"
        assert m.notes[0].startswith("jiterator kernel (elementwise): ATen's code, compiled by NVRTC at run time")


def test_a_jiterator_shape_with_no_string_in_the_tree(mini_index):
    # the vectorized shape only jit_utils.cpp makes, its string absent: named by the shape, with the
    # line naming the tree's version (Note [Code of another version])
    m = mini_index.kernel("mini_newer_op_vectorized4_kernel")
    assert m.library == "jiterator" and m.version_note and 'jiterator string "mini_newer_op"' in m.version_note
    # a plain `<name>_kernel` says nothing by its shape: not a jiterator kernel without its string
    assert mini_index.kernel("mini_unknown_thing_kernel").library is None
    # a name with a parameter list or a namespace is a compiled __global__ function, never NVRTC's
    assert mini_index.kernel("mini_newer_op_vectorized4_kernel(int*)").library is None


def test_library_kernel_on_fixture(mini_index):
    m = mini_index.kernel("ampere_sgemm_128x64_nn")
    assert (m.library, m.family, m.dtype) == ("cuBLAS", "gemm", "float")
    calls = {(s.symbol, s.file, s.line) for s in m.library_calls}
    assert ("cublasSgemm", "aten/src/ATen/cuda/MiniBlas.cpp", 24) in calls
    assert m.hits and all(h.step is not None and h.step.file for h in m.hits)
    assert {h.op for h in m.hits[:3]} & {"aten::mm", "aten::mm.out", "aten::addmm"}


def test_hits_and_json(mini_index, capsys):
    m = mini_index.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, "
                          "std::array<char*, 3ul> >(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")
    assert isinstance(m, KernelMatch) and isinstance(m.hits[0], OperatorHit)
    assert m.operators == tuple(h.label() for h in m.hits)
    d = m.to_dict()
    assert d["family"] == "elementwise" and d["dtype"] == "float"
    assert d["operators"][0] == {"op": "aten::mul.Tensor", "key": "CUDA", "step": m.hits[0].step.to_dict(),
                                 "reason": m.hits[0].reason}
    assert OperatorHit("aten::add.out", "CUDA", None, "r").to_dict() == {
        "op": "aten::add.out", "key": "CUDA", "step": None, "reason": "r"}
    assert OperatorHit("aten::add.out", "CUDA", Step.make("call", "f", "a.cu", 3), "").label() == "aten::add.out [CUDA]"


def test_text_fits_the_terminal(capsys, monkeypatch):
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
            "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")
    monkeypatch.setenv("COLUMNS", "60")
    with pytest.raises(SystemExit) as exc:
        main(["kernel", "-s", str(FIXTURE_TREE), name])
        raise SystemExit(0)
    assert exc.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out and max(len(ln) for ln in out) <= 60
    assert any(ln.lstrip().startswith("1. aten::mul.Tensor [CUDA]") for ln in out)
    assert any(ln.lstrip().startswith("at ") and "BinaryMulKernel.cu:9" in ln for ln in out)  # the step it reaches
    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit):
        main(["kernel", "-s", str(FIXTURE_TREE), "--json", name])
        raise SystemExit(0)
    assert json.loads(capsys.readouterr().out)["operators"][0]["op"] == "aten::mul.Tensor"


def test_a_plain_call_of_another_operators_kernel_is_the_callers(mini_index):
    # mini_norm's kernel calls mini_vector_norm's kernel function as a plain C++ function
    # (at::native::mini_vector_norm_cuda, fixtures/pytorch-mini/.../cuda/MiniNorms.cu): no dispatcher is
    # crossed, so a profile of mini_norm records aten::mini_norm (Note [Plain calls of a kernel]); both
    # run one code, as close, and the functor spells mini_norm
    m = mini_index.kernel("void at::native::mini_norm_reduce_kernel<float, at::native::MiniNormTwoOps<float> >"
                          "(float*, float const*, int, at::native::MiniNormTwoOps<float>)")
    ops = [h.op for h in m.hits]
    assert ops[:2] == ["aten::mini_norm", "aten::mini_vector_norm"], ops
    assert "calls at::native::mini_vector_norm_cuda on the way, which skips the dispatcher" in m.hits[0].reason
    assert "records as the launching operator" not in m.hits[0].reason


def test_through_another_operator_comes_last():
    own, fn = name_words(["MiniNormTwoOps"]), name_words(["reduce_kernel"])
    inner = Candidate("vector_norm", "CUDA", 1, 0)
    outer = Candidate("norm", "CUDA", 1, 0, through="vector_norm")
    assert sorted([outer, inner], key=lambda c: rank_key(c, own, fn)) == [inner, outer]


def test_library_reasons_do_not_say_the_kernels_code(mini_index):
    m = mini_index.kernel("ampere_sgemm_128x64_nn")
    assert m.hits and not any("the kernel's own code" in h.reason for h in m.hits)


def test_launch_template_args_and_flags():
    text = ("#define LAUNCH(L2E)  \\\n      softmax_warp_forward<input_t, acc_t, L2E, is_log_softmax, is_masked>   \\\n"
            "            <<<blocks, threads, 0, stream>>>(dst, src);")
    args = launch_template_args(text, "softmax_warp_forward")
    assert args == ["input_t", "acc_t", "L2E", "is_log_softmax", "is_masked"]
    assert flag_idents(("float", "float", "3", "true", "false"), args) == (["is_log_softmax"], ["is_masked"])
    assert flag_idents(("float", "true"), args) == ([], [])  # positions must agree
    assert launch_template_args("x = softmax_warp_forward < 3;", "softmax_warp_forward") is None


def test_template_flags_pick_the_operator(mini_index):
    # mini_spread_warp_forward<T, is_log_spread, is_masked> launched in MiniNorms.cu (PersistentSoftmax.cuh)
    m = mini_index.kernel("void at::native::mini_spread_warp_forward<float, true, false>(float*, float const*, int)")
    ops = [h.op for h in m.hits]
    assert ops[0] == "aten::mini_log_spread" and ops[-1] == "aten::mini_masked_spread", ops
    m = mini_index.kernel("void at::native::mini_spread_warp_forward<float, false, false>(float*, float const*, int)")
    ops = [h.op for h in m.hits]
    assert ops[0] == "aten::mini_spread" and set(ops[1:]) == {"aten::mini_log_spread", "aten::mini_masked_spread"}


def test_the_code_that_makes_every_functor_ranks_first(mini_index):
    # mini_over_cuda builds MiniBUnaryFunctor<float, MiniTimesOp<float>> itself, mini_times_cuda only MiniTimesOp
    # (MiniNorms.cu): the name spells mul, but the division made it
    m = mini_index.kernel("void at::native::mini_elementwise<at::native::MiniBUnaryFunctor<float, "
                          "at::native::MiniTimesOp<float> > >(float*, float const*, int, "
                          "at::native::MiniBUnaryFunctor<float, at::native::MiniTimesOp<float> >)")
    ops = [h.op for h in m.hits]
    assert ops[:2] == ["aten::mini_over", "aten::mini_times"], ops
    m = mini_index.kernel("void at::native::mini_elementwise<at::native::MiniTimesOp<float> >"
                          "(float*, float const*, int, at::native::MiniTimesOp<float>)")
    assert [h.op for h in m.hits][0] == "aten::mini_times"


def test_camel_case_pieces_in_the_order_the_name_says_them():
    words = name_words(["CatArrayBatchedCopy_alignedK_contig"])
    assert words["cat"] < words["copy"] < words["aligned"]
    ops = [("copy", "CompositeExplicitAutogradNonFunctional"), ("cat", "CUDA")]
    assert _order(ops, [], "CatArrayBatchedCopy_alignedK_contig")[0] == "cat"


# ---- round three: patterns (fixtures/pytorch-mini/aten/src/ATen/native/cuda/MiniReverse.cu) -------------

_CMP = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, bool, "
        "at::native::(anonymous namespace)::CompareEqFunctor<float> >, std::array<char*, 3ul> >(int, "
        "at::native::BinaryFunctor<float, float, bool, at::native::(anonymous namespace)::CompareEqFunctor<float> >, "
        "std::array<char*, 3ul>)")


def test_operators_sharing_a_functor_tie_and_say_so(mini_index):
    # eq and ne both build CompareEqFunctor (compare_eq_ne_kernel); fmax reaches only the BinaryFunctor wrapper
    # that mini_gpu_kernel_with_scalars adds to every binary functor: the more specific step first
    m = mini_index.kernel(_CMP)
    ops = [h.op for h in m.hits]
    assert ops[:3] == ["aten::eq.Tensor", "aten::ne.Tensor", "aten::fmax"], ops
    assert "the kernel's name cannot tell them apart" in m.hits[1].reason and "aten::eq.Tensor" in m.hits[1].reason
    assert "cannot tell" not in m.hits[2].reason  # fmax reaches another step
    assert m.hits[0].step == m.hits[1].step and m.hits[0].step.symbol.endswith("CompareEqFunctor")


def test_a_more_specific_step_ranks_an_unspelled_operator_first():
    own, fn = name_words(["CompareEqFunctor"]), {}
    ne, fmax = Candidate("ne.Tensor", "CUDA", 1, 1), Candidate("fmax", "CUDA", 1, 2)
    assert sorted([fmax, ne], key=lambda c: rank_key(c, own, fn, shared={1: 2, 2: 30}[c.origin])) == [ne, fmax]
    # the operator the name spells stays first whatever its step's reach
    eq = Candidate("eq.Tensor", "CUDA", 1, 1)
    assert min([ne, eq], key=lambda c: rank_key(c, own, fn, shared=30 if c is eq else 1)) is eq


def test_a_method_is_no_operators_kernel(mini_index):
    # SmallBitonicSort::sort (Sorting.cu) launches the bitonic sort; the composite aten::sort's kernel is the free
    # function at::native::sort (MiniReverse.cu), which the method only shares a name with
    m = mini_index.kernel("void at::native::bitonicSortKVInPlace<-1, float, at::native::LTOp<float, true> >"
                          "(float*, int, at::native::LTOp<float, true>)")
    ops = [h.op for h in m.hits]
    assert ops[:1] == ["aten::topk.values"] and "aten::sort" not in ops, ops


def test_a_function_handed_by_address_is_no_functor(mini_index):
    # mini_upsample_template<mini_nearest_source_index> (FunctorObjects.cu): the helper's words (index,
    # source) name no operator of the kernel; its launch line does
    name = ("void at::native::mini_index_func_kernel<float, &at::native::mini_nearest_source_index>"
            "(float*, float const*, int, int (*)(float, int, int))")
    m = mini_index.kernel(name)
    assert not [s for s in m.functors if "mini_nearest_source_index" in s.symbol]
    assert [h.op for h in m.hits] == ["aten::mini_functors.out"]


def test_a_blas_routine_aten_never_calls_comes_from_a_solver(mini_index):
    # cuBLAS's trmv runs inside MAGMA's geev (Note [Routines ATen never calls]); mm's gemm stays cuBLAS's
    m = mini_index.kernel("void trmv_kernel_64addr<int, float, 512, true, false, false>(cublasTrmvParams<long, float>)")
    assert m.library == "cuBLAS"
    assert {s.symbol for s in m.library_calls} == {"magma_sgeev", "cusolverDnSgetrf", "cusolverDnSgetrs"}
    assert m.hits[0].op == "aten::linalg_eig" and m.hits[0].step.symbol == "magma_sgeev"
    gemm = mini_index.kernel("ampere_sgemm_128x64_nn")
    assert not {"aten::linalg_eig", "aten::linalg_lu_factor"} & {h.op for h in gemm.hits}


def test_a_typeless_solver_kernel_keeps_the_typed_calls(mini_index):
    # cusolverDnXfill_kernel<int> says no type of data: magma_sgeev (float) still issues it
    m = mini_index.kernel("void cusolverDnXfill_kernel<int>(cublasFillMode_t, long, long, int*, long, int)")
    assert (m.library, m.dtype) == ("cuSOLVER", "")
    assert "magma_sgeev" in {s.symbol for s in m.library_calls} and m.hits[0].op == "aten::linalg_eig"


def test_lapack_words_in_solver_kernels(mini_index):
    m = mini_index.kernel("xxtrf4_set_info_ker(int, int*)")  # xx: any factorization
    assert m.family == "factorization" and [h.op for h in m.hits] == ["aten::linalg_lu_factor"]
    m = mini_index.kernel("void laswp_kernel<float, false>(int, float* const*, int, int, int, int const*, int, int, int)")
    assert m.family == "row interchanges"  # an LU factorization's and its solve's alike
    assert {h.op for h in m.hits} == {"aten::linalg_lu_factor", "aten::linalg_lu_solve"}
    k = parse_kernel_name("void ormqr_cta_kernel<float, 4, 1>(long, long, long, float const*, long)")
    assert guess_vendor(k) == ("cuSOLVER", "ormqr", True)
    k = parse_kernel_name("void unblocked_LDinv_UDinv_kernel<float>(cublasFillMode_t, int, int, int, float*, unsigned long)")
    assert family_of(dataclasses.replace(k, library="cuSOLVER")) == "sytrf"  # LDL's D inverse, inside sytrf


def test_cub_kernels_say_their_algorithm_in_the_policy(mini_index):
    hub = "at_cuda_detail::cub::detail::{}::policy_hub<{}>::Policy1000"
    rle = parse_kernel_name("void at_cuda_detail::cub::detail::reduce::DeviceReduceByKeyKernel<"
                            + hub.format("rle::encode", "long, long") + ", long const*, long*>(long const*, long*)")
    assert family_of(rle) == "run-length encoding"  # not the function's "reduce"
    keys = parse_kernel_name("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortSingleTileKernel<"
                             + hub.format("radix", "float, at_cuda_detail::cub::NullType, unsigned long long")
                             + ", (at_cuda_detail::cub::SortOrder)0, float>(float const*, float*)")
    pairs = parse_kernel_name("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortSingleTileKernel<"
                              + hub.format("radix", "float, at::cuda::cub::detail::OpaqueType<8>, unsigned long long")
                              + ", (at_cuda_detail::cub::SortOrder)0, float>(float const*, float*)")
    assert (family_of(keys), family_of(pairs)) == ("radix sort keys", "radix sort")
    # DeviceSelect::Unique is a selection: ATen's cuda::cub::unique issues it (UniqueCub.cu)
    m = mini_index.kernel("void at_cuda_detail::cub::detail::select::DeviceSelectSweepKernel<"
                          + hub.format("select", "float, at_cuda_detail::cub::NullType, int, false") + ", float const*>"
                          "(float const*, at_cuda_detail::cub::NullType*, float*, long*)")
    assert m.family == "selection" and m.hits[0].op == "aten::_unique"
    assert m.hits[0].step.symbol == "cuda::cub::unique"


def test_solver_helpers_over_integers_are_guessed():
    k = parse_kernel_name("void kernel::init_scales_blocks_list<512l, 64l>(long, long*, long*, long, long**)")
    assert guess_vendor(k) == ("cuSOLVER", "", False)


def test_an_operator_found_by_name_never_moves_before_a_walked_one():
    # _distinct_first lifts the first three distinct operators over further overloads of the first;
    # one found by its name only (dist NAMED_DIST) is no candidate for that lift while the walk
    # reached any (Note [Operators that share a step] in ranking.py)
    from atenmap.resolve.kernels import NAMED_DIST, _distinct_first
    from atenmap.resolve.ranking import Candidate

    ranked = [((i,), Candidate(op, "CUDA", dist, 0)) for i, (op, dist) in enumerate(
        [("add.Tensor", 1), ("add.out", 1), ("add_.Tensor", 2), ("mul.Tensor", 3), ("sub.Tensor", NAMED_DIST)])]
    got = [c.op for _k, c in _distinct_first(ranked)]
    assert got == ["add.Tensor", "mul.Tensor", "add.out", "add_.Tensor", "sub.Tensor"]
    named = [((0,), Candidate("sub.Tensor", "CUDA", NAMED_DIST, 0)), ((1,), Candidate("sub.out", "CUDA", NAMED_DIST, 0)),
             ((2,), Candidate("rsub.Tensor", "CUDA", NAMED_DIST, 0))]
    assert [c.op for _k, c in _distinct_first(named)] == ["sub.Tensor", "rsub.Tensor", "sub.out"]  # none walked


def test_a_true_flag_picks_among_operators_spelled_alike():
    # softmax_warp_backward<..., true, false>: the launch passes is_log_softmax at the true; neither backward
    # operator is spelled whole (data is no word of the name), so the flag's words decide (Note [Template
    # flags of a kernel])
    own, fn = name_words(["softmax_warp_backward"]), name_words(["softmax_warp_backward"])
    soft = Candidate("_softmax_backward_data", "CUDA", 2, 1)
    log = Candidate("_log_softmax_backward_data", "CUDA", 2, 1)
    flags = frozenset(name_words(["is_log_softmax"]))
    assert min([soft, log], key=lambda c: rank_key(c, own, fn)) is soft
    assert min([soft, log], key=lambda c: rank_key(c, own, fn, affirmed=flags)) is log


def test_an_overload_with_fewer_tensors_than_the_loop_was_given_ranks_after():
    # Note [Operands a loop kernel was given]: std::array<char*, 3ul> is the output and two device inputs;
    # ge.Scalar takes one tensor (the scalar never is an operand on the device)
    from atenmap.resolve.ranking import device_inputs, tensor_inputs

    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::CompareFunctor<float>, "
            "std::array<char*, 3ul> >(int, at::native::(anonymous namespace)::CompareFunctor<float>, std::array<char*, 3ul>)")
    assert device_inputs(name) == 2
    assert device_inputs("void at::native::elementwise_kernel<128, 4, x>(int, x)") is None
    assert tensor_inputs("ge.Scalar(Tensor self, Scalar other) -> Tensor") == 1
    assert tensor_inputs("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)") == 2
    assert tensor_inputs("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)") == 2
    assert tensor_inputs("cat(Tensor[] tensors, int dim=0) -> Tensor") == 99
    own, fn = name_words(["CompareFunctor"]), {}
    scalar, tensor = Candidate("ge.Scalar", "CUDA", 1, 1), Candidate("ge.Tensor", "CUDA", 1, 1)
    assert min([scalar, tensor], key=lambda c: rank_key(c, own, fn)) is scalar  # a tie: the shorter name
    assert min([scalar, tensor], key=lambda c: rank_key(c, own, fn, few=c is scalar)) is tensor


# ---- issue 38, Truth IV: which overload the name says (fixtures/pytorch-mini/.../cuda/MiniOverloads.cu) ------

def _ops(mini_index, name: str) -> list[str]:
    return [h.op.removeprefix("aten::") for h in mini_index.kernel(name).hits]


def test_flags_handed_down_by_a_templates_callers(mini_index):
    # mini_tril_cuda calls mini_tri_template<false>, mini_triu_cuda <true> (TriangularOps.cu's triu_tril_cuda_template)
    assert _ops(mini_index, "void at::native::mini_tri_kernel<float, false, false>(float*, float const*, int)")[0] == "mini_tril"
    assert _ops(mini_index, "void at::native::mini_tri_kernel<float, true, false>(float*, float const*, int)")[0] == "mini_triu"
    # the inplace flag: the in-place overload (mini_tril_) for true, the functional one for false
    assert _ops(mini_index, "void at::native::mini_tri_kernel<float, false, true>(float*, float const*, int)")[0] == "mini_tril_"


def test_a_functors_bool_flag_says_which_operator(mini_index):
    # MiniScatterGatherOp<is_scatter_like, T>; the profile's name has one template argument more (2.11's index type)
    gather = ("void at::native::mini_gather_loop<at::native::MiniScatterGatherOp<false, float, int> >(float*, float const*, "
              "int, at::native::MiniScatterGatherOp<false, float, int>)")
    assert _ops(mini_index, gather)[0] == "mini_gather"
    assert _ops(mini_index, gather.replace("<false,", "<true,"))[0] == "mini_scatter"


def test_the_overload_the_kernels_name_says(mini_index):
    # random_from_to_kernel runs random_.from (and random_.to, which the name says after it)
    name = ("void at::native::mini_distribution_kernel<at::native::mini_random_from_to_kernel(at::TensorIteratorBase&, "
            "unsigned long, long)::{lambda(float)#1}>(float*, int, at::native::mini_random_from_to_kernel("
            "at::TensorIteratorBase&, unsigned long, long)::{lambda(float)#1})")
    assert _ops(mini_index, name)[:2] == ["mini_random_.from", "mini_random_.to"]


def test_the_overload_whose_arguments_are_the_kernels_parameters(mini_index):
    # mini_normal_kernel(self, mean, std) is mini_normal_'s (a tensor, two numbers); Tensor_float takes one number
    name = ("void at::native::mini_distribution_kernel<at::native::mini_normal_kernel(at::TensorBase const&, double, "
            "double)::{lambda(float)#1}>(float*, int, at::native::mini_normal_kernel(at::TensorBase const&, double, "
            "double)::{lambda(float)#1})")
    assert _ops(mini_index, name)[0] == "mini_normal_"


def test_template_arguments_handed_down_through_a_callers_parameter(mini_index):
    # mini_masked_scale_kernel<mask_t, float> in mini_dropout_backward_cuda<mask_t>: bool from the native op
    name = ("void at::native::mini_distribution_kernel<at::native::mini_masked_scale_kernel<bool, float>(at::Tensor&, "
            "at::Tensor const&, at::Tensor const&, float)::{lambda(float, bool)#1}>(float*, int, "
            "at::native::mini_masked_scale_kernel<bool, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, "
            "float)::{lambda(float, bool)#1})")
    assert _ops(mini_index, name)[0] == "mini_native_dropout_backward"
    assert _ops(mini_index, name.replace("<bool, float>", "<unsigned char, float>"))[0] == "_mini_masked_scale"


def test_the_operands_a_loop_functor_takes(mini_index):
    # MiniCompareFunctor::operator()(a, b): two device inputs, so the Tensor overload launched it
    name = ("void at::native::mini_strided_kernel<at::native::gpu_kernel_impl_nocast<at::native::MiniCompareFunctor<float> >"
            "(at::TensorIteratorBase&, at::native::MiniCompareFunctor<float> const&)::{lambda(int)#1}>(int, "
            "at::native::gpu_kernel_impl_nocast<at::native::MiniCompareFunctor<float> >(at::TensorIteratorBase&, "
            "at::native::MiniCompareFunctor<float> const&)::{lambda(int)#1})")
    assert _ops(mini_index, name)[:2] == ["mini_ge.Tensor", "mini_ge.Scalar"]


def test_overload_words_and_kinds():
    from atenmap.resolve.ranking import overload_said, overload_words, schema_kinds, signature_kinds
    words = overload_words(["bernoulli_tensor_cuda_kernel"])
    assert overload_said("bernoulli_.Tensor", words)[0] < overload_said("bernoulli_.float", words)[0] == 0
    assert overload_said("max.dim_max", overload_words(["MaxOps"])) == (0, 10_000)  # max: the operator's own word
    assert signature_kinds("(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)") == ("T", "N", "N")
    assert signature_kinds("(at::TensorIteratorBase&, c10::ScalarType)") is None
    assert schema_kinds("normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor(a!)") \
        == ("T", "N", "N")
    assert schema_kinds("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)") == ("T", "T", "N")


def test_a_joining_word_spells_an_operator_named_with_it():
    from atenmap.resolve.ranking import joining_words, merged
    own = merged(name_words(["logical_and_kernel_cuda"]), joining_words(["logical_and_kernel_cuda"]))
    ops = [Candidate(op, "CUDA", 1, 0) for op in ("logical_or.out", "logical_and.out")]
    assert min(ops, key=lambda c: rank_key(c, own, {})).op == "logical_and.out"
    assert not spelled("__and__", {"and"})  # a joining word alone spells nothing
    normal = merged(name_words(["normal_and_transform"]), joining_words(["normal_and_transform"]))
    assert not spelled("bitwise_and", set(normal)) and spelled("normal", set(normal))


def test_template_arguments_as_both_spell_them():
    from atenmap.resolve.kernelflags import bool_flags, literal_arg, template_params
    assert literal_arg("uint8_t") == literal_arg("unsigned char") == "unsigned char"
    assert literal_arg("false /* masked_softmax */") == "false" and literal_arg("c10::Half") == "Half"
    assert literal_arg("mask_t") == "" and literal_arg("4ul") == "4"
    text = "}\n\ntemplate <bool upper>\nvoid triu_tril_cuda_template(const Tensor& result) {"
    assert template_params(text) == ["upper"]  # not the word inside the function's name
    assert bool_flags(["false", "float", "int"], ["is_scatter_like", "scalar_t"]) == ([], ["is_scatter_like"])


def test_an_overload_named_in_camel_case_is_said_by_its_words():
    # _foreach_add.ScalarList's kernel holds BinaryOpScalarListFunctor: its words say ScalarList more than
    # they say .Scalar or .List alone (the overload's name is read in words as the kernel's are)
    from atenmap.resolve.ranking import overload_said, overload_words
    words = overload_words(["multi_tensor_apply_kernel", "BinaryOpScalarListFunctor"])
    assert overload_said("_foreach_add.ScalarList", words) < overload_said("_foreach_add.Scalar", words)
    assert overload_said("_foreach_add.ScalarList", words) < overload_said("_foreach_add.List", words)
    assert overload_said("_foreach_add.ScalarList", overload_words(["foo_scalarlist_kernel"]))[0] < 0
