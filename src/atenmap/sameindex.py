"""A new index copied from a finished index of the same content (issue 37's facts-cached rebuild).

Note [An index of the same content]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A build into a new index (``--force``, a new clone or worktree) whose every file's facts are in the
fact cache still costs ~2x ctags of CPU: the block copies, the secondary indexes, ANALYZE and
native_functions.yaml. But an index is a function of what it was built from, and that is known
before anything is parsed:

- the fact cache's version key (the extractor, its grammars, the schema, atenmap's version,
  build.py) and the code that stores an index (store/__init__.py, schema.sql, indexes.sql,
  factcache.py's block copies);
- each file stored, in the order it is stored (which gives the ids): its path, language and size,
  and its fact cache key (blake2b of its bytes and what decides its rows) or, for a file that was
  not parsed, its ``skipped:<why>`` status;
- native_functions.yaml's bytes (the ones its rows were read from: a yaml edited during the build
  records no content), the path the operators' locations give it and the code that
  reads it (build.yaml_key, Note [native_functions.yaml by content]);
- whether the torch.compile facts are in it, and then their fact cache key (Note [Compile facts
  by content] in build.py).

A build whose store is new and whose files all had a key records that digest in the index's meta
(``content_set``), with a cheaper one of the paths, languages and sizes alone (``content_sizes``);
any other build (a refresh, which keeps files it did not read; the fact cache off) records "" for
both. (A build with torchgen running beside the parse stores torchgen's files after the tree's, an
order no later build predicts: its digests never match, and the next build is a source.) A new
build, when torchgen's files are known at once: if a finished index under the cache's ``indexes/`` (this tree's first) has this build's
``content_sizes``, the files are read and hashed as a build would (``_key_one``, in the pool), and
if that index's ``content_set`` is this build's too, the new index is a page copy of it (SQLite's
backup), not a build. Then only what belongs to the tree is written again: each file's size and
mtime, the yaml's and the compile inputs' stat stamps, and the meta every build writes.

Exact, not a guess: content keys decide, never a stat; the order the build would store the files
in is part of the digest (the pool's biggest-first order, or the walk's). The copy is checked
before it is used: its meta says complete with this ``content_set``, it holds no quoted tables, its
files are this build's in this order, its facts are as many as its ``fact_counts`` say, and
``PRAGMA quick_check`` finds every page of every table and index sound (0.07-0.08 s on 2.6.0's
35 MB index without torchgen's files, whose backup is 0.12-0.14 s: a damaged index is told to
rebuild with ``--force``, which must not copy it back); a copy that fails a check, or that SQLite cannot read whole, is thrown away and the index built as
before (build.build). A page whose bytes are wrong but read as valid is not seen (SQLite keeps no
checksums), as for the index itself and the fact cache. ``--force`` still reads and hashes every
file: a stat never stands for a content here. Costs: a build that finds no index of its ``content_sizes`` pays one digest
(~1 ms); one whose sizes match but not its content pays the read and hash once more (~0.35 s of
CPU on 2.6.0).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

from atenmap.source.find import YAML_REL


def _digest(parts: Iterable[str]) -> str:
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def sizes_key(version: str, order: Iterable[tuple[str, str, int]]) -> str:
    """The digest of the version key and each file's path, language and size, in store order."""
    return _digest([version, *(f"{rel}\1{lang}\1{size}" for rel, lang, size in order)])


def content_key(version: str, yaml: str, compile_part: str, order: Iterable[tuple[str, str, str]]) -> str:
    """The digest of everything the index is made from (the Note above), in store order: each
    file's path, language and key (or skipped status)."""
    return _digest([version, yaml, compile_part, *(f"{rel}\1{lang}\1{key}" for rel, lang, key in order)])


def yaml_part(root: Path) -> str:
    """native_functions.yaml's bytes' blake2b and the path its operators' locations give (as
    native_yaml.load_operators); "" when it cannot be read (the build then says why)."""
    path = root / YAML_REL
    try:
        data = path.read_bytes()
        try:
            where = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            where = path.as_posix()
    except OSError:
        return ""
    return f"{where}\1{hashlib.blake2b(data, digest_size=20).hexdigest()}"


def candidates(indexes: Path, own: Path, sizes: str, schema: str) -> list[tuple[Path, dict[str, str]]]:
    """The finished indexes under ``indexes`` (``own`` first) whose meta has ``content_sizes`` = ``sizes``,
    with their meta."""
    from atenmap.store import INDEX_NAME, read_meta

    paths = [own]
    try:
        paths += sorted(p for p in (Path(e.path) / INDEX_NAME for e in os.scandir(indexes) if e.is_dir())
                        if p != own)
    except OSError:
        pass
    found = []
    for path in paths:
        meta = read_meta(path) if path.is_file() else None
        if meta and meta.get("content_sizes") == sizes and meta.get("complete") == "1" \
                and meta.get("schema_version") == schema and meta.get("content_set"):
            found.append((path, meta))
    return found
