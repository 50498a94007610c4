"""``atenmap kernel --from-trace`` in bounded memory (trace/spill.py, Note [A trace larger than
memory]): the same answers, in the same order, with the same notes, as the reader that holds the
whole recording (``tracefile.read_recording``), on the H200 fixture traces, on broken and hostile
traces, on a backward pass on autograd's thread and on torch.compile's compiling region."""
from __future__ import annotations

import gzip
import json
import random

import pytest

from atenmap.errors import AtenmapError
from atenmap.trace.fromtrace import _answer, answer, trace_kernels_json, trace_kernels_text
from atenmap.trace.spill import HOLD, HOLD_BYTES, Repeat, _Held, _Stream, small_file, stream_recording
from atenmap.views.kernel import kernel_lines

from .conftest import REPO
from .test_trace_file import MUL, good_events, kernel, op, py, write

TRACES = REPO / "fixtures" / "trace"


def written(index, path, hold: int):
    """``answer(bounded=True)`` with ``hold`` rows kept before SQLite (Note [A small trace held]):
    0 writes every row, as the bounded read did before."""
    with stream_recording(path, hold=hold) as rec:
        return _answer(index, rec, rec.host)


def same_answers(index, path) -> None:
    held, bounded = answer(index, path, bounded=False), answer(index, path, bounded=True)
    lines = lambda m, count, guessed: kernel_lines(m, None, count, operators=guessed)  # noqa: E731
    for other in (bounded, written(index, path, 0), written(index, path, 3)):
        assert json.dumps(trace_kernels_json(other)) == json.dumps(trace_kernels_json(held))
        assert trace_kernels_text(other, lines) == trace_kernels_text(held, lines)
        assert (other.notes, other.events) == (held.notes, held.events)


@pytest.mark.parametrize("name", ["h200_kineto_small.json", "h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz",
                                  "h200_attn.chrome.json.gz", "h200_mlp.json.gz"])
def test_recorded_traces_answer_the_same(mini_index, name):
    same_answers(mini_index, TRACES / name)


def backward_and_compile_events():
    """A forward op on the main thread, a backward() whose ops run on autograd's thread (no Python
    frame), and ops dynamo runs while compiling (not calls; their kernels neither)."""
    main = [py("train.py(1): <module>", 0, 1000), py("train.py(7): step", 5, 400),
            op(3, ts=10, **{"Input type": ["float", "float"]}), kernel(3, ts=12),
            py("<built-in method run_backward of torch._C._EngineBase object at 0x7f>", 420, 300),
            py("torch/_dynamo/convert_frame.py(900): __call__", 800, 100), op(9, ts=810), kernel(9, ts=815)]
    back = [dict(op(5, ts=430, name="autograd::engine::evaluate_function: MulBackward0"), tid=2, dur=50),
            dict(op(6, ts=440, **{"Input type": ["float", "float"]}), tid=2, dur=10), kernel(6, ts=445),
            dict(op(7, ts=900), tid=3), kernel(7, ts=905)]  # 7: another thread after backward(): no frames
    return main + back + [kernel(42, ts=1200), kernel(0, ts=1300, name="Memset (Device)")]


@pytest.mark.parametrize("events", [good_events(), backward_and_compile_events(),
                                    [op([3]), kernel(3), op(4, ts=20), kernel([4], ts=30), 7, None],
                                    [{"ph": "X", "cat": "Operator", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 1,
                                      "dur": 9, "args": {"External id": 5}},
                                     {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                                      "ts": 2, "dur": 1, "args": {"External id": 5, "correlation": 77}},
                                     {"ph": "X", "cat": "Kernel", "name": MUL, "pid": 0, "tid": 7, "ts": 20, "dur": 2,
                                      "args": {"correlation": 77}}]])
def test_hand_written_traces_answer_the_same(mini_index, tmp_path, events):
    same_answers(mini_index, write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))


