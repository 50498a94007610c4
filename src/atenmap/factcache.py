"""Facts by content: the fact rows of each source file, kept under the hash of its bytes.

``<cache>/facts/<version key>/<2 hex>/<38 hex>``, one file per content; see Note [Facts by
content]. build._parse_one asks it before parsing and fills it after; nothing else reads it.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import shutil
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
#                Python major.minor) -> the folder ``facts/<key>/``. Entries of another key are
#                never opened; a build removes the other keys' folders that no build used in the
#                last PRUNE_AFTER seconds (a build of another atenmap on the same cache keeps its
#                folder while it runs), ``atenmap sources --prune`` all but the last used one.
#   content key  blake2b-160 of lang, bindings, kind filter and the bytes -> the entry's name.
#
# An index knows its files by path, size and mtime (Note [Cheap freshness]): right for "did this
# file change since this index saw it", useless for "was this content ever parsed". A second
# clone or `git worktree add` of the same commit, `cp -r` of an unpacked release, a branch switch
# or `git pull` (git rewrites the mtime of every file it touches, and a checkout of another
# commit and back rewrites all of them) give new paths or mtimes to old bytes; only the content
# says that nothing needs parsing. The index itself stays keyed by path and stat: the fact cache
# only decides whether a file that the index must (re)load is parsed or read.
#
# Within one key, edits and pulls add entries whose old content is not read again: a hit moves an
# entry's mtime (at most once a day), and once a day a build removes the entries that nothing read
# or wrote for ENTRY_MAX_AGE (30 days).
#
# An entry is MAGIC, then blake2b-128 of (content key, payload), then the payload:
# zlib(marshal((has_error, rows))). It is written to ``tmp/`` and renamed into place, so a reader
# sees a whole entry or none; two workers or two builds writing the same key write entries that
# load as the same value (marshal's bytes can differ by its reference flags). An entry whose magic, digest, zlib stream, marshal data or shape is wrong (a truncated
# write after a power cut, a disk error, a file moved under another name) is a miss, parsed again
# and rewritten. Never fsync'ed: losing an entry costs a parse.
#
# Trust: the cache lives in the user's own cache folder, beside the index, and is trusted as the
# index is (docs/security.md): whoever can write there can already write index.sqlite. marshal
# is used because these are atenmap's own files; a file made to crash marshal could be made by
# the same person who could replace the index. Nothing from a source tree is ever unmarshalled:
# a tree supplies only the bytes that are hashed.
FORMAT = "1"
MAGIC = b"atenmap-facts\x001\n"
ROW_WIDTH = 12  # the facts table's columns after ``file`` (build._parse_one's row tuples)
PRUNE_AFTER = 15 * 60  # seconds a folder of another version key is kept after its last build
ENTRY_MAX_AGE = 30 * 86400  # an entry no build read or wrote for this long is removed (claim)
_TOUCH_AFTER = 86400  # a hit on an entry older than this moves its mtime (once a day at most)
_SWEPT = "swept"  # the mtime of the last sweep of old entries
_DIGEST = 16
_STAMP = "used"  # touched by each build that uses the folder: see prune


def version_key(extractor: str, grammars: dict[str, str], schema: str, atenmap: str) -> str:
    """The folder name for facts made by this extractor, these grammars and this row shape."""
    text = json.dumps([FORMAT, extractor, grammars, schema, atenmap, list(sys.version_info[:2])], sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def content_key(data: bytes, lang: str, bindings: bool, kinds: frozenset[str] | None) -> str:
    """The entry name of a file's facts: its bytes and what else decides its rows (``kinds``:
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


