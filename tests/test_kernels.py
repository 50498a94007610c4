"""Reverse lookup from profiler kernel names (and `where`), on fixtures and the real 2.6.0 tree."""
from __future__ import annotations

import json

import pytest

from atenmap.cli import main
from atenmap.errors import AtenmapError
from atenmap.trace.chrome import read_trace

from .conftest import FIXTURE_TREE

MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
       "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")
EXP = ("void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)"
       "::{lambda()#1}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
       "at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda(float)#1}, "
       "std::array<char*, 2ul>)")


def test_functor_kernel_on_fixture(mini_index):
    m = mini_index.kernel(MUL)
    assert (m.definition.file, m.definition.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 7)
    assert [(s.file, s.line) for s in m.launches] == [("aten/src/ATen/native/cuda/CUDALoops.cuh", 18)]
    assert [(s.symbol, s.line) for s in m.functors] == [("at::native::MulFunctor", 9)]
    # the functional overload first (what users call), then out=
    assert m.operators[:2] == ("aten::mul.Tensor [CUDA]", "aten::mul.out [CUDA]")
    hit = m.hits[0]
    assert (hit.op, hit.key, hit.step.symbol) == ("aten::mul.Tensor", "CUDA", "at::native::MulFunctor")
    assert hit.label() == "aten::mul.Tensor [CUDA]" and "own code says its name" in hit.reason
    assert hit.to_dict()["step"]["line"] == 9
    assert not [o for o in m.operators if "[CPU]" in o]


def test_lambda_kernel_on_fixture(mini_index):
    m = mini_index.kernel(EXP)
    lam = m.functors[0]
    # the innermost closure, lambda(float)#1: the GPU_LAMBDA the kernel runs
    assert lam.file == "aten/src/ATen/native/cuda/UnaryOpsKernel.cu" and lam.line == 7
    assert m.operators[0] == "aten::exp [CUDA]" and "aten::exp.out [CUDA]" in m.operators[:3]
    assert m.hits[0].step.line == 7 and m.dtype == "float" and m.family == "elementwise"


def test_unknown_kernel_gives_nearest(mini_index):
    m = mini_index.kernel("vectorized_elementwise_kernal")
    assert not m.found and "vectorized_elementwise_kernel" in m.nearest


def test_garbage_is_bounded_and_clear(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["kernel", "-s", str(FIXTURE_TREE), "<" * 100000 + "x"])
    assert exc.value.code == 1
    captured = capsys.readouterr()
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("atenmap: error:")]
    assert captured.out == "" and len(errors) == 1  # progress lines of the first index build aside
    assert "no kernel named" in errors[0] and len(errors[0]) < 400


def test_where_on_fixture(mini_index):
    w = mini_index.where("aten/src/ATen/native/cuda/CUDALoops.cuh", line=18)
    assert w.function == "at::native::launch_vectorized_kernel"
    assert {"aten::mul.out [CUDA]", "aten::exp.out [CUDA]"} <= set(w.operators)
    w = mini_index.where(f"{mini_index.source.root}/aten/src/ATen/native/cuda/BinaryMulKernel.cu",
                         function="mul_kernel_cuda")  # an absolute path inside the tree
    assert w.loc.line == 16 and w.operators[0] == "aten::mul.out [CUDA]"
    with pytest.raises(AtenmapError, match="not inside a function"):
        mini_index.where("aten/src/ATen/native/cuda/CUDALoops.cuh", line=1)


def test_where_errors(capsys):
    for args, msg in ((["where", "nope.cpp:3"], "no indexed file"), (["where", "Loops.cuh"], "FILE:LINE"),
                      (["where", "aten/src/ATen/native/cuda/Loops.cuh", "no_such_fn"], "no function")):
        with pytest.raises(SystemExit) as exc:
            main(args + ["-s", str(FIXTURE_TREE)])
        assert exc.value.code == 1
        assert msg in capsys.readouterr().err


def test_trace_file_and_stdin(tmp_path, capsys, monkeypatch):
    trace = tmp_path / "trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "args": {"External id": 7}},
              {"ph": "X", "cat": "kernel", "name": MUL, "dur": 3, "args": {"External id": 7}}] + \
        [{"ph": "X", "cat": "kernel", "name": MUL, "dur": 3}] * 2 + [
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "dur": 9}]
    trace.write_text(json.dumps({"traceEvents": events}))
    assert read_trace(trace) == [MUL] * 3 + ["Memcpy DtoD (Device -> Device)"]
    with pytest.raises(SystemExit) as exc:
        main(["kernel", "--from-trace", str(trace), "--json", "-s", str(FIXTURE_TREE)])
        raise SystemExit(0)
    assert exc.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["count"] for d in out] == [3, 1] and out[0]["operators"][0]["op"] == "aten::mul.Tensor"
    assert out[0]["operators"][0]["key"] == "CUDA" and out[0]["operators"][0]["step"]["symbol"] == "at::native::MulFunctor"
    # what the trace itself says (External id), its overload picked (no input types: by name)
    assert out[0]["trace_operators"] == {"aten::mul.Tensor": 1}
    linked = out[0]["launches_in_trace"][0]
    assert linked["op"] == "aten::mul.Tensor" and linked["count"] == 1 and linked["lead"]["symbol"].endswith("mul_kernel_cuda")
    assert out[1]["kind"] == "memcpy"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        main(["kernel", "--from-trace", str(bad), "-s", str(FIXTURE_TREE)])
    assert exc.value.code == 1 and "not a readable chrome trace" in capsys.readouterr().err