def test_backward_ops_take_the_backward_calls_stack(tmp_path):
    with stream_recording(write(tmp_path, {"schemaVersion": 1, "traceEvents": backward_and_compile_events()})) as rec:
        calls = list(rec.calls)
        unattributed = list(rec.unattributed)
    assert [c.op for c in calls] == ["aten::mul", "aten::mul", "aten::mul"]  # none of dynamo's
    fwd, bwd, after = calls
    assert [(f.file, f.line) for f in fwd.stack] == [("train.py", 1), ("train.py", 7)]
    assert [(f.file, f.line) for f in bwd.stack] == [("train.py", 1)] and bwd.function == "torch.Tensor.backward"
    assert bwd.node == "MulBackward0" and after.stack == ()
    assert [k.name for k in unattributed] == [MUL, "Memset (Device)"]


def test_ops_and_their_device_events_in_one_query(mini_index, tmp_path):
    """Note [One query for the ops and their device events]: an op's several device events in time
    order whatever their order in the file, an op with none, ties broken by file order; the same
    answers as the held reader."""
    memset = "Memset (Device)"
    events = [py("train.py(3): step", 0, 100), op(1, ts=10), kernel(1, ts=40, name=memset), kernel(1, ts=30),
              kernel(1, ts=30, name="sgemm_kernel"), op(2, ts=20), op(0, ts=25), kernel(2, ts=50), kernel(2, ts=50)]
    path = write(tmp_path, {"schemaVersion": 1, "traceEvents": events})
    with stream_recording(path) as rec:
        got = [(c.op, [(k.name, k.correlation) for k in c.kernels]) for c in rec.calls]
    assert got == [("aten::mul", [(MUL, 1), ("sgemm_kernel", 1), (memset, 1)]), ("aten::mul", [(MUL, 2), (MUL, 2)])]
    same_answers(mini_index, path)


def test_truncated_and_gzip_and_unreadable(mini_index, tmp_path):
    text = json.dumps({"schemaVersion": 1, "traceEvents": good_events() + [op(9, ts=60), kernel(9, ts=200)]})
    same_answers(mini_index, write(tmp_path, text[: text.index('"ts": 200') - 20]))
    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump([op(3), kernel(3)], f)
    same_answers(mini_index, p)
    with pytest.raises(AtenmapError, match="not a readable chrome trace"):
        answer(mini_index, write(tmp_path, "{not json", "bad.json"))


def test_mutated_traces_answer_the_same_or_fail_the_same(mini_index, tmp_path):
    with gzip.open(TRACES / "h200_mlp.json.gz", "rt") as f:
        text = f.read()
    rnd = random.Random(7)
    p = tmp_path / "m.json"
    for i in range(24):
        t = text[: rnd.randrange(len(text))] if i % 2 else text
        if i % 3 == 0:
            chars = list(t)
            for q in [rnd.randrange(len(t)) for _ in range(10)]:
                chars[q] = rnd.choice('{}[]",:0a\\\n')
            t = "".join(chars)
        p.write_text(t)
        try:
            held = answer(mini_index, p, bounded=False)
        except AtenmapError as exc:
            with pytest.raises(AtenmapError, match=str(exc)[:30].replace("(", r"\(").replace(")", r"\)")):
                answer(mini_index, p)
            continue
        bounded = answer(mini_index, p)
        assert json.dumps(trace_kernels_json(bounded)) == json.dumps(trace_kernels_json(held))


def test_small_plain_traces_are_held_others_written(tmp_path):
    """Note [A small trace held]: a plain trace below the cap is walked from memory; one past it,
    one with an id shared by two ops, or one whose device events lack External ids is written to
    SQLite (and answers the same: same_answers above, with 0 and 3 rows held)."""
    def rows_of(events, hold=HOLD):
        s = _Stream(write(tmp_path, {"schemaVersion": 1, "traceEvents": events}), None, None, hold)
        with s:
            return type(s.rows)

    plain = [py("train.py(3): step", 0, 100), op(1, ts=10), kernel(1, ts=40), op(2, ts=20), kernel(2, ts=50)]
    assert rows_of(plain) is _Held and rows_of(plain, hold=5) is _Held
    assert rows_of(plain, hold=0) is not _Held and rows_of(plain, hold=4) is not _Held  # past the cap
    assert rows_of(plain + [op(2, ts=60)]) is not _Held  # External id 2 on two ops
    unlinked = [op(5, ts=1), {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2,
                              "dur": 1, "args": {"External id": 5, "correlation": 77}},
                {"ph": "X", "cat": "kernel", "name": MUL, "pid": 0, "tid": 7, "ts": 20, "dur": 2, "args": {"correlation": 77}}]
    assert rows_of(unlinked) is not _Held


