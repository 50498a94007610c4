"""A recorded trace read in bounded memory: its events spilled to a temporary SQLite file, then
walked in order. No torch. ``atenmap kernel --from-trace`` reads with this.

Note [A trace larger than memory]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``tracefile.read_recording`` keeps every op, Python frame and device event of a file until the
join (about 460 bytes per event: 473 MB for 10^6 events). Nesting host events needs them in time
order per thread, which Kineto does not promise, so they cannot be nested as they stream by.
Here the one streaming pass (the same ``TraceReader`` and the same per-event reading as
``_Collect``) writes each event as a row of a temporary folder instead: the host events as sorted
runs of rows, merged back in the order ``nest`` sorts them ((thread, start, longest first), ties in
file order; Note [Host rows as sorted runs]), the device events and the ops that have an External
id to a temporary SQLite file (store/eventspill.py), so the walk holds only the events open at the
current one (the nesting depth) and a run's block per run. Each op that
launched device work is assembled when the walk meets it, with the ``Assembler`` of a live trace,
its ancestors being exactly the open events (once per distinct ancestry: Note [One answer per
ancestry]); its device events come from an index on their External id. What is kept is what the answer keeps: one stack per distinct stack, one chain per
(op, key), one entry per (kernel, op, place). The calls come in the order ``read_recording`` gives
them, so the answers, their order included, are the same (tests/test_trace_file.py).

Autograd's engine threads run backward ops with no Python frame: they take the stack of the
``run_backward`` call running when they start (``Assembler.backward_stack``). Those calls are few
(one per ``backward()``): a first walk over the threads that made them keeps their windows and
stacks. SQLite's page cache is capped (``CACHE_KB``), a run's rows too (``RUN``); the files live in
the system's temporary folder, about 100 bytes per event, and are removed at the end. A small trace is not written at all:
its rows are walked from memory (Note [A small trace held]), below a cap that bounds the memory.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
import marshal
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

from atenmap.errors import AtenmapError
from atenmap.store.eventspill import EventSpill
from atenmap.tempdirs import TempFolder
from atenmap.trace.assemble import _CPP_RANGE, Assembler, DeviceEvent, HostEvent, compiler_frame, is_op, py_event_fields
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
    firsts: set[int] | None = None  # with repeats: the indexes of the calls a Repeat may name
    pids: dict[str, int] = field(default_factory=dict)  # a pid as the file spells it -> its process here
    device_procs: dict[int, int] = field(default_factory=dict)  # a device event's process -> the host process it is joined in


class Repeat(NamedTuple):
    """A call that repeats call ``first`` (Note [Repeated calls counted, not made]): its own CPU
    time and its device events' durations, in the order ``first``'s kernels have."""

    first: int
    cpu_us: float
    durations: list
    correlation: int = 0  # its op event's External id


# Note [Repeated calls counted, not made]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What ``fromtrace._answer`` keeps of a call is where it counts (per kernel: the kernel's answer and
# the launch of that op, stack and lead step) and how long it took. All of that but the times is
# fixed by its ancestry's node (frames, function, parents, node), its name, its input types, its
# kernels' names and kinds and its frames and function (a backward thread's come from its start). So a call
# whose such signature an earlier call had is yielded, where asked (``repeats``), as a ``Repeat``
# of that first call (its times only), not as a Call with Kernels for the join to make Entries of:
# ``_answer`` adds its times and counts where the first call's entries went. The first calls are
# named in ``StreamedRecording.firsts`` as they are yielded; at most ``MAX_FIRSTS`` of them, past
# which every call is a Call. Ops that are not aten-like (``is_op``: Inductor's kernels and ranges,
# record_function's) are always Calls. The call indexes run on as if each repeat were a Call.
MAX_FIRSTS = 1 << 16


class _Spill(_Collect):
    """``_Collect``'s reading, each event a row of ``db`` instead of a tuple in a list."""

    def __init__(self, reader: TraceReader, db: EventSpill, runs: "_Runs", hold: int = 0):
        super().__init__(reader)
        self.db, self.runs = db, runs
        self.seq = 0
        self.backward_threads: set[int] = set()
        self.hold = hold  # rows kept in memory before the first write (Note [A small trace held])
        self._joined: dict[tuple, str] = {}  # input types -> their column's text
        self.spilled = False

    # Note [Events kept as rows]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Each event kept is made the row it is written as at once (``seq``: its place in the file,
    # the order of ties), not a HostEvent or DeviceEvent first: making the tuple and then taking
    # it apart again cost more than reading the event.
    def _keep_device(self, name, kind, dur, dev, ext, corr, start, proc) -> None:
        self.device.append((name, kind, dur, dev, ext, corr, start, self.seq, proc))
        self.seq += 1

    def _keep_py(self, name, thread, start, end, proc) -> None:
        if "run_backward" in name:
            self.backward_threads.add(thread)
        self.host.append((thread, start, -end, self.seq, "py", sys.intern(name), 0, None, proc))  # file, line, function: its name's
        self.seq += 1

    def _keep_host(self, kind, name, thread, start, end, ext, types, proc) -> None:
        joined = None
        if types:
            joined = self._joined.get(types)  # each distinct tuple of types joined once
            if joined is None:
                joined = "\x1f".join(types)
                if len(self._joined) < 1 << 16:
                    self._joined[types] = joined
        self.host.append((thread, start, -end, self.seq, kind, name, ext, joined, proc))
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
            ops = [(r[0], r[1], -r[2], r[3], r[8], r[6]) for r in self.host if r[6] and r[4] == "op"]
            if ops:  # what the join of their device events reads (EventSpill.OPS_COLUMNS)
                db.add_rows("ops", ops)
            self.runs.add(self.host)
            self.host = []

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


