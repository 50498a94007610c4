"""What the cache holds and what ``atenmap sources --prune`` removes (``cache_report``, ``prune``):
fetched trees (fetch.py), indexes, codegen outputs, facts, the bundle (bundle.py). Above fetch.py and
bundle.py, which it reads; neither imports it."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Callable

from atenmap.store import factcache
from atenmap.locks import BUILDS_LOCK, exclusive_now
from atenmap.source import bundle, fetch
from atenmap.source.paths import cache_dir, is_pytorch_tree


def _size(path: Path) -> int:
    if path.is_symlink():  # never followed (Note [Builds and prune]'s prune leaves it too)
        return 0
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def cache_report(current_facts: Path | None = None) -> dict:
    """What the cache holds: fetched trees, indexes, codegen outputs, the bundle (with sizes).
    Entries marked ``stale`` are what ``prune`` removes. ``current_facts``: this atenmap's fact
    folder (``build.fact_cache()``), never stale; without it, the last used one is kept."""
    from atenmap.store import INDEX_NAME, read_meta

    cache = cache_dir()
    torch = fetch.installed_torch()
    matching = fetch.pick_fetched() if torch is not None else None
    trees = []
    for t in fetch.fetched_trees():
        m = fetch.read_marker(t)
        trees.append({"path": str(t), "version": m.get("version") or "?", "tag": m.get("tag"), "commit": m.get("commit"),
                      "origin": m.get("origin"), "from": m.get("from"), "size": _size(t),
                      "matches_torch": matching == t and torch is not None
                      and t.name in (fetch.tree_name(torch.version, torch.commit), fetch.tree_name(torch.version))})
    indexes = []
    used_codegen: set[str] = set()
    for d in sorted((cache / "indexes").glob("*")) if (cache / "indexes").is_dir() else []:
        if not d.is_dir():
            continue
        meta = read_meta(d / INDEX_NAME) if (d / INDEX_NAME).exists() else None
        root = (meta or {}).get("source_root")
        stale = meta is None or not root or not is_pytorch_tree(Path(root))
        if not stale and meta.get("codegen_dir"):
            used_codegen.add(os.path.realpath(meta["codegen_dir"]))
        indexes.append({"path": str(d), "source_root": root, "version": (meta or {}).get("pytorch_version"),
                        "size": _size(d), "stale": stale,
                        "why": None if not stale else ("no complete index" if meta is None else "tree no longer exists")})
    codegen = []
    # codegen-* at the cache root: torchgen output an older test suite wrote there (never used by
    # an index, whose codegen lives in <cache>/codegen), listed so that --prune removes it.
    stray = sorted(cache.glob("codegen-*")) if cache.is_dir() else []
    for d in [*(sorted((cache / "codegen").glob("codegen-*")) if (cache / "codegen").is_dir() else []), *stray]:
        if not d.is_dir():
            continue
        try:
            done = json.loads((d / "DONE").read_text())
        except (OSError, ValueError):
            done = None
        root = (done or {}).get("root")
        used = os.path.realpath(d) in used_codegen
        why = None
        if done is None:
            why = "incomplete"
        elif not used and (not root or not is_pytorch_tree(Path(root))):
            why = "tree no longer exists"
        elif not used:
            why = "no index uses it"
        codegen.append({"path": str(d), "source_root": root, "size": _size(d), "used": used,
                        "stale": why is not None and not d.name.startswith("."), "why": why})
    facts = []  # Note [Facts by content]: the last used version key is the current one
    key_files = factcache.stores(cache / "facts")
    newest = current_facts if current_facts is not None else max(
        (f for f in key_files if not f.is_dir()), key=factcache.last_used, default=None)
    for d in key_files:
        mine = newest is not None and d.resolve() == Path(newest).resolve()
        facts.append({"path": str(d), "size": factcache.size(d), "stale": not mine,
                      "why": None if mine else "facts of another atenmap version (or extractor)"})
    man = bundle.manifest()
    bundles = []
    if man is not None:
        current = bundle.install_dir(man)
        bundles.append({"version": man["version"], "tag": man.get("tag"), "shipped_size": man.get("xz_size"),
                        "installed": str(current) if (current / INDEX_NAME).exists() else None,
                        "size": _size(current) if current.exists() else 0, "stale": False})
        for d in sorted((cache / "bundle").glob("*")) if (cache / "bundle").is_dir() else []:
            if d.is_dir() and d != current:
                bundles.append({"version": None, "installed": str(d), "size": _size(d), "stale": True,
                                "why": "another atenmap's bundle"})
    downloads = []
    dl = fetch.sources_dir() / ".downloads"
    for f in sorted(dl.glob("*")) if dl.is_dir() else []:
        downloads.append({"path": str(f), "size": _size(f), "partial": f.name.endswith(".part")})
    return {"cache": str(cache), "torch": None if torch is None else {"version": torch.raw, "commit": torch.commit},
            "trees": trees, "indexes": indexes, "codegen": codegen, "facts": facts, "bundle": bundles,
            "downloads": downloads}


def prune(current_facts: Path | None = None,
          say: Callable[[str], None] | None = None) -> tuple[dict, list[tuple[str, int]]]:
    """Remove what ``cache_report(current_facts)`` marks stale (indexes of trees that no longer
    exist, codegen outputs no index uses, other atenmaps' facts and bundles); returns the report
    and the ``(path, bytes)`` removed. An index or codegen folder that a running build holds
    locked is left alone; while any build runs, every codegen output and facts folder is (Note [Builds and prune]
    in locks.py), and ``say`` gets a line saying so. A symlink in the cache is never followed nor
    removed."""
    base = cache_dir()
    base.mkdir(parents=True, exist_ok=True)
    with exclusive_now(base / BUILDS_LOCK) as no_build:
        report = cache_report(current_facts)  # under the lock: no build can make a codegen output used now
        removed = []
        for section, lock_name in (("indexes", "lock"), ("codegen", None), ("facts", None), ("bundle", "lock")):
            for e in report[section]:
                if not e.get("stale"):
                    continue
                path = Path(e.get("path") or e.get("installed"))
                if path.is_symlink() or (lock_name and not _free(path / lock_name)):
                    continue
                if section in ("codegen", "facts") and not no_build:
                    continue  # what a running build may be making and not naming yet
                if section == "codegen" and not _free(path.parent / ".codegen.lock"):
                    continue
                if section == "facts":
                    factcache.remove(path)  # a version key's file (with its -wal), or an old folder
                else:
                    shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    removed.append((str(path), e.get("size", 0)))
        if not no_build and say is not None and any(e.get("stale") for e in report["codegen"] + report["facts"]):
            say("codegen outputs and facts kept: an index build is running (run --prune again when it is done)")
    return report, removed


def _free(lock: Path) -> bool:
    """True when nobody holds ``lock`` (an flock file); a missing lock file is free."""
    if not lock.exists():
        return True
    try:
        with open(lock, "a+") as h:
            fcntl.flock(h, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(h, fcntl.LOCK_UN)
        return True
    except (BlockingIOError, OSError):
        return False
