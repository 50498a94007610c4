"""`atenmap ops`: every operator."""
from __future__ import annotations

import json
from typing import Optional

import typer

from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, open_index


@app.command("ops")
def ops_cmd(
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Only operators with a kernel for this key."),
) -> None:
    """Every operator with its yaml line, kind and per-key dispatch map. Example: atenmap ops --key CUDA"""
    with open_index(source, no_codegen, codegen) as ix:
        ops = ix.ops(key)
    if as_json:
        typer.echo(json.dumps([o.to_dict() for o in ops], indent=1))
        return
    for o in ops:
        runs = ", ".join(f"{r.key}: {r}" for r in o.runs)
        typer.echo(f"{o.op.loc}  {o.op.name}  [{o.op.kind}]  {runs}")
