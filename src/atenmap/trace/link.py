"""Profiler events -> which recorded call issued each op event and each device kernel. No torch.

Note [Linking kernels to calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The dispatch mode wraps every aten call it sees in a profiler range named ``atenmap#<index>``
(``_RecordFunctionFast``, about 1 µs). In the profiler's results every host op event carries a
correlation id (kineto's "External id"); every device event (kernel, memcpy, memset) and every
runtime event (``cudaLaunchKernel``) carries the correlation id of the op event that was innermost
when it was issued, as ``linked_correlation_id``. So:

1. per host thread, sweep the op events in start order with a stack of open events; an
   ``atenmap#i`` range makes ``i`` the current call for everything that opens inside it, and the
   op events still open around it are its parents (``aten::linear`` > ``aten::matmul`` for an
   ``aten::mm`` that came from a composite; ``autograd::engine::evaluate_function: MmBackward0``
   in a backward pass);
2. each device event joins the call of the op event its ``linked_correlation_id`` names.

Ranges do not nest (the mode is off while the op it wraps runs), so the innermost range is the
call. Device events linked to no range (work issued before the mode, or by other threads'
un-traced code) are kept as unattributed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from atenmap.trace.events import Kernel

LABEL = "atenmap#"
_SKIP_PARENTS = {"PythonDispatchMode", "PythonSubclass"}
_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


class ProfEvent(NamedTuple):
    """The fields of one kineto event that linking needs (a tuple: there are many of them)."""

    name: str
    device: str  # "cpu", "cuda", ...
    correlation: int
    linked: int  # linked_correlation_id: 0 for host op events
    start_ns: int
    end_ns: int
    thread: int = 0
    device_index: int = 0
    activity: str = ""  # kineto activity type: cpu_op, user_annotation, kernel, gpu_memcpy, cuda_runtime, ...


@dataclass
class Linked:
    parents: dict[int, tuple[str, ...]] = field(default_factory=dict)
    kernels: dict[int, list[Kernel]] = field(default_factory=dict)
    op_events: dict[int, int] = field(default_factory=dict)  # op correlation id -> call index
    unattributed: list[Kernel] = field(default_factory=list)


def label(index: int) -> str:
    return f"{LABEL}{index}"


def label_index(name: str) -> int | None:
    if not name.startswith(LABEL):
        return None
    try:
        return int(name[len(LABEL):])
    except ValueError:
        return None


def link(events: list[ProfEvent]) -> Linked:
    """See Note [Linking kernels to calls]."""
    out = Linked()
    threads: dict[int, list[ProfEvent]] = {}
    device: list[ProfEvent] = []
    for e in events:
        if e.device != "cpu":
            device.append(e)
        elif e.linked == 0:
            threads.setdefault(e.thread, []).append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e.start_ns, -e.end_ns))
        stack: list[tuple[int, str, int | None]] = []  # (end_ns, name, call index in force)
        for e in evs:
            while stack and stack[-1][0] <= e.start_ns:
                stack.pop()
            idx = label_index(e.name)
            if idx is not None:
                out.parents[idx] = tuple(n for _, n, _ in stack if n not in _SKIP_PARENTS and label_index(n) is None)
                out.op_events[e.correlation] = idx
                current = idx
            else:
                current = stack[-1][2] if stack else None
                if current is not None:
                    out.op_events[e.correlation] = current
            stack.append((e.end_ns, e.name, current))
    for e in sorted(device, key=lambda e: e.start_ns):
        kind = _KINDS.get(e.activity, "other") if e.activity else "kernel"
        k = Kernel(e.name, (e.end_ns - e.start_ns) / 1000.0, e.device_index, kind, e.linked)
        idx = out.op_events.get(e.linked)
        if idx is None:
            out.unattributed.append(k)
        else:
            out.kernels.setdefault(idx, []).append(k)
    return out
