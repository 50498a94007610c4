"""`atenmap ops`: every operator."""
from __future__ import annotations

import json
from typing import Optional

import typer

from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, open_index
from atenmap.cli.complete import complete_key_arg
from atenmap.cli.output import WideOpt, more, terminal


@app.command("ops")
def ops_cmd(
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Only operators with a kernel for this key.",
                                      autocompletion=complete_key_arg),
    limit: int = typer.Option(0, "--limit", "-n", min=0, help="Show the first N (0: all)."),
    wide: bool = WideOpt,
) -> None:
    """Every operator with its yaml line, kind and per-key dispatch map. Example: atenmap ops --key CUDA"""
    with open_index(source, no_codegen, codegen) as ix:
        ops = ix.ops(key)
    from atenmap.views.text import ops_lines

    shown = ops[:limit or None]
    if as_json:
        typer.echo(json.dumps([o.to_dict() for o in shown], indent=1))
    else:
        typer.echo("\n".join(ops_lines(shown, terminal(wide))))
    more(len(ops), len(shown))
