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

import dataclasses
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

from atenmap.errors import AtenmapError
from atenmap.model_answers import KernelMatch
from atenmap.resolve.versions import recorded_with
from atenmap.trace.events import Kernel
from atenmap.trace.join import Entry, Joiner
from atenmap.trace.report import entry_text, fmt_us, short_symbol, stack_text
from atenmap.trace.summary import Rank, merge, rows as summary_rows
from atenmap.trace.spill import Repeat, stream_recording
from atenmap.trace.tracefile import read_recording, reading


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
    events: int  # device events answered (host ops on a CPU profile)
    host: bool = False  # a CPU profile: each "kernel" is a host op's kernel function, its time CPU time
    annotated: int = 0  # written back with source locations (``answer``'s ``chrome``): events that got them

    def matches(self) -> list[KernelMatch]:
        return [k.match for k in self.kernels if k.match is not None]


def answer(index, path: str | os.PathLike, progress=None, bounded: bool = True,
           chrome: str | os.PathLike | None = None, platform: str = "cuda") -> TraceAnswer:
    """Every device event of the chrome trace at ``path``, joined with ``index``. ``bounded``: read in
    bounded memory (spill.py, Note [A trace larger than memory]); else held in memory
    (``read_recording``). The answers are the same. ``chrome``: also write the trace to this other
    file with each event's source locations in its ``args`` (Note [A recorded trace written back]).
    ``platform``: the build the trace was recorded on (Note [A trace of another platform] in join.py)."""
    if chrome is not None:
        return _answer_to_chrome(index, path, chrome, progress, platform)
    if not bounded:
        rec = read_recording(path, progress)
        return _answer(index, rec, not rec.unattributed and not any(c.kernels for c in rec.calls), platform=platform)
    with reading():  # the walk and the join too (Note [No cycle collection while reading])
        with stream_recording(path, progress, repeats=True) as rec:
            ans = _answer(index, rec, rec.host, platform=platform)
        del rec  # its held rows go before the collector is back
    return ans


# Note [A recorded trace written back]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``kernel --from-trace T --chrome OUT`` writes T again with the args ``atenmap trace --chrome``
# writes (chrome.Annotations, Note [Chrome args once per call]): on each kernel, memcpy and memset
# event its row of the table (op, ATen line, user line), its kernel's definition and launch line
# and the call's number; the call's chain on its op event. T is read by the bounded reader of the
# table (spill.py), which tells each op event's External id and its call as it makes the calls;
# what each event gets is kept in a temporary SQLite file, not in memory (Note [The annotations of
# a long trace] in chrome.py). The rewrite then streams (Note [The chrome rewrite streams] in
# chrome.py): a chunk and an event at a time, never the file's text. The answer is the one the
# table and ``--detail`` give (the same join). OUT is never T (refused, one line: the
# input is the only copy of a profile), and is written through a temporary file beside it, renamed
# into place; a ``.gz`` OUT is gzip. A trace that cannot be written back (a truncated file: its
# events answer, its JSON does not close) is one line; OUT is then not made.
def _answer_to_chrome(index, path, out, progress=None, platform: str = "cuda") -> TraceAnswer:
    from atenmap.trace.outputs import writable
    from atenmap.trace.chrome import Annotations

    if os.path.abspath(out) == os.path.abspath(path) or (os.path.exists(out) and os.path.exists(path)
                                                         and os.path.samefile(out, path)):
        raise AtenmapError(f"{out}: that is the trace being read; atenmap never writes over its input: "
                           "give another file")
    writable(out)
    notes = Annotations(spilled=True)
    try:
        with reading():  # Note [No cycle collection while reading]
            with stream_recording(path, progress, repeats=True, ops=notes.map_op) as rec:
                notes.firsts, notes.procs = rec.firsts, (rec.pids, rec.device_procs)
                ans = _answer(index, rec, rec.host, notes.add, platform, notes.repeat)
            del rec
        if not ans.kernels:  # nothing to annotate: the caller says so in one line, and OUT is not made
            return ans
        try:
            ans.annotated = notes.write(path, out)
        except ValueError as exc:  # its JSON does not parse to the end (json.JSONDecodeError is a ValueError)
            raise AtenmapError(f"{path}: cannot be written back as a chrome trace ({str(exc)[:100]}); "
                               f"{out} not written") from None
        except OSError as exc:
            raise AtenmapError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        notes.close()
    return ans


