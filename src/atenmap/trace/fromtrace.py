"""``atenmap kernel --from-trace``: every device event of a recorded trace, answered as ``atenmap
trace`` answers it. No torch.

The trace is read into a ``Recording`` (``tracefile.read_recording``: each op that launched device
work is a call, with its External id's op, the overload its input types pick, its Python stack)
and joined by the same ``Joiner`` as a live trace: per kernel event the op the trace records comes
first, then the chain step that reaches the kernel (Note [The step before a launch]), the launch
line, and the user's frames. Per kernel name, the static answer (``Index.kernel``) follows.
Events with the same kernel, op, stack and step are counted together, so the answer's size is
that of the distinct launch sites, not of the trace. ``trace_kernels_text``/``_json`` render it
(the static part through the lines the caller passes, views.kernel's).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from atenmap.model_answers import KernelMatch
from atenmap.trace.join import Entry, Joiner
from atenmap.trace.report import entry_text, fmt_us, stack_text
from atenmap.trace.spill import stream_recording
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


def answer(index, path: str | os.PathLike, progress=None, bounded: bool = True) -> TraceAnswer:
    """Every device event of the chrome trace at ``path``, joined with ``index``. ``bounded``: read in
    bounded memory (spill.py, Note [A trace larger than memory]); else held in memory
    (``read_recording``). The answers are the same."""
    if not bounded:
        return _answer(index, read_recording(path, progress))
    with stream_recording(path, progress) as rec:
        return _answer(index, rec)


def _answer(index, rec) -> TraceAnswer:
    joiner = Joiner(index)
    by_name: dict[str, KernelAnswer] = {}
    n = 0
    for e in joiner.iter_entries(rec):  # counted as they come: no list of every event's Entry
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


MAX_LAUNCH_LINES = 8


def trace_kernels_text(ans: TraceAnswer, static_lines: Callable[[KernelMatch, int], list[str]],
                       base: str | None = None) -> str:
    """``static_lines(match, count)``: the static answer's lines for one kernel (the caller passes
    views.kernel.kernel_lines: trace/ renders no static answer itself and never imports views/)."""
    blocks = []
    for k in ans.kernels:
        static = static_lines(k.match, k.count) if k.match is not None else [f"kernel: {k.name}"]
        lines = static[:1] + ["launched in this trace by:"]
        launches = _ordered(k)
        for ln in launches[:MAX_LAUNCH_LINES]:
            c = ln.entry.call
            where = stack_text(c.stack, base) if c is not None else "(no op event)"
            if c is not None and c.stack and not c.stack[-1].exact:
                where += " (function's first line)"
            lines.append(f"  {where}")
            lines.append(f"    {_text(ln)}  ({ln.count} launch{'es' if ln.count != 1 else ''}, {fmt_us(ln.duration_us)})")
        if len(launches) > MAX_LAUNCH_LINES:
            lines.append(f"  … {len(launches) - MAX_LAUNCH_LINES} more places")
        blocks.append("\n".join(lines + static[1:]))
    return f"{ans.events} device events, {len(ans.kernels)} kernels\n\n" + "\n\n".join(blocks)


def _ordered(k) -> list:
    """Launches tied to an op first (the trace's own answer), most frequent first."""
    return sorted(k.launches.values(), key=lambda ln: (ln.entry.call is None, -ln.count))


def _text(ln) -> str:
    return entry_text(ln.entry)


def trace_kernels_json(ans: TraceAnswer, base: str | None = None) -> list[dict]:
    """One dict per kernel name: ``Index.kernel``'s answer, ``count``, ``trace_operators`` (op ->
    launches, as the trace records them, overloads picked) and ``launches_in_trace`` (per op and
    place: op, key, stack, chain, lead step, site, count)."""
    out = []
    for k in ans.kernels:
        d = k.match.to_dict() if k.match is not None else {"query": k.name}
        d["count"] = k.count
        d["trace_operators"] = k.launched_by()
        d["launches_in_trace"] = [ln.to_dict(base) for ln in _ordered(k)]
        ind = next((ln.entry.inductor for ln in _ordered(k) if ln.entry.inductor is not None), None)
        if ind is not None:
            from atenmap.trace.inductor import answer_dict

            d["inductor"] = answer_dict(ind)
        out.append(d)
    return out
