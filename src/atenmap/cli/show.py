"""`atenmap show PATH:LINE`: the lines around a place a chain names (gen:PATH for torchgen's output)."""
from __future__ import annotations

from typing import Optional

import typer

from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, SourceOpt, app, open_index
from atenmap.cli.output import WideOpt, terminal


@app.command("show")
def show_cmd(
    place: str = typer.Argument(..., help="PATH:LINE as a chain prints it: aten/src/ATen/native/BinaryOps.cpp:440, "
                                          "gen:aten/RegisterCUDA.cpp:43955."),
    context: int = typer.Option(5, "--context", "-C", help="Lines before and after (0-500)."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
) -> None:
    """The lines around PATH:LINE, read from the indexed tree (gen: is torchgen's output folder). Example: atenmap show gen:aten/RegisterCUDA.cpp:43955 -C 3"""
    import json

    from atenmap.views.editor import excerpt_lines

    with open_index(source, no_codegen, codegen) as ix:
        ex = ix.show(place, context)
    if as_json:
        typer.echo(json.dumps(ex.to_dict(), indent=1))
        return
    for line in excerpt_lines(ex, terminal(wide)):
        typer.echo(line)
