"""A recorded trace read in bounded memory: its events spilled to a temporary SQLite file, then
walked in order. No torch. ``atenmap kernel --from-trace`` reads with this.

Note [A trace larger than memory]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``tracefile.read_recording`` keeps every op, Python frame and device event of a file until the
join (about 460 bytes per event: 473 MB for 10^6 events). Nesting host events needs them in time
order per thread, which Kineto does not promise, so they cannot be nested as they stream by.
Here the one streaming pass (the same ``TraceReader`` and the same per-event reading as
``_Collect``) writes each event as a row of a temporary SQLite file instead; SQLite then hands them
back sorted as ``nest`` sorts them ((thread, start, longest first), ties in file order) through an
index, so the walk holds only the events open at the current one (the nesting depth). Each op that
launched device work is assembled when the walk meets it, with the ``Assembler`` of a live trace,
its ancestors being exactly the open events; its device events come from an index on their
External id. What is kept is what the answer keeps: one stack per distinct stack, one chain per
(op, key), one entry per (kernel, op, place). The calls come in the order ``read_recording`` gives
them, so the answers, their order included, are the same (tests/test_trace_file.py).

Autograd's engine threads run backward ops with no Python frame: they take the stack of the
``run_backward`` call running when they start (``Assembler.backward_stack``). Those calls are few
(one per ``backward()``): a first walk over the threads that made them keeps their windows and
stacks. SQLite's page cache is capped (``CACHE_KB``); the file lives in the system's temporary
folder, about 100 bytes per event, and is removed at the end. A small trace is not written at all:
its rows are walked from memory (Note [A small trace held]), below a cap that bounds the memory.
"""
from __future__ import annotations

import bisect
import os
import stat
from dataclasses import dataclass, field
from typing import Callable, Iterator

from atenmap.errors import AtenmapError
from atenmap.store.eventspill import EventSpill
from atenmap.tempdirs import TempFolder
from atenmap.trace.assemble import _CPP_RANGE, Assembler, DeviceEvent, HostEvent, compiler_frame, is_op
from atenmap.trace.events import Call, Kernel
from atenmap.trace.tracefile import TraceReader, _Collect, reading, trace_user

CACHE_KB = 8 << 10
BATCH = 5000


@dataclass
class StreamedRecording:
    """What ``Joiner.iter_entries`` reads of a Recording, its calls and unattributed device work
    made as they are read (each once)."""

    calls: Iterator[Call]
    unattributed: Iterator[Kernel]
    notes: list[str] = field(default_factory=list)
    host: bool = False  # no device events: the calls are the host's aten ops (a CPU profile)
    torch_version: str = ""  # a chrome trace does not record it (Recording.torch_version: a live run's)


class _Spill(_Collect):
    """``_Collect``'s reading, each event a row of ``db`` instead of a tuple in a list."""

    def __init__(self, reader: TraceReader, db: EventSpill, hold: int = 0):
        super().__init__(reader)
        self.db = db
        self.seq = 0
        self.backward_threads: set[int] = set()
        self.hold = hold  # rows kept in memory before the first write (Note [A small trace held])
        self.spilled = False

    # Note [Events kept as rows]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Each event kept is made the row it is written as at once (``seq``: its place in the file,
    # the order of ties), not a HostEvent or DeviceEvent first: making the tuple and then taking
    # it apart again cost more than reading the event.
    def _keep_device(self, name, kind, dur, dev, ext, corr, start, proc) -> None:
        self.device.append((name, kind, dur, dev, ext, corr, start, self.seq, proc))
        self.seq += 1

    def _keep_py(self, fields, thread, start, end, proc) -> None:
        name = fields[0]
        if "run_backward" in name:
            self.backward_threads.add(thread)
        self.host.append((thread, start, end, self.seq, "py", name, 0, None, fields[1], fields[2], fields[3], proc))
        self.seq += 1

    def _keep_host(self, kind, name, thread, start, end, ext, types, proc) -> None:
        self.host.append((thread, start, end, self.seq, kind, name, ext, "\x1f".join(types) if types else None,
                          "", 0, "", proc))
        self.seq += 1

    def flush(self) -> None:
        """The events collected so far, written as rows."""
        db = self.db
        if self.device:
            db.add_rows("device", self.device)
            self.device.clear()
        if self.runtime:
            db.add_rows("runtime", [(proc, corr, ext) for (proc, corr), ext in self.runtime.items()])
            self.runtime.clear()
        if self.host:
            db.add_rows("host", self.host)
            self.host.clear()

    def add_all(self, events: list[dict]) -> None:
        super().add_all(events)
        n = len(self.host) + len(self.device)
        if n >= BATCH and (self.spilled or n + len(self.runtime) > self.hold):
            self.spilled = True
            self.flush()


