"""Files the user names for atenmap to write (``trace --json/--chrome OUT``, ``kernel --from-trace T
--chrome OUT``): checked before the work starts. No torch."""
from __future__ import annotations

import os
from pathlib import Path

from atenmap.errors import AtenmapError


def writable(path: str | os.PathLike) -> Path:
    """``path`` if a file can be written there, else one AtenmapError line. The CLI asks before the
    script runs, so that an hour of training is not traced into a folder that does not exist."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise AtenmapError(f"cannot write {p}: it is a folder")
    if not folder.is_dir():
        raise AtenmapError(f"cannot write {p}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise AtenmapError(f"cannot write {p}: permission denied")
    return p
