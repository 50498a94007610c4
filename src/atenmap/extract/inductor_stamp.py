"""The stamp of what extract/inductor.py read, checked by stat alone on every query (freshness.py):
no ``ast``, no ``hashlib`` on that path."""
from __future__ import annotations

import json
import os
from pathlib import Path

INDUCTOR_REL = "torch/_inductor"
_EXTRACTOR = Path(__file__).resolve().parent / "inductor.py"


def _sig(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def input_stamp(root: Path, read: list[str]) -> str:
    """JSON: each file read (size, mtime), each folder they lie in and ``torch/`` (mtime: a new
    file), and the extractor module's own size and mtime."""
    dirs = sorted({str(Path(r).parent) for r in read} | {"torch", INDUCTOR_REL})
    return json.dumps({"files": {r: _sig(root / r) for r in sorted(set(read))},
                       "dirs": {d: (_sig(root / d) or [None, None])[1] for d in dirs},
                       "extractor": _sig(_EXTRACTOR)}, sort_keys=True)


def inputs_unchanged(root: Path, stamp: str | None) -> bool:
    """Whether the files ``stamp`` (``input_stamp``) names are as they were, by stat alone."""
    if not stamp:
        return False
    try:
        old = json.loads(stamp)
        return input_stamp(root, list(old["files"])) == stamp
    except (ValueError, KeyError, TypeError):
        return False
