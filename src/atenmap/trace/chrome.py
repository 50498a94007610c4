"""Source locations added to the profiler's chrome trace, so Perfetto shows them. No torch.

The trace is the one ``torch.profiler`` exports. Events are matched to recorded calls by what the
profiler itself wrote: the ``atenmap#<index>`` ranges by name (renamed ``aten::add.Tensor @ main.py:24``),
op and runtime events by their ``External id`` (the op correlation ids the recording mapped to calls),
device events by ``External id`` and kernel name.

Note [Chrome args once per call]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A call's ``atenmap.*`` args (source, op, function, native, kernel, launches, note) are written once,
on its renamed range (its copy on the GPU track, ``gpu_user_annotation``, is renamed too but names
the call only); every other event of that call (the op events inside it, ``cudaLaunchKernel``,
kernels, memcpys) gets ``atenmap.call`` only, the range's own ``atenmap.call``. A device event also
gets its row of the table (``atenmap.op``, ``atenmap.aten``: the ATen line of the step before the
launch, ``atenmap.user``: the user's line; ``summary.places``), so that selecting a kernel in
Perfetto says where it came from, and the definition and launch line of its own kernel. Copying the
full args onto every runtime and kernel event made the file about 1.5 x the profiler's own. Without ranges (the default recorder:
the profiler alone) the args go on the call's own op event, the one of its External id. A call on
the same line as an earlier one (same op, key, stack and function: a loop) carries its source, op
and ``atenmap.same_as`` (the earlier call's number) instead of the chain again. Where
``record_shapes`` was atenmap's own (to pick overloads, Note [Overloads from recorded input types]),
the op events' ``Input Strides`` and ``Concrete Inputs`` it added are dropped again (``Input Dims``
and ``Input type`` stay). The file is rewritten one event at a time (compact separators, one event
a line), read in chunks as it is written (Note [The chrome rewrite streams]); nothing else in it
changes. ``atenmap trace --chrome`` rewrites the profiler's export in place; ``atenmap kernel
--from-trace T --chrome OUT`` writes a recorded trace's copy to OUT (never over T), through the same
``Annotations``.

``read_trace``/``trace_launchers`` read the device events of any such trace (``atenmap kernel --from-trace``).
"""
from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import os
import re
import secrets
from pathlib import Path
from typing import Iterator

from atenmap.errors import AtenmapError
from atenmap.files import open_regular
from atenmap.store.annotspill import AnnotationSpill
from atenmap.tempdirs import TempFolder
from atenmap.trace.assemble import ANY_PROC
from atenmap.trace.join import Entry
from atenmap.trace.link import label_index
from atenmap.trace.report import entry_args, stack_text
from atenmap.trace.summary import places
from atenmap.trace.tracefile import _ID_LIMIT, _SCALAR, _NEST, _STRING, CHUNK, MAX_EVENT, gunzip, scan_value

_DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_SHAPE_ARGS = ("Input Strides", "Concrete Inputs")


