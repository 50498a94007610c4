"""`atenmap trace [OPTIONS] -- SCRIPT [ARGS]...` (or `-m MODULE`): the script's line at every kernel
launch (every op on CPU), joined to the ATen source chain. The library verb is ``atenmap.trace``."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, echo_text, err, open_index
from atenmap.cli.output import WideOpt, terminal


class UsageError(AtenmapError):
    exit_code = 2


@app.command("trace", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def trace_cmd(
    argv: Optional[List[str]] = typer.Argument(None, metavar="[--] SCRIPT [ARGS]...",
                                               help="The script and its arguments (after --), or -m MODULE ARGS."),
    module: Optional[str] = typer.Option(None, "--module", "-m", help="Run a module, as python -m does."),
    key: Optional[str] = typer.Option(None, "--key", "-k", help="CPU or CUDA: show what ran there (CUDA also records CUDA kernels)."),
    json_out: Optional[Path] = typer.Option(None, "--json", metavar="OUT", help="Write everything (calls, stacks, chains, kernels) as JSON to OUT."),
    chrome: Optional[Path] = typer.Option(None, "--chrome", metavar="OUT", help="Write the profiler's chrome trace to OUT, with source locations in each kernel and op event's args."),
    summary: bool = typer.Option(False, "--summary", help="One table instead of the per-line report: a row per (kernel, op, ATen line, your line), with time, share, count, mean."),
    top: int = typer.Option(0, "--top", min=0, help="With --summary: the first N rows (0: all)."),
    sort: str = typer.Option("time", "--sort", help="With --summary: order by time, count or name."),
    fmt: str = typer.Option("text", "--format", help="With --summary: text, csv or json (its rows on stdout)."),
    wide: bool = WideOpt,
    dispatch_mode: bool = typer.Option(False, "--dispatch-mode", help="Also run a Python dispatch mode on every aten call (slower): exact lines for operators written as a + b, and calls the profiler does not name. The default joins the profiler's own records after the run."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """Run a script and show, for every kernel launch (every op on CPU), the script's own line and
    the ATen chain: native function, kernel, launch. Example: atenmap trace --key CUDA -- train.py --steps 2"""
    from atenmap.source.find import find_source
    from atenmap.trace import Trace, require_torch, writable
    from atenmap.trace import run as runner
    from atenmap.trace.report import json_text

    args = list(argv or [])
    if module is None and args[:1] == ["-m"]:
        if len(args) < 2:
            raise UsageError("-m needs a module name: atenmap trace -- -m MODULE [ARGS]")
        module, args = args[1], args[2:]
    if module is not None:
        target = module
    elif args:
        target, args = args[0], args[1:]
    else:
        raise UsageError("no script given: atenmap trace [OPTIONS] -- SCRIPT [ARGS]... (or -m MODULE)")
    if sort not in ("time", "count", "name"):
        raise UsageError(f"--sort {sort!r}: choose time, count or name")
    if fmt not in ("text", "csv", "json"):
        raise UsageError(f"--format {fmt!r}: choose text, csv or json")
    if (top or sort != "time" or fmt != "text") and not summary:
        raise UsageError("--top, --sort and --format shape the table: add --summary")
    require_torch()
    info = find_source(source, bundled=True)  # fail before the script runs, not after
    runner.check(target, module=module is not None)
    for out in (json_out, chrome):
        if out is not None:
            writable(out)

    t = Trace(key=key, chrome=chrome is not None, source=info, dispatch=dispatch_mode)
    t.start()
    try:
        outcome = runner.run(target, args, module=module is not None)
    finally:
        t.stop()
    if outcome.traceback:
        typer.echo(outcome.traceback, err=True, nl=False)

    width = terminal(wide).width
    try:
        with open_index(info, no_codegen, codegen) as ix:
            report = t.report(index=ix)
            if summary:
                _summary(t.summary(index=ix), fmt, sort, top, width)
            else:
                echo_text("\n".join(fit_line(ln, width) for ln in report.lines(warnings=False)))
            for w in report.warnings:
                echo_text(f"atenmap: warning: {w}", err=True)
            if json_out is not None:
                d = report.to_dict()
                d["script"] = {"target": target, "module": module is not None, "args": args,
                               "exit_code": outcome.exit_code,
                               "error": None if outcome.error is None else runner.describe(outcome.error)}
                json_out.write_text(json_text(d))
                typer.echo(f"atenmap: wrote {json_out}", err=True)
            if chrome is not None:
                n = t.write_chrome(chrome, report)
                typer.echo(f"atenmap: wrote {chrome} ({n} events with source locations)", err=True)
    finally:
        t.close()  # the profiler's temporary chrome sessions: Note [Temporary folders of killed runs]
    if outcome.error is not None:
        err(f"{target} raised {runner.describe(outcome.error)} (the trace above covers what ran until then)")
    raise typer.Exit(outcome.exit_code)


def _summary(table, fmt: str, sort: str, top: int, width) -> None:
    import json
    import sys

    from atenmap.trace.summary import summary_csv, summary_json, summary_text

    if fmt == "json":
        typer.echo(json.dumps(summary_json(table, sort, top), indent=1))
    elif fmt == "csv":
        sys.stdout.write(summary_csv(table, sort, top))
    else:
        echo_text(summary_text(table, sort, top, width))


def fit_line(line: str, width: int | None) -> str:
    """A report line in ``width`` columns: its middle cut, its start (the function, the op) and its end
    (the kernel step, calls and time) kept."""
    if width is None or len(line) <= width:
        return line
    tail = min(max(width // 3, 12), width - 4)
    return line[: width - tail - 1] + "…" + line[-tail:]
