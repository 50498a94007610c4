"""The SQL of the answers ``atenmap trace`` keeps beside an index (trace/chaincache.py, Note [Chains
kept beside the index]): three tables of JSON text (``chains`` by (op, key), ``kernels`` and
``nodes`` by name) and a ``valid`` token in ``meta``; a different token empties them. Every
SQLite error is answered as "not kept" (None, False): a read-only or busy folder keeps nothing and
changes no answer."""
from __future__ import annotations

import sqlite3
from pathlib import Path

_TABLES = {"chains": ("op", "key"), "kernels": ("name",), "nodes": ("name",)}


class KeptTables:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    @classmethod
    def open(cls, path: Path, valid: str) -> "KeptTables | None":
        """The tables in the file at ``path``, emptied unless they were kept under ``valid``; None
        when the file cannot be opened or written."""
        try:
            conn = sqlite3.connect(path, timeout=2.0, isolation_level=None)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS chains (op TEXT, key TEXT, v TEXT, PRIMARY KEY (op, key))")
            conn.execute("CREATE TABLE IF NOT EXISTS kernels (name TEXT PRIMARY KEY, v TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, v TEXT)")
            row = conn.execute("SELECT v FROM meta WHERE k = 'valid'").fetchone()
            if row is None or row[0] != valid:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM chains")
                conn.execute("DELETE FROM kernels")
                conn.execute("DELETE FROM nodes")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('valid', ?)", (valid,))
                conn.execute("COMMIT")
        except sqlite3.Error:
            return None
        return cls(conn)

    def get(self, table: str, *key: str) -> str | None:
        """The text kept in ``table`` under ``key``, or None (not kept, or unreadable now)."""
        where = " AND ".join(f"{c} = ?" for c in _TABLES[table])
        try:
            row = self._conn.execute(f"SELECT v FROM {table} WHERE {where}", key).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else row[0]

    def put(self, table: str, *key_and_text: str) -> bool:
        """Keep the text (the last argument) under the key (the others); False when it could not be
        written (busy or read-only: it is made again next time)."""
        marks = ", ".join("?" * len(key_and_text))
        try:
            self._conn.execute(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", key_and_text)
        except sqlite3.Error:
            return False
        return True

    def close(self) -> None:
        self._conn.close()
