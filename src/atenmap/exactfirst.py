"""The complete answer on a tree never indexed, from the files the exact pre-scan names for each
lookup (issue 37; Note [A complete answer from the candidates]).

``first_index(info, decision)`` reads every file of the index-to-be once (the tree's, and torchgen's
output when the index would hold it), scans each with defscan.py, and yields an
``api.Index`` over a ``LazyStore``: a Store that, before it answers a question, parses (with the
build's own per-file parse, build._parse_one) every file whose facts could be in the answer. After
the chain, ``LazyStore.exact`` says whether every question was one it could answer so; when it is
not, the answer is thrown away and the full index answers (cli/chain_run.py).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from atenmap import defscan
from atenmap.extract import registry
from atenmap.locks import remove_dead_owners
from atenmap.kinds import FactKind

# Note [A complete answer from the candidates]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A chain is a function of the answers the index gives to its questions (resolve/memo.py lists
# them): the index never changes under it. So a store that gives each question the answer the full
# index would give yields the full index's chain, byte for byte, whatever it holds besides. The
# LazyStore answers from a partial index that grows before each question:
# - a name's facts of the kinds the pre-scan is exact for (defscan.KINDS: functions, classes,
#   ``__global__`` kernels, TORCH_IMPL/META_FUNC, a stub's macros, jiterator strings, macro blocks;
#   ``by_name``, ``by_name_qual``, ``has_name``): every file whose scan names the name's key word
#   (Note [An exact definition pre-scan] in defscan.py) is parsed first. A file outside the
#   candidates holds no such fact of the name; a file among them is parsed whole, so its facts are
#   the full index's. The rows come sorted by path and line (Store.by_name), as in the full index;
#   ids differ, and no answer shows one. A stub's facts (defscan.STUB_KINDS, and ``name in
#   stub_names``) only in the files where a registry macro's arguments name it (Candidates.stub_files);
# - a name's facts of the kinds in TOKEN_KINDS (``torch_impl``: ``m.impl("mul.out", fn)``, made by
#   handlers and macros of their own, which the scan does not read): every file holding the name
#   as a string's end, ``"mul.out"`` or ``::mul.out"`` (tests/test_exactfirst_realtree.py checks, on
#   the whole trees, that each such fact's file holds its name so);
# - a class's facts: the files whose class heads name it (defscan.Candidates.class_files); a
#   member's (``by_name_qual``, whose rows' quals hold the suffix's scope ``MulFunctor::``): the
#   name's candidates where the scope is written as a class, a namespace or a qualifier
#   (``qualifying``, Note [Where a scope can be] in defscan.py);
# - a file's facts (``in_file``, ``function_spans``, ``torch_impls_of``) and its ``#include`` lines
#   (``includes_of``, the include walk of Note [Resolving names]): that file is parsed first;
#   ``in_scope`` and ``by_id`` ask about a fact already answered, whose file is parsed whole;
# - a name's Python bindings (``binding``): every file read for them (torchgen's python_*.cpp,
#   build.has_bindings) is parsed first;
# - the DispatchStub names (``stub_names``: a chain asks only whether a name is one): a set whose
#   ``in`` parses the name's candidates first and asks ``has_name``;
# - the operators and the dispatch table: native_functions.yaml is loaded whole, as by the build;
# - ``meta``: the values the full build writes that an answer reads (codegen_dir, codegen_off,
#   codegen_warnings, the PyTorch version).
# Any other question (a reverse lookup over every file: ``callers``, ``facts_of_kind``,
# ``calls_matching``, ``files``, a path matched by suffix, ...) and a name's facts of any other kind
# make ``exact`` false: the store still answers it from what it holds, and the caller throws the
# answer away for the full index's. Includes resolve against every path of the index-to-be, as
# the build resolves them (Store.add_file's ``include_paths``). What the answer costs is the parse
# of the files its questions name: for ``mul.out`` on CUDA 248 of 2.6.0's 1,978 (hand-written;
# 403 before the scan read comments and literals as spaces and left a lambda's brace to the lambda,
# Note [An exact definition pre-scan]), among them the headers of the include walk (64),
# ``operator`` in a scope ``type`` (28: a functor's ``operator()`` is looked up by name), the
# jiterator strings' ``name`` (21), the files holding ``"mul.out"`` (16) and the classes
# ``scalar_t`` (14) and ``N`` (11) of template arguments.
TOKEN_KINDS = frozenset({FactKind.TORCH_IMPL})

# Note [A file's definitions first]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most files a lookup parses are only asked for a name's definitions (for ``mul.out`` on CUDA, 222
# of 248: the files that may define ``operator``, ``name``, ``scalar_t``); few are entered (their
# calls read: 26). A file is first parsed for DEFS_KINDS only: every kind but those only the
# query with calls makes (registry.call_kinds: calls, launches, the stubs' macros), which is
# extract_file's query without calls (~35% less CPU over the whole tree). Those facts are the full
# parse's facts of those kinds, in the same order, with the same local scopes (none of them is in
# the scope of a call-made fact), and the same error status: tests/test_exactfirst_realtree.py
# checks every file of 2.6.0 and 1.13.1 and of torchgen's output. A question about kinds outside
# DEFS_KINDS (a function's calls: ``in_scope``, a stub's facts) parses the file whole first, and its
# new facts join the stored ones. The answers stay the full index's, ids aside, only if every
# question's rows keep the full index's order, and some order by id within a file (``in_scope``,
# ``includes_of``; ``by_name``'s ties): so a file parsed for its definitions gets its k facts the
# ids base + (j+1)*_GAP, and is given the ids up to base + (k+1)*_GAP; its whole parse then gives
# the facts between two stored ones the ids after the first of them (a file has fewer than _GAP
# facts), so ids keep the order of the file's whole fact list. No answer shows an id.
DEFS_KINDS = frozenset(FactKind) - registry.call_kinds()
_GAP = 1 << 24
_EXACT_KINDS = frozenset(defscan.KINDS)
_STUB_KINDS = frozenset(defscan.STUB_KINDS)
_CLASS = frozenset({FactKind.CLASS})
_SPAN_KINDS = frozenset({FactKind.FUNCTION, FactKind.IMPL_FUNC, FactKind.META_FUNC})  # Store.function_spans
_INCLUDE = frozenset({FactKind.INCLUDE})
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_POOL_FROM = 8  # files parsed at once past which a process pool is started for them (then: 2)
_SCAN_POOL_FROM = 64  # files of a tree past which the pool scans them (Note [The pre-scan in the pool])
_SCAN_CHUNK = 32  # files a worker scans at once

# Note [The pre-scan in the pool]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The pre-scan (defscan.scan_file of every file: ~1.4x ctags' CPU on 2.6.0) is a function of each
# file's bytes alone, so TreeFiles gives it to the pool that later parses the lookups' files: each
# worker reads its chunk of files and returns each one's names and Parts (not its bytes), while
# the parent reads every file itself (``texts``: the string and scope searches read them) and goes
# on with the temporary store and native_functions.yaml's rows. The first question that needs a
# candidate takes the chunks' scans in the walk's order, so every name's files come in the order
# the serial scan gives them, and the candidates are the serial scan's (tests/test_exactfirst.py).
# The extractor's queries are compiled in the parent before the workers fork (they inherit them;
# compiled in each worker, they cost the CPU once per process). Once the pool is there, a
# lookup's files go to it from 2 on (one file a task): the parent's own parses were a third of
# the chain's wall time, one core idle meanwhile.
# Store methods whose answer depends on the operators and the yaml only, loaded whole
_OPERATOR_QUESTIONS = frozenset({
    "operator_names", "operator_bases", "delegating_to", "operators_by_base", "kernel_names", "dispatch_keys",
    "has_kernel", "operators_with_kernel", "dispatch_rows", "delegates", "operator_records", "operator_record",
    "operator_names_starting", "search_operators", "quotes", "codegen_absent", "meta", "path", "close", "kept"})


class TreeFiles:
    """Every file of the index-to-be (``(path, language, size, mtime)`` as the build walks them: the
    tree's, then torchgen's), its bytes, and the pre-scan's candidates (defscan.Candidates, scanned
    in the pool while the caller goes on: Note [The pre-scan in the pool]). ``jobs``: the pool's
    processes (None: one per core, and the pool only for a tree of _SCAN_POOL_FROM files or more)."""

    def __init__(self, root: Path, generated: list[tuple[str, str, int, int]], keep_parsed: bool = False,
                 jobs: int | None = None):
        from atenmap import build, config

        self.root = root
        self.meta: dict[str, tuple[str, int, int]] = {}
        self.texts: dict[str, bytes] = {}
        self._candidates = defscan.Candidates()
        for rel, lang, size, mtime in [*build.walk_sources(root), *generated]:
            self.meta[rel] = (lang, size, mtime)
        self._jobs = jobs or os.cpu_count() or 1
        self._pool = None
        limit = config.max_file_bytes()
        self._scans = None
        if self._jobs > 1 and (jobs is not None or len(self.meta) >= _SCAN_POOL_FROM):
            self._scans = self._scan_in_pool(limit)
        for rel in self.meta:
            data, _why = build.read_source(os.path.join(root, rel), limit)
            if data is not None:
                self.texts[rel] = data
                if self._scans is None:
                    self._candidates.add(rel, data)
        self.paths = frozenset(self.meta)
        self.binding_files = [rel for rel in self.meta if build.has_bindings(rel)]
        self._tokens: dict[str, list[str]] = {}
        self._parsed: dict[str, tuple] | None = {} if keep_parsed else None  # a bench asking several operators

    def _scan_in_pool(self, limit: int) -> list[tuple[list[str], object]]:
        """Each chunk of the files and the pool's future of its scans (_scan_chunk), the queries
        compiled before the workers fork (Note [The pre-scan in the pool])."""
        from atenmap import build

        _compile_queries()
        self._pool = build.worker_pool(self._jobs)
        rels = list(self.meta)
        chunks = [rels[i:i + _SCAN_CHUNK] for i in range(0, len(rels), _SCAN_CHUNK)]
        return [(chunk, self._pool.submit(_scan_chunk, (str(self.root), chunk, limit))) for chunk in chunks]

    @property
    def candidates(self) -> defscan.Candidates:
        """The pre-scan's candidates; the pool's scans taken in the walk's order on first use."""
        if self._scans is not None:
            scans, self._scans = self._scans, None
            for chunk, future in scans:
                for rel, scanned in zip(chunk, future.result()):
                    data = self.texts.get(rel)
                    if scanned is not None and data is not None:
                        self._candidates.add_scanned(rel, data, *scanned)
        return self._candidates

    def parse(self, rels: list[str], defs_only: bool = False) -> list[tuple[str, list[tuple]]]:
        """``(status, fact rows)`` of each of ``rels`` (build._parse_one, as the full build; with
        ``defs_only``, only the facts of DEFS_KINDS: Note [A file's definitions first]); many at once
        in a process pool over every core (made once, closed by ``close``)."""
        from atenmap import build

        kept = self._parsed if self._parsed is not None else {}
        todo = [(str(self.root), rel, self.meta[rel][0], *((DEFS_KINDS,) if defs_only else ()))
                for rel in rels if (rel, defs_only) not in kept]
        jobs = self._jobs
        if jobs > 1 and len(todo) >= (2 if self._pool is not None else _POOL_FROM):  # a pool started: 2 files
            if self._pool is None:
                self._pool = build.worker_pool(jobs)
            done = list(self._pool.map(build._parse_one, todo, chunksize=1))
        else:
            done = [build._parse_one(job) for job in todo]
        fresh = {(rel, defs_only): (status, rows) for rel, status, rows, _put in done}
        if self._parsed is not None:
            self._parsed.update(fresh)
        return [kept.get((rel, defs_only)) or fresh[rel, defs_only] for rel in rels]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)  # scans never taken (an answer given up)
            self._pool = None

    def defining(self, name: str) -> list[str]:
        """The files that may define ``name`` (Note [An exact definition pre-scan])."""
        return self.candidates.files(name)

    def holding(self, name: str) -> list[str]:
        """The files whose bytes hold ``name`` as a string's end (``"mul.out"``, ``"aten::mul.out"``):
        where a ``torch_impl`` fact named ``name`` can be (tests/test_exactfirst_realtree.py), once
        per name."""
        got = self._tokens.get(name)
        if got is None:
            quoted, qualified = b'"%s"' % name.encode(), b'::%s"' % name.encode()
            got = self._tokens[name] = [rel for rel, data in self.texts.items() if quoted in data or qualified in data]
        return got