def test_only_small_files_are_held(tmp_path):
    """Note [A small trace held]: a file of more than HOLD_BYTES of JSON, plain or gzip, is written
    from its start; the H200 fixtures (gzip) are small."""
    assert small_file(TRACES / "h200_mlp.json.gz") and small_file(TRACES / "h200_kineto_small.json")
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"traceEvents": []}) + " " * HOLD_BYTES)
    assert not small_file(big) and not small_file(tmp_path) and not small_file(tmp_path / "none.json")
    with gzip.open(tmp_path / "big.json.gz", "wt") as f:
        f.write(big.read_text())
    assert not small_file(tmp_path / "big.json.gz")


def repeated_ancestries_events():
    """Note [One answer per ancestry]: the same ancestries many times, with what is each row's own
    varied (input types, durations, threads, a backward thread's stack by its start), an op
    inside an aten op, a frame that recurses, a child that outlives its parent (the walk keeps
    the parent open below it, as nest() does), and a compiling region met twice."""
    evs, ext = [], 1
    for i in range(6):
        t = i * 1000.0
        tid = 1 + i % 2
        evs += [dict(py("train.py(1): <module>", t, 900), tid=tid), dict(py("train.py(7): step", t + 5, 800), tid=tid),
                dict(py("train.py(7): step", t + 6, 700), tid=tid),  # recursion: the same frame inside itself
                dict(op(ext, ts=t + 10, **{"Input type": ["float", "float"] if i % 3 else ["double", "Scalar"]}),
                     tid=tid, dur=5 + i),
                kernel(ext, ts=t + 12),
                dict(op(ext + 1, ts=t + 20, name="aten::linear"), tid=tid, dur=50),
                dict(op(ext + 2, ts=t + 21, name="aten::addmm"), tid=tid, dur=10), kernel(ext + 2, ts=t + 25),
                dict(py("train.py(9): late", t + 100, 50), tid=tid),
                dict(py("train.py(11): outlives", t + 110, 100), tid=tid),  # ends after its parent
                dict(op(ext + 3, ts=t + 160), tid=tid), kernel(ext + 3, ts=t + 165),
                dict(py("torch/_dynamo/convert_frame.py(900): __call__", t + 300, 100), tid=tid),
                dict(op(ext + 4, ts=t + 310), tid=tid), kernel(ext + 4, ts=t + 315),
                py("<built-in method run_backward of torch._C._EngineBase object at 0x7f>", t + 500, 100 + 50 * (i % 2)),
                dict(op(ext + 5, ts=t + 520), tid=9), kernel(ext + 5, ts=t + 525),
                dict(op(ext + 6, ts=t + 620), tid=9), kernel(ext + 6, ts=t + 625)]  # after backward() on odd steps only
        ext += 10
    return evs


