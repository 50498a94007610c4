"""The cold build's order (Note [The cold build's critical path] in build.py): torchgen in a thread
beside the parse, includes resolved as files are stored, the yaml in the pool. Whatever the order
and timing, the index holds the same facts as a build that had torchgen's output at hand; a build
that dies or stops leaves no torchgen behind (Note [Stopping torchgen from another thread]
in codegen.py)."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atenmap import build as index
from atenmap.locks import start_time
from atenmap.source.find import cache_dir, describe

SRC = str(Path(__file__).resolve().parents[1] / "src")


def facts(path: Path) -> dict[str, list]:
    """Every row of the index, ids replaced by what they point at, torchgen's folder (which
    differs from cache to cache) and its files' mtimes (torchgen rewrites them) left out."""
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        gen_dir = dict(c.execute("SELECT key, value FROM meta"))["codegen_dir"] or "\0"
        norm = lambda v: v.replace(gen_dir, "<GEN>") if isinstance(v, str) else v  # noqa: E731
        ident = {fid: (norm(p), line, kind, name) for fid, p, line, kind, name in c.execute(
            "SELECT f.id, fi.path, f.line, f.kind, f.name FROM facts f JOIN files fi ON fi.id = f.file")}
        out = {
            "files": sorted((norm(p), lang, size, None if gen else mtime, status, gen) for p, lang, size, mtime, status, gen
                            in c.execute("SELECT path, language, size, mtime_ns, status, generated FROM files")),
            "facts": sorted((*map(norm, r[:-1]), ident.get(r[-1])) for r in c.execute(
                "SELECT fi.path, kind, name, qual, line, end_line, namespace, arg, detail, via_macro, cond, targs, scope "
                "FROM facts f JOIN files fi ON fi.id = f.file")),
            "operators": c.execute("SELECT * FROM operators ORDER BY name").fetchall(),
            "dispatch": c.execute("SELECT * FROM dispatch ORDER BY operator, key").fetchall(),
        }
    finally:
        c.close()
    assert out["facts"] and out["operators"]
    return out


def slow_torchgen(tree: Path, prelude: str) -> None:
    """Run ``prelude`` (Python) first in the tree's stand-in torchgen."""
    gen = tree / "torchgen" / "gen.py"
    gen.write_text(f"{prelude}\n{gen.read_text()}")


def summary(report) -> tuple:
    return (report.files_total, report.parsed, report.with_errors, report.skipped, report.facts, report.operators,
            report.warnings)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("torchgen", ["quick", "slower than the parse"])
def test_same_facts_whether_torchgen_runs_beside_the_parse_or_was_cached(mini_tree, monkeypatch, jobs, torchgen):
    monkeypatch.setenv("ATENMAP_CODEGEN", "always")
    if torchgen != "quick":
        slow_torchgen(mini_tree, "import time; time.sleep(2)")
    src = describe(mini_tree, "option")
    beside = index.build(src, jobs=jobs)
    assert beside.codegen and not beside.codegen_reused and beside.rebuilt
    first = facts(index.index_path(src))
    assert [f for f in first["files"] if f[-1]], "the stand-in torchgen's files are indexed"
    assert any(f[1] == "include" and f[7] for f in first["facts"]), "some includes are resolved"

    cached = index.build(src, jobs=jobs, force=True)  # torchgen's output known before the parse
    assert cached.codegen_reused
    assert facts(index.index_path(src)) == first
    assert summary(cached) == summary(beside)

    serial = index.build(src, jobs=1, force=True)
    assert facts(index.index_path(src)) == first and summary(serial) == summary(beside)


def test_refresh_after_files_came_or_went_resolves_includes_as_a_full_build(mini_tree):
    src = describe(mini_tree, "option")
    path = index.index_path(src)
    header = mini_tree / "aten/src/ATen/native/CPUBlas.h"  # LinearAlgebra.cpp includes it; absent at first
    index.build(src, codegen=False)

    def includes_of_linear_algebra():
        rows = [f for f in facts(path)["facts"] if f[0] == "aten/src/ATen/native/LinearAlgebra.cpp" and f[1] == "include"]
        return {f[2]: f[7] for f in rows}

    assert includes_of_linear_algebra()["ATen/native/CPUBlas.h"] == ""

    def refreshed_equals_full():
        refreshed = facts(path)
        full = index.build(src, codegen=False, force=True)
        assert facts(path) == refreshed
        return full

    header.write_text("namespace at { namespace native { void gemm(); } }\n")
    report = index.build(src, codegen=False)  # one file came: LinearAlgebra.cpp is kept, its include resolves
    assert report.parsed == 1 and report.reused > 0
    assert includes_of_linear_algebra()["ATen/native/CPUBlas.h"] == "aten/src/ATen/native/CPUBlas.h"
    full = refreshed_equals_full()
    assert report.facts == full.facts

    header.unlink()
    report = index.build(src, codegen=False)  # and went
    assert report.removed == 1 and report.parsed == 0
    assert includes_of_linear_algebra()["ATen/native/CPUBlas.h"] == ""
    refreshed_equals_full()

    touched = mini_tree / "aten/src/ATen/native/BinaryOps.cpp"
    os.utime(touched, ns=(time.time_ns(), time.time_ns()))
    report = index.build(src, codegen=False)  # no path came or went: no full resolve needed
    assert report.parsed == 1
    full = refreshed_equals_full()
    assert report.facts == full.facts


