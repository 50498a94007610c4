"""``kernel --from-trace T --chrome OUT`` (issue 35 item 4; Note [A recorded trace written back] in
trace/fromtrace.py): the H200 fixture traces written back load as JSON with the same events, each
kernel, memcpy and memset event carrying its table row (op, ATen line, user line) in its args, the
same rows the table prints; T is never written over; a trace that cannot be written back is one line."""
from __future__ import annotations

import gzip
import json
import os
from collections import Counter

import pytest

from atenmap.trace.chrome import Annotations
from atenmap.trace.fromtrace import answer
from atenmap.trace.summary import rows as summary_rows
from atenmap.trace.tracefile import CHUNK

from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run

TRACES = REPO / "fixtures" / "trace"
SRC = ("-s", str(FIXTURE_TREE), "--no-codegen")
DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")


def load(path):
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        return json.load(f)


def plain(ev: dict) -> dict:
    """An event without what atenmap added."""
    return {**ev, "args": {k: v for k, v in ev.get("args", {}).items() if not k.startswith("atenmap.")}}


@pytest.mark.parametrize("name", ["h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz", "h200_attn.chrome.json.gz"])
def test_every_kernel_event_carries_its_table_row(name, tmp_path, capsys):
    out = tmp_path / "annotated.json"
    code, table, err = cli_run(capsys, "kernel", "--from-trace", str(TRACES / name), "--chrome", str(out),
                               "--format", "json", *SRC, drop=PROGRESS)
    assert code == 0 and "Traceback" not in err
    assert f"atenmap: wrote {out} (" in err and not list(tmp_path.glob("*.atenmap-tmp"))
    before, after = load(TRACES / name), load(out)
    assert {k: v for k, v in after.items() if k != "traceEvents"} == {k: v for k, v in before.items() if k != "traceEvents"}
    assert len(after["traceEvents"]) == len(before["traceEvents"])
    assert [plain(e) for e in after["traceEvents"]] == [plain(e) for e in before["traceEvents"]]
    device = [e for e in after["traceEvents"] if e.get("cat") in DEVICE]
    assert device and all({"atenmap.call", "atenmap.op", "atenmap.user"} <= set(e["args"]) for e in device)
    # the annotations are the table: summed per (kernel, op, ATen line, user line), they give its rows
    got = Counter()
    for e in device:
        a = e["args"]
        got[(e["name"], a["atenmap.op"].rsplit(" [", 1)[0], a.get("atenmap.aten", ""), a["atenmap.user"])] += 1
    rows = json.loads(table)["rows"]
    assert got == Counter({(r["kernel"], r["op"], r["aten"], r["user"]): r["count"] for r in rows})


def test_detail_writes_gzip_and_answers_as_without(mini_index, tmp_path, capsys):
    path = TRACES / "h200_conv.chrome.json.gz"
    out = tmp_path / "conv.json.gz"
    ans = answer(mini_index, path, chrome=out)
    assert ans.annotated > 0 and len(load(out)["traceEvents"]) == len(load(path)["traceEvents"])
    assert sorted(summary_rows(ans), key=repr) == sorted(summary_rows(answer(mini_index, path)), key=repr)
    code, text, err = cli_run(capsys, "kernel", "--from-trace", str(path), "--detail", "--chrome", str(out), *SRC,
                              drop=PROGRESS)
    assert code == 0 and "launched in this trace by:" in text and f"wrote {out} ({ans.annotated} events" in err


def test_the_input_is_never_written_over(tmp_path, capsys):
    t = tmp_path / "t.json.gz"
    t.write_bytes((TRACES / "h200_mlp.chrome.json.gz").read_bytes())
    os.symlink(t, tmp_path / "link.json.gz")
    for out in (t, tmp_path / "link.json.gz", tmp_path / "." / "t.json.gz"):
        code, out_text, err = cli_run(capsys, "kernel", "--from-trace", str(t), "--chrome", str(out), *SRC,
                                      errors_only=True)
        assert code == 1 and out_text == "" and err.count("\n") == 1
        assert "that is the trace being read; atenmap never writes over its input" in err
    assert t.read_bytes() == (TRACES / "h200_mlp.chrome.json.gz").read_bytes()


