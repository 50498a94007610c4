"""``atenmap kernel --from-trace``: every device event of a recorded trace, answered as ``atenmap
trace`` answers it. No torch.

The trace is read into a ``Recording`` (``tracefile.read_recording``: each op that launched device
work is a call, with its External id's op, the overload its input types pick, its Python stack)
and joined by the same ``Joiner`` as a live trace: per kernel event the op the trace records comes
first, then the chain step that reaches the kernel (Note [The step before a launch]), the launch
line, and the user's frames. Per kernel name, the static answer (``Index.kernel``) follows.
Events with the same kernel, op, stack and step are counted together, so the answer's size is
that of the distinct launch sites, not of the trace.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from atenmap.model import KernelMatch
from atenmap.trace.join import Entry, Joiner
from atenmap.trace.report import entry_text, stack_text
from atenmap.trace.tracefile import read_recording


@dataclass
class Launch:
    """Launches of one kernel by one op at one place of the user's code."""

    entry: Entry  # the first of them, as joined
    count: int = 0
    duration_us: float = 0.0

    def to_dict(self, base: str | None = None) -> dict:
        e, c = self.entry, self.entry.call
        d = e.to_dict()
        d.pop("kernel", None)
        d.pop("index", None)
        d["text"] = entry_text(e)
        d["source"] = stack_text(c.stack, base) if c is not None else None
        d["exact_lines"] = all(f.exact for f in c.stack) if c is not None and c.stack else None
        d["count"], d["duration_us"] = self.count, self.duration_us
        return d


@dataclass
class KernelAnswer:
    name: str
    match: KernelMatch | None
    count: int = 0
    launches: dict[tuple, Launch] = field(default_factory=dict)

    def launched_by(self) -> dict[str, int]:
        """op -> launches, as the trace records them (External id), overloads picked."""
        out: dict[str, int] = {}
        for ln in self.launches.values():
            c = ln.entry.call
            if c is not None:
                out[c.op] = out.get(c.op, 0) + ln.count
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


@dataclass
class TraceAnswer:
    kernels: list[KernelAnswer]
    notes: list[str]
    events: int  # device events answered

    def matches(self) -> list[KernelMatch]:
        return [k.match for k in self.kernels if k.match is not None]


def answer(index, path: str | os.PathLike, progress=None) -> TraceAnswer:
    """Every device event of the chrome trace at ``path``, joined with ``index``."""
    rec = read_recording(path, progress)
    joiner = Joiner(index)
    by_name: dict[str, KernelAnswer] = {}
    n = 0
    for e in joiner.entries(rec):
        k = e.kernel
        if k is None:
            continue
        n += 1
        ka = by_name.get(k.name)
        if ka is None:
            ka = by_name[k.name] = KernelAnswer(k.name, joiner.kernel_match(k.name))
        ka.count += 1
        c = e.call
        lead = e.lead()
        key = (c.op if c else None, c.key if c else None, c.stack if c else None, c.function if c else None,
               c.parents if c else (), (lead.file, lead.line) if lead else None)
        ln = ka.launches.get(key)
        if ln is None:
            ln = ka.launches[key] = Launch(e)
        ln.count += 1
        ln.duration_us += k.duration_us
    return TraceAnswer(list(by_name.values()), list(rec.notes), n)
