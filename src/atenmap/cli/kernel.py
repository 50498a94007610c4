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
    from_trace: Optional[List[str]] = typer.Option(None, "--from-trace", help="A torch.profiler / Kineto chrome trace (.json, .json.gz), or a folder of them (a job's ranks): answer every kernel in it. Repeat it, or give more files after it, for several."),
    detail: bool = typer.Option(False, "--detail", help="With --from-trace: per kernel, its definition and every place that launched it, instead of the table."),
    summary: bool = typer.Option(False, "--summary", help="With --from-trace: the table (the default for text; with --json, the table's rows)."),
    top: int = typer.Option(0, "--top", min=0, help="With --from-trace: the first N rows of the table (0: all)."),
    sort: str = typer.Option("time", "--sort", help="With --from-trace: order the table by time, count or name."),
    fmt: str = typer.Option("text", "--format", help="With --from-trace: text (the table), csv or json (its rows)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="With several traces: read this many at once (default: the cores)."),
    platform: str = typer.Option("cuda", "--platform", metavar="cuda|rocm", help="The build the library calls are for: cuda (default), or rocm: the lines a ROCm build compiles, with hipify's names (cublasSgemm (hipblasSgemm on ROCm); docs/devices.md)."),
    chrome: Optional[Path] = typer.Option(None, "--chrome", metavar="OUT", help="With --from-trace FILE: also write the trace to OUT (never over FILE) with each kernel event's op, ATen line and your line in its args, for Perfetto."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", help="With --from-trace: read the traces as tasks of the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786; pip install 'atenmap[dask]'; workers see the same paths)."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
) -> None:
    """Where a GPU kernel comes from: its __global__ definition, launch lines, functor or lambda,
    and the operators that reach it. A trace: atenmap kernel --from-trace trace.json --top 20; a job:
    atenmap kernel --from-trace ranks/ --format csv. Example: atenmap kernel 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)'"""
    from atenmap.cli.chain_run import check_platform
    from atenmap.views.kernel import kernels_json, kernels_text

    platform = check_platform(platform)
    if from_trace:
        extra = [n for n in names or [] if Path(n).exists()]  # `--from-trace ranks/*.json`: the shell's list
        if len(extra) < len(names or []):
            raise AtenmapError("give kernel names or --from-trace FILE, not both")
        if sort not in ("time", "count", "name"):
            raise AtenmapError(f"--sort {sort!r}: choose time, count or name")
        if fmt not in ("text", "csv", "json"):
            raise AtenmapError(f"--format {fmt!r}: choose text, csv or json")
        paths = list(from_trace) + extra
        if detail and (summary or fmt != "text"):
            raise AtenmapError("--detail is the per-kernel view: it has no --summary or --format csv")
        if as_json and not summary and not detail and fmt == "text":
            detail = True  # --json alone: the per-kernel answers, as before the table
        if detail and scheduler:
            raise AtenmapError("--scheduler reads a job's traces for the table: it has no --detail")
        if chrome is not None and scheduler:
            raise AtenmapError("--chrome writes one trace back here: it has no --scheduler")
        if detail:
            _from_trace(paths, source, no_codegen, codegen, as_json, wide, chrome, platform)
        else:
            _summary(paths, source, no_codegen, codegen, "json" if as_json else fmt, sort, top, jobs, wide, scheduler,
                     chrome, platform)
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
        if platform != "cuda":
            from atenmap.resolve.kernelplatform import for_platform

            conds: dict = {}
            matches = [for_platform(ix.store, m, platform, conds) for m in matches]
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
        raise AtenmapError(m.notes[0])  # resolve/versions.unknown_kernel: names the tree's version
    if not inductor:
        echo_text(kernels_text(matches, gen, term=terminal(wide)))
        return
    from atenmap.views.kernel import kernel_lines

    echo_text("\n\n".join("\n".join(kernel_lines(m, gen, term=terminal(wide))
                                      + ([""] + inductor[m.query][1] if inductor.get(m.query, (0, []))[1] else []))
                             for m in matches))