# Note [The annotations of a long trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``kernel --from-trace T --chrome OUT`` used to read T whole (``read_recording``) for its op events'
# External ids: 500-900 MB at 10^6 events (bench/bench_trace.py). Now T is read by the bounded reader (spill.py), which
# tells, as it makes the calls, each op event's External id and the call it belongs to (``map_op``:
# the op itself, or the call it is inside, as ``Assembler.recording`` fills ``op_events``); the
# calls it gives as ``Repeat``s of an earlier one are told too (``repeat``: the args of a call on the
# same line, ``atenmap.same_as``, and the kernel args of the first). What the rewrite looks up per
# event goes to a temporary SQLite file (store/annotspill.py): External id -> call, call -> (its own
# External id, its args, whose kernel args), (call, kernel name) -> kernel args. The args are
# numbers there: each distinct dict is kept once in memory (they repeat: one per line of the user's
# code and op, as the answer's rows). The rewrite (Note [The chrome rewrite streams]) then reads the
# rows a block of ids at a time, the last ``BLOCKS`` blocks kept: the External ids of a profiler's
# file come in nearly increasing order in each of its parts (ops, runtime, device events), so a
# block serves thousands of events. Memory is one chunk, one event, the blocks and the distinct
# args, at any size of T (69 MB at 10^6 events: bench_trace.py --chrome-speed); the output is the
# in-memory read's, byte for byte (tests/test_fromtrace_chrome.py: the fixture traces, a two-thread
# loop of several blocks of ids; a 2x10^5-event synthetic trace compared once), for a trace of one
# process. External ids are per process (Note [External ids are per process] in assemble.py): the
# rows are kept per (External id, process), and an event looks its id up in the process the read
# joined it in (its pid's; a device event's host process, the lowest where that is not known), so
# two ranks merged in one file each get their own calls (the in-memory ``op_events`` is keyed by
# id alone: there, one rank's events got the other's). A live trace
# (``atenmap trace --chrome``, ``annotate``) keeps the same rows in dicts (``_Dicts``): its
# recording is in memory anyway, and of one process.
class Annotations:
    """What each event of a chrome trace gets (Note [Chrome args once per call]), gathered one joined
    ``Entry`` at a time (``add``: no list of every event's Entry is needed), then written (``write``).
    Where it is kept: in dicts (``op_events``, a live trace's, in memory anyway), or in a temporary
    SQLite file (``spilled``: Note [The annotations of a long trace])."""

    def __init__(self, op_events: dict[int, int] | None = None, base: str | None = None, shapes_asked: bool = True,
                 spilled: bool = False):
        self.base = base
        self.shapes_asked = shapes_asked
        self._dir = TempFolder("atenmap-trace-") if spilled else None  # Note [Temporary folders of killed runs]
        self.store = (AnnotationSpill(os.path.join(self._dir.path, "annotations.sqlite"), 4 << 10) if spilled
                      else _Dicts(op_events or {}))
        self.args: list[tuple] = []  # (op, last frame, args but atenmap.call): each distinct one once
        self._args: dict[tuple, int] = {}
        self.sites: list[dict] = []  # a device event's args (_site_args): each distinct one once
        self._sites: dict[tuple, int] = {}
        self.first: dict[tuple, int] = {}  # (op, key, stack, function) -> the first call carrying the chain's args
        self.sources: dict[int, tuple] = {}  # id(stack) -> (stack, its text): calls of a loop share their stack
        self.firsts: set[int] | None = None  # the calls a ``Repeat`` may name (spill.py): their repeats' args kept
        self._repeats: dict[int, int] = {}  # such a call -> the args' number of its repeats
        self._call = -1  # the call whose entries are being added (a call's entries come together)
        self._names: set = set()  # the kernel names of its entries so far
        self.procs: tuple[dict, dict] | None = None  # a streamed read's (pids, device_procs): ids per process

    def map_op(self, ext: int, index: int, proc: int = 0) -> None:
        """The op event of External id ``ext`` of process ``proc`` belongs to call ``index``
        (``Recording.op_events``, as a streamed read finds them: spill.py's ``ops``)."""
        self.store.add("ext", (ext, proc, index))

    def add(self, e: Entry) -> None:
        if e.call is None:
            return
        c, base = e.call, self.base
        i = c.index
        if i != self._call:
            self._call, self._names = i, set()
            same = self.first.setdefault((c.op, c.key, c.stack, c.function), i)
            if same == i:
                args = entry_args(Entry(c, None, e.chain, None, e.notes, inductor=e.inductor), base)
            else:  # the same line as an earlier call: its source, op and a pointer only (entry_args' per-call part)
                args = self._same_as(c, same)
            n = self._intern(c, args)
            self.store.add("calls", (i, c.correlation, n, i))
            if self.firsts is not None and i in self.firsts:
                self._repeats[i] = n if same != i else self._intern(c, self._same_as(c, i))
        if e.kernel is not None and e.kernel.name not in self._names:
            self._names.add(e.kernel.name)
            site = _site_args(e)
            key = tuple(site.items())
            n = self._sites.get(key)
            if n is None:
                n = self._sites[key] = len(self.sites)
                self.sites.append(site)
            self.store.add("sites", (i, e.kernel.name, n))

    def repeat(self, index: int, first: int, correlation: int) -> None:
        """Call ``index`` repeats call ``first`` (spill.py, Note [Repeated calls counted, not made]):
        the args of a call on the same line (``atenmap.same_as``), and ``first``'s kernel args."""
        n = self._repeats.get(first)
        if n is not None:  # else ``first`` has none (record_function's own ops)
            self.store.add("calls", (index, correlation, n, first))

    def _same_as(self, c, same: int) -> dict:
        src = self.sources.get(id(c.stack))
        if src is None or src[0] is not c.stack:
            src = self.sources[id(c.stack)] = (c.stack, stack_text(c.stack, self.base))
        args = {"atenmap.source": src[1], "atenmap.op": f"{c.op} [{c.key}]"}
        if c.function:
            args["atenmap.function"] = c.function
        if c.node:
            args["atenmap.autograd_node"] = c.node  # node_text of an entry without its node
        args["atenmap.same_as"] = same
        return args

    def _intern(self, c, args: dict) -> int:
        key = (c.op, c.stack[-1:], tuple(args.items()))
        n = self._args.get(key)
        if n is None:
            n = self._args[key] = len(self.args)
            self.args.append((c.op, c.stack[-1:], args))
        return n

    def write(self, path: str | os.PathLike, out: str | os.PathLike | None = None) -> int:
        """The chrome trace at ``path`` (plain or gzip) with the args added, written to ``out`` (a
        ``.gz`` name: gzip) or over ``path`` itself; through a temporary file beside it, renamed into
        place, so a reader never sees half a file. Returns how many events got source locations."""
        try:
            return self._write(path, out)
        finally:
            self.close()

    def _write(self, path, out) -> int:
        store = self.store
        store.finish()
        by_ext, by_call, site, args_of, sites = store.by_ext, store.by_call, store.site, self.args, self.sites
        shapes_asked, base = self.shapes_asked, self.base
        pids, device_procs = self.procs or (None, None)
        done = 0

        def annotated(ev):
            nonlocal done
            if not isinstance(ev, dict):
                return KEEP
            name = ev.get("name", "")
            idx = label_index(name) if isinstance(name, str) else None
            args = ev.get("args")
            if idx is None:
                ext = args.get("External id") if isinstance(args, dict) else None
                if not isinstance(ext, int) or not -_ID_LIMIT <= ext < _ID_LIMIT:
                    return KEEP
                proc = None  # Note [External ids are per process]: the process the reader joined this id in
                if pids is not None:
                    proc = pids.get(str(ev.get("pid")))
                    if proc is not None and ev.get("cat") in _DEVICE_CATS:
                        proc = device_procs.get(proc, proc)
                hit = by_ext(ext, proc if proc != ANY_PROC else None)
                if hit is None:
                    return KEEP
                idx, own, n, of = hit
                args["atenmap.call"] = idx
                if ev.get("cat") in _DEVICE_CATS:
                    s = site(of, name) if isinstance(name, str) else None
                    if s is not None:
                        args.update(sites[s])
                elif ev.get("cat") == "cpu_op":
                    if not shapes_asked:
                        for k in _SHAPE_ARGS:
                            args.pop(k, None)
                    if ext == own:
                        args.update(args_of[n][2])  # the call's own op event (a trace with no atenmap# ranges)
            else:
                hit = by_call(idx)
                if hit is None:
                    return KEEP
                op, last, call_args = args_of[hit[2]]
                ev["name"] = f"{op} @ {stack_text(last, base)}"
                if not isinstance(args, dict):
                    args = ev["args"] = {}
                args["atenmap.call"] = idx
                if ev.get("cat") != "gpu_user_annotation":  # not the range's copy on the GPU track
                    args.update(call_args)
            done += 1
            return ev

        dst = Path(out) if out is not None else Path(path)
        tmp, raw = _fresh_beside(dst)
        try:
            with raw, _open_text(Path(path)) as src, \
                    io.TextIOWrapper(gzip.GzipFile(dst.name, "wb", fileobj=raw) if dst.name.endswith(".gz") else raw,
                                     encoding="utf-8") as f:
                _rewrite(src, f, annotated)
            os.replace(tmp, dst)
        finally:
            if tmp.exists():
                tmp.unlink()
        return done

    def close(self) -> None:
        """The temporary file gone (a spilled store's)."""
        self.store.close()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