# Note [Host rows as sorted runs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The walk needs every host event of a thread in nesting order, and a trace file does not give it:
# torch.profiler's files hold every op event first, then every Python frame event, then the device
# events (the fixture traces), so no event can be walked before the file's last host event is read.
# The host rows went through SQLite (a row each, an index sorted on them, a cursor read back): over
# half of a 10^6-event answer's time, for rows of which only the ops with an External id are ever
# looked up (their device events: store/eventspill.py). Now the host rows are sorted ``RUN`` at a
# time in memory (Python's sort takes a run of rows already in order in one pass) and each sorted run
# is written to the temporary folder with ``marshal`` in blocks of ``BLOCK`` rows; reading them back
# merges the runs (``heapq.merge``). A host row is kept as (thread, start, -end, seq, kind, name,
# External id, input types, process): its end negated, so that rows compare as tuples in nest()'s
# order (thread, start, longest first, then file order; ``seq`` is unique, so no comparison reaches
# the fields after it), with no key made per row (a key function made the merge twice as slow);
# the walk reads them so (``_walk(kept=True)``; a row is given its end back, ``_ended``, only for
# ``EventSpill.device_rows``). Small held traces keep the same rows (``_Held``). Memory holds one
# run being filled and, while merging, one block per run; past ``FANIN`` runs, runs are first
# merged into longer ones, so that bound holds at any size. The last run stays in memory,
# unwritten: a trace of fewer host rows than ``RUN`` writes none. Only the ops with an External id
# go to SQLite as well (their thread, times, seq, process and id: what ``op_device_rows`` and
# ``device_rows`` join on).
RUN = 1 << 16
BLOCK = 4096
FANIN = 64


