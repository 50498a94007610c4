"""`atenmap ops`: every operator."""
from __future__ import annotations

import json
from typing import Optional

import typer

from .common import JsonOpt, NoCodegenOpt, SourceOpt, app, open_index

@app.command("ops")
def ops_cmd(
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    as_json: bool = JsonOpt,
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Only operators with a kernel for this key."),
) -> None:
    """Every operator with its yaml line, kind and per-key dispatch map. Example: atenmap ops --key CUDA"""
    with open_index(source, no_codegen) as ix:
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
