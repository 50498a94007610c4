"""The full freshness check, run when the stat proof (freshness.py) fails, and what it shares with
the build: the walk of the tree's C++/CUDA files, the extractor hash, the meta an index must carry.
Both indexstate.is_fresh and build.py import it (neither imports the other)."""
from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Iterable

from atenmap import __version__
from atenmap.model import SourceInfo
from atenmap.source.find import ATEN_REL, YAML_REL
from atenmap.store import SCHEMA_VERSION

SKIP_DIRS = {"test", "tests", "benchmarks", "third_party"}
# Hand-written files outside ATen that chains need: the helpers derivatives.yaml's formulas call
# (mul_tensor_backward, sum_backward, ...), for `--backward` (resolve/backward.py).
EXTRA_SOURCES = ("torch/csrc/autograd/FunctionsManual.cpp", "torch/csrc/autograd/FunctionsManual.h")


def walk_sources(root: Path, rel_base: str = ATEN_REL,
                 dirs: dict[str, int] | None = None) -> Iterable[tuple[str, str, int, int]]:
    """Yield ``(relpath, language, size, mtime_ns)`` for every C++/CUDA file under ``rel_base``, in
    ``os.walk`` order (folders sorted, a folder's files before its sub-folders; symlinked folders
    not entered). ``dirs`` gets each listed folder's mtime, taken before it is listed (Note [Cheap
    freshness] in freshness.py). A name that is not UTF-8 comes with its bytes escaped (``\\xe9``);
    read_source skips it."""
    from atenmap.extract.languages import language_of

    cut = len(str(root)) + 1
    stack = [os.path.join(str(root), rel_base)]
    while stack:
        dirpath = stack.pop()
        try:
            mtime = os.stat(dirpath).st_mtime_ns
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError:  # as os.walk: a folder that cannot be listed is left out
            continue
        if dirs is not None:
            dirs[dirpath[cut:].replace(os.sep, "/")] = mtime
        subdirs, files = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(e.name)
            elif e.name not in SKIP_DIRS and not e.name.startswith(".") and not e.is_symlink():
                subdirs.append(e.name)
        for fn in sorted(files):
            full = os.path.join(dirpath, fn)
            lang = language_of(full[cut:])
            if lang is None:
                continue
            try:
                st = os.stat(full)
            except OSError:
                continue
            rel = full[cut:].replace(os.sep, "/")
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # not UTF-8 on disk: kept (escaped) as a skipped file, see read_source
                rel = os.fsencode(rel).decode("utf-8", "backslashreplace")
            yield rel, lang, st.st_size, st.st_mtime_ns
        stack.extend(os.path.join(dirpath, d) for d in sorted(subdirs, reverse=True))
    if rel_base == ATEN_REL:
        if dirs is not None:  # before the files' stats, as a walked folder's (Note [Cheap freshness])
            for folder in sorted({posixpath.dirname(rel) for rel in EXTRA_SOURCES}):
                _nearest_folder(str(root), folder, dirs)
        for rel in EXTRA_SOURCES:
            try:
                st = os.stat(root / rel)
            except OSError:
                continue
            yield rel, language_of(rel), st.st_size, st.st_mtime_ns


def _nearest_folder(root: str, rel: str, dirs: dict[str, int]) -> None:
    """Record the mtime of ``rel``, or of its nearest existing parent below ``root``: creating
    ``rel``'s files (or ``rel`` itself) moves it, so a proof notices a FunctionsManual.h that was
    not there at build time (Note [Cheap freshness] in freshness.py)."""
    while rel:
        try:
            dirs[rel] = os.stat(os.path.join(root, rel)).st_mtime_ns
            return
        except OSError:
            rel = posixpath.dirname(rel)


def extractor_hash() -> str:
    """Hash of the code and queries that turn sources into facts: a change re-parses everything."""
    import hashlib
    from importlib import resources

    from atenmap.freshness import EXTRACTOR_FILES

    h = hashlib.sha256()
    pkg = resources.files("atenmap")
    for name in EXTRACTOR_FILES:
        h.update(pkg.joinpath(name).read_bytes())
    return h.hexdigest()[:16]


def expected_meta(source: SourceInfo) -> dict[str, str]:
    from atenmap.extract.parse import grammar_versions

    return {
        "schema_version": SCHEMA_VERSION,
        "atenmap_version": __version__,
        "extractor": extractor_hash(),
        "grammars": json.dumps(grammar_versions(), sort_keys=True),
        "source_root": source.root,
    }


def full_check(source: SourceInfo, meta: dict[str, str], known: dict, codegen: bool, proof) -> bool:
    """The freshness check without a proof: meta, a walk of the tree, torchgen's input hash."""
    if any(meta.get(k) != v for k, v in expected_meta(source).items()):
        return False
    seen = 0
    for rel, _lang, size, mtime in walk_sources(Path(source.root), dirs=proof.dirs):
        rec = known.get(rel)
        if rec is None or rec[1] != size or rec[2] != mtime:
            return False
        seen += 1
    if seen != sum(1 for r in known.values() if not r[3]):
        return False
    if codegen:
        from atenmap.extract.codegen import input_hash

        if meta.get("codegen_hash") != input_hash(Path(source.root)):
            return False
    y = Path(source.root, YAML_REL).stat()
    from atenmap.extract.inductor_stamp import inputs_unchanged

    return (meta.get("yaml_stat") == f"{y.st_size}:{y.st_mtime_ns}"
            and ("compile_inputs" not in meta  # not made yet: Note [torch.compile facts when asked] in build.py
                 or inputs_unchanged(Path(source.root), meta["compile_inputs"])))
