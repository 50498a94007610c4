"""The join's chains and kernel look-ups kept beside the index, so that a trace resolves each (op,
key) and each kernel name once per index, not once per process. No torch.

Note [Chains kept beside the index]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A trace's join asks ``Index.chain`` for each distinct (overload, key) the run made, and keeps of
each chain only its summary (``staticchain.StaticChain``: native, stub, kernel, launch steps and the steps
before each launch). Resolving a chain is the resolver's walk of the kernel's callees, 0.05-0.35 s
per chain on the 2.6.0 tree: for a short script that is most of ``atenmap trace``'s time after the
run (docs/trace.md, "Overhead"), and a new process paid it again. So the summaries (and the notes
of an op with none) are written to ``trace-chains.sqlite`` beside ``index.sqlite``, one row per
(op, key), when first resolved, and read back by later traces, only for the pairs they meet. The
same goes for ``Index.kernel(name)`` (0.1-0.3 s per distinct kernel name of a CUDA trace): its
whole ``KernelMatch`` is kept, steps with their children, since ``--from-trace`` shows all of it
(a match whose steps carry ``why`` reasons, which a trace never asks for, is not kept). And
``Index.autograd_node(name)`` (the first reads derivatives.yaml: 0.1-0.2 s for a backward pass).

A row is valid for exactly one index file and one atenmap: the table's ``valid`` key is made of
the index's ``fresh_token`` (new at every build), the index file's size and mtime (a rebuild
replaces the file), the store's schema, this file's FORMAT, and the (path, size, mtime) of every
module of the atenmap package (the resolver, the join's summary, anything that shapes a chain: an
edit anywhere drops the rows). On open, a key that differs empties the table. The summary keeps
the steps' role, symbol, file, line, detail and ``generated``, never their children: a trace reads
nothing else of them. An index folder that cannot be written (a read-only bundle) only loses the
cache: the join resolves as before. Concurrent traces may both write a row; the rows are equal.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

from atenmap.model import Location, Role, Step
from atenmap.store.kept import KeptTables

FORMAT = "1"
FILE_NAME = "trace-chains.sqlite"
_CODE_KEY: str | None = None


def code_key() -> str:
    """A digest of the (path, size, mtime) of every .py file of the atenmap package; once per process."""
    global _CODE_KEY
    if _CODE_KEY is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.blake2b(digest_size=16)
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(folder, f))
                    h.update(f"{os.path.relpath(os.path.join(folder, f), root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _CODE_KEY = h.hexdigest()
    return _CODE_KEY


class ChainCache:
    """``get``/``put`` of the join's (StaticChain | None, notes) per (op, key) for one index file.
    ``hits`` and ``stored`` count what this object served and wrote."""

    def __init__(self, tables: KeptTables | None):
        self._tables = tables
        self.hits = 0
        self.stored = 0

    @classmethod
    def open(cls, index) -> "ChainCache":
        """The cache beside ``index``'s file; one that keeps nothing when it cannot be opened there."""
        store = index.store if index is not None else None
        path = store.path if store is not None else None
        if path is None:
            return cls(None)
        try:
            st = os.stat(path)
            valid = "|".join((FORMAT, store.meta().get("fresh_token", ""), str(st.st_size), str(st.st_mtime_ns),
                              store.meta().get("schema_version", ""), code_key()))
        except (OSError, sqlite3.Error):  # a read-only or busy folder: no cache, the same answers
            return cls(None)
        return cls(KeptTables.open(Path(path).with_name(FILE_NAME), valid))

    def _get(self, table: str, *key: str) -> tuple[bool, object]:
        """(kept, the JSON value kept)."""
        text = self._tables.get(table, *key) if self._tables is not None else None
        if text is None:
            return False, None
        self.hits += 1
        return True, json.loads(text)

    def _put(self, table: str, *key: str, data) -> None:
        if self._tables is not None and self._tables.put(table, *key, json.dumps(data)):
            self.stored += 1

    def get(self, op: str, key: str):
        """(StaticChain | None, notes) as ``Joiner._chain`` made it, or None when not kept."""
        kept, d = self._get("chains", op, key)
        return decode(d) if kept else None

    def put(self, op: str, key: str, value) -> None:
        if self._tables is not None:
            self._put("chains", op, key, data=encode(value))

    def get_kernel(self, name: str):
        """``Index.kernel(name)``'s KernelMatch as kept, or None when not kept."""
        kept, d = self._get("kernels", name)
        return decode_match(d) if kept else None

    def put_kernel(self, name: str, match) -> None:
        if self._tables is None:
            return
        data = encode_match(match)
        if data is not None:
            self._put("kernels", name, data=data)

    def get_node(self, name: str):
        """``(True, AutogradNode | None)`` as kept, ``(False, None)`` when not kept."""
        kept, d = self._get("nodes", name)
        return (True, decode_node(d)) if kept else (False, None)

    def put_node(self, name: str, node) -> None:
        if self._tables is not None:
            self._put("nodes", name, data=encode_node(node))

    def close(self) -> None:
        if self._tables is not None:
            self._tables.close()
            self._tables = None