# Note [A small trace held]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Writing each row to SQLite, indexing and reading it back sorted cost about a quarter of a small
# trace's read, for memory it did not need. So the rows are kept in memory up to ``HOLD`` of them
# (with the runtime entries; about 250 bytes each, an estimated 33 MB at the cap), and written only
# when a trace has more. A trace that ends below the cap, every device event with its External id, no id shared
# by two ops of a process and no device event of an unknown process (the ``plain`` case of Note
# [One query for the ops and their device events]) is walked from memory: ``_Held`` gives the rows
# the queries would, in their order and with their types (a duration is SQLite's REAL: a float).
# Any other trace is written out at its end and read back as ever; memory stays bounded by the cap.
# A file of more than ``HOLD_BYTES`` of JSON is written from its start (``small_file``): it would
# pass the cap anyway, and holding its first rows would only raise its peak.
HOLD = 1 << 17
HOLD_BYTES = 32 << 20


def small_file(path: str | os.PathLike) -> bool:
    """Is the trace at ``path`` a regular file of at most HOLD_BYTES of JSON? A gzip file's size is
    its trailer's (exact below 4 GB, which a file of under 4 MB always is: deflate packs at most
    1032:1; of the last member only, where there are several: then the row cap still bounds)."""
    if "\0" in str(os.fspath(path)):
        return False  # no file has that name: the reader says so (files.py, a NUL byte in the name)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return st.st_size <= HOLD_BYTES
            if not 18 <= st.st_size < 4 << 20:
                return False
            f.seek(-4, os.SEEK_END)
            return int.from_bytes(f.read(4), "little") <= HOLD_BYTES
    except OSError:
        return False


def _nest_order(row: tuple) -> tuple:
    return row[0], row[1], -row[2], row[3]  # host_rows' ORDER BY thread, start, stop DESC, seq


class _Held:
    """The rows of a small plain trace, read as ``EventSpill``'s queries read them."""

    def __init__(self, host: list[tuple], device: list[tuple]):
        host.sort(key=_nest_order)
        device.sort(key=lambda d: (d[6], d[7]))  # start, seq: each op's device events in this order
        self.host, self.device = host, device
        self.ops = {(r[11], r[6]) for r in host if r[4] == "op" and r[6] != 0}
        self.by_op: dict[tuple[int, int], list[tuple]] = {}
        for d in device:
            self.by_op.setdefault((d[8], d[4]), []).append((d[0], d[1], float(d[2]), d[3]))

    @staticmethod
    def of(col: "_Spill", procs: dict[int, int]) -> "_Held | None":
        """The collected rows held, each device event placed in its process (``procs``), where the
        trace is plain (Note [A small trace held]); else None."""
        if col.spilled or len(col.host) + len(col.device) + len(col.runtime) > col.hold or \
                col.seen["linked"] < col.seen["device"]:
            return None
        ops = [(r[11], r[6]) for r in col.host if r[4] == "op" and r[6] != 0]
        if len(set(ops)) < len(ops):
            return None
        device = [d[:8] + (procs.get(d[8], d[8]),) for d in col.device]
        if any(d[8] == -1 for d in device):
            return None
        return _Held(col.host, device)

    def event_count(self) -> int:
        return len(self.host) + len(self.device)

    def host_rows(self, threads: tuple[int, ...] | None = None) -> Iterator[tuple]:
        return iter(self.host) if threads is None else (r for r in self.host if r[0] in threads)

    def host_rows_with_device(self) -> Iterator[tuple]:
        """host_rows(), each with the list of its device events' ``(name, kind, dur, dev)`` (as
        ``_with_device`` makes of the joined query)."""
        by_op = self.by_op
        for r in self.host:
            found = by_op.get((r[11], r[6])) if r[4] == "op" and r[6] != 0 else None
            yield r + (found or [],)

    def unattributed_rows(self) -> Iterator[tuple]:
        ops = self.ops
        return ((d[0], d[1], float(d[2]), d[3], d[4]) for d in self.device if (d[8], d[4]) not in ops)


