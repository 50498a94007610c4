"""atenmap trace on CPU against the real PyTorch 2.6.0 tree: a script's known lines, the exact
overloads it ran, and the CPU kernels' file:line in that tree."""
from __future__ import annotations

import runpy
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="atenmap trace needs torch; install it to run these tests")

import atenmap.trace as amtrace  # noqa: E402
from atenmap.cli import main

pytestmark = pytest.mark.realtree

SCRIPT = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    x = torch.randn(16, 16)
    y = torch.add(x, x)          # line 5
    z = torch.mm(y, x)           # line 6
    p = F.softmax(z, dim=-1)     # line 7
""")


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "known.py"
    p.write_text(SCRIPT)
    return p


def entry_at(entries, path, line):
    hits = [e for e in entries if e.call and e.call.stack and (e.call.stack[-1].file, e.call.stack[-1].line) == (str(path), line)]
    assert len(hits) == 1, [(e.call.op, e.call.stack) for e in hits]
    return hits[0]


def test_cpu_ops_carry_line_overload_and_kernel(real_index_26, script):
    with amtrace.trace(key="CPU") as t:
        runpy.run_path(str(script), run_name="__main__")
    entries = t.entries(index=real_index_26)

    add = entry_at(entries, script, 5)
    assert add.call.op == "aten::add.Tensor" and add.call.key == "CPU" and add.chain.key == "CPU"
    k = add.chain.kernel
    # with torchgen's output indexed the kernel is the generated ufunc kernel; without, the inner loop
    assert (k.file.rsplit("/", 1)[-1], k.line) in {("UfuncCPUKernel_add.cpp", 16), ("add.h", 15)}, k

    mm = entry_at(entries, script, 6)
    assert mm.call.op == "aten::mm" and mm.chain.key == "CPU"
    assert (mm.chain.native.file, mm.chain.native.line) == ("aten/src/ATen/native/LinearAlgebra.cpp", 1632)
    assert mm.chain.native.symbol == "TORCH_IMPL_FUNC(mm_out_cpu)"
    assert "at::native::cpublas::gemm" in [s.symbol for s in mm.chain.launches]

    soft = entry_at(entries, script, 7)
    assert soft.call.op == "aten::_softmax" and soft.call.function == "torch.nn.functional.softmax"
    assert (soft.chain.kernel.file, soft.chain.kernel.line) == ("aten/src/ATen/native/cpu/SoftMaxKernel.cpp", 1206)
    assert soft.chain.kernel.symbol.endswith("softmax_lastdim_kernel_impl")

    report = t.report(index=real_index_26, base=str(script.parent))
    assert any("2.6.0a0" in w and torch.__version__ in w for w in report.warnings) or torch.__version__.startswith("2.6.")


def test_cli_on_real_tree(real_index_26, script, shared_cache, monkeypatch, capsys):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    monkeypatch.chdir(script.parent)
    with pytest.raises(SystemExit) as exc:
        main(["trace", "--source", real_index_26.source.root, "--", "known.py"])
    out = capsys.readouterr().out.splitlines()
    assert exc.value.code == 0
    assert out[out.index("known.py:6") + 1].startswith(
        "  torch.mm -> aten::mm [CPU] -> LinearAlgebra.cpp:1632 mm_out_cpu -> ")
    # The profiler (always on now) names the composite parent, with its overload: aten::softmax.int
    soft = out[out.index("known.py:7") + 1]
    assert " -> aten::softmax.int -> aten::_softmax [CPU] -> " in soft
    soft = soft.replace(" -> aten::softmax.int -> ", " -> ")
    assert soft.startswith(
        "  torch.nn.functional.softmax -> aten::_softmax [CPU] -> SoftMaxKernel.cpp:1206 softmax_lastdim_kernel_impl  (1 call, ")
