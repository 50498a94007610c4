"""The one place that speaks SQL. An index is one SQLite file per PyTorch source tree.

Writers build into a temporary file next to the index and ``os.replace`` it into place when the
load is complete (meta ``complete = 1``), so a reader never sees half an index: a killed build
leaves only a stray temporary file, and two builds at once are serialised by a lock file.
"""
from __future__ import annotations

import json
import os
import posixpath
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from atenmap.errors import IndexError_


class CacheDamaged(Exception):
    """A page of the attached fact cache could not be read and SQLite ended the build's transaction
    (build.build builds again without that file)."""

if TYPE_CHECKING:
    from atenmap.model_answers import CompileFact


class CorruptIndex(IndexError_):
    """The index file is damaged (not a database, or ``PRAGMA quick_check`` finds faults): a
    build rebuilds it from scratch (build.py), never trusts or patches it."""


SCHEMA_VERSION = "7"  # 7: the operators_line and facts_stub indexes (operator_names and stub_names read them alone); 6: call facts spelled like operator calls keep their arguments (Note [Arguments of operator calls]); the compile table (torch.compile facts)
INDEX_NAME = "index.sqlite"  # one file per source tree, under <cache>/indexes/<tree>-<hash>/

FACT_COLUMNS = "f.id, f.kind, f.name, f.qual, fi.path, f.line, f.end_line, f.namespace, f.scope, f.arg, f.detail, f.via_macro, f.cond, f.targs, fi.generated"


@dataclass(frozen=True)
class FactRow:
    id: int
    kind: str
    name: str
    qual: str
    file: str
    line: int
    end_line: int
    namespace: str
    scope: int | None
    arg: str
    detail: str
    via_macro: str
    cond: str
    targs: str
    generated: bool

    @property
    def is_cuda_file(self) -> bool:
        return self.file.endswith((".cu", ".cuh")) or "/cuda/" in self.file


_FACT_FIELDS = tuple(FactRow.__dataclass_fields__)
_new = object.__new__


def _fact_row(r: tuple) -> FactRow:
    """``FactRow(*r[:14], bool(r[14]))`` without the frozen ``__init__``'s 15 ``object.__setattr__``
    calls: a chain reads tens of thousands of rows. The record is the same (fields, equality, frozen)."""
    row = _new(FactRow)
    d = row.__dict__
    d.update(zip(_FACT_FIELDS, r))
    d["generated"] = bool(r[14])
    return row


def _sql(name: str) -> str:
    from importlib import resources  # builds only: a query does not pay its ~2.5 ms import

    return resources.files("atenmap.store").joinpath(name).read_text()


def _damage(conn: sqlite3.Connection, exc: sqlite3.DatabaseError) -> str | None:
    """Why the file is a damaged index (after ``exc`` on open), or None when it is not damaged
    (busy, locked, unreadable for the permissions...): ``PRAGMA quick_check``'s first complaint."""
    text = str(exc)
    if "malformed" in text or "not a database" in text:
        return text
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "unable to open" in text
                                                        or "readonly" in text or "busy" in text):
        return None
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(1)")]
    except sqlite3.DatabaseError as again:
        return str(again)
    return None if rows == ["ok"] else (rows[0] if rows else text)


def include_target(src: str, name: str, paths: set[str] | frozenset[str]) -> str:
    """The indexed file that ``#include name`` in ``src`` names, or "": ``<ATen/x.h>`` is
    ``aten/src/ATen/x.h``; ``"x.h"`` is first looked up beside the includer."""
    cut = src.rfind("/")
    local = name if name.startswith("/") or cut < 0 else f"{src[:cut]}/{name}"  # posixpath.join(dirname, name)
    if not local or "//" in local or "/." in local or local.startswith(".") or local.endswith("/"):
        local = posixpath.normpath(local)  # else it is already normal: 21k includes a build
    for cand in (local, f"aten/src/{name}", name):
        if cand in paths:
            return cand
    return ""


def sqlite_uri(path: Path | str, mode: str) -> str:
    """SQLite's ``file:`` URI of ``path`` opened with ``mode``: the path percent-encoded, so that a
    ``#``, ``?`` or ``%`` in a tree's or the cache's folder name stays part of the file name (unquoted,
    ``?`` starts the query, ``#`` ends the path and ``%xx`` is decoded: another file is opened)."""
    from urllib.parse import quote

    return f"file:{quote(os.path.abspath(path), safe='/')}?mode={mode}"


def read_meta(path: Path | str) -> dict[str, str] | None:
    """The ``meta`` table of the index file at ``path``, opened read-only; None when it cannot be
    read (not an index, half-written, locked away)."""
    try:
        conn = sqlite3.connect(sqlite_uri(path, "ro"), uri=True)
        try:
            return dict(conn.execute("SELECT key, value FROM meta"))
        finally:
            conn.close()
    except sqlite3.Error:
        return None


