"""``atenmap kernel --from-trace`` as text and JSON: per kernel name, its launches in the trace (the
op the trace records first, the chain step that reaches the kernel, the user's frames), then the
static answer of ``views.kernel``. Knows nothing of SQLite or typer."""
from __future__ import annotations

from atenmap.trace.fromtrace import TraceAnswer
from atenmap.trace.report import fmt_us, stack_text
from atenmap.views.kernel import kernel_lines

MAX_LAUNCH_LINES = 8


def trace_kernels_text(ans: TraceAnswer, generated_root: str | None = None, base: str | None = None) -> str:
    blocks = []
    for k in ans.kernels:
        static = kernel_lines(k.match, generated_root, k.count) if k.match is not None else [f"kernel: {k.name}"]
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
    from atenmap.trace.report import entry_text

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
        out.append(d)
    return out
