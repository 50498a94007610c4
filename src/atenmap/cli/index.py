"""`atenmap index`: build or refresh."""
from __future__ import annotations

import json
from typing import Optional

import typer

from atenmap.config import printable
from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, codegen_setting, SourceOpt, app, progress, status_line


def _echo(line: str) -> None:
    """One line of text output: names from the tree and the cache with control characters escaped."""
    typer.echo(printable(line))


@app.command("index")
def index_cmd(
    source: Optional[str] = SourceOpt,
    force: bool = typer.Option(False, "--force", help="Rebuild from scratch instead of refreshing."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Parser processes (default: all cores)."),
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Build or refresh the index of a PyTorch tree and print counts and time. Example: atenmap index --source ~/pytorch"""
    from atenmap import build as _index
    from atenmap.source.find import find_source

    setting = codegen_setting(no_codegen, codegen)
    info = find_source(source, bundled=True)
    if info.origin == "bundled":  # no tree: nothing to build; say what answers
        _bundled(info, as_json)
        return
    cb, prog = progress()
    try:
        report = _index.build(info, progress=cb, jobs=jobs, force=force, codegen=setting,
                              status=prog.status if prog else status_line, compile_facts=True)
    finally:
        if prog is not None:
            prog.stop()
    if as_json:
        typer.echo(json.dumps({**report.to_dict(), "source": info.to_dict()}, indent=2))
        return
    f = report.facts
    _echo(f"index: {report.path}")
    _echo(f"source: {info.root} (PyTorch {info.version})")
    _echo(f"files: {report.files_total} ({report.parsed} parsed, {report.reused} unchanged, "
               f"{report.removed} removed, {report.with_errors} with tree-sitter ERROR nodes"
               + (", skipped " + ", ".join(f"{v} {k}" for k, v in sorted(report.skipped.items())) if report.skipped else "")
               + ")")
    if report.copied_from:  # Note [An index of the same content] in sameindex.py
        _echo(f"copied from: {report.copied_from} (every file's content the same)")
    _echo(f"operators: {report.operators}")
    _echo("codegen: " + ("off" if not report.codegen else
               ("reused from the cache" if report.codegen_reused else f"torchgen ran in {report.codegen_seconds:.1f} s")))
    for w in report.warnings:
        _echo(f"warning: {w}")
    _echo("facts: " + ", ".join(f"{k} {v}" for k, v in sorted(f.items())))
    _echo(f"time: {report.seconds:.2f} s")


def _bundled(info, as_json: bool) -> None:
    """`atenmap index` with no tree around: the bundled index answers; it is unpacked, never built."""
    from atenmap.api import Index

    with Index.open(info, status=status_line) as ix:
        stats = ix.stats()
    if as_json:
        typer.echo(json.dumps({"path": stats["path"], "source": info.to_dict(), "operators": stats["operators"],
                               "facts": stats["facts"], "bundled": True}, indent=2))
        return
    _echo(f"index: {stats['path']} (the bundled index: nothing to build; `atenmap fetch` gets a tree to index)")
    _echo(f"source: {info.root} (PyTorch {info.version})")
    _echo(f"operators: {stats['operators']}")
    _echo("facts: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["facts"].items())))
