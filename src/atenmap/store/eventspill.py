"""The SQL of a recorded trace spilled to a temporary SQLite file (trace/spill.py, Note [A trace
larger than memory]): three tables (``ops``: the op events with an External id, ``device``,
``runtime``) written in batches, then read back through indexes: each op's device events. The
host events' nesting order is not SQL's (spill.py, Note [Host rows as sorted runs]). Journal and
sync off: the file is thrown away at the end."""
from __future__ import annotations

import sqlite3
from typing import Iterator

OPS_COLUMNS = "thread, start, stop, seq, proc, ext"  # an op event with an External id: what the join of its device events reads


def spill_db(path: str, cache_kb: int) -> sqlite3.Connection:
    """A temporary SQLite file of a trace's rows: no journal, no syncs (it is thrown away after the
    run), ``cache_kb`` of page cache, its sorts on disk."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute(f"PRAGMA cache_size=-{cache_kb}")
    db.execute("PRAGMA temp_store=FILE")
    return db


class EventSpill:
    def __init__(self, path: str, cache_kb: int):
        db = self._db = spill_db(path, cache_kb)
        db.execute(f"CREATE TABLE ops ({OPS_COLUMNS.replace(',', ' INT,')} INT)")
        db.execute("CREATE TABLE device (name TEXT, kind TEXT, dur REAL, dev INT, ext INT, corr INT, start INT, seq INT, "
                   "proc INT)")
        db.execute("CREATE TABLE runtime (proc INT, corr INT, ext INT)")  # the latest row of a (proc, corr) counts
        self._plain: bool | None = None  # see device_rows

    def begin(self) -> None:
        self._db.execute("BEGIN")

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def add_rows(self, table: str, rows: list[tuple]) -> None:
        """Rows of ``table`` (ops, device or runtime); of the runtime rows of a (process,
        correlation) the last one written counts (``link_by_correlation``): appended, not looked
        up as they come (a key on them cost a sixth of the writing)."""
        marks = ",".join("?" * len(rows[0]))
        self._db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)

    def device_count(self) -> int:
        return self._db.execute("SELECT count(*) FROM device").fetchone()[0]

    def place_device(self, procs: dict[int, int]) -> None:
        """Each device event's process: ``procs`` maps the pids its rows carry to host processes (or
        -1, any); a pid not in it stays as it is (Note [External ids are per process])."""
        self._db.executemany("UPDATE device SET proc = ? WHERE proc = ?", [(v, k) for k, v in procs.items() if k != v])

    def link_by_correlation(self) -> None:
        """A device event with no External id takes its runtime event's, of its own process or of any
        where that is not known (``_Collect.linked_device``)."""
        self._db.execute("CREATE INDEX runtime_corr ON runtime (corr, proc)")
        self._db.execute("UPDATE device SET ext = coalesce((SELECT r.ext FROM runtime r WHERE r.corr = device.corr "
                         "AND (r.proc = device.proc OR device.proc = -1) ORDER BY r.proc, r.rowid DESC LIMIT 1), 0) "
                         "WHERE ext = 0")

    def index(self) -> None:
        """The indexes the reads below walk; made once every row is in."""
        self._db.execute("CREATE INDEX device_ext ON device (proc, ext, start, seq)")
        self._db.execute("CREATE INDEX ops_ext ON ops (proc, ext, thread, start, stop DESC, seq)")
        self._db.execute("CREATE INDEX ops_order ON ops (thread, start, stop DESC, seq, proc, ext)")

    def plain(self) -> bool:
        """No External id shared by two ops of a process, no device event of no known process: each
        op's device events are those of its (process, External id), one query for all
        (``op_device_rows``)."""
        if self._plain is None:
            db = self._db
            self._plain = not (db.execute("SELECT 1 FROM ops GROUP BY proc, ext HAVING count(*) > 1 LIMIT 1").fetchone()
                               or db.execute("SELECT 1 FROM device WHERE proc = -1 LIMIT 1").fetchone())
            if not self._plain:  # device_rows' and unattributed_rows' lookups of an id in any process
                db.execute("CREATE INDEX ops_id ON ops (ext, thread, start, stop DESC, seq)")
        return self._plain

    # Note [One query for the ops and their device events]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Asking for each op's device events apart (``device_rows``) was one SQLite query per op: a
    # fifth of ``kernel --from-trace``'s time. Where the file is plain (``plain``) the ops' device
    # rows come from one query in the host rows' order (``op_device_rows``), each with its op's ``seq``,
    # read beside the host rows (spill._Merged): SQLite walks ops_order and looks each op up in
    # device_ext, so nothing of the size of the trace is held. A LEFT JOIN of the two, one row per
    # host event with the device columns beside it, cost a tuple of 18 columns per Python frame
    # event that has none. An op's device rows carry their (start, seq), by which the reader puts
    # them in the order ``device_rows`` gives (an ORDER BY on them made SQLite sort each op's few
    # rows apart, slower).
    def op_device_rows(self) -> Iterator[tuple]:
        """``(op seq, name, kind, dur, dev, start, seq)`` of each device event of an op (External id
        not 0) of its process, the ops in the host rows' order; only where ``plain()``."""
        return self._db.execute("SELECT h.seq, d.name, d.kind, d.dur, d.dev, d.start, d.seq FROM ops h INDEXED BY ops_order "
                                "JOIN device d ON d.proc = h.proc AND d.ext = h.ext "
                                "ORDER BY h.thread, h.start, h.stop DESC, h.seq")

    def device_rows(self, row: tuple) -> list[tuple]:
        """``(name, kind, dur, dev)`` of the device events the op of host ``row`` (spill.py's host
        row: thread, start, stop, seq, kind, name, ext, types, proc) issued, in time
        order: those of its process and External id if it is the first op of that pair in nesting
        order, and those of no known process with that id if it is the first op of the id in any
        (Note [External ids are per process])."""
        thread, start, stop, seq, ext, proc = row[0], row[1], row[2], row[3], row[6], row[8]
        db, out = self._db, []
        if self.plain():  # no id shared by two ops, no device event of no known process: one query
            return list(db.execute("SELECT name, kind, dur, dev FROM device WHERE proc = ? AND ext = ? "
                                   "ORDER BY start, seq", (proc, ext)))
        first = ("SELECT 1 FROM ops INDEXED BY {} WHERE ext = ? {} AND "
                 "(thread < ? OR (thread = ? AND (start < ? OR (start = ? AND (stop > ? OR (stop = ? AND seq < ?)))))) "
                 "LIMIT 1")
        later = (thread, thread, start, start, stop, stop, seq)
        if (db.execute("SELECT 1 FROM device WHERE proc = ? AND ext = ? LIMIT 1", (proc, ext)).fetchone()
                and not db.execute(first.format("ops_ext", "AND proc = ?"), (ext, proc) + later).fetchone()):
            out += db.execute("SELECT name, kind, dur, dev, start, seq FROM device WHERE proc = ? AND ext = ?", (proc, ext))
        if (db.execute("SELECT 1 FROM device WHERE proc = -1 AND ext = ? LIMIT 1", (ext,)).fetchone()
                and not db.execute(first.format("ops_id", ""), (ext,) + later).fetchone()):
            out += db.execute("SELECT name, kind, dur, dev, start, seq FROM device WHERE proc = -1 AND ext = ?", (ext,))
        out.sort(key=lambda r: (r[4], r[5]))
        return [r[:4] for r in out]

    def unattributed_rows(self) -> Iterator[tuple]:
        """``(name, kind, dur, dev, ext)`` of the device events no op event claims, in time order."""
        claimed = "h.proc = d.proc" if self.plain() else "(h.proc = d.proc OR d.proc = -1)"  # plain: no proc -1
        return self._db.execute("SELECT name, kind, dur, dev, ext FROM device d WHERE NOT EXISTS "
                                "(SELECT 1 FROM ops h WHERE h.ext = d.ext "
                                f"AND {claimed}) ORDER BY start, seq")

    def close(self) -> None:
        self._db.close()
