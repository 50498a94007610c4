"""Reading a chrome trace someone recorded (``torch.profiler`` / Kineto JSON, plain or gzip) into a
``Recording``, one event at a time. No torch. ``atenmap kernel --from-trace`` reads with this.

Note [Reading a trace file]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
The file is read in chunks and decoded one event at a time: never the whole text, never the whole
JSON tree. Each event kept becomes a small tuple (``assemble.HostEvent`` / ``DeviceEvent``) with its
strings interned, nested in place, one copy per distinct stack: about 460 bytes per event with the
join's own records, 473 MB for 10^6 events against 1041 MB for ``json.load`` (bench/bench_trace.py
--from-trace-rss; docs/trace.md, "Overhead"). That memory grows with the events: ``atenmap kernel
--from-trace`` reads with spill.py instead (the same reading, each event a row of a temporary SQLite
file: Note [A trace larger than memory]), 44 MB for the same 10^6 events. Whatever a file lacks is
said in one note each, and the answers it allows are still given:

* truncated JSON (a crashed or cut recording): the events before the cut are used;
* an event nested beyond ``MAX_DEPTH`` (the JSON decoder would recurse), one larger than
  ``MAX_EVENT`` bytes, one that does not decode (an integer of more than 4,300 digits, ``{"a": 1,}``),
  or one that is not an object: skipped and counted (Note [One bad event is one skipped event]);
* a lone surrogate escape (``"\ud800"``) is ``?``; a line number of more than 9 digits is no line;
  top-level keys beyond ``MAX_META`` are counted, not kept;
* a field of the wrong type (``"External id": [1]``, a string ``ts``): that field is ignored;
* no ``python_function`` events (recorded without ``with_stack``): no user frames;
* no ``External id`` on device events (older Kineto): linked through the runtime event of the same
  ``correlation``, else not linked to any op;
* no ``Input type`` (recorded without ``record_shapes``): overloads from the op name alone.

Older Kineto traces name the categories ``Operator``/``Kernel``/``Memcpy``/``Memset``/``Runtime``;
both spellings are read.
"""
from __future__ import annotations

import contextlib
import gc
import gzip
import io
import json
import os
import re
import sys
import zlib
from pathlib import Path
from typing import Callable, Iterator

from atenmap.errors import AtenmapError
from atenmap.files import open_regular
from atenmap.trace.assemble import ANY_PROC, DeviceEvent, HostEvent, assemble, nest, py_event_fields
from atenmap.trace.events import Recording

MAX_DEPTH = 64  # an event nested deeper is skipped, not decoded (issue 23: RecursionError)
MAX_EVENT = 16 << 20  # bytes; a larger single event is skipped
MAX_META = 256  # top-level keys kept beside traceEvents (schemaVersion, deviceProperties, ...)
CHUNK = 1 << 20
_HOST = {"cpu_op": "op", "Operator": "op", "user_annotation": "other", "python_function": "py"}
_DEVICE = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
           "gpu_memset": "memset", "Memset": "memset"}
_RUNTIME = ("cuda_runtime", "Runtime", "cuda_driver")
_CATEGORIES = {**{c: "device" for c in _DEVICE}, **{c: "runtime" for c in _RUNTIME}, **_HOST}
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_loads = json.loads

# Chrome traces name files relative to a sys.path entry (``torch/nn/functional.py``, ``train.py``):
# a frame is the user's unless its first component is a library's (see trace_user).
_LIBRARIES = {"torch", "torchvision", "torchaudio", "torchtext", "triton", "numpy", "functorch", "atenmap",
              "typing_extensions", "_pytest", "pytest", "pluggy", "transformers", "accelerate", "apex",
              "site-packages", "dist-packages", "lib", "lib64"}


def trace_user(file: str) -> bool:
    """Is a frame of a recorded trace the user's? The first path component is not a library's or the
    standard library's (``threading.py``, ``concurrent/``), and it is no pseudo-file (``<string>``)."""
    if not file or file.startswith("<"):
        return False
    f = file.replace("\\", "/")
    if "/site-packages/" in f or "/dist-packages/" in f:
        return False
    head = f.lstrip("/").split("/", 1)[0]
    head = head[:-3] if head.endswith(".py") else head
    return head not in _LIBRARIES and head not in getattr(sys, "stdlib_module_names", ())