def _alive(pid: int) -> bool:
    return start_time(pid) not in (None, "")


def _wait_for(path: Path, running) -> None:
    """Until ``path`` appears; fails, never on a clock, once ``running()`` says its writer is gone."""
    while not path.exists():
        if not running():
            pytest.fail(f"{path} did not appear and its writer is gone")
        time.sleep(0.05)


def _torchgen_thread_alive() -> bool:
    """The build's torchgen thread (build._TorchgenThread) is still there."""
    import threading

    return any(t.name == "atenmap-torchgen" and t.is_alive() for t in threading.enumerate())


def _wait_dead(pid: int, pid_file: Path) -> bool:
    """Whether the fake torchgen (``_pid_then_sleep``) is gone before waking from its sleep: waits
    for one event or the other, never on a clock of its own."""
    woke = Path(f"{pid_file}.finished")
    while _alive(pid) and not woke.exists():
        time.sleep(0.05)
    return not _alive(pid) and not woke.exists()


def _pid_then_sleep(pid_file: Path) -> str:
    """A torchgen that writes its pid, sleeps, and leaves ``<pid_file>.finished`` if it ever wakes up."""
    return (f"import os, pathlib, time; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); "
            f"time.sleep(120); pathlib.Path({str(pid_file) + '.finished'!r}).write_text('')")


def test_a_killed_build_leaves_no_torchgen_behind(mini_tree, tmp_path):
    pid_file = tmp_path / "torchgen.pid"
    slow_torchgen(mini_tree, _pid_then_sleep(pid_file))
    builder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from atenmap import build; from atenmap.source.find import describe; "
                               "from pathlib import Path; build.build(describe(Path(sys.argv[1]), 'option'))",
         str(mini_tree)],
        env={**os.environ, "PYTHONPATH": SRC, "ATENMAP_CODEGEN": "always"}, stderr=subprocess.DEVNULL)
    try:
        _wait_for(pid_file, lambda: builder.poll() is None)
        torchgen = int(pid_file.read_text())
        assert _alive(torchgen)
        builder.send_signal(signal.SIGKILL)  # no cleanup runs
        builder.wait()
        assert _wait_dead(torchgen, pid_file), "torchgen outlived its build"
    finally:
        if builder.poll() is None:
            builder.kill()
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_an_interrupted_build_stops_torchgen_and_caches_nothing(mini_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "always")
    pid_file = tmp_path / "torchgen.pid"
    slow_torchgen(mini_tree, _pid_then_sleep(pid_file))
    src = describe(mini_tree, "option")

    def interrupt_once_torchgen_runs(done, total, rel):
        _wait_for(pid_file, lambda: pid_file.exists() or _torchgen_thread_alive())
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index.build(src, jobs=1, progress=interrupt_once_torchgen_runs)
    assert _wait_dead(int(pid_file.read_text()), pid_file)
    assert not Path(f"{pid_file}.finished").exists(), "the build waited for torchgen instead of stopping it"
    entries = sorted(p.name for p in (cache_dir() / "codegen").iterdir())
    assert not [e for e in entries if e.startswith("codegen-") or ".tmp-" in e], entries
    assert not list(index.index_path(src).parent.glob("*.tmp-*")) and not index.index_path(src).exists()


def test_a_torchgen_failure_is_still_one_warning(mini_tree, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "always")
    slow_torchgen(mini_tree, "import time; time.sleep(0.5); raise SystemExit('torchgen could not go on')")
    src = describe(mini_tree, "option")
    report = index.build(src, jobs=2)
    assert report.warnings == ["torchgen failed: torchgen could not go on"]
    assert report.parsed == report.files_total and not [f for f in facts(index.index_path(src))["files"] if f[-1]]
