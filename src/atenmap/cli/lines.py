"""`atenmap lines OP`: the chain as quickfix lines for editors (vim -q, emacs compilation mode)."""
from __future__ import annotations

from typing import List, Optional

import typer

from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, load_chain
from atenmap.cli.complete import complete_operator_arg


@app.command("lines")
def lines_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. mul.out.", autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) (default: every key with a kernel)."),
    absolute: bool = typer.Option(False, "--absolute", help="Absolute paths (source root + path), for use outside the tree."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """One `path:line:1: role symbol — detail` line per step with a file. Example: vim -q <(atenmap lines mul.out --key CUDA --absolute)"""
    from atenmap.views.editor import render_lines

    chain = load_chain(source, op, key, no_codegen=no_codegen, codegen=codegen)
    for line in render_lines(chain, absolute=absolute):
        typer.echo(line)
