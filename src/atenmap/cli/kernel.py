"""`atenmap kernel NAME`: from a profiler's kernel name to its source and operators."""
from __future__ import annotations

import json
import sys
from pathlib import Path
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
    from atenmap.views.kernel import kernels_json, kernels_text

    if from_trace:
        if names:
            raise AtenmapError("give kernel names or --from-trace FILE, not both")
        _from_trace(from_trace, source, no_codegen, codegen, as_json)
        return
    queries: list[str] = []
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
        typer.echo(json.dumps(kernels_json(matches, single=True), indent=2))
        return
    if len(matches) == 1 and not matches[0].found:
        m = matches[0]
        raise AtenmapError(f"no kernel named {(m.function or m.query)[:120]!r} in the index"
                           + (f"; nearest: {', '.join(m.nearest)}" if m.nearest else ""))
    echo_text(kernels_text(matches, gen, term=terminal(wide)))


def _from_trace(path: str, source, no_codegen, codegen, as_json: bool, wide: bool = False) -> None:
    """Every device event of a recorded trace, answered as `atenmap trace` answers it
    (trace/fromtrace.py); what the trace lacks is one note line each on stderr."""
    from atenmap.cli.plain import byte_progress
    from atenmap.trace.fromtrace import answer, trace_kernels_json, trace_kernels_text

    with open_index(source, no_codegen, codegen) as ix:
        cb, done = byte_progress(f"reading {Path(path).name}")
        try:
            ans = answer(ix, path, cb)
        finally:
            done()
        gen = ix.generated_root
    for note in ans.notes:
        echo_text(f"atenmap: note: {note}", err=True)
    if not ans.kernels:
        raise AtenmapError(f"{path}: no GPU kernel, memcpy or memset events in this trace")
    if as_json:
        typer.echo(json.dumps(trace_kernels_json(ans), indent=2))
    else:
        echo_text(trace_kernels_text(ans, gen))
