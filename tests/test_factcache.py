"""Facts by content (factcache.py, Note [Facts by content]): a second tree with the same bytes is
read from the fact cache, not parsed; a changed file, a damaged entry or another extractor's
entry is a miss; the setting turns it off."""
from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from atenmap import build, config
from atenmap.store import factcache
from atenmap.source.find import cache_dir, describe
from tests.conftest import FIXTURE_TREE

# ``scope`` is a fact id, which depends on the order files were added (the pool's): compared as
# the enclosing fact's name and line instead.
FACT_COLUMNS = ("f.path, x.kind, x.name, x.qual, x.line, x.end_line, x.namespace, s.name, s.line, x.arg, x.detail, "
                "x.via_macro, x.cond, x.targs")
MUL = "aten/src/ATen/native/cuda/BinaryMulKernel.cu"


def _facts(src) -> list[tuple]:
    conn = sqlite3.connect(build.index_path(src))
    try:
        return conn.execute(f"SELECT {FACT_COLUMNS} FROM facts x JOIN files f ON f.id = x.file "
                            "LEFT JOIN facts s ON s.id = x.scope ORDER BY f.path, x.id").fetchall()
    finally:
        conn.close()


def _entries(cache: factcache.FactCache) -> dict[str, tuple[int, tuple]]:
    """Each entry's key -> (used, (has_error, n, its rows in order)): a rewritten entry gets a new ``used``."""
    conn = sqlite3.connect(cache.path)
    try:
        rows: dict[bytes, list] = {}
        for row in conn.execute("SELECT e.key, r.* FROM rows r JOIN entries e ON e.id = r.entry ORDER BY r.entry, r.seq"):
            rows.setdefault(row[0], []).append(row[2:])
        return {k.hex(): (u, (e, n, tuple(rows.get(k, ())))) for k, u, e, n in
                conn.execute("SELECT key, used, has_error, n FROM entries")}
    finally:
        conn.close()


def _set(cache: factcache.FactCache, key: str, **values) -> None:
    """Change an entry's columns behind the cache's back (damage, age)."""
    conn = sqlite3.connect(cache.path)
    try:
        for col, v in values.items():
            conn.execute(f"UPDATE entries SET {col} = ? WHERE key = ?", (v, bytes.fromhex(key)))
        conn.commit()
    finally:
        conn.close()


def _drop_rows(cache: factcache.FactCache, key: str, keep: int) -> None:
    """Remove an entry's rows after the first ``keep`` behind the cache's back (damage)."""
    conn = sqlite3.connect(cache.path)
    try:
        conn.execute("DELETE FROM rows WHERE entry = (SELECT id FROM entries WHERE key = ?) AND seq >= ?",
                     (bytes.fromhex(key), keep))
        conn.commit()
    finally:
        conn.close()


def _no_copy_from(src) -> None:
    """``src``'s index records no content, so the next build of a tree of the same content reads
    the fact cache instead of copying that index (Note [An index of the same content])."""
    conn = sqlite3.connect(build.index_path(src))
    try:
        conn.execute("UPDATE meta SET value = '' WHERE key IN ('content_set', 'content_sizes')")
        conn.commit()
    finally:
        conn.close()


def _key_of(tree, rel: str, lang: str = "cuda") -> str:
    return factcache.content_key((tree / rel).read_bytes(), lang, False, None)


@pytest.fixture
def two_trees(tmp_path):
    """Two copies of the fixture tree at different paths: two indexes, one content."""
    a, b = tmp_path / "a" / "pytorch-mini", tmp_path / "b" / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, a)
    shutil.copytree(FIXTURE_TREE, b)
    return describe(a, "option"), describe(b, "option")


