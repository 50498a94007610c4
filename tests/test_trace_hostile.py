"""Hostile trace files (issue 34 items 4 and 10), each with the case's original input: External ids
are per process and one op per id (Note [External ids are per process]); one malformed event is
skipped and counted, never the end of the read (Note [One bad event is one skipped event])."""
from __future__ import annotations

import json

import pytest

from atenmap.trace.fromtrace import answer
from atenmap.trace.tracefile import MAX_EVENT, read_recording

from .conftest import FIXTURE_TREE, PROGRESS, cli_run
from .test_trace_file import MUL, kernel, op, py, write

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")


def both(index, path):
    """The held and the bounded reader's answers: (kernel name, op) -> launches, for each."""
    out = []
    for bounded in (False, True):
        ans = answer(index, path, bounded=bounded)
        out.append({(k.name, ln.entry.call.op if ln.entry.call else None): ln.count
                    for k in ans.kernels for ln in k.launches.values()})
        out.append(ans.events)
    return out


def test_one_id_shared_by_3000_ops_and_3000_kernels_is_3000_events(mini_index, tmp_path):
    events = [op(1, ts=i * 10) for i in range(3000)] + [kernel(1, ts=40_000 + i) for i in range(3000)]
    held, held_n, bounded, bounded_n = both(mini_index, write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    assert held_n == bounded_n == 3000  # was 9,000,000
    assert held == bounded == {(MUL, "aten::mul.Tensor"): 3000}  # the first op of the id has them all


def test_two_ranks_merged_in_one_file_keep_their_own_ids(mini_index, tmp_path):
    rank0 = [dict(op(1, ts=10, name="aten::copy_"), pid=100), dict(kernel(1, ts=20, name=MUL), pid=100)]
    rank1 = [dict(op(1, ts=12, name="aten::add"), pid=101), dict(kernel(1, ts=22, name=ADD), pid=101)]
    held, _, bounded, _ = both(mini_index, write(tmp_path, {"schemaVersion": 1, "traceEvents": rank0 + rank1}))
    assert held == bounded == {(MUL, "aten::copy_"): 1, (ADD, "aten::add.Tensor"): 1}


def test_device_pids_are_device_numbers_in_a_one_process_file(mini_index, tmp_path):
    events = [dict(op(5, ts=10), pid=462), dict(kernel(5, ts=30), pid=0)]  # as Kineto writes them
    held, _, bounded, _ = both(mini_index, write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    assert held == bounded == {(MUL, "aten::mul.Tensor"): 1}


def read_cli(capsys, path):
    code, out, err = cli_run(capsys, "kernel", "--from-trace", path, "--json", "-s", str(FIXTURE_TREE), drop=PROGRESS)
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out), [ln for ln in err.splitlines() if ln.startswith("atenmap: note: ")]


def surrounded(bad: str) -> str:
    """A good op and kernel, the bad event, then another good op and kernel."""
    return ('{"schemaVersion": 1, "traceEvents": [' + json.dumps(op(3, ts=10)) + ", " + json.dumps(kernel(3, ts=20))
            + ", " + bad + ", " + json.dumps(op(4, ts=30)) + ", " + json.dumps(kernel(4, ts=40)) + "]}")


@pytest.mark.parametrize("bad", [
    '{"ph": "X", "cat": "kernel", "name": "big", "args": {"pad": "' + "x" * (MAX_EVENT + 1000) + '"}}',
    '{"ph": "X", "cat": "kernel", "name": "digits", "ts": ' + "7" * 4301 + "}",
    "[" * (7 << 20) + "]" * (7 << 20),  # 14 MB: read once, not rescanned per chunk
])
def test_one_bad_event_is_skipped_and_counted(tmp_path, capsys, bad):
    (a,), notes = read_cli(capsys, write(tmp_path, surrounded(bad)))
    assert a["count"] == 2 and a["trace_operators"] == {"aten::mul.Tensor": 2}  # the events after it too
    assert any(n.startswith("atenmap: note: 1 events skipped") for n in notes), notes
    assert not any("breaks off" in n for n in notes)


def test_a_line_number_beyond_64_bits(tmp_path, capsys):
    events = [py("train.py(" + "9" * 30 + "): step", 0, 50), op(3, ts=10), kernel(3)]
    (a,), _ = read_cli(capsys, write(tmp_path, {"schemaVersion": 1, "traceEvents": events}))
    (ln,) = a["launches_in_trace"]
    assert [f["file"] for f in ln["stack"]] == ["train.py"] and a["count"] == 1


def test_a_lone_surrogate_escape(tmp_path, capsys):
    text = json.dumps({"schemaVersion": 1, "traceEvents": [py("train.py(3): st\\ud800ep", 0, 50), op(3, ts=10),
                                                           kernel(3, name="k\\ud800"), op(4, ts=30), kernel(4, ts=40)]})
    text = text.replace("\\\\ud800", "\\ud800")  # the escape itself, as the file holds it
    out, _ = read_cli(capsys, write(tmp_path, text))
    assert {a["query"]: a["count"] for a in out} == {"k?": 1, MUL: 1}
    assert out[0]["launches_in_trace"][0]["stack"][0]["function"] == "st?ep"


def test_three_million_top_level_keys_are_not_kept(tmp_path):
    keys = ", ".join(f'"k{i}": {i}' for i in range(3_000_000))
    p = write(tmp_path, '{"schemaVersion": 1, ' + keys + ', "traceEvents": [' + json.dumps(op(3)) + ", "
              + json.dumps(kernel(3)) + "]}")
    rec = read_recording(p)
    assert [k.name for c in rec.calls for k in c.kernels] == [MUL]
    assert "2999745 top-level keys beyond the first 256 ignored" in rec.notes