class _Runs:
    """Host rows written in sorted runs to ``folder`` and merged back in nesting order (Note [Host
    rows as sorted runs]); ``run``: rows per run."""

    def __init__(self, folder: str, run: int = RUN):
        self.folder, self.run = folder, max(run, 1)
        self.pending: list[tuple] = []
        self.files: list[str] = []
        self.count = 0
        self._made = 0

    def add(self, rows: list[tuple]) -> None:
        self.pending += rows
        self.count += len(rows)
        while len(self.pending) >= self.run:
            rest = self.pending[self.run:]
            del self.pending[self.run:]
            self.pending.sort()
            self.files.append(self._write(self.pending))
            self.pending = rest

    def _write(self, rows) -> str:
        path = os.path.join(self.folder, f"run{self._made}.marshal")
        self._made += 1
        it = iter(rows)
        with open(path, "wb") as f:
            while True:
                block = list(itertools.islice(it, BLOCK))
                if not block:
                    break
                data = marshal.dumps(block)
                f.write(len(data).to_bytes(8, "little"))
                f.write(data)
        return path

    @staticmethod
    def _read(path: str) -> Iterator[tuple]:
        """A run's rows, a block at a time (``marshal.loads`` of its bytes: ``marshal.load`` of the
        file read it in pieces, ten times slower)."""
        with open(path, "rb") as f:
            while True:
                size = f.read(8)
                if not size:
                    return
                yield from marshal.loads(f.read(int.from_bytes(size, "little")))

    def finish(self) -> None:
        """Every row added: the last run sorted, kept in memory; past ``FANIN`` runs, runs merged
        into longer ones."""
        self.pending.sort()
        while len(self.files) > FANIN:
            group, self.files = self.files[:FANIN], self.files[FANIN:]
            self.files.append(self._write(heapq.merge(*map(self._read, group))))
            for done in group:
                os.unlink(done)

    def host_rows(self, threads: tuple[int, ...] | None = None) -> Iterator[tuple]:
        """The host rows as kept (their end negated), in nesting order; only those of ``threads``
        when given."""
        parts = [self._read(f) for f in self.files] + [iter(self.pending)]
        rows = parts[0] if len(parts) == 1 else heapq.merge(*parts)
        return rows if threads is None else (r for r in rows if r[0] in threads)


def _ended(row: tuple) -> tuple:
    """A host row as kept (thread, start, -end, seq, ...; Note [Host rows as sorted runs]) with its
    end: (thread, start, end, seq, kind, name, External id, input types, process)."""
    return row[:2] + (-row[2],) + row[3:]


class _Held:
    """The rows of a small plain trace, read as ``EventSpill``'s queries read them."""

    def __init__(self, host: list[tuple], device: list[tuple]):
        host.sort()  # nest()'s order: Note [Host rows as sorted runs]
        device.sort(key=lambda d: (d[6], d[7]))  # start, seq: each op's device events in this order
        self.host, self.device = host, device
        self.ops = {(r[8], r[6]) for r in host if r[4] == "op" and r[6] != 0}
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
        ops = [(r[8], r[6]) for r in col.host if r[4] == "op" and r[6] != 0]
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

    def devices(self, row: tuple) -> list[tuple]:
        """``(name, kind, dur, dev)`` of the device events of the op of host ``row`` (External id
        not 0), in (start, seq) order, as ``EventSpill.device_rows`` gives them."""
        return self.by_op.get((row[8], row[6])) or []

    def unattributed_rows(self) -> Iterator[tuple]:
        ops = self.ops
        return ((d[0], d[1], float(d[2]), d[3], d[4]) for d in self.device if (d[8], d[4]) not in ops)


def _types(types: str | None, split: dict) -> tuple:
    """The input types of a row's column (``"\x1f"``-joined), as a tuple; ``split`` keeps each
    distinct value's (they repeat)."""
    if types is None:
        return ()
    t = split.get(types)
    if t is None:
        t = tuple(types.split("\x1f"))  # input types: "\x1f" is in none
        if len(split) < 1 << 16:
            split[types] = t
    return t


