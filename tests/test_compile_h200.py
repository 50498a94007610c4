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
