"""Output conventions shared by commands (beside common.py): the terminal a text view writes to,
`--wide`, `--limit`'s "N more" line, and notes and warnings on stderr with the `atenmap: ` prefix."""
from __future__ import annotations

import sys

import typer

from atenmap.errors import UsageError
from atenmap.views.terminal import Terminal

WideOpt = typer.Option(False, "--wide", "-w", help="Whole lines: do not fit text to $COLUMNS or the terminal.")
FORMATS = ("text", "json", "lines")


def terminal(wide: bool = False) -> Terminal:
    """Width, colour and hyperlinks for stdout (see Note [Terminal output] in views/terminal.py)."""
    return Terminal.detect(sys.stdout, wide=wide)


def note(msg: str) -> None:
    typer.echo(f"atenmap: {msg}", err=True)


def warn(msg: str) -> None:
    from atenmap.config import printable

    typer.echo(f"atenmap: warning: {printable(msg)}", err=True)


def more(total: int, shown: int) -> None:
    """The "N more" line after a list cut by ``--limit``."""
    if total > shown:
        note(f"{total - shown} more; use --limit 0 to see all")


def output_format(fmt: str, as_json: bool) -> str:
    """``--format`` with ``--json``: one of FORMATS; a bad or contradicting choice is a usage error."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose text, json or lines")
    if as_json and fmt not in ("text", "json"):
        raise UsageError(f"--json and --format {fmt} contradict each other: give one")
    return "json" if as_json else fmt