class _Dicts:
    """``AnnotationSpill``'s rows and lookups in dicts: a live trace's (its recording is in memory)."""

    def __init__(self, op_events: dict[int, int]):
        self.ext, self.calls, self.sites = op_events, {}, {}

    def add(self, table: str, row: tuple) -> None:
        if table == "ext":  # (External id, process, call): a live trace is one process
            self.ext[row[0]] = row[2]
        elif table == "calls":
            self.calls[row[0]] = row
        else:
            self.sites.setdefault((row[0], row[1]), row[2])

    def finish(self) -> None:
        pass

    def by_ext(self, ext: int, proc: int | None = None) -> tuple | None:
        i = self.ext.get(ext)
        return None if i is None else self.calls.get(i)

    def by_call(self, call: int) -> tuple | None:
        return self.calls.get(call)

    def site(self, call: int, name: str) -> int | None:
        return self.sites.get((call, name))

    def close(self) -> None:
        pass


def _fresh_beside(dst: Path) -> tuple[Path, io.BufferedWriter]:
    """A new file beside ``dst``, to be renamed over it once written: never one that exists
    (``O_EXCL``), so never the trace being read (``T`` named ``OUT.atenmap-tmp`` was truncated, then
    removed), nor a file a link there points at."""
    for _ in range(100):
        tmp = dst.with_name(f"{dst.name}.{secrets.token_hex(4)}.atenmap-tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        return tmp, os.fdopen(fd, "wb")
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it", str(dst))


def annotate(path: str | os.PathLike, entries, op_events: dict[int, int], base: str | None = None,
             shapes_asked: bool = True, out: str | os.PathLike | None = None) -> int:
    """Rewrite the chrome trace at ``path`` in place (or to ``out``); returns how many events got
    source locations. See Note [Chrome args once per call]. ``shapes_asked``: False when
    record_shapes was atenmap's own (to pick overloads): the strides and concrete inputs it recorded
    are dropped again."""
    notes = Annotations(op_events, base, shapes_asked)
    for e in entries:
        notes.add(e)
    return notes.write(path, out)


@contextlib.contextmanager
def _open_text(p: Path) -> Iterator[io.TextIOWrapper]:
    """A chrome trace's text, plain or gzip (by its first bytes, as tracefile reads it), to be read in
    chunks: UTF-8 with errors replaced, its line breaks as they are (Note [The chrome rewrite streams])."""
    with open_regular(p) as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gunzip(raw, p) if gz else io.BufferedReader(raw, CHUNK)  # Note [A gzip file read as far as it goes]
        with io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="") as f:
            yield f


