"""The ``atenmap`` command: each command opens the index, calls one library verb, renders.

``atenmap OP`` is short for ``atenmap chain OP``: a first argument that is not a command name is
an operator. Operators whose bare name is also a command (``index``, ``where``, ``trace``) are
reached with ``atenmap chain NAME`` or with their overload (``atenmap index.Tensor``).
"""
from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer

from .errors import AmbiguousOperator, AtenmapError

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Where in PyTorch's source is the kernel an operator launches? "
         "Example: atenmap add.out --key CUDA. Source order: --source, $ATENMAP_SOURCE, the checkout around the "
         "current directory.",
)

SourceOpt = typer.Option(None, "--source", "-s", help="PyTorch source tree (else $ATENMAP_SOURCE, else the checkout around the cwd).")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")


def _err(msg: str) -> None:
    typer.echo(f"atenmap: error: {msg}", err=True)


def _progress():
    """A progress callback for index builds: a rich bar on a terminal, one line otherwise."""
    if not sys.stderr.isatty():
        started = {"done": False}

        def line(done: int, total: int, path: str) -> None:
            if not started["done"]:
                started["done"] = True
                typer.echo(f"atenmap: indexing {total} files…", err=True)
        return line, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
    state = {"task": None}

    def cb(done: int, total: int, path: str) -> None:
        if state["task"] is None:
            prog.start()
            state["task"] = prog.add_task("", total=total)
        prog.update(state["task"], completed=done, description=path.rsplit("/", 1)[-1])
    return cb, prog


def _open(source: Optional[str]):
    from .api import Index

    cb, prog = _progress()
    try:
        return Index.open(source, progress=cb)
    finally:
        if prog is not None:
            prog.stop()


@app.command("chain")
def chain_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. add.out, aten::mul.Tensor, linear."),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) to show (CPU, CUDA, ...). Default: every key with a kernel."),
    depth: int = typer.Option(8, "--depth", min=1, max=30, help="How many calls deep to follow from a kernel."),
    source: Optional[str] = SourceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The dispatch chain of OP, file:line for every step. Example: atenmap mul.out --key CUDA"""
    from . import render

    with _open(source) as ix:
        chain = ix.chain(op, keys=key, depth=depth)
    if key and not chain.keys:
        raise AtenmapError("; ".join(chain.warnings))
    if as_json:
        typer.echo(render.chain_json(chain))
    else:
        typer.echo("\n".join(render.chain_lines(chain)))


@app.command("ops")
def ops_cmd(
    source: Optional[str] = SourceOpt,
    as_json: bool = JsonOpt,
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Only operators with a kernel for this key."),
) -> None:
    """Every operator with its yaml line, kind and per-key dispatch map. Example: atenmap ops --key CUDA"""
    with _open(source) as ix:
        ops = ix.operators()
    if key:
        ops = [o for o in ops if o.kernel_for(key) is not None]
    if as_json:
        typer.echo(json.dumps([
            {"op": str(o.name), "schema": o.schema, "yaml": {"file": o.loc.file, "line": o.loc.line}, "kind": o.kind,
             "structured_delegate": str(o.structured_delegate) if o.structured_delegate else None,
             "dispatch": {d.key: d.kernel for d in o.dispatch}} for o in ops], indent=1))
        return
    for o in ops:
        disp = ", ".join(f"{d.key}: {d.kernel}" for d in o.dispatch)
        if not disp and o.structured_delegate:
            disp = f"structured_delegate: {o.structured_delegate}"
        typer.echo(f"{o.loc.file}:{o.loc.line}  {o.name}  [{o.kind}]  {disp}")


@app.command("index")
def index_cmd(
    source: Optional[str] = SourceOpt,
    force: bool = typer.Option(False, "--force", help="Rebuild from scratch instead of refreshing."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Parser processes (default: all cores)."),
    as_json: bool = JsonOpt,
) -> None:
    """Build or refresh the index of a PyTorch tree and print counts and time. Example: atenmap index --source ~/pytorch"""
    from . import index as _index
    from .sources import find_source

    info = find_source(source)
    cb, prog = _progress()
    try:
        report = _index.build(info, progress=cb, jobs=jobs, force=force)
    finally:
        if prog is not None:
            prog.stop()
    if as_json:
        typer.echo(json.dumps({**report.to_dict(), "source": info.to_dict()}, indent=2))
        return
    f = report.facts
    typer.echo(f"index: {report.path}")
    typer.echo(f"source: {info.root} (PyTorch {info.version})")
    typer.echo(f"files: {report.files_total} ({report.parsed} parsed, {report.reused} unchanged, "
               f"{report.removed} removed, {report.with_errors} with tree-sitter ERROR nodes"
               + (", skipped " + ", ".join(f"{v} {k}" for k, v in sorted(report.skipped.items())) if report.skipped else "")
               + ")")
    typer.echo(f"operators: {report.operators}")
    typer.echo("facts: " + ", ".join(f"{k} {v}" for k, v in sorted(f.items())))
    typer.echo(f"time: {report.seconds:.2f} s")


COMMANDS = {"chain", "ops", "index"}


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if first is not None and first not in COMMANDS and "--help" not in args[:1] and first not in app_command_names():
        args.insert(args.index(first), "chain")
    try:
        app(args=args, prog_name="atenmap", standalone_mode=True)
    except AmbiguousOperator as exc:
        _err(str(exc).split(";")[0] + ":")
        for c in exc.candidates:
            typer.echo(f"  {c}", err=True)
        sys.exit(exc.exit_code)
    except AtenmapError as exc:
        _err(str(exc))
        sys.exit(exc.exit_code)


def app_command_names() -> set[str]:
    names = set(COMMANDS)
    for c in app.registered_commands:
        if c.name:
            names.add(c.name)
    return names


if __name__ == "__main__":  # pragma: no cover
    main()
