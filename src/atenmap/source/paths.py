"""Where things are: a PyTorch tree's landmarks (``YAML_REL``, ``ATEN_REL``), the marker ``atenmap
fetch`` leaves in a tree it unpacked, and atenmap's cache folder. The bottom of source/: find.py,
fetch.py and bundle.py all read it (find.py re-exports it)."""
from __future__ import annotations

import os
from pathlib import Path

YAML_REL = "aten/src/ATen/native/native_functions.yaml"
ATEN_REL = "aten/src/ATen"
MARKER = ".atenmap-fetch.json"  # what `atenmap fetch` leaves in a tree it unpacked (fetch.py)


def is_pytorch_tree(path: Path) -> bool:
    return (path / YAML_REL).is_file()


def cache_dir() -> Path:
    env = os.environ.get("ATENMAP_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "atenmap"
