"""The bundled default index: one real PyTorch release's facts, shipped as package data, so that
``atenmap add.out`` answers on a machine with no PyTorch source tree.

The bundle is derived from a full index (``atenmap.build`` of the real tree, with torchgen's
output) by ``scripts/build_bundle.py`` (the builder is not part of the runtime package). It holds
only derived facts -- names, qualified names, paths, lines, schemas -- never PyTorch code. See
Note [What the bundle drops] for what is left out and why a chain cannot tell.

Layout of the package data (``atenmap/data/``)::

    bundle.json                 manifest: version, tag, sizes, sha256 of both files, what was dropped
    pytorch-2.6.0.sqlite.xz     the slim index, xz-compressed, without secondary indexes

On first use :func:`installed_index` decompresses it into ``<cache>/bundle/<name>-<sha>/``, checks
its sha256, creates the secondary indexes and renames it into place, so a reader never sees half
a file. Generated files are stored under the placeholder prefix ``<torchgen>/`` (meta
``codegen_dir`` is ``<torchgen>``), never the build machine's cache path.

Note [Deterministic bundle]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
The slim index is written row by row in a canonical order (files by path, facts by file path and
then their order in the file, operators and dispatch by name), with fresh ids, mtimes set to 0
and no build time, then VACUUMed; xz runs with fixed settings. Two builds from the same tree,
with the same extractor (parse.py, queries), tree-sitter grammars and SQLite library, give the
same bytes: the manifest's ``sqlite_sha256`` is the check (tests/test_bundle_realtree.py).

Note [What the bundle quotes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``--why`` and ``--backward`` read a tree's files at query time (resolve/why.py parses the caller's
file for its branches; resolve/backward.py reads derivatives.yaml and lines of torchgen's autograd
files). The bundle has no files, so the builder answers those reads once, from the tree, and keeps
the answers -- only what an answer prints, never a file (store/quoted.sql):

    quoted_branches     per call site of the slim index (kept calls and launches): the branches,
                        AT_DISPATCH macros and #if that FileBranches finds around it
    quoted_derivatives  derivatives.yaml's entries (schemas and formulas, as the yaml's are kept)
    quoted_lines        the lines of VariableType_*.cpp / Functions.cpp that backward.py quotes
                        (the node made, the inputs saved, the redispatch, each grad_result); the
                        lines of signatures and calls Note [Functions passed by name] and Note [Views
                        that copy] read; and the lines of the MPS files' function bodies and .metal
                        kernels that resolve/mpsgraph.py's runs come from (Note [MPS lines from the bundle])
    quoted_bodies       where those MPS function bodies end (found by matching braces in the tree)
    quoted_text_ops     the Tensor arithmetic (``grad * other``) of each FunctionsManual helper
    quoted_runs         each operator's runs block for the keys a default answer shows, as the tree
                        ranks it (the runs in order, each "when" as printed, with and without --why):
                        Note [The runs the bundle keeps] in resolve/runs.py

At query time resolve/why.py, resolve/backward.py and resolve/mpsgraph.py read these through
``Store`` instead of the files (``why.StoredBranches``, ``BackwardResolver``'s ``quoted``,
``mpsgraph.QuotedLines``); the answers are the same as from the tree (tests/test_bundle_realtree.py
compares them).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import lzma
import os
from importlib import resources
from pathlib import Path
from typing import Callable

from atenmap.errors import IndexError_
from atenmap.model import SourceInfo

GENERATED_PREFIX = "<torchgen>"
GITHUB = "https://github.com/pytorch/pytorch"
MANIFEST = "bundle.json"
BUNDLE_FORMAT = "1"
_XZ_PRESET = 9 | lzma.PRESET_EXTREME
_CHUNK = 1 << 20

# ---- using the shipped bundle -------------------------------------------------------------------
def manifest() -> dict | None:
    """The shipped bundle's manifest, or None when this installation has no bundle."""
    try:
        text = resources.files("atenmap").joinpath("data", MANIFEST).read_text()
    except (FileNotFoundError, OSError, ModuleNotFoundError):
        return None
    return json.loads(text)


def source_info(man: dict | None = None) -> SourceInfo | None:
    """The SourceInfo answering for the bundle: root is the GitHub tree it describes."""
    man = man or manifest()
    if man is None:
        return None
    ref = man.get("commit") or man.get("tag")
    root = f"{GITHUB}/tree/{ref}" if ref else f"bundled index of PyTorch {man['version']}"
    return SourceInfo(root, man.get("pytorch_version") or man["version"], man.get("commit"), "bundled")


def notice(info: SourceInfo) -> str:
    """The one line saying that the bundle answers, for which version, and how to do better."""
    from atenmap.source.fetch import installed_torch

    man = manifest() or {}
    ref = man.get("commit") or man.get("tag") or ""
    torch = installed_torch()
    if torch is not None and torch.version.release != man.get("version"):
        hint = f"your torch is {torch.raw}: `atenmap fetch` gets its source"
    else:
        hint = "`atenmap fetch` gets a local tree"
    # the runs block is the tree's as the bundle keeps it (Note [The runs the bundle keeps] in
    # resolve/runs.py): for a call with the defaults; an answer it does not keep warns on its own
    return (f"no PyTorch source tree found; answering from the bundled index of PyTorch {man.get('version', info.version)}"
            + (f" ({ref})" if ref else "") + f", its runs ranked as the tree ranks them for a call with the defaults"
            f" -- {hint}")


def install_dir(man: dict) -> Path:
    from atenmap.source.paths import cache_dir

    return cache_dir() / "bundle" / f"{man['name']}-{man['xz_sha256'][:12]}"


def installed_index(status: Callable[[str], None] | None = None) -> Path:
    """Path of the bundle's index in the cache, decompressed on first use (atomically)."""
    from atenmap.store import INDEX_NAME
    from atenmap.store import SCHEMA_VERSION, Store

    man = manifest()
    if man is None:
        raise IndexError_("this atenmap has no bundled index (package data atenmap/data/ is missing)")
    if man.get("schema_version") != SCHEMA_VERSION:
        raise IndexError_(f"the bundled index has schema {man.get('schema_version')!r}, this atenmap needs "
                          f"{SCHEMA_VERSION!r}; rebuild it with scripts/build-bundle, or use a source tree "
                          "(atenmap fetch)")
    folder = install_dir(man)
    final = folder / INDEX_NAME
    if final.exists():
        return final
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.exists():
            return final
        if status:
            status(f"unpacking the bundled index of PyTorch {man['version']} into {folder}…")
        tmp = folder / f"{INDEX_NAME}.tmp-{os.getpid()}"
        try:
            h = hashlib.sha256()
            src = resources.files("atenmap").joinpath("data", man["file"])
            with src.open("rb") as fin, open(tmp, "wb") as fout:
                dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
                while chunk := fin.read(_CHUNK):
                    data = dec.decompress(chunk)
                    h.update(data)
                    fout.write(data)
            if h.hexdigest() != man["sqlite_sha256"]:
                raise IndexError_(f"the bundled index {man['file']} is corrupt (sha256 mismatch); reinstall atenmap")
            store = Store.open(tmp, writable=True)
            store.index_quotes()
            store.finish()  # secondary indexes and ANALYZE
            store.close()
            os.replace(tmp, final)
        except lzma.LZMAError as exc:
            raise IndexError_(f"the bundled index {man['file']} is corrupt ({exc}); reinstall atenmap") from None
        finally:
            tmp.unlink(missing_ok=True)
    return final


