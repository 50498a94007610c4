"""Source locations added to the profiler's chrome trace, so Perfetto shows them. No torch.

The trace is the one ``torch.profiler`` exports. Events are matched to recorded calls by what the
profiler itself wrote: the ``atenmap#<index>`` ranges by name (renamed ``aten::add.Tensor @ main.py:24``),
op and runtime events by their ``External id`` (the op correlation ids the recording mapped to calls),
device events by ``External id`` and kernel name. Each matched event gets ``atenmap.*`` keys in its
``args``; nothing else in the file changes.

``read_trace``/``trace_launchers`` read the device events of any such trace (``atenmap kernel --from-trace``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from atenmap.errors import AtenmapError
from atenmap.trace.join import Entry
from atenmap.trace.link import label_index
from atenmap.trace.report import entry_args, stack_text

_DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def annotate(path: str | os.PathLike, entries: list[Entry], op_events: dict[int, int], base: str | None = None) -> int:
    """Rewrite the chrome trace at ``path`` in place; returns how many events got source locations."""
    p = Path(path)
    data = json.loads(p.read_text())
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    call_args: dict[int, dict] = {}
    kernel_args: dict[tuple[int, str], dict] = {}
    for e in entries:
        if e.call is None:
            continue
        i = e.call.index
        if i not in call_args:
            call_args[i] = entry_args(Entry(e.call, None, e.chain, None, e.notes), base)
            call_args[i]["atenmap.call"] = i
        if e.kernel is not None:
            kernel_args.setdefault((i, e.kernel.name), entry_args(e, base))
    calls = {e.call.index: e.call for e in entries if e.call is not None}
    done = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        name = ev.get("name", "")
        args = ev.get("args")
        if not isinstance(args, dict):
            args = {}
        idx = label_index(name) if isinstance(name, str) else None
        if idx is None:
            ext = args.get("External id")
            idx = op_events.get(ext) if isinstance(ext, int) else None
            if idx is None or idx not in call_args:
                continue
            extra = kernel_args.get((idx, name), call_args[idx]) if ev.get("cat") in _DEVICE_CATS else call_args[idx]
        else:
            if idx not in call_args:
                continue
            c = calls[idx]
            ev["name"] = f"{c.op} @ {stack_text(c.stack[-1:], base)}"
            extra = call_args[idx]
        args.update(extra)
        ev["args"] = args
        done += 1
    p.write_text(json.dumps(data))
    return done


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