def _answer(index, rec, host: bool = False, each: Callable | None = None, platform: str = "cuda",
            each_repeat: Callable | None = None) -> TraceAnswer:
    """``host``: a CPU profile, whose host ops stand where kernels would (Note [One row per kernel,
    op and line] in summary.py). ``each``: called with every joined Entry (chrome.Annotations.add);
    ``each_repeat``: with (call index, first call, External id) of every ``Repeat`` (chrome.Annotations.repeat)."""
    joiner = Joiner(index, platform)
    by_name: dict[str, KernelAnswer] = {}
    leads: dict = {}
    n = 0
    firsts = getattr(rec, "firsts", None)  # a streamed read with repeats (Note [Repeated calls counted, not made])
    went: dict[int, list] = {}  # a first call's index -> where each of its entries counted (None: not counted)
    if firsts is not None:
        rec = dataclasses.replace(rec, calls=_counting_repeats(rec.calls, went, each_repeat))
    for e in joiner.iter_entries(rec):  # counted as they come: no list of every event's Entry
        if each is not None:
            each(e)
        k = e.kernel
        c = e.call
        to = went.setdefault(c.index, []) if firsts is not None and c is not None and c.index in firsts else None
        if k is None:
            if not host or c is None:
                if to is not None:
                    to.append(None)
                continue
            lead = e.lead()
            name = short_symbol(lead.symbol) if lead is not None else e.call.op
            k = Kernel(name, e.call.cpu_us, kind="host", correlation=e.call.correlation)
        n += 1
        ka = by_name.get(k.name)
        if ka is None:
            ka = by_name[k.name] = KernelAnswer(k.name, _with_trace_version(
                joiner.kernel_match(k.name) if not host else None, rec.torch_version))
        ka.count += 1
        c = e.call
        lead = _lead(e, leads)
        key = (c.op if c else None, c.key if c else None, c.stack if c else None, c.function if c else None,
               c.parents if c else (), (lead.file, lead.line) if lead else None)
        ln = ka.launches.get(key)
        if ln is None:
            ln = ka.launches[key] = Launch(e)
        ln.count += 1
        ln.duration_us += k.duration_us
        if to is not None:
            to.append((ka, ln))
    return TraceAnswer(list(by_name.values()), list(rec.notes), n + sum(went.pop(-1, ())), host)


def _counting_repeats(calls, went: dict, each_repeat: Callable | None = None):
    """``calls`` without their ``Repeat``s, each of which is counted where its first call's entries
    went (``went``: filled by ``_answer`` as it joins the first calls, before the next call is
    asked for): its device events' durations in kernel order, or on a CPU profile its own CPU time
    (Note [Repeated calls counted, not made]). ``went[-1]``: the entries so counted, one each.
    ``each_repeat``: told each Repeat's own call index (the indexes run on over the Repeats)."""
    counted = went.setdefault(-1, [0])
    for index, c in enumerate(calls):
        if type(c) is not Repeat:
            yield c
            continue
        if each_repeat is not None:
            each_repeat(index, c.first, c.correlation)
        to = went.get(c.first, ())
        durations = c.durations if c.durations else [c.cpu_us]
        for target, dur in zip(to, durations):
            if target is None:
                continue
            ka, ln = target
            ka.count += 1
            ln.count += 1
            ln.duration_us += dur
            counted[0] += 1


def _with_trace_version(match: KernelMatch | None, torch_version: str) -> KernelMatch | None:
    """``match`` with its line naming the tree's version ending with what the trace says of the torch
    that ran it, still one line (Note [Code of another version] in resolve/versions.py)."""
    if match is None or not match.version_note:
        return match
    line = match.version_note + recorded_with(torch_version)
    return dataclasses.replace(match, version_note=line,
                               notes=tuple(line if n == match.version_note else n for n in match.notes))


def _lead(e: Entry, leads: dict):
    """``e.lead()``, once per (chain, launch step, kernel name): what it depends on (Entry.lead,
    StaticChain.lead). The chain and the step are kept in ``leads`` beside the answer, so that the
    ids in its keys stay theirs."""
    ch, k = e.chain, e.kernel
    if ch is None or k is None:
        return e.lead()
    launch = e.site.launch if e.site is not None else None
    key = (id(ch), id(launch), k.name)
    hit = leads.get(key)
    if hit is None or hit[0] is not ch or hit[1] is not launch:
        hit = leads[key] = (ch, launch, e.lead())
    return hit[2]


def recording_summary(index, rec, label: str = "this run"):
    """A live ``Recording`` as a one-trace ``summary.Summary`` (``atenmap trace --summary``)."""
    host = not rec.unattributed and not any(c.kernels for c in rec.calls)
    ans = _answer(index, rec, host)
    rs = summary_rows(ans)
    return merge([(Rank(label, sum(r.time_us for r in rs), ans.events, tuple(ans.notes)), rs)], host)


def summarize(index, path: str | os.PathLike, progress=None, platform: str = "cuda"):
    """(``summary.Rank``, ``summary.Row`` list, host) of one trace: what a job's table is made of."""
    return _rank(answer(index, path, progress, platform=platform), path)


def _rank(ans: TraceAnswer, path):
    rs = summary_rows(ans)
    return Rank(os.path.basename(str(path)), sum(r.time_us for r in rs), ans.events, tuple(ans.notes)), rs, ans.host


def summarize_to_chrome(index, path: str | os.PathLike, out: str | os.PathLike, progress=None,
                        platform: str = "cuda"):
    """(``summary.Summary``, events annotated) of one trace, which is also written to ``out`` with
    each event's source locations (Note [A recorded trace written back])."""
    ans = answer(index, path, progress, chrome=out, platform=platform)
    rank, rs, host = _rank(ans, path)
    return merge([(rank, rs)], host), ans.annotated


