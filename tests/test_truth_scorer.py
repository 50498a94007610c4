"""The truth bench's own view of a kernel (bench/bench_truth.py): ATen's or a vendor's is read from
the tree's files and the name, never from atenmap's index (issue 25)."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from .conftest import FIXTURE_TREE, REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_truth", REPO / "bench" / "bench_truth.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tree_text_finds_written_and_macro_made_kernels(bench):
    t = bench.TreeText(str(FIXTURE_TREE))
    assert t.global_files("vectorized_elementwise_kernel") == ["aten/src/ATen/native/cuda/CUDALoops.cuh"]
    assert t.global_files("cdist_kernel_cuda_impl") == ["aten/src/ATen/native/cuda/DistanceKernel.cu"]  # static
    # DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...): the macro's first parameter names the kernel
    assert t.global_files("flash_fwd_kernel") == [
        "aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h"]
    assert t.global_files("kernelName") == []  # the macro's parameter, not a kernel
    assert t.has_op("add.out") and not t.has_op("add.no_such_overload")


@pytest.mark.parametrize("kernel,family", [
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_execute_kernel__5x_cublas", "cuBLAS"),
    ("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<P>(int)", "CUB"),
    ("void cusolverDnXfill_kernel<float>(cublasFillMode_t, long, long, float*, long, float)", "solver"),
    ("void getrf_pivot<getrf_params_<float, 32, 1, 32, 32, 1> >(int, int)", "solver"),
    ("void regular_fft<3u, EPT<3u>, 256u>(x)", "cuFFT"),
    ("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)", "cuDNN"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)", None),
    ("copy_info_kernel", None),
])
def test_vendor_family_from_the_name(bench, kernel, family):
    assert bench.vendor_family(kernel) == family


def test_qualifier_is_the_scope_after_the_return_type(bench):
    assert bench._qualifier("std::enable_if<true, void>::type internal::gemvx::kernel<int>(P)") == "internal::gemvx"
    assert bench._qualifier("void kernel<getrf_wo_pivot_params_<float> >(int)") == ""


# The expected side reads kernel names itself (bench/kernel_text.py), never with atenmap's parser (issue 32).
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
SQRT = ("void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::"
        "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >"
        "(int, at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::"
        "operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)")
SUM = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
       "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
       "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, int> >)")
CAT = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_alignedK_contig<at::native::(anonymous namespace)::"
       "OpaqueType<4u>, unsigned int, 1, 128, 1, 16>(at::native::(anonymous namespace)::OpaqueType<4u>*, int)")


@pytest.mark.parametrize("name,function,functors,lambdas", [
    (ADD, "vectorized_elementwise_kernel", ["at::native::CUDAFunctor_add", "std::array"], []),
    (SQRT, "vectorized_elementwise_kernel", ["std::array"], ["sqrt_kernel_cuda"]),
    (SUM, "reduce_kernel", ["at::native::ReduceOp", "at::native::func_wrapper_t", "at::native::sum_functor"],
     ["sum_functor"]),
    (CAT, "CatArrayBatchedCopy_alignedK_contig", ["at::native::OpaqueType"], []),
    ("modified_bessel_i1_forward_vectorized4_kernel", "modified_bessel_i1_forward_vectorized4_kernel", [], []),
])
def test_the_bench_reads_a_kernel_name_itself(bench, name, function, functors, lambdas):
    kn = bench.read_kernel(name)
    assert (kn.kind, kn.function, list(kn.functors), list(kn.lambdas)) == ("kernel", function, functors, lambdas)
    assert "atenmap" not in str(bench.kernel_text.__file__) and not [
        m for m in vars(bench.kernel_text).values() if getattr(m, "__name__", "").startswith("atenmap")]


def test_memcpy_is_what_the_oracle_says(bench):
    assert bench.read_kernel("Memcpy DtoD (Device -> Device)", "memcpy").kind == "memcpy"
    assert bench.read_kernel("Memcpy DtoD (Device -> Device)").kind == "kernel"  # no kind recorded: scored


def test_a_pair_atenmap_gives_no_chain_for_is_missed_not_dropped(bench):
    """The op is in the tree's yaml, atenmap gave no chain (ChainFacts with its error): the pair stays
    in the denominator, missed."""
    from collections import Counter

    text = bench.TreeText(str(FIXTURE_TREE))
    v = {"op": "add.out", "kernel": ADD}
    skipped = Counter()
    bench.score_pair(v, bench.read_kernel(ADD), text, lambda op: bench.ChainFacts([], error="unknown operator"),
                     skipped)
    assert v["verdict"] == "missed" and v["chain_error"] == "unknown operator" and not skipped, v
    s = bench.summarise([v], skipped)["in-tree"]
    assert (s["pairs"], s["predicted"]) == (1, 0), s


def test_reverse_bench_plain_rule_reads_the_tree_text():
    # issue 38's plain rule (bench_reverse --rule plain): in-tree when the function name is a token of
    # aten/src and no vendor marker claims it; a jiterator kernel (no such token) is a library's; memcpy
    # and memset are a group of their own
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("bench_reverse", REPO / "bench" / "bench_reverse.py")
    rev = importlib.util.module_from_spec(spec)
    sys.modules["bench_reverse"] = rev
    spec.loader.exec_module(rev)
    t = rev.TreeGlobals(str(FIXTURE_TREE))
    add = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
    assert rev.plain_category(add, t) == "in-tree"
    assert rev.plain_category("lgamma_kernel_vectorized4_kernel", t) == "library"
    assert rev.plain_category("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<P>(int)", t) == "library"
    assert rev.plain_category("Memcpy HtoD (Pageable -> Device)", t, "memcpy") == "memory"
