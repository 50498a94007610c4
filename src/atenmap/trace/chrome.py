"""Source locations added to the profiler's chrome trace, so Perfetto shows them. No torch.

The trace is the one ``torch.profiler`` exports. Events are matched to recorded calls by what the
profiler itself wrote: the ``atenmap#<index>`` ranges by name (renamed ``aten::add.Tensor @ main.py:24``),
op and runtime events by their ``External id`` (the op correlation ids the recording mapped to calls),
device events by ``External id`` and kernel name. Each matched event gets ``atenmap.*`` keys in its
``args``; nothing else in the file changes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

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

