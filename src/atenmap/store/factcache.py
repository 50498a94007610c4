"""Facts by content: the fact rows of each source file, kept under the hash of its bytes.

``<cache>/facts/<version key>.sqlite``, one SQLite file per version key, one row per content; see
Note [Facts by content]. build._parse_one asks it before parsing; the build writes what was
parsed in one transaction at its end (``stage`` + ``flush``); nothing else reads it.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import shutil
import sqlite3
import sys
import time
import zlib
from pathlib import Path

# Note [Facts by content]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The rows build._parse_one makes for a file are a pure function of its bytes, its language, the
# bindings flag (generated python_*.cpp files), the kind filter of generated autograd files
# (build._AUTOGRAD_KINDS), and the code that reads them: the extractor (build.extractor_hash),
# build.py itself (which turns facts into rows: _parse_one, keep_kinds), the grammar packages, the row shape (store.SCHEMA_VERSION, FORMAT here), marshal's Python.
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
# An entry's ``data`` is blake2b-128 of (content key, payload), then the payload:
# zlib(marshal((has_error, rows))). An entry whose digest, zlib stream, marshal data or shape is
# wrong (a disk error, a row copied under another key), or a file that is not a database at all,
# is a miss, parsed again and rewritten (a damaged file is replaced by a new one). Never fsync'ed
# (synchronous=OFF): losing entries costs a parse.
#
# Trust: the cache lives in the user's own cache folder, beside the index, and is trusted as the
# index is (docs/security.md): whoever can write there can already write index.sqlite. marshal
# is used because these are atenmap's own files; a file made to crash marshal could be made by
# the same person who could replace the index. Nothing from a source tree is ever unmarshalled:
# a tree supplies only the bytes that are hashed.
FORMAT = "2"
SUFFIX = ".sqlite"
ROW_WIDTH = 12  # the facts table's columns after ``file`` (build._parse_one's row tuples)
PRUNE_AFTER = 15 * 60  # seconds a file of another version key is kept after its last build
ENTRY_MAX_AGE = 30 * 86400  # an entry no build read or wrote for this long is removed (claim)
_TOUCH_AFTER = 86400  # a hit on an entry older than this moves its ``used`` (once a day at most)
_DIGEST = 16
_BUSY_MS = 30_000  # how long a write waits for another build's transaction
_INHERITED: list = []  # see FactCache._connect
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(key BLOB PRIMARY KEY, used INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;
"""


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


def _digest(key: str, payload: bytes) -> bytes:
    h = hashlib.blake2b(key.encode(), digest_size=_DIGEST)
    h.update(payload)
    return h.digest()


def _well_formed(value: object) -> bool:
    return (type(value) is tuple and len(value) == 2 and type(value[0]) is bool and type(value[1]) is list
            and all(type(r) is tuple and len(r) == ROW_WIDTH for r in value[1]))


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


def encode(key: str, has_error: bool, rows: list[tuple]) -> bytes | None:
    """An entry's ``data``, or None for a value marshal cannot hold."""
    try:
        payload = zlib.compress(marshal.dumps((bool(has_error), list(rows)), 4), 1)
    except ValueError:
        return None
    return _digest(key, payload) + payload


def decode(key: str, blob: bytes) -> tuple[bool, list[tuple]] | None:
    if type(blob) is not bytes or blob[:_DIGEST] != _digest(key, blob[_DIGEST:]):
        return None
    try:
        value = marshal.loads(zlib.decompress(blob[_DIGEST:]))
    except (zlib.error, ValueError, EOFError, TypeError):
        return None
    return value if _well_formed(value) else None


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
        conn = self._connect(create=False)
        if conn is None:
            return None, False
        try:
            row = conn.execute("SELECT used, data FROM entries WHERE key = ?", (bytes.fromhex(key),)).fetchone()
        except (sqlite3.Error, ValueError):
            return None, False
        if row is None:
            return None, False
        value = decode(key, row[1])
        return value, value is not None and time.time() - row[0] > _TOUCH_AFTER

    def put(self, key: str, has_error: bool, rows: list[tuple]) -> bool:
        """Store ``(has_error, rows)`` under ``key`` now; False when it could not be written."""
        data = encode(key, has_error, rows)
        return data is not None and self._write({key: data}, set())

    def stage(self, key: str, data: bytes | None) -> None:
        """Keep ``data`` (``encode``'s) for ``key`` until ``flush``; None: a hit to mark used."""
        if data is None:
            self._touched.add(key)
        else:
            self._staged[key] = data

    def flush(self) -> bool:
        """Write what was staged, in one transaction; False when it could not be (disk full, no
        permission, another build's lock held past busy_timeout): the build goes on, the files
        are parsed again next time."""
        staged, touched = self._staged, self._touched
        self._staged, self._touched = {}, set()
        return self._write(staged, touched) if staged or touched else True

    def _write(self, entries: dict[str, bytes], touched: set[str]) -> bool:
        conn = self._connect(create=True)
        if conn is None:
            return False
        now = int(time.time())
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO entries(key, used, data) VALUES (?, ?, ?)",
                                 [(bytes.fromhex(k), now, v) for k, v in entries.items()])
                conn.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, bytes.fromhex(k)) for k in touched])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
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
            self._replace_damaged()
            if self._connect(create=True) is None:
                return
        self.mark_used()
        for other in stores(self.folder):
            if other != self.path and now - last_used(other) > PRUNE_AFTER:
                remove(other)
        self._sweep(now)

    def _replace_damaged(self) -> None:
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
            conn.execute("DELETE FROM entries WHERE used < ?", (int(now - ENTRY_MAX_AGE),))
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
