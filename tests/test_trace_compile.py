"""Tracing never changes what runs (issue 20): a torch.compile'd function stays compiled under the
default recorder (the profiler alone). With Inductor on CPU this compiles C++ (a minute on a small box)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="atenmap trace needs torch; install it to run these tests")

import atenmap.trace as amtrace  # noqa: E402  (after the skip)


@pytest.mark.compile
def test_inductor_compiled_code_runs_compiled_under_the_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()

    def f(x):
        return (x.sin() + 1).relu()

    g = torch.compile(f)  # Inductor, the default backend
    x = torch.randn(64)
    with amtrace.trace() as t:
        y = g(x)   # compiles here, inside the traced region
        g(x)
        torch.add(y, 1)
    assert counters["stats"]["unique_graphs"] == 1 and counters["stats"]["calls_captured"] >= 3
    ops = [c.op for c in t.recording.calls]
    # sin, add and relu ran fused in Inductor's C++ kernel: none of them as an eager aten call, and
    # none of the compiler's own fake-tensor ops (Note [Compiling is not running]) is a call
    assert "aten::sin" not in ops and "aten::relu" not in ops and ops.count("aten::add.Tensor") == 1
    # (the profiler's raw events are not read again here: after the trace stopped their names may
    # point at code objects freed by then, a UnicodeDecodeError inside torch.profiler)