def test_repeated_ancestries_answer_the_same(mini_index, tmp_path):
    """The walk's nodes per ancestry (Note [One answer per ancestry]) give what the held reader's
    walk over every event gives, calls in the same order with the same fields."""
    path = write(tmp_path, {"schemaVersion": 1, "traceEvents": repeated_ancestries_events()})
    same_answers(mini_index, path)
    with stream_recording(path, hold=0) as rec:
        got = [(c.op, c.stack, c.function, c.parents, c.node, c.cpu_us, c.types, c.thread, c.correlation,
                [(k.name, k.correlation) for k in c.kernels]) for c in rec.calls]
    from atenmap.trace.tracefile import read_recording

    want = [(c.op, c.stack, c.function, c.parents, c.node, c.cpu_us, c.types, c.thread, c.correlation,
             [(k.name, k.correlation) for k in c.kernels]) for c in read_recording(path).calls]
    assert got == want and len(got) == 6 * 5  # no op of the compiling region
    assert {c[3] for c in got if c[0] == "aten::addmm"} == {("aten::linear",)}
    # Note [Repeated calls counted, not made]: a repeat names the first call with all its signature
    with stream_recording(path, hold=0, repeats=True) as rec:
        items = list(rec.calls)
        firsts = rec.firsts
    repeats = [(k, r) for k, r in enumerate(items) if isinstance(r, Repeat)]
    assert repeats and all(r.first in firsts and want[r.first][:5] == want[k][:5] and want[r.first][6] == want[k][6]
                           and [n for n, _ in want[r.first][9]] == [n for n, _ in want[k][9]] for k, r in repeats)
    assert [r.cpu_us for _, r in repeats] == [want[k][5] for k, _ in repeats]


def test_the_walk_keeps_no_more_nodes_than_its_limit():
    """Past its limit the walk still makes a node per new ancestry, each with the same parents
    and answers, but keeps none of them (memory stays bounded)."""
    from atenmap.trace.spill import _walk

    rows = [(1, 10 * i, 10 * i + 5, i, "py", f"train.py({i}): f{i}", 0, None, 0) for i in range(20)]
    rows += [(1, 300, 400, 20, "py", "train.py(1): f1", 0, None, 0), (1, 310, 320, 21, "op", "aten::mm", 3, None, 0)]
    chains = []
    for limit in (None, 1):
        out = []
        for ctx, row in (_walk(iter(rows)) if limit is None else _walk(iter(rows), limit)):
            names = []
            while ctx.parent is not None:
                names.append(ctx.event.name)
                ctx = ctx.parent
            out.append((row[3], names, ctx.kids and len(ctx.kids)))
        chains.append(out)
    assert [c[:2] for c in chains[0]] == [c[:2] for c in chains[1]]
    assert chains[0][-1][1] == ["aten::mm", "train.py(1): f1"]
    assert chains[0][-1][2] == 20 and chains[1][-1][2] == 1  # the first node only


def test_the_latest_runtime_event_of_a_correlation_links(mini_index, tmp_path):
    """A correlation id reused by a later runtime event, a flush of rows between the two (more than
    spill.BATCH events): the device event without an External id takes the later one's op, as the
    held reader does (its runtime map: the last one wins)."""
    from atenmap.trace.spill import BATCH

    def runtime(ext, ts):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
                "args": {"External id": ext, "correlation": 77}}

    pad = dict(py("train.py(3): step", 2, 0.5), args={"pad": "x" * 600})  # the file: buffers of 1 MB, a flush between
    events = [runtime(5, 1)] + [dict(pad, ts=2 + i) for i in range(2 * BATCH)]
    events += [op(5, ts=9000), op(6, ts=9100, name="aten::add"), runtime(6, 9101),
               {"ph": "X", "cat": "kernel", "name": MUL, "pid": 0, "tid": 7, "ts": 9200, "dur": 2, "args": {"correlation": 77}}]
    path = write(tmp_path, {"schemaVersion": 1, "traceEvents": events})
    with stream_recording(path, hold=0) as rec:
        assert [(c.op, [k.name for k in c.kernels]) for c in rec.calls] == [("aten::add", [MUL])]
    same_answers(mini_index, path)


def test_no_cycles_made_per_event(mini_index, tmp_path):
    """Note [No cycle collection while reading]: the bounded answer runs with the collector off, so
    what it leaves for the collector must not grow with the events (here: none per repeated step)."""
    import gc

    def garbage(steps: int) -> int:
        events = []
        for i in range(steps):
            t = i * 100.0
            events += [py("train.py(1): <module>", t, 90), py("train.py(7): step", t + 1, 80),
                       op(i + 1, ts=t + 2, **{"Input type": ["float", "float"]}), kernel(i + 1, ts=t + 3)]
        path = write(tmp_path, {"schemaVersion": 1, "traceEvents": events}, f"s{steps}.json")
        was = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            ans = answer(mini_index, path)
            found = gc.collect()
        finally:
            if was:
                gc.enable()
        assert ans.events == steps
        return found

    garbage(50)  # the first answer fills the caches (chains, names)
    assert garbage(600) == garbage(6000) < 100