class _Stubs:
    """The DispatchStub names as a chain asks them: ``name in stubs`` (Note [A complete answer from
    the candidates])."""

    _KINDS = (FactKind.DECLARE_DISPATCH, FactKind.REGISTER_DISPATCH)

    def __init__(self, lazy: "LazyStore"):
        self._lazy = lazy

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and self._lazy.has_name(name, self._KINDS)

    def __iter__(self):
        self._lazy.inexact("stub_names: every name")
        return iter(self._lazy.store.stub_names())


class LazyStore:
    """A Store that parses, before it answers, every file whose facts could be in the answer (Note
    [A complete answer from the candidates]); ``exact``: whether every question so far was one it
    answers as the full index would; ``inexact_questions``: the others."""

    def __init__(self, store, files: TreeFiles):
        self.store = store
        self.files = files
        self.loaded: list[str] = []  # every file parsed, in the order first parsed
        self.entered: list[str] = []  # those parsed whole
        self._loaded: set[str] = set()
        self._defs: dict[str, tuple[int, list[int]]] = {}  # parsed for definitions only: (base, ids)
        self._next_id = 1
        self.inexact_questions: list[str] = []
        self.asked_names = 0

    @property
    def exact(self) -> bool:
        return not self.inexact_questions

    def inexact(self, why: str) -> None:
        self.inexact_questions.append(why)

    def load(self, rels, kinds=None) -> None:
        """Parse and store each of ``rels`` (build._parse_one, as the full build): for its facts of
        ``kinds`` (None: all; within DEFS_KINDS, its definitions first: Note [A file's definitions
        first]); a file parsed for its definitions is parsed whole when more is asked."""
        defs_only = kinds is not None and frozenset(kinds) <= DEFS_KINDS
        rels = [rel for rel in dict.fromkeys(rels) if rel in self.files.meta]
        todo = [rel for rel in rels if rel not in self._loaded]
        for rel, (status, rows) in zip(todo, self.files.parse(todo, defs_only)):
            self._loaded.add(rel)
            lang, size, mtime = self.files.meta[rel]
            if defs_only:
                base = self._next_id
                ids = [base + (j + 1) * _GAP for j in range(len(rows))]
                self._next_id = base + (len(rows) + 1) * _GAP
                self._defs[rel] = (base, ids)
            else:
                ids = list(range(self._next_id, self._next_id + len(rows)))
                self._next_id += len(rows)
                self.entered.append(rel)
            self.store.add_file(rel, lang, size, mtime, status, rel.startswith("/"), rows,
                                include_paths=self.files.paths, ids=ids)
            self.loaded.append(rel)
        if not defs_only:
            self._complete([rel for rel in rels if rel in self._defs])

    def _complete(self, rels: list[str]) -> None:
        """Parse whole each of ``rels``, parsed for its definitions before, and store the facts that
        parse adds, with ids in the file's order (Note [A file's definitions first])."""
        for rel, (_status, rows) in zip(rels, self.files.parse(rels)):
            base, stored = self._defs.pop(rel)
            ids, j, last = [], 0, base
            new = []
            for i, row in enumerate(rows):
                if row[0] in DEFS_KINDS:
                    last = stored[j]
                    j += 1
                else:
                    last += 1
                    new.append(i)
                ids.append(last)
            if j != len(stored):  # the check of Note [A file's definitions first] failed
                raise RuntimeError(f"{rel}: {j} facts of the definitions' kinds parsed whole, {len(stored)} before")
            self.store.add_facts(rel, rows, ids, new, include_paths=self.files.paths)
            self.entered.append(rel)

    def _need(self, name: str, kinds, scope: str = "") -> None:
        """Parse every file that may hold a fact of ``kinds`` named ``name`` (with ``scope``: whose
        qualified name holds ``scope::``)."""
        self.asked_names += 1
        kinds = frozenset(kinds)
        if FactKind.BINDING in kinds:  # only torchgen's python_*.cpp are read for them: every one
            self.load(self.files.binding_files, (FactKind.BINDING,))
            kinds = kinds - {FactKind.BINDING}
        if not kinds:
            return
        candidates = self.files.candidates
        asked = kinds
        if kinds <= _STUB_KINDS:  # a dispatch macro's argument (defscan.Candidates.stub_files)
            where = candidates.stub_files(name)
        elif kinds == _CLASS:  # a class head's word
            where = candidates.class_files(name)
        elif kinds <= _EXACT_KINDS | TOKEN_KINDS:
            where = candidates.files(name)
            if kinds & TOKEN_KINDS:  # the name as written in the file: ``m.impl("mul.out", ...)``
                where = [*where, *self.files.holding(name)]
        else:
            self.inexact(f"facts of {sorted(str(k) for k in kinds - _EXACT_KINDS - TOKEN_KINDS)} named {name}")
            return
        if scope and _IDENT.match(scope):  # a member's definition: where its scope can be (Note [Where a scope can be])
            where = candidates.qualifying(scope, where)
        self.load(where, asked)

    # ---- the questions it answers exactly ------------------------------------------------------
    def by_name(self, name, kinds):
        self._need(name, kinds)
        return self.store.by_name(name, kinds)

    def by_name_qual(self, name, kinds, suffix, also_containing=()):
        parts = suffix.split("::")  # every row's qual holds ``scope::`` (Store.by_name_qual)
        self._need(name, kinds, parts[-2] if len(parts) > 2 else "")
        return self.store.by_name_qual(name, kinds, suffix, also_containing)

    def has_name(self, name, kinds):
        self._need(name, kinds)
        return self.store.has_name(name, kinds)

    def in_file(self, path, kinds):
        self.load([path], kinds)
        return self.store.in_file(path, kinds)

    def function_spans(self, path):
        self.load([path], _SPAN_KINDS)
        return self.store.function_spans(path)

    def torch_impls_of(self, wrapper, file):
        self.load([file], TOKEN_KINDS)
        return self.store.torch_impls_of(wrapper, file)

    def includes_of(self, path):
        self.load([path], _INCLUDE)
        return self.store.includes_of(path)

    def includes_of_files(self, paths):
        paths = list(paths)
        self.load(paths, _INCLUDE)
        return self.store.includes_of_files(paths)

    def in_scope(self, scope_id, kinds):
        if not frozenset(kinds) <= DEFS_KINDS:  # a function's calls: its file parsed whole
            scope = self.store.by_id(scope_id)
            if scope is not None and scope.file in self._defs:
                self.load([scope.file])
        return self.store.in_scope(scope_id, kinds)

    def by_id(self, fact_id):
        return self.store.by_id(fact_id)

    def stub_names(self):
        return _Stubs(self)

    def __getattr__(self, attr):
        if attr not in _OPERATOR_QUESTIONS:
            self.inexact(attr)
        return getattr(self.store, attr)


