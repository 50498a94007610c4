"""Which Python frames are the user's, how they are shown, and the user's part of a traceback.

Note [User frames]
~~~~~~~~~~~~~~~~~~
A frame is the user's unless its file lies in PyTorch's package, in atenmap's, in the standard
library, in the environment's scripts folder (``bin/atenmap``), in any site-packages/dist-packages
folder, or is frozen (``<frozen runpy>``). Those
frames are folded away: ``main.py:24 -> model.py:10`` is what remains of a stack that went through
``torch/nn/modules/module.py``. Notebook cells (``/tmp/ipykernel_*/…py``, ``<ipython-input-…>``)
count as the user's. The test is by path prefix and is cached per code object by the recorder.
"""
from __future__ import annotations

import importlib.util
import os
import sysconfig
import traceback
from functools import lru_cache
from pathlib import Path

_USER_PSEUDO = ("<stdin>", "<string>", "<ipython-input-", "<python-input-")
_PACKAGE_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


@lru_cache(maxsize=1)
def _folded_roots() -> tuple[str, ...]:
    roots: set[str] = set()
    for name in ("torch", "atenmap"):
        spec = importlib.util.find_spec(name)
        for loc in (spec.submodule_search_locations or []) if spec else []:
            roots.add(os.path.realpath(loc) + os.sep)
            roots.add(os.path.abspath(loc) + os.sep)
    for key in ("stdlib", "platstdlib", "scripts"):  # scripts: console entry points (bin/atenmap)
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(os.path.realpath(p) + os.sep)
            roots.add(os.path.abspath(p) + os.sep)
    return tuple(sorted(roots))


def is_user(filename: str) -> bool:
    """See Note [User frames]."""
    if not filename or (filename.startswith("<") and not filename.startswith(_USER_PSEUDO)):
        return False  # <frozen runpy>, <built-in ...>, torch.fx's <eval_with_key>.1, dynamo's generated code
    if any(m in filename for m in _PACKAGE_MARKERS):
        return False
    return not filename.startswith(_folded_roots())


def display_path(file: str, base: str | os.PathLike | None = None) -> str:
    """``file`` relative to ``base`` (default: the current directory) when it lies below it."""
    if file.startswith("<"):
        return file
    return _relative(file, os.fspath(base) if base else os.getcwd())


@lru_cache(maxsize=4096)
def _relative(file: str, base: str) -> str:
    """Once per (file, base): a report shows the same few files on every call of a long run, and
    resolving a path is several system calls (docs/trace.md, "Overhead")."""
    try:
        return Path(file).resolve().relative_to(Path(base).resolve()).as_posix()
    except (ValueError, OSError):
        return file


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` as if the user's script had run alone: only the user's frames."""
    frames = [fs for fs in traceback.extract_tb(exc.__traceback__) if is_user(fs.filename)]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.StackSummary.from_list(frames).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)