class _Walk(Assembler):
    """The Assembler over one ancestry at a time (Note [One answer per ancestry]): ``host`` is the
    chain of events from the outermost open one to the one asked about (``Assembler.stack``
    memoises stacks by content)."""

    def __init__(self, windows: list | None = None):
        super().__init__([], [], user=trace_user, host_calls=False)
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

    def at(self, ctx: "_Ctx") -> int:
        """``host`` made the chain of ``ctx``'s events, outermost first (each the next one's
        parent); the position of ``ctx``'s own."""
        chain = []
        while ctx.parent is not None:
            chain.append(ctx.event)
            ctx = ctx.parent
        self.host = [e._replace(parent=k - 1) for k, e in enumerate(reversed(chain))]
        return len(self.host) - 1

    def parts(self, ctx: "_Ctx") -> tuple:
        """``Assembler.call_parts`` of an op event with the ancestry ``ctx``, once per ctx."""
        if ctx.parts is None:
            i = self.at(ctx)
            ctx.parts = self.call_parts(i, self.python_chain(i))
        return ctx.parts

    def frames_of(self, ctx: "_Ctx") -> tuple:
        """The user's frames of a Python call event with the ancestry ``ctx``, itself included."""
        i = self.at(ctx)
        return self.stack(self.python_chain(i) + (i,))[0]


# Note [One answer per ancestry]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What a call takes from the events around it (its user frames, torch-level function, parent
# ops, autograd node, whether it runs inside the compiler or inside an aten op) depends only on
# the kinds and names of its open ancestors and its own name: a Python event's file, line and
# function are read from its name, an op's ancestors' overloads are not picked here. A training
# loop repeats a few such ancestries 10^5 times. So the walk keeps, per thread, only the ends of
# the open events and their ``_Ctx``: one node per distinct ancestry, a child per (kind, name)
# under its parent's, made the first time it is met with the HostEvent the Assembler reads; a
# call's parts are computed once per node (``_Walk.parts``, over a host list of that chain
# alone), and each row costs a pop, a lookup and a push (it was a HostEvent per row and the
# Assembler's walk over the open events: half of ``kernel --from-trace``'s time). What depends on
# the row itself (its times, thread, input types, External id, kernels; a backward thread's
# stack, by its start) is the row's. Past ``MAX_CTX`` nodes (a file whose names never repeat)
# new nodes are still made but not kept, so memory stays bounded and the answers the same.
MAX_CTX = 1 << 18


class _Ctx:
    __slots__ = ("parent", "event", "comp", "inside", "kids", "parts")

    def __init__(self, parent: "_Ctx | None", event: HostEvent | None, comp: bool, inside: bool):
        self.parent, self.event, self.comp, self.inside = parent, event, comp, inside
        self.kids: dict = {}
        self.parts = None


def _walk(rows: Iterator[tuple], limit: int = MAX_CTX, only: str | None = None,
          kept: bool = False, owners: list | None = None) -> Iterator[tuple["_Ctx", tuple]]:
    """Host rows in nest() order, each with its ``_Ctx`` (Note [One answer per ancestry]):
    ``ctx.comp``: inside the compiler (a Python event: itself a compiler frame or inside one);
    ``ctx.parent.inside``: inside an aten op. Nodes past ``limit`` are made, not kept. ``only``:
    only the rows of that kind are yielded (the others still nest). ``kept``: the rows are as
    kept, their end negated (Note [Host rows as sorted runs]), and yielded so. ``owners``: kept
    beside the open events, each one's entry its parent's when pushed; the caller may set the last
    (the row yielded) for its children (the call an op event belongs to: Note [The annotations of
    a long trace] in chrome.py)."""
    sign = -1 if kept else 1
    root = _Ctx(None, None, False, False)
    ends: list = []  # the ends of the open events, outermost first
    ctxs: list[_Ctx] = []  # and their nodes
    thread = None
    compiler: dict[tuple[str, str], bool] = {}  # (file, function) -> compiler_frame's answer
    made = 0
    for row in rows:
        if row[0] != thread:
            ends.clear()
            ctxs.clear()
            if owners is not None:
                owners.clear()
            thread = row[0]
        start = row[1]
        while ends and ends[-1] <= start:
            ends.pop()
            ctxs.pop()
            if owners is not None:
                owners.pop()
        parent = ctxs[-1] if ctxs else root
        key = (row[4], row[5])
        ctx = parent.kids.get(key)
        if ctx is None:
            kind, name = row[4], row[5]
            file, line, function = py_event_fields(name) if kind == "py" else ("", 0, "")  # as _Collect keeps them
            e = HostEvent(kind, name, 0, 0, 0, -1, 0, (), file, line, function)
            comp = parent.comp
            if kind == "py" and not comp:
                comp = compiler.get((file, function))
                if comp is None:
                    comp = compiler[(file, function)] = compiler_frame(e)
            ctx = _Ctx(parent, e, comp, parent.inside or (kind == "op" and is_op(name)))
            made += 1
            if made <= limit:
                parent.kids[key] = ctx
        ends.append(sign * row[2])
        ctxs.append(ctx)
        if owners is not None:
            owners.append(owners[-1] if owners else None)
        if only is None or row[4] == only:
            yield ctx, row