class TraceReader:
    """One pass over a trace file; ``notes`` says what it lacked."""

    def __init__(self, path: str | os.PathLike, progress: Callable[[int, int], None] | None = None,
                 fast: bool | None = None):
        self.path = Path(path)
        self.progress = progress
        self.fast = fast  # the compiled reader where it is installed (Note [A compiled reader]); None: ask
        self.notes: list[str] = []
        self.skipped = 0
        self.bad_fields = 0
        self.truncated = False
        self.meta: dict = {}
        self.meta_dropped = 0

    # ---- raw events -----------------------------------------------------------------------
    def events(self) -> Iterator[dict]:
        """The trace's events (JSON objects), one at a time."""
        self.fast = False
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list]:
        """The trace's events in lists, as decoded (Note [Events decoded in bulk]): dicts, or the
        compiled reader's ``Event`` structs where it reads (Note [A compiled reader]); one list holds
        one kind."""
        try:
            raw = open_regular(self.path)
        except OSError as exc:
            raise AtenmapError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        with raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            size = os.fstat(raw.fileno()).st_size
            binary = gunzip(raw, self.path) if gz else io.BufferedReader(raw, CHUNK)
            f = io.TextIOWrapper(binary, encoding="utf-8", errors="replace")
            yield from _Stream(f, self, lambda: self._tick(raw.tell(), size), fast_decoder(self.fast)).document()

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)


# Note [A gzip file read as far as it goes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``gzip.GzipFile`` raises EOFError where a cut ``.json.gz`` ends, and a read of many bytes loses
# what it had decompressed before: a gzip trace cut anywhere in its first CHUNK of text answered
# nothing ("no events"), and a longer one lost its last chunk; with ``--chrome`` the error was a
# traceback. So the gzip stream is read a piece at a time (``read1``) and its end where it breaks,
# however it breaks (cut: EOFError; damaged: zlib.error, a bad header), is the text's end: the JSON
# then breaks off there, as a cut plain file's does (the events before answer, with one note; a
# rewrite of it fails in one line). A file whose very first bytes do not decompress (``\x1f\x8b``
# and then no gzip) is one line: ``FILE: not a readable gzip file (...)``.
class _Gunzip(io.RawIOBase):
    def __init__(self, raw, path):
        self.gz, self.path, self.got, self.broken = gzip.GzipFile(fileobj=raw, mode="rb"), path, 0, False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.broken:
            return 0
        try:
            data = self.gz.read1(len(b))
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            if not self.got and not isinstance(exc, EOFError):
                raise AtenmapError(f"{self.path}: not a readable gzip file ({exc})") from None
            self.broken = True
            return 0
        n = len(data)
        b[:n] = data
        self.got += n
        return n


def gunzip(raw, path) -> io.BufferedReader:
    """The decompressed bytes of the gzip file open as ``raw`` (Note [A gzip file read as far as it goes])."""
    return io.BufferedReader(_Gunzip(raw, path), CHUNK)


# Note [One bad event is one skipped event]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Each value is decoded by the C decoder (``raw_decode``) where it lies whole in the buffer. Where
# that fails (the value goes on in the next chunk, or it does not decode), ``_extent`` finds its end
# with a small scanner that looks at each character once (regular expressions jump to the next
# quote or bracket), reading on chunk by chunk and remembering where it stopped, so one 14 MB
# ``[[[...]]]`` costs one pass, not a rescan per chunk (65 s before, issue 34). A value that then
# decodes is used; one that does not, or is larger than MAX_EVENT (passed over as it is read, the
# text behind it dropped), is one skipped event, and the read goes on after it. Only the file's end
# inside a value stops the read (truncated).


# Note [Events decoded in bulk]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Decoding each event with its own ``raw_decode`` call, and the Python around it, cost several times
# what ``json.load`` of the whole file costs. So the ``traceEvents`` list is decoded a buffer at a
# time: the text from the current event to the last ``},`` in the buffer, wrapped in ``[...]``, is
# handed to the C decoder at once. That is exact or it fails: if the cut fell inside a string or a
# nested value, the wrapped text does not parse (an unterminated string or bracket). A failed bulk
# decode (the cut was not between events, or an event in it is malformed or too deep) makes the
# rest of that buffer go one event at a time, with Note [One bad event is one skipped event]'s
# rules. Where msgspec is installed, it decodes the same buffers first (Note [A compiled reader]).


