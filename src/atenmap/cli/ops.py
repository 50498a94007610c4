"""`atenmap ops`: every operator."""
from __future__ import annotations

import json
from typing import Optional

import typer

from atenmap.errors import AtenmapError
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
        ops = ix.operators()
    by_name = {str(o.name): o for o in ops}

    def effective(o) -> dict[str, str]:
        """key -> kernel, with the keys a structured_delegate op runs through its delegate."""
        out = {d.key: d.kernel for d in o.dispatch}
        target = by_name.get(str(o.structured_delegate)) if o.structured_delegate else None
        for d in (target.dispatch if target else ()):
            out.setdefault(d.key, f"{d.kernel} (via {target.name})")
        return out

    table = {str(o.name): effective(o) for o in ops}
    if key:
        known = sorted({k for disp in table.values() for k in disp})
        match = next((k for k in known if k.lower() == key.lower()), None)
        if match is None:
            raise AtenmapError(f"no operator has a kernel for key {key!r}; keys: {', '.join(known)}")
        ops = [o for o in ops if match in table[str(o.name)]]
    if as_json:
        typer.echo(json.dumps([
            {"op": str(o.name), "schema": o.schema, "yaml": {"file": o.loc.file, "line": o.loc.line}, "kind": o.kind,
             "structured_delegate": str(o.structured_delegate) if o.structured_delegate else None,
             "dispatch": {d.key: d.kernel for d in o.dispatch},
             "runs": table[str(o.name)]} for o in ops], indent=1))
        return
    for o in ops:
        disp = ", ".join(f"{k}: {v}" for k, v in table[str(o.name)].items())
        typer.echo(f"{o.loc.file}:{o.loc.line}  {o.name}  [{o.kind}]  {disp}")
