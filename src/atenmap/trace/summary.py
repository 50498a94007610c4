"""A trace's answer as one table, the way profilers show it: one row per (kernel, op, ATen launch
line, user line), with time, share, count and mean; several traces (a job's ranks) merged into one
table with a time per rank. No torch, no index: rows are made from ``fromtrace.TraceAnswer``.

Note [One row per kernel, op and line]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``fromtrace`` counts launches per (kernel, op, whole stack, step); a table row is coarser: the
kernel, the op the trace records (the overload its input types pick), the ATen ``file:line`` of the
step before the launch (Note [The step before a launch]) and the user's innermost line. A frame
known only by its function's first line (a chrome trace records no calling line) says so:
``train.py:4 (def main)``. On a CPU profile (no device events) the "kernel" is the op's kernel
function from its chain (the native where the chain has none, the op's name where there is no
chain) and the time is the op's CPU time. Times are µs; a row's share is of the table's total, so
the shares of a whole table add up to 100 %.
"""
from __future__ import annotations

import csv
import io
import os
import statistics
from dataclasses import dataclass, field

from atenmap.trace.report import first_line_mark, short_kernel

SORTS = ("time", "count", "name")
COLUMNS = ("time_us", "share", "count", "mean_us", "kernel", "op", "aten", "user")


@dataclass(frozen=True)
class Row:
    kernel: str  # the profiler's kernel name (a CPU op's kernel function on a CPU profile)
    op: str  # "" where no op event issued it
    aten: str  # "Loops.cuh:94", "" where there is no chain step
    user: str  # "train.py:12", "train.py:4 (def main)", "" where no frame is the user's
    count: int
    time_us: float
    ranks: tuple[float, ...] = ()  # time per trace, in Summary.ranks order (several traces only)

    @property
    def mean_us(self) -> float:
        return self.time_us / self.count if self.count else 0.0


@dataclass(frozen=True)
class Rank:
    label: str  # the trace file's name
    time_us: float
    events: int
    notes: tuple[str, ...] = ()


@dataclass
class Summary:
    rows: list[Row]
    host: bool = False  # a CPU profile: "kernel" is a kernel function, time is CPU time
    ranks: list[Rank] = field(default_factory=list)  # several traces: one each

    @property
    def total_us(self) -> float:
        return sum(r.time_us for r in self.rows)

    def sorted(self, by: str = "time", top: int = 0) -> list[Row]:
        if by not in SORTS:
            raise ValueError(f"sort by {by!r}: one of {', '.join(SORTS)}")
        key = {"time": lambda r: (-r.time_us, -r.count, r.kernel), "count": lambda r: (-r.count, -r.time_us, r.kernel),
               "name": lambda r: (r.kernel, r.op, r.user)}[by]
        rows = sorted(self.rows, key=key)
        return rows[:top] if top > 0 else rows

    def outliers(self, spread: float = 0.1) -> list[tuple[Rank, float]]:
        """The ranks whose time is furthest from the median, by more than ``spread`` of it, furthest
        first: (rank, its time over the median, minus 1)."""
        if len(self.ranks) < 3:
            return []
        med = statistics.median(r.time_us for r in self.ranks)
        if med <= 0:
            return []
        off = [(r, r.time_us / med - 1) for r in self.ranks]
        return sorted([o for o in off if abs(o[1]) > spread], key=lambda o: -abs(o[1]))


def user_line(stack, base: str | None = None) -> str:
    """The innermost user frame as ``file:line``, marked where it is the function's first line."""
    if not stack:
        return ""
    f = stack[-1]
    name = os.path.basename(f.file) if base is None else os.path.relpath(f.file, base) if os.path.isabs(f.file) else f.file
    return f"{name}:{f.line}{first_line_mark(f)}"


def _step_place(step) -> str:
    if step is None or step.file is None:
        return ""
    return f"{os.path.basename(step.file)}:{step.line}"


def places(e) -> tuple[str, str]:
    """(ATen ``file:line``, user ``file:line``) of a joined ``Entry``: its row's ``aten`` and ``user``
    columns (Note [One row per kernel, op and line]); chrome.py writes the same on its device event."""
    c = e.call
    if e.inductor is not None and getattr(e.inductor, "definition", None) is not None:
        d = e.inductor.definition
        aten = f"{os.path.basename(d.file)}:{d.line}" if getattr(d, "file", None) else ""
    else:
        aten = _step_place(e.lead())
    return aten, user_line(c.stack) if c is not None else ""


def rows(answer, host: bool = False) -> list[Row]:
    """The table rows of one ``fromtrace.TraceAnswer`` (Note [One row per kernel, op and line])."""
    out: dict[tuple, list] = {}
    for k in answer.kernels:
        for ln in k.launches.values():
            e = ln.entry
            c = e.call
            key = (k.name, c.op if c is not None else "", *places(e))
            acc = out.get(key)
            if acc is None:
                acc = out[key] = [0, 0.0]
            acc[0] += ln.count
            acc[1] += ln.duration_us
    return [Row(*key, count, t) for key, (count, t) in out.items()]


