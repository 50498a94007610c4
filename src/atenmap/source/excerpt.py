"""``atenmap show PATH:LINE``: the lines around a place a chain names, read from the tree the index
was built from (``gen:PATH``: from torchgen's output folder). The bundled index holds no source
text: it says in one line where the text is (the GitHub permalink, or ``atenmap fetch``) and
fetches nothing by itself."""
from __future__ import annotations

import os

from atenmap import config, files
from atenmap.errors import AtenmapError, UsageError
from atenmap.model import GEN_PREFIX, Excerpt, SourceInfo

MAX_CONTEXT = 500


class NoSourceText(AtenmapError):
    """The index has no text for the place (the bundled index; a file that is not there)."""

    exit_code = 1


def parse_place(place: str) -> tuple[str, int]:
    """``PATH:LINE`` -> (PATH, LINE); UsageError for anything else."""
    path, _, line = place.strip().rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        raise UsageError(f"{place!r}: expected PATH:LINE, e.g. aten/src/ATen/native/BinaryOps.cpp:440 or "
                         f"{GEN_PREFIX}aten/RegisterCUDA.cpp:43955")
    return path, int(line)


def excerpt(source: SourceInfo, generated_root: str | None, place: str, context: int = 5) -> Excerpt:
    """The lines ``line - context`` .. ``line + context`` of the file ``place`` names: a path
    relative to the source root, an absolute path inside it or inside torchgen's output, or
    ``gen:PATH`` (torchgen's output)."""
    path, line = parse_place(place)
    if not 0 <= context <= MAX_CONTEXT:
        raise UsageError(f"-C {context}: from 0 to {MAX_CONTEXT} lines")
    if source.origin == "bundled":
        raise NoSourceText(_elsewhere(source, path, line))
    full = _file(source.root, generated_root, path)
    limit = config.max_file_bytes()
    try:  # only a regular file, at most the size atenmap indexes (files.py; docs/security.md)
        text = files.read_text(full, limit, errors="replace").splitlines()
    except files.TooLarge:
        raise NoSourceText(f"{path}: larger than {limit} bytes (ATENMAP_MAX_FILE_BYTES), not shown") from None
    except files.NotRegular:
        raise NoSourceText(f"{path}: not a regular file (a folder, a FIFO or a device), not shown") from None
    if line > len(text):
        raise NoSourceText(f"{place}: {path} has {len(text)} lines")
    first = max(1, line - context)
    return Excerpt(place.strip(), full, line, first, tuple(text[first - 1:line + context]))


def _file(root: str, generated_root: str | None, path: str) -> str:
    if path.startswith(GEN_PREFIX):
        if not generated_root:
            raise NoSourceText(f"{path}: this index holds no files torchgen generated")
        base, rel = generated_root, path[len(GEN_PREFIX):]
    elif os.path.isabs(path):
        base, rel = next((b for b in (root, generated_root) if b and _inside(path, b)), None), path
        if base is None:
            raise UsageError(f"{path}: not in the source tree {root} nor in its torchgen output")
    else:
        base, rel = root, path
    full = os.path.realpath(os.path.join(base, rel))
    if not _inside(full, base):
        raise UsageError(f"{path}: outside {base}")
    if not os.path.exists(full):
        raise NoSourceText(f"{path}: no such file in {base}")
    return full


def _inside(path: str, base: str) -> bool:
    base = os.path.realpath(base)
    return os.path.realpath(path) == base or os.path.realpath(path).startswith(base.rstrip("/") + "/")


def _elsewhere(source: SourceInfo, path: str, line: int) -> str:
    """Where the text of a place is, for the bundled index (one line)."""
    if path.startswith((GEN_PREFIX, "<torchgen>/")):
        return (f"{path}:{line}: torchgen writes this file when PyTorch is built; it is not in the repository nor in "
                "the bundled index. `atenmap fetch` gets a tree whose index holds it")
    if "/tree/" in source.root:
        return (f"the bundled index holds no source text: {path}:{line} is at "
                f"{source.root.replace('/tree/', '/blob/', 1)}/{path}#L{line} (`atenmap fetch` gets the tree)")
    return f"the bundled index holds no source text for {path}:{line}; `atenmap fetch` gets the tree"


__all__ = ["NoSourceText", "excerpt", "parse_place"]
