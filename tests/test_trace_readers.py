"""The compiled trace reader (msgspec, Note [A compiled reader]) and the json one give the same
answers, byte for byte, with the same notes and counts: on the H200 fixture traces, on hand-written,
backward and compiled ones, and on every bad input of Note [Reading a trace file] (truncated,
concatenated, too deep, too long an integer, fields of the wrong type, lone surrogates, mutated
files). The reader is chosen as a user chooses it: ``ATENMAP_TRACE_JSON``."""
from __future__ import annotations

import gzip
import json
import random

import pytest

from atenmap.errors import AtenmapError
from atenmap.trace.fromtrace import answer, trace_kernels_json, trace_kernels_text
from atenmap.trace.tracefile import TraceReader, fast_decoder
from atenmap.views.kernel import kernel_lines

from .conftest import REPO, skip_or_fail_on_ci
from .test_trace_file import MUL, good_events, kernel, op, py, write
from .test_trace_spill import backward_and_compile_events, repeated_ancestries_events

TRACES = REPO / "fixtures" / "trace"


@pytest.fixture
def msgspec_installed():
    try:
        import msgspec  # noqa: F401
    except ImportError:
        skip_or_fail_on_ci("msgspec is not installed (pip install -e '.[test]' installs it)")


def answers(index, path, reader: str, monkeypatch) -> list:
    """What ``kernel --from-trace`` gives with ``reader`` (json, msgspec): the JSON and text
    answers, notes and event count, of the bounded and the held read; or the error."""
    monkeypatch.setenv("ATENMAP_TRACE_JSON", reader)
    lines = lambda m, count, guessed: kernel_lines(m, None, count, operators=guessed)  # noqa: E731
    out = []
    for bounded in (True, False):
        try:
            a = answer(index, path, bounded=bounded)
        except AtenmapError as exc:
            out.append(("error", str(exc)))
            continue
        out.append((json.dumps(trace_kernels_json(a)), trace_kernels_text(a, lines), a.notes, a.events))
    return out


def same(index, path, monkeypatch) -> list:
    fast, plain = answers(index, path, "msgspec", monkeypatch), answers(index, path, "json", monkeypatch)
    assert fast == plain
    return plain


def doc(events) -> dict:
    return {"schemaVersion": 1, "traceEvents": events}


@pytest.mark.parametrize("name", ["h200_kineto_small.json", "h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz",
                                  "h200_attn.chrome.json.gz", "h200_mlp.json.gz", "h200_conv.json.gz"])
def test_recorded_traces(mini_index, monkeypatch, msgspec_installed, name):
    same(mini_index, TRACES / name, monkeypatch)


@pytest.mark.parametrize("events", [good_events(), backward_and_compile_events(), repeated_ancestries_events()])
def test_hand_written_traces(mini_index, tmp_path, monkeypatch, msgspec_installed, events):
    same(mini_index, write(tmp_path, doc(events)), monkeypatch)


ODD_EVENTS = [  # each breaks the typed decode of its buffer, or is read by _event, not inline
    dict(op(5, ts=20), ts="20"), dict(op(6, ts=30), dur=None), dict(op([7], ts=40)), dict(kernel(8, ts=50), ts=True),
    dict(op(9, ts=60), pid=[1]), dict(op(10, ts=70), tid=1.5), dict(kernel(11, ts=80), args=[1]),
    dict(kernel(12, ts=90), args={"External id": 12, "device": "0"}), dict(op(13, ts=100), ph="B"),
    dict(op(14, ts=110), name=None), dict(op(15, ts=120), cat=None), dict(op(16, ts=125), cat=7),
    op(2 ** 70, ts=130), kernel(2 ** 70, ts=131), dict(op(17, ts=140), **{"Input type": ["float", 3, None]}),
    dict(op(18, ts=150), args={"External id": 18, "Input type": [["nested"], "float"]}), kernel(18, ts=151),
    dict(py("train.py(3): st\u00e9p", 160, 10)), dict(op(19, ts=170, name="aten::m\u00fcl")), kernel(19, ts=171),
    dict(op(20, ts=5e15)), dict(kernel(20, ts=180), dur=-5e15), 7, None, "text", [op(21)],
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
     "args": {"External id": 22, "correlation": "77"}},
    {"ph": "X", "cat": "kernel", "name": MUL, "pid": "0", "tid": 7, "ts": 200, "dur": 2, "args": {"correlation": 77}},
    {"ph": "X", "cat": "python_function", "name": "train.py(9): f", "pid": "1", "tid": "1", "ts": 0, "dur": 300},
    {"ph": "X", "cat": "Operator", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 210, "dur": 9, "args": {"External id": 23}},
    {"ph": "X", "cat": "Kernel", "name": MUL, "pid": 0, "tid": 7, "ts": 211, "dur": 2, "args": {"External id": 23}},
    {"ph": "i", "cat": "kernel", "name": "instant"}, {"ph": "M", "name": "process_name", "args": {"name": "python"}},
]


@pytest.mark.parametrize("k", range(len(ODD_EVENTS)))
def test_each_odd_event_among_good_ones(mini_index, tmp_path, monkeypatch, msgspec_installed, k):
    """One odd event among good ones: where it makes the typed decode fail, its whole buffer is
    read by json; where not, _event reads it as json's dict."""
    same(mini_index, write(tmp_path, doc(good_events() + [ODD_EVENTS[k]] + [op(30, ts=300), kernel(30, ts=310)])),
         monkeypatch)


def test_all_odd_events_in_one_trace(mini_index, tmp_path, monkeypatch, msgspec_installed):
    same(mini_index, write(tmp_path, doc(good_events() + ODD_EVENTS)), monkeypatch)