# Note [A compiled reader]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Python's json builds a dict for every event and every value in it (``Input Dims``, ``Python id``,
# ``stream``, ...), most of which the join never reads; with the Python around each event that cost
# more than ``json.load`` of the whole file. Where msgspec is installed (``pip install
# 'atenmap[fast]'``), each bulk buffer of Note [Events decoded in bulk] is decoded by its C decoder
# into ``Event`` structs of the fields the join reads, each typed as the common case has it (an id
# an integer, a time a number, input types strings); every other field is checked as JSON and
# skipped. The answers are the same as with json, byte for byte (tests/test_trace_readers.py):
# * a buffer the typed decode refuses (a field of another type, a lone surrogate escape, ``NaN``,
#   a number out of a double's range, malformed JSON, nesting too deep) is decoded by json as
#   before, and where that fails, one event at a time by Note [One bad event is one skipped
#   event]'s rules: every odd event is read by the same code as ever;
# * nesting: both decoders stop at the interpreter's recursion limit, msgspec a level or two later
#   (json's runs under three Python calls, ``json.loads``'s): so msgspec is called a few calls
#   further down (``_deeper``) and gives up first, and json decides;
# * msgspec skips an integer of any length where json refuses one of more than
#   ``sys.get_int_max_str_digits()`` digits (the event is skipped and counted): a buffer with a run
#   of half that many digits or more (``_long_digits``) goes to json;
# * the structs' fields go to the code that reads json's dicts (``_Collect._event``), a missing
#   field as ``dict.get`` gives it.
# ``ATENMAP_TRACE_JSON=json`` reads with json alone (``msgspec``: msgspec or an error); the
# readers' ``fast`` argument says the same.
_FAST: dict = {}  # the compiled decoder, made once (None: msgspec not installed)


def fast_decoder(fast: bool | None = None):
    """The compiled reader's decoder of a ``[...]`` buffer of events (Note [A compiled reader]), or
    None: json reads. ``fast`` None: as ``ATENMAP_TRACE_JSON`` says (json, msgspec; unset: msgspec
    where it is installed); True without msgspec installed is an error."""
    if fast is None:
        want = os.environ.get("ATENMAP_TRACE_JSON", "")
        if want not in ("", "json", "msgspec"):
            raise AtenmapError(f"ATENMAP_TRACE_JSON={want!r}: say json or msgspec (or leave it unset)")
        fast = None if not want else want == "msgspec"
    if fast is False:
        return None
    if "decode" not in _FAST:
        try:
            import msgspec
        except ImportError:
            _FAST["decode"] = None
        else:
            _FAST["decode"] = _make_decoder(msgspec)
    if fast and _FAST["decode"] is None:
        raise AtenmapError("the compiled trace reader needs msgspec: pip install 'atenmap[fast]' "
                           "(or ATENMAP_TRACE_JSON=json)")
    return _FAST["decode"]


def _make_decoder(msgspec):
    from typing import List, Optional, Union

    f = msgspec.field
    args = msgspec.defstruct("Args", [("external_id", Optional[int], f(name="External id", default=None)),
                                      ("correlation", Optional[int], None), ("device", Optional[int], None),
                                      ("input_type", Optional[List[str]], f(name="Input type", default=None))], gc=False)
    # the defaults: what _Collect.add reads of an event without the field
    event = msgspec.defstruct("Event", [("ph", Optional[str], "X"), ("cat", Optional[str], None),
                                        ("name", Optional[str], None), ("pid", Union[int, str, None], None),
                                        ("tid", Union[int, str, None], None), ("ts", Union[int, float, None], 0),
                                        ("dur", Union[int, float, None], 0), ("args", Optional[args], None)], gc=False)
    return msgspec.json.Decoder(List[event]).decode


def _deeper(decode, text: str, frames: int = 4):
    """``decode(text)`` called ``frames`` Python calls further down: at least as deep as json.loads's
    decoder runs, so that an event nested to where json's recursion limit stops gives up here
    first, and json decides (Note [A compiled reader])."""
    return decode(text) if frames <= 0 else _deeper(decode, text, frames - 1)


