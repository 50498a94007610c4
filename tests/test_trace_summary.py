"""A trace as one table (issue 35 items 2-3; trace/summary.py): the H200 fixture traces' rows add up
to their device time, a CPU profile recorded here with torch gives its matmul first, CSV and JSON
give the same rows, the table fits COLUMNS, and a folder of traces (a job's ranks) gives one merged
table with a time per trace, read in parallel or one by one alike."""
from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import subprocess
import sys

import pytest

from atenmap.trace.fromtrace import summarize, summarize_job
from atenmap.trace.summary import COLUMNS, merge, short_kernel

from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run

TRACES = REPO / "fixtures" / "trace"
H200 = ["h200_kineto_small.json", "h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz", "h200_attn.chrome.json.gz"]
SRC = ("-s", str(FIXTURE_TREE), "--no-codegen")

CPU_SCRIPT = """
import torch
from torch.profiler import profile


def step(a, b, v):
    c = torch.mm(a, b)
    return (v + 1).relu(), c


def main(out):
    a, b, v = torch.randn(384, 384), torch.randn(384, 384), torch.randn(64)
    with profile(with_stack=True, record_shapes=True) as prof:
        for _ in range(4):
            step(a, b, v)
    prof.export_chrome_trace(out)


import sys
main(sys.argv[1])
"""


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory):
    """A CPU profile recorded by torch (the test environment's, 2.13) of a script whose matmul dominates."""
    d = tmp_path_factory.mktemp("cpu")
    (d / "work.py").write_text(CPU_SCRIPT)
    subprocess.run([sys.executable, "work.py", "cpu_trace.json"], cwd=d, check=True, capture_output=True)
    return d / "cpu_trace.json"


