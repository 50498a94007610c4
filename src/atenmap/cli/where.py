"""`atenmap where FILE:LINE` / `atenmap where FILE FUNCTION`: which operators pass through here."""
from __future__ import annotations

import json
import re
from typing import Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, open_index


@app.command("where")
def where_cmd(
    place: str = typer.Argument(..., help="FILE:LINE, or FILE with a FUNCTION after it; FILE relative to the source root (a unique suffix will do)."),
    function: Optional[str] = typer.Argument(None, help="A function defined in FILE."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The operators whose chains pass through a line or function of ATen — what a kernel author asks
    before changing it. Example: atenmap where aten/src/ATen/native/cuda/Loops.cuh gpu_kernel"""
    from atenmap.views.kernel import where_lines

    m = re.match(r"^(.+?):(\d+)$", place)
    if function is None and not m:
        raise AtenmapError(f"{place!r}: give FILE:LINE or FILE FUNCTION")
    file, line = (m.group(1), int(m.group(2))) if m and function is None else (place, None)
    with open_index(source, no_codegen, codegen) as ix:
        where = ix.where(file, line=line, function=function)
    if as_json:
        typer.echo(json.dumps(where.to_dict(), indent=2))
        return
    typer.echo("\n".join(where_lines(where)))
