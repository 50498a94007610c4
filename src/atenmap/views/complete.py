"""Operator names for shell completion. Completion must answer at once and never surprise: it
reads an index that already exists and is fresh, never builds one, and answers nothing (rather
than an error) when there is no tree, no index, or anything else goes wrong."""
from __future__ import annotations

import os


def operator_completions(incomplete: str, source: str | os.PathLike | None = None) -> list[str]:
    """Operator names starting with ``incomplete`` (``aten::`` kept when typed) from the index of
    ``source`` (found as ``sources.find_source`` says); ``[]`` on any trouble."""
    try:
        from atenmap import build as _index
        from atenmap.source.find import find_source
        from atenmap.store import Store

        info = find_source(source)
        store = Store.open(_index.index_path(info))
        try:
            # fresh as built: with torchgen's output (the CLI's default) or without (--no-codegen)
            if not _index.is_fresh(info, codegen=store.meta().get("codegen") == "on"):
                return []
            prefix = "aten::" if incomplete.startswith("aten::") else ""
            names = store.operator_names_starting(incomplete[len(prefix):])
        finally:
            store.close()
        return [prefix + n for n in names]
    except Exception:  # noqa: BLE001 - completion fails silently by design
        return []


def complete_operator(incomplete: str) -> list[str]:
    """typer ``autocompletion=`` callback: operators of the tree from $ATENMAP_SOURCE or the cwd."""
    return operator_completions(incomplete)