REAL = {
    "add": ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
            "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"),
    "sum": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
            "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
            "unsigned int, float, 4, 4>)"),
    "softmax": ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>"
                "(float*, float const*, int, int, int, bool const*, int, bool)"),
    "sort": ("void at::native::radixSortKVInPlace<-2, -1, 128, 32, float, long, unsigned int>(at::cuda::detail::"
             "TensorInfo<float, unsigned int>, unsigned int, unsigned int, unsigned int, at::cuda::detail::TensorInfo"
             "<long, unsigned int>, unsigned int, bool)"),
    "cublas": "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "memcpy": "Memcpy DtoD (Device -> Device)",
}


@pytest.mark.realtree
def test_real_kernel_names(real_index_26):
    ix = real_index_26
    m = ix.kernel(REAL["add"])
    assert (m.definition.file, m.definition.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 92)
    assert ("aten/src/ATen/native/cuda/CUDALoops.cuh", 158) in [(s.file, s.line) for s in m.launches]
    assert m.functors[0].symbol == "at::native::CUDAFunctor_add" and m.functors[0].file.endswith("UfuncCUDA_add.cu")
    # the functional overload first, then the next distinct operator (sub runs add's functor), then
    # the rest: add_.Tensor and add.out follow (issue 20)
    assert m.operators[:2] == ("aten::add.Tensor [CUDA]", "aten::sub.Tensor [CUDA]")
    assert {"aten::add_.Tensor [CUDA]", "aten::add.out [CUDA]"} <= set(m.operators[:6]) and m.dtype == "float"

    m = ix.kernel(REAL["sum"])
    assert m.definition.file == "aten/src/ATen/native/cuda/Reduce.cuh"
    assert any(f.symbol == "at::native::sum_functor" and f.file.endswith("ReduceSumProdKernel.cu") for f in m.functors)
    assert "aten::sum.IntList_out [CUDA]" in m.operators[:5]

    m = ix.kernel(REAL["softmax"])
    assert m.definition.file == "aten/src/ATen/native/cuda/PersistentSoftmax.cuh"
    assert "aten::_softmax.out [CUDA]" in m.operators

    m = ix.kernel(REAL["sort"])
    assert m.definition.file == "aten/src/ATen/native/cuda/SortUtils.cuh"
    assert [s.file for s in m.launches] == ["aten/src/ATen/native/cuda/Sort.cu"]
    assert any(o.startswith("aten::sort") for o in m.operators)

    m = ix.kernel(REAL["cublas"])
    assert m.library == "cuBLAS" and m.definition is None
    assert {"aten::mm.out [CUDA]", "aten::addmm.out [CUDA]", "aten::bmm.out [CUDA]"} <= set(m.operators)
    assert any(s.file == "aten/src/ATen/cuda/CUDABlas.cpp" for s in m.library_calls)

    m = ix.kernel(REAL["memcpy"])
    assert m.kind == "memcpy" and m.notes
    assert any("Copy" in s.file for s in m.library_calls)


@pytest.mark.realtree
def test_real_where(real_index_26):
    w = real_index_26.where("aten/src/ATen/native/cuda/Loops.cuh", function="gpu_kernel")
    assert len(w.operators) > 20 and "aten::mul.out [CUDA]" in w.operators


@pytest.mark.realtree
def test_real_h200_profile_names(real_index_26):
    """Every GPU event name torch 2.11 printed on an H200 for bench/trace_cuda_demo.py's workload
    (fixtures/kernel_names_h200_torch2.11.txt) parses, and ATen's own kernels resolve."""
    from .conftest import REPO

    names = (REPO / "fixtures" / "kernel_names_h200_torch2.11.txt").read_text().splitlines()
    results = {m.query: m for m in real_index_26.kernels(n for n in names if n.strip())}
    assert len(results) >= 25
    aten = {n: m for n, m in results.items() if "at::native" in n}
    assert aten and all(m.definition is not None for m in aten.values())
    # the random-number kernels reach normal_ through a template parameter (docs/limits.md)
    without_ops = [n[:80] for n, m in aten.items() if not m.operators]
    assert len(without_ops) <= 1 and all("distribution_" in n for n in without_ops), without_ops
    libs = [m for m in results.values() if m.kind == "library"]
    assert {m.library for m in libs} >= {"cuBLAS", "cuBLASLt", "CUTLASS"}


def test_kernel_launched_by_a_launcher_object_finds_its_operator(mini_index):
    """Note [Launcher objects]: KthValueLauncher::launch is called only as l.template launch<...>()
    on a template parameter; the walk up goes to where the object is made (launch_kthvalue_kernel)."""
    m = mini_index.kernel("void at::native::gatherKthValue<float, int, 1>(float const*, int, long, float*)")
    assert [(s.file, s.line) for s in m.launches] == [("aten/src/ATen/native/cuda/Sorting.cu", 29)]
    assert m.operators == ("aten::kthvalue.values [CUDA]",)
