"""The freshness check every query pays, by stat alone: the proof a build leaves beside its index.

Note [Cheap freshness]
~~~~~~~~~~~~~~~~~~~~~~
The full check (build.is_fresh without a proof) lists every folder of aten/src/ATen, stats ~2,000
files, hashes torchgen's ~160 input files and asks importlib.metadata for the grammar versions:
30-60 ms and the imports of tree_sitter and importlib.metadata. A build, and a full check that
finds the index fresh, write ``fresh.json`` next to the index; a query only repeats its stats:

- each indexed file of the tree: its size and mtime as the index records them (``files``). An
  edit in place changes the file's mtime, never its folder's, so every file is stat-ed;
- each folder the walk listed: its mtime, which moves when an entry is added, removed or
  renamed in it (a new file, a deleted one, an editor's save-by-rename, a new sub-folder). The
  folder is stat-ed before it is listed, so an entry added during the walk moves it past the
  recorded value. The folder of each file indexed from outside ATen (build.EXTRA_SOURCES:
  torch/csrc/autograd, or its nearest existing parent) is recorded the same way, so a
  FunctionsManual.h created after the build is noticed;
- torchgen's inputs: each file's size and mtime and each folder's mtime (codegen.input_signature)
  stand for their hash; the extractor's own files stand for the extractor hash, and the grammar
  packages' files and their site folder (where pip adds and removes dist-info folders) for the
  grammar versions; native_functions.yaml's size and mtime as before; the Python files the
  torch.compile facts were read from (extract/inductor.py's stamp in meta ``compile_inputs``), when
  the index holds them (Note [torch.compile facts when asked] in build.py: without them, nothing
  of torch/ is stat-ed).

Any difference sends the query to the full check, which rebuilds what changed, or, when nothing
that matters did (a new .txt in a source folder), writes a new proof. A proof names its index by
a token kept in the index's meta. Racy values: a folder, input or index record whose mtime is
less than RACY_NS older than the proof could still change within the same clock tick without
moving its mtime, so it is not trusted (the proof holds None, or ``proven`` refuses it) and the
next query takes the full check again, as git treats "racily clean" entries. What neither check
sees: a change that keeps a file's size and mtime.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from atenmap.extract import registry

PROOF_NAME = "fresh.json"
RACY_NS = 2_000_000_000
# What build.extractor_hash reads: the extractor's modules and queries, from its pattern registry
# (extract/registry.py imports no handler and no tree_sitter; docs/architecture.md).
EXTRACTOR_FILES = registry.extractor_files()
EXTRACTOR_FILES += ("limits.py",)  # its caps decide which files are parsed (Note [Pathological sources])
GRAMMAR_MODULES = ("tree_sitter", "tree_sitter_cpp", "tree_sitter_cuda")


def _sig(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def extractor_signature() -> dict[str, list[int] | None]:
    base = os.path.dirname(os.path.abspath(__file__))
    return {name: _sig(os.path.join(base, name)) for name in EXTRACTOR_FILES}


def grammar_signature() -> dict[str, list]:
    """Each grammar module's file and the folder it is installed in, without importing them."""
    import importlib.util

    out: dict[str, list] = {}
    for name in GRAMMAR_MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None and spec.origin else ""
        site = os.path.dirname(os.path.dirname(origin) if spec and spec.submodule_search_locations else origin)
        out[name] = [origin, _sig(origin) if origin else None, _mtime(site) if site else None]
    return out


class Proof:
    """What a build or full check saw, taken before it read anything (see Note [Cheap freshness])."""

    def __init__(self, root: str, codegen: bool):
        from atenmap.extract.codegen import input_signature

        self.root = root
        self.codegen = codegen
        self.taken_ns = time.time_ns()
        self.extractor = extractor_signature()
        self.grammars = grammar_signature()
        self.dirs: dict[str, int | None] = {}  # filled by build.walk_sources
        self.codegen_files, self.codegen_dirs = input_signature(Path(root)) if codegen else ({}, {})

    def write(self, folder: Path, token: str) -> None:
        """``fresh.json`` for the index whose meta holds ``token``; atomic, best effort (a read-only
        cache only costs the next query the full check)."""
        limit = self.taken_ns - RACY_NS

        def trusted(v):
            return None if v is None or v > limit else v

        def trusted_sig(v):
            return None if v is None or v[1] > limit else v

        data = {"token": token, "root": self.root, "codegen": self.codegen, "taken_ns": self.taken_ns,
                "extractor": {k: trusted_sig(v) for k, v in self.extractor.items()},
                "grammars": self.grammars,
                "dirs": {k: trusted(v) for k, v in self.dirs.items()},
                "codegen_files": {k: trusted_sig(v) if v is not None else "absent" for k, v in self.codegen_files.items()},
                "codegen_dirs": {k: trusted(v) for k, v in self.codegen_dirs.items()}}
        tmp = folder / f"{PROOF_NAME}.tmp-{os.getpid()}"
        try:
            tmp.write_text(json.dumps(data, separators=(",", ":")))
            os.chmod(tmp, 0o644)  # whatever the umask, as the index (docs/security.md)
            os.replace(tmp, folder / PROOF_NAME)
        except OSError:
            tmp.unlink(missing_ok=True)


def proven(folder: Path, root: str, meta: dict[str, str], files: dict[str, tuple[int, int, int, int]],
           codegen: bool, yaml_rel: str) -> bool:
    """True when ``fresh.json`` belongs to this index (``meta``, ``files`` as the store gives them)
    and no stat differs from it. False means: take the full check, not: stale."""
    try:
        proof = json.loads((folder / PROOF_NAME).read_text())
    except (OSError, ValueError):
        return False
    if (not isinstance(proof, dict) or proof.get("token") != meta.get("fresh_token") or not meta.get("fresh_token")
            or proof.get("root") != root or proof.get("codegen") is not codegen):
        return False
    if proof["extractor"] != extractor_signature() or None in proof["extractor"].values():
        return False
    if proof["grammars"] != grammar_signature():
        return False
    base = root.rstrip("/") + "/"
    for rel, mtime in proof["dirs"].items():
        if mtime is None or _mtime(base + rel) != mtime:
            return False
    limit = proof["taken_ns"] - RACY_NS
    for rel, (_id, size, mtime, generated) in files.items():
        if generated:
            continue
        if mtime > limit:
            return False
        try:
            st = os.stat(base + rel)
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime:
            return False
    if codegen:
        for rel, sig in proof["codegen_files"].items():
            if sig is None or _sig(base + rel) != (None if sig == "absent" else sig):
                return False
        for rel, mtime in proof["codegen_dirs"].items():
            if mtime is None or _mtime(base + rel) != mtime:
                return False
    y = _sig(base + yaml_rel)
    if y is None or meta.get("yaml_stat") != f"{y[0]}:{y[1]}":
        return False
    if "compile_inputs" not in meta:  # made when first asked for (Note [torch.compile facts when asked])
        return True
    from atenmap.extract.inductor_stamp import inputs_unchanged  # ~100 stats

    return inputs_unchanged(Path(root), meta["compile_inputs"])
