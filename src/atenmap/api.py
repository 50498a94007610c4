"""The library's front door: one ``Index`` object with verbs, returning public records.

    >>> from atenmap import Index
    >>> ix = Index.open("/path/to/pytorch")        # builds or refreshes the index when needed
    >>> chain = ix.chain("mul.out", keys=["CUDA"])
    >>> [s.symbol for s in chain.keys[0].walk()]

Lines are 1-based and paths relative to the source root in every record (see model.py).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable

from atenmap import build as _index
from atenmap.model import Chain, Operator, SourceInfo
from atenmap.source.find import find_source
from atenmap.store import Store


class Index:
    def __init__(self, source: SourceInfo, store: Store):
        self.source = source
        self.store = store
        self._ops: dict[str, Operator] | None = None

    @classmethod
    def open(cls, source: str | os.PathLike | SourceInfo | None = None, *, refresh: bool = True,
             codegen: bool = True, progress: _index.Progress | None = None,
             status: Callable[[str], None] | None = None) -> "Index":
        """Open the index of ``source`` (found as ``sources.find_source`` says; with no tree at all,
        the bundled index), building or refreshing it first when files changed and ``refresh`` is true. ``codegen``: include the
        code the checkout's own torchgen generates (run once, cached; see codegen.py)."""
        info = source if isinstance(source, SourceInfo) else find_source(source, bundled=True)
        if info.origin == "bundled":  # no tree found: the bundled index answers (bundle.py)
            from atenmap.source import bundle

            man = bundle.manifest()
            first = man is not None and not (bundle.install_dir(man) / _index.INDEX_NAME).exists()
            path = bundle.installed_index(status=status)
            if status and first:  # afterwards every output's `source:` line says it
                status(bundle.notice(info))
            return cls(info, Store.open(path))
        if refresh and not _index.is_fresh(info, codegen=codegen):
            _index.build(info, progress=progress, codegen=codegen, status=status)
        return cls(info, Store.open(_index.index_path(info)))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- verbs ------------------------------------------------------------------------------
    def operators(self) -> list[Operator]:
        return list(self._operators().values())

    def operator(self, text: str) -> Operator:
        """``add.out`` / ``aten::add.out`` / ``linear`` -> Operator; raises UnknownOperator or
        AmbiguousOperator with the candidates."""
        from atenmap.extract.native_yaml import find_operator

        from atenmap.errors import UnknownOperator

        if not text.strip() or text.strip() == "aten::":
            raise UnknownOperator("empty operator name: give NAME or NAME.OVERLOAD, e.g. add.out (atenmap ops lists them)")
        if not text.isprintable() or len(text) > 300:
            raise UnknownOperator(f"unknown operator {text[:80].encode('utf-8', 'replace').decode()!r}: "
                                  "not an operator name (NAME or NAME.OVERLOAD, e.g. add.out)")
        hit = self._get(text.strip().removeprefix("aten::"))
        return hit if hit is not None else find_operator(self.operators(), text)

    def chain(self, op: str | Operator, keys: list[str] | None = None, depth: int | None = None,
              expand: bool = True) -> Chain:
        """``expand=False``: calls to other operators stay leaves (``--no-expand``)."""
        from atenmap.resolve.chain import DEFAULT_DEPTH, Resolver

        operator = op if isinstance(op, Operator) else self.operator(op)
        chain = Resolver(self.store, self.source, self._get, self.operators).chain(
            operator, keys=keys, depth=depth or DEFAULT_DEPTH, expand=expand)
        return dataclasses.replace(chain, warnings=(*self.codegen_warnings(), *chain.warnings))

    def codegen_warnings(self) -> list[str]:
        """Why generated code is missing from this index, if it is (one line each)."""
        import json

        meta = self.store.meta()
        return json.loads(meta.get("codegen_warnings") or "[]")

    def stats(self) -> dict:
        return {"files": self.store.file_status_counts(), "facts": self.store.counts(),
                "operators": len(self.store.operator_names()), "meta": self.store.meta(), "path": str(self.store.path)}

    # ---- internals --------------------------------------------------------------------------
    def _get(self, name: str) -> Operator | None:
        if self._ops is not None:
            return self._ops.get(name)
        rec = self.store.operator_record(name)
        return _index.operator_from_dict(rec) if rec else None

    def _operators(self) -> dict[str, Operator]:
        if self._ops is None:
            self._ops = {d["name"]: _index.operator_from_dict(d) for d in self.store.operator_records()}
        return self._ops


def open_index(source: str | os.PathLike | None = None, **kw) -> Index:
    return Index.open(source, **kw)


__all__ = ["Index", "open_index", "Path"]
