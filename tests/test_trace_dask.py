"""A job's traces as tasks of a Dask cluster (issue 35 item 3; trace/daskjob.py): on a LocalCluster of
two worker processes, a folder of four rank traces gives exactly the merged table the local process
pool gives (the same per-trace function, merged by the same code: Note [One function per trace, any
engine]); a scheduler that cannot be reached is one line and exit 1. Dask is in the test extra: where
it is missing the tests skip, and fail on CI (CI=true)."""
from __future__ import annotations

import gzip
import json

import pytest

from atenmap.trace.fromtrace import summarize_job, trace_files

from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run, skip_or_fail_on_ci

try:
    import dask
    import distributed
except ImportError:  # the test extra installs it: conftest's rule fails this on CI
    distributed = None

TRACES = REPO / "fixtures" / "trace"
SRC = ("-s", str(FIXTURE_TREE), "--no-codegen")


@pytest.fixture(scope="module")
def cluster():
    if distributed is None:
        skip_or_fail_on_ci("dask[distributed] is not installed (pip install -e '.[test]' installs it)")
    # dashboard_address ":0": any free port (another cluster on this machine may hold 8787)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Four rank traces: two H200 fixture steps, each copied as two ranks with their rank ids relabelled."""
    d = tmp_path_factory.mktemp("job")
    for r, name in enumerate(["h200_mlp.chrome.json.gz", "h200_conv.chrome.json.gz"] * 2):
        with gzip.open(TRACES / name, "rt") as f:
            doc = json.load(f)
        doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": 4}
        doc["traceName"] = f"rank{r}"
        (d / f"rank{r}.json").write_text(json.dumps(doc))
    return d


def test_dask_gives_the_local_pools_merged_table(cluster, job, mini_index):
    files, notes = trace_files([str(job)])
    assert len(files) == 4 and notes == []
    local, local_notes = summarize_job(mini_index, files, jobs=2)
    remote, remote_notes = summarize_job(mini_index, files, scheduler=cluster.scheduler_address)
    assert remote_notes == local_notes == []
    assert [r.label for r in remote.ranks] == ["rank0.json", "rank1.json", "rank2.json", "rank3.json"]
    assert remote.ranks == local.ranks and remote.rows == local.rows and remote.host == local.host
    assert len(remote.rows) > 30 and all(len(r.ranks) == 4 for r in remote.rows)


def test_cli_scheduler_prints_the_same_table(cluster, job, capsys):
    code, here, err = cli_run(capsys, "kernel", "--from-trace", str(job), "--format", "csv", "--jobs", "1", *SRC,
                              drop=PROGRESS)
    assert code == 0, err
    code, there, err = cli_run(capsys, "kernel", "--from-trace", str(job), "--format", "csv",
                               "--scheduler", cluster.scheduler_address, *SRC, drop=PROGRESS)
    assert code == 0 and "Traceback" not in err, err
    assert there == here and there.splitlines()[0].endswith(",rank0.json,rank1.json,rank2.json,rank3.json")


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:9", "no scheme here:port"])
def test_a_scheduler_that_cannot_be_reached_is_one_line(job, capsys, address):
    if distributed is None:
        skip_or_fail_on_ci("dask[distributed] is not installed (pip install -e '.[test]' installs it)")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):  # Dask's own setting (30 s by default)
        code, out, err = cli_run(capsys, "kernel", "--from-trace", str(job), "--scheduler", address, *SRC,
                                 errors_only=True)
    assert code == 1 and out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"atenmap: error: cannot reach the Dask scheduler at {address!r}: ")


def test_scheduler_has_no_detail(job, capsys):
    code, _, err = cli_run(capsys, "kernel", "--from-trace", str(job), "--detail", "--scheduler", "tcp://x:1", *SRC)
    assert code == 1 and err.strip().endswith("--scheduler reads a job's traces for the table: it has no --detail")
