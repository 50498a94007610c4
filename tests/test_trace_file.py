"""Reading chrome traces that are broken, hostile or from other recorders (Note [Reading a trace file]):
every one gives the answers it allows and one note per thing it lacks (issue 20's bad input, issue 23
item 4: deep nesting and a list where an id is expected were tracebacks)."""
from __future__ import annotations

import gzip
import json

import pytest

from atenmap.trace.tracefile import MAX_DEPTH, read_recording, trace_user

from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run

MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
       "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")


def op(ext, ts=10, name="aten::mul", **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5,
            "args": {"External id": ext, **args}}


def kernel(ext, ts=100, name=MUL, **args):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 2,
            "args": {"External id": ext, "device": 0, **args}}


def py(name, ts, dur):
    return {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def write(tmp_path, doc, name="t.json") -> str:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(p)


def good_events():
    return [py("train.py(1): <module>", 0, 50), py("train.py(7): step", 5, 40), op(3, ts=10, **{"Input type": ["float", "float"]}),
            kernel(3)]


def test_a_trace_with_stacks_and_types(tmp_path):
    rec = read_recording(write(tmp_path, {"schemaVersion": 1, "traceEvents": good_events()}))
    (c,) = rec.calls
    assert (c.op, c.key, [k.name for k in c.kernels]) == ("aten::mul", "CUDA", [MUL])
    assert [(f.file, f.line, f.function, f.exact) for f in c.stack] == [("train.py", 1, "<module>", False),
                                                                       ("train.py", 7, "step", False)]
    assert c.types == ("float", "float") and rec.op_events == {3: 0}
    assert rec.notes == ["Python frames show the function's first line: a chrome trace does not record the calling line"]


def test_deep_nesting_is_skipped_not_a_recursion_error(tmp_path):
    deep = "[" * 200_000 + "]" * 200_000
    doc = ('{"schemaVersion": 1, "deviceProperties": ' + deep + ', "traceEvents": ['
           + json.dumps(op(3)) + ', {"ph": "X", "cat": "kernel", "name": "x", "args": ' + deep + '}, '
           + json.dumps(kernel(3)) + "]}")
    rec = read_recording(write(tmp_path, doc))
    assert [k.name for c in rec.calls for k in c.kernels] == [MUL]
    assert any("2 events skipped" in n and f"deeper than {MAX_DEPTH}" in n for n in rec.notes), rec.notes


def test_a_list_where_an_id_is_expected(tmp_path):
    events = [op([3]), kernel(3), op(4, ts=20), kernel([4], ts=30), kernel({"a": 1}, ts=40),
              {"ph": "X", "cat": "kernel", "name": ["not", "a", "name"], "ts": 1, "dur": 1}, 7, "text", None]
    rec = read_recording(write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    assert rec.calls == [] and len(rec.unattributed) == 3  # ids that are not ints link nothing
    assert any("3 fields of the wrong type ignored" in n for n in rec.notes), rec.notes
    assert any("3 events skipped" in n for n in rec.notes), rec.notes


def test_truncated_json_answers_what_came_before(tmp_path):
    text = json.dumps({"schemaVersion": 1, "traceEvents": good_events() + [op(9, ts=60), kernel(9, ts=200)]})
    cut = text[: text.index('"ts": 200') - 20]
    rec = read_recording(write(tmp_path, cut))
    assert [c.op for c in rec.calls] == ["aten::mul"] and rec.kernel_count == 1
    assert any("breaks off" in n for n in rec.notes), rec.notes


def test_gzip_list_document_no_stacks_no_types_no_schema(tmp_path):
    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump([op(3), kernel(3)], f)  # a bare list of events, as some tools write
    rec = read_recording(str(p))
    assert [c.op for c in rec.calls] == ["aten::mul"] and rec.calls[0].stack == ()
    notes = " ".join(rec.notes)
    assert "no Python stacks" in notes and "no input types" in notes and "no schemaVersion" in notes


def test_old_kineto_categories_and_links_through_the_runtime_event(tmp_path):
    """Kineto before External id on device events: Operator/Runtime/Kernel, linked by correlation."""
    events = [{"ph": "X", "cat": "Operator", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 1, "dur": 9,
               "args": {"External id": 5}},
              {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
               "args": {"External id": 5, "correlation": 77}},
              {"ph": "X", "cat": "Kernel", "name": MUL, "pid": 0, "tid": 7, "ts": 20, "dur": 2, "args": {"correlation": 77}}]
    rec = read_recording(write(tmp_path, {"traceEvents": events}))
    assert [(c.op, len(c.kernels)) for c in rec.calls] == [("aten::mul", 1)]
    assert any("carry no External id" in n for n in rec.notes)


def test_no_correlation_ids_at_all(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 1, "dur": 9, "args": {}},
              {"ph": "X", "cat": "kernel", "name": MUL, "ts": 20, "dur": 2, "args": {}}]
    rec = read_recording(write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    assert rec.calls == [] and [k.name for k in rec.unattributed] == [MUL]


@pytest.mark.parametrize("doc,msg", [("", "not a chrome trace"), ("{not json", "not a readable chrome trace"),
                                     ("42", "not a chrome trace")])
def test_nothing_readable_is_one_error(tmp_path, capsys, doc, msg):
    code, out, err = cli_run(capsys, "kernel", "--from-trace", write(tmp_path, doc), "-s", str(FIXTURE_TREE),
                             drop=PROGRESS)
    assert code == 1 and out == "" and err.count("\n") == 1 and msg in err and "Traceback" not in err


def test_cli_on_hostile_traces_answers_with_notes(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    doc = ('{"schemaVersion": 1, "traceEvents": [' + json.dumps(op(3)) + ', {"cat": "kernel", "args": ' + deep
           + '}, ' + json.dumps(kernel([3])) + ", " + json.dumps(kernel(3)))  # truncated too
    code, out, err = cli_run(capsys, "kernel", "--from-trace", write(tmp_path, doc), "--json",
                             "-s", str(FIXTURE_TREE), drop=PROGRESS)
    assert code == 0 and "Traceback" not in err
    notes = [ln for ln in err.splitlines() if ln.startswith("atenmap: note: ")]
    assert len(notes) == len(set(notes)) and any("breaks off" in n for n in notes) and any("skipped" in n for n in notes)
    (a,) = json.loads(out)
    assert a["count"] == 2 and a["trace_operators"] == {"aten::mul.Tensor": 1}


def test_trace_user_frames():
    assert trace_user("train.py") and trace_user("mypkg/model.py") and trace_user("/home/me/x.py")
    for f in ("torch/nn/modules/module.py", "threading.py", "concurrent/futures/thread.py", "<string>",
              "/usr/lib/python3/site-packages/foo.py", "", "triton/runtime/jit.py"):
        assert not trace_user(f), f


def test_h200_fixture_reads_the_same_from_gzip_and_plain(tmp_path):
    src = REPO / "fixtures" / "trace" / "h200_mlp.json.gz"
    plain = tmp_path / "plain.json"
    with gzip.open(src, "rt") as f:
        plain.write_text(f.read())
    a, b = read_recording(src), read_recording(plain)
    assert [(c.op, c.stack, len(c.kernels)) for c in a.calls] == [(c.op, c.stack, len(c.kernels)) for c in b.calls]


def test_reader_never_raises_on_mutated_traces(tmp_path):
    """Fuzz (issue 23): a real trace cut, with bytes flipped and values swapped for other JSON types;
    each either reads (answers plus notes) or is one AtenmapError, never another exception."""
    import random

    from atenmap.errors import AtenmapError

    with gzip.open(REPO / "fixtures" / "trace" / "h200_mlp.json.gz", "rt") as f:
        text = f.read()
    rnd = random.Random(20)
    swaps = ["[1]", '{"a": [[[]]]}', '"x"', "null", "true", "-1e309", '"\\u0000"', "[" * 300 + "]" * 300]
    p = tmp_path / "m.json"
    for i in range(150):
        t = text
        kind = i % 3
        if kind == 0:
            t = t[: rnd.randrange(len(t))]
        elif kind == 1:
            pos = [rnd.randrange(len(t)) for _ in range(20)]
            chars = list(t)
            for q in pos:
                chars[q] = rnd.choice('{}[]",:0a\\\n')
            t = "".join(chars)
        else:
            for _ in range(10):
                q = t.find(": ", rnd.randrange(len(t)))
                if q < 0:
                    continue
                end = min((e for e in (t.find(",", q), t.find("}", q)) if e > 0), default=-1)
                if end > 0:
                    t = t[: q + 2] + rnd.choice(swaps) + t[end:]
        p.write_text(t)
        try:
            rec = read_recording(p)
        except AtenmapError:
            continue
        assert all(c.op for c in rec.calls)


def test_the_cycle_collector_is_as_it_was_after_a_read(tmp_path):
    """Note [No cycle collection while reading]: off during the read, as it was after it, also when the
    read fails; the events read the same either way."""
    import gc

    from atenmap.errors import AtenmapError
    from atenmap.trace.spill import stream_recording

    good = write(tmp_path, {"schemaVersion": 1, "traceEvents": good_events()})
    bad = write(tmp_path, "not json at all", name="bad.json")
    assert gc.isenabled()
    first = read_recording(good)
    assert gc.isenabled()
    with stream_recording(good) as rec:
        assert gc.isenabled()  # back on before the calls are made
        assert [c.op for c in rec.calls] == [c.op for c in first.calls]
    with pytest.raises(AtenmapError):
        read_recording(bad)
    assert gc.isenabled()
    gc.disable()
    try:
        assert [c.op for c in read_recording(good).calls] == [c.op for c in first.calls]
        with pytest.raises(AtenmapError):
            with stream_recording(bad):
                pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_non_objects_are_counted_however_the_buffer_falls(tmp_path):
    # Note [Events decoded in bulk]: a non-object decoded in a batch is skipped and counted as one
    # decoded alone is (7, "text" and null among objects that lie whole in the buffer)
    events = [op(1), 7, kernel(1), "text", op(2, ts=20), None, kernel(2, ts=30)]
    rec = read_recording(write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    assert any("3 events skipped" in n for n in rec.notes), rec.notes
