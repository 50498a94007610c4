"""`atenmap search PATTERN`: operators, stubs, kernels and functions by name."""
from __future__ import annotations

import json
from typing import List, Optional

import typer

from atenmap.cli.common import CodegenOpt, NoCodegenOpt, JsonOpt, SourceOpt, app, err, open_index
from atenmap.cli.complete import complete_key_arg
from atenmap.cli.output import WideOpt, more, terminal


@app.command("search")
def search_cmd(
    pattern: str = typer.Argument(..., help="Part of a name; letters in order also match (sftmx finds softmax)."),
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Only operators with a kernel for KEY; stubs, kernels and functions of its device.",
                                      autocompletion=complete_key_arg),
    tag: Optional[str] = typer.Option(None, "--tag", "-t", help="Only operators with this yaml tag (pointwise, core, ...)."),
    kind: Optional[List[str]] = typer.Option(None, "--kind", help="op, stub, kernel or function (repeatable; default: all)."),
    limit: int = typer.Option(50, "--limit", "-n", min=0, help="Show the best N (0: all)."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    wide: bool = WideOpt,
) -> None:
    """Find operators, DispatchStubs, kernels and functions. Example: atenmap search softmax --key CUDA --kind op"""
    from atenmap.views.search import render_hits

    with open_index(source, no_codegen, codegen) as ix:
        found = ix.search(pattern, key=key, kinds=tuple(kind) if kind else None, tag=tag)
    hits, total = found[:limit or None], len(found)
    if as_json:
        typer.echo(json.dumps({"pattern": pattern, "total": total, "hits": [h.to_dict() for h in hits]}, indent=1))
        return
    term = terminal(wide)
    for line in render_hits(hits, term):
        typer.echo(line)
    more(total, len(hits))
    if not hits:
        err(f"nothing matches {pattern!r}")
        raise typer.Exit(1)
