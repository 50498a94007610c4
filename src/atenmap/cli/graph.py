"""`atenmap graph OP [OP...]`: chains as dot, mermaid, svg or png."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError, UsageError
from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, open_index
from atenmap.cli.complete import complete_operator_arg


@app.command("graph")
def graph_cmd(
    ops: List[str] = typer.Argument(..., help="Operator(s); several show where their chains share code.",
                                    autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) to draw (default: every key with a kernel)."),
    fmt: str = typer.Option("dot", "--format", "-f", help="dot, mermaid, svg or png (svg/png need Graphviz's dot)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE instead of stdout."),
    rankdir: str = typer.Option("TB", "--rankdir", help="TB (top-down) or LR (left-to-right)."),
    legend: bool = typer.Option(True, "--legend/--no-legend", help="Draw the role colour legend (dot, svg, png)."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """The chain as a graph: steps with file:line, coloured by role. Example: atenmap graph add.out mul.out --key CUDA --format svg -o chain.svg"""
    from atenmap.views.graph import FORMATS, render

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: choose from {', '.join(FORMATS)}")
    if fmt == "png" and output is None and sys.stdout.isatty():
        raise AtenmapError("--format png writes binary data: pass -o FILE or pipe it")
    with open_index(source, no_codegen, codegen) as ix:
        chains = [ix.chain(op, keys=key, runs=False) for op in ops]
    for c in chains:
        if key and not c.keys:
            raise AtenmapError("; ".join(c.warnings))
    data = render(chains, fmt, rankdir.upper(), legend)
    if output is not None:
        try:
            output.write_bytes(data)
        except OSError as exc:
            raise AtenmapError(f"cannot write {output}: {exc.strerror}") from None
        return
    if fmt == "png":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        typer.echo(data.decode(), nl=False)
