"""`atenmap gdb OP`: a gdb/cuda-gdb command file with breakpoints on the chain."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, load_chain
from atenmap.cli.complete import complete_operator_arg


@app.command("gdb")
def gdb_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. mul.out.", autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s), e.g. CPU or CUDA (default: every key with a kernel)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the script to FILE instead of stdout."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """Breakpoints on every function of the chain. Example: atenmap gdb mul.out --key CUDA -o mul.gdb; gdb -x mul.gdb --args python t.py"""
    from atenmap.views.gdb import gdb_script

    chain = load_chain(source, op, key, no_codegen=no_codegen, codegen=codegen)
    text = gdb_script(chain)
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        raise AtenmapError(f"cannot write {output}: {exc.strerror}") from None
