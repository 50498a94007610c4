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
        inductor = _inductor(ix, queries, wide)
    if as_json:
        out = kernels_json(matches, single=False)
        for d, m in zip(out, matches):
            if m.query in inductor:
                d["inductor"] = inductor[m.query][2]
        typer.echo(json.dumps(out[0] if len(out) == 1 else out, indent=2))
        return
    if len(matches) == 1 and not matches[0].found and matches[0].query in inductor:
        echo_text("\n".join(inductor[matches[0].query][1]))
        return
    if len(matches) == 1 and not matches[0].found:
        m = matches[0]
        raise AtenmapError(f"no kernel named {(m.function or m.query)[:120]!r} in the index"
                           + (f"; nearest: {', '.join(m.nearest)}" if m.nearest else ""))
    if not inductor:
        echo_text(kernels_text(matches, gen, term=terminal(wide)))
        return
    from atenmap.views.kernel import kernel_lines

    echo_text("\n\n".join("\n".join(kernel_lines(m, gen, term=terminal(wide))
                                      + ([""] + inductor[m.query][1] if inductor.get(m.query, (0, []))[1] else []))
                             for m in matches))

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
        from atenmap.views.kernel import kernel_lines

        echo_text(trace_kernels_text(ans, lambda m, count: kernel_lines(m, gen, count)))


def _inductor(ix, queries: list[str], wide: bool = False) -> dict[str, tuple]:
    """For each Inductor kernel name among ``queries`` (docs/compile.md): (kernel or None, text
    lines, JSON object); a name not found is a one-line note (stderr) and a ``note`` in JSON, the
    rest still answers. An extern or fallback kernel also gets its op's chain."""
    import dataclasses

    from atenmap.cli.plain import warn
    from atenmap.inductor.outputcode import aten_op, kind_of, missing_note
    from atenmap.views import text as render
    from atenmap.views.kernel import inductor_lines

    out = {}
    for q in dict.fromkeys(queries):
        if not kind_of(q):
            continue
        k = ix.inductor_kernel(q)
        if k is None:
            note = missing_note(q)
            warn(note)
            out[q] = (None, [], {"kernel": q, "note": note})
            continue
        lines, d = inductor_lines(k), k.to_dict()
        op = aten_op(k)
        if op:
            try:
                chain = ix.chain(op, keys=[k.device.upper()] if k.device else None)
            except AtenmapError as exc:
                d["chain_note"] = str(exc)
                lines.append(f"note: {exc}")
            else:
                d["op"] = str(chain.op.name)
                d["chain"] = chain.to_dict()["keys"]
                body = render.chain_lines(dataclasses.replace(chain, bindings=()), term=terminal(wide), parts=("tree",))
                lines += body[body.index("") if "" in body else 0:]
        out[q] = (k, lines, d)
    return out
