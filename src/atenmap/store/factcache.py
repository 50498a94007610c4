"""Facts by content: the fact rows of each source file, kept under the hash of its bytes.

``<cache>/facts/<version key>.sqlite``, one SQLite file per version key, one row per content; see
Note [Facts by content]. build._parse_one asks it before parsing; the build writes what was
parsed in one transaction at its end (``stage`` + ``flush``); nothing else reads it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

# Note [Facts by content]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The rows build._parse_one makes for a file are a pure function of its bytes, its language, the
# bindings flag (generated python_*.cpp files), the kind filter of generated autograd files
# (build._AUTOGRAD_KINDS), and the code that reads them: the extractor (build.extractor_hash),
# build.py itself (which turns facts into rows: _parse_one, keep_kinds), the grammar packages, the row shape (store.SCHEMA_VERSION, FORMAT here), the Python.
# So they are kept under exactly that:
#
#   version key  blake2b(FORMAT, extractor hash, grammar versions, schema, atenmap version,
#                Python major.minor) -> the file ``facts/<key>.sqlite``. Entries of another key
#                are never opened; a build removes the other keys' files (and the folders of the
#                one-file-per-entry layout before it, FORMAT 1) that no build used in the last
#                PRUNE_AFTER seconds (a build of another atenmap on the same cache keeps its file
#                while it runs), ``atenmap sources --prune`` all but the last used one.
#   content key  blake2b-160 of lang, bindings, kind filter and the bytes -> the row's key.
#
# An index knows its files by path, size and mtime (Note [Cheap freshness]): right for "did this
# file change since this index saw it", useless for "was this content ever parsed". A second
# clone or `git worktree add` of the same commit, `cp -r` of an unpacked release, a branch switch
# or `git pull` (git rewrites the mtime of every file it touches, and a checkout of another
# commit and back rewrites all of them) give new paths or mtimes to old bytes; only the content
# says that nothing needs parsing. The index itself stays keyed by path and stat: the fact cache
# only decides whether a file that the index must (re)load is parsed or read.
#
# One file, not one file per entry (FORMAT 1 wrote ~2,000 small files on a first build of 2.6.0,
# ~1 s of it, and as much again to delete them). Workers only read (each its own connection,
# opened after the fork); what they parsed comes back to the parent with the rows, and the parent
# writes it all in one transaction when the parse is done (``flush``). The file is in WAL mode:
# readers (another build's workers) never wait for a writer, two builds' writes are serialized by
# SQLite's lock (busy_timeout; a build that still cannot write gives up: a cache), and two builds
# writing the same key write rows that load as the same value.
#
# Within one key, edits and pulls add entries whose old content is not read again: a hit moves an
# entry's ``used`` (at most once a day), and once a day a build removes the entries that nothing
# read or wrote for ENTRY_MAX_AGE (30 days).
#
# An entry is a row of ``entries`` (id, key, used, has_error, n) and its n rows in ``rows`` under
# its id (the facts table's columns, ``seq`` their order, ``scope`` a local index or -1; an entry
# written gets a new id, so a build's rows are appended, not spread over the b-tree by the keys'
# hashes), so that a build copies
# a hit's rows into the index inside SQLite, as a block (Note [A known file copied as a block]),
# never as Python tuples. An entry whose rows are not n (a disk error, a sweep racing a build), or
# a file that is not a database at all, is a miss, parsed again and rewritten (a damaged file is
# replaced by a new one). Never fsync'ed (synchronous=OFF): losing entries costs a parse.
#
# Note [A known file copied as a block]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A rebuild where every file's facts are cached cost 6.6x ctags's CPU when each hit was unmarshalled
# in a worker, pickled to the parent and inserted row by row (issue 37): SQLite's per-row inserts
# and the per-row Python were most of it. Now a build attaches this file to the index's connection
# (``Store.attach_facts``); a worker that finds an entry only says so (``probe``: its id and n),
# and the parent copies the entry's rows with one ``INSERT ... SELECT`` (``Store.add_cached_file``:
# ids the next ones, as a parse's rows get, scopes moved by the same offset), then resolves its
# ``#include``s and counts its kinds by SQL over the same entry. A copy that does not give n rows,
# or whose entry id is no longer the key's (another build rewrote the file since this build's
# snapshot began, and ids are reused), is parsed again in the parent; a page that cannot be read
# (sqlite3.DatabaseError: SQLite may end the build's whole transaction) removes the file and the
# build starts again without it (build.build: CacheDamaged). What a build parsed is written after the index's commit, again in
# SQLite: each parsed file's rows selected back from the index by their id range
# (``save_from_index``; an include's ``arg`` is the extractor's "" again, scopes local again), one
# transaction. ``lookup`` still reads an entry as tuples (the first answer's parses, exactfirst.py).
# Trust: the cache lives in the user's own cache folder, beside the index, and is trusted as the
# index is (docs/security.md): whoever can write there can already write index.sqlite. It holds
# rows, never code; nothing from a source tree is ever stored but the facts read from it, and a
# tree supplies only the bytes that are hashed.
FORMAT = "3"  # 3: rows as SQL rows (Note [A known file copied as a block]); 2: a marshal blob per entry
SUFFIX = ".sqlite"
ROW_WIDTH = 12  # the facts table's columns after ``file`` (build._parse_one's row tuples)
PRUNE_AFTER = 15 * 60  # seconds a file of another version key is kept after its last build
ENTRY_MAX_AGE = 30 * 86400  # an entry no build read or wrote for this long is removed (claim)
_TOUCH_AFTER = 86400  # a hit on an entry older than this moves its ``used`` (once a day at most)
_BUSY_MS = 30_000  # how long a write waits for another build's transaction
_INHERITED: list = []  # see FactCache._connect
_COLUMNS = "kind, name, qual, line, end_line, namespace, scope, arg, detail, via_macro, cond, targs"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, used INTEGER NOT NULL,
  has_error INTEGER NOT NULL, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rows(entry INTEGER NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
  qual TEXT NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL, namespace TEXT NOT NULL, scope INTEGER,
  arg TEXT NOT NULL, detail TEXT NOT NULL, via_macro TEXT NOT NULL, cond TEXT NOT NULL, targs TEXT NOT NULL,
  PRIMARY KEY (entry, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compiled(key BLOB PRIMARY KEY, used INTEGER NOT NULL, rows TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;
"""
# A parsed file's rows back from the index being built (attached as ``ix``): its ids are
# first..first+n-1 (Store.add_file gives a file the next ids), its scopes fact ids of the same file.
_FROM_INDEX = (f"INSERT INTO rows(entry, seq, {_COLUMNS}) SELECT :entry, id - :first, kind, name, qual, line, end_line, "
               "namespace, coalesce(scope - :first, -1), CASE kind WHEN 'include' THEN '' ELSE arg END, detail, "
               "via_macro, cond, targs FROM ix.facts WHERE id BETWEEN :first AND :last ORDER BY id")


