"""Output conventions shared by commands (beside common.py): the terminal a text view writes to,
`--wide`, `--limit`'s "N more" line, and notes and warnings on stderr with the `atenmap: ` prefix."""
from __future__ import annotations

import typer

from atenmap.cli.plain import FORMATS, more, note, output_format, terminal, warn  # noqa: F401 (plain.py holds them)

WideOpt = typer.Option(False, "--wide", "-w", help="Whole lines: do not fit text to $COLUMNS or the terminal.")