def _host_event(row, parent: int, split: dict) -> HostEvent:
    """``split``: the input types of each distinct column value, as a tuple (they repeat)."""
    thread, start, stop, _seq, kind, name, ext, types, file, line, function, proc = row[:12]
    if types is None:
        t = ()
    else:
        t = split.get(types)
        if t is None:
            t = tuple(types.split("\x1f"))  # input types: "\x1f" is in none
            if len(split) < 1 << 16:
                split[types] = t
    return HostEvent(kind, name, thread, start, stop, parent, ext, t, file, line, function, 0, "", proc)


class _Walk(Assembler):
    """The Assembler over the open events only: ``host`` maps a walk position to its event while it
    is open (its ancestors are all open; ``Assembler.stack`` memoises stacks by content)."""

    def __init__(self, windows: list | None = None):
        super().__init__({}, [], user=trace_user, host_calls=False)
        self._calls_in = {}  # a trace file records no caller lines
        self.windows = windows or []  # (start, end, frames) of the run_backward calls, by start
        self._starts = [w[0] for w in self.windows]

    def backward_stack(self, start_ns: int):
        """Assembler.backward_stack over the kept windows: the innermost run_backward call running
        at ``start_ns`` (the last one started before it that has not ended)."""
        k = bisect.bisect_right(self._starts, start_ns) - 1
        while k >= 0:
            s, end, frames = self.windows[k]
            if end >= start_ns:
                return frames, "torch.Tensor.backward"
            k -= 1
        return None


def _walk(rows: Iterator[tuple], windows: list | None = None) -> Iterator[tuple[_Walk, int, HostEvent, bool, tuple, bool]]:
    """Host events in nest() order with their ancestors open in ``w.host``: (walk, position,
    event, inside the compiler, its row, inside an aten op)."""
    w = _Walk(windows)
    host = w.host
    open_: list[tuple[int, bool, bool, int]] = []  # (position, compiling, in an aten op, end) of the open events, outermost first
    thread = None
    compiler: dict[tuple[str, str], bool] = {}  # (file, function) -> compiler_frame's answer
    split: dict[str, tuple] = {}
    for pos, row in enumerate(rows):
        if row[0] != thread:
            open_.clear()
            host.clear()
            thread = row[0]
        start = row[1]
        while open_ and open_[-1][3] <= start:
            del host[open_.pop()[0]]
        parent, comp, inside, _end = open_[-1] if open_ else (-1, False, False, 0)
        e = _host_event(row, parent, split)
        if e.kind == "py":
            if not comp:
                hit = compiler.get((e.file, e.function))
                if hit is None:
                    hit = compiler[(e.file, e.function)] = compiler_frame(e)
                comp = hit
            host[pos] = e
            open_.append((pos, comp, inside, e.end_ns))
        else:
            host[pos] = e
            open_.append((pos, comp, inside or (e.kind == "op" and is_op(e.name)), e.end_ns))
        yield w, pos, e, comp, row, inside


def _with_device(rows: Iterator[tuple]) -> Iterator[tuple]:
    """``EventSpill.host_rows_with_device``'s rows, one per host event: its 12 columns and the list of
    its device events' ``(name, kind, dur, dev)`` in (start, seq) order, as ``device_rows`` gives them
    (Note [One query for the ops and their device events]). A host event's rows are consecutive
    (its ``seq`` is its own)."""
    last, found = None, []
    for r in rows:
        if last is not None and r[3] == last[3]:
            found.append(r[12:])
            continue
        if last is not None:
            yield last[:12] + (_in_order(found),)
        last, found = r, ([r[12:]] if r[12] is not None else [])
    if last is not None:
        yield last[:12] + (_in_order(found),)


def _in_order(found: list[tuple]) -> list[tuple]:
    if len(found) > 1:
        found.sort(key=lambda d: (d[4], d[5]))
    return [d[:4] for d in found]