def test_a_second_tree_of_the_same_content_is_read_not_parsed(two_trees):
    a, b = two_trees
    first = build.build(a, jobs=1)  # with the fixture's torchgen: generated files are cached too
    cache = build.fact_cache()
    written = _entries(cache)
    assert cache.folder == cache_dir() / "facts" and cache.path.suffix == ".sqlite"
    assert [p.name for p in cache.folder.iterdir() if not p.name.endswith(("-wal", "-shm"))] == [cache.path.name]
    assert len(written) == first.parsed - sum(first.skipped.values()) > 40
    second = build.build(b, jobs=2)  # > 32 files: the process pool reads the cache
    assert second.parsed == first.parsed and second.rebuilt
    assert _entries(cache) == written  # all hits: not one entry written again
    assert [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]
    assert [r[0] for r in _facts(b)] == [r[0] for r in _facts(a)]


def test_a_hit_gives_the_stored_rows(mini_tree):
    """The cache is trusted as the index is (Note [Facts by content]): what an entry holds is
    what the index gets, which shows that a hit is not parsed again."""
    src = describe(mini_tree, "option")
    cache = build.fact_cache()
    row = ("function", "from_the_cache", "at::native::from_the_cache", 3, 4, "at::native", -1, "", "", "", "", "")
    assert cache.put(_key_of(mini_tree, MUL), False, [row])
    build.build(src, jobs=1, codegen=False)
    assert [r for r in _facts(src) if r[0] == MUL] == [(MUL, *row[:6], None, None, *row[7:])]


def test_a_changed_file_misses_and_only_it(two_trees):
    a, b = two_trees
    build.build(a, jobs=1, codegen=False)
    cache = build.fact_cache()
    before = _entries(cache)
    kernel = Path(b.root) / MUL
    kernel.write_text(kernel.read_text().replace("mul_kernel_cuda", "mul_kernel_cuda2"))
    build.build(b, jobs=1, codegen=False)
    after = _entries(cache)
    assert set(after) - set(before) == {_key_of(Path(b.root), MUL)}
    assert {k: v for k, v in after.items() if k in before} == before
    names = {r[2] for r in _facts(b) if r[0] == MUL and r[1] == "function"}
    assert "mul_kernel_cuda2" in names and "mul_kernel_cuda" not in names