def test_bad_uses_are_one_line(tmp_path, capsys):
    cut = tmp_path / "cut.json"
    text = gzip.open(TRACES / "h200_mlp.chrome.json.gz", "rt").read()
    cut.write_text(text[: 2 * len(text) // 3])  # its events answer; its JSON does not close
    out = tmp_path / "out.json"
    code, _, err = cli_run(capsys, "kernel", "--from-trace", str(cut), "--chrome", str(out), *SRC, errors_only=True)
    assert code == 1 and err.count("\n") == 1 and "cannot be written back as a chrome trace" in err
    assert not out.exists() and not list(tmp_path.glob("*.atenmap-tmp"))
    for args, says in ((["--chrome", str(tmp_path / "no" / "x.json")], "no folder"),
                       (["--chrome", str(out), str(TRACES / "h200_conv.chrome.json.gz")], "give one file, not 2"),
                       (["--chrome", str(out), "--scheduler", "tcp://x:1"], "it has no --scheduler")):
        code, _, err = cli_run(capsys, "kernel", "--from-trace", str(TRACES / "h200_mlp.chrome.json.gz"), *args,
                               *SRC, errors_only=True)
        assert code == 1 and err.count("\n") == 1 and says in err, (args, err)


@pytest.mark.parametrize("gz", [False, True])
def test_a_trace_of_several_chunks_is_written_as_the_whole_text_was(gz, tmp_path):
    """Note [The chrome rewrite streams]: a trace read in several chunks (CRLF line breaks, events across
    the chunks' edges) comes out as the decode of the whole text gave it: each event copied without its
    line breaks, the rest compact; cut short, it fails with the JSON error of the whole text, at its
    line and column, and OUT is not made."""
    events = [{"ph": "X", "name": f"e{i}", "args": {"v": i, "s": "\u00b5 \\ \"x\"", "f": 1.5e-3}} for i in range(30000)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "tail": {"a": [1, 2]}}, indent=2).replace("\n", "\r\n")
    data = text.encode()
    assert len(data) > 3 * CHUNK
    src, out = tmp_path / ("t.json.gz" if gz else "t.json"), tmp_path / ("o.json.gz" if gz else "o.json")
    src.write_bytes(gzip.compress(data) if gz else data)
    assert Annotations({}).write(src, out) == 0
    got = gzip.decompress(out.read_bytes()) if gz else out.read_bytes()
    want = ('{"schemaVersion":1,"traceEvents":[' + ",\n".join(json.dumps(e, separators=(",", ": ")) for e in events)
            + '],"tail":{"a":[1,2]}}')
    assert got.decode() == want
    cut = data[: len(data) * 2 // 3]
    src.write_bytes(gzip.compress(cut) if gz else cut)
    out.unlink()
    with pytest.raises(json.JSONDecodeError) as err:
        Annotations({}).write(src, out)
    with pytest.raises(json.JSONDecodeError) as whole:
        json.loads(cut)
    assert str(err.value) == str(whole.value) and err.value.lineno > 20000 and not out.exists()
    assert not list(tmp_path.glob("*.atenmap-tmp"))


def in_memory_chrome(index, path, out):
    """What ``--chrome`` wrote before Note [The annotations of a long trace]: the whole recording
    read (``read_recording``), its ``op_events`` in a dict; the live trace's way (``annotate``)."""
    from atenmap.trace.fromtrace import _answer
    from atenmap.trace.tracefile import read_recording

    rec = read_recording(path)
    notes = Annotations(rec.op_events)
    _answer(index, rec, not rec.unattributed and not any(c.kernels for c in rec.calls), notes.add)
    return notes.write(path, out)


def loop_trace(path, steps: int) -> None:
    """A Kineto-shaped trace of a loop on two threads: per step a Python frame, an op (``aten::linear``)
    with no device work of its own around ops that launch (``aten::addmm``, with an ``aten::mul``
    inside it that launches none, and on every third step ``aten::add``), their runtime and kernel
    events after all host events, as torch.profiler writes them: External ids past several blocks."""
    kern = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
    host, dev, ext = [], [], 1
    for i in range(steps):
        tid, t = 1 + i % 2, i * 100.0
        host.append({"ph": "X", "cat": "python_function", "name": f"train.py({40 + i % 3}): step", "pid": 1, "tid": tid,
                     "ts": t, "dur": 90, "args": {"Python id": i}})
        host.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": tid, "ts": t + 1, "dur": 80,
                     "args": {"External id": ext, "Input type": ["float", "float", "float"]}})
        names = ["aten::addmm", "aten::mul"] + (["aten::add"] if i % 3 == 0 else [])
        for k, op in enumerate(names):
            e = ext + 1 + k
            start, dur = (t + 4, 5) if op == "aten::mul" else (t + 2 + 20 * k, 15)  # mul: inside addmm
            host.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": tid, "ts": start, "dur": dur,
                         "args": {"External id": e, "Input type": ["float", "float"]}})
            if op != "aten::mul":
                dev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid,
                            "ts": t + 3 + 20 * k, "dur": 2, "args": {"External id": e, "correlation": e}})
                dev.append({"ph": "X", "cat": "kernel", "name": kern if op == "aten::add" else "ampere_sgemm_64x64_nn",
                            "pid": 0, "tid": 7, "ts": t + 5 + 20 * k, "dur": 3,
                            "args": {"External id": e, "correlation": e, "device": 0, "stream": 7}})
        ext += 1 + len(names)
    data = json.dumps({"schemaVersion": 1, "traceEvents": host + dev}, indent=1).encode()
    path.write_bytes(gzip.compress(data) if str(path).endswith(".gz") else data)