def _long_digits(text: str) -> bool:
    """Might ``text`` hold an integer json refuses (more than ``sys.get_int_max_str_digits()``
    digits)? Such a run covers a whole block of half that many digits starting at a multiple of it:
    one match tried per block (Note [A compiled reader])."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if not limit:
        return False
    block = max(limit // 2, 1)
    run = _RUNS.get(block)
    if run is None:
        run = _RUNS[block] = re.compile("[0-9]{%d}" % block)
    match = run.match
    return any(match(text, p) for p in range(0, len(text), block))


_RUNS: dict = {}


def scan_value(buf: str, i: int, mode: int, depth: int) -> tuple[int, int, int, bool]:
    """One buffer's part of finding where a JSON value ends, each character looked at once: from
    ``i`` in ``mode`` (inside a string, a scalar or a nesting ``depth`` deep), to the value's end
    (``ended``: ``i`` just past it; a scalar's end needs the character after it) or to where the
    buffer runs out (read more and go on from the state returned). Shared by this reader and the
    chrome rewrite (trace/chrome.py)."""
    n = len(buf)
    while i < n:
        if mode == _STRING:
            i = _STR_BODY.match(buf, i).end()
            if i >= n or buf[i] != '"':
                return i, mode, depth, False  # the buffer ends inside the string (or at a lone backslash)
            i += 1
            if depth == 0:
                return i, mode, depth, True
            mode = _NEST
        elif mode == _SCALAR:
            i = _SCALAR_BODY.match(buf, i).end()
            return i, mode, depth, i < n
        else:
            m = _STRUCTURE.search(buf, i)
            if m is None:
                return n, mode, depth, False
            i = m.end()
            c = m.group()
            if c == '"':
                mode = _STRING
            elif c in "[{":
                depth += 1
            else:
                depth -= 1
                if depth <= 0:
                    return i, mode, depth, True
    return i, mode, depth, False


class _Stream:
    """A chunked JSON reader over a text file: the top-level object (or list) and each element of its
    ``traceEvents`` list, decoded one at a time."""

    def __init__(self, f, reader: TraceReader, tick, fast=None):
        self.f, self.r, self.tick, self.fast = f, reader, tick, fast
        self.buf, self.pos, self.eof = "", 0, False

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.f.read(CHUNK)
        self.tick()
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _peek(self) -> str:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _value(self):
        """The next JSON value, or ``_SKIP`` for one skipped (malformed, nested too deep, larger than
        MAX_EVENT: Note [One bad event is one skipped event]); raises EOFError at a truncation."""
        if not self._peek():
            raise EOFError("truncated")
        try:
            value, end = _DECODER.raw_decode(self.buf, self.pos)
            if end < len(self.buf) or self.eof:
                self.pos = end
                return value
        except (ValueError, RecursionError):
            pass
        size, big = self._extent()
        if not big and size <= MAX_EVENT:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except (ValueError, RecursionError):
                pass
            else:
                if end == self.pos + size:
                    self.pos = end
                    return value
        self.pos += max(size, 1)  # a stray character (``[}]``) is one skipped value, passed over
        self.r.skipped += 1
        return _SKIP

    def _extent(self) -> tuple[int, bool]:
        """(length, passed over) of the JSON value at ``self.pos``, read on as far as it goes, each
        character looked at once. A value past MAX_EVENT is passed over as it is read (``self.pos``
        moves along it, the text behind dropped): then the length is what is left of it. Raises
        EOFError where the file ends inside it."""
        buf, i = self.buf, self.pos
        c = buf[i]
        mode = _STRING if c == '"' else _NEST if c in "[{" else _SCALAR
        depth = 1 if mode == _NEST else 0
        i += 1 if mode != _SCALAR else 0
        big = False
        while True:
            i, mode, depth, ended = scan_value(self.buf, i, mode, depth)
            if ended:
                return i - self.pos, big
            if i - self.pos > MAX_EVENT:  # pass over it: keep nothing of it behind the scan
                big, self.pos = True, i
            i -= self.pos
            if not self._more():
                raise EOFError("truncated")
            i += self.pos

    def document(self) -> Iterator[list[dict]]:
        try:
            c = self._peek()
            if c == "[":
                self.pos += 1
                yield from self._list()
                return
            if c != "{":
                raise AtenmapError(f"{self.r.path}: not a chrome trace (a JSON object or list)")
            self.pos += 1
            while self._peek() not in ("}", ""):
                key = self._value()
                if self._peek() != ":":
                    raise EOFError("malformed")
                self.pos += 1
                if key == "traceEvents" and self._peek() == "[":
                    self.pos += 1
                    yield from self._list()
                else:
                    value = self._value()
                    if isinstance(key, str) and isinstance(value, (int, float, str)):
                        if len(self.r.meta) < MAX_META or key in self.r.meta:
                            self.r.meta[key] = value
                        else:
                            self.r.meta_dropped += 1
                if self._peek() == ",":
                    self.pos += 1
        except EOFError:
            self.r.truncated = True

    def _list(self) -> Iterator[list]:
        """The list's elements in batches: the objects that lie whole in the buffer decoded at once
        (Note [Events decoded in bulk]), else one at a time."""
        slow = None  # the buffer in which a bulk decode failed: one at a time until more is read
        fast = self.fast
        while self._peek() not in ("]", ""):
            buf, pos = self.buf, self.pos
            if buf is not slow and buf[pos] == "{":
                cut = buf.rfind("},", pos)
                if cut > pos:
                    text = "[" + buf[pos:cut + 1] + "]"
                    if fast is not None and not _long_digits(text):  # Note [A compiled reader]
                        try:
                            batch = _deeper(fast, text)
                        except (ValueError, RecursionError):  # msgspec's DecodeError, ValidationError
                            pass
                        else:
                            self.pos = cut + 2
                            yield batch
                            continue
                    try:
                        batch = _loads(text)
                    except (ValueError, RecursionError):
                        slow = buf
                    else:
                        self.pos = cut + 2
                        kept = [ev for ev in batch if isinstance(ev, dict)]
                        self.r.skipped += len(batch) - len(kept)  # a non-object counts as one at a time would
                        yield kept
                        continue
            ev = self._value()
            if isinstance(ev, dict):
                yield [ev]
            elif ev is not _SKIP:
                self.r.skipped += 1
            if self._peek() == ",":
                self.pos += 1
        if self._peek() == "":
            raise EOFError("truncated")
        self.pos += 1


_SKIP = object()
_STRING, _NEST, _SCALAR = 0, 1, 2
_STR_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S)  # a string's body: up to its closing quote
_SCALAR_BODY = re.compile(r"[^,\]\}\s\[\{\"]*")
_STRUCTURE = re.compile(r'["\[\]{}]')


# Note [Numbers a trace may hold]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# JSON's integers have no bound, SQLite's (the spill of a long trace, spill.py) are 64-bit: an id
# of 2**70 stopped `kernel --from-trace` with OverflowError. Ids (External id, correlation, device)
# outside a signed 64-bit integer are fields of the wrong type; times (µs) are kept below 4e15,
# so that a start or an end in ns (ts + dur, times 1000) still fits: the profiler's absolute
# timestamps are ~1.7e15 µs since 1970, and 4e15 is the year 2096.
_ID_LIMIT = 1 << 63
_TIME_LIMIT_US = 4e15


def _clean(s: str) -> str:
    """``s`` with lone surrogates (JSON's ``"\\ud800"``, which no UTF-8 file or SQLite text can hold)
    made ``?``: one such escape used to fail the whole trace (issue 34)."""
    return s.encode("utf-8", "replace").decode("utf-8")


def _num(v) -> float | None:
    """A finite time in µs (JSON's 1e999 decodes to infinity) within Note [Numbers a trace may hold]'s
    bound, else None."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    f = float(v) if abs(v) < 1e300 else float("inf")
    return f if f == f and abs(f) < _TIME_LIMIT_US else None


class _Collect:
    """Raw events -> compact host and device events (strings interned)."""

    def __init__(self, reader: TraceReader):
        self.r = reader
        self.host: list[HostEvent] = []
        self.device: list[DeviceEvent] = []
        self.runtime: dict[tuple[int, int], int] = {}  # (process, runtime event correlation) -> its External id
        self.threads: dict = {}
        self.pids: dict[str, int] = {}  # a pid as the file spells it -> its number here
        self.host_procs: set[int] = set()  # the numbers of the pids that recorded host events
        self._thread_of: dict = {}  # (pid, tid) as the file has them -> (process, thread): the same as _proc's
        self._raw_procs: dict = {}  # a pid as an Event struct has it (an int, a str, None) -> _proc's
        self._py: dict[str, tuple] = {}  # a python_function name -> its fields (names repeat: one parse each)
        self._types: dict[tuple, tuple] = {}  # an op's input types as the file has them -> as kept
        self.seen = {"py": 0, "op": 0, "types": 0, "device": 0, "linked": 0}

    def _proc(self, pid) -> int:
        """The number here of a pid as the file has it (its text: ``1`` and ``"1"`` are one)."""
        pid = str(pid)
        hit = self.pids.get(pid)
        if hit is None:
            hit = self.pids[pid] = len(self.pids)
        return hit

    # Note [The frequent event read inline]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Most events of a trace recorded with_stack are python_function events of a thread already
    # seen, with an ASCII name and numeric times: ``add_all`` reads those in its own loop (what
    # ``add`` and ``_host`` would do, without their two calls per event), and hands every other
    # event, or one with anything unusual about it, to ``add``. The same fields are kept either way.
    def add_all(self, events: list) -> None:
        if events and type(events[0]) is not dict:
            self.add_structs(events)
            return
        add, keep_py, thread_of = self.add, self._keep_py, self._thread_of
        lo, hi = -_TIME_LIMIT_US, _TIME_LIMIT_US
        n = 0
        for ev in events:
            if ev.get("cat") == "python_function":
                name, ts, dur = ev.get("name"), ev.get("ts", 0), ev.get("dur", 0)
                if type(name) is str and (type(ts) is float or type(ts) is int) and \
                        (type(dur) is float or type(dur) is int) and lo < ts < hi and lo < dur < hi and \
                        name.isascii() and ev.get("ph", "X") == "X":
                    try:
                        hit = thread_of.get((ev.get("pid"), ev.get("tid")))
                    except TypeError:  # a list as pid or tid: add's way (rare)
                        hit = None
                    if hit is not None:
                        n += 1
                        keep_py(name, hit[1], int(ts * 1000), int((ts + dur) * 1000), hit[0])
                        continue
            add(ev)
        self.seen["py"] += n

    def add_structs(self, events: list) -> None:
        """``add_all`` over the compiled reader's ``Event`` structs (Note [A compiled reader]): their
        fields have the types the frequent case needs, a missing one its default. A python_function,
        device or runtime event with nothing unusual about it is kept here (what ``_event`` does);
        any other goes to ``_event``, as ``add`` hands it json's."""
        event, keep_py, keep_device, host, thread_of = self._event, self._keep_py, self._keep_device, self._host, self._thread_of
        procs, host_procs, runtime = self._raw_procs, self.host_procs, self.runtime
        lo, hi, low, high = -_TIME_LIMIT_US, _TIME_LIMIT_US, -_ID_LIMIT, _ID_LIMIT
        intern = sys.intern
        n = devices = linked = 0
        for ev in events:
            cat = ev.cat
            if cat == "python_function":
                name, ts, dur = ev.name, ev.ts, ev.dur
                if name is not None and ts is not None and dur is not None and lo < ts < hi and lo < dur < hi and \
                        name.isascii() and ev.ph == "X":
                    hit = thread_of.get((ev.pid, ev.tid))
                    if hit is not None:
                        n += 1
                        keep_py(name, hit[1], int(ts * 1000), int((ts + dur) * 1000), hit[0])
                        continue
            elif cat not in _CATEGORIES:  # add's first test
                continue
            name = ev.name
            if name is None or ev.ph != "X":
                continue
            a, ts, dur = ev.args, ev.ts, ev.dur
            if a is None:
                event(cat, name, ts, dur, ev.pid, ev.tid, None, None, None, None)
                continue
            ext = a.external_id
            if ts is None or dur is None or not (lo < ts < hi and lo < dur < hi) or not name.isascii() or \
                    not (ext is None or low <= ext < high) or cat == "python_function":
                event(cat, name, ts, dur, ev.pid, ev.tid, ext, a.correlation, a.device, a.input_type)
                continue
            group = _CATEGORIES[cat]
            if group == "device":
                corr, dev, pid = a.correlation, a.device, ev.pid
                devices += 1
                linked += ext is not None
                proc = procs.get(pid)
                if proc is None:
                    proc = self._proc(pid)
                    if len(procs) < 1 << 12:
                        procs[pid] = proc
                keep_device(intern(name), _DEVICE[cat], dur, dev if dev is not None and low <= dev < high else 0,
                            ext or 0, corr if corr is not None and low <= corr < high else 0, int(ts * 1000), proc)
            elif group == "runtime":
                corr = a.correlation
                if corr is not None and low <= corr < high and ext is not None:
                    pid = ev.pid
                    proc = procs.get(pid)
                    if proc is None:
                        proc = self._proc(pid)
                        if len(procs) < 1 << 12:
                            procs[pid] = proc
                    if proc not in host_procs:
                        host_procs.add(proc)
                    runtime[(proc, corr)] = ext
            else:
                host(group, name, ev.pid, ev.tid, ts, dur, a.input_type, ext)
        seen = self.seen
        seen["py"] += n
        seen["device"] += devices
        seen["linked"] += linked

    def add(self, ev: dict) -> None:
        cat, name = ev.get("cat"), ev.get("name")
        if type(cat) is not str or cat not in _CATEGORIES or type(name) is not str or ev.get("ph", "X") != "X":
            return
        args = ev.get("args")
        if type(args) is not dict:
            args = {}
        self._event(cat, name, ev.get("ts", 0), ev.get("dur", 0), ev.get("pid"), ev.get("tid"), args.get("External id"),
                    args.get("correlation"), args.get("device"), args.get("Input type"))

    def _event(self, cat: str, name: str, ts, dur, pid, tid, ext, corr, dev, types) -> None:
        """An event of a category the join reads (``cat``), its fields as the file has them (None:
        not there; ``ts``, ``dur``: 0)."""
        if not name.isascii():
            name = _clean(name)
        lo, hi = -_TIME_LIMIT_US, _TIME_LIMIT_US
        if cat == "python_function":  # the most frequent: only its name, times and thread matter
            if (type(ts) is float or type(ts) is int) and (type(dur) is float or type(dur) is int) and \
                    lo < ts < hi and lo < dur < hi:
                self._host("py", name, pid, tid, ts, dur, None, None)
                return
        if not (type(ts) is float or type(ts) is int) or not lo < ts < hi:
            ts = _num(ts)
        if not (type(dur) is float or type(dur) is int) or not lo < dur < hi:
            dur = _num(dur)
        if ts is None or dur is None:  # present but not a number: the event still links by its id
            self.r.bad_fields += 1
            ts, dur = ts or 0.0, dur or 0.0
        if ext is not None and not (type(ext) is int and -_ID_LIMIT <= ext < _ID_LIMIT):  # a 64-bit id
            self.r.bad_fields += 1
            ext = None
        group = _CATEGORIES[cat]
        if group == "device":
            corr = corr if type(corr) is int and -_ID_LIMIT <= corr < _ID_LIMIT else 0
            self.seen["device"] += 1
            self.seen["linked"] += ext is not None
            dev = dev if type(dev) is int and -_ID_LIMIT <= dev < _ID_LIMIT else 0
            self._keep_device(sys.intern(name), _DEVICE[cat], dur, dev, ext or 0, corr, int(ts * 1000), self._proc(pid))
        elif group == "runtime":
            if type(corr) is int and -_ID_LIMIT <= corr < _ID_LIMIT and ext is not None:
                proc = self._proc(pid)
                self.host_procs.add(proc)
                self.runtime[(proc, corr)] = ext
        else:
            self._host(group, name, pid, tid, ts, dur, types, ext)

    # What is kept of each event: a tuple in a list here; spill.py's _Spill keeps rows for SQLite instead.
    def _keep_device(self, name: str, kind: str, dur: float, dev: int, ext: int, corr: int, start: int,
                     proc: int) -> None:
        self.device.append(DeviceEvent(name, kind, dur, dev, ext, corr, start, proc))

    def _keep_py(self, name: str, thread: int, start: int, end: int, proc: int) -> None:
        fields = self._py.get(name)
        if fields is None:
            file, line, function = py_event_fields(name)
            fields = (sys.intern(name), sys.intern(file), line, sys.intern(function))
            if len(self._py) < 1 << 16:
                self._py[name] = fields
        self.host.append(HostEvent("py", fields[0], thread, start, end, file=fields[1], line=fields[2],
                                   function=fields[3], proc=proc))

    def _keep_host(self, kind: str, name: str, thread: int, start: int, end: int, ext: int, types: tuple,
                   proc: int) -> None:
        self.host.append(HostEvent(kind, name, thread, start, end, correlation=ext, types=types, proc=proc))

    def device_proc(self, proc: int) -> int:
        """The host process a device event's pid stands for (Note [External ids are per process])."""
        if proc in self.host_procs:
            return proc
        return next(iter(self.host_procs)) if len(self.host_procs) == 1 else ANY_PROC

    def _host(self, kind: str, name: str, pid, tid, ts: float, dur: float, types, ext: int | None) -> None:
        key = (pid, tid)
        try:
            hit = self._thread_of.get(key)
        except TypeError:  # a list as pid or tid: no key (rare)
            hit, key = None, None
        if hit is None:
            proc = self._proc(pid)
            self.host_procs.add(proc)
            hit = (proc, self.threads.setdefault((proc, str(tid)), len(self.threads)))
            if key is not None and len(self._thread_of) < 1 << 12:
                self._thread_of[key] = hit
        proc, thread = hit
        start, end = int(ts * 1000), int((ts + dur) * 1000)
        if kind == "py":
            self.seen["py"] += 1
            self._keep_py(name, thread, start, end, proc)
            return
        if type(types) is list:
            raw = tuple(types)
            try:
                hit = self._types.get(raw)  # lists of types repeat: each distinct one cleaned and interned once
            except TypeError:  # a list among them: unhashable (rare)
                hit, raw = None, None
            if hit is None:
                hit = tuple(sys.intern(_clean(t) if not t.isascii() else t) if isinstance(t, str) else "" for t in types)
                if raw is not None and len(self._types) < 1 << 16:
                    self._types[raw] = hit
            types = hit
        else:
            types = ()
        if kind == "op":
            self.seen["op"] += 1
            self.seen["types"] += bool(types)
        self._keep_host(kind, sys.intern(name), thread, start, end, ext or 0, types, proc)

    def linked_device(self) -> list[DeviceEvent]:
        """Device events in their host process, those without an External id linked through their
        runtime event (of that process; of any where the process is not known)."""
        any_corr: dict[int, int] = {}
        if self.seen["linked"] < self.seen["device"]:
            for (_p, corr), ext in self.runtime.items():
                any_corr.setdefault(corr, ext)
        out = []
        for d in self.device:
            proc = self.device_proc(d.proc)
            linked = d.linked or (any_corr.get(d.correlation, 0) if proc == ANY_PROC
                                  else self.runtime.get((proc, d.correlation), 0))
            out.append(d._replace(proc=proc, linked=linked))
        return out

    def notes(self) -> list[str]:
        r, s, out = self.r, self.seen, []
        if r.truncated:
            out.append(f"the trace's JSON breaks off after {s['op'] + s['device'] + s['py']} events: "
                       "answers cover what came before")
        if r.skipped:
            out.append(f"{r.skipped} events skipped (nested deeper than {MAX_DEPTH} levels, larger than "
                       f"{MAX_EVENT >> 20} MB, or not JSON objects)")
        if r.meta_dropped:
            out.append(f"{r.meta_dropped} top-level keys beyond the first {MAX_META} ignored")
        if r.bad_fields:
            out.append(f"{r.bad_fields} fields of the wrong type ignored (an id that is not an integer, a time that is not a number)")
        if s["op"] and not s["py"]:
            out.append("no Python stacks in this trace (recorded without with_stack=True): no user frames")
        elif s["py"]:
            out.append("Python frames show the function's first line: a chrome trace does not record the calling line")
        if s["op"] and not s["types"]:
            out.append("no input types (recorded without record_shapes=True): overloads from the op name alone")
        if s["device"] and s["linked"] < s["device"]:
            out.append(f"{s['device'] - s['linked']} of {s['device']} device events carry no External id "
                       "(correlation ids): linked through their runtime event where it has one")
        if not s["op"]:
            out.append("no op events (cpu_op) in this trace: kernels are not tied to operators")
        return out


# Note [No cycle collection while reading]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Reading makes a few dicts and lists per event (the decoded JSON) and drops them a batch later;
# Python's cycle collector ran every 700 of them, a tenth of the read's time, and found nothing:
# what the read makes (JSON values, tuples, strings) holds no cycle, and the reader's own maps
# only grow. So the collector is off while the events are read (``reading``) and back as it was
# after, even when the read raises; what is made then is collected as ever, by reference counts.
# ``kernel --from-trace``'s bounded answer (fromtrace.answer) keeps it off through the walk and the
# join as well: there the first collection after the read went over every row held (Note [A small
# trace held]), a quarter of a 10^5-event answer. The only cycles made there are the walk's nodes
# (a node and its parent's ``kids``: Note [One answer per ancestry]), kept until the walk ends
# anyway and at most ``MAX_CTX`` of them; nothing cyclic is made per event
# (tests/test_trace_spill.py), so memory stays bounded with the collector off.
@contextlib.contextmanager
def reading():
    """The cycle collector off for the block (Note [No cycle collection while reading])."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_recording(path: str | os.PathLike, progress: Callable[[int, int], None] | None = None) -> Recording:
    """A chrome trace file -> a ``Recording`` whose calls are the ops that launched its device events
    (see Note [Reading a trace file]); raises AtenmapError only when nothing of it can be read."""
    reader = TraceReader(path, progress)
    col = _Collect(reader)
    with reading():
        for batch in reader.batches():
            col.add_all(batch)
    if not col.device and not col.host and not reader.meta:
        raise AtenmapError(f"{path}: not a readable chrome trace (no events)")
    rec = Recording(profiled=True, notes=col.notes())
    if "schemaVersion" not in reader.meta:
        rec.notes.append("no schemaVersion: not written by torch.profiler's export_chrome_trace; read as Kineto JSON")
    # a CPU profile (no device events): its aten ops are the calls, no composite op known (spill.py's rule)
    return assemble(nest(col.host), col.linked_device(), rec, user=trace_user, host_calls=not col.seen["device"])