class Store:
    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path

    # ---- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path) -> "Store":
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.executescript(_sql("schema.sql"))
        return cls(conn, path)

    @classmethod
    def open(cls, path: Path, writable: bool = False) -> "Store":
        if not path.exists():
            raise IndexError_(f"no index at {path}; run `atenmap index` first")
        uri = sqlite_uri(path, "rw" if writable else "ro")
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.OperationalError as exc:
            raise IndexError_(f"cannot open index {path}: {exc}") from None
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            damage = _damage(conn, exc)
            conn.close()
            if damage is not None:
                raise CorruptIndex(f"index {path} is corrupt ({damage})") from None
            raise IndexError_(f"index {path} is unreadable ({exc}); delete it and run `atenmap index`") from None
        if meta.get("complete") != "1":
            raise IndexError_(f"index {path} is incomplete; run `atenmap index` to rebuild it")
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexError_(
                f"index {path} has schema {meta.get('schema_version')!r}, this atenmap needs {SCHEMA_VERSION!r}; "
                "run `atenmap index` to rebuild it"
            )
        if writable:
            conn.execute("PRAGMA synchronous=OFF")
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()


    def begin(self) -> None:
        self.conn.execute("BEGIN")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def finish(self, analyze: bool = True) -> None:
        """The secondary indexes, and ANALYZE's statistics unless ``analyze`` is False (a copy of an
        index of the same content has them already)."""
        self.index_now()
        if analyze:
            self.conn.execute("ANALYZE")

    def index_now(self) -> None:
        """The secondary indexes, before a load that is queried as it grows (exactfirst.py)."""
        self.conn.executescript(_sql("indexes.sql"))

    def load_from(self, path: Path) -> bool:
        """This (new, empty) index replaced by a copy of the index at ``path``, page by page (SQLite's
        backup; Note [An index of the same content] in sameindex.py); False when ``path`` cannot be
        read whole (this index is then in no known state: the build starts again)."""
        try:
            src = sqlite3.connect(sqlite_uri(path, "ro"), uri=True)
        except sqlite3.Error:
            return False
        try:
            src.backup(self.conn)
            return True
        except sqlite3.Error:
            return False
        finally:
            src.close()

    def copy_holds(self, content_set: str, paths: list[str]) -> list[str] | None:
        """The status of each file of a copy made by ``load_from`` (in id order), or None when the copy
        is not the index of ``content_set`` and ``paths`` (in id order): its meta, quoted tables (a
        bundle's), files, or fact count (``NOT INDEXED``: every leaf of the table read) differ, or a
        page of any table or index is damaged (``PRAGMA quick_check``: a backup copies pages without
        reading them, and `atenmap index --force` is the remedy for a damaged index that would
        otherwise copy it again)."""
        try:
            if [r[0] for r in self.conn.execute("PRAGMA quick_check(1)")] != ["ok"]:
                return None
            meta = self.meta()
            counts = json.loads(meta.get("fact_counts") or "{}")
            if meta.get("content_set") != content_set or meta.get("complete") != "1" or self.quotes():
                return None
            files = self.conn.execute("SELECT path, status FROM files ORDER BY id").fetchall()
            if [p for p, _s in files] != paths:
                return None
            total = self.conn.execute("SELECT count(*) FROM facts NOT INDEXED").fetchone()[0]
        except (sqlite3.DatabaseError, ValueError):
            return None
        return [st for _p, st in files] if total == sum(counts.values()) else None

    def set_file_stats(self, rows: Iterable[tuple[str, int, int]]) -> None:
        """Each ``(path, size, mtime_ns)``'s file row gets that size and mtime."""
        self.conn.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                              [(size, mtime, path) for path, size, mtime in rows])

    # ---- meta --------------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta"))

    def codegen_absent(self) -> str | None:
        """None when torchgen's output is in this index; else why not, in the words of what the user
        set (``--no-codegen``, ``ATENMAP_CODEGEN=never``) or torchgen's failure: see Note [Whose code
        runs] in build.py. The bundled index holds torchgen's output (under ``<torchgen>/``)."""
        meta = self.meta()
        if meta.get("codegen_dir"):
            return None
        failed = [w for w in json.loads(meta.get("codegen_warnings") or "[]") if w.startswith("torchgen")]
        return meta.get("codegen_off") or (failed[0] if failed else "torchgen did not run")

    def set_meta(self, **values: str) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [(k, str(v)) for k, v in values.items()]
        )

    # ---- what the bundle quotes (Note [What the bundle quotes] in source/bundle.py) -------------
    def quotes(self) -> bool:
        """Whether this index carries quoted_* tables (the bundled index does)."""
        return self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'quoted_lines'").fetchone()[0] > 0

    def add_quotes(self, branches: Iterable[tuple], lines: Iterable[tuple], text_ops: Iterable[tuple],
                   derivatives: Iterable[tuple], python: Iterable[tuple], bodies: Iterable[tuple] = ()) -> None:
        """Create the quoted_* tables and fill them, rows in the order given (the builder sorts them)."""
        self.conn.executescript(_sql("quoted.sql"))
        self.conn.execute("BEGIN")
        for table, rows, n in (("quoted_branches", branches, 3), ("quoted_lines", lines, 3),
                               ("quoted_text_ops", text_ops, 6), ("quoted_derivatives", derivatives, 2),
                               ("quoted_python", python, 3), ("quoted_bodies", bodies, 4)):
            self.conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * n)})", rows)
        self.conn.execute("COMMIT")

    def index_quotes(self) -> None:
        if self.quotes():
            self.conn.executescript("CREATE INDEX IF NOT EXISTS quoted_branches_at ON quoted_branches(file);"
                                    "CREATE INDEX IF NOT EXISTS quoted_lines_at ON quoted_lines(file, line);"
                                    "CREATE INDEX IF NOT EXISTS quoted_text_ops_at ON quoted_text_ops(file, def_line);")
            if self.quotes_bodies():
                self.conn.execute("CREATE INDEX IF NOT EXISTS quoted_bodies_at ON quoted_bodies(file)")
            if self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'quoted_runs'").fetchone()[0]:
                self.conn.execute("CREATE INDEX IF NOT EXISTS quoted_runs_at ON quoted_runs(op, key, platform)")

    def quoted_branches(self, file: str) -> tuple[list, list]:
        """(branches, sites) kept for ``file``'s call sites (store/quoted.sql); empty when none."""
        row = self.conn.execute("SELECT branches, sites FROM quoted_branches WHERE file = ?", (file,)).fetchone()
        return (json.loads(row[0]), json.loads(row[1])) if row else ([], [])

    def quoted_lines(self, file: str) -> dict[int, str]:
        return dict(self.conn.execute("SELECT line, text FROM quoted_lines WHERE file = ?", (file,)))

    def quoted_lines_under(self, prefix: str) -> list[tuple[str, int, str]]:
        """(file, line, text) of the quoted lines of the files whose path starts with ``prefix``, in
        path and line order."""
        return list(self.conn.execute("SELECT file, line, text FROM quoted_lines WHERE substr(file, 1, ?) = ? "
                                      "ORDER BY file, line", (len(prefix), prefix)))

    def quotes_bodies(self) -> bool:
        """Whether this index quotes the MPS function bodies (Note [MPS lines from the bundle] in
        resolve/mpsgraph.py); a bundle built before it does not."""
        return self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'quoted_bodies'").fetchone()[0] > 0

    def quoted_body_ends(self, file: str) -> dict[tuple[int, int], int]:
        """(first, last) of a function span of ``file`` -> the line that closes its body."""
        return {(a, b): e for a, b, e in self.conn.execute(
            "SELECT first, last, end_line FROM quoted_bodies WHERE file = ?", (file,))}

    def quotes_runs(self) -> bool:
        """Whether this index keeps the tree's runs blocks (Note [The runs the bundle keeps] in
        resolve/runs.py); a bundle built before it, or one whose builder kept none, does not."""
        if not self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'quoted_runs'").fetchone()[0]:
            return False
        return self.conn.execute("SELECT 1 FROM quoted_runs LIMIT 1").fetchone() is not None

    def add_quoted_runs(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """Fill quoted_runs (created by add_quotes) with (op, key, platform, runs JSON), in the order given."""
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO quoted_runs VALUES (?, ?, ?, ?)", rows)
        self.conn.execute("COMMIT")

    def quoted_runs(self, op: str, key: str, platform: str) -> list | None:
        """The kept runs of ``op``'s chain for ``key`` on ``platform`` (store/quoted.sql); None when none are kept."""
        row = self.conn.execute("SELECT runs FROM quoted_runs WHERE op = ? AND key = ? AND platform = ?",
                                (op, key, platform)).fetchone()
        return json.loads(row[0]) if row else None

    def quoted_text_ops(self, file: str, def_line: int) -> list[tuple[int, str, str, str]]:
        """(line, base, written, args) of the Tensor arithmetic kept for the function at ``file:def_line``."""
        return list(self.conn.execute("SELECT line, base, written, args FROM quoted_text_ops WHERE file = ? "
                                      "AND def_line = ? ORDER BY rowid", (file, def_line)))

    def quoted_python(self, surface: str) -> list[dict]:
        """The records (extract/pyfuncs.PyFunction.to_dict) of one module's Python functions."""
        if not self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'quoted_python'").fetchone()[0]:
            return []
        return [json.loads(r) for (r,) in self.conn.execute(
            "SELECT record FROM quoted_python WHERE surface = ? ORDER BY rowid", (surface,))]

    def quoted_derivatives(self) -> list[dict]:
        return [json.loads(r) for (r,) in self.conn.execute("SELECT record FROM quoted_derivatives ORDER BY rowid")]

    # ---- files and facts ---------------------------------------------------------------------
    def files(self) -> dict[str, tuple[int, int, int, int]]:
        """path -> (id, size, mtime_ns, generated)"""
        return {p: (i, s, m, g) for i, p, s, m, g in
                self.conn.execute("SELECT id, path, size, mtime_ns, generated FROM files")}

    def file_status_counts(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT status, count(*) FROM files GROUP BY status"))

    def delete_files(self, ids: Iterable[int]) -> None:
        ids = list(ids)
        self.conn.executemany("DELETE FROM facts WHERE file = ?", [(i,) for i in ids])
        self.conn.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in ids])

    def add_file(self, path: str, language: str, size: int, mtime_ns: int, status: str, generated: bool,
                 facts: list[tuple], include_paths: set[str] | frozenset[str] | None = None,
                 ids: list[int] | None = None) -> int:
        """The first fact id given (0 with ``ids``). ``facts``: tuples (kind, name, qual, line, end_line, namespace, local_scope, arg, detail, via,
        cond, targs)
        where local_scope indexes this same list (or -1). With ``include_paths`` (the paths of every
        file of the index), each ``#include`` is stored resolved as ``resolve_includes`` would.
        ``ids``: each fact's id (its local scope's too), where the caller places them (exactfirst.py's
        Note [A file's definitions first]); else the next ids after every fact's."""
        if include_paths is not None:
            facts = [(*f[:7], include_target(path, f[1], include_paths), *f[8:]) if f[0] == "include" else f
                     for f in facts]
        cur = self.conn.execute(
            "INSERT INTO files(path, language, size, mtime_ns, status, generated) VALUES (?, ?, ?, ?, ?, ?)",
            (path, language, size, mtime_ns, status, int(generated)),
        )
        file_id = cur.lastrowid
        first = 0
        if ids is None:  # the build's: the next ids
            first = self.conn.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0] + 1
            rows = [(first + i, file_id, k, n, q, ln, el, ns, (first + sc) if sc >= 0 else None, a, d, v, c, t)
                    for i, (k, n, q, ln, el, ns, sc, a, d, v, c, t) in enumerate(facts)]
        else:
            rows = [(ids[i], file_id, k, n, q, ln, el, ns, ids[sc] if sc >= 0 else None, a, d, v, c, t)
                    for i, (k, n, q, ln, el, ns, sc, a, d, v, c, t) in enumerate(facts)]
        self._insert_facts(rows)
        return first

    # Note [A known file copied as a block] in factcache.py: a file whose facts are in the fact
    # cache is copied from it inside SQLite.
    def attach_facts(self, path: Path) -> None:
        """Attach the fact cache's file (factcache.py) as ``fc``; outside a transaction."""
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.conn.execute("ATTACH DATABASE ? AS fc", (str(path),))

    def detach_facts(self) -> None:
        self.conn.execute("DETACH DATABASE fc")

    def add_cached_file(self, path: str, language: str, size: int, mtime_ns: int, status: str, generated: bool,
                        entry: int, n: int, include_paths: set[str] | frozenset[str] | None = None,
                        key: str | None = None) -> tuple[dict[str, int], list[str]] | None:
        """``add_file`` with the ``n`` rows of the fact cache's entry ``entry`` (its id; attached by
        ``attach_facts``), copied by SQLite: ``(facts by kind, #include names)``; None, and
        nothing stored, when the entry no longer holds ``n`` rows or is no longer ``key``'s (another
        build rewrote the cache since this one's snapshot: ids are reused). CacheDamaged where a page
        of the cache cannot be read (build.build builds again without it)."""
        conn = self.conn
        file_id = conn.execute(
            "INSERT INTO files(path, language, size, mtime_ns, status, generated) VALUES (?, ?, ?, ?, ?, ?)",
            (path, language, size, mtime_ns, status, int(generated))).lastrowid
        first = conn.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0] + 1
        try:
            if key is not None and conn.execute("SELECT 1 FROM fc.entries WHERE id = ? AND key = ?",
                                                (entry, bytes.fromhex(key))).fetchone() is None:
                copied = -1
            else:
                copied = conn.execute(
                    "INSERT INTO facts(id, file, kind, name, qual, line, end_line, namespace, scope, arg, detail,"
                    " via_macro, cond, targs) SELECT :first + seq, :file, kind, name, qual, line, end_line, namespace,"
                    " CASE WHEN scope >= 0 THEN :first + scope END, arg, detail, via_macro, cond, targs"
                    " FROM fc.rows WHERE entry = :entry ORDER BY seq",
                    {"first": first, "file": file_id, "entry": entry}).rowcount
            if copied == n:
                includes = conn.execute("SELECT seq, name FROM fc.rows WHERE entry = ? AND kind = 'include'",
                                        (entry,)).fetchall()
                kinds = dict(conn.execute("SELECT kind, count(*) FROM fc.rows WHERE entry = ? GROUP BY kind", (entry,)))
        except sqlite3.DatabaseError as err:  # a damaged page: SQLite may have ended the build's
            raise CacheDamaged(str(err)) from err  # transaction, and this connection reads it no more
        if copied != n:
            conn.execute("DELETE FROM facts WHERE id >= ?", (first,))
            conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
            return None
        if include_paths is not None and includes:
            conn.executemany("UPDATE facts SET arg = ? WHERE id = ?",
                             [(include_target(path, name, include_paths), first + seq) for seq, name in includes])
        return kinds, [name for _seq, name in includes]

    def add_facts(self, path: str, facts: list[tuple], ids: list[int], new: list[int],
                  include_paths: set[str] | frozenset[str] | None = None) -> None:
        """The facts ``facts[i]`` for each ``i`` of ``new`` added to the file ``path`` already stored,
        with the ids ``ids`` (``facts`` and ``ids`` as ``add_file``'s; the others are stored already
        under their ids)."""
        file_id = self.conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()[0]
        rows = []
        for i in new:
            k, n, q, ln, el, ns, sc, a, d, v, c, t = facts[i]
            if include_paths is not None and k == "include":
                a = include_target(path, n, include_paths)
            rows.append((ids[i], file_id, k, n, q, ln, el, ns, ids[sc] if sc >= 0 else None, a, d, v, c, t))
        self._insert_facts(rows)

    def _insert_facts(self, rows: list[tuple]) -> None:
        self.conn.executemany(
            "INSERT INTO facts(id, file, kind, name, qual, line, end_line, namespace, scope, arg, detail, via_macro,"
            " cond, targs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def counts(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT kind, count(*) FROM facts GROUP BY kind"))

    # ---- operators ---------------------------------------------------------------------------
    def replace_operators(self, rows: list[tuple[str, str, int, str, str | None, str]],
                          dispatch: list[tuple[str, str, str, int, int]]) -> None:
        self.conn.execute("DELETE FROM operators")
        self.conn.execute("DELETE FROM dispatch")
        self.conn.executemany(
            "INSERT INTO operators(name, base, line, kind, delegate, record) VALUES (?, ?, ?, ?, ?, ?)", rows)
        self.conn.executemany(
            "INSERT INTO dispatch(operator, key, kernel, structured, explicit) VALUES (?, ?, ?, ?, ?)", dispatch
        )

    # ---- torch.compile facts (extract/inductor.py) ---------------------------------------------
    def replace_compile(self, rows: list[tuple]) -> None:
        """``rows``: ``CompileFact.to_row()`` tuples; the table's whole content."""
        self.conn.execute("DELETE FROM compile")
        self.conn.executemany("INSERT INTO compile(op, overload, role, symbol, file, line, via, registry, cond, seq)"
                              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def compile_facts(self, packet: str) -> list[CompileFact]:
        """The facts of aten packet ``packet`` and the implicit fallback's (op ''), in import order."""
        from atenmap.model_answers import CompileFact  # not on a chain's path (Note [Start-up budget])

        return [CompileFact(*r) for r in self.conn.execute(
            "SELECT op, overload, role, symbol, file, line, via, registry, cond, seq FROM compile "
            "WHERE op IN (?, '') ORDER BY seq", (packet,))]

    def drop_compile(self) -> None:
        """The compile table emptied and its ``compile_inputs`` stamp removed: the index lacks the
        tree's torch.compile facts (Note [torch.compile facts when asked] in build.py)."""
        self.conn.execute("DELETE FROM compile")
        self.conn.execute("DELETE FROM meta WHERE key = 'compile_inputs'")

    def compile_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM compile").fetchone()[0]

    def operator_records(self) -> Iterator[dict]:
        for (rec,) in self.conn.execute("SELECT record FROM operators ORDER BY line"):
            yield json.loads(rec)

    def operator_record(self, name: str) -> dict | None:
        row = self.conn.execute("SELECT record FROM operators WHERE name = ?", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    def operator_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM operators ORDER BY line")]

    def operator_bases(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT DISTINCT base FROM operators")}

    def delegating_to(self, name: str) -> list[str]:
        """Operators whose structured_delegate is ``name``."""
        return [r[0] for r in self.conn.execute("SELECT name FROM operators WHERE delegate = ? ORDER BY line", (name,))]

    def operators_by_base(self, base: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM operators WHERE base = ? ORDER BY line", (base,))]

    def kernel_names(self) -> set[str]:
        """Every kernel name the yaml's dispatch sections give (at::native functions, TORCH_IMPL_FUNCs)."""
        return {r[0] for r in self.conn.execute("SELECT DISTINCT kernel FROM dispatch")}

    def dispatch_keys(self) -> set[str]:
        """Every key some operator's yaml dispatch section names."""
        return {r[0] for r in self.conn.execute("SELECT DISTINCT key FROM dispatch")}

    def has_kernel(self, kernel: str) -> bool:
        """Whether ``kernel`` is in ``kernel_names()``, by the kernel index."""
        return self.conn.execute("SELECT EXISTS (SELECT 1 FROM dispatch WHERE kernel = ?)", (kernel,)).fetchone()[0] == 1

    def operators_with_kernel(self, kernel: str) -> list[tuple[str, str]]:
        return list(self.conn.execute("SELECT operator, key FROM dispatch WHERE kernel = ?", (kernel,)))

    def dispatch_rows(self) -> list[tuple[str, str, str]]:
        """Every ``(operator, key, kernel)`` of the yaml's dispatch sections, in table order."""
        return list(self.conn.execute("SELECT operator, key, kernel FROM dispatch"))

    def delegates(self) -> dict[str, str]:
        """Operator -> its structured_delegate, for those that have one."""
        return dict(self.conn.execute("SELECT name, delegate FROM operators WHERE delegate IS NOT NULL"))

    # ---- what the bundle quotes for functions passed by name (resolve/passed.py) ------------------
    def function_and_class_names(self) -> set[str]:
        """The names some ``function`` or ``class`` fact defines."""
        return {n for (n,) in self.conn.execute("SELECT DISTINCT name FROM facts WHERE kind IN ('function', 'class')")}

    def plain_calls_in_scopes(self) -> Iterator[tuple[int, str]]:
        """``(scope, name)`` of each unqualified call with no detail made inside a function."""
        return self.conn.execute("SELECT scope, name FROM facts WHERE kind = 'call' AND detail = '' "
                                 "AND qual = name AND scope IS NOT NULL")

    def function_places(self) -> Iterator[tuple[int, str, str, int]]:
        """``(fact id, name, path, line)`` of each ``function`` fact."""
        return self.conn.execute("SELECT f.id, f.name, fi.path, f.line FROM facts f JOIN files fi "
                                 "ON fi.id = f.file WHERE f.kind = 'function'")

    def call_places(self) -> Iterator[tuple[str, str, int]]:
        """``(name, path, line)`` of each ``call`` fact."""
        return self.conn.execute("SELECT f.name, fi.path, f.line FROM facts f JOIN files fi ON fi.id = f.file "
                                 "WHERE f.kind = 'call'")

    # ---- fact queries ------------------------------------------------------------------------
    def _rows(self, where: str, params: tuple) -> list[FactRow]:
        sql = f"SELECT {FACT_COLUMNS} FROM facts f JOIN files fi ON fi.id = f.file WHERE {where}"
        return [_fact_row(r) for r in self.conn.execute(sql, params)]

    def by_name(self, name: str, kinds: tuple[str, ...]) -> list[FactRow]:
        marks = ",".join("?" * len(kinds))
        return self._rows(f"f.name = ? AND f.kind IN ({marks}) ORDER BY fi.path, f.line", (name, *kinds))

    def by_name_qual(self, name: str, kinds: tuple[str, ...], suffix: str,
                     also_containing: list[str] | tuple[str, ...] = ()) -> list[FactRow]:
        """``by_name``'s rows whose ``"::" + qual`` ends with ``suffix``, or that name one of the
        namespaces ``also_containing`` and hold the suffix's innermost scope (``MulFunctor::`` of
        ``::at::native::MulFunctor::operator()``), for the caller to match without those namespaces;
        filtered in SQLite: ``operator()`` has 417 definitions in 2.6.0, of which a functor's call
        wants one, and 158 of them are in ``CPU_CAPABILITY`` or an unnamed namespace.
        (A qual that ends with ``suffix`` once those namespaces are dropped holds that scope.)"""
        marks = ",".join("?" * len(kinds))
        parts = suffix.split("::")
        scope = parts[-2] if len(parts) > 2 and parts[-2] else ""
        extra = ""
        params: tuple = ()
        if also_containing:
            extra = " OR (" + " OR ".join("instr(f.qual, ?) > 0" for _ in also_containing) + ")"
            params = tuple(f"{ns}::" for ns in also_containing)
            if scope:
                extra += " AND instr(f.qual, ?) > 0"
                params += (f"{scope}::",)
        return self._rows(f"f.name = ? AND f.kind IN ({marks}) AND (substr('::' || f.qual, -?) = ?{extra}) "
                          "ORDER BY fi.path, f.line", (name, *kinds, len(suffix), suffix, *params))

    def has_name(self, name: str, kinds: tuple[str, ...]) -> bool:
        """Whether a fact of ``kinds`` is named ``name``: ``bool(by_name(name, kinds))`` without the rows."""
        marks = ",".join("?" * len(kinds))
        return self.conn.execute(f"SELECT EXISTS (SELECT 1 FROM facts WHERE name = ? AND kind IN ({marks}))",
                                 (name, *kinds)).fetchone()[0] == 1

    def in_scope(self, scope_id: int, kinds: tuple[str, ...]) -> list[FactRow]:
        marks = ",".join("?" * len(kinds))
        return self._rows(f"f.scope = ? AND f.kind IN ({marks}) ORDER BY f.line, f.id", (scope_id, *kinds))

    def in_file(self, path: str, kinds: tuple[str, ...]) -> list[FactRow]:
        marks = ",".join("?" * len(kinds))
        return self._rows(f"fi.path = ? AND f.kind IN ({marks}) ORDER BY f.line", (path, *kinds))

    def function_spans(self, path: str) -> list[tuple[int, int]]:
        """(first, last line) of each function defined in ``path`` (the runs block reads only the
        function around a call: resolve/runs.py)."""
        return list(self.conn.execute(
            "SELECT f.line, f.end_line FROM facts f JOIN files fi ON fi.id = f.file "
            "WHERE fi.path = ? AND f.kind IN ('function', 'impl_func', 'meta_func') AND f.end_line >= f.line", (path,)))

    def by_id(self, fact_id: int) -> FactRow | None:
        rows = self._rows("f.id = ?", (fact_id,))
        return rows[0] if rows else None

    def resolve_includes(self) -> None:
        """Turn each ``#include`` into the indexed file it names (in ``arg``), where there is one
        (``include_target``), for every file of the index."""
        paths = {r[0] for r in self.conn.execute("SELECT path FROM files")}
        updates = [(include_target(src, name, paths), fid) for fid, src, name in self.conn.execute(
            "SELECT f.id, fi.path, f.name FROM facts f JOIN files fi ON fi.id = f.file WHERE f.kind = 'include'")]
        self.conn.execute("BEGIN")
        self.conn.executemany("UPDATE facts SET arg = ? WHERE id = ?", updates)
        self.conn.execute("COMMIT")

    def includes_of(self, path: str) -> list[tuple[str, str]]:
        """(included file, preprocessor condition) of each resolved #include of ``path``."""
        return list(self.conn.execute(
            "SELECT f.arg, f.cond FROM files fi JOIN facts f ON f.file = fi.id "
            "WHERE fi.path = ? AND f.kind = 'include' AND f.arg != '' ORDER BY f.id", (path,)))

    def includes_of_files(self, paths: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """``includes_of`` of each of ``paths`` (every one a key), in a query per 500 files: an
        include walk asks for a whole frontier of files at once."""
        paths = list(dict.fromkeys(paths))
        out: dict[str, list[tuple[str, str]]] = {p: [] for p in paths}
        for i in range(0, len(paths), 500):
            part = paths[i:i + 500]
            for src, dst, cond in self.conn.execute(
                    "SELECT fi.path, f.arg, f.cond FROM files fi JOIN facts f ON f.file = fi.id "
                    f"WHERE fi.path IN ({','.join('?' * len(part))}) AND f.kind = 'include' AND f.arg != '' "
                    "ORDER BY f.id", part):
                out[src].append((dst, cond))
        return out

    def include_graph(self) -> dict[str, list[str]]:
        """includer path -> indexed files it includes."""
        out: dict[str, list[str]] = {}
        for src, dst in self.conn.execute(
                "SELECT fi.path, f.arg FROM facts f JOIN files fi ON fi.id = f.file "
                "WHERE f.kind = 'include' AND f.arg != ''"):
            out.setdefault(src, []).append(dst)
        return out

    # ---- reverse lookups (kernels.py) -------------------------------------------------------
    def callers(self, name: str, by_qual: bool = False) -> list[tuple[FactRow, FactRow | None]]:
        """``(call fact, enclosing function fact)`` for each call of ``name`` (or, with ``by_qual``,
        whose qualified callee ends with ``name``)."""
        if by_qual:
            calls = self._rows("f.kind = 'call' AND f.name = ? AND f.qual LIKE ?",
                               (name.rsplit("::", 1)[-1], "%" + name))
        else:
            calls = self._rows("f.kind = 'call' AND f.name = ?", (name,))
        ids = {c.scope for c in calls if c.scope}
        scopes = {r.id: r for r in self._rows(f"f.id IN ({','.join('?' * len(ids))})", tuple(ids))} if ids else {}
        return [(c, scopes.get(c.scope)) for c in calls]

    def call_targs(self) -> list[tuple[int, str]]:
        """(fact id, template arguments) of every call written with explicit template arguments
        (``uniform_impl_<UniformStub, Generator>(...)``); ~21,000 on PyTorch 2.6."""
        return self.conn.execute("SELECT id, targs FROM facts WHERE kind = 'call' AND targs != ''").fetchall()

    def stub_names(self) -> frozenset[str]:
        """Names declared or registered as DispatchStubs. (The planner may prefer the name index for
        this DISTINCT, which scans it whole: 20 ms; the kind index answers in 2-3 ms, reading each
        row; facts_stub, the names of these kinds alone, in 1 ms.)"""
        return frozenset(r[0] for r in self.conn.execute(
            "SELECT DISTINCT name FROM facts INDEXED BY facts_stub "
            "WHERE kind IN ('declare_dispatch', 'register_dispatch')"))

    def facts_of_kind(self, kind: str) -> list[FactRow]:
        return self._rows("f.kind = ?", (kind,))

    def torch_impls_of(self, wrapper: str, file: str) -> list[FactRow]:
        return self._rows("f.kind = 'torch_impl' AND fi.path = ? AND f.arg LIKE ?", (file, f"%{wrapper}%"))

    def calls_matching(self, patterns: tuple[str, ...]) -> list[FactRow]:
        """Calls whose qualified callee matches any SQL LIKE pattern."""
        if not patterns:
            return []
        where = " OR ".join("f.qual LIKE ?" for _ in patterns)
        return self._rows(f"f.kind = 'call' AND ({where}) ORDER BY fi.path, f.line", tuple(patterns))

    def in_file_like(self, path: str, kinds: tuple[str, ...]) -> list[FactRow]:
        """Facts of files whose path is ``path`` or ends with ``/path``."""
        marks = ",".join("?" * len(kinds))
        return self._rows(f"(fi.path = ? OR fi.path LIKE ?) AND f.kind IN ({marks}) ORDER BY fi.path, f.line",
                          (path, "%/" + path.lstrip("/"), *kinds))

    def names_like(self, kinds: tuple[str, ...]) -> list[str]:
        marks = ",".join("?" * len(kinds))
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT name FROM facts WHERE kind IN ({marks})", kinds)]

    # ---- views: completion and search (atenmap.views) ----------------------------------------
    def operator_names_starting(self, prefix: str, limit: int = 2000) -> list[str]:
        """Operator names starting with ``prefix`` (case-sensitive), in name order."""
        esc = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return [r[0] for r in self.conn.execute(
            "SELECT name FROM operators WHERE name LIKE ? ESCAPE '\\' AND substr(name, 1, ?) = ? ORDER BY name LIMIT ?",
            (esc + "%", len(prefix), prefix, limit))]

    def search_operators(self, like: str, key: str | None = None) -> list[tuple[str, str, str | None]]:
        """(name, record JSON, delegate record JSON or None) of operators whose name, or a kernel
        name in their (or their structured_delegate's) dispatch table, for ``key`` only when given,
        matches the LIKE pattern ``like`` (escape ``\\``); with ``key``, only operators with a
        kernel for that key, their own or their delegate's."""
        on_key = " AND d.key = ?" if key else ""
        has_key = (" AND EXISTS (SELECT 1 FROM dispatch k WHERE k.operator IN (o.name, o.delegate) AND k.key = ?)"
                   if key else "")
        sql = (f"SELECT o.name, o.record, g.record FROM operators o LEFT JOIN operators g ON g.name = o.delegate "
               f"WHERE (o.name LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM dispatch d WHERE d.operator IN "
               f"(o.name, o.delegate) AND d.kernel LIKE ? ESCAPE '\\'{on_key})){has_key}")
        params = (like, like, key, key) if key else (like, like)
        return list(self.conn.execute(sql, params))

    def search_facts(self, like: str, kinds: tuple[str, ...]) -> list[FactRow]:
        """Facts of ``kinds`` whose name matches ``like``, plus register_dispatch facts whose
        kernel (``arg``) matches it (when that kind is asked for)."""
        marks = ",".join("?" * len(kinds))
        return self._rows(f"f.kind IN ({marks}) AND (f.name LIKE ? ESCAPE '\\' OR "
                          "(f.kind = 'register_dispatch' AND f.arg LIKE ? ESCAPE '\\')) ORDER BY fi.path, f.line",
                          (*kinds, like, like))