def test_damaged_entries_are_misses_and_are_rewritten(two_trees):
    a, b = two_trees
    build.build(a, jobs=1, codegen=False)
    _no_copy_from(a)
    cache = build.fact_cache()
    rels = [MUL, "aten/src/ATen/native/BinaryOps.cpp", "aten/src/ATen/native/cpu/BinaryOpsKernel.cpp",
            "aten/src/ATen/native/cuda/Blas.cpp"]
    keys = [_key_of(Path(a.root), rel, "cuda" if rel.endswith(".cu") else "cpp") for rel in rels]
    good = [_entries(cache)[k][1] for k in keys]
    _drop_rows(cache, keys[0], good[0][1] // 2)  # truncated
    _set(cache, keys[1], n=good[1][1] + 1)  # one row missing
    _drop_rows(cache, keys[2], 0)  # no rows at all
    _set(cache, keys[3], n="x")  # not a count
    for k in keys:
        assert cache.get(k) is None
    build.build(b, jobs=1, codegen=False)
    assert _facts(b) != [] and [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]
    assert [_entries(cache)[k][1] for k in keys] == good  # parsed again and rewritten
    assert all(cache.get(k) is not None for k in keys)


def test_a_file_that_is_not_a_database_is_replaced(two_trees):
    a, b = two_trees
    build.build(a, jobs=1, codegen=False)
    _no_copy_from(a)
    cache = build.fact_cache()
    cache.close()
    for p in cache.folder.iterdir():
        p.unlink()
    cache.path.write_bytes(b"not a database" * 100)
    assert cache.get(_key_of(Path(a.root), MUL)) is None
    report = build.build(b, jobs=1, codegen=False)
    assert report.parsed > 40 and [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]
    assert cache.get(_key_of(Path(a.root), MUL)) is not None


def test_the_parse_is_written_in_one_transaction(two_trees, monkeypatch):
    """One write per build (Note [Facts by content]), whatever the number of files parsed."""
    writes = []
    real = factcache.FactCache._write
    monkeypatch.setattr(factcache.FactCache, "_write",
                        lambda self, e, t, i=None, p=(): writes.append(len(e) + len(p)) or real(self, e, t, i, p))
    report = build.build(two_trees[0], jobs=2, codegen=False)
    assert writes == [report.parsed - sum(report.skipped.values())]


def test_old_layout_folders_are_pruned_by_a_build(mini_tree):
    """FORMAT 1 kept one file per entry under facts/<key>/: never read, removed as another key's."""
    old = cache_dir() / "facts" / "0123456789abcdef"
    (old / "ab").mkdir(parents=True)
    (old / "ab" / ("cd" * 19)).write_bytes(b"atenmap-facts\x001\n")
    ago = time.time() - factcache.PRUNE_AFTER - 60
    os.utime(old, (ago, ago))
    build.build(describe(mini_tree, "option"), jobs=1, codegen=False)
    assert not old.exists()


def test_entries_of_another_version_key_are_never_read_and_are_pruned(mini_tree):
    src = describe(mini_tree, "option")
    current = build.fact_cache()
    old = factcache.FactCache(current.folder / "0123456789abcdef.sqlite")
    recent = factcache.FactCache(current.folder / "fedcba9876543210.sqlite")
    poison = [("function", "stale_extractor", "", 1, 1, "", -1, "", "", "", "", "")]
    for other in (old, recent):
        assert other.put(_key_of(mini_tree, MUL), False, poison)
        other.claim()
        other.close()
    ago = time.time() - factcache.PRUNE_AFTER - 60
    os.utime(old.path, (ago, ago))
    build.build(src, jobs=1, codegen=False)
    assert "stale_extractor" not in {r[2] for r in _facts(src)}
    assert current.get(_key_of(mini_tree, MUL)) is not None
    assert not old.path.exists()  # unused for longer than PRUNE_AFTER: removed by the build
    assert recent.path.is_file()  # another atenmap's build may be using it now: kept
    assert factcache.version_key("x", {}, "5", "1") != factcache.version_key("y", {}, "5", "1")


def test_the_key_holds_language_and_flags():
    data = b"void f() { g(); }\n"
    keys = {factcache.content_key(data, "cpp", False, None), factcache.content_key(data, "cuda", False, None),
            factcache.content_key(data, "cpp", True, None),
            factcache.content_key(data, "cpp", False, frozenset({"function"})),
            factcache.content_key(data + b" ", "cpp", False, None)}
    assert len(keys) == 5


def test_skipped_files_are_not_cached(mini_tree):
    (mini_tree / "aten/src/ATen/native/Latin1.cpp").write_bytes(b"// caf\xe9\nvoid f() {}\n")
    report = build.build(describe(mini_tree, "option"), jobs=1, codegen=False)
    assert report.skipped == {"not-utf8": 1}
    assert len(_entries(build.fact_cache())) == report.parsed - 1


def test_the_setting_turns_it_off(mini_tree, tmp_path, monkeypatch):
    src = describe(mini_tree, "option")
    monkeypatch.setenv("ATENMAP_FACT_CACHE", "0")
    assert build.fact_cache() is None
    report = build.build(src, jobs=1, codegen=False)
    assert report.parsed > 40 and report.facts["function"] > 0
    assert not (cache_dir() / "facts").exists()

    monkeypatch.delenv("ATENMAP_FACT_CACHE")
    cfg = tmp_path / "config.toml"
    monkeypatch.setenv("ATENMAP_CONFIG", str(cfg))
    cfg.write_text("fact_cache = false\n")
    assert config.fact_cache() is False
    cfg.write_text("fact_cache = true\n")
    assert config.fact_cache() is True
    monkeypatch.setenv("ATENMAP_FACT_CACHE", "maybe")
    with pytest.raises(config.ConfigError, match="ATENMAP_FACT_CACHE='maybe': expected true or false"):
        build.build(src, jobs=1, codegen=False, force=True)


def test_sources_lists_the_facts_and_prune_keeps_the_last_used_key():
    from atenmap.source.cache import cache_report, prune

    base = cache_dir() / "facts"
    old, new = factcache.FactCache(base / "0000000000000000.sqlite"), factcache.FactCache(base / "1111111111111111.sqlite")
    legacy = base / "2222222222222222"  # FORMAT 1's folder
    legacy.mkdir(parents=True)
    for c in (old, new):
        assert c.put("ab" * 20, False, [])
        c.claim()
        c.close()
    ago = time.time() - 3600
    os.utime(old.path, (ago, ago))
    report = cache_report()
    assert [(f["path"], f["stale"]) for f in report["facts"]] == [
        (str(old.path), True), (str(new.path), False), (str(legacy), True)]
    assert all(f["size"] > 0 for f in report["facts"][:2])
    assert [p for p, _ in prune()[1]] == [str(old.path), str(legacy)]
    assert not old.path.exists() and not legacy.exists() and new.get("ab" * 20) == (False, [])


def test_old_entries_are_swept_and_a_hit_keeps_an_entry(tmp_path):
    """Within one key: an entry nothing read or wrote for ENTRY_MAX_AGE is removed by the daily
    sweep in claim(); a hit on an entry older than a day is marked used by the next flush."""
    cache = factcache.FactCache(tmp_path / "facts" / "key.sqlite")
    now = time.time()
    keys = {name: factcache.content_key(name.encode(), "cpp", False, None) for name in ("stale", "read", "new")}
    for k in keys.values():
        assert cache.put(k, False, [("function", "f", "f", 1, 1, "", -1, "", "", "", "", "")])
    month = int(now - factcache.ENTRY_MAX_AGE - 86400)
    _set(cache, keys["stale"], used=month)
    _set(cache, keys["read"], used=month)
    value, old = cache.lookup(keys["read"])
    assert value is not None and old  # a hit on an old entry: the build stages it as used
    cache.stage(keys["read"], None)
    assert cache.flush()
    assert _entries(cache)[keys["read"]][0] > now - 60
    cache.claim()
    assert set(_entries(cache)) == {keys["read"], keys["new"]}
    _set(cache, keys["new"], used=month)
    cache.claim()  # swept once a day only
    assert keys["new"] in _entries(cache)


def test_the_row_code_is_part_of_the_version_key(monkeypatch):
    """build.py turns facts into rows (_parse_one, keep_kinds): a change to it is a new key."""
    before = build._fact_key()
    build._fact_key.cache_clear()
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: real(p) + (b"#" if p.name == "build.py" else b""))
    try:
        assert build._fact_key() != before
    finally:
        build._fact_key.cache_clear()