@pytest.mark.parametrize("name", ["h200_conv.chrome.json.gz", "h200_attn.chrome.json.gz"])
@pytest.mark.parametrize("run", [1, 7, 300])
def test_host_rows_in_many_runs_answer_the_same(mini_index, name, run):
    """Note [Host rows as sorted runs]: host rows written as sorted runs of ``run`` rows (1: a run per
    row, over FANIN runs merged into longer ones first) answer as the held reader does, and leave
    at most FANIN run files, with one run in memory."""
    from atenmap.trace.spill import FANIN

    path = TRACES / name
    held = answer(mini_index, path, bounded=False)
    lines = lambda m, count, guessed: kernel_lines(m, None, count, operators=guessed)  # noqa: E731
    s = _Stream(path, None, None, 0, True, run)
    with s as rec:
        got = _answer(mini_index, rec, rec.host)
        files, pending, count = len(s.host.files), len(s.host.pending), s.host.count
    assert json.dumps(trace_kernels_json(got)) == json.dumps(trace_kernels_json(held))
    assert trace_kernels_text(got, lines) == trace_kernels_text(held, lines)
    assert (got.notes, got.events) == (held.notes, held.events)
    assert count > FANIN and 1 < files <= FANIN and pending < run


@pytest.mark.parametrize("run", [1, 2, 5])
def test_hand_written_traces_in_many_runs_answer_the_same(mini_index, tmp_path, run):
    """Note [Host rows as sorted runs] on the backward thread's and the compiler's events and on a
    trace whose ids are shared (not plain: each op's device events looked up apart), a few rows
    per run."""
    shared = good_events() + [op(3, ts=60), kernel(3, ts=70), op(4, ts=80)]  # External id 3 on two ops
    for k, events in enumerate((backward_and_compile_events(), shared, repeated_ancestries_events())):
        path = write(tmp_path, {"schemaVersion": 1, "traceEvents": events}, name=f"t{k}.json")
        held = answer(mini_index, path, bounded=False)
        with stream_recording(path, hold=0, repeats=True, run=run) as rec:
            got = _answer(mini_index, rec, rec.host)
        assert json.dumps(trace_kernels_json(got)) == json.dumps(trace_kernels_json(held))
        assert (got.notes, got.events) == (held.notes, held.events)


@pytest.mark.parametrize("events", [good_events(), backward_and_compile_events(),
                                    [py("train.py(3): step", 0, 100), op(1, ts=10), dict(op(2, ts=12), dur=3),
                                     kernel(1, ts=40), op(1, ts=60), kernel(1, ts=70), op(4, ts=80), kernel(4, ts=85)]])
@pytest.mark.parametrize("hold", [0, HOLD])
def test_the_ops_told_are_the_recordings_op_events(tmp_path, events, hold):
    """``stream_recording(ops=...)`` tells each op event's External id and its call as the held
    recording's ``op_events`` has them (Note [The annotations of a long trace]): an op inside a call
    takes its number, the compiler's ops none, a later op of an id replaces an earlier one; with
    Repeats too (their indexes run on)."""
    from atenmap.trace.tracefile import read_recording

    path = write(tmp_path, {"schemaVersion": 1, "traceEvents": events})
    for path in (path, TRACES / "h200_conv.chrome.json.gz", TRACES / "h200_attn.json.gz"):
        told: dict[int, int] = {}
        with stream_recording(path, hold=hold, repeats=True, ops=lambda ext, i, proc: told.__setitem__(ext, i)) as rec:
            list(rec.calls)
        want = read_recording(path).op_events
        assert want and told == want
