"""Views on the real PyTorch 2.6.0 tree (scripts/fetch-pytorch-src 2.6.0)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from atenmap.views import editor
from atenmap.views import gdb
from atenmap.views import graph

pytestmark = pytest.mark.realtree


def test_graph_of_mul_and_div_shares_the_gpu_loops(real_index_26):
    chains = [real_index_26.chain(op, keys=["CUDA"]) for op in ("mul.out", "div.out")]
    g = graph.build_graph(chains)
    dot = graph.to_dot(g)
    assert 'label="BinaryOps.cpp:440\\nTORCH_IMPL_FUNC(mul_out)"' in dot
    assert 'label="BinaryMulKernel.cu:46\\nREGISTER_DISPATCH(mul_stub, mul_kernel_cuda)"' in dot
    shared = {(n.step.file.rsplit("/", 1)[-1], n.step.line, n.step.symbol) for n in g.shared}
    assert ("Loops.cuh", 101, "at::native::gpu_kernel") in shared
    assert {n.step.role for n in g.shared} == {"call", "launch"}
    assert sum(1 for n in g.shared if n.step.role == "launch") >= 4


def test_graph_of_add_and_mul_through_generated_code(real_index_26):
    add = real_index_26.chain("add.out", keys=["CUDA"])
    if not any(s.generated and s.file for s in add.keys[0].walk()):
        pytest.skip("torchgen's output is not indexed here (codegen unavailable)")
    g = graph.build_graph([add, real_index_26.chain("mul.out", keys=["CUDA"])])
    gpu = next(n for n in g.shared if n.step.symbol == "at::native::gpu_kernel")
    assert gpu.ops == ["add.out", "mul.out"] and gpu.step.file == "aten/src/ATen/native/cuda/Loops.cuh"
    impl = next(n for n in g.nodes.values() if n.step.symbol == "TORCH_IMPL_FUNC(ufunc_add_CUDA)")
    assert impl.step.generated and 'UfuncCUDA_add.cu:' in graph.where(impl.step)
    assert re.search(r'label="UfuncCUDA_add\.cu:\d+\\nTORCH_IMPL_FUNC\(ufunc_add_CUDA\)".*dashed', graph.to_dot(g))


@pytest.mark.skipif(shutil.which("dot") is None and not os.environ.get("CI"), reason="Graphviz `dot` is not installed")  # CI installs it
def test_svg_of_mul_out(real_index_26):
    svg = graph.render([real_index_26.chain("mul.out", keys=["CUDA"])], "svg").decode()
    assert "</svg>" in svg and "TORCH_IMPL_FUNC(mul_out)" in svg and "vectorized_elementwise_kernel&lt;&lt;&lt;…&gt;&gt;&gt;" in svg


def test_lines_of_mul_out_cuda(real_index_26):
    lines = editor.render_lines(real_index_26.chain("mul.out", keys=["CUDA"]))
    assert "aten/src/ATen/native/BinaryOps.cpp:440:1: native TORCH_IMPL_FUNC(mul_out)" in lines
    assert any(ln.startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:158:1: launch vectorized_elementwise_kernel<<<")
               for ln in lines)
    assert all(re.match(r"^[^:\s]+:[1-9]\d*:1: [a-z_]+ \S", ln) for ln in lines)


def test_open_picks_the_first_run(real_index_26):
    # mm: the cuBLAS GEMM call that runs, not copy_'s kernel (issue 33)
    step = editor.pick_step(real_index_26.chain("mm", keys=["CUDA"]))
    assert (step.role, step.file, step.line) == ("library", "aten/src/ATen/native/cuda/Blas.cpp", 461)
    step = editor.pick_step(real_index_26.chain("amax", keys=["CUDA"]))
    assert (step.role, step.symbol) == ("launch", "reduce_kernel")


def test_open_picks_the_first_launch(real_index_26):
    ch = real_index_26.chain("mul.out", keys=["CUDA"])
    step = editor.pick_step(ch)
    assert (step.role, step.file, step.line) == ("launch", "aten/src/ATen/native/cuda/CUDALoops.cuh", 158)
    argv = editor.editor_command(["vim"], editor.step_path(ch, step), step.line)
    assert argv[:2] == ["vim", "+158"] and argv[2].endswith("/aten/src/ATen/native/cuda/CUDALoops.cuh")


def test_gdb_script_mul_out_cpu(real_index_26, tmp_path):
    text = gdb.gdb_script(real_index_26.chain("mul.out", keys=["CPU"]))
    breaks = [ln for ln in text.splitlines() if ln.startswith("break ")]
    want = ["break at::meta::structured_mul_Tensor::meta", "break at::native::structured_mul_out::impl",
            "break at::native::(anonymous namespace)::mul_kernel"]
    assert [b for b in breaks if b in want] == want
    assert "break aten/src/ATen/native/cpu/Loops.h:305" in breaks  # CPU_CAPABILITY::cpu_kernel
    if shutil.which("gdb"):
        script = tmp_path / "mul.gdb"
        script.write_text(gdb.gdb_script(real_index_26.chain("addmm.out")))
        r = subprocess.run(["gdb", "-nx", "-batch", "-x", str(script), "/bin/true"], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode == 0 and not re.search(r"syntax error|Undefined command|malformed|Junk at end", r.stderr)


def test_search_softmax_cuda_ops(real_index_26):
    """(How fast: bench/bench_guards.py.)"""
    search = real_index_26.search
    hits = search("softmax", kinds=("op",), key="CUDA")
    names = [h.name for h in hits]
    assert {"_softmax.out", "_log_softmax.out", "_softmax", "_masked_softmax"} <= set(names)
    assert "softmax.int" not in names  # composite: no CUDA kernel of its own
    assert next(h for h in hits if h.name == "_softmax.out").extra.startswith("CUDA: softmax_cuda_out")
    hits = search("softmax")
    assert hits[0].name in ("softmax.int", "softmax.Dimname") and len(hits) > 100
    assert {"stub", "kernel", "function"} <= {h.kind for h in hits}
