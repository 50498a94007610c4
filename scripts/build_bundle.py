"""Builds the bundled default index (src/atenmap/data/) from a full index of a real PyTorch tree.

Run through ``scripts/build-bundle``. Not part of the installed package: the runtime side (unpacking
the shipped bundle into the cache) is ``atenmap.source.bundle``; this builder reads the full index
and writes the slim, deterministic copy. See Note [What the bundle drops] below and
Note [Deterministic bundle] in ``atenmap/source/bundle.py``.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from atenmap import __version__
from atenmap.errors import AtenmapError
from atenmap.resolve.chain import call_may_lead_somewhere
from atenmap.source.bundle import BUNDLE_FORMAT, GENERATED_PREFIX, MANIFEST, _XZ_PRESET, _CHUNK  # noqa: F401

# Note [What the bundle drops]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Facts no chain query can read (resolve.py), measured on PyTorch 2.6.0:
#   include      whose target is not an indexed file (arg == ''): include_graph() reads only
#                resolved ones (<vector>, <cuda_runtime.h>, ...).
#   macro_block  other than TORCH_LIBRARY*: only TORCH_LIBRARY_IMPL blocks scope m.impl()
#                registrations; TEST(...) and CUDA_KERNEL_LOOP(...) blocks are never read
#                (parse.py does not let them scope calls).
#   call         that can lead nowhere: Resolver._explore turns a call into a step only when its
#                callee is a vendor library (resolve/libraries.py), a DispatchStub, an operator
#                (at::add, self.t()), a loop helper (chain.LOOP_HELPERS), or has a definition in
#                the index (function, __global__, functor class); the resolver says which, in
#                resolve.chain.call_may_lead_somewhere. Member calls (a.b()) are only followed for
#                operators and loop helpers; "argument" references only for stubs; "macro_arg"
#                (a function handed to a macro) only for library calls.
#                Exception: in a functor's ``operator()`` every call to a defined function is
#                kept (Resolver._inner_calls lists them whatever their form).
#                Also dropped: a library call that is device code of a kernel (Note [Library calls
#                in device code] in resolve/devicecode.py; read from the tree's text).
#                (kernels.py's reverse lookups walk calls by name too; on the bundle they miss
#                member calls such as it.launch(...): ~83k of them, 0.6 MB compressed.)
# Every other kind (function, global, class, lambda, impl_func, meta_func, launch, torch_impl,
# binding, *_dispatch, jit_name, jit_code) is kept whole, with its ``cond`` and ``targs`` (Note [Kernels chosen by
# template arguments], Note [Launches through a variable]); the ``compile`` table (torch.compile facts, paths
# relative to the tree) is kept whole too. Also dropped: the ``compile_inputs`` stamp, file mtimes (a bundle is never refreshed),
# ``yaml_stat``/``built_at`` meta (``source_root`` becomes ``<bundled>``), and the secondary indexes
# (recreated from store/indexes.sql when the bundle is installed into the cache).


@dataclass
class BundleReport:
    sqlite: Path
    xz: Path | None
    manifest: dict
    seconds: float = 0.0
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)


def build(index_path: Path, out_dir: Path, *, version: str, tag: str | None = None, commit: str | None = None,
          source_note: str = "", compress: bool = True, status: Callable[[str], None] | None = None,
          workers: int | None = None) -> BundleReport:
    """Write the slim, deterministic copy of the full index at ``index_path`` into ``out_dir``:
    ``pytorch-VERSION.sqlite`` (uncompressed), and with ``compress`` also ``.sqlite.xz`` and the
    manifest ``bundle.json``. See Note [What the bundle drops] and Note [Deterministic bundle].
    ``workers``: processes that rank the runs (Note [The runs the bundle keeps]; default: one per CPU)."""
    from atenmap.store import Store

    t0 = time.perf_counter()
    say = status or (lambda _m: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = Store.open(Path(index_path))
    meta = src.meta()
    if meta.get("codegen") != "on" or not meta.get("codegen_dir"):
        src.close()
        raise AtenmapError(f"{index_path}: built without torchgen's output; the bundle needs it (index without --no-codegen)")
    if "compile_inputs" not in meta:  # made when asked: Note [torch.compile facts when asked] in build.py
        src.close()
        raise AtenmapError(f"{index_path}: holds no torch.compile facts; the bundle keeps them (atenmap index, or "
                           "Index.open(compile_facts=True), makes them)")
    gen_dir = meta["codegen_dir"].rstrip("/")
    name = f"pytorch-{version}"
    final = out_dir / f"{name}.sqlite"
    tmp = out_dir / f".{name}.sqlite.tmp-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    try:
        say("writing the slim index…")
        kept, dropped = _write_slim(src.conn, tmp, gen_dir, meta, version=version, tag=tag, commit=commit,
                                    source_note=source_note, workers=workers)
        os.replace(tmp, final)
    finally:
        src.close()
        tmp.unlink(missing_ok=True)
    raw_sha, raw_size = _sha256_file(final), final.stat().st_size
    manifest = {
        "format": BUNDLE_FORMAT,
        "name": name,
        "version": version,
        "pytorch_version": meta.get("pytorch_version", ""),
        "tag": tag,
        "commit": commit,
        "source": source_note,
        "schema_version": meta.get("schema_version"),
        "extractor": meta.get("extractor"),
        "grammars": json.loads(meta.get("grammars") or "{}"),
        "atenmap_version": __version__,
        "sqlite": final.name,
        "sqlite_sha256": raw_sha,
        "sqlite_size": raw_size,
        "facts_kept": kept,
        "facts_dropped": dropped,
    }
    xz_path = None
    if compress:
        say("compressing (xz)…")
        xz_path = out_dir / f"{name}.sqlite.xz"
        part = xz_path.with_name(xz_path.name + ".part")
        with open(final, "rb") as fin, open(part, "wb") as fout:
            comp = lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=_XZ_PRESET)
            while chunk := fin.read(_CHUNK):
                fout.write(comp.compress(chunk))
            fout.write(comp.flush())
        os.replace(part, xz_path)
        manifest.update(file=xz_path.name, xz_sha256=_sha256_file(xz_path), xz_size=xz_path.stat().st_size)
        (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return BundleReport(final, xz_path, manifest, time.perf_counter() - t0, kept, dropped)


def _write_slim(src: sqlite3.Connection, path: Path, gen_dir: str, meta: dict, *, version: str, tag: str | None,
                commit: str | None, source_note: str, workers: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    from atenmap.store import Store

    def rename(p: str) -> str:
        return GENERATED_PREFIX + p[len(gen_dir):] if p.startswith(gen_dir + "/") else p

    defined = {r[0] for r in src.execute("SELECT DISTINCT name FROM facts WHERE kind IN ('function', 'global', 'class')")}
    stubs = {r[0] for r in src.execute(
        "SELECT DISTINCT name FROM facts WHERE kind IN ('declare_dispatch', 'register_dispatch')")}
    ops = {r[0] for r in src.execute("SELECT DISTINCT base FROM operators")}

    files = sorted(((rename(p), i, lang, size, status, gen) for i, p, lang, size, status, gen in
                    src.execute("SELECT id, path, language, size, status, generated FROM files")))
    new_file = {old: n for n, (_p, old, *_r) in enumerate(files, 1)}
    order = {old: n for n, (_p, old, *_r) in enumerate(files)}

    rows = list(src.execute("SELECT id, file, kind, name, qual, line, end_line, namespace, scope, arg, detail, via_macro, "
                            "cond, targs FROM facts"))
    rows.sort(key=lambda r: (order[r[1]], r[0]))
    kept: dict[str, int] = {}
    dropped: dict[str, int] = {}
    keep_ids: set[int] = set()
    functor_bodies = {r[0] for r in src.execute("SELECT id FROM facts WHERE kind = 'function' AND name = 'operator()'")}
    functions = {r[0] for r in src.execute("SELECT DISTINCT name FROM facts WHERE kind = 'function'")}
    on_device = _device_library_calls(src, meta.get("source_root", ""))
    for fid, _file, kind, name, qual, _l, _e, _ns, sc, arg, detail, _v, _c, _t in rows:
        if kind == "include":
            ok = arg != ""
        elif kind == "macro_block":
            ok = name.startswith("TORCH_LIBRARY")
        elif kind == "call":
            ok = (call_may_lead_somewhere(name, qual, detail, defined, ops, stubs) or (sc in functor_bodies and name in functions)) \
                and fid not in on_device
        else:
            ok = True
        if ok:
            keep_ids.add(fid)
    # A fact whose scope is dropped goes with it (nothing can reach it through in_scope()).
    by_id = {r[0]: r for r in rows}
    changed = True
    while changed:
        changed = False
        for fid in list(keep_ids):
            sc = by_id[fid][8]
            if sc is not None and sc not in keep_ids:
                keep_ids.discard(fid)
                changed = True
    new_id: dict[int, int] = {}
    for r in rows:
        if r[0] in keep_ids:
            new_id[r[0]] = len(new_id) + 1
            kept[r[2]] = kept.get(r[2], 0) + 1
        else:
            dropped[r[2]] = dropped.get(r[2], 0) + 1

    store = Store.create(path)
    conn = store.conn
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO files(id, path, language, size, mtime_ns, status, generated) VALUES (?, ?, ?, ?, 0, ?, ?)",
                     [(new_file[old], p, lang, size, status, gen) for p, old, lang, size, status, gen in files])
    conn.executemany(
        "INSERT INTO facts(id, file, kind, name, qual, line, end_line, namespace, scope, arg, detail, via_macro, cond, targs)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(new_id[fid], new_file[f], kind, name, qual, line, end, ns, new_id[sc] if sc is not None else None,
          rename(arg) if kind == "include" else arg, detail, via, cond, targs)
         for fid, f, kind, name, qual, line, end, ns, sc, arg, detail, via, cond, targs in rows if fid in keep_ids])
    conn.executemany("INSERT INTO operators(name, base, line, kind, delegate, record) VALUES (?, ?, ?, ?, ?, ?)",
                     src.execute("SELECT name, base, line, kind, delegate, record FROM operators ORDER BY name"))
    conn.executemany("INSERT INTO dispatch(operator, key, kernel, structured, explicit) VALUES (?, ?, ?, ?, ?)",
                     src.execute("SELECT operator, key, kernel, structured, explicit FROM dispatch ORDER BY operator, key"))
    conn.executemany("INSERT INTO compile(op, overload, role, symbol, file, line, via, registry, cond, seq)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     src.execute("SELECT op, overload, role, symbol, file, line, via, registry, cond, seq FROM compile "
                                 "ORDER BY seq"))
    new_meta = {k: meta[k] for k in ("schema_version", "atenmap_version", "extractor", "grammars", "codegen",
                                     "codegen_hash", "codegen_warnings", "pytorch_version") if k in meta}
    new_meta.update(codegen_dir=GENERATED_PREFIX, pytorch_commit=commit or "", source_root="<bundled>",
                    bundle_format=BUNDLE_FORMAT, bundle_version=version, bundle_tag=tag or "",
                    bundle_source=source_note, bundle_dropped=json.dumps(dropped, sort_keys=True), complete="1")
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(new_meta.items()))
    conn.execute("COMMIT")
    sites = [(r[1], r[5], r[2], r[3]) for r in rows if r[0] in keep_ids and r[2] in ("call", "launch")]
    store.add_quotes(*_quotes(src, meta.get("source_root", ""), sites, rename))
    store.add_quoted_runs(_ranked_runs(conn, meta.get("source_root", ""), gen_dir, version, tag, commit, workers))
    leaked = conn.execute("SELECT count(*) FROM files WHERE path LIKE '/%'").fetchone()[0]
    if leaked:
        store.close()
        raise AtenmapError(f"{leaked} file paths are still absolute (outside the codegen dir {gen_dir}); not bundling them")
    conn.execute("VACUUM")
    store.close()
    return dict(sorted(kept.items())), dict(sorted(dropped.items()))


def _device_library_calls(src: sqlite3.Connection, root: str) -> set[int]:
    """The ids of the library calls that are device code of a kernel (Note [Library calls in device
    code] in atenmap/resolve/devicecode.py): the chain reads that from the tree's text, which the
    bundle does not quote, so the bundle leaves those calls out."""
    from atenmap.resolve.devicecode import call_in_device_code
    from atenmap.resolve.libraries import library_of
    out: set[int] = set()
    calls = src.execute("SELECT f.id, p.path, f.line, f.qual FROM facts f JOIN files p ON p.id = f.file "
                        "WHERE f.kind = 'call' AND (p.path LIKE '%.cu' OR p.path LIKE '%.cuh') ORDER BY f.id")
    lines: dict[str, list[bytes] | None] = {}
    for fid, path, line, qual in calls:
        if library_of(qual) is None:
            continue
        if path not in lines:
            try:
                lines[path] = Path(path if os.path.isabs(path) else os.path.join(root, path)).read_bytes().split(b"\n")
            except OSError:
                lines[path] = None
        # Store.function_spans' functions, as the chain reads them
        first = src.execute("SELECT max(f.line) FROM facts f JOIN files p ON p.id = f.file WHERE p.path = ? AND "
                            "f.kind IN ('function', 'impl_func', 'meta_func') AND f.line <= ? AND f.end_line >= ?",
                            (path, line, line)).fetchone()[0]
        if first and call_in_device_code(lines[path], first, line):
            out.add(fid)
    return out


def _quotes(src: sqlite3.Connection, root: str, sites: list[tuple[int, int, str, str]], rename: Callable[[str], str]):
    """The quoted_* rows: see Note [What the bundle quotes] in atenmap/source/bundle.py. ``sites``:
    (file id, line, kind, name) of the kept calls and launches. Read from the tree at ``root`` (and
    torchgen's output), in path order, so the rows are deterministic."""
    from concurrent.futures import ProcessPoolExecutor

    from atenmap.extract.derivatives_yaml import DERIVATIVES_REL, load_derivatives
    from atenmap.extract import pyfuncs
    from atenmap.extract.parse import language_of
    from atenmap.resolve import backward, callbacks, mpsgraph, passed, selectors, strided, why
    from atenmap.store import Store

    if not root or not Path(root, DERIVATIVES_REL).is_file():
        raise AtenmapError(f"the index's tree {root!r} is not readable: the bundle quotes its files (--why, --backward)")
    paths = dict(src.execute("SELECT id, path FROM files"))
    per_file: dict[str, set[tuple[int, str]]] = {}
    for fid, line, kind, name in sites:
        per_file.setdefault(paths[fid], set()).add((line, why.site_name(kind, name)))
    branches = []
    files = [p for p in sorted(per_file, key=rename) if language_of(p)]
    jobs = [(p, p if p.startswith("/") else str(Path(root, p)), per_file[p]) for p in files]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # tree-sitter parses: ~50 s of CPU
        for path, (found, kept) in zip(files, pool.map(why.quote_file, jobs, chunksize=8)):
            if kept:
                branches.append((rename(path), json.dumps(found, separators=(",", ":")),
                                 json.dumps(kept, separators=(",", ":"))))
    lines, text_ops = [], []
    full = Store(src, Path(root))
    for path in sorted((p for p in paths.values() if p.startswith("/") and backward.AUTOGRAD_FILES.search(p)), key=rename):
        for n, text in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if backward.quoted_line(path, text):
                lines.append((rename(path), n, text))
    lines += [(rename(path), n, text) for path, n, text in passed.quoted_rows(full, root)]  # Note [Functions passed by name]
    quoted = {(path, n) for path, n, _text in lines}
    lines += [(rename(path), n, text) for path, n, text in strided.quoted_rows(full, root)  # Note [Views that copy]
              if (rename(path), n) not in quoted]
    quoted = {(path, n) for path, n, _text in lines}
    lines += [(rename(path), n, text) for path, n, text in callbacks.quoted_rows(full, root)  # Note [Kernels passed to a callback]
              if (rename(path), n) not in quoted]
    quoted = {(path, n) for path, n, _text in lines}
    lines += [(rename(path), n, text) for path, n, text in selectors.quoted_rows(full, root)  # Note [A branch on a selector's value]
              if (rename(path), n) not in quoted]
    quoted = {(path, n) for path, n, _text in lines}
    mps_lines, bodies = mpsgraph.quoted_rows(full, root)  # Note [MPS lines from the bundle]
    lines += [(rename(path), n, text) for path, n, text in mps_lines if (rename(path), n) not in quoted]
    bodies = [(rename(path), first, last, end) for path, first, last, end in bodies]
    for path in sorted(p for p in paths.values() if "/autograd/FunctionsManual" in p):
        file_lines = Path(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
        for fn in full.in_file(path, ("function",)):
            text_ops += [(path, fn.line, s.line, s.call.base, s.written, s.args or "")
                         for s in backward.text_ops(file_lines, fn)]
    entries = load_derivatives(Path(root, DERIVATIVES_REL), Path(root))
    derivatives = [(e.op, json.dumps(e.to_dict(), sort_keys=True)) for e in entries]
    python = [(surface, name, json.dumps(fn.to_dict(), sort_keys=True))
              for surface, (file, _prefix, _cls) in sorted(pyfuncs.MODULES.items()) if Path(root, file).is_file()
              for name, fn in sorted(pyfuncs.read_module(Path(root, file).read_text(encoding="utf-8"), surface).items())]
    return branches, lines, text_ops, derivatives, python, bodies


# Note [Ranking the runs at build time]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Note [The runs the bundle keeps] (resolve/runs.py): each operator's runs are ranked on the
# bundle's own chains -- the slim index just written, opened as a bundled answer opens it (its
# quotes, no tree: the chains equal a tree's, tests/test_bundle_realtree.py) -- with the tree's
# files to read: a folder of links, the tree's top-level entries plus ``<torchgen>`` for torchgen's
# output, so that the bundle's paths (``<torchgen>/aten/...``) name the files the tree's index read.
# Every operator, in name order; for each, the chain of the keys a default answer shows
# (devices.common_keys: CPU, CUDA and the composite key serving them) plus CPU and CUDA where a
# composite kernel serves them (a composite-only answer's runs are CUDA's), on the cuda platform,
# without and with --why's reasons (the same runs in the same order: Note [--why does not rank];
# only "when" differs). Workers share nothing but the read-only index; each operator's rows depend
# on it alone, so the rows, sorted by (operator, key, platform), are the same whatever the worker
# count. Cost (docs/performance.md, issue 33): ~10 min of CPU for PyTorch 2.6.0, +0.27 MB of xz.
KEPT_PLATFORMS = ("cuda",)  # --platform rocm: ranked by #if alone (as much CPU again: not kept)
_VIRTUAL_KEYS = ("CPU", "CUDA")  # the keys a composite serves that a bundled answer asks for (default and --key)
_RANKER: dict = {}


def _ranked_runs(slim: sqlite3.Connection, root: str, gen_dir: str, version: str, tag: str | None,
                 commit: str | None, workers: int | None = None) -> list[tuple[str, str, str, str]]:
    """quoted_runs' rows: Note [Ranking the runs at build time]."""
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    from atenmap.store import Store

    with tempfile.TemporaryDirectory(prefix="atenmap-runs-") as work:
        index = Path(work, "index.sqlite")
        dest = sqlite3.connect(index)
        slim.backup(dest)
        dest.close()
        store = Store.open(index, writable=True)
        store.index_quotes()
        store.finish()
        ops = sorted(n for (n,) in store.conn.execute("SELECT name FROM operators"))
        store.close()
        farm = Path(work, "tree")
        farm.mkdir()
        for entry in sorted(os.listdir(root)):
            os.symlink(Path(root, entry), farm / entry)
        os.symlink(gen_dir, farm / GENERATED_PREFIX)
        src = f"https://github.com/pytorch/pytorch/tree/{commit or tag}" if commit or tag else f"bundled {version}"
        rows: list[tuple[str, str, str, str]] = []
        n = workers or os.cpu_count() or 1
        if n == 1:
            _open_ranker(str(index), str(farm), src, version, commit)
            rows = [row for op in ops for row in _rank(op)]
        else:
            with ProcessPoolExecutor(max_workers=n, initializer=_open_ranker,
                                     initargs=(str(index), str(farm), src, version, commit)) as pool:
                for got in pool.map(_rank, ops, chunksize=16):
                    rows += got
    return sorted(rows)


def _open_ranker(index: str, farm: str, root: str, version: str, commit: str | None) -> None:
    from atenmap.api import Index
    from atenmap.model import SourceInfo
    from atenmap.store import Store

    _RANKER.clear()
    _RANKER.update(ix=Index(SourceInfo(root, version, commit, "bundled"), Store.open(Path(index))), farm=farm)


def _rank(name: str) -> list[tuple[str, str, str, str]]:
    """One operator's quoted_runs rows (Note [Ranking the runs at build time])."""
    from dataclasses import replace

    from atenmap import devices
    from atenmap.kinds import KeyGroup
    from atenmap.resolve.runs import kept_row, runs as what_runs
    from atenmap.resolve.why import explain

    ix, farm = _RANKER["ix"], _RANKER["farm"]
    op = ix._get(name)
    keys = devices.common_keys(ix.operator_keys(op))
    if any(k in KeyGroup.COMPOSITE for k in keys):
        keys = keys + [k for k in _VIRTUAL_KEYS if k not in keys]
    out = []
    for platform in KEPT_PLATFORMS:
        chain = ix.chain(op, keys=keys, runs=False, platform=platform)
        chain = replace(chain, keys=tuple(kc for kc in chain.keys if kc.key in keys))
        plain = what_runs(chain, farm, ix.store.function_spans, None, platform, ix._strided_views(), ix._definitions)
        shown = what_runs(explain(chain, farm, ix.store), farm, ix.store.function_spans, None, platform,
                          ix._strided_views(), ix._definitions)
        if [(r.key, r.name, r.loc) for r in plain] != [(r.key, r.name, r.loc) for r in shown]:
            raise AtenmapError(f"{name}: --why changes its runs, not only their conditions (Note [--why does not rank])")
        for kc in chain.keys:
            kept = [kept_row(a, b) for a, b in zip(plain, shown) if a.key == kc.key]
            out.append((name, kc.key, platform, json.dumps(kept, separators=(",", ":"), ensure_ascii=False)))
    return out


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()



# ---- scripts/build-bundle -----------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``python scripts/build_bundle.py --tree PATH --version 2.6.0 [--tag v2.6.0] [--out DIR]``: index
    the tree (with torchgen's output; reused from the cache when fresh) and write the bundle."""
    import argparse

    from atenmap.api import Index
    from atenmap.source.find import describe

    p = argparse.ArgumentParser(prog="build-bundle", description=main.__doc__)
    p.add_argument("--tree", required=True, help="PyTorch source tree (scripts/fetch-pytorch-src 2.6.0)")
    p.add_argument("--version", required=True, help="release, e.g. 2.6.0")
    p.add_argument("--tag", help="git tag the tree matches (default: vVERSION)")
    p.add_argument("--commit", help="git commit the tree matches, when known")
    p.add_argument("--source-note", default="", help="where the tree came from (kept in the manifest)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "src" / "atenmap" / "data"), help="output folder (package data)")
    p.add_argument("--no-compress", action="store_true", help="write only the uncompressed .sqlite")
    a = p.parse_args(argv)

    def say(msg: str) -> None:
        print(f"build-bundle: {msg}", flush=True)

    t0 = time.perf_counter()
    info = describe(Path(a.tree), "option")
    with Index.open(info, status=say, compile_facts=True) as ix:  # the bundle keeps them
        path = ix.store.path
    t_index = time.perf_counter() - t0
    rep = build(path, Path(a.out), version=a.version, tag=a.tag or f"v{a.version}", commit=a.commit,
                source_note=a.source_note, compress=not a.no_compress, status=say)
    m = rep.manifest
    say(f"index (build or reuse) {t_index:.1f} s, bundle {rep.seconds:.1f} s")
    say(f"{rep.sqlite}: {m['sqlite_size'] / 1e6:.1f} MB, sha256 {m['sqlite_sha256']}")
    if rep.xz:
        say(f"{rep.xz}: {m['xz_size'] / 1e6:.2f} MB, sha256 {m['xz_sha256']}")
        rep.sqlite.unlink()
    say("kept: " + ", ".join(f"{k} {v}" for k, v in rep.kept.items()))
    say("dropped: " + ", ".join(f"{k} {v}" for k, v in rep.dropped.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
