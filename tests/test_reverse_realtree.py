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

# measured 2026-12-03 (docs/kernels.md has the table): fp32 names
FLOORS = {
    ("in-tree float32", "source"): 98.0,  # 98.7
    ("in-tree float32", "first_base"): 89.0,  # 89.8 (83.7 before the second round)
    ("in-tree float32", "top3_base"): 94.5,  # 95.1
    ("in-tree bfloat16", "top3_base"): 94.5,  # 95.1
    ("in-tree bfloat16", "first_base"): 88.5,  # 89.2
    ("library float32", "library"): 95.0,  # 96.0
    ("library float32", "top3_base"): 75.0,  # 76.2 (77.0 before: one cuSOLVER fill kernel of eig lost its third place)
    ("library bfloat16", "library"): 94.0,  # 95.7
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
])
def test_first_operator_of_real_patterns(reverse, fragment, first):
    answers = _answer(reverse, fragment)
    assert answers and all(a[:1] == [first] for a in answers), answers[:3]


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
