"""atenmap.trace's recording with a real (CPU) torch: exact overloads, the user's lines, keys,
torch-level parents, profiler parents, errors inside the traced region, the chrome trace."""
from __future__ import annotations

import json
import runpy
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="atenmap trace needs torch; install it to run these tests")

import atenmap.trace as amtrace  # noqa: E402  (after the skip)
from atenmap.errors import AtenmapError
from atenmap.trace.record import Recorder

SCRIPT = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    x = torch.randn(8, 8)


    def step(w):
        y = torch.add(x, x)           # line 8
        z = torch.mm(y, w)            # line 9
        return F.softmax(z, dim=-1)   # line 10


    out = step(x)                     # line 13
    lin = F.linear(x, x)              # line 14
""")


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "demo.py"
    p.write_text(SCRIPT)
    return p


def calls_by_op(rec):
    out = {}
    for c in rec.calls:
        out.setdefault(c.op, []).append(c)
    return out


def test_exact_overloads_lines_and_functions(script):
    with amtrace.trace(key="CPU") as t:
        runpy.run_path(str(script), run_name="__main__")
    ops = calls_by_op(t.recording)
    add, = ops["aten::add.Tensor"]
    mm = ops["aten::mm"]
    soft, = ops["aten::_softmax"]
    # the test's own frame is the user's too (outermost); the script's two follow
    assert [(f.file, f.line) for f in add.stack[-2:]] == [(str(script), 13), (str(script), 8)]
    assert add.stack[0].file == __file__ and len(add.stack) == 3
    assert add.stack[-1].function == "step" and add.key == "CPU" and add.function == "torch.add"
    assert [(f.line) for f in mm[0].stack[1:]] == [13, 9] and mm[0].function == "torch.mm"
    assert [(f.line) for f in soft.stack[1:]] == [13, 10] and soft.function == "torch.nn.functional.softmax"
    # F.linear decomposes (CompositeImplicitAutograd): the dispatch mode sees t + mm, parent linear
    lin = [c for c in t.recording.calls if c.stack and c.stack[-1].line == 14]
    assert {c.op for c in lin} >= {"aten::t", "aten::mm"}
    assert {c.function for c in lin} == {"torch.nn.functional.linear"}
    assert all(c.cpu_us > 0 for c in t.recording.calls) and t.recording.profiled  # the profiler alone


def test_profiler_links_composite_parents_and_backward(script):
    x = torch.randn(4, 4, requires_grad=True)
    with amtrace.trace(profile=True) as t:
        y = torch.nn.functional.linear(x, x)
        y.sum().backward()
    rec = t.recording
    assert rec.profiled and rec.op_events
    mm = next(c for c in rec.calls if c.op == "aten::mm")
    assert mm.parents == ("aten::linear", "aten::matmul")
    back = [c for c in rec.calls if c.function == "torch.Tensor.backward" and c.op == "aten::mm"]
    assert back and any("MmBackward0" in p for p in back[0].parents)
    assert rec.kernel_count == 0  # CPU only: no device events


@pytest.mark.parametrize("dispatch", [False, True])
def test_keys_from_tensors(dispatch):
    with amtrace.trace(dispatch=dispatch) as t:
        torch.ones(2, device="meta") + 1
        torch.ones(2).to_sparse() * 2
    keys = {(c.op, c.key) for c in t.recording.calls}
    assert ("aten::add.Tensor", "Meta") in keys and ("aten::mul.Tensor", "SparseCPU") in keys
    # a factory: the dispatch mode reads its output; the profiler records inputs only (no tensor)
    assert ("aten::ones", "Meta" if dispatch else "CPU") in keys


def test_error_inside_region_keeps_calls_and_removes_modes():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    with pytest.raises(RuntimeError):
        with amtrace.trace() as t:
            torch.add(torch.ones(2), 1)
            torch.mm(torch.ones(2, 3), torch.ones(2, 3))  # shape error
    ops = [c.op for c in t.recording.calls]
    assert "aten::add.Tensor" in ops and ops[-1] == "aten::mm" and t.recording.calls[-1].key == "CPU"
    assert _get_current_dispatch_mode() is None


def test_recording_round_trips_json(script):
    with amtrace.trace() as t:
        runpy.run_path(str(script), run_name="__main__")
    d = json.loads(json.dumps(t.recording.to_dict()))
    assert amtrace.Recording.from_dict(d).to_dict() == t.recording.to_dict()
    assert d["torch_version"] == torch.__version__


def test_warm_up_happens_once_before_user_code():
    r1 = Recorder().start()
    r1.stop()
    r2 = Recorder().start()
    r2.stop()
    assert r2.warm_up_s == 0.0


def test_chrome_trace_has_source_locations(script, mini_index, tmp_path):
    with amtrace.trace(chrome=True) as t:
        runpy.run_path(str(script), run_name="__main__")
    out = tmp_path / "chrome.json"
    n = t.write_chrome(out, t.report(index=mini_index, base=str(tmp_path)))
    evs = json.loads(out.read_text())["traceEvents"]
    # the call's own op event (its External id) carries the args; names stay the profiler's
    add = next(e for e in evs if e.get("args", {}).get("atenmap.op") == "aten::add.Tensor [CPU]")
    assert add["name"] == "aten::add" and add["cat"] == "cpu_op"
    assert add["args"]["atenmap.source"].endswith(" -> demo.py:13 -> demo.py:8")
    assert n >= len(t.recording.calls)


def test_chrome_needs_profiler(mini_index, tmp_path):
    # the dispatch mode without the profiler (profile=False) has no chrome trace to write
    with amtrace.trace(profile=False, dispatch=True) as t:
        torch.ones(1)
    with pytest.raises(AtenmapError, match="no profiler"):
        t.write_chrome(tmp_path / "never-written.json", t.report(index=mini_index))
    assert not (tmp_path / "never-written.json").exists()


def test_outputs_into_a_missing_folder_are_one_error(mini_index, tmp_path):
    """Found on the H200 (torch 2.11): the profiler's export to a missing folder left a traceback."""
    with amtrace.trace(chrome=True) as t:
        torch.ones(1)
    report = t.report(index=mini_index)
    for write in (t.write_chrome, t.write_json):
        with pytest.raises(AtenmapError, match="cannot write .*: no folder"):
            write(tmp_path / "missing" / "out.json", report)
    with pytest.raises(AtenmapError, match="it is a folder"):
        t.write_json(tmp_path, report)