def version_key(extractor: str, grammars: dict[str, str], schema: str, atenmap: str) -> str:
    """The file name for facts made by this extractor, these grammars and this row shape."""
    text = json.dumps([FORMAT, extractor, grammars, schema, atenmap, list(sys.version_info[:2])], sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def content_key(data: bytes, lang: str, bindings: bool, kinds: frozenset[str] | None) -> str:
    """The entry key of a file's facts: its bytes and what else decides its rows (``kinds``:
    the kind filter applied to them, None for all)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{lang}\0{int(bindings)}\0{'*' if kinds is None else ','.join(sorted(kinds))}\0".encode())
    h.update(data)
    return h.hexdigest()


def _mkdir(path: Path) -> None:
    """``path`` (and its parents) as folders 0755 whatever the umask (docs/security.md)."""
    if path.is_dir():
        return
    _mkdir(path.parent)
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        return
    os.chmod(path, 0o755)


class FactCache:
    """The entries of one version key, in the SQLite file ``path`` (``<cache>/facts/<key>.sqlite``).

    A reader (``get``) opens its own connection on first use in each process (a connection is
    never used across a fork). Writes: ``put`` at once, or ``stage`` in the parent and ``flush``
    once, in one transaction."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._staged: dict[str, bytes] = {}
        self._touched: set[str] = set()

    @property
    def folder(self) -> Path:
        """The folder of all version keys' files (``<cache>/facts``)."""
        return self.path.parent

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited across a fork: never used nor closed here (closing
            _INHERITED.append(self._conn)  # it could checkpoint the parent's WAL), kept till exit
        self._conn = None
        if not create and not self.path.is_file():
            return None
        try:
            if create:
                _mkdir(self.path.parent)
                if self.path.parent.is_symlink() or self.path.is_symlink():
                    return None  # written only into files of its own, never through a link
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
                os.close(fd)
            conn = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=OFF")
            conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError):
            return None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def get(self, key: str) -> tuple[bool, list[tuple]] | None:
        """``(has_error, rows)`` stored for ``key``, or None: missing, unreadable or damaged."""
        value, _old = self.lookup(key)
        return value

    def lookup(self, key: str) -> tuple[tuple[bool, list[tuple]] | None, bool]:
        """``get``, and whether the entry's ``used`` is older than a day (the build then
        ``touch``es it: see claim)."""
        found = self.probe(key)
        if found is None:
            return None, False
        has_error, n, old, entry = found
        try:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM rows WHERE entry = ? ORDER BY seq", (entry,)).fetchall()
        except sqlite3.Error:
            return None, False
        return ((has_error, rows), old) if len(rows) == n else (None, False)

    def probe(self, key: str) -> tuple[bool, int, bool, int] | None:
        """``(has_error, n, old, entry id)`` of the entry ``key`` without its rows (Note [A known
        file copied as a block]), or None; ``old`` as ``lookup``'s."""
        conn = self._connect(create=False)
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT used, has_error, n, id FROM entries WHERE key = ?",
                               (bytes.fromhex(key),)).fetchone()
        except (sqlite3.Error, ValueError):
            return None
        if row is None or type(row[2]) is not int:
            return None
        return bool(row[1]), row[2], time.time() - row[0] > _TOUCH_AFTER, row[3]

    # Rows made from a whole set of inputs, one entry per content (the table ``compiled``): the
    # torch.compile facts of a tree (build._compile_rows, Note [Compile facts by content]) and
    # native_functions.yaml's operator and dispatch rows (build._yaml_rows, Note
    # [native_functions.yaml by content]).
    def compile_rows(self, key: str) -> list[tuple] | None:
        """The CompileFact rows stored under ``key`` (build.compile_key), or None."""
        rows = self._json_rows(key)
        if type(rows) is not list or any(type(r) is not list for r in rows):
            return None
        return [tuple(r) for r in rows]

    def yaml_rows(self, key: str) -> tuple[list[tuple], list[tuple]] | None:
        """The operator and dispatch rows stored under ``key`` (build.yaml_key), or None."""
        got = self._json_rows(key)
        if type(got) is not list or len(got) != 2 or any(type(part) is not list for part in got):
            return None
        rows, disp = got
        if any(type(r) is not list or len(r) != 6 for r in rows) or any(type(d) is not list or len(d) != 5 for d in disp):
            return None
        return [tuple(r) for r in rows], [tuple(d) for d in disp]

    def put_yaml(self, key: str, rows: list[tuple], disp: list[tuple]) -> bool:
        """Store the operator and dispatch rows of ``key`` now."""
        return self.put_compile(key, [rows, disp])

    def _json_rows(self, key: str):
        conn = self._connect(create=False)
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT rows FROM compiled WHERE key = ?", (bytes.fromhex(key),)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError):
            return None

    def put_compile(self, key: str, rows: list) -> bool:
        """Store the CompileFact rows of ``key`` now (the old ones of other keys are swept as entries are)."""
        conn = self._connect(create=True)
        if conn is None:
            return False
        try:
            conn.execute("INSERT OR REPLACE INTO compiled(key, used, rows) VALUES (?, ?, ?)",
                         (bytes.fromhex(key), int(time.time()), json.dumps(rows)))
            return True
        except sqlite3.Error:
            return False

    def put(self, key: str, has_error: bool, rows: list[tuple]) -> bool:
        """Store ``(has_error, rows)`` under ``key`` now; False when it could not be written."""
        if any(len(r) != ROW_WIDTH for r in rows):
            raise ValueError(f"a fact row has {ROW_WIDTH} columns")
        return self._write({key: (has_error, rows)}, set())

    def stage(self, key: str, value: tuple[bool, list[tuple]] | None) -> None:
        """Keep ``(has_error, rows)`` for ``key`` until ``flush``; None: a hit to mark used."""
        if value is None:
            self._touched.add(key)
        else:
            self._staged[key] = value

    def flush(self, index: Path | None = None, parsed: list[tuple[str, bool, int, int]] = ()) -> bool:
        """Write what was staged, and each of ``parsed`` (``(key, has_error, first id, n)``: a file's
        rows in the index file ``index``, committed), in one transaction; False when it could not
        be (disk full, no permission, another build's lock held past busy_timeout): the build goes
        on, the files are parsed again next time."""
        staged, touched = self._staged, self._touched
        self._staged, self._touched = {}, set()
        if not (staged or touched or parsed):
            return True
        return self._write(staged, touched, index, list(parsed))

    def _write(self, entries: dict[str, tuple[bool, list[tuple]]], touched: set[str], index: Path | None = None,
               parsed: list[tuple[str, bool, int, int]] = ()) -> bool:
        conn = self._connect(create=True)
        if conn is None:
            return False
        now = int(time.time())
        # two files of one content parsed in one build (torchgen writes some twice): one entry
        parsed = [p for k, p in {p[0]: p for p in reversed(parsed)}.items() if k not in entries]
        heads = [(bytes.fromhex(k), now, int(bool(e)), len(rows)) for k, (e, rows) in entries.items()]
        heads += [(bytes.fromhex(k), now, int(bool(e)), n) for k, e, _first, n in parsed]
        ids: dict[bytes, int] = {}
        try:
            if parsed:
                conn.execute("ATTACH DATABASE ? AS ix", (str(index),))
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    # a new entry id for each (replaced ones' rows removed): rows are appended in id order
                    conn.executemany("DELETE FROM rows WHERE entry = (SELECT id FROM entries WHERE key = ?)",
                                     [(h[0],) for h in heads])
                    conn.executemany("DELETE FROM entries WHERE key = ?", [(h[0],) for h in heads])
                    for h in heads:
                        ids[h[0]] = conn.execute("INSERT INTO entries(key, used, has_error, n) VALUES (?, ?, ?, ?)",
                                                 h).lastrowid
                    conn.executemany(f"INSERT INTO rows(entry, seq, {_COLUMNS}) VALUES ({','.join('?' * (ROW_WIDTH + 2))})",
                                     [(ids[bytes.fromhex(k)], i, *r) for k, (_e, rows) in entries.items()
                                      for i, r in enumerate(rows)])
                    if parsed:  # (a statement naming ix.facts is not even prepared without it)
                        conn.executemany(_FROM_INDEX, [{"entry": ids[bytes.fromhex(k)], "first": first, "last": first + n - 1}
                                                       for k, _e, first, n in parsed if n])
                    conn.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, bytes.fromhex(k)) for k in touched])
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            finally:
                if parsed:
                    conn.execute("DETACH DATABASE ix")
            return True
        except sqlite3.Error:
            return False

    def keys(self) -> dict[str, int]:
        """Every entry's key -> its ``used`` (tests, ``atenmap sources``)."""
        conn = self._connect(create=False)
        if conn is None:
            return {}
        try:
            return {k.hex(): u for k, u in conn.execute("SELECT key, used FROM entries")}
        except sqlite3.Error:
            return {}

    def mark_used(self) -> None:
        """Move the file's mtime (at the start and the end of a build: see claim)."""
        try:
            os.utime(self.path, follow_symlinks=False)
        except OSError:
            pass

    def claim(self) -> None:
        """Mark this file used now and drop what is left over: other version keys (and old-layout
        folders) no build used for PRUNE_AFTER seconds; once a day, old entries. A file that is
        not a database is replaced."""
        now = time.time()
        if self._connect(create=True) is None:
            if not self.path.is_file() or self.path.is_symlink():
                return
            self.replace_damaged()
            if self._connect(create=True) is None:
                return
        self.mark_used()
        for other in stores(self.folder):
            if other != self.path and now - last_used(other) > PRUNE_AFTER:
                remove(other)
        self._sweep(now)

    def replace_damaged(self) -> None:
        """Remove the file (and its WAL): a file that is not a database, or whose pages a build could not read."""
        self.close()
        for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            try:
                p.unlink()
            except OSError:
                pass

    def _sweep(self, now: float) -> None:
        """Once a day: remove the entries of this key that no build read or wrote for
        ENTRY_MAX_AGE (edits and pulls add entries; the content they replaced is not read again)."""
        conn = self._connect(create=True)
        if conn is None:
            return
        try:
            row = conn.execute("SELECT value FROM meta WHERE name = 'swept'").fetchone()
            if row is not None and now - float(row[0]) < _TOUCH_AFTER:
                return
            conn.execute("BEGIN IMMEDIATE")
            old = int(now - ENTRY_MAX_AGE)
            conn.execute("DELETE FROM rows WHERE entry IN (SELECT id FROM entries WHERE used < ?)", (old,))
            conn.execute("DELETE FROM entries WHERE used < ?", (old,))
            conn.execute("DELETE FROM compiled WHERE used < ?", (old,))
            conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('swept', ?)", (now,))
            conn.execute("COMMIT")
        except (sqlite3.Error, ValueError):
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass


def stores(base: Path) -> list[Path]:
    """What ``<cache>/facts`` holds: each version key's file, and the folders of FORMAT 1 (one
    file per entry), which no build reads any more (removed as another key's)."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    return sorted(Path(e.path) for e in entries
                  if (e.name.endswith(SUFFIX) and e.is_file(follow_symlinks=False))
                  or (e.is_dir(follow_symlinks=False) and not e.name.startswith(".")))


def remove(path: Path) -> None:
    """Remove a version key's file (with its -wal and -shm) or an old-layout folder; a link is
    removed, never followed."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)  # rmtree never follows a link inside
        return
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            p.unlink()
        except OSError:
            pass


def size(path: Path) -> int:
    """Bytes of a version key's file with its -wal, or of an old-layout folder."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.isfile(p))


def last_used(path: Path) -> float:
    """When a build last used ``path`` (its mtime; an old-layout folder's stamp, if it has one)."""
    for p in (path / "used", path) if path.is_dir() else (path,):
        try:
            return p.stat().st_mtime
        except OSError:
            continue
    return 0.0
