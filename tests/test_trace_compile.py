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


SCRIPT = '''\
import torch
from torch._dynamo.utils import counters


def f(x, w):
    y = torch.relu(x * 2.0 + 1.0)
    z = y @ w
    return torch.softmax(z, dim=-1)


g = torch.compile(f)
x, w = torch.randn(4, 8), torch.randn(8, 4)
for _ in range(2):
    g(x, w)
print("graphs", counters["stats"]["unique_graphs"], "captured", counters["stats"]["calls_captured"])
'''


@pytest.mark.compile
def test_atenmap_trace_answers_inductor_cpp_kernels(tmp_path, mini_tree):
    """``atenmap trace`` on a compiled script (issue 22): the compiled code runs compiled, its
    compilation is not recorded (Note [No recording while compiling]), each C++ kernel's profile range
    gets its definition and call line, fused ATen ops and the user's line, in text, --json and
    --chrome; the mm Inductor leaves to ATen gets ATen's CPU chain. One compile, small shapes."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which(os.environ.get("CXX", "g++")):
        pytest.fail("Inductor's CPU backend needs a C++ compiler (g++)")  # CI has one: a skip would measure nothing
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    lines = SCRIPT.splitlines()
    relu_line = 1 + next(i for i, ln in enumerate(lines) if "torch.relu" in ln)
    softmax_line = 1 + next(i for i, ln in enumerate(lines) if "torch.softmax" in ln)
    out_json, out_chrome = tmp_path / "t.json", tmp_path / "t.chrome.json"
    src = Path(__file__).resolve().parents[1] / "src"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               PYTHONPATH=str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="400")
    r = subprocess.run([sys.executable, "-m", "atenmap", "trace", "--source", str(mini_tree), "--no-codegen",
                        "--json", str(out_json), "--chrome", str(out_chrome), "--", str(script)],
                       env=env, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "graphs 1 captured 5" in r.stdout  # compiled once (mul, add, relu, mm, softmax), still compiled

    data = json.loads(out_json.read_text())
    assert any("paused while torch.compile compiled" in n for n in data["notes"])
    entries = data["entries"]
    # only the program's work: two runs of three kernels (no fake-tensor op of the compiler)
    assert len(entries) <= 10, [e["op"] for e in entries]
    kernels = [e for e in entries if "cpp_fused_" in e["op"]]
    assert len(kernels) == 4  # two C++ kernels, two runs
    fused, users = set(), set()
    for e in kernels:
        ind = e["inductor"]
        assert e["op"].endswith(ind["kernel"]) and ind["kernel"].startswith("cpp_fused_")
        text = Path(ind["file"]).read_text().splitlines()
        assert text[ind["line"] - 1].startswith(f"{ind['kernel']} = async_compile.cpp")  # its definition
        assert text[ind["call_line"] - 1].strip().startswith(f"{ind['kernel']}(")  # its call in call()
        assert ind["aten"] and ind["user"], ind
        fused |= set(ind["aten"])
        users |= {(u["file"], u["line"]) for u in ind["user"]}
    assert {"aten.mul", "aten.add", "aten.relu", "aten._softmax"} <= fused
    assert users == {(str(script), relu_line), (str(script), softmax_line)}
    mms = [e for e in entries if e["op"].startswith("aten::mm")]
    assert len(mms) == 2 and all(e["key"] == "CPU" and "mm_out_cpu" in e["chain"]["native"]["symbol"] for e in mms)

    text_lines = r.stdout.splitlines()
    assert f"fuses aten._softmax; model.py:{softmax_line}" in r.stdout
    assert any("cpp_fused_" in ln and "relu" in ln and f"; model.py:{relu_line}" in ln for ln in text_lines)
    assert any("aten::mm" in ln and "mm_out_cpu" in ln for ln in text_lines)

    events = json.loads(out_chrome.read_text())["traceEvents"]
    ranges = [e for e in events if "cpp_fused_" in str(e.get("name", "")) and "atenmap.inductor_definition" in e.get("args", {})]
    assert ranges, "no C++ kernel event of the chrome trace carries its output code"
    for e in ranges:
        assert e["args"]["atenmap.inductor_aten"] and "model.py:" in e["args"]["atenmap.inductor_user"]
