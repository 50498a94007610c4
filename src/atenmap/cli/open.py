"""`atenmap open OP`: open $VISUAL/$EDITOR at a step of the chain."""
from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import typer

from atenmap.errors import AtenmapError
from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, load_chain
from atenmap.cli.complete import complete_operator_arg


@app.command("open")
def open_cmd(
    op: str = typer.Argument(..., help="Operator, e.g. mul.out.", autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", help="Dispatch key(s) (default: every key with a kernel)."),
    step: Optional[int] = typer.Option(None, "--step", "-n", help="Open the N-th step, numbered as `atenmap lines` prints them."),
    role: Optional[str] = typer.Option(None, "--role", "-r", help="Open the first step of this role (launch, kernel, native, ...)."),
    print_only: bool = typer.Option(False, "--print", help="Print the editor command instead of running it."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """Open the editor at the first run (the runs block's first line: what runs first), else the first launch,
    kernel or native step. Example: atenmap open mm --key CUDA; atenmap open mul.out --key CUDA --role kernel"""
    from atenmap.config import printable
    from atenmap.views.editor import editor_command, editor_from_env, pick_step, step_path

    editor = editor_from_env()
    chain = load_chain(source, op, key, local_only=True, no_codegen=no_codegen, codegen=codegen,
                       runs=step is None and role is None)
    chosen = pick_step(chain, step, role)
    path = step_path(chain, chosen)
    if not Path(path).is_file():
        raise AtenmapError(f"{path} does not exist (the index may be stale; run `atenmap index`)")
    argv = editor_command(editor, path, chosen.line)
    if print_only:
        typer.echo(printable(shlex.join(argv)))  # a path's control characters are not sent to the terminal
        return
    try:
        rc = subprocess.call(argv)
    except OSError as exc:
        raise AtenmapError(f"cannot run editor {argv[0]!r}: {exc.strerror}") from None
    sys.exit(rc)