def surrounded(bad: str) -> str:
    return ('{"schemaVersion": 1, "traceEvents": [' + json.dumps(op(3, ts=10)) + ", " + json.dumps(kernel(3, ts=20))
            + ", " + bad + ", " + json.dumps(op(4, ts=30)) + ", " + json.dumps(kernel(4, ts=40)) + "]}")


@pytest.mark.parametrize("bad", [
    '{"ph": "X", "cat": "kernel", "name": "digits", "pad": ' + "7" * 4301 + "}",  # msgspec would skip it: json refuses
    '{"ph": "X", "cat": "kernel", "name": "digits", "ts": ' + "7" * 4301 + "}",
    '{"ph": "X", "cat": "kernel", "name": "edge", "pad": ' + "7" * 4300 + "}",  # json's limit itself: read
    '{"ph": "X", "cat": "kernel", "name": "nan", "ts": NaN, "args": {"External id": 3}}',
    '{"ph": "X", "cat": "kernel", "name": "inf", "ts": 1e999, "args": {"External id": 3}}',
    '{"ph": "X", "cat": "kernel", "name": "k\\ud800", "pad": "\\udfff", "args": {"External id": 3}}',
    '{"ph": "X", "cat": "kernel", "name": "dup", "name": 5, "args": {"External id": 3}}',
    '{"ph": "X", "cat": "kernel", "name": "dup", "args": {"External id": [3], "External id": 3}}',
    '{"ph": "X", "cat": "kernel", "name": "comma", "args": {"External id": 3,}}',
    '{"ph": "X", "cat": "kernel", "name": "deep", "pad": ' + "[" * 5000 + "]" * 5000 + "}",
    "[" * 100_000 + "]" * 100_000,
])
def test_bad_events_are_skipped_alike(mini_index, tmp_path, monkeypatch, msgspec_installed, bad):
    same(mini_index, write(tmp_path, surrounded(bad)), monkeypatch)


def _decodes(text: str) -> bool:
    try:
        json.loads(text)
    except RecursionError:
        return False
    return True


def test_nesting_at_the_interpreter_limit(mini_index, tmp_path, monkeypatch, msgspec_installed):
    """At the depth where json's decoder gives up (about the recursion limit) the compiled reader
    gives up first, so json decides (Note [A compiled reader]), depth by depth."""
    limit = next(d for d in range(100, 1 << 16, 100) if not _decodes("[" * d + "]" * d))  # 1000 on 3.11, 1500 on 3.12
    for depth in range(limit - 140, limit + 5):
        bad = '{"ph": "X", "cat": "kernel", "name": "deep", "pad": ' + "[" * depth + "]" * depth + "}"
        text = surrounded(bad)
        p = write(tmp_path, text)
        got = []
        for fast in (True, False):
            r = TraceReader(p, fast=fast)
            got.append((sum(len(b) for b in r.batches()), r.skipped))
        assert got[0] == got[1], depth


def test_truncated_concatenated_and_gzip(mini_index, tmp_path, monkeypatch, msgspec_installed):
    text = json.dumps(doc(good_events() + [op(9, ts=60), kernel(9, ts=200)]))
    same(mini_index, write(tmp_path, text[: text.index('"ts": 200') - 20]), monkeypatch)
    same(mini_index, write(tmp_path, text + text, "two.json"), monkeypatch)
    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump([op(3), kernel(3)], f)
    same(mini_index, p, monkeypatch)
    assert same(mini_index, write(tmp_path, "{not json", "bad.json"), monkeypatch)[0][0] == "error"


def test_mutated_traces(mini_index, tmp_path, monkeypatch, msgspec_installed):
    with gzip.open(TRACES / "h200_mlp.json.gz", "rt") as f:
        text = f.read()
    rnd = random.Random(35)
    p = tmp_path / "m.json"
    for i in range(16):
        t = text[: rnd.randrange(len(text))] if i % 2 else text
        if i % 4 != 1:
            chars = list(t)
            for q in [rnd.randrange(len(t)) for _ in range(8)]:
                chars[q] = rnd.choice('{}[]",:0a\\\n9e-')
            t = "".join(chars)
        p.write_text(t)
        same(mini_index, p, monkeypatch)


def test_a_large_trace_in_many_buffers(mini_index, tmp_path, monkeypatch, msgspec_installed):
    """More than one buffer of bulk decode (1 MB), spilled to SQLite: the bench's shape."""
    events = []
    for i in range(9000):
        events += [py("train.py(40): step", i * 10.0, 9), op(i, ts=i * 10.0 + 2, **{"Input type": ["float", "float"]}),
                   kernel(i, ts=i * 10.0 + 5)]
    out = same(mini_index, write(tmp_path, doc(events)), monkeypatch)
    assert out[0][3] == 9000


def test_the_reader_is_chosen_by_the_environment(monkeypatch, msgspec_installed):
    monkeypatch.setenv("ATENMAP_TRACE_JSON", "json")
    assert fast_decoder() is None and fast_decoder(True) is not None
    monkeypatch.setenv("ATENMAP_TRACE_JSON", "msgspec")
    assert fast_decoder() is not None and fast_decoder(False) is None
    monkeypatch.delenv("ATENMAP_TRACE_JSON")
    assert fast_decoder() is not None  # installed: used
    monkeypatch.setenv("ATENMAP_TRACE_JSON", "simdjson")
    with pytest.raises(AtenmapError, match="ATENMAP_TRACE_JSON='simdjson': say json or msgspec"):
        fast_decoder()
