"""The Inductor kernels of twelve small models compiled on an H200 (torch 2.11, Triton), kept in
fixtures/compile/h200_torch2.11 by bench/compile_gpu_record.py: output code, one profiled run, and
PyTorch's own provenance. bench/compile_score.py scores atenmap's answers against them."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from .conftest import REPO

FIX = REPO / "fixtures" / "compile" / "h200_torch2.11"


def _score_module():
    spec = importlib.util.spec_from_file_location("compile_score", REPO / "bench" / "compile_score.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["compile_score"] = mod
    spec.loader.exec_module(mod)
    return mod


def _models():
    return sorted(p for p in FIX.iterdir() if (p / "expected.json").is_file())


def test_every_triton_kernel_of_the_h200_runs():
    cs = _score_module()
    rows = []
    for folder in _models():
        exp = json.loads((folder / "expected.json").read_text())
        names = [n for n in cs._launchers(cs._trace(folder / "trace.json.gz")) if n.startswith("triton_")]
        rows += [cs.score_generated(folder, n, exp) for n in names]
    assert len(_models()) == 12 and len(rows) >= 30
    full = [r for r in rows if r["definition"] and r["aten_ok"] and r["user_ok"]]
    assert len(full) / len(rows) >= 0.95, [r for r in rows if r not in full][:5]


@pytest.mark.realtree
def test_extern_and_fallback_kernels_of_the_h200_runs(real_index_26):
    cs = _score_module()
    rows = []
    for folder in _models():
        launchers = cs._launchers(cs._trace(folder / "trace.json.gz"))
        rows += [cs.score_other(real_index_26, n, by, folder / "code") for n, by in launchers.items()
                 if not n.startswith("triton_")]
    scored = [r for r in rows if r["ok"] is not None]
    assert len(scored) >= 30
    assert sum(r["ok"] for r in scored) / len(scored) >= 0.95, [r for r in scored if not r["ok"]][:5]


def test_the_expected_side_is_read_from_the_recorded_files():
    """compile_score's expected side uses no atenmap code (issue 32): the user line is the last frame of
    the recording script in FX's stack trace, the kernel's file the one whose text defines it."""
    cs = _score_module()
    trace = ('  File "/x/compile_gpu_record.py", line 40, in forward\n    h = F.gelu(self.fc1(x))\n'
             '  File "/x/site-packages/torch/nn/modules/linear.py", line 125, in forward\n    return F.linear(x)\n')
    assert cs.user_line(trace) == ("compile_gpu_record.py", 40)
    assert cs.user_line('  File "/x/torch/nn/functional.py", line 9, in gelu\n') is None
    code = FIX / "mlp" / "code"
    home = cs.defined_in(code, "triton_poi_fused_gelu_0")
    assert home is not None and home.parent == code
    assert any(ln.startswith("triton_poi_fused_gelu_0 = async_compile.") for ln in home.read_text().splitlines())
    assert cs.defined_in(code, "triton_no_such_kernel") is None
    assert "user_frames" not in vars(cs)