def test_two_builds_at_once_share_the_file(two_trees):
    """Two builds of two trees of the same content, started together: both complete with the
    same facts, and the one file holds every entry once (WAL readers, one writer at a time)."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-m", "atenmap", "index", "--source", t.root, "--no-codegen",
                               "--jobs", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for t in two_trees]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    a, b = two_trees
    assert [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]
    keys = set(_entries(build.fact_cache()))
    assert _key_of(Path(a.root), MUL) in keys and len(keys) > 40


def test_compile_facts_by_content(two_trees):
    """Note [Compile facts by content]: a second tree with the same torch.compile inputs gets their
    rows from the fact cache (what the entry holds is what the index gets) with its own stamp; an
    edit of an input is a new key, read from the tree."""
    from tests.test_compile import _tree

    a, b = (_tree(Path(t.root)) for t in two_trees)
    sa, sb = two_trees
    build.build(sa, codegen=False, compile_facts=True)
    _no_copy_from(sa)
    cache = build.fact_cache()
    key = build.compile_key(a)
    assert key and key == build.compile_key(b)
    made = cache.compile_rows(key)
    assert made and made == [tuple(r) for r in _compile(sa)]
    marked = [(*made[0][:3], "from_the_cache", *made[0][4:])]
    assert cache.put_compile(key, marked)
    build.build(sb, codegen=False, compile_facts=True)
    assert _compile(sb) == marked
    refs = b / "torch/_refs/__init__.py"
    refs.write_text(refs.read_text() + "\n# edited\n")
    assert build.compile_key(b) != key
    build.build(sb, codegen=False, compile_facts=True)
    assert _compile(sb) == made


def _compile(src) -> list[tuple]:
    conn = sqlite3.connect(build.index_path(src))
    try:
        return conn.execute("SELECT op, overload, role, symbol, file, line, via, registry, cond, seq FROM compile "
                            "ORDER BY rowid").fetchall()
    finally:
        conn.close()


def test_damaged_pages_of_the_cache_are_parsed_again_and_the_file_replaced(two_trees):
    """A cache whose header reads but whose row pages do not (sqlite3.DatabaseError inside the
    block copy): every file is still indexed as parsed, and the damaged file is replaced."""
    a, b = two_trees
    build.build(a, jobs=1, codegen=False)
    _no_copy_from(a)
    cache = build.fact_cache()
    cache.close()
    conn = sqlite3.connect(cache.path)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'rows' AND pagetype = 'leaf'")]
    conn.close()
    assert leaves  # the rows table's pages only: the entries still read, so the build copies
    data = bytearray(cache.path.read_bytes())
    for n in leaves:
        data[(n - 1) * page:n * page] = b"\xab" * page
    cache.path.write_bytes(bytes(data))
    build.build(b, jobs=1, codegen=False)
    assert [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]
    build.build(b, jobs=1, codegen=False, force=True)  # the next build finds a sound file again
    assert [r[1:] for r in _facts(b)] == [r[1:] for r in _facts(a)]


def test_an_entry_id_of_another_key_is_not_copied(two_trees, tmp_path):
    """Note [A known file copied as a block]: ids are reused once the highest entry is rewritten, so
    the copy checks that the entry is still the key's (another build may have rewritten the cache)."""
    from atenmap.store import Store
    a, _ = two_trees
    build.build(a, jobs=1, codegen=False)
    cache = build.fact_cache()
    cache.close()
    conn = sqlite3.connect(cache.path)
    (one, n, key), (other, _n, other_key) = conn.execute("SELECT id, n, hex(key) FROM entries WHERE n > 0 LIMIT 2")
    conn.close()
    store = Store.create(tmp_path / "index.sqlite")
    store.attach_facts(cache.path)
    store.begin()
    assert store.add_cached_file("x.cpp", "cpp", 1, 1, "ok", False, one, n, key=other_key.lower()) is None
    assert store.add_cached_file("x.cpp", "cpp", 1, 1, "ok", False, one, n, key=key.lower()) is not None
    store.commit()
    store.detach_facts()
    store.close()


