"""The SQL of a recorded trace spilled to a temporary SQLite file (trace/spill.py, Note [A trace
larger than memory]): three tables (``host``, ``device``, ``runtime``) written in batches, then
read back sorted through indexes. Journal and sync off: the file is thrown away at the end."""
from __future__ import annotations

import sqlite3
from typing import Iterator

HOST_COLUMNS = "thread, start, stop, seq, kind, name, ext, types, file, line, function"


class EventSpill:
    def __init__(self, path: str, cache_kb: int):
        db = self._db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(f"PRAGMA cache_size=-{cache_kb}")
        db.execute("PRAGMA temp_store=FILE")
        db.execute("CREATE TABLE host (thread INT, start INT, stop INT, seq INT, kind TEXT, name TEXT, ext INT, "
                   "types TEXT, file TEXT, line INT, function TEXT)")
        db.execute("CREATE TABLE device (name TEXT, kind TEXT, dur REAL, dev INT, ext INT, corr INT, start INT, seq INT)")
        db.execute("CREATE TABLE runtime (corr INTEGER PRIMARY KEY, ext INT)")

    def begin(self) -> None:
        self._db.execute("BEGIN")

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def add_rows(self, table: str, rows: list[tuple]) -> None:
        """Rows of ``table`` (host, device or runtime); the last runtime row of a correlation wins."""
        marks = ",".join("?" * len(rows[0]))
        verb = "INSERT OR REPLACE" if table == "runtime" else "INSERT"
        self._db.executemany(f"{verb} INTO {table} VALUES ({marks})", rows)

    def event_count(self) -> int:
        return self._db.execute("SELECT (SELECT count(*) FROM host) + (SELECT count(*) FROM device)").fetchone()[0]

    def link_by_correlation(self) -> None:
        """A device event with no External id takes its runtime event's (``_Collect.linked_device``)."""
        self._db.execute("UPDATE device SET ext = coalesce((SELECT r.ext FROM runtime r WHERE r.corr = device.corr), 0) "
                         "WHERE ext = 0")

    def index(self) -> None:
        """The indexes the reads below walk; made once every row is in."""
        self._db.execute("CREATE INDEX host_order ON host (thread, start, stop DESC, seq)")
        self._db.execute("CREATE INDEX device_ext ON device (ext, start, seq)")
        self._db.execute("CREATE INDEX host_ext ON host (ext) WHERE kind = 'op' AND ext != 0")

    def host_rows(self, threads: tuple[int, ...] | None = None) -> Iterator[tuple]:
        """Host events (HOST_COLUMNS) by thread, start, longest first, then file order; only those
        of ``threads`` when given."""
        if threads is None:
            return self._db.execute(f"SELECT {HOST_COLUMNS} FROM host ORDER BY thread, start, stop DESC, seq")
        marks = ",".join("?" * len(threads))
        return self._db.execute(f"SELECT {HOST_COLUMNS} FROM host WHERE thread IN ({marks}) "
                                "ORDER BY thread, start, stop DESC, seq", threads)

    def device_rows(self, ext: int) -> list[tuple]:
        """``(name, kind, dur, dev)`` of the device events with External id ``ext``, in time order."""
        return list(self._db.execute("SELECT name, kind, dur, dev FROM device WHERE ext = ? ORDER BY start, seq", (ext,)))

    def unattributed_rows(self) -> Iterator[tuple]:
        """``(name, kind, dur, dev, ext)`` of the device events no op event claims, in time order."""
        return self._db.execute("SELECT name, kind, dur, dev, ext FROM device WHERE ext NOT IN "
                                "(SELECT ext FROM host WHERE kind = 'op' AND ext != 0) ORDER BY start, seq")

    def close(self) -> None:
        self._db.close()