@pytest.mark.parametrize("name", ["h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz", "h200_attn.chrome.json.gz",
                                  "h200_attn.json.gz", "h200_kineto_small.json", "loop.json.gz"])
def test_the_bounded_write_is_the_in_memory_one_byte_for_byte(name, mini_index, tmp_path):
    """Note [The annotations of a long trace]: the streamed read, its annotations in a temporary
    SQLite file read back a block of ids at a time, with repeated calls counted as Repeats, writes
    what the whole recording in memory wrote, byte for byte."""
    path = TRACES / name
    if name == "loop.json.gz":
        path = tmp_path / name
        loop_trace(path, 3000)  # ~9000 External ids: several blocks (store/annotspill.py BLOCK)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    ans = answer(mini_index, path, chrome=new)
    assert ans.annotated == in_memory_chrome(mini_index, path, old) > 0
    assert new.read_bytes() == old.read_bytes()
    events = load(new)["traceEvents"]
    if name == "loop.json.gz":  # each event of a call has its number; the mul inside addmm has addmm's
        by = Counter(e["name"] for e in events if "atenmap.call" in e.get("args", {}))
        assert by["ampere_sgemm_64x64_nn"] == 3000 and by["cudaLaunchKernel"] == 4000 and by["aten::mul"] == 3000
        assert by["aten::linear"] == 0
        addmm = [e["args"]["atenmap.call"] for e in events if e["name"] == "aten::addmm"]
        assert [e["args"]["atenmap.call"] for e in events if e["name"] == "aten::mul"] == addmm
    assert not list(tmp_path.glob("*.atenmap-tmp"))