def _site_args(e: Entry) -> dict:
    """The args only a device event gets: its table row (the op, the ATen line of the step before
    the launch, the user's line: summary.places) and where its own kernel is defined and launched."""
    aten, user = places(e)
    out = {"atenmap.op": f"{e.call.op} [{e.call.key}]"}
    if aten:
        out["atenmap.aten"] = aten
    if user:
        out["atenmap.user"] = user
    k = e.inductor  # a torch.compile kernel: its own definition in the output code
    if k is not None:
        out["atenmap.inductor_definition"] = f"{k.file}:{k.line}" if k.line else k.file
        if k.call_line:
            out["atenmap.inductor_call"] = f"{k.file}:{k.call_line}"
    if e.site is not None:
        for role, s in (("kernel_definition", e.site.definition), ("kernel_launch", e.site.launch)):
            if s is not None:
                out[f"atenmap.{role}"] = f"{s.file}:{s.line} {s.symbol}"
    return out


_WS = re.compile(r"[ \t\n\r]*")
_LINE_BREAKS = re.compile(r"[\r\n][ \t\r\n]*")  # outside strings only: a JSON string holds none
_DECODER = json.JSONDecoder()
KEEP = object()  # what ``fix`` returns for an event it leaves as it was: its own text is copied
_LOOKAHEAD = 16  # characters past an error's place the decoder may look at (-Infinity, \ud83d\ude00)


