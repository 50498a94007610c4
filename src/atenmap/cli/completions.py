"""Operator names for shell completion. Completion must answer at once and never surprise: it
reads an index that already exists and is fresh (``Index.open_existing``), never builds one, and
answers nothing (rather than an error) when there is no tree, no index, or a stale one. Without
typer (complete.py registers them with it); in cli/, not views/: it opens an Index."""
from __future__ import annotations

import os

from atenmap.errors import AtenmapError


def operator_completions(incomplete: str, source: str | os.PathLike | None = None) -> list[str]:
    """Operator names starting with ``incomplete`` (``aten::`` kept when typed) from the index of
    ``source`` (found as ``sources.find_source`` says); ``[]`` when there is none to read."""
    from atenmap.api import Index  # here, not at import: the CLI loads this module on every run

    try:
        with Index.open_existing(source) as ix:
            return ix.operator_names(incomplete)
    except (AtenmapError, OSError):  # no tree, no index, stale, or unreadable: no completions
        return []


def complete_operator(incomplete: str) -> list[str]:
    """typer ``autocompletion=`` callback: operators of the tree from $ATENMAP_SOURCE or the cwd."""
    return operator_completions(incomplete)


def key_completions(incomplete: str, source: str | os.PathLike | None = None) -> list[str]:
    """Dispatch keys (and ``all``) starting with ``incomplete``, any case; ``[]`` without an index."""
    from atenmap.api import Index

    try:
        with Index.open_existing(source) as ix:
            keys = ["all", *ix.dispatch_keys()]
    except (AtenmapError, OSError):
        return []
    return [k for k in keys if k.lower().startswith(incomplete.lower())]