def stream_recording(path: str | os.PathLike, progress: Callable[[int, int], None] | None = None,
                     folder: str | None = None, hold: int = HOLD):
    """A context manager: the chrome trace at ``path`` as a ``StreamedRecording`` read in bounded
    memory (Note [A trace larger than memory]); raises AtenmapError only when nothing of it can be
    read. The calls are made as they are iterated, inside the ``with``. ``hold``: up to this many
    rows are kept in memory, not written (Note [A small trace held]; 0: every trace written)."""
    return _Stream(path, progress, folder, hold)


class _Stream:
    def __init__(self, path, progress, folder, hold=HOLD):
        self.path, self.progress, self.folder, self.hold = path, progress, folder, hold
        self._dir = None
        self.db = None
        self.rows = None  # the EventSpill, or the _Held rows of a small trace: what the walk reads

    def __enter__(self) -> StreamedRecording:
        self._dir = TempFolder("atenmap-trace-", dir=self.folder)  # Note [Temporary folders of killed runs]
        try:
            return self._read()
        except BaseException:  # __exit__ is not called when __enter__ raises: the folder goes now
            self.__exit__()
            raise

    def _read(self) -> StreamedRecording:
        db = self.db = EventSpill(os.path.join(self._dir.path, "events.sqlite"), CACHE_KB)
        reader = TraceReader(self.path, self.progress)
        col = _Spill(reader, db, self.hold if small_file(self.path) else 0)
        db.begin()
        with reading():
            for batch in reader.batches():
                col.add_all(batch)
            procs = {p: col.device_proc(p) for p in col.pids.values()}
            self.rows = _Held.of(col, procs)
            if self.rows is None:
                col.flush()
        db.commit()
        n = (self.rows if self.rows is not None else db).event_count()
        if not n and not reader.meta:
            raise AtenmapError(f"{self.path}: not a readable chrome trace (no events)")
        if self.rows is None:
            self._in_sql(col, procs)
        notes = col.notes()
        if "schemaVersion" not in reader.meta:
            notes.append("no schemaVersion: not written by torch.profiler's export_chrome_trace; read as Kineto JSON")
        self._backward = sorted(col.backward_threads)
        self._host = not col.seen["device"]  # a CPU profile: its ops are the calls
        return StreamedRecording(self._calls(), self._unattributed(), notes, self._host)

    def _in_sql(self, col: _Spill, procs: dict[int, int]) -> None:
        db = self.rows = self.db
        db.place_device(procs)
        if col.seen["linked"] < col.seen["device"]:  # _Collect.linked_device, in SQL
            db.link_by_correlation()
        db.index()

    def __exit__(self, *exc) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def _kernels(self, row: tuple) -> list[Kernel]:
        found = row[12] if len(row) > 12 else self.db.device_rows(row)  # _with_device's rows carry theirs
        return [Kernel(name, dur, dev, kind, row[6]) for name, kind, dur, dev in found]

    def _calls(self) -> Iterator[Call]:
        windows = []  # (start, end, frames) of the run_backward calls: Assembler.backward_stack's
        if self._backward:
            for w, pos, e, _comp, _row, _in in _walk(self.rows.host_rows(tuple(self._backward))):
                if e.kind == "py" and "run_backward" in e.name:
                    windows.append((e.start_ns, e.end_ns, w.stack(w.python_chain(pos) + (pos,))[0]))
        windows.sort(key=lambda x: (x[0], x[1]))
        index, threads = 0, {}
        if self.rows is not self.db:  # _Held: plain, its rows carry their device events
            rows = self.rows.host_rows_with_device()
        else:
            rows = _with_device(self.db.host_rows_with_device()) if self.db.plain() else self.db.host_rows()
        for w, pos, e, comp, row, inside in _walk(rows, windows):
            if e.kind != "op" or comp:
                continue
            kernels = self._kernels(row) if e.correlation and not self._host else []
            # Assembler.is_call, with no composite ops known: on the host, the aten ops no aten op encloses
            if not (kernels or _CPP_RANGE.match(e.name) or (self._host and not inside and is_op(e.name))):
                continue
            yield w.call(pos, index, kernels, threads, w.python_chain(pos))
            index += 1

    def _unattributed(self) -> Iterator[Kernel]:
        for name, kind, dur, dev, ext in self.rows.unattributed_rows():
            yield Kernel(name, dur, dev, kind, ext)

