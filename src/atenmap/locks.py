"""One cross-process lock helper for the cache (codegen runs, fetches, index builds).

Note [Locks a dead owner cannot hold]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The lock is an flock on a file, so the kernel drops it when its holder dies -- unless a child
inherited the open file (a parse worker forked while the lock was held): the lock then
lives as long as that orphan. So the holder writes ``pid start-time`` into the file (the start
time, from /proc, tells a pid that was reused from the owner), and a waiter whose lock's recorded
owner is gone takes the lock over: it removes the file (the orphan keeps its lock on a file nobody
looks at any more), says so in one line, and locks a new one. Build workers also die with their
parent (build.py, PR_SET_PDEATHSIG), as torchgen does (Note [Running a tree's code] in
extract/codegen.py), so an orphan is rare to begin with.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Iterator

POLL_S = 0.2


def start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, from /proc/PID/stat); None when the process
    does not exist; "" where /proc cannot tell (then only its existence counts)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return "" if fields[0] == b"Z" else fields[19].decode()
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""


def remove_dead_owners(folder: Path, prefix: str) -> None:
    """Delete ``folder/<prefix><pid>...`` files (a temporary index and its SQLite side files) whose
    process no longer runs: what a run killed mid-answer left (the preview's and the exact-first
    answer's temporary stores remove their own on every other exit)."""
    for f in folder.glob(f"{prefix}*"):
        pid = f.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and start_time(int(pid)) is None:
            f.unlink(missing_ok=True)


def _owner_gone(text: str) -> int | None:
    """The recorded owner's pid when that process no longer runs, else None."""
    parts = text.split()
    if len(parts) not in (1, 2) or not parts[0].isdigit():
        return None
    pid, started = int(parts[0]), parts[1] if len(parts) == 2 else ""
    now = start_time(pid)
    if now is None or (now and started and now != started):
        return pid
    return None


@contextlib.contextmanager
def exclusive(lock_path: Path, report: Callable[[str], None] | None = None,
              waiting: str = "waiting for another atenmap process…") -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` for the block; say ``waiting`` through ``report``
    when another live process holds it, and take it over (with a line) when its owner is dead.
    See Note [Locks a dead owner cannot hold]."""
    said = False
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.fchmod(fd, 0o644)
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                text = os.pread(fd, 100, 0).decode(errors="replace")
                dead = _owner_gone(text)
                if dead is not None and os.path.exists(lock_path) and os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                    if report is not None:
                        report(f"taking over {lock_path}: its owner (pid {dead}) is gone")
                    os.unlink(lock_path)
                    continue
            finally:
                os.close(fd)
            if not said and report is not None:
                report(waiting)
            said = True
            time.sleep(POLL_S)
            continue
        try:
            if os.stat(lock_path).st_ino != os.fstat(fd).st_ino:  # taken over meanwhile: lock the new file
                os.close(fd)
                continue
        except FileNotFoundError:
            os.close(fd)
            continue
        break
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {start_time(os.getpid()) or ''}\n".encode(), 0)
        yield
    finally:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# Note [Builds and prune]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A build makes things that no index names yet: torchgen's new ``codegen-<hash>`` folder exists
# (complete, its own lock released) before the build's index records it. ``atenmap sources
# --prune`` decides what is unused from the indexes, so a prune between the two removed the
# running build's output. Every build therefore holds BUILDS_LOCK (in the cache) shared for its
# whole length, and prune takes it exclusively, without waiting: while any build runs, prune
# leaves codegen outputs and facts folders alone (and says so); while prune holds it, a build
# waits for it (a fraction of a second). Shared holders write no owner into the file. An orphan
# parse worker that inherited the lock only keeps prune from removing those two, never a build
# from starting (shared locks do not exclude each other).
BUILDS_LOCK = ".builds.lock"


@contextlib.contextmanager
def shared(lock_path: Path, report: Callable[[str], None] | None = None,
           waiting: str = "waiting for atenmap sources --prune…") -> Iterator[None]:
    """Hold a shared lock on ``lock_path`` for the block (see Note [Builds and prune])."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            os.fchmod(fd, 0o644)  # whatever the umask, as every lock (docs/security.md)
        except OSError:
            pass
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said and report is not None:
                    report(waiting)
                said = True
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # drops the lock


@contextlib.contextmanager
def exclusive_now(lock_path: Path) -> Iterator[bool]:
    """Try once to lock ``lock_path`` exclusively; the block gets whether it holds the lock."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            held = False
        yield held
    finally:
        os.close(fd)