class _Merged:
    """Each op's device events from ``EventSpill.op_device_rows``, a query in the order of the host
    rows (Note [One query for the ops and their device events]): asked in that order for every op
    row with an External id, each takes the rows of its ``seq`` at the head of the query."""

    def __init__(self, rows: Iterator[tuple]):
        self.rows = rows
        self.head = next(rows, None)

    def devices(self, row: tuple) -> list[tuple]:
        head, seq = self.head, row[3]
        if head is None or head[0] != seq:
            return []
        rows, found = self.rows, []
        while head is not None and head[0] == seq:
            found.append(head)
            head = next(rows, None)
        self.head = head
        if len(found) > 1:
            found.sort(key=lambda d: (d[5], d[6]))
        return [d[1:5] for d in found]


def stream_recording(path: str | os.PathLike, progress: Callable[[int, int], None] | None = None,
                     folder: str | None = None, hold: int = HOLD, repeats: bool = False, run: int = RUN,
                     ops: Callable[[int, int], None] | None = None):
    """A context manager: the chrome trace at ``path`` as a ``StreamedRecording`` read in bounded
    memory (Note [A trace larger than memory]); raises AtenmapError only when nothing of it can be
    read. The calls are made as they are iterated, inside the ``with``. ``hold``: up to this many
    rows are kept in memory, not written (Note [A small trace held]; 0: every trace written).
    ``repeats``: a call that repeats an earlier one comes as a ``Repeat`` (Note [Repeated calls
    counted, not made]). ``run``: host rows sorted per run (Note [Host rows as sorted runs]).
    ``ops``: called, as the calls are made, with (External id, call index, process) of each op
    event that belongs to a call (itself one, or inside one): ``Recording.op_events``, in the order
    its assignments had (a later one of an id counts), with the process its id belongs to (Note
    [External ids are per process])."""
    return _Stream(path, progress, folder, hold, repeats, run, ops)