# Note [The chrome rewrite streams]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The rewrite reads the file in CHUNK-sized pieces (plain or gzip, tracefile's way) and writes each
# event as it is decoded: what it holds is one chunk and the value being decoded, never the file's
# text (a 10 GB trace streams; issue 35). Its output is the one a decode of the whole text gave, byte
# for byte, errors included:
# * a value is decoded where it lies; if that fails, or it reaches the end of what was read (``12``
#   may go on as ``123``), the value's end is found first (``_Text.extent``: strings, brackets,
#   scalars, each character looked at once, reading on; tracefile's scanner) and it is decoded
#   again with all of it read, so the decoder sees what it saw in the whole text, up to the value's
#   end or the file's: the same value, the same error, at the same place;
# * a JSON error's line, column and char count from the file's start (the newlines of the text
#   already dropped are counted as it is dropped), as the decode of the whole text said them;
# * the text is read as decoded (UTF-8, errors replaced, no newline translation): the same
#   characters as the whole text's, and nothing after the document's end is read.
# A single value is held whole while it is decoded (the largest event, or a top-level value other
# than ``traceEvents``), as before. A value whose brackets never close (``{"a": [1}``, then the rest of
# the file) would read on to the file's end: past MAX_EVENT, and each time it doubles, it is decoded
# as far as it was read, and an error that what was read decides (one before its last
# ``_LOOKAHEAD`` characters, not a string left open: the decoder looks no further than that past
# an error, but an open string's error is at its start) is raised there, as the whole text's was.
class _Text:
    """The text of a file read on chunk by chunk: ``buf[pos:]`` is what is not yet consumed."""

    def __init__(self, f):
        self.f = f
        self.buf, self.pos, self.eof = "", 0, False
        self.base = 0  # chars dropped before buf
        self.lines = 0  # newlines in them
        self.last_nl = -1  # the index of the last of them in the file's text

    def more(self) -> bool:
        if self.eof:
            return False
        chunk = self.f.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        buf, pos = self.buf, self.pos
        if pos:
            self.lines += buf.count("\n", 0, pos)
            nl = buf.rfind("\n", 0, pos)
            if nl >= 0:
                self.last_nl = self.base + nl
            self.base += pos
        self.buf, self.pos = buf[pos:] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace (consumed up to it), "" at the file's end."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def where(self) -> int:
        return self.base + self.pos

    def value(self):
        """The next JSON value and its text; consumes them. Raises as the whole text's decode did."""
        self.peek()
        try:
            value, end = _DECODER.raw_decode(self.buf, self.pos)
            if end < len(self.buf) or self.eof:
                return self._took(value, end)
        except (ValueError, RecursionError) as exc:
            if self.eof:
                raise self._located(exc) from None
        self.extent()
        try:
            value, end = _DECODER.raw_decode(self.buf, self.pos)
        except (ValueError, RecursionError) as exc:
            raise self._located(exc) from None
        return self._took(value, end)

    def _took(self, value, end: int):
        text = self.buf[self.pos:end]
        self.pos = end
        return value, text

    def _located(self, exc):
        """``exc`` with a JSON error's place counted from the file's start (``json.JSONDecodeError``
        computes it from the text it was given: here, what is left of the file)."""
        if not isinstance(exc, json.JSONDecodeError):
            return exc
        buf, p = self.buf, exc.pos
        pos = self.base + p
        nl = buf.rfind("\n", 0, p)
        lineno = self.lines + buf.count("\n", 0, p) + 1
        colno = pos - (self.base + nl if nl >= 0 else self.last_nl)
        out = json.JSONDecodeError(exc.msg, buf, p)
        out.pos, out.lineno, out.colno = pos, lineno, colno
        out.args = (f"{exc.msg}: line {lineno} column {colno} (char {pos})",)
        return out

    def extent(self) -> None:
        """Read on until the JSON value at ``pos`` ends in ``buf`` with a character after it (a
        scalar's end is the next character), or the file ends (Note [The chrome rewrite streams])."""
        buf, i, check = self.buf, self.pos, MAX_EVENT
        c = buf[i] if i < len(buf) else ""
        mode = _STRING if c == '"' else _NEST if c in ("[", "{") else _SCALAR
        depth = 1 if mode == _NEST else 0
        i += 1 if mode != _SCALAR else 0
        while True:
            i, mode, depth, ended = scan_value(self.buf, i, mode, depth)
            if ended:
                return
            i -= self.pos
            if i > check:
                if self._fails_here():
                    return
                check *= 2
            if not self.more():
                return
            i += self.pos

    def _fails_here(self) -> bool:
        """Does the value at ``pos`` fail to decode where the text read so far decides it (an error
        before its last few characters, other than a string left open; a nesting too deep)?"""
        try:
            _DECODER.raw_decode(self.buf, self.pos)
        except json.JSONDecodeError as exc:
            return exc.pos < len(self.buf) - _LOOKAHEAD and not exc.msg.startswith("Unterminated string")
        except RecursionError:
            return True
        except ValueError:  # an integer too long: its digits may go on
            return False
        return False


