"""Store's answers, each question asked of SQLite once per resolver.

Note [One query per question]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A chain asks the index the same few questions many times: in a CUDA ``mul.out`` chain
``by_name`` is called 220 times for 110 distinct (name, kinds), ``by_name_qual`` 78 times for 46;
``exp.out`` on CPU calls ``by_name`` 1,435 times for 231 and ``in_file`` 74 times for one file (the
same launcher object met at each of its call sites). Each call is a query plus a ``FactRow`` per
row. ``StoreMemo`` stands in front of the Store for one ``Resolver`` and keeps every answer of its
read methods in a dict keyed by the arguments. That is safe because an open index never changes
under its reader: builds write a new file and rename it into place (store/__init__.py), and the
open connection keeps reading the file it opened. The rows are frozen records; each call gets its
own list, so a caller that sorts or extends what it got cannot change what the next one gets.
Questions that are only "is there one?" (``has_name``, ``has_kernel``) are ``EXISTS`` queries,
which stop at the first row and build none.
"""
from __future__ import annotations

from typing import Any, Callable

from atenmap.resolve.lookups import LookupObserver, LookupStep
from atenmap.store import FactRow, Store

# Note [Answers kept per open index]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A few answers are the same for every chain of an open index and cost a query or a file read
# each time: the operator names' table (~2,600 names, ~2 ms a chain), the DispatchStub names (a
# DISTINCT over the kind index), and the decisions of Note [Functions passed by name] (which
# helpers call a parameter, what a call site passes: a signature and a call read from the tree).
# The open ``api.Index`` owns them (a dict it hands to each resolver it makes: ``kept``), for as
# long as it is open: the index never changes under its reader (Note [One query per question]) and
# a rebuilt one is a new Index. Their size is fixed by the index (names) or by the helpers chains
# met, not by how many chains ran; the per-question answers of StoreMemo are not kept past their
# resolver. A resolver made without ``kept`` keeps them for itself.