class _Stream:
    def __init__(self, path, progress, folder, hold=HOLD, repeats=False, run=RUN, ops=None):
        self.path, self.progress, self.folder, self.hold = path, progress, folder, hold
        self.repeats, self.run, self.ops = repeats, run, ops
        self.firsts: set[int] | None = set() if repeats else None
        self._dir = None
        self.db = None
        self.rows = None  # the EventSpill, or the _Held rows of a small trace: what the walk reads
        self.host = None  # where the host rows come from: the _Runs beside the EventSpill, or the _Held rows

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
        runs = _Runs(self._dir.path, self.run)
        col = _Spill(reader, db, runs, self.hold if small_file(self.path) else 0)
        db.begin()
        with reading():
            for batch in reader.batches():
                col.add_all(batch)
            procs = {p: col.device_proc(p) for p in col.pids.values()}
            self.rows = _Held.of(col, procs)
            if self.rows is None:
                col.flush()
                runs.finish()
        db.commit()
        n = self.rows.event_count() if self.rows is not None else runs.count + db.device_count()
        if not n and not reader.meta:
            raise AtenmapError(f"{self.path}: not a readable chrome trace (no events)")
        if self.rows is None:
            self._in_sql(col, procs)
        self.host = runs if self.rows is self.db else self.rows
        notes = col.notes()
        if "schemaVersion" not in reader.meta:
            notes.append("no schemaVersion: not written by torch.profiler's export_chrome_trace; read as Kineto JSON")
        self._backward = sorted(col.backward_threads)
        self._host = not col.seen["device"]  # a CPU profile: its ops are the calls
        return StreamedRecording(self._calls(), self._unattributed(), notes, self._host, firsts=self.firsts,
                                 pids=dict(col.pids), device_procs=procs)

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

    def _calls(self) -> Iterator[Call]:
        windows = []  # (start, end, frames) of the run_backward calls: Assembler.backward_stack's
        if self._backward:
            w = _Walk()
            for ctx, row in _walk(self.host.host_rows(tuple(self._backward)), kept=True):
                if row[4] == "py" and "run_backward" in row[5]:
                    windows.append((row[1], -row[2], w.frames_of(ctx)))
        windows.sort(key=lambda x: (x[0], x[1]))
        w = _Walk(windows)
        index, threads, split = 0, {}, {}
        merged = self.rows is self.db and self.db.plain()
        if self.rows is not self.db:  # _Held: plain, its ops' device events by their id
            rows, devices = self.rows.host_rows(), self.rows.devices
        elif merged:  # their device events from a second query, read beside them
            rows, devices = self.host.host_rows(), _Merged(self.db.op_device_rows()).devices
        else:
            rows, devices = self.host.host_rows(), lambda row: self.db.device_rows(_ended(row))
        host = self._host
        firsts, seen = self.firsts, {}
        ops = self.ops
        owners = [] if ops is not None else None  # per open event, the call it belongs to (Assembler.recording's call_of)
        for ctx, row in _walk(rows, only="op", kept=True, owners=owners):  # each row's end negated
            name, ext = row[5], row[6]
            found = devices(row) if ext and (merged or not host) else ()  # _Merged: asked of every op with an id, in order
            if ctx.comp:
                if owners is not None:
                    owners[-1] = None  # the compiler's: no call's (Note [Compiling is not running])
                continue
            launched = bool(found) and not host  # its Kernels are made below, for a Call only
            # Assembler.is_call, with no composite ops known: on the host, the aten ops no aten op encloses
            if not (launched or _CPP_RANGE.match(name) or (host and not ctx.parent.inside and is_op(name))):
                if ext and owners is not None and owners[-1] is not None:
                    ops(ext, owners[-1], row[8])
                continue
            if owners is not None:
                owners[-1] = index
                if ext:
                    ops(ext, index, row[8])
            frames, function, parents, node = ctx.parts or w.parts(ctx)
            if not frames:
                frames, function = w.backward_stack(row[1]) or (frames, function)
            thread = threads.setdefault(row[0], len(threads))
            if firsts is not None and is_op(name):  # Note [Repeated calls counted, not made]
                # the frames: the node's (ctx.parts) or a backward window's, each one object for the walk
                # (a window's may be the empty tuple, as a node's: its function tells them apart)
                sig = (ctx, name, row[7], tuple([(d[0], d[1]) for d in found]) if launched else (), id(frames), function)
                first = seen.get(sig)
                if first is not None:
                    yield Repeat(first, (-row[2] - row[1]) / 1000.0, [d[2] for d in found] if launched else [], ext)
                    index += 1
                    continue
                if len(seen) < MAX_FIRSTS:
                    seen[sig] = index
                    firsts.add(index)
            kernels = [Kernel(n, dur, dev, kind, ext) for n, kind, dur, dev in found] if launched else []
            # Assembler.call's Call: a trace's op names no device and picks no overload
            yield Call(index, name, "CUDA" if kernels else "CPU", frames, function, parents, (-row[2] - row[1]) / 1000.0,
                       kernels, thread, node, types=_types(row[7], split), correlation=ext)
            index += 1

    def _unattributed(self) -> Iterator[Kernel]:
        for name, kind, dur, dev, ext in self.rows.unattributed_rows():
            yield Kernel(name, dur, dev, kind, ext)

