"""One cross-process lock helper for the cache (codegen runs, fetches, index builds)."""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Callable, Iterator


@contextlib.contextmanager
def exclusive(lock_path: Path, report: Callable[[str], None] | None = None,
              waiting: str = "waiting for another atenmap process…") -> Iterator[None]:
    """Hold an exclusive flock on ``lock_path`` (created, never deleted) for the block; say
    ``waiting`` through ``report`` when another process holds it."""
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if report is not None:
                report(waiting)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