def test_bad_gzip_and_empty_input_are_one_line(tmp_path, capsys):
    """Note [A gzip file read as far as it goes]: a ``.json.gz`` that is no gzip is one line for the
    table, --detail and --chrome; a cut one answers what came before (one note), and cannot be
    written back (one line, OUT not made); an empty folder, and a trace with nothing to answer given
    --chrome, are one line, OUT not made."""
    fake = tmp_path / "fake.json.gz"
    fake.write_bytes(b"\x1f\x8bnot gzip at all")
    out = tmp_path / "out.json"
    for args in ([], ["--detail"], ["--chrome", str(out)], ["--detail", "--chrome", str(out)]):
        code, text, err = cli_run(capsys, "kernel", "--from-trace", str(fake), *args, *SRC, errors_only=True)
        assert code == 1 and text == "" and err.count("\n") == 1, (args, err)
        assert f"{fake}: not a readable gzip file (" in err and not out.exists()
    long = tmp_path / "long.json.gz"
    loop_trace(long, 3000)
    assert len(gzip.decompress(long.read_bytes())) > 2 * CHUNK  # cut past its first chunk of text
    for data in ((TRACES / "h200_mlp.chrome.json.gz").read_bytes(), long.read_bytes()):
        cut = tmp_path / "cut.json.gz"
        cut.write_bytes(data[: len(data) * 2 // 3])
        code, text, err = cli_run(capsys, "kernel", "--from-trace", str(cut), "--format", "json", *SRC, drop=PROGRESS)
        assert code == 0 and json.loads(text)["rows"] and "Traceback" not in err
        assert "the trace's JSON breaks off after" in err
        code, _, err = cli_run(capsys, "kernel", "--from-trace", str(cut), "--chrome", str(out), *SRC, errors_only=True)
        assert code == 1 and err.count("\n") == 1 and "cannot be written back as a chrome trace" in err, err
        assert not out.exists() and not list(tmp_path.glob("*.atenmap-tmp"))
    (tmp_path / "empty").mkdir()
    code, _, err = cli_run(capsys, "kernel", "--from-trace", str(tmp_path / "empty"), "--chrome", str(out), *SRC,
                           errors_only=True)
    assert code == 1 and err.count("\n") == 1 and "no .json or .json.gz trace files" in err
    nothing = tmp_path / "nothing.json"
    nothing.write_text('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "python_function", "name": "a.py(1): f", '
                       '"pid": 1, "tid": 1, "ts": 0, "dur": 1}]}')
    for args in (["--chrome", str(out)], ["--detail", "--chrome", str(out)]):
        code, _, err = cli_run(capsys, "kernel", "--from-trace", str(nothing), *args, *SRC, errors_only=True)
        assert code == 1 and err.count("\n") == 1 and "no kernel, memcpy, memset or aten op events" in err, (args, err)
        assert not out.exists()


def test_the_annotation_store_answers_in_any_order(tmp_path):
    """store/annotspill.py: the rows read back a block of ids at a time answer as dicts would, a later
    row of an External id replacing an earlier one, the first (call, kernel name) row kept; ids
    asked in increasing order are served by blocks, ids asked in no order switch the table to
    one id a query (Note [The annotations of a long trace])."""
    import random

    from atenmap.store.annotspill import BLOCK, AnnotationSpill

    n = 100 * BLOCK
    db = AnnotationSpill(str(tmp_path / "a.sqlite"), 1024)
    for ext in range(1, n, 3):
        db.add("ext", (ext, 0, ext // 3))
    db.add("ext", (4, 0, 7))  # a later op of id 4
    db.add("ext", (1, 1, 2))  # id 1 of another process (Note [External ids are per process])
    for call in range(n // 3 + 1):
        db.add("calls", (call, 3 * call + 1, call % 5, call - call % 2))
        db.add("sites", (call, "k", call % 7))
    db.add("sites", (0, "k", 99))  # not the first of (0, "k")
    db.finish()
    want = {ext: (ext // 3, 3 * (ext // 3) + 1, (ext // 3) % 5, ext // 3 - (ext // 3) % 2) for ext in range(1, n, 3)}
    want[4] = (7, 22, 2, 6)
    for ext in range(0, 2 * BLOCK):  # in order: blocks
        assert db.by_ext(ext) == want.get(ext)
    assert db._width["ext"] == BLOCK
    keys = random.Random(0).sample(range(n), 20000)
    assert [db.by_ext(k) for k in keys] == [want.get(k) for k in keys]
    assert db._width["ext"] == 1  # scattered: one id a query
    assert [db.site(c, "k") for c in keys[:5000]] == [(c % 7 if c else 0) if c <= n // 3 else None for c in keys[:5000]]
    assert db.by_ext(1, 1) == want[7] and db.by_ext(1, 0) == db.by_ext(1) == want[1] and db.by_ext(1, 2) is None
    assert db.site(1, "other") is None and db.by_call(5) == (5, 16, 0, 4) and db.by_call(n) is None
    db.close()


def two_ranks_trace(path) -> None:
    """Two ranks' traces merged into one file (pids 100 and 101, each its kernels under its own pid):
    both number their External ids from 1 (Note [External ids are per process] in assemble.py).
    Rank 100 runs aten::mul from a.py, rank 101 aten::add from b.py, both with External id 1."""
    add = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
           "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    mul = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
           "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")

    def ev(pid, tid, cat, name, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

    events = []
    for pid, frame, op, kern in ((100, "a.py(3): f", "aten::mul", mul), (101, "b.py(8): g", "aten::add", add)):
        events += [ev(pid, pid + 1, "python_function", frame, 0, 50),
                   ev(pid, pid + 1, "cpu_op", op, 10, 5, **{"External id": 1, "Input type": ["float", "float"]}),
                   ev(pid, pid + 1, "cuda_runtime", "cudaLaunchKernel", 11, 2, **{"External id": 1, "correlation": 1}),
                   ev(pid, 7, "kernel", kern, 20, 3, **{"External id": 1, "correlation": 1, "device": 0})]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))


def test_ranks_merged_in_one_file_each_get_their_own_calls(mini_index, tmp_path):
    """The table joins an External id within its process (Note [External ids are per process]); the
    events written back must carry the same calls: rank 100's op, runtime and kernel events the
    aten::mul call of a.py, rank 101's the aten::add call of b.py (Note [The annotations of a long
    trace]; the in-memory op_events, keyed by id alone, gave rank 100's events rank 101's call)."""
    path, out = tmp_path / "ranks.json", tmp_path / "out.json"
    two_ranks_trace(path)
    table = Counter((r.op, r.user) for r in summary_rows(answer(mini_index, path)))
    assert set(table) == {("aten::mul.Tensor", "a.py:3 (def f)"), ("aten::add", "b.py:8 (def g)")}  # the read is right
    answer(mini_index, path, chrome=out)
    events = [e for e in load(out)["traceEvents"] if e["cat"] != "python_function"]
    calls = {pid: {e["args"].get("atenmap.call") for e in events if e["pid"] == pid} for pid in (100, 101)}
    assert len(calls[100]) == len(calls[101]) == 1 and calls[100] != calls[101], calls
    op_args = {e["pid"]: e["args"] for e in events if e["cat"] == "cpu_op"}
    assert op_args[100]["atenmap.source"].startswith("a.py:3") and op_args[100]["atenmap.op"].startswith("aten::mul")
    assert op_args[101]["atenmap.source"].startswith("b.py:8") and op_args[101]["atenmap.op"].startswith("aten::add")
    kernels = {e["pid"]: e["args"] for e in events if e["cat"] == "kernel"}
    assert kernels[100].get("atenmap.user") == "a.py:3 (def f)" and kernels[101].get("atenmap.user") == "b.py:8 (def g)"


def test_a_trace_named_as_outs_temporary_file_is_kept(tmp_path, capsys):
    """OUT is written through a temporary file beside it: never one that exists, so never T itself.
    T named ``OUT.atenmap-tmp`` (the temporary name before) was truncated, then removed: the only
    copy of the profile lost, with "cannot be written back" said."""
    data = (TRACES / "h200_mlp.chrome.json.gz").read_bytes()
    t, out = tmp_path / "t.json.gz.atenmap-tmp", tmp_path / "t.json.gz"
    t.write_bytes(data)
    code, _, err = cli_run(capsys, "kernel", "--from-trace", str(t), "--chrome", str(out), *SRC, errors_only=True)
    assert t.read_bytes() == data
    assert code == 0 and err == "" and len(load(out)["traceEvents"]) == len(load(TRACES / "h200_mlp.chrome.json.gz")["traceEvents"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz", "t.json.gz.atenmap-tmp"]
