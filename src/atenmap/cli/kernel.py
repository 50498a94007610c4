"""`atenmap kernel NAME`: from a profiler's kernel name to its source and operators."""
from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, open_index

MAX_LINE = 64 * 1024


@app.command("kernel")
def kernel_cmd(
    names: Optional[List[str]] = typer.Argument(None, help="Kernel name(s) as a profiler prints them (demangled, mangled _Z..., or plain); '-' reads one per line from stdin."),
    from_trace: Optional[str] = typer.Option(None, "--from-trace", help="A torch.profiler / Kineto chrome trace (.json): answer every kernel in it."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Where a GPU kernel comes from: its __global__ definition, launch lines, functor or lambda,
    and the operators that reach it. Example: atenmap kernel 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)'"""
    from atenmap.resolve.kernels import KernelIndex, read_trace, trace_launchers

    queries: list[str] = []
    counts: dict[str, int] = {}
    launchers: dict[str, dict[str, int]] = {}
    if from_trace:
        launchers = trace_launchers(from_trace)
        for n in read_trace(from_trace):
            if n not in counts:
                queries.append(n)
            counts[n] = counts.get(n, 0) + 1
        if not queries:
            raise AtenmapError(f"{from_trace}: no GPU kernel, memcpy or memset events in this trace")
    for n in names or []:
        if n == "-":
            for line in sys.stdin:
                line = line.rstrip("\n")[:MAX_LINE]
                if line.strip():
                    queries.append(line.strip())
        else:
            queries.append(n[:MAX_LINE])
    if not queries:
        raise AtenmapError("give a kernel name, '-' for names on stdin, or --from-trace FILE")
    with open_index(source, no_codegen, codegen) as ix:
        kx = KernelIndex(ix.store)
        gen = ix.store.meta().get("codegen_dir") or None
        results = []
        for q in queries:
            try:
                results.append(kx.lookup(q))
            except AtenmapError as exc:
                if len(queries) == 1:
                    raise
                typer.echo(f"atenmap: skipped {q[:80]!r}: {exc}", err=True)
    if as_json:
        out = []
        for m in results:
            d = m.to_dict()
            if counts:
                d["count"] = counts.get(m.name.raw, 0)
                d["trace_operators"] = launchers.get(m.name.raw, {})
            out.append(d)
        typer.echo(json.dumps(out if len(out) != 1 or from_trace else out[0], indent=2))
        return
    if len(results) == 1 and not results[0].found:
        m = results[0]
        raise AtenmapError(f"no kernel named {(m.name.function or m.name.raw)[:120]!r} in the index"
                           + (f"; nearest: {', '.join(m.nearest)}" if m.nearest else ""))
    for i, m in enumerate(results):
        if i:
            typer.echo("")
        typer.echo("\n".join(render_match(m, gen, counts.get(m.name.raw), launchers.get(m.name.raw))))


def render_match(m, gen: str | None, count: int | None = None, launched_by: dict | None = None) -> list[str]:
    from atenmap.views.text import _short

    n = m.name
    head = n.qualname or n.function or n.raw[:120]
    lines = [f"kernel: {head}" + (f"  ({count} launch{'es' if count != 1 else ''} in the trace)" if count else "")
             + (f"  [{n.kind}{': ' + m.library if m.library else ''}]" if n.kind != "kernel" else "")]
    rows = []
    if m.definition:
        rows.append((m.definition, "definition", f"__global__ {m.definition.symbol}"))
    for s in m.launches[:12]:
        rows.append((s, "launch", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    if len(m.launches) > 12:
        rows.append((None, "launch", f"… {len(m.launches) - 12} more launch lines"))
    for s in m.functors:
        rows.append((s, "functor", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    for s in m.library_calls[:10]:
        rows.append((s, "calls", f"{s.symbol}  — {s.detail}" if s.detail else s.symbol))
    width = max((len(_short(f"{s.file}:{s.line}", gen)) for s, _, _ in rows if s), default=0)
    for s, role, text in rows:
        loc = _short(f"{s.file}:{s.line}", gen) if s else ""
        lines.append(f"{loc:<{width}}  {role:<10} {_short(text, gen)}")
    for note in m.notes + list(n.notes):
        lines.append(f"note: {note}")
    if launched_by:
        lines.append("launched in this trace by: " + ", ".join(
            f"{op} ({n})" for op, n in sorted(launched_by.items(), key=lambda kv: -kv[1])))
    if m.operators:
        lines.append("operators (most likely first): " + ", ".join(m.operators[:12])
                     + (f", … ({len(m.operators)})" if len(m.operators) > 12 else ""))
    if not m.found:
        lines.append("no kernel of that name in the index" + (
            "; nearest: " + ", ".join(m.nearest) if m.nearest else ""))
    return lines