def _summary(paths: list[str], source, no_codegen, codegen, fmt: str, sort: str, top: int, jobs, wide: bool,
             scheduler: str | None = None, chrome: Path | None = None, platform: str = "cuda") -> None:
    """One table of one trace or of several (a job's ranks, read in parallel: trace/summary.py);
    what a trace lacks is one note line each on stderr, a trace that cannot be read one line too."""
    from atenmap.cli.plain import byte_progress
    from atenmap.trace.fromtrace import summarize_job, summarize_to_chrome, trace_files
    from atenmap.trace.summary import summary_csv, summary_json, summary_text

    files, notes = trace_files(paths)
    if not files:
        raise AtenmapError("; ".join(notes) or "no trace file given")
    if chrome is not None and len(files) != 1:
        raise AtenmapError(f"--chrome writes one trace back: give one file, not {len(files)}")
    with open_index(source, no_codegen, codegen) as ix:
        cb, done = byte_progress(f"reading {Path(files[0]).name}" if len(files) == 1 else f"reading {len(files)} traces")
        try:
            if chrome is not None:
                (table, annotated), more = summarize_to_chrome(ix, files[0], chrome, cb, platform), []
            else:
                table, more = summarize_job(ix, files, jobs, cb if len(files) == 1 and not scheduler else None, scheduler,
                                            platform)
        finally:
            done()
    if chrome is not None and table.rows:  # else not written: the one line below
        echo_text(f"atenmap: wrote {chrome} ({annotated} events with source locations)", err=True)
    for note in notes + more:
        echo_text(f"atenmap: note: {note}", err=True)
    for r in table.ranks:
        for note in r.notes:
            echo_text(f"atenmap: note: {r.label + ': ' if len(table.ranks) > 1 else ''}{note}", err=True)
    if not table.rows:
        raise AtenmapError(f"{files[0] if len(files) == 1 else 'these traces'}: no kernel, memcpy, memset or aten op events")
    if fmt == "json":
        typer.echo(json.dumps(summary_json(table, sort, top), indent=1))
    elif fmt == "csv":
        sys.stdout.write(summary_csv(table, sort, top))
    else:
        echo_text(summary_text(table, sort, top, terminal(wide).width))


def _from_trace(paths: list[str], source, no_codegen, codegen, as_json: bool, wide: bool = False,
                chrome: Path | None = None, platform: str = "cuda") -> None:
    """Every device event of a recorded trace, answered as `atenmap trace` answers it
    (trace/fromtrace.py); what the trace lacks is one note line each on stderr."""
    from atenmap.cli.plain import byte_progress
    from atenmap.trace.fromtrace import answer, trace_files, trace_kernels_json, trace_kernels_text

    files, notes = trace_files(paths)
    if len(files) != 1:
        raise AtenmapError("--detail and --json answer one trace: give one file (the table takes several)")
    path = files[0]
    with open_index(source, no_codegen, codegen) as ix:
        cb, done = byte_progress(f"reading {Path(path).name}")
        try:
            ans = answer(ix, path, cb, chrome=chrome, platform=platform)  # Note [A trace of another platform]
        finally:
            done()
        gen = ix.generated_root
    if chrome is not None and ans.kernels:  # else not written: the one line below
        echo_text(f"atenmap: wrote {chrome} ({ans.annotated} events with source locations)", err=True)
    for note in ans.notes:
        echo_text(f"atenmap: note: {note}", err=True)
    if not ans.kernels:
        raise AtenmapError(f"{path}: no kernel, memcpy, memset or aten op events in this trace")
    if as_json:
        typer.echo(json.dumps(trace_kernels_json(ans), indent=2))
    else:
        from atenmap.views.kernel import kernel_lines

        term = terminal(wide)
        echo_text(trace_kernels_text(ans, lambda m, count, guessed: kernel_lines(m, gen, count, term=term,
                                                                                 operators=guessed)))


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
