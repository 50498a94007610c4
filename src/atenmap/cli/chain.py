"""`atenmap chain OP` (and the `atenmap OP` shorthand)."""
from __future__ import annotations

from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import JsonOpt, LinkOpt, CodegenOpt, NoCodegenOpt, SourceOpt, app, linker, load_chain
from atenmap.cli.complete import complete_operator_arg

@app.command("chain")
def chain_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. add.out, aten::mul.Tensor, linear.",
                             autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) to show (CPU, CUDA, ...). Default: every key with a kernel."),
    depth: int = typer.Option(8, "--depth", min=1, max=30, help="How many calls deep to follow from a kernel."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    fmt: str = typer.Option("text", "--format", "-f", help="text (tree), json, or lines (path:line:col: role symbol, for vim -q / grep tools)."),
    link: Optional[str] = LinkOpt,
) -> None:
    """The dispatch chain of OP, file:line for every step. Example: atenmap mul.out --key CUDA"""
    from atenmap.views import text as render

    chain = load_chain(source, op, key, no_codegen=no_codegen, depth=depth, codegen=codegen)
    loc = linker(chain, link)
    if as_json or fmt == "json":
        typer.echo(render.chain_json(chain, link=loc))
    elif fmt == "lines":
        from atenmap.views.editor import render_lines

        typer.echo("\n".join(render_lines(chain)))
    elif fmt == "text":
        typer.echo("\n".join(render.chain_lines(chain, link=loc)))
    else:
        raise AtenmapError(f"--format {fmt!r}: choose text, json or lines")
