"""`atenmap kernel NAME`: from a profiler's kernel name to its source and operators."""
from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, echo_text, open_index
from atenmap.cli.output import WideOpt, terminal

MAX_LINE = 64 * 1024


@app.command("kernel")
def kernel_cmd(
    names: Optional[List[str]] = typer.Argument(None, help="Kernel name(s) as a profiler prints them (demangled, mangled _Z..., or plain); '-' reads one per line from stdin."),
    from_trace: Optional[str] = typer.Option(None, "--from-trace", help="A torch.profiler / Kineto chrome trace (.json): answer every kernel in it."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
) -> None:
    """Where a GPU kernel comes from: its __global__ definition, launch lines, functor or lambda,
    and the operators that reach it. Example: atenmap kernel 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)'"""
    from atenmap.trace.chrome import read_trace, trace_launchers
    from atenmap.views.kernel import kernels_json, kernels_text

    queries: list[str] = []
    counts: dict[str, int] | None = None
    launchers: dict[str, dict[str, int]] = {}
    if from_trace:
        launchers = trace_launchers(from_trace)
        counts = {}
        for n in read_trace(from_trace):
            counts[n] = counts.get(n, 0) + 1
        queries += counts
        if not queries:
            raise AtenmapError(f"{from_trace}: no GPU kernel, memcpy or memset events in this trace")
    for n in names or []:
        if n == "-":
            queries += [line.strip()[:MAX_LINE] for line in sys.stdin if line.strip()]
        else:
            queries.append(n[:MAX_LINE])
    if not queries:
        raise AtenmapError("give a kernel name, '-' for names on stdin, or --from-trace FILE")
    with open_index(source, no_codegen, codegen) as ix:
        matches = ix.kernels(queries)
        gen = ix.generated_root
    if as_json:
        typer.echo(json.dumps(kernels_json(matches, counts, launchers, single=not from_trace), indent=2))
        return
    if len(matches) == 1 and not matches[0].found:
        m = matches[0]
        raise AtenmapError(f"no kernel named {(m.function or m.query)[:120]!r} in the index"
                           + (f"; nearest: {', '.join(m.nearest)}" if m.nearest else ""))
    echo_text(kernels_text(matches, gen, counts, launchers, terminal(wide)))
