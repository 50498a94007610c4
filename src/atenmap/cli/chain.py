"""`atenmap chain OP` (and the `atenmap OP` shorthand)."""
from __future__ import annotations

from typing import List, Optional

import typer

from ..errors import AtenmapError
from .common import JsonOpt, NoCodegenOpt, SourceOpt, app, open_index

@app.command("chain")
def chain_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. add.out, aten::mul.Tensor, linear."),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) to show (CPU, CUDA, ...). Default: every key with a kernel."),
    depth: int = typer.Option(8, "--depth", min=1, max=30, help="How many calls deep to follow from a kernel."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The dispatch chain of OP, file:line for every step. Example: atenmap mul.out --key CUDA"""
    from .. import render

    with open_index(source, no_codegen) as ix:
        chain = ix.chain(op, keys=key, depth=depth)
    if key and not chain.keys:
        raise AtenmapError("; ".join(chain.warnings))
    if as_json:
        typer.echo(render.chain_json(chain))
    else:
        typer.echo("\n".join(render.chain_lines(chain)))
