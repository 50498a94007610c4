"""trace/sessions.py: the default recorder as a row of profiler sessions with gaps (Note [No
recording while compiling]), on the real torch.profiler; no torch.compile here (see
test_trace_compile.py for the gaps torch.compile makes)."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="atenmap trace needs torch; install it to run these tests")

import atenmap.trace as amtrace  # noqa: E402  (after the skip)
from atenmap.errors import AtenmapError  # noqa: E402


def test_a_paused_stretch_is_not_recorded_and_the_rest_is_one_recording(tmp_path, mini_index):
    a, b = torch.ones(2), torch.ones(2)
    with amtrace.trace(chrome=True) as t:
        torch.add(a, b)
        sessions = t._recorder.prof
        sessions.pause()
        sessions.pause()  # nested (a compile inside a compile): one gap
        torch.mul(a, b)
        sessions.resume()
        torch.div(a, b)  # still paused
        sessions.resume()
        torch.sub(a, b)
    ops = [c.op for c in t.recording.calls]
    assert "aten::add.Tensor" in ops and "aten::sub.Tensor" in ops
    assert "aten::mul.Tensor" not in ops and "aten::div.Tensor" not in ops
    assert sessions.gaps == 1 and any("paused while torch.compile compiled (1 time(s))" in n for n in t.recording.notes)
    # the call after the gap has the test's own line in its stack, as one before it
    sub = next(c for c in t.recording.calls if c.op == "aten::sub.Tensor")
    assert sub.stack and sub.stack[-1].file == __file__
    out = tmp_path / "chrome.json"
    t.write_chrome(out, t.report(index=mini_index))
    events = json.loads(out.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert {"aten::add", "aten::sub"} <= names and "aten::mul" not in names  # both sessions, one file
    ids = [e["args"]["External id"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})]
    assert len(ids) == len(set(ids))  # op ids go on across sessions
    assert any(e.get("args", {}).get("atenmap.op") == "aten::sub.Tensor [CPU]" for e in events)


def test_a_pause_before_the_start_or_after_the_stop_starts_nothing():
    with amtrace.trace() as t:
        torch.ones(1)
    sessions = t._recorder.prof
    sessions.pause()
    sessions.resume()
    assert sessions.live is None and sessions.gaps == 0


def test_chrome_not_asked_for_is_one_error(tmp_path, mini_index):
    with amtrace.trace() as t:
        torch.ones(1)
    with pytest.raises(AtenmapError, match="no chrome trace was recorded"):
        t.write_chrome(tmp_path / "never.json", t.report(index=mini_index))