def trace_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(trace files, notes): each path as given, or a folder's ``*.json``/``*.json.gz`` files
    (sorted); a folder's other files are passed over, one note for them all."""
    files, notes = [], []
    for p in paths:
        if os.path.isdir(p):
            names = sorted(os.listdir(p))
            found = [os.path.join(p, n) for n in names if n.endswith((".json", ".json.gz"))
                     and os.path.isfile(os.path.join(p, n))]
            other = len(names) - len(found)
            if other:
                notes.append(f"{p}: {other} entries that are not .json or .json.gz files passed over")
            if not found:
                notes.append(f"{p}: no .json or .json.gz trace files")
            files += found
        else:
            files.append(p)
    return files, notes


_OPENED: dict = {}  # (process id, index file) -> Index: each worker process opens the index once


def summarize_task(source, index_path: str, path: str, platform: str = "cuda"):
    """The per-trace work of a job, as a worker process runs it: ``summarize`` of the trace at
    ``path`` with the index file ``index_path`` (of ``source``) opened in this process, or the
    AtenmapError's line where the trace cannot be read. The local process pool and Dask's workers
    run this one function (Note [One function per trace, any engine])."""
    key = (os.getpid(), str(index_path))
    ix = _OPENED.get(key)
    if ix is None:  # never the parent's connection: it cannot cross processes
        from atenmap.api import Index

        ix = _OPENED[key] = Index.reopen(source, index_path)
    try:
        return summarize(ix, path, platform=platform)
    except AtenmapError as exc:
        return str(exc)


# Note [One function per trace, any engine]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A job's traces are independent: each is read, joined and made into rows by ``summarize_task``
# (picklable arguments only: the tree's SourceInfo, the index file's path, the trace's path), and
# the rows of all of them are merged by ``summary.merge`` in the order the paths were given. Where
# it runs is the only choice: in this process (one trace, or ``jobs=1``), in a local process pool
# (forked where the system forks: no second import of atenmap), or as tasks of a Dask cluster
# (``scheduler``: trace/daskjob.py) when one machine is not enough. The engines return the same
# results in the same order, so the tables are identical. Dask's workers must see the index file
# and the traces at the same paths (a shared file system) and have atenmap installed.
def summarize_job(index, paths: list[str], jobs: int | None = None, progress=None, scheduler: str | None = None,
                  platform: str = "cuda"):
    """Several traces (a job's ranks) as one ``summary.Summary`` with a time per trace, read in
    parallel over ``jobs`` processes (default: the cores) when there are several, or as tasks of the
    Dask scheduler at ``scheduler`` (an address, ``tcp://host:8786``), and the notes: one per trace
    that could not be read (the others still answer). Raises AtenmapError when none could, or when
    the scheduler cannot be reached."""
    notes: list[str] = []
    parts = []
    hosts = []
    if scheduler is not None:
        from atenmap.trace.daskjob import map_on_dask

        results = map_on_dask(scheduler, partial(summarize_task, platform=platform), index.source, str(index.path),
                              [os.path.abspath(p) for p in paths])
    elif len(paths) == 1 or (jobs or os.cpu_count() or 1) == 1:
        results = []
        for p in paths:
            try:
                results.append(summarize(index, p, progress, platform))
            except AtenmapError as exc:
                results.append(str(exc))
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing

        n = min(jobs or os.cpu_count() or 1, len(paths))
        # fork where there is one (no second import of atenmap per worker, ~0.5 s each); a worker opens
        # its own connection to the index file and never uses the parent's
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(n, mp_context=ctx) as pool:
            results = list(pool.map(partial(summarize_task, index.source, str(index.path), platform=platform), paths))
    for p, res in zip(paths, results):
        if isinstance(res, str):
            notes.append(res)
            continue
        rank, rs, host = res
        parts.append((rank, rs))
        hosts.append(host)
    if not parts:
        raise AtenmapError("no trace could be read: " + "; ".join(notes))
    if len(set(hosts)) > 1:
        notes.append("some traces are CPU profiles and some GPU traces: their times are summed as given")
    return merge(parts, host=all(hosts)), notes


MAX_LAUNCH_LINES = 8


def trace_kernels_text(ans: TraceAnswer, static_lines: Callable[[KernelMatch, int, bool], list[str]],
                       base: str | None = None) -> str:
    """``static_lines(match, count, guessed)``: the static answer's lines for one kernel, with the
    operators that can reach it where ``guessed`` (none of its events' op is recorded) (the caller
    passes views.kernel.kernel_lines: trace/ renders no static answer itself and never imports views/)."""
    blocks = []
    for k in ans.kernels:
        guessed = not k.launched_by()
        static = static_lines(k.match, k.count, guessed) if k.match is not None else [f"kernel: {k.name}"]
        lines = static[:1] + ["launched in this trace by:"]
        launches = _ordered(k)
        for ln in launches[:MAX_LAUNCH_LINES]:
            c = ln.entry.call
            where = stack_text(c.stack, base) if c is not None else "(no op event)"  # inexact frames marked
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