def _compile_queries() -> None:
    """Every language's extractor queries, with and without calls, compiled now (before a pool
    forks: its workers inherit them instead of each compiling its own)."""
    from atenmap.extract.languages import LANGUAGES
    from atenmap.extract.treesitter import extract_query

    for lang in sorted(set(LANGUAGES.values())):
        for calls in (False, True):
            extract_query(lang, calls)


def _scan_chunk(job: tuple[str, list[str], int]) -> list[tuple[set[bytes], defscan.Parts] | None]:
    """Worker: ``(root, relpaths, size limit)`` -> each file's ``defscan.scan_parts``, None for a
    file not read (build.read_source; Note [The pre-scan in the pool])."""
    from atenmap import build

    root, rels, limit = job
    out = []
    for rel in rels:
        data, _why = build.read_source(os.path.join(root, rel), limit)
        out.append(None if data is None else defscan.scan_parts(data))
    return out


def generated_files(info, decision, status=None) -> tuple[list[tuple[str, str, int, int]], dict[str, str]]:
    """torchgen's files as the build would index them for ``decision`` (build._codegen: run once,
    cached), and the meta values the build writes for them."""
    from atenmap import build
    from atenmap.build import BuildReport
    from atenmap.extract.codegen import is_cached
    from atenmap.indexstate import CodegenDecision
    from atenmap.source.find import cache_dir

    if decision.enabled and not decision.may_run:  # no consent: torchgen's cached output, or none (as build())
        cached = is_cached(Path(info.root), cache_dir() / "codegen")
        decision = CodegenDecision(True) if cached else CodegenDecision(False, decision.note, decision.cause)
    report = BuildReport(Path(os.devnull))
    gen = build._codegen(info, decision, status, report)
    if gen.thread is not None:
        gen = gen.thread.wait(report)
    return gen.files, gen.meta