def device_time(path) -> float:
    """The kernel, memcpy and memset time of a trace file, summed from its JSON directly."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))


@pytest.mark.parametrize("name", H200)
def test_rows_add_up_to_the_traces_device_time(mini_index, name):
    rank, rows, host = summarize(mini_index, TRACES / name)
    total = sum(r.time_us for r in rows)
    assert not host and total == pytest.approx(device_time(TRACES / name), rel=0.01)
    assert rank.time_us == total and sum(r.count for r in rows) == rank.events
    assert all(r.op for r in rows if r.kernel.startswith("void ")) or name == "h200_kineto_small.json"


def test_a_cpu_profile_is_summarised_with_its_matmul_first(cpu_trace, capsys):
    code, out, err = cli_run(capsys, "kernel", "--from-trace", str(cpu_trace), "--format", "json", *SRC, drop=PROGRESS)
    assert code == 0 and "Traceback" not in err
    doc = json.loads(out)
    assert doc["host"] is True
    top = doc["rows"][0]
    assert top["op"] == "aten::mm" and top["user"] == "work.py:6 (def step)" and top["kernel"] == "mm_out_cpu"
    assert top["count"] == 4 and top["aten"].startswith("LinearAlgebra.cpp:")
    assert {r["op"] for r in doc["rows"]} >= {"aten::mm", "aten::add.Tensor", "aten::relu"}


def test_csv_parses_back_to_the_json_rows(capsys):
    path = str(TRACES / "h200_conv.chrome.json.gz")
    _, out, _ = cli_run(capsys, "kernel", "--from-trace", path, "--format", "json", "--sort", "count", *SRC, drop=PROGRESS)
    rows = json.loads(out)["rows"]
    _, out, _ = cli_run(capsys, "kernel", "--from-trace", path, "--format", "csv", "--sort", "count", *SRC, drop=PROGRESS)
    back = list(csv.DictReader(io.StringIO(out)))
    assert list(back[0]) == list(COLUMNS) and len(back) == len(rows) == 37
    for b, r in zip(back, rows):
        assert {k: type(r[k])(b[k]) for k in COLUMNS} == {k: r[k] for k in COLUMNS}
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)


def test_text_fits_columns_and_top_cuts(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli_run(capsys, "kernel", "--from-trace", str(TRACES / "h200_conv.chrome.json.gz"), "--top", "5",
                           *SRC, drop=PROGRESS)
    lines = out.splitlines()
    assert code == 0 and max(len(ln) for ln in lines) <= 80
    assert lines[0] == "268.9us device time, 86 events, 37 rows (top 5)" and len(lines) == 2 + 1 + 5
    assert lines[2].split() == ["time", "share", "count", "mean", "kernel", "op", "aten", "user"]
    assert lines[3].split()[:3] == ["46.3us", "17.2%", "2"]


def test_detail_leads_with_the_recorded_op_and_drops_guessed_operators(capsys):
    code, out, _ = cli_run(capsys, "kernel", "--from-trace", str(TRACES / "h200_mlp.chrome.json.gz"), "--detail",
                           *SRC, drop=PROGRESS)
    assert code == 0 and "launched in this trace by:" in out
    assert "operators can reach it (kernel NAME lists them)" in out
    assert "operators that can launch it" not in out


def test_a_folder_of_four_traces_gives_per_rank_and_merged_tables(mini_index, tmp_path, capsys):
    job = tmp_path / "job"
    job.mkdir()
    for r in range(4):
        shutil.copy(TRACES / "h200_mlp.chrome.json.gz", job / f"rank{r}.json.gz")
    (job / "README.txt").write_text("not a trace")
    (job / "rank9.json").write_text('{"traceEvents": [')  # cut before any event
    one = summarize(mini_index, TRACES / "h200_mlp.chrome.json.gz")[1]
    code, out, err = cli_run(capsys, "kernel", "--from-trace", str(job), "--format", "json", "--jobs", "1", *SRC,
                             drop=PROGRESS)
    assert code == 0 and "Traceback" not in err
    assert "1 entries that are not .json or .json.gz files passed over" in err and "rank9.json" in err
    doc = json.loads(out)
    assert [t["label"] for t in doc["traces"]] == ["rank0.json.gz", "rank1.json.gz", "rank2.json.gz", "rank3.json.gz"]
    assert len(doc["rows"]) == len(one)
    by = {(r["kernel"], r["op"], r["aten"], r["user"]): r for r in doc["rows"]}
    for r in one:
        row = by[(r.kernel, r.op, r.aten, r.user)]
        assert row["count"] == 4 * r.count and set(row["ranks"].values()) == {round(r.time_us, 3)}
    assert doc["outliers"] == []  # four copies: none off the median
    code, text, _ = cli_run(capsys, "kernel", "--from-trace", str(job), "--jobs", "1", "--wide", *SRC, drop=PROGRESS)
    assert "per trace:" in text and "rank3.json.gz" in text.splitlines()[2]  # a column per rank


def test_parallel_and_one_by_one_give_the_same_table(mini_index, tmp_path):
    files = []
    for r, name in enumerate(H200):
        files.append(tmp_path / f"r{r}_{name}")
        shutil.copy(TRACES / name, files[-1])
    files = [str(f) for f in files]
    serial, notes1 = summarize_job(mini_index, files, jobs=1)
    parallel, notes2 = summarize_job(mini_index, files, jobs=2)
    assert notes1 == notes2 == []
    assert serial.rows == parallel.rows and serial.ranks == parallel.ranks
    # device times 30.0, 123.2, 268.9, 150.7 µs: median 137.0; the conv step is furthest above it
    assert [(r.label, round(o, 2)) for r, o in serial.outliers()][:2] == [("r2_h200_conv.chrome.json.gz", 0.96),
                                                                          ("r0_h200_kineto_small.json", -0.78)]


def test_merge_flags_the_rank_far_from_the_median(mini_index):
    rank, rows, _ = summarize(mini_index, TRACES / "h200_mlp.chrome.json.gz")
    from dataclasses import replace

    slow = [replace(r, time_us=r.time_us * 3) for r in rows]
    table = merge([(replace(rank, label=f"r{i}"), rows) for i in range(3)]
                  + [(replace(rank, label="r3", time_us=rank.time_us * 3), slow)])
    assert [(r.label, round(o, 2)) for r, o in table.outliers()] == [("r3", 2.0)]


def test_short_kernel_names():
    assert short_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)") \
        == "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>"


def test_trace_summary_of_a_live_cpu_run(tmp_path, monkeypatch, shared_cache, mini_index, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mm.py").write_text("import torch\n\n\ndef step(a):\n    return torch.mm(a, a)\n\n\n"
                                    "a = torch.randn(300, 300)\nfor _ in range(3):\n    step(a)\n")
    code, out, err = cli_run(capsys, "trace", "--summary", "--format", "json", "--top", "1", *SRC, "--", "mm.py",
                             drop=PROGRESS)
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert (row["op"], row["kernel"], row["user"], row["count"]) == ("aten::mm", "mm_out_cpu", "mm.py:5", 3)
    code, _, err = cli_run(capsys, "trace", "--top", "3", *SRC, "--", "mm.py", drop=PROGRESS)
    assert code == 2 and "add --summary" in err