def merge(parts: list[tuple[Rank, list[Row]]], host: bool = False) -> Summary:
    """Several traces' rows as one table, each row with its time per trace."""
    if len(parts) == 1:
        return Summary(parts[0][1], host, [parts[0][0]])
    n = len(parts)
    acc: dict[tuple, list] = {}
    for i, (_rank, rs) in enumerate(parts):
        for r in rs:
            key = (r.kernel, r.op, r.aten, r.user)
            a = acc.get(key)
            if a is None:
                a = acc[key] = [0, 0.0, [0.0] * n]
            a[0] += r.count
            a[1] += r.time_us
            a[2][i] += r.time_us
    return Summary([Row(*key, c, t, tuple(per)) for key, (c, t, per) in acc.items()], host, [p[0] for p in parts])


# ---- rendering -------------------------------------------------------------------------------
def fmt_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f}s"
    if us >= 1e3:
        return f"{us / 1e3:.2f}ms"
    return f"{us:.1f}us"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def table_lines(summary: Summary, by: str = "time", top: int = 0, width: int | None = None) -> list[str]:
    """The table as text lines, each at most ``width`` columns (None: whole lines)."""
    rows = summary.sorted(by, top)
    total = summary.total_us or 1.0
    per_rank = len(summary.ranks) > 1 and len(summary.ranks) <= 8
    head = ["time", "share", "count", "mean"] + ([r.label for r in summary.ranks] if per_rank else []) + \
        ["function" if summary.host else "kernel", "op", "aten", "user"]
    body = []
    for r in rows:
        body.append([fmt_time(r.time_us), f"{100 * r.time_us / total:.1f}%", str(r.count), fmt_time(r.mean_us)]
                    + ([fmt_time(t) for t in r.ranks] if per_rank else [])
                    + [short_kernel(r.kernel) if not summary.host else r.kernel, r.op or "-", r.aten or "-", r.user or "-"])
    fixed = len(head) - 4
    widths = [max([len(head[i])] + [len(b[i]) for b in body]) for i in range(len(head))]
    if width is not None:  # the text columns give way in turns: kernel, op, aten, user (Note [Terminal output])
        room = width - sum(widths[:fixed]) - 2 * (len(head) - 1)
        text = widths[fixed:]
        for floors in ((24, 99, 99, 99), (24, 20, 99, 99), (24, 20, 14, 99), (12, 14, 10, 99), (10, 10, 8, 16)):
            for i, f in enumerate(floors):
                over = sum(text) - room
                if over > 0 and text[i] > f:
                    text[i] -= min(over, text[i] - f)
        widths[fixed:] = text
    lines = []
    for cells in [head] + body:
        parts = [c.rjust(w) if i < fixed else _cut(c, w).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        line = "  ".join(parts).rstrip()
        lines.append(line if width is None else line[:width])
    return lines


def summary_text(summary: Summary, by: str = "time", top: int = 0, width: int | None = None) -> str:
    kind = "CPU time of the host's ops" if summary.host else "device time"
    shown = len(summary.sorted(by, top))
    lines = [f"{fmt_time(summary.total_us)} {kind}, {sum(r.count for r in summary.rows)} events, "
             f"{len(summary.rows)} rows" + (f" (top {shown})" if shown < len(summary.rows) else "")]
    if len(summary.ranks) > 1:
        lines[0] += f", {len(summary.ranks)} traces"
    lines += [""] + table_lines(summary, by, top, width)
    if len(summary.ranks) > 1:
        lines += ["", "per trace:"]
        lab = max(len(r.label) for r in summary.ranks)
        flagged = {id(r): off for r, off in summary.outliers()}
        for r in summary.ranks:
            mark = f"  {flagged[id(r)]:+.0%} from the median" if id(r) in flagged else ""
            lines.append(_cut(f"  {r.label.ljust(lab)}  {fmt_time(r.time_us):>10}  {r.events} events{mark}",
                              width or 10 ** 6))
    return "\n".join(lines)


def summary_records(summary: Summary, by: str = "time", top: int = 0) -> list[dict]:
    """The rows as plain data (``--format json``; ``--format csv`` writes the same fields)."""
    total = summary.total_us or 1.0
    out = []
    for r in summary.sorted(by, top):
        d = {"time_us": round(r.time_us, 3), "share": round(r.time_us / total, 6), "count": r.count,
             "mean_us": round(r.mean_us, 3), "kernel": r.kernel, "op": r.op, "aten": r.aten, "user": r.user}
        if len(summary.ranks) > 1:
            d["ranks"] = {rk.label: round(t, 3) for rk, t in zip(summary.ranks, r.ranks)}
        out.append(d)
    return out


def summary_json(summary: Summary, by: str = "time", top: int = 0) -> dict:
    return {"time_us": round(summary.total_us, 3), "host": summary.host,
            "traces": [{"label": r.label, "time_us": round(r.time_us, 3), "events": r.events, "notes": list(r.notes)}
                       for r in summary.ranks],
            "outliers": [{"label": r.label, "off_median": round(off, 4)} for r, off in summary.outliers()],
            "rows": summary_records(summary, by, top)}


def summary_csv(summary: Summary, by: str = "time", top: int = 0) -> str:
    """CSV, one header line: COLUMNS, then one column per trace where there are several."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    labels = [r.label for r in summary.ranks] if len(summary.ranks) > 1 else []
    w.writerow(list(COLUMNS) + labels)
    for d in summary_records(summary, by, top):
        w.writerow([d[c] for c in COLUMNS] + [d["ranks"][lab] for lab in labels])
    return buf.getvalue()