def test_callable_package():
    import atenmap

    assert callable(amtrace) and isinstance(amtrace(), amtrace.Trace)
    assert atenmap.trace is amtrace or not hasattr(atenmap, "trace")


def test_import_atenmap_then_trace_in_a_fresh_process():
    import subprocess
    import sys

    from atenmap.trace import record

    code = ("import atenmap, sys\nwith atenmap.trace(profile=False, dispatch=True) as t:\n    pass\n"
            "print(type(t).__name__, 'torch._dynamo' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-500:]
    # See Note [Mode warm-up]: without torch's wrapper on the mode, nothing imports torch._dynamo.
    assert r.stdout.split() == ["Trace", str(not record._NO_DYNAMO)]


def test_line_of_matches_f_lineno():
    import sys

    from atenmap.trace.record import _line_of

    seen = []

    def grab():
        f = sys._getframe(1)
        seen.append((f.f_code, f.f_lasti, f.f_lineno))

    grab()
    x = [1,
         grab(),
         2]
    for _ in range(2):
        grab()
    cache: dict = {}
    assert x and [_line_of(c, lasti, cache) for c, lasti, _ in seen] == [ln for _, _, ln in seen]


def test_stack_includes_frames_around_the_traced_block():
    import inspect

    def inner(a):
        return torch.exp(a)                          # inner's line

    def traced():
        with amtrace.trace() as t:
            torch.neg(torch.ones(1))                 # block line 1
            inner(torch.ones(1))                     # block line 2
        return t

    t = traced()                                     # caller's line
    here = inspect.currentframe().f_lineno - 1
    neg = next(c for c in t.recording.calls if c.op == "aten::neg")
    exp = next(c for c in t.recording.calls if c.op == "aten::exp")
    src, start = inspect.getsourcelines(traced)
    block1 = start + next(i for i, s in enumerate(src) if "block line 1" in s)
    assert [f.line for f in neg.stack] == [here, block1]
    assert [f.line for f in exp.stack[:2]] == [here, block1 + 1] and exp.stack[2].function == "inner"


def test_compiled_code_under_the_trace(tmp_path):
    # See Note [Dynamo off in the modes]: dynamo must neither trace into the mode nor lose its calls.
    from atenmap.trace import record

    f = torch.compile(lambda x: x.sin() + 1, backend="eager")
    x = torch.randn(4)
    with amtrace.trace(dispatch=True) as t:
        y = f(x)
        torch.add(y, 1)
    ops = [c.op for c in t.recording.calls]
    assert ops == ["aten::sin", "aten::add.Tensor", "aten::add.Tensor"]
    assert all(c.stack and c.stack[-1].file == __file__ for c in t.recording.calls)
    assert record._NO_DYNAMO == ("__wrapped__" not in record._Dispatch.__dict__["__torch_dispatch__"].__dict__)


LINES = textwrap.dedent("""\
    import torch
    x = torch.randn(4, 4)

    def step(a):
        b = torch.add(a, a)          # line 5: a call, its line recorded by the profiler
        c = b + a                    # line 6: an operator, no call event: from the bytecode
        d = c[0]                     # line 7
        e = torch.mm(b, c)           # line 8
        return e @ a, d              # line 9

    step(x)                          # line 11
""")


def test_profiler_gives_statement_lines_of_calls_and_operators(tmp_path):
    """The default recorder (the profiler alone): the exact line of each statement, for calls from the
    profiler's own caller lines, for operators from the bytecode (Note [Lines of operators without a call])."""
    p = tmp_path / "lines.py"
    p.write_text(LINES)
    with amtrace.trace() as t:
        runpy.run_path(str(p), run_name="__main__")
    got = [(c.op, c.stack[-1].line, c.stack[-1].exact) for c in t.recording.calls if c.stack[-1].file == str(p)]
    want = [("aten::add.Tensor", 5), ("aten::add.Tensor", 6), ("aten::select.int", 7), ("aten::mm", 8), ("aten::mm", 9)]
    assert [(op, line) for op, line, _ in got if (op, line) in want] == want and all(ex for *_, ex in got[1:]), got
    mm = [c for c in t.recording.calls if c.op == "aten::mm"]
    assert mm[-1].parents == ("aten::matmul",) and mm[-1].function is None and mm[0].function == "torch.mm"
    assert all(c.stack[-2].line == 11 for c in t.recording.calls if c.stack[-1].file == str(p) and c.stack[-1].line > 4)


def test_torch_warnings_are_prefixed_once(tmp_path):
    """Warnings torch raises inside atenmap's own work go to stderr once, prefixed, after the report."""
    import subprocess
    import sys

    (tmp_path / "w.py").write_text("import torch\ntorch.ones(2) * 2\n")
    from .conftest import FIXTURE_TREE, REPO

    env = {**__import__("os").environ, "PYTHONPATH": str(REPO / "src"), "ATENMAP_CACHE": str(tmp_path / "c")}
    r = subprocess.run([sys.executable, "-m", "atenmap", "trace", "-s", str(FIXTURE_TREE), "--", "w.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    warned = [ln for ln in r.stderr.splitlines() if "Warning" in ln and not ln.startswith("USDT:")]
    # this box's torch warns at import ("Failed to initialize NumPy"): once, prefixed; nothing raw
    assert all(ln.startswith("atenmap: warning: torch warned: ") for ln in warned), r.stderr
    assert len(warned) == len(set(warned)) and not any(ln.lstrip().startswith("cpu = ") for ln in r.stderr.splitlines())
    assert "w.py:2" in r.stdout and "Traceback" not in r.stderr