def encode(value) -> dict:
    """(StaticChain | None, notes) -> JSON-ready dict; the steps once each, referred to by number."""
    chain, notes = value
    if chain is None:
        return {"chain": None, "notes": list(notes)}
    steps: list = []
    ids: dict[int, int] = {}

    def ref(s: Step | None):
        if s is None:
            return None
        n = ids.get(id(s))
        if n is None:
            n = ids[id(s)] = len(steps)
            steps.append([s.role.value, s.symbol, s.file, s.line, s.detail, s.generated])
        return n

    body = {"op": chain.op, "key": chain.key, "via": chain.via, "native": ref(chain.native), "stub": ref(chain.stub),
            "kernel": ref(chain.kernel), "launches": [ref(s) for s in chain.launches], "notes": list(chain.notes),
            "leads": [[f, ln, [ref(s) for s in hits]] for (f, ln), hits in chain.leads.items()]}
    return {"chain": body, "steps": steps, "notes": list(notes)}


def decode(d: dict):
    from atenmap.trace.staticchain import StaticChain

    body = d["chain"]
    if body is None:
        return None, list(d["notes"])
    steps = [Step(Role(r), sym, Location(f, ln) if f is not None and ln is not None else None, det, bool(gen))
             for r, sym, f, ln, det, gen in d["steps"]]

    def get(n):
        return None if n is None else steps[n]

    chain = StaticChain(body["op"], body["key"], body["via"], get(body["native"]), get(body["stub"]),
                        get(body["kernel"]), [steps[n] for n in body["launches"]], list(body["notes"]),
                        {(f, ln): [steps[n] for n in hits] for f, ln, hits in body["leads"]})
    return chain, list(d["notes"])


class _NotKept(Exception):
    """A value the kernel codec does not know: the match is not kept."""


def encode_match(match) -> dict | None:
    """A KernelMatch -> JSON-ready dict (every field, steps with their children), or None when it
    holds something the codec does not know (a ``why`` reason)."""
    import dataclasses

    try:
        return {f.name: _enc(getattr(match, f.name)) for f in dataclasses.fields(match)}
    except _NotKept:
        return None


def _enc(v):
    from atenmap.model_answers import OperatorHit

    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, Step):
        if v.why:
            raise _NotKept
        return {"$step": [v.role.value, v.symbol, v.file, v.line, v.loc is not None, v.detail, v.generated,
                          [_enc(c) for c in v.children]]}
    if isinstance(v, OperatorHit):
        return {"$hit": [v.op, v.key, _enc(v.step), v.reason]}
    if isinstance(v, tuple):
        return [_enc(x) for x in v]
    raise _NotKept


def decode_match(d: dict):
    from atenmap.model_answers import KernelMatch

    return KernelMatch(**{k: _dec(v) for k, v in d.items()})


def _dec(v):
    from atenmap.model_answers import OperatorHit

    if isinstance(v, list):
        return tuple(_dec(x) for x in v)
    if isinstance(v, dict):
        if "$step" in v:
            role, symbol, file, line, placed, detail, generated, children = v["$step"]
            return Step(Role(role), symbol, Location(file, line) if placed else None, detail, generated,
                        tuple(_dec(c) for c in children))
        op, key, step, reason = v["$hit"]
        return OperatorHit(op, key, _dec(step), reason)
    return v


def encode_node(node) -> dict:
    """An AutogradNode (or None: no such node) -> JSON-ready dict."""
    if node is None:
        return {"node": None}
    place = lambda loc: None if loc is None else [loc.file, loc.line]  # noqa: E731
    return {"node": [node.name, node.op, place(node.entry), place(node.apply)]}


def decode_node(d: dict):
    from atenmap.model_answers import AutogradNode

    if d["node"] is None:
        return None
    name, op, entry, apply = d["node"]
    return AutogradNode(name, op, None if entry is None else Location(*entry), None if apply is None else Location(*apply))