def _rewrite(f, out, fix) -> None:
    """Copy the JSON document read from the text file ``f`` to ``out``, passing each element of its
    ``traceEvents`` list (or of the top-level list) through ``fix``; one event is decoded at a time,
    never the whole tree, and the file is read in chunks as it is written (Note [The chrome rewrite
    streams]). An element ``fix`` leaves as it was (``KEEP``) is copied as the profiler wrote it, its
    line breaks and indentation dropped (encoding it again is most of a rewrite's time)."""
    dump = json.JSONEncoder(separators=(",", ":")).encode
    t = _Text(f)
    c = t.peek()
    if c == "[":
        _rewrite_list(t, out, fix, dump)
        return
    if c != "{":
        raise ValueError("a chrome trace is a JSON object or list")
    t.pos += 1
    out.write("{")
    first = True
    while t.peek() != "}":
        key, _ = t.value()
        if t.peek() != ":":
            raise ValueError(f"':' expected at {t.where()}")
        t.pos += 1
        out.write(("" if first else ",") + dump(key) + ":")
        first = False
        if key == "traceEvents" and t.peek() == "[":
            _rewrite_list(t, out, fix, dump)
        else:
            value, _ = t.value()
            out.write(dump(value))
        if t.peek() == ",":
            t.pos += 1
    out.write("}")


def _rewrite_list(t: _Text, out, fix, dump) -> None:
    t.pos += 1
    out.write("[")
    first = True
    while t.peek() != "]":
        value, text = t.value()
        new = fix(value)
        out.write(("" if first else ",\n") + (_LINE_BREAKS.sub("", text) if new is KEEP else dump(new)))
        first = False
        if t.peek() == ",":
            t.pos += 1
    t.pos += 1
    out.write("]")


# Device event categories as torch.profiler (lower case) and older Kineto versions write them.
_KERNEL_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def _trace_events(path: Path) -> list:
    try:
        data = json.loads(Path(path).read_text(errors="replace"))
    except (OSError, ValueError) as exc:
        raise AtenmapError(f"{path}: not a readable chrome trace JSON ({exc.__class__.__name__}: {str(exc)[:100]})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise AtenmapError(f"{path}: no traceEvents list (is this a torch.profiler chrome trace?)")
    return [e for e in events if isinstance(e, dict)]


def read_trace(path: Path) -> list[str]:
    """Kernel (and memcpy/memset) names of a torch.profiler / Kineto chrome trace, in order of
    first appearance, with counts kept by the caller. Raises AtenmapError on unreadable input."""
    return [e["name"] for e in _trace_events(path)
            if e.get("cat") in _KERNEL_CATS and isinstance(e.get("name"), str) and e["name"].strip()]


def trace_launchers(path: Path) -> dict[str, dict[str, int]]:
    """kernel name -> {operator the trace says launched it: count}. Kineto gives each device
    event the ``External id`` of the op on the CPU that issued it (through cudaLaunchKernel)."""
    events = _trace_events(path)
    op_of = {}
    for e in events:
        if e.get("cat") == "cpu_op" and isinstance(e.get("args"), dict) and "External id" in e["args"]:
            op_of[e["args"]["External id"]] = e.get("name")
    out: dict[str, dict[str, int]] = {}
    for e in events:
        if e.get("cat") in _KERNEL_CATS and isinstance(e.get("args"), dict):
            op = op_of.get(e["args"].get("External id"))
            if isinstance(op, str) and isinstance(e.get("name"), str):
                per = out.setdefault(e["name"], {})
                per[op] = per.get(op, 0) + 1
    return out