def _operators(src) -> list[tuple]:
    conn = sqlite3.connect(build.index_path(src))
    try:
        return conn.execute("SELECT * FROM operators ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("jobs", [1, 2])  # read in the parent, in a worker
def test_yaml_rows_by_content(two_trees, jobs):
    """Note [native_functions.yaml by content]: a second tree with the same yaml gets its rows from
    the fact cache (what the entry holds is what the index gets); an edit of the yaml is a new key."""
    sa, sb = two_trees
    build.build(sa, jobs=jobs, codegen=False)
    _no_copy_from(sa)
    cache = build.fact_cache()
    key = build.yaml_key(Path(sa.root))
    assert key and key == build.yaml_key(Path(sb.root))
    rows, disp = cache.yaml_rows(key)
    assert rows == _operators(sa) and disp
    marked = [(*rows[0][:2], 999999, *rows[0][3:]), *rows[1:]]
    assert cache.put_yaml(key, marked, disp)
    build.build(sb, jobs=jobs, codegen=False)
    assert _operators(sb) == marked
    yaml = Path(sb.root) / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n# edited\n")
    assert build.yaml_key(Path(sb.root)) != key
    build.build(sb, jobs=jobs, codegen=False, force=True)  # (a refresh that parses no file reads it only)
    assert _operators(sb) == rows
    assert cache.yaml_rows(build.yaml_key(Path(sb.root))) == (rows, disp)  # written by that build
