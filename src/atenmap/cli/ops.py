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
    missing: bool = typer.Option(False, "--missing", help="With --key: the operators CPU or CUDA run with a kernel of "
                                 "their own that have none for the key, grouped by what a call there does: an error "
                                 "(NotImplementedError; on MPS the CPU with PYTORCH_ENABLE_MPS_FALLBACK=1), the CPU "
                                 "fallback, or a composite kernel."),
) -> None:
    """Every operator with its yaml line, kind and per-key dispatch map. Example: atenmap ops --key CUDA;
    what MPS lacks: atenmap ops --key MPS --missing"""
    if missing:
        _missing(source, no_codegen, codegen, as_json, key, limit, wide)
        return
    with open_index(source, no_codegen, codegen) as ix:
        ops = ix.ops(key)
    from atenmap.views.text import ops_lines

    shown = ops[:limit or None]
    if as_json:
        typer.echo(json.dumps([o.to_dict() for o in shown], indent=1))
    else:
        typer.echo("\n".join(ops_lines(shown, terminal(wide))))
    more(len(ops), len(shown))


def _missing(source, no_codegen, codegen, as_json, key, limit, wide) -> None:
    from atenmap.errors import UsageError
    from atenmap.views.missing import GROUPS, group_counts, grouped, missing_json, missing_lines

    if key is None:
        raise UsageError("--missing needs --key: the key whose missing kernels to list (e.g. --key MPS)")
    with open_index(source, no_codegen, codegen) as ix:
        found = ix.missing(key)
        key = ix.known_key(key)
    ordered = [x for _, members in grouped(found) for x in members]  # group order, as the text shows them
    assert len(ordered) == len(found) and all(x.outcome in GROUPS for x in found)
    shown = ordered[:limit or None]
    counts = group_counts(found)
    if as_json:
        typer.echo(missing_json(shown, key, len(found), counts))
    else:
        typer.echo("\n".join(missing_lines(shown, key, len(found), terminal(wide), counts)))
    more(len(found), len(shown))
