"""The SQL of a chrome trace's annotations kept on disk while the trace is written back
(trace/chrome.py, Note [The annotations of a long trace]): which call each op event's External id
belongs to, each call's args and whose kernel args it takes, each (call, kernel name)'s kernel
args; written in batches while the trace is read, then looked up a block of ids at a time while it
is written. The args themselves are numbers here (the caller keeps each distinct one once).
Journal and sync off: the file is thrown away at the end."""
from __future__ import annotations

from collections import OrderedDict

from atenmap.store.eventspill import spill_db

BATCH = 5000
BLOCK = 2048  # ids (External ids, call numbers) per block read back
BLOCKS = 32  # blocks held, the least recently used dropped first
SCATTERED = 64  # blocks read, past which a table whose blocks serve fewer than HITS lookups each is read an id at a time
HITS = 16


class AnnotationSpill:
    def __init__(self, path: str, cache_kb: int):
        db = self._db = spill_db(path, cache_kb)
        db.execute("CREATE TABLE ext (ext INT, proc INT, call INT, PRIMARY KEY (ext, proc)) WITHOUT ROWID")  # the last row of an id counts
        db.execute("CREATE TABLE calls (call INTEGER PRIMARY KEY, corr INT, args INT, sites INT)")
        db.execute("CREATE TABLE sites (call INT, name TEXT, site INT, PRIMARY KEY (call, name)) WITHOUT ROWID")
        db.execute("BEGIN")
        self._pending: dict[str, list] = {"ext": [], "calls": [], "sites": []}
        self._blocks: dict[str, OrderedDict] = {"ext": OrderedDict(), "sites": OrderedDict()}
        self._width = {"ext": BLOCK, "sites": BLOCK}
        self._reads = {"ext": [0, 0], "sites": [0, 0]}  # blocks read, lookups they served

    def add(self, table: str, row: tuple) -> None:
        """A row of ``ext`` (External id, its process, call: a later one of an id in a process
        replaces it), ``calls`` (call,
        its own External id, its args' number, the call whose kernel args it takes) or ``sites``
        (call, kernel name, its args' number: the first of a pair counts)."""
        rows = self._pending[table]
        rows.append(row)
        if len(rows) >= BATCH:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows = self._pending[table]
        if rows:
            how = "OR IGNORE" if table == "sites" else "OR REPLACE"
            self._db.executemany(f"INSERT {how} INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
            rows.clear()

    def finish(self) -> None:
        """Every row written: the lookups below may start."""
        for table in self._pending:
            self._flush(table)
        self._db.execute("COMMIT")

    def by_ext(self, ext: int, proc: int | None = None) -> tuple | None:
        """(call, its own External id, args' number, the call whose kernel args it takes) of the op
        External id ``ext`` of process ``proc`` (None: not known, the lowest process's), or None (no
        call's, or a call with no args)."""
        got = self._block("ext", ext, "SELECT e.ext, e.proc, e.call, c.corr, c.args, c.sites FROM ext e "
                          "JOIN calls c ON c.call = e.call WHERE e.ext BETWEEN ? AND ?", multi=True)
        if not got:
            return None
        return got[min(got)] if proc is None else got.get(proc)

    def by_call(self, call: int) -> tuple | None:
        """(call, its own External id, args' number, the call whose kernel args it takes), or None."""
        return self._db.execute("SELECT call, corr, args, sites FROM calls WHERE call = ?", (call,)).fetchone()

    def site(self, call: int, name: str) -> int | None:
        """The kernel args' number of ``name`` launched by ``call``, or None."""
        got = self._block("sites", call, "SELECT call, name, site FROM sites WHERE call BETWEEN ? AND ?", multi=True)
        return got.get(name) if got is not None else None

    def _block(self, table: str, key: int, sql: str, multi: bool = False):
        """The row of ``key`` from the block of ``BLOCK`` keys around it (read once, kept among the
        last ``BLOCKS``): the ids of a trace come in nearly increasing order, a block serves many.
        Where they do not (past ``SCATTERED`` blocks read, fewer than ``HITS`` lookups served by
        each), the table's blocks are one id wide from then on: a lookup is one indexed query."""
        blocks, width, reads = self._blocks[table], self._width[table], self._reads[table]
        b = key // width
        rows = blocks.get(b)
        reads[1] += 1
        if rows is None:
            reads[0] += 1
            if width > 1 and reads[0] > SCATTERED and reads[1] < HITS * reads[0]:
                self._width[table] = width = 1
                blocks.clear()
                b = key
            rows = {}
            for r in self._db.execute(sql, (b * width, b * width + width - 1)):
                if multi:  # key -> {second column: the rest}
                    rows.setdefault(r[0], {})[r[1]] = r[2] if len(r) == 3 else r[2:]
                else:
                    rows[r[0]] = r[1:]
            blocks[b] = rows
            if len(blocks) > BLOCKS:
                blocks.popitem(last=False)
        else:
            blocks.move_to_end(b)
        return rows.get(key)

    def close(self) -> None:
        self._db.close()