class FactCache:
    """The entries of one version key, in ``folder`` (``<cache>/facts/<version key>``)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / key[2:]

    def get(self, key: str) -> tuple[bool, list[tuple]] | None:
        """``(has_error, rows)`` stored for ``key``, or None: missing, unreadable or damaged."""
        try:
            with open(self.path(key), "rb") as f:
                blob = f.read()
                old = time.time() - os.fstat(f.fileno()).st_mtime > _TOUCH_AFTER
        except OSError:
            return None
        head = len(MAGIC) + _DIGEST
        if not blob.startswith(MAGIC) or blob[len(MAGIC):head] != _digest(key, blob[head:]):
            return None
        try:
            value = marshal.loads(zlib.decompress(blob[head:]))
        except (zlib.error, ValueError, EOFError, TypeError):
            return None
        if not _well_formed(value):
            return None
        if old:  # still in use: kept by the sweep (claim)
            try:
                os.utime(self.path(key))
            except OSError:
                pass
        return value

    def put(self, key: str, has_error: bool, rows: list[tuple]) -> bool:
        """Store ``(has_error, rows)`` under ``key``; False when it could not be written (disk
        full, no permission, a value marshal cannot hold, the folder pruned meanwhile): the
        build goes on, the file is parsed again next time."""
        try:
            payload = zlib.compress(marshal.dumps((bool(has_error), list(rows)), 4), 1)
        except ValueError:
            return False
        blob = MAGIC + _digest(key, payload) + payload
        final = self.path(key)
        tmp = self.folder / "tmp" / f"{key}.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            _mkdir(tmp.parent)
            _mkdir(final.parent)
            if tmp.parent.is_symlink() or final.parent.is_symlink():
                return False  # written only into folders of its own, never through a link
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                os.fchmod(fd, 0o644)
                view = memoryview(blob)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, final)
            return True
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            return False

    def mark_used(self) -> None:
        """Touch the folder's stamp (at the start and the end of a build: see claim)."""
        try:
            (self.folder / _STAMP).touch()
        except OSError:
            pass

    def claim(self) -> None:
        """Mark this folder used now and drop what is left over: other version keys no build
        used for PRUNE_AFTER seconds, temporary files older than that (a killed worker's)."""
        now = time.time()
        try:
            _mkdir(self.folder)
            stamp = self.folder / _STAMP
            stamp.touch()
            os.chmod(stamp, 0o644)
        except OSError:
            return
        for other in folders(self.folder.parent):
            if other != self.folder and now - last_used(other) > PRUNE_AFTER:
                shutil.rmtree(other, ignore_errors=True)  # rmtree never follows a link inside
        _unlink_older(self.folder / "tmp", now - PRUNE_AFTER)  # not followed when it is a link
        self._sweep(now)

    def _sweep(self, now: float) -> None:
        """Once a day: remove the entries of this key that no build read or wrote for
        ENTRY_MAX_AGE (edits and pulls add entries; the content they replaced is not read again)."""
        swept = self.folder / _SWEPT
        try:
            if now - swept.stat().st_mtime < _TOUCH_AFTER:
                return
        except OSError:
            pass
        try:
            swept.touch()
        except OSError:
            return
        for sub in folders(self.folder):
            if sub.name != "tmp":
                _unlink_older(sub, now - ENTRY_MAX_AGE)


def _unlink_older(folder: Path, before: float) -> None:
    """Remove the files of ``folder`` last modified before ``before``; what cannot be read or
    removed stays (a cache: the next build tries again). ``folder`` itself is never followed
    when it is a symlink (opened with O_NOFOLLOW, its entries removed through that descriptor):
    a ``tmp`` pointing elsewhere must not have the files it points at removed."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        with os.scandir(fd) as it:
            old = [e.name for e in it if e.stat(follow_symlinks=False).st_mtime < before]
        for name in old:
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass
    except OSError:
        return
    finally:
        os.close(fd)


def folders(base: Path) -> list[Path]:
    """The sub-folders of ``base``: the version keys under ``<cache>/facts``, the entry folders of a key."""
    try:
        return sorted(Path(e.path) for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def last_used(folder: Path) -> float:
    """When a build last used ``folder`` (its stamp's mtime; the folder's own without one)."""
    for p in (folder / _STAMP, folder):
        try:
            return p.stat().st_mtime
        except OSError:
            continue
    return 0.0