class StoreMemo:
    """The read methods of ``Store`` that a chain uses, memoized. See Note [One query per question].
    ``kept``: the open index's answers kept across resolvers (Note [Answers kept per open index]).
    ``observer``: told each fact question the first time it is asked, with the step that asked it
    (Note [Lookups told to an observer] in lookups.py)."""

    def __init__(self, store: Store, kept: dict[str, Any] | None = None, observer: LookupObserver | None = None):
        self.store = store
        self.observer = observer
        self._kept: dict[str, Any] = {} if kept is None else kept
        self._by_name: dict[tuple, list[FactRow]] = {}
        self._by_name_qual: dict[tuple, list[FactRow]] = {}
        self._in_scope: dict[tuple, list[FactRow]] = {}
        self._in_file: dict[tuple, list[FactRow]] = {}
        self._by_id: dict[int, FactRow | None] = {}
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self._includes: dict[str, list[tuple[str, str]]] = {}
        self._by_base: dict[str, list[str]] = {}
        self._has_name: dict[tuple, bool] = {}
        self._has_kernel: dict[str, bool] = {}
        self._meta: dict[str, str] | None = None

    # ---- facts ---------------------------------------------------------------------------------
    def by_name(self, name: str, kinds: tuple[str, ...], step: LookupStep = LookupStep.DIRECT) -> list[FactRow]:
        """``step``: the resolver step asking, told to the observer."""
        got = self._by_name.get((name, kinds))
        if got is None:
            got = self._by_name[name, kinds] = self.store.by_name(name, kinds)
            if self.observer is not None:
                self.observer.found(name, kinds, tuple(got), step)
        return list(got)

    def by_name_qual(self, name: str, kinds: tuple[str, ...], suffix: str,
                     also_containing: list[str] | tuple[str, ...] = (),
                     step: LookupStep = LookupStep.DIRECT) -> list[FactRow]:
        key = (name, kinds, suffix, tuple(also_containing))
        got = self._by_name_qual.get(key)
        if got is None:
            got = self._by_name_qual[key] = self.store.by_name_qual(name, kinds, suffix, also_containing)
            if self.observer is not None:
                self.observer.found(name, kinds, tuple(got), step, suffix)
        return list(got)

    def in_scope(self, scope_id: int, kinds: tuple[str, ...]) -> list[FactRow]:
        got = self._in_scope.get((scope_id, kinds))
        if got is None:
            got = self._in_scope[scope_id, kinds] = self.store.in_scope(scope_id, kinds)
        return list(got)

    def in_file(self, path: str, kinds: tuple[str, ...]) -> list[FactRow]:
        got = self._in_file.get((path, kinds))
        if got is None:
            got = self._in_file[path, kinds] = self.store.in_file(path, kinds)
        return list(got)

    def function_spans(self, path: str) -> list[tuple[int, int]]:
        got = self._spans.get(path)
        if got is None:
            got = self._spans[path] = self.store.function_spans(path)
        return list(got)

    def by_id(self, fact_id: int) -> FactRow | None:
        if fact_id not in self._by_id:
            self._by_id[fact_id] = self.store.by_id(fact_id)
        return self._by_id[fact_id]

    def includes_of(self, path: str) -> list[tuple[str, str]]:
        got = self._includes.get(path)
        if got is None:
            got = self._includes[path] = self.store.includes_of(path)
        return list(got)

    def includes_of_files(self, paths: list[str]) -> dict[str, list[tuple[str, str]]]:
        """``includes_of`` of each of ``paths``, those not asked before in one query."""
        missing = [p for p in paths if p not in self._includes]
        if missing:
            self._includes.update(self.store.includes_of_files(missing))
        return {p: list(self._includes[p]) for p in paths}

    def has_name(self, name: str, kinds: tuple[str, ...], step: LookupStep = LookupStep.DIRECT) -> bool:
        """Whether a fact of ``kinds`` is named ``name`` (``bool(by_name(...))``)."""
        if (name, kinds) in self._by_name:
            return bool(self._by_name[name, kinds])
        got = self._has_name.get((name, kinds))
        if got is None:
            got = self._has_name[name, kinds] = self.store.has_name(name, kinds)
            if self.observer is not None:
                self.observer.asked(name, kinds, got, step)
        return got

    # ---- operators -----------------------------------------------------------------------------
    def operators_by_base(self, base: str) -> list[str]:
        got = self._by_base.get(base)
        if got is None:
            got = self._by_base[base] = self.store.operators_by_base(base)
        return list(got)

    def has_kernel(self, kernel: str) -> bool:
        """Whether some operator's yaml dispatch section names ``kernel``."""
        got = self._has_kernel.get(kernel)
        if got is None:
            got = self._has_kernel[kernel] = self.store.has_kernel(kernel)
        return got

    def delegating_to(self, name: str) -> list[str]:
        return self.store.delegating_to(name)

    def operator_names(self) -> list[str]:
        return self.store.operator_names()

    def operator_table(self) -> tuple[dict[str, str], frozenset[str]]:
        """opcalls.name_table of the operator names, once per open index (Note [Answers kept per open index])."""
        from atenmap.resolve.opcalls import name_table

        return self.kept("operator_table", lambda: name_table(self.store.operator_names()))

    def stub_names(self):
        """Once per open index (Note [Answers kept per open index])."""
        return self.kept("stub_names", self.store.stub_names)  # a set a chain asks ``in`` of (exactfirst.py)

    def kept(self, key: str, make: Callable[[], Any]) -> Any:
        """The open index's answer ``key``, made once (Note [Answers kept per open index])."""
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]

    def meta(self) -> dict[str, str]:
        if self._meta is None:
            self._meta = self.store.meta()
        return dict(self._meta)

    def codegen_absent(self) -> str | None:
        return self.store.codegen_absent()
