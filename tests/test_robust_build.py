"""Index builds that cannot orphan workers, locks a dead owner cannot hold, corrupt indexes
rebuilt (Note [Locks a dead owner cannot hold]); reading sources that are not plain files."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from atenmap.locks import exclusive, start_time

from .conftest import cli_run

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _alive(pid: int) -> bool:
    return start_time(pid) not in (None, "")  # a zombie ("") is dead


def _process_handle(pid: int) -> int | None:
    """A pidfd of the live process ``pid`` (it names that process, whatever later reuses the pid),
    or None where the system has none (then ``_wait_dead`` reads /proc)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait_dead(pid: int, handle: int | None) -> None:
    """Return once the process has ended: its pidfd becomes readable (else: /proc says so). No
    clock: a worker that outlived its build keeps this waiting until pytest's own limit."""
    if handle is not None:
        select.select([handle], [], [])
        return
    while _alive(pid):
        time.sleep(0.05)


def _python(code: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE,
                            text=True, **kw)


def test_parse_workers_die_with_the_build(tmp_path):
    """A build killed with SIGKILL (no cleanup runs) takes its parse workers with it."""
    parent = _python("""
        import os, sys, time
        from atenmap.build import worker_pool
        pool = worker_pool(2)

        def pid():
            time.sleep(0.3)
            return os.getpid()

        pids = set()
        while len(pids) < 2:
            pids |= {f.result() for f in [pool.submit(pid) for _ in range(4)]}
        print(*sorted(pids), flush=True)
        time.sleep(60)
    """)
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    handles = [_process_handle(p) for p in workers]  # before the kill, while they are the workers
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    try:
        for p, h in zip(workers, handles):
            _wait_dead(p, h)
        assert not any(_alive(p) for p in workers), "a parse worker outlived its build"
    finally:
        for p, h in zip(workers, handles):
            if h is not None:
                os.close(h)
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_lock_of_a_dead_owner_is_taken_over(tmp_path):
    """The owner died, but an orphan it forked still holds the flock: the next build takes over."""
    lock = tmp_path / "lock"
    holder = _python(f"""
        import os, sys, time
        from atenmap.locks import exclusive
        with exclusive(__import__("pathlib").Path({str(lock)!r})):
            child = os.fork()
            if child == 0:  # the orphan: inherits the locked file, outlives its parent
                time.sleep(60)
                os._exit(0)
            print(child, flush=True)
            os.kill(os.getpid(), 9)
    """)
    orphan = int(holder.stdout.readline())
    holder.wait()
    try:
        assert _alive(orphan)
        said: list[str] = []
        with exclusive(lock, said.append):
            assert said == [f"taking over {lock}: its owner (pid {holder.pid}) is gone"]
            assert lock.read_text().split()[0] == str(os.getpid())
    finally:
        os.kill(orphan, signal.SIGKILL)


def test_lock_of_a_live_owner_is_waited_for(tmp_path):
    lock, released = tmp_path / "lock", tmp_path / "released"
    holder = _python(f"""
        import pathlib, time
        from atenmap.locks import exclusive
        with exclusive(pathlib.Path({str(lock)!r})):
            print("held", flush=True)
            time.sleep(1.5)
            pathlib.Path({str(released)!r}).write_text("")  # the last thing it does holding the lock
    """)
    assert holder.stdout.readline().strip() == "held"
    said: list[str] = []
    with exclusive(lock, said.append, "waiting…"):
        assert released.exists(), "the lock was taken while its owner still held it"
    holder.wait()
    assert said == ["waiting…"]
    assert oct(os.stat(lock).st_mode & 0o777) == oct(0o644)


def test_corrupt_index_is_rebuilt_with_one_line(capsys, mini_tree):
    code, _, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen")
    assert code == 0, err
    from atenmap import build
    from atenmap.source.find import describe

    path = build.index_path(describe(mini_tree, "option"))
    data = bytearray(path.read_bytes())
    data[100:4096 * 4] = os.urandom(4096 * 4 - 100)  # header fields and the first pages
    path.write_bytes(bytes(data))
    code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen")
    assert code == 0 and "add.out" in out
    notes = [ln for ln in err.splitlines() if "corrupt" in ln]
    assert len(notes) == 1 and notes[0].startswith(f"atenmap: index {path} is corrupt (") and notes[0].endswith(
        "; rebuilding it")
    assert "Traceback" not in err


# ---- reading sources (item 4) -------------------------------------------------------------------
def test_fifos_devices_huge_and_oddly_named_files_are_skipped(capsys, mini_tree, monkeypatch):
    native = mini_tree / "aten/src/ATen/native"
    os.mkfifo(native / "Pipe.cpp")  # reading it would block forever
    (native / "Null.cpp").symlink_to("/dev/zero")  # reading it would never end
    (native / "Huge.cpp").write_text("// " + "x" * 2_000_000 + "\n")
    bad = os.fsencode(str(native)) + b"/Latin1\xe9.cpp"
    with open(bad, "wb") as f:
        f.write(b"void latin1() {}\n")
    monkeypatch.setenv("ATENMAP_MAX_FILE_BYTES", "1000000")
    code, out, err = cli_run(capsys, "index", "--source", str(mini_tree), "--no-codegen", "--jobs", "1")
    assert code == 0, err
    files = next(ln for ln in out.splitlines() if ln.startswith("files: "))
    for what in ("2 not-regular", "1 too-large", "1 bad-file-name"):
        assert what in files, files
    code, out, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree), "--no-codegen")
    assert code == 0, err


def test_index_files_have_fixed_modes_whatever_the_umask(mini_tree):
    from atenmap import build
    from atenmap.source.find import describe

    info = describe(mini_tree, "option")
    old = os.umask(0o077)
    try:
        build.build(info, codegen=False, jobs=1)
    finally:
        os.umask(old)
    path = build.index_path(info)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)
    assert oct(os.stat(path.parent).st_mode & 0o777) == oct(0o755)
    assert oct(os.stat(path.parent / "lock").st_mode & 0o777) == oct(0o644)
