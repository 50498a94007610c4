"""Shell completion callbacks shared by commands (not a command itself)."""
from __future__ import annotations

import typer

from atenmap.views.complete import operator_completions


def complete_operator_arg(ctx: typer.Context, incomplete: str) -> list[str]:
    """Operator names for an OP argument, from the tree named by --source when it is already typed."""
    source = None
    try:
        source = ctx.params.get("source")
    except Exception:  # noqa: BLE001
        source = None
    return operator_completions(incomplete, source)


def complete_key_arg(ctx: typer.Context, incomplete: str) -> list[str]:
    """Dispatch keys for --key (and ``all``), from the index completion may read."""
    from atenmap.views.complete import key_completions

    return key_completions(incomplete, ctx.params.get("source") if ctx.params else None)