@contextmanager
def first_index(info, decision, status=None, files: TreeFiles | None = None) -> Iterator[tuple]:
    """``(api.Index over a LazyStore, the LazyStore)`` for ``info`` (a tree never indexed) as the full
    build with ``decision`` would index it; its temporary store beside the index is removed on exit.
    ``files``: the tree's files read and scanned before (a bench asking several operators)."""
    from atenmap import build
    from atenmap.api import Index
    from atenmap.source.find import index_dir
    from atenmap.store import Store

    gen_files, gen_meta = generated_files(info, decision, status)
    mine = files is None
    if files is None:
        files = TreeFiles(Path(info.root), gen_files)
    try:  # the pool TreeFiles started (the pre-scan's) is closed whatever fails below
        folder = index_dir(info)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"first-{os.getpid()}.sqlite"
        remove_dead_owners(folder, "first-")  # a killed run's
        tmp.unlink(missing_ok=True)
        store = Store.create(tmp)
        try:
            store.index_now()  # queried as it grows
            store.begin()
            store.replace_operators(*build._operator_rows(str(info.root)))
            store.set_meta(**build._expected_meta(info), **gen_meta, pytorch_version=info.version,
                           pytorch_commit=info.commit or "")
            lazy = LazyStore(store, files)
            yield Index(info, lazy), lazy
        finally:
            store.close()
            tmp.unlink(missing_ok=True)
    finally:
        if mine:
            files.close()
