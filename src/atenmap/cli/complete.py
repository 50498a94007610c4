"""Shell completion callbacks shared by commands (not a command itself)."""
from __future__ import annotations

import click
import typer
import typer.core

from atenmap.cli.completions import operator_completions


class RootGroup(typer.core.TyperGroup):
    """The ``atenmap`` group, for shell completion of ``atenmap OP`` (short for ``chain OP``):
    the first word completes to commands and operator names, and the words after an operator
    complete as ``chain``'s (``atenmap mul.out --key C<TAB>``). Running a command line is
    ``command_line``'s business (cli/__init__.py); this is only for completion."""

    def shell_complete(self, ctx: click.Context, incomplete: str):
        items = super().shell_complete(ctx, incomplete)
        if incomplete and not incomplete.startswith("-"):
            items += [click.shell_completion.CompletionItem(n) for n in operator_completions(incomplete)]
        return items

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if ctx.resilient_parsing and args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            return "chain", self.get_command(ctx, "chain"), args  # an operator: the words are chain's
        return super().resolve_command(ctx, args)


def complete_operator_arg(ctx: typer.Context, incomplete: str) -> list[str]:
    """Operator names for an OP argument, from the tree named by --source when it is already typed."""
    return operator_completions(incomplete, (ctx.params or {}).get("source"))


def complete_key_arg(ctx: typer.Context, incomplete: str) -> list[str]:
    """Dispatch keys for --key (and ``all``), from the index completion may read."""
    from atenmap.cli.completions import key_completions

    return key_completions(incomplete, (ctx.params or {}).get("source"))
