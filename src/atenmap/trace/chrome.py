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
a line); nothing else in it changes. ``atenmap trace --chrome`` rewrites the profiler's export in
place; ``atenmap kernel --from-trace T --chrome OUT`` writes a recorded trace's copy to OUT (never
over T), through the same ``Annotations``.

``read_trace``/``trace_launchers`` read the device events of any such trace (``atenmap kernel --from-trace``).
"""
from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

from atenmap.errors import AtenmapError
from atenmap.files import open_regular
from atenmap.trace.join import Entry
from atenmap.trace.link import label_index
from atenmap.trace.report import entry_args, stack_text
from atenmap.trace.summary import places

_DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_SHAPE_ARGS = ("Input Strides", "Concrete Inputs")


class Annotations:
    """What each event of a chrome trace gets (Note [Chrome args once per call]), gathered one joined
    ``Entry`` at a time (``add``: no list of every event's Entry is needed), then written (``write``)."""

    def __init__(self, op_events: dict[int, int], base: str | None = None, shapes_asked: bool = True):
        self.op_events = op_events
        self.base = base
        self.shapes_asked = shapes_asked
        self.call_args: dict[int, dict] = {}
        self.kernel_args: dict[tuple[int, str], dict] = {}
        self.calls = {}
        self.first: dict[tuple, int] = {}  # (op, key, stack, function) -> the first call carrying the chain's args
        self.sources: dict[int, tuple] = {}  # id(stack) -> (stack, its text): calls of a loop share their stack

    def add(self, e: Entry) -> None:
        if e.call is None:
            return
        c, base = e.call, self.base
        i = c.index
        if i not in self.call_args:
            self.calls[i] = c
            same = self.first.setdefault((c.op, c.key, c.stack, c.function), i)
            if same == i:
                args = {"atenmap.call": i, **entry_args(Entry(c, None, e.chain, None, e.notes, inductor=e.inductor), base)}
            else:  # the same line as an earlier call: its source, op and a pointer only (entry_args' per-call part)
                src = self.sources.get(id(c.stack))
                if src is None or src[0] is not c.stack:
                    src = self.sources[id(c.stack)] = (c.stack, stack_text(c.stack, base))
                args = {"atenmap.call": i, "atenmap.source": src[1], "atenmap.op": f"{c.op} [{c.key}]"}
                if c.function:
                    args["atenmap.function"] = c.function
                if c.node:
                    args["atenmap.autograd_node"] = c.node  # node_text of an entry without its node
                args["atenmap.same_as"] = same
            self.call_args[i] = args
        if e.kernel is not None and (i, e.kernel.name) not in self.kernel_args:
            self.kernel_args[(i, e.kernel.name)] = _site_args(e)

    def write(self, path: str | os.PathLike, out: str | os.PathLike | None = None) -> int:
        """The chrome trace at ``path`` (plain or gzip) with the args added, written to ``out`` (a
        ``.gz`` name: gzip) or over ``path`` itself; through a temporary file beside it, renamed into
        place, so a reader never sees half a file. Returns how many events got source locations."""
        call_args, kernel_args, calls, op_events = self.call_args, self.kernel_args, self.calls, self.op_events
        shapes_asked, base = self.shapes_asked, self.base
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
                idx = op_events.get(ext) if isinstance(ext, int) else None
                if idx is None or idx not in call_args:
                    return KEEP
                args["atenmap.call"] = idx
                if ev.get("cat") in _DEVICE_CATS:
                    args.update(kernel_args.get((idx, name), ()))
                elif ev.get("cat") == "cpu_op":
                    if not shapes_asked:
                        for k in _SHAPE_ARGS:
                            args.pop(k, None)
                    if ext == calls[idx].correlation:
                        args.update(call_args[idx])  # the call's own op event (a trace with no atenmap# ranges)
            else:
                if idx not in call_args:
                    return KEEP
                c = calls[idx]
                ev["name"] = f"{c.op} @ {stack_text(c.stack[-1:], base)}"
                if not isinstance(args, dict):
                    args = ev["args"] = {}
                if ev.get("cat") == "gpu_user_annotation":  # the range's copy on the GPU track
                    args["atenmap.call"] = idx
                else:
                    args.update(call_args[idx])
            done += 1
            return ev

        text = _read_text(Path(path))
        dst = Path(out) if out is not None else Path(path)
        tmp = dst.with_name(dst.name + ".atenmap-tmp")
        try:
            with (gzip.open(tmp, "wt", encoding="utf-8") if dst.name.endswith(".gz")
                  else tmp.open("w", encoding="utf-8")) as f:
                _rewrite(text, f, annotated)
            os.replace(tmp, dst)
        finally:
            if tmp.exists():
                tmp.unlink()
        return done


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


def _read_text(p: Path) -> str:
    """The whole text of a chrome trace, plain or gzip (by its first bytes, as tracefile reads it)."""
    with open_regular(p) as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        return binary.read().decode("utf-8", errors="replace")


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


def _rewrite(text: str, out, fix) -> None:
    """Copy the JSON document ``text`` to ``out``, passing each element of its ``traceEvents`` list
    (or of the top-level list) through ``fix``; one event is decoded at a time, never the whole tree.
    An element ``fix`` leaves as it was (``KEEP``) is copied as the profiler wrote it, its line breaks
    and indentation dropped (encoding it again is most of a rewrite's time)."""
    dump = json.JSONEncoder(separators=(",", ":")).encode
    pos = _WS.match(text, 0).end()
    if text.startswith("[", pos):
        _rewrite_list(text, pos, out, fix, dump)
        return
    if not text.startswith("{", pos):
        raise ValueError("a chrome trace is a JSON object or list")
    pos = _WS.match(text, pos + 1).end()
    out.write("{")
    first = True
    while not text.startswith("}", pos):
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()
        if not text.startswith(":", pos):
            raise ValueError(f"':' expected at {pos}")
        pos = _WS.match(text, pos + 1).end()
        out.write(("" if first else ",") + dump(key) + ":")
        first = False
        if key == "traceEvents" and text.startswith("[", pos):
            pos = _rewrite_list(text, pos, out, fix, dump)
        else:
            value, pos = _DECODER.raw_decode(text, pos)
            out.write(dump(value))
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
    out.write("}")


def _rewrite_list(text: str, pos: int, out, fix, dump) -> int:
    pos = _WS.match(text, pos + 1).end()
    out.write("[")
    first = True
    while not text.startswith("]", pos):
        start = pos
        value, pos = _DECODER.raw_decode(text, pos)
        new = fix(value)
        out.write(("" if first else ",\n") + (_LINE_BREAKS.sub("", text[start:pos]) if new is KEEP else dump(new)))
        first = False
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
    out.write("]")
    return pos + 1


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
