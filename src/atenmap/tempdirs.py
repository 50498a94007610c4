"""Temporary folders atenmap makes outside its cache (a trace's spilled events, the profiler's chrome
sessions): removed on every exit path, and those of killed runs removed by the next run.

Note [Temporary folders of killed runs]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``atenmap trace --chrome OUT`` left ``/tmp/atenmap-chrome-XXXX/0.json`` behind (124 MB for a
50k-op script), and a run killed with SIGKILL left ``atenmap-trace-*`` (issue 34, item 8). Each
folder here is removed by ``cleanup()`` (the caller's ``with`` or ``finally``), else when its
object is collected or the interpreter exits (``weakref.finalize``); only by the process that made
it, never by a forked child exiting. A folder holds ``.alive``, locked (``flock``) by its maker
for the folder's whole life; the kernel lets go of the lock when that process dies, however it
dies. So every new folder first removes the folders of its kind, the user's own, whose lock can be
taken: their makers are gone. A folder without ``.alive`` (one being made, or made before this
rule) is removed only when it is over STALE_S old. A lock, unlike a pid, does not lie when the
pid was reused or belongs to another container sharing ``/tmp``.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
import weakref

PREFIXES = ("atenmap-trace-", "atenmap-chrome-")
ALIVE = ".alive"
STALE_S = 3600.0


class TempFolder:
    """A fresh folder ``<dir or tmp>/<prefix>XXXXXXXX``; see Note [Temporary folders of killed runs]."""

    def __init__(self, prefix: str, dir: str | None = None):
        if prefix not in PREFIXES:
            raise ValueError(f"unknown temporary folder prefix {prefix!r}")
        clean_stale(dir)
        self.path = tempfile.mkdtemp(prefix=prefix, dir=dir)
        # locked before it is named ``.alive``: another run's clean_stale() that opened a fresh, not yet
        # locked ``.alive`` would take its lock and remove this live folder (two pool workers starting)
        new = os.path.join(self.path, ALIVE + ".new")
        fd = os.open(new, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(new, os.path.join(self.path, ALIVE))
        self._finalizer = weakref.finalize(self, _remove, self.path, fd, os.getpid())

    def cleanup(self) -> None:
        self._finalizer()

    def __enter__(self) -> "TempFolder":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()


def _remove(path: str, fd: int, maker: int) -> None:
    if os.getpid() != maker:  # a forked child: the folder is its parent's
        return
    shutil.rmtree(path, ignore_errors=True)
    os.close(fd)


def clean_stale(dir: str | None = None) -> list[str]:
    """Remove the folders of killed runs in ``dir`` (else the temp folder); returns their paths."""
    base = dir or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    me = os.geteuid()
    for e in entries:
        if not e.name.startswith(PREFIXES):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
            continue
        if _gone(e.path, st):
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(e.path)
    return removed


def _gone(path: str, st: os.stat_result) -> bool:
    """Whether the maker of the folder at ``path`` is gone: its ``.alive`` lock can be taken (or,
    with no ``.alive``, the folder is over STALE_S old)."""
    try:
        fd = os.open(os.path.join(path, ALIVE), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return time.time() - st.st_mtime > STALE_S
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
