"""Build and refresh the index of one PyTorch tree: walk files, parse in parallel, store.

The index lives in ``<cache>/indexes/<tree>-<hash>/index.sqlite``. A build copies the current
index (if compatible) to a temporary file, re-parses only files whose size or mtime changed,
reloads native_functions.yaml if it changed, and renames the result into place. See the
docstring of ``store`` for why a reader never sees half an index.
"""
from __future__ import annotations

import functools
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from atenmap import __version__, config
from atenmap.errors import IndexError_
from atenmap.kinds import FactKind
from atenmap.files import NotRegular, TooLarge, read_bytes
from atenmap.limits import too_odd
from atenmap.locks import BUILDS_LOCK, exclusive, shared
from atenmap.model import Operator, SourceInfo
from atenmap.source.find import YAML_REL, cache_dir, index_dir
from atenmap.store import INDEX_NAME, SCHEMA_VERSION, CacheDamaged, CorruptIndex, Store
# moved to indexstate.py (a warm query reads them without loading the build); re-exported here
from atenmap.indexstate import (CodegenDecision, codegen_decision, index_path,  # noqa: F401
                                is_fresh, operator_from_dict, torchgen_pending)
# the walk, the extractor hash and the full check are fullcheck.py's (indexstate's is_fresh runs them
# without the build); re-exported here
from atenmap.fullcheck import (EXTRA_SOURCES, SKIP_DIRS, extractor_hash, full_check as _full_check,  # noqa: F401
                               expected_meta as _expected_meta, walk_sources)

Progress = Callable[[int, int, str], None]  # (done, total, current path)
TORCHGEN_RAN = "torchgen ran in"  # the status line that ends torchgen's phase: "torchgen ran in 23.3 s"


@dataclass
class BuildReport:
    path: Path
    files_total: int = 0
    parsed: int = 0
    removed: int = 0
    reused: int = 0
    with_errors: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    facts: dict[str, int] = field(default_factory=dict)
    operators: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    codegen_seconds: float = 0.0
    codegen_reused: bool = False
    codegen: bool = False  # torchgen's output is part of this index (Note [Whose code runs])
    copied_from: str = ""  # the index of the same content this one is a copy of (sameindex.py)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["path"] = str(self.path)
        return d


# Note [Which generated files are indexed]
# torchgen writes ~50 MB. The chain needs the dispatcher registrations and wrappers
# (Register<Key>.cpp), the ufunc kernels (Ufunc*_<op>.cpp/.cu), the view_copy kernels
# (CompositeViewCopyKernels.cpp) and the Python bindings. Headers (declarations only), the
# *Everything.cpp files (copies of the numbered shards), functionalization, schema and
# Operators_*.cpp (the at::_ops entry points) are left out.
_GENERATED_ATEN = re.compile(
    r"^(Register(?!Functionalization|Schema|BackendSelect|CodegenUnboxedKernels)\w*|Ufunc\w+|CompositeViewCopyKernels)\.(cpp|cu)$")
# From gen_autograd (autograd/): the autograd nodes (Functions.h/.cpp: struct MulBackward0, its
# apply) and the Autograd-key kernels that record them (VariableType_<n>.cpp), for `--backward`;
# not TraceType, ADInplaceOrViewType or the *Everything copy.
_GENERATED_AUTOGRAD = re.compile(r"^(Functions\.(cpp|h)|VariableType_\d+\.cpp)$")
# Of those files only the definitions and registrations are kept: --backward reads the wrappers'
# text itself, and their ~90k calls (unpack, compute_requires_grad, ...) lead nowhere: not even
# read (extract_file's ``kinds``).
_AUTOGRAD_PATH = re.compile(r"/autograd/(Functions\.(cpp|h)|VariableType_\d+\.cpp)$")
_AUTOGRAD_KINDS = frozenset({FactKind.FUNCTION, FactKind.CLASS, FactKind.TORCH_IMPL, FactKind.MACRO_BLOCK})
_GENERATED_PYTHON = re.compile(
    r"^python_(torch_functions_\d+|variable_methods|nn_functions|fft_functions|linalg_functions|special_functions"
    r"|sparse_functions|nested_functions)\.cpp$")


def walk_generated(out_dir: Path | None, python_dir: Path | None,
                   autograd_dir: Path | None = None) -> list[tuple[str, str, int, int]]:
    """``(absolute path, language, size, mtime_ns)`` of the generated files worth indexing."""
    found = []
    for folder, pattern in ((out_dir, _GENERATED_ATEN), (python_dir, _GENERATED_PYTHON),
                            (autograd_dir, _GENERATED_AUTOGRAD)):
        if folder is None or not folder.is_dir():
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_file() and pattern.match(entry.name):
                st = entry.stat()
                lang = "cuda" if entry.name.endswith(".cu") else "cpp"
                found.append((entry.path, lang, st.st_size, st.st_mtime_ns))
    return found


def read_source(path: str, limit: int) -> tuple[bytes | None, str]:
    """``(contents, "")`` of a regular file of at most ``limit`` bytes, else ``(None, why)``:
    ``not-regular`` (a FIFO, a device, a symlink to one: opened without blocking, never read),
    ``too-large``, ``bad-file-name`` (a name that is not UTF-8, see walk_sources), ``unreadable``.
    Read by files.read_bytes, as every file of a tree."""
    try:
        return read_bytes(path, limit), ""
    except NotRegular:
        return None, "not-regular"
    except TooLarge:
        return None, "too-large"
    except FileNotFoundError:
        return None, "bad-file-name" if _ESCAPED.search(path) else "unreadable (No such file or directory)"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"


_ESCAPED = re.compile(r"\\x[89a-f][0-9a-f]")


def _die_with_parent(parent: int) -> None:
    """Pool initializer: this worker gets SIGKILL when the build process dies (Linux), so no
    orphan keeps parsing or holds the build's lock. See Note [Locks a dead owner cannot hold]."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _start_worker(parent: int, nice: int) -> None:
    """Pool initializer: ``_die_with_parent``, then ``os.nice(nice)``."""
    _die_with_parent(parent)
    if nice:
        os.nice(nice)


def worker_pool(jobs: int, nice: int = 0):
    """The process pool that parses files; its workers die with this process. ``nice``: added to
    the workers' niceness (Note [The cold build's critical path]: they yield to torchgen)."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(os.getpid(), nice))


def has_bindings(rel: str) -> bool:
    """Whether the file at ``rel`` is read for Python binding markers (torchgen's python_*.cpp)."""
    return rel.startswith("/") and "/python_" in rel


def _parse_one(job: tuple, fresh: bool = False) -> tuple[str, str, list[tuple] | None, tuple | None]:
    """Worker: ``(root, relpath, lang)`` -> ``(relpath, status, fact tuples, fact cache entry)``;
    ``(root, relpath, lang, kinds)``: only the facts of ``kinds`` (extract_file's ``kinds``; a
    generated autograd file keeps its own kinds whatever is asked).
    A ``relpath`` that is absolute is a generated file; Python binding files also get their binding
    markers. Rows already made from the same bytes come from the fact cache (not with ``fresh``).
    The entry, None when the cache is off or the file skipped: ``(key, -1, False)`` for a file
    parsed here (the build writes it to the cache), ``(key, n, old)`` for a hit (``old``: its
    ``used`` is to be moved), ``(key, n, old, entry id)`` for a hit left in the cache. In a build that copies hits as blocks (``_copy_hits``) a hit's rows
    are None: the parent copies the entry's n rows inside SQLite (Note [A known file copied as a
    block] in factcache.py). See Note [Facts by content]."""
    from atenmap.extract.parse import extract_file

    root, rel, lang = job[:3]
    kinds = job[3] if len(job) > 3 else None
    data, skipped, bindings, kinds = _read_checked(root, rel, kinds, _limit_now or config.max_file_bytes())
    if data is None:
        return rel, skipped, [], None
    cache = fact_cache() if _facts_now is _UNSET else _facts_now
    key = _content_key(data, lang, bindings, kinds) if cache else ""
    if cache and not fresh:
        if _copy_hits:
            found = cache.probe(key)
            if found is not None:
                return rel, "errors" if found[0] else "ok", None, (key, found[1], found[2], found[3])
        else:
            hit, old = cache.lookup(key)
            if hit is not None:
                return rel, "errors" if hit[0] else "ok", hit[1], (key, len(hit[1]), old)
    try:
        has_error, facts = extract_file(data, lang, bindings=bindings, kinds=kinds)
    except Exception as exc:  # a grammar crash must not stop the build
        return rel, f"skipped:parse-failed ({type(exc).__name__})", [], None
    rows = [(f.kind, f.name, f.qual, f.line, f.end_line, f.namespace, f.scope, f.arg, f.detail, f.via_macro,
             f.cond, f.targs) for f in facts]
    if kinds is not None:
        rows = keep_kinds(rows, kinds)
    return rel, "errors" if has_error else "ok", rows, (key, -1, False) if cache else None


def _read_checked(root: str, rel: str, kinds, limit: int) -> tuple[bytes | None, str, bool, frozenset | None]:
    """``(bytes, "", bindings, kinds)`` of a file to parse (``kinds``: the kind filter its rows get),
    or ``(None, "skipped:<why>", ...)``: what ``_parse_one`` and ``_key_one`` read."""
    data, why = read_source(os.path.join(root, rel), limit)
    if data is None:
        return None, f"skipped:{why}", False, kinds
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "skipped:not-utf8", False, kinds
    odd = too_odd(data)
    if odd:  # Note [Pathological sources] in limits.py
        return None, f"skipped:{odd}", False, kinds
    if rel.startswith("/") and _AUTOGRAD_PATH.search(rel):
        kinds = _AUTOGRAD_KINDS
    return data, "", has_bindings(rel), kinds


def _key_one(job: tuple[str, str, str, int]) -> str:
    """Worker: ``(root, relpath, lang, size limit)`` -> the file's fact cache key, or its
    ``skipped:<why>`` status (Note [An index of the same content])."""
    root, rel, lang, limit = job
    data, skipped, bindings, kinds = _read_checked(root, rel, None, limit)
    return skipped if data is None else _content_key(data, lang, bindings, kinds)


_UNSET = object()
# The fact cache of the files _refresh_files is parsing, decided once in the parent (the forked
# workers inherit it) instead of reading the settings again for every file.
_facts_now: object = _UNSET
# Whether _refresh's store has the fact cache attached: a hit is then copied as a block
# (Note [A known file copied as a block] in factcache.py); set before the pool forks.
_copy_hits = False
# config.max_file_bytes() of that build, read once (it reads the config file: ~0.25 ms a file)
_limit_now = 0


def fact_cache() -> "factcache.FactCache | None":
    """The fact cache of this extractor, or None when ``fact_cache`` is off (config.py). Imported
    here, not at the top: a query imports build for its freshness check, not the cache."""
    from atenmap.store import factcache

    if not config.fact_cache():
        return None
    return factcache.FactCache(cache_dir() / "facts" / f"{_fact_key()}{factcache.SUFFIX}")


def _content_key(data: bytes, lang: str, bindings: bool, kinds) -> str:
    from atenmap.store import factcache

    return factcache.content_key(data, lang, bindings, kinds)


@functools.lru_cache(maxsize=1)
def _fact_key() -> str:
    """Once per process (a worker inherits the parent's): the extractor's files are hashed."""
    import hashlib

    from atenmap.store import factcache
    from atenmap.extract.parse import grammar_versions

    # This file makes the rows from the extractor's facts (_parse_one, keep_kinds): part of the key.
    rows_code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return factcache.version_key(f"{extractor_hash()}+{rows_code}", grammar_versions(), SCHEMA_VERSION, __version__)


def keep_kinds(rows: list[tuple], kinds: frozenset[str]) -> list[tuple]:
    """The fact tuples of ``kinds``, their local scopes renumbered (a dropped scope becomes -1)."""
    kept = [i for i, r in enumerate(rows) if r[0] in kinds]
    new = {old: n for n, old in enumerate(kept)}
    return [(*rows[i][:6], new.get(rows[i][6], -1), *rows[i][7:]) for i in kept]


# Note [The cold build's critical path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A first build is torchgen (~13 s of CPU in three generator processes, ~8 s of wall: Note [The
# generators run side by side] in codegen.py) and the parse (~13 s of CPU in the pool); everything
# else is a serial tail in the parent. The order that keeps both cores busy:
#
# 1. Walk the tree; delete what changed. If torchgen's output is cached (``is_cached``: a hash of
#    its ~160 inputs, ~10 ms) the generated files are known at once and the build is the cold
#    index of the old order: one list, biggest files first.
# 2. Otherwise start the pool *before* the torchgen thread (its workers are forked on the first
#    submit: a fork while another thread runs could copy a lock that thread holds, and a worker
#    forked while the thread holds the codegen lock would inherit it, Note [Locks a dead owner
#    cannot hold]); its first job loads native_functions.yaml (0.7 s) unless ``yaml_stat`` says it
#    is unchanged. Then ``_TorchgenThread`` runs torchgen while the pool parses the hand-written
#    tree; its status lines are printed by the main thread, between results. The workers run at
#    niceness +10 then: torchgen's files are the ones the build waits for, and on 2 cores the
#    workers would otherwise take an equal share from it (they keep the niceness for the
#    generated files; the machine is theirs by then).
# 3. When torchgen is done, its files (the biggest: 12.7 MB of 34) are submitted ahead of what is
#    left of the tree, and stored after the whole tree (a fixed order: the ids do not depend on
#    timing).
# 4. Each file's ``#include``s are resolved as it is stored (``Store.add_file(include_paths=)``);
#    ``resolve_includes`` runs over the whole index only when files kept from the old index could
#    resolve differently (files came or went), or when a tree file includes an absolute path
#    while torchgen's file names were not known yet.
# 5. The fact counts come from the rows as stored (a full build) or from the copied index's
#    ``facts_kind`` index (a refresh), not from a scan of the new table; then ``finish`` (indexes,
#    ANALYZE: ~0.8 s), which nothing can overlap, since it reads everything.
# What is left of the tail: the yaml rows' insert, ``finish``, and the last chunk the pool parses.


# Note [torch.compile facts when asked]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The torch.compile facts (extract/inductor.py: the tree's torch/_inductor and decomposition
# Python) serve only ``--compile`` (Index.compile), the bundle and ``atenmap index``; reading them
# is ~7% of a cold build's CPU (issue 37). So a build makes them only when asked
# (``compile_facts=True``: ``atenmap index``, Index.open(compile_facts=True) for a --compile query,
# Index.compile on an index that lacks them, scripts/build-bundle), under the index's lock like any
# build (copied, refreshed, renamed into place). One schema: the ``compile`` table is always there;
# meta ``compile_inputs`` (the stamp of what was read) says whether it holds the tree's facts
# (indexstate.compile_facts_made; the bundled index always does). Without the stamp, freshness
# stats nothing of torch/ and a plain build leaves the table empty. With it: facts whose inputs
# are unchanged are kept; changed ones are made again when asked, else dropped with their stamp
# (the next --compile query makes them). An index from before this rule always has the stamp.


def build(source: SourceInfo, *, progress: Progress | None = None, jobs: int | None = None,
          force: bool = False, codegen: bool | str | None = True,
          status: Callable[[str], None] | None = None, compile_facts: bool = False) -> BuildReport:
    """Create or refresh the index of ``source``. Safe against concurrent runs and kills.

    ``codegen``: also run the checkout's torchgen (cached) and index what it writes, as
    Note [Whose code runs] decides; see codegen.py and Note [Which generated files are indexed].
    ``compile_facts``: the index must hold the tree's torch.compile facts afterwards (Note
    [torch.compile facts when asked]). ``status`` gets one-line messages. See Note [The cold
    build's critical path]."""
    t0 = time.perf_counter()
    folder = index_dir(source)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    final = folder / INDEX_NAME
    report = BuildReport(final)
    # shared: a prune leaves this build's new torchgen output alone (Note [Builds and prune])
    with shared(cache_dir() / BUILDS_LOCK, status), \
            exclusive(folder / "lock", status, "waiting for another atenmap index build…"):
        decision = codegen_decision(source, codegen)  # once: is_fresh and the build share it
        if not force and is_fresh(source, decision) and (not compile_facts or _compile_made(final, source)):
            # nothing to do: no copy, no re-resolve
            _report_unchanged(final, report)
            report.seconds = time.perf_counter() - t0
            return report
        from atenmap import freshness

        if decision.enabled and not decision.may_run:  # no consent: torchgen's cached output, or none
            from atenmap.extract.codegen import is_cached

            cached = is_cached(Path(source.root), cache_dir() / "codegen")
            decision = CodegenDecision(True) if cached else CodegenDecision(False, decision.note, decision.cause)
        proof = freshness.Proof(source.root, decision.enabled)  # before anything is read
        token = os.urandom(8).hex()
        tmp = folder / f"{INDEX_NAME}.tmp-{os.getpid()}"
        for stale in folder.glob(f"{INDEX_NAME}.tmp-*"):
            stale.unlink(missing_ok=True)  # left by a killed build; we hold the lock
        try:  # whatever fails (a full disk while copying the old index, too), the temporary goes
            try:
                _build_into(tmp, final, source, force, status, report, progress, jobs, decision, proof, token,
                            compile_facts)
            except CacheDamaged:  # Note [A known file copied as a block]: a damaged page ended the
                tmp.unlink(missing_ok=True)  # build's transaction; again without that file
                cache = fact_cache()
                if cache is not None:
                    cache.replace_damaged()
                report = BuildReport(final)
                _build_into(tmp, final, source, force, status, report, progress, jobs, decision, proof, token,
                            compile_facts)
            except _NotTheSame as exc:  # Note [An index of the same content]: built again, not copied
                tmp.unlink(missing_ok=True)
                if status:
                    status(f"{exc}; building the index instead")
                report = BuildReport(final)
                _build_into(tmp, final, source, force, status, report, progress, jobs, decision, proof, token,
                            compile_facts, same_content=False)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        proof.write(folder, token)
    report.seconds = time.perf_counter() - t0
    return report


def _build_into(tmp: Path, final: Path, source: SourceInfo, force: bool, status, report: BuildReport,
                progress, jobs, decision: CodegenDecision, proof, token: str, compile_facts: bool = False,
                same_content: bool = True) -> None:
    """The build itself, into ``tmp``, renamed to ``final`` when complete (build's lock held)."""
    store = _start(source, final, tmp, force, status)
    report.rebuilt = not store.files()
    try:
        gen_meta = _refresh(store, Path(source.root), report, progress, jobs,
                            _codegen(source, decision, status, report), proof.dirs, compile_facts, same_content)
        store.set_meta(**_expected_meta(source), **gen_meta, pytorch_version=source.version,
                       pytorch_commit=source.commit or "", built_at=str(int(time.time())), fresh_token=token,
                       fact_counts=json.dumps(report.facts, sort_keys=True))
        store.finish(analyze=not report.copied_from)  # a copy has its statistics
        store.set_meta(complete="1")
    finally:
        store.close()
    os.chmod(tmp, 0o644)  # whatever the umask: see docs/security.md
    os.replace(tmp, final)


def _report_unchanged(final: Path, report: BuildReport) -> None:
    """The report of a build that found the index fresh, from what the index records."""
    store = Store.open(final)
    try:
        meta = store.meta()
        files = store.files()
        report.files_total = report.reused = len(files)
        report.facts = json.loads(meta["fact_counts"]) if meta.get("fact_counts") else store.counts()
        report.operators = len(store.operator_names())
        report.codegen = meta.get("codegen") == "on"
        report.codegen_reused = report.codegen
        report.warnings.extend(json.loads(meta.get("codegen_warnings") or "[]"))
    finally:
        store.close()


def _start(source: SourceInfo, final: Path, tmp: Path, force: bool, status=None) -> Store:
    if final.exists() and not force:
        try:
            old = Store.open(final)
            compatible = all(old.meta().get(k) == v for k, v in _expected_meta(source).items())
            old.close()
        except CorruptIndex as exc:
            (status or _stderr)(f"{exc}; rebuilding it")
            compatible = False
        except IndexError_:
            compatible = False
        if compatible:
            import shutil  # builds only: a query does not import it

            shutil.copyfile(final, tmp)
            store = Store.open(tmp, writable=True)
            store.set_meta(complete="0")
            return store
    return Store.create(tmp)


def _stderr(message: str) -> None:
    import sys

    print(f"atenmap: {message}", file=sys.stderr, flush=True)


@dataclass
class _Generated:
    """torchgen's part of a build: its files and meta values, or the thread still making them."""
    files: list[tuple[str, str, int, int]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    thread: "_TorchgenThread | None" = None


def _codegen(source: SourceInfo, decision: CodegenDecision, status, report: BuildReport) -> _Generated:
    """torchgen's files to index, at once when it is off or its output cached, else the thread
    that runs it (not started yet: Note [The cold build's critical path])."""
    from atenmap.extract import codegen as _cg

    report.codegen = decision.enabled
    if not decision.enabled:
        note = decision.note
        if note:
            report.warnings.append(note)
            if status:
                status(note)
        return _Generated(meta={"codegen": "off", "codegen_hash": "", "codegen_dir": "", "codegen_off": decision.cause,
                                "codegen_warnings": json.dumps([note] if note else [])})
    root, cache = Path(source.root), cache_dir() / "codegen"
    if not _cg.is_cached(root, cache):
        return _Generated(thread=_TorchgenThread(root, cache, status))
    return _codegen_done(_cg.run_codegen(root, cache, progress=status, notice=status), report)


def _codegen_done(result, report: BuildReport) -> _Generated:
    report.codegen_seconds = result.seconds
    report.codegen_reused = result.reused
    report.warnings.extend(result.warnings)
    files = walk_generated(result.out_dir, result.python_dir, result.autograd_dir)
    return _Generated(files, {"codegen": "on", "codegen_hash": result.input_hash, "codegen_off": "",
                              "codegen_dir": str(result.out_dir.parent) if result.out_dir else "",
                              "codegen_warnings": json.dumps(list(result.warnings))})


class _TorchgenThread:
    """``run_codegen`` in a thread beside the parse. Its status lines wait in a queue for the main
    thread (``say``); its exception, if any, is raised by ``wait``; ``cancel`` kills torchgen (Note
    [Stopping torchgen from another thread] in codegen.py)."""

    def __init__(self, root: Path, cache: Path, status: Callable[[str], None] | None):
        import queue
        import threading

        self._status = status
        self._lines: queue.SimpleQueue[tuple[bool, str]] = queue.SimpleQueue()
        self._cancel = threading.Event()
        self._result = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(root, cache), name="atenmap-torchgen", daemon=True)

    def _run(self, root: Path, cache: Path) -> None:
        from atenmap.extract.codegen import run_codegen

        try:
            self._result = run_codegen(root, cache, progress=lambda line: self._lines.put((False, line)),
                                       notice=lambda line: self._lines.put((True, line)), cancel=self._cancel)
            if not self._result.reused and self._result.out_dir is not None:  # See Note [Build progress] in cli/progress.py
                self._lines.put((False, f"{TORCHGEN_RAN} {self._result.seconds:.1f} s"))
        except BaseException as exc:  # not handled here: handed to the main thread, raised by wait()
            self._error = exc

    def start(self) -> None:
        if self._thread.ident is None:
            self._thread.start()

    def say(self) -> None:
        """Print the status lines that came so far, as ``build(status=)`` (or, for the notice
        without one, stderr: run_codegen's own default) would have."""
        while not self._lines.empty():
            is_notice, line = self._lines.get()
            if self._status is not None:
                self._status(line)
            elif is_notice:
                _stderr(line)

    def done(self) -> bool:
        self.say()
        return self._thread.ident is not None and not self._thread.is_alive()

    def wait(self, report: BuildReport) -> _Generated:
        self.start()
        while self._thread.is_alive():
            self._thread.join(0.1)
            self.say()
        self.say()
        if self._error is not None:
            raise self._error
        return _codegen_done(self._result, report)

    def cancel(self) -> None:
        self._cancel.set()
        if self._thread.ident is not None:
            self._thread.join(30)


class _Intake:
    """The parent's side of the parse: which files need parsing, and each parsed file stored, its
    includes resolved against every path of the new index (Note [The cold build's critical path])."""

    def __init__(self, store: Store, report: BuildReport, progress: Progress | None):
        self.store, self.report, self.progress = store, report, progress
        self.known = store.files()
        self.paths: set[str] = set()
        self.meta_of: dict[str, tuple[str, int, int]] = {}
        self.total = self.done = 0
        self.all_known = False  # torchgen's files are in self.paths
        self.unsure = False  # a tree file included an absolute path before they were
        self.kinds: dict[str, int] = {}
        self.root = ""  # the tree's root (a hit whose copy fails is parsed here)
        # (key, has_error, first id, n) of each file parsed (not a hit): written to the fact cache
        self.parsed_entries: list[tuple[str, bool, int, int]] = []
        # (path, language, size, key or skipped status) of each file stored, in order; None once a
        # file has no key (Note [An index of the same content])
        self.order: list[tuple[str, str, int, str]] | None = []

    def plan(self, found: Iterable[tuple[str, str, int, int]], generated: bool) -> list[tuple[str, str, int, int]]:
        """The files of ``found`` to parse; files of that part (tree or generated) that changed or
        went are deleted from the index."""
        todo = []
        for rel, lang, size, mtime in found:
            self.paths.add(rel)
            rec = self.known.get(rel)
            if rec is not None and rec[1] == size and rec[2] == mtime:
                self.report.reused += 1
                continue
            todo.append((rel, lang, size, mtime))
            self.meta_of[rel] = (lang, size, mtime)
        gone = [v[0] for p, v in self.known.items() if p not in self.paths and bool(v[3]) == generated]
        self.store.delete_files(gone + [self.known[rel][0] for rel, *_ in todo if rel in self.known])
        self.report.removed += len(gone)
        self.total += len(todo)
        return todo

    def take(self, result: tuple[str, str, list[tuple] | None, tuple | None]) -> None:
        rel, status, rows, entry = result
        lang, size, mtime = self.meta_of[rel]
        generated = rel.startswith("/")
        if rows is None:  # a hit left in the fact cache: copied as a block
            copied = self.store.add_cached_file(rel, lang, size, mtime, status, generated, entry[3], entry[1],
                                                include_paths=self.paths, key=entry[0])
            if copied is None:  # the entry changed under us: parsed here, written again
                self.take(_parse_one((self.root, rel, lang), fresh=True))
                return
            kinds, includes = copied
            if entry[2]:
                _facts_now.stage(entry[0], None)
            if not self.all_known and not self.unsure:
                self.unsure = any(name.startswith("/") for name in includes)
            for k, n in kinds.items():
                self.kinds[k] = self.kinds.get(k, 0) + n
        else:
            if not self.all_known and not self.unsure:
                self.unsure = any(r[0] == FactKind.INCLUDE and r[1].startswith("/") for r in rows)
            first = self.store.add_file(rel, lang, size, mtime, status, generated, rows, include_paths=self.paths)
            if entry is not None and _facts_now:
                if entry[1] < 0:
                    self.parsed_entries.append((entry[0], status == "errors", first, len(rows)))
                elif entry[2]:
                    _facts_now.stage(entry[0], None)
            for r in rows:
                self.kinds[r[0]] = self.kinds.get(r[0], 0) + 1
        if self.order is not None:  # Note [An index of the same content]
            if status.startswith("skipped:") or entry is not None:
                self.order.append((rel, lang, size, status if status.startswith("skipped:") else entry[0]))
            else:
                self.order = None  # parsed without a key (the fact cache is off)
        if status.startswith("skipped:"):
            why = status.split(":", 1)[1].split(" ")[0]
            self.report.skipped[why] = self.report.skipped.get(why, 0) + 1
        elif status == "errors":
            self.report.with_errors += 1
        self.report.parsed += 1
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total, rel)

    def finish(self) -> None:
        """Re-resolve every include when kept files could resolve differently; the fact counts."""
        report, store = self.report, self.store
        report.files_total = len(self.paths)
        if self.unsure or (report.reused and self.paths != self.known.keys()):
            store.resolve_includes()
        report.facts = store.counts() if report.reused else dict(sorted(self.kinds.items()))


_SERIAL_BELOW = 32  # files; fewer are parsed in this process
_YIELD_TO_TORCHGEN = 10  # the workers' niceness while torchgen runs beside them
_CHUNK = 4  # files per pool job


def _refresh(store: Store, root: Path, report: BuildReport, progress: Progress | None, jobs: int | None,
             gen: _Generated, dirs: dict[str, int] | None = None, compile_facts: bool = False,
             same_content: bool = True) -> dict[str, str]:
    """Parse what changed, load the yaml if it changed, store both; torchgen's meta values and
    the index's content digests. See Note [The cold build's critical path]; ``same_content``:
    a new index may be a copy of one of the same content (Note [An index of the same content])."""
    jobs = jobs or os.cpu_count() or 1
    intake = _Intake(store, report, progress)
    store.begin()
    work = intake.plan(walk_sources(root, dirs=dirs), generated=False)
    if gen.thread is None:
        work += intake.plan(gen.files, generated=True)
        intake.all_known = True
        if same_content and not intake.known and work:
            copied = _same_content(store, root, report, work, jobs, compile_facts)
            if copied is not None:
                if progress:
                    progress(report.files_total, report.files_total, work[-1][0])
                return {**gen.meta, **copied}
    yaml = _yaml_stamp(store, root)
    compiled = _compile_due(store, root, compile_facts)
    pool = operators = compile_job = None
    global _facts_now, _copy_hits, _limit_now
    _facts_now = fact_cache() if work or gen.thread is not None else None  # before the pool: the workers inherit it
    _limit_now = config.max_file_bytes()
    intake.root = str(root)
    if _facts_now:
        _facts_now.claim()
        _facts_now.close()  # not open across the pool's fork: each worker opens its own
        if _facts_now.path.is_file() and not _facts_now.path.is_symlink():  # Note [A known file copied as a block]
            store.commit()  # ATTACH outside a transaction
            store.attach_facts(_facts_now.path)
            store.begin()
            _copy_hits = True
    done = False
    read_keys = {"yaml": "", "compile": ""}  # the keys of the bytes the rows were made from
    try:
        if jobs > 1 and len(work) >= _SERIAL_BELOW:
            pool = worker_pool(jobs, nice=_YIELD_TO_TORCHGEN if gen.thread is not None else 0)
            if yaml is not None:
                operators = pool.submit(_yaml_rows, str(root))  # the first job: forks the workers
            if compiled:
                compile_job = pool.submit(_compile_rows, str(root))
            work.sort(key=lambda j: -j[2])  # big files first so the pool's tail is short
        _parse(pool, jobs, root, work, intake, gen, report)
        if yaml is not None:
            rows, disp, read_keys["yaml"], made = operators.result() if operators else _yaml_rows(str(root))
            _store_operators(store, yaml, (rows, disp), report)
            if made and _facts_now:
                _facts_now.put_yaml(read_keys["yaml"], rows, disp)  # Note [native_functions.yaml by content]
        else:
            report.operators = len(store.operator_names())
        if compiled:
            rows, stamp, key, made = compile_job.result() if compile_job else _compile_rows(str(root))
            store.replace_compile(rows)
            store.set_meta(compile_inputs=stamp)
            if made and _facts_now:
                _facts_now.put_compile(key, rows)  # Note [Compile facts by content]
            read_keys["compile"] = f"compile:{key}" if key else "" if _compile_inputs(root) else "compile:-"
        store.commit()
        done = True
    except BaseException:
        if gen.thread is not None:
            gen.thread.cancel()
        raise
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if _copy_hits and done:  # a failed build's temporary index goes, attached or not
            store.detach_facts()
        if _facts_now:  # after the workers' exit: the parent's is then the last connection
            if done:  # one transaction: what this build parsed (Note [Facts by content])
                _facts_now.flush(store.path, intake.parsed_entries)
            _facts_now.mark_used()  # a build longer than PRUNE_AFTER keeps its file too
            _facts_now.close()  # the last connection: its WAL is checkpointed and removed
        _facts_now, _copy_hits, _limit_now = _UNSET, False, 0
    intake.finish()
    return {**gen.meta, **_content_meta(intake, compiled, read_keys)}


def _store_order(work: list[tuple[str, str, int, int]], jobs: int) -> list[tuple[str, str, int, int]]:
    """``work`` in the order ``_refresh`` stores it (torchgen's files known at once): biggest first
    when the pool parses, else as walked."""
    return sorted(work, key=lambda j: -j[2]) if jobs > 1 and len(work) >= _SERIAL_BELOW else list(work)


def _content_meta(intake: _Intake, compiled: bool, read_keys: dict[str, str]) -> dict[str, str]:
    """The meta ``content_sizes`` and ``content_set`` of a build into a new index whose files all
    had a fact cache key, else "" for both (Note [An index of the same content]). ``read_keys``: the
    yaml's and the compile inputs' keys of the bytes their rows were made from (_yaml_rows,
    _compile_rows), not of the tree now: an input edited after it was read is not claimed."""
    from atenmap import sameindex

    order = intake.order
    compile_part = read_keys["compile"] if compiled else "no-compile"
    yaml = read_keys["yaml"]
    if intake.known or not order or not yaml or not compile_part:
        return {"content_sizes": "", "content_set": ""}
    version = _index_key()
    return {"content_sizes": sameindex.sizes_key(version, [(r, lang, size) for r, lang, size, _k in order]),
            "content_set": sameindex.content_key(version, yaml, compile_part,
                                                 [(r, lang, key) for r, lang, _s, key in order])}


@functools.lru_cache(maxsize=1)
def _index_key() -> str:
    """The fact cache's version key and the code that stores an index (store/: its SQL, the
    include resolution and the fact cache's block copies): part of an index's content digests (Note [An index of the same content])."""
    import hashlib

    h = hashlib.blake2b(_fact_key().encode(), digest_size=20)
    store = Path(__file__).resolve().parent / "store"
    for name in ("__init__.py", "schema.sql", "indexes.sql", "factcache.py"):  # factcache: the block copies
        h.update(b"\0")
        h.update((store / name).read_bytes())
    return h.hexdigest()


def _compile_inputs(root: Path) -> list[str]:
    """The torch.compile facts' input files of ``root`` (inductor.compile_files)."""
    from atenmap.extract import inductor

    return inductor.compile_files(root)


def _compile_part(root: Path) -> str:
    """What an index's torch.compile facts are made from (Note [An index of the same content]): their
    fact cache key, "-" for a tree without their inputs, "" when an input cannot be read."""
    from atenmap.extract import inductor

    if not inductor.compile_files(root):
        return "compile:-"
    ck = compile_key(root)
    return f"compile:{ck}" if ck else ""


class _NotTheSame(Exception):
    """The copy of an index of the same content failed a check (build.build builds again without)."""


def _same_content(store: Store, root: Path, report: BuildReport, work: list[tuple[str, str, int, int]],
                  jobs: int, compile_facts: bool) -> dict[str, str] | None:
    """The new ``store`` as a copy of a finished index of the same content and the meta values of
    the tree, or None (nothing done) when there is none. _NotTheSame when a copy failed its checks.
    See Note [An index of the same content] in sameindex.py."""
    from atenmap import sameindex

    cache = fact_cache()
    if cache is None:
        return None
    order = _store_order(work, jobs)
    version = _index_key()
    sizes = sameindex.sizes_key(version, [(rel, lang, size) for rel, lang, size, _m in order])
    found = sameindex.candidates(cache_dir() / "indexes", store.path.parent / INDEX_NAME, sizes, SCHEMA_VERSION)
    if not found:
        return None
    compile_part, stamp = "no-compile", ""
    st = (root / YAML_REL).stat()  # the stamps before the keys: an edit between is seen as one
    if compile_facts:
        from atenmap.extract import inductor

        stamp = inductor.input_stamp(root, inductor.compile_files(root))
        compile_part = _compile_part(root)
        if not compile_part:
            return None
    yaml = yaml_key(root)
    limit = config.max_file_bytes()
    todo = [(str(root), rel, lang, limit) for rel, lang, _s, _m in order]
    if jobs > 1 and len(todo) >= _SERIAL_BELOW:
        with worker_pool(jobs) as pool:
            keys = list(pool.map(_key_one, todo, chunksize=16))
    else:
        keys = [_key_one(job) for job in todo]
    want = sameindex.content_key(version, yaml, compile_part,
                                 [(rel, lang, key) for (rel, lang, _s, _m), key in zip(order, keys)])
    source = next((path for path, meta in found if meta["content_set"] == want), None)
    if source is None or not yaml:
        return None
    store.commit()
    if not store.load_from(source):
        raise _NotTheSame(f"{source} could not be read whole")
    statuses = store.copy_holds(want, [rel for rel, *_ in order])
    if statuses is None:
        raise _NotTheSame(f"{source} is not the index its meta says")
    store.set_meta(complete="0")
    store.set_file_stats((rel, size, mtime) for rel, _lang, size, mtime in order)
    report.copied_from = str(source)
    report.parsed = report.files_total = len(statuses)
    for status in statuses:
        if status.startswith("skipped:"):
            why = status.split(":", 1)[1].split(" ")[0]
            report.skipped[why] = report.skipped.get(why, 0) + 1
        elif status == "errors":
            report.with_errors += 1
    report.facts = dict(sorted(json.loads(store.meta()["fact_counts"]).items()))
    report.operators = len(store.operator_names())
    cache.mark_used()
    values = {"yaml_stat": f"{st.st_size}:{st.st_mtime_ns}", "content_sizes": sizes, "content_set": want}
    if compile_facts:
        values["compile_inputs"] = stamp
    return values


def _parse(pool, jobs: int, root: Path, work: list[tuple[str, str, int, int]], intake: _Intake,
           gen: _Generated, report: BuildReport) -> None:
    """Parse and store ``work``, then torchgen's files once its thread (started here) is done;
    ``gen`` gets the thread's files and meta."""
    root_s = str(root)
    if pool is not None:
        _parse_in_pool(pool, jobs, root_s, work, intake, gen, report)
        return
    if gen.thread is not None:
        gen.thread.start()
    for rel, lang, _s, _m in work:
        intake.take(_parse_one((root_s, rel, lang)))
        if gen.thread is not None:
            gen.thread.say()
    if gen.thread is None:
        return
    todo = [job for chunk in _generated_chunks(gen, intake, report, root_s) for job in chunk]
    if jobs > 1 and len(todo) >= _SERIAL_BELOW:  # the thread is done: forking is safe now
        with worker_pool(jobs) as late_pool:
            for result in late_pool.map(_parse_one, todo, chunksize=_CHUNK):
                intake.take(result)
    else:
        for job in todo:
            intake.take(_parse_one(job))


def _parse_in_pool(pool, jobs: int, root_s: str, work: list[tuple[str, str, int, int]], intake: _Intake,
                   gen: _Generated, report: BuildReport) -> None:
    """``_parse`` with a pool: ``work`` in chunks, a few more submitted than there are workers;
    torchgen's chunks, once ready, go ahead of what is left but are stored after all of ``work``."""
    from collections import deque
    from concurrent.futures import wait

    pending = deque([(root_s, rel, lang) for rel, lang, _s, _m in work[i:i + _CHUNK]]
                    for i in range(0, len(work), _CHUNK))
    order: deque = deque()  # futures of ``work``'s chunks, in the order they are stored
    later: list = []  # futures of torchgen's chunks
    submitted, finished = [0], []  # chunks submitted; one item per chunk done (the pool's thread appends)
    while pending or order:
        if gen.thread is not None and gen.thread.done():
            later = [pool.submit(_parse_some, c) for c in _generated_chunks(gen, intake, report, root_s)]
        while pending and submitted[0] - len(finished) < 2 * jobs + 2:  # not a scan of every future held
            f = pool.submit(_parse_some, pending.popleft())
            submitted[0] += 1
            f.add_done_callback(finished.append)
            order.append(f)
        if gen.thread is not None:
            gen.thread.start()  # after the first submit, which forked the workers
        if not order[0].done():
            wait([order[0]], timeout=0.1 if gen.thread is not None else None)
            continue
        for result in order.popleft().result():
            intake.take(result)
    if gen.thread is not None:
        gen.thread.start()
        later = [pool.submit(_parse_some, c) for c in _generated_chunks(gen, intake, report, root_s)]
    for f in later:
        for result in f.result():
            intake.take(result)


def _generated_chunks(gen: _Generated, intake: _Intake, report: BuildReport, root_s: str) -> list[list[tuple]]:
    """Once torchgen's thread is done: its files planned (``gen`` updated, the thread dropped), as
    pool jobs, big files first."""
    done = gen.thread.wait(report)
    gen.files, gen.meta, gen.thread = done.files, done.meta, None
    todo = intake.plan(gen.files, generated=True)
    intake.all_known = True
    todo.sort(key=lambda j: -j[2])
    return [[(root_s, rel, lang) for rel, lang, _s, _m in todo[i:i + _CHUNK]] for i in range(0, len(todo), _CHUNK)]


def _parse_some(jobs: list[tuple[str, str, str]]) -> list[tuple[str, str, list[tuple], tuple | None]]:
    """Worker: ``_parse_one`` of a few files (one pool job, as ``map``'s ``chunksize``)."""
    return [_parse_one(job) for job in jobs]


def _yaml_stamp(store: Store, root: Path) -> str | None:
    """native_functions.yaml's ``size:mtime`` when it must be loaded (it changed), else None."""
    st = (root / YAML_REL).stat()
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    return None if store.meta().get("yaml_stat") == stamp else stamp


def _compile_due(store: Store, root: Path, wanted: bool) -> bool:
    """Whether the tree's torch.compile facts must be (re)read (extract/inductor.py); stale ones not
    ``wanted`` are dropped here. See Note [torch.compile facts when asked]."""
    from atenmap.extract.inductor_stamp import inputs_unchanged

    stamp = store.meta().get("compile_inputs")
    if stamp is not None and inputs_unchanged(root, stamp):
        return False
    if not wanted and stamp is not None:
        store.drop_compile()
    return wanted


def _compile_made(final: Path, source: SourceInfo) -> bool:
    """Whether the index at ``final`` holds the tree's torch.compile facts."""
    from atenmap.indexstate import compile_facts_made
    from atenmap.store import read_meta

    return compile_facts_made(read_meta(final) or {}, source.origin)


def _compile_rows(root: str) -> tuple[list[tuple], str, str, bool]:
    """Worker (or parent): the CompileFact rows of the tree's Python, the stamp of what was read,
    the fact cache's key of the inputs they were made from ("" when the cache is off, the tree has
    none, or an input changed while it was read: the key is taken before and after) and whether
    they were made here (to be stored). Rows made from the same inputs before come from the fact
    cache (Note [Compile facts by content]); the stamp is taken before the key."""
    from atenmap.extract import inductor

    cache = fact_cache() if _facts_now is _UNSET else _facts_now
    if cache:
        stamp = inductor.input_stamp(Path(root), inductor.compile_files(Path(root)))
        key = compile_key(Path(root))
        rows = cache.compile_rows(key) if key else None
        if rows is not None:
            return rows, stamp, key, False
    else:
        key = ""
    facts, stamp = inductor.extract_with_inputs(Path(root))
    if key and compile_key(Path(root)) != key:
        key = ""
    return [f.to_row() for f in facts], stamp, key, bool(key)


# Note [Compile facts by content]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The torch.compile facts (extract/inductor.py) are a function of the files compile_files lists
# (a fixed set of folders' *.py, in a fixed order: what extract_with_inputs reads, its stamp's
# ``files``), their bytes, and the code that reads them (inductor.py, model_answers.py's rows, the
# Python: the fact cache's file is per Python version). Reading them is ~1.3 s of CPU on 2.6.0,
# more than the rest of a rebuild whose files are all in the fact cache (Note [A known file copied
# as a block]), so they are kept there too, under blake2b of all that; hashing the inputs costs
# ~20 ms. The stamp is always made from the tree (its stat), as after a read.
def _code_hash(*modules: str):
    """A blake2b (20 bytes) fed with the bytes of atenmap's ``modules`` (paths under the package):
    the code that makes rows kept in the fact cache."""
    import hashlib

    h = hashlib.blake2b(digest_size=20)
    here = Path(__file__).resolve().parent
    for rel in modules:
        h.update((here / rel).read_bytes())
    return h


def compile_key(root: Path) -> str:
    """The fact cache's key of ``root``'s torch.compile facts ("" for a tree without them)."""
    from atenmap.extract import inductor

    rels = inductor.compile_files(root)
    if not rels:
        return ""
    h = _code_hash("extract/inductor.py", "model_answers.py")
    for rel in rels:
        try:
            data = (root / rel).read_bytes()
        except OSError:
            return ""  # extract_with_inputs decides what such a file gives
        h.update(f"\0{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _operator_rows(root: str) -> tuple[list[tuple], list[tuple]]:
    """native_functions.yaml as rows of the operators and dispatch tables, from the fact cache when
    the same bytes were read before (Note [native_functions.yaml by content])."""
    rows, disp, _key, _made = _yaml_rows(root)
    return rows, disp


# Note [native_functions.yaml by content]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Reading native_functions.yaml into rows costs 0.24-0.7 s of CPU, on the path of a build that
# must load it and of an exact-first answer. The rows are a function of the file's bytes, the path
# the operators' locations give it (sameindex.yaml_part), the code that reads it (native_yaml.py,
# model.py, kinds.py; build.py and the Python are in the fact cache's version key) and PyYAML's
# version, so they are kept in the fact cache under blake2b of all that, as the torch.compile facts
# are. A build writes them with its parse (the parent, after its index's commit); a query's reader
# only reads them.
def yaml_key(root: Path) -> str:
    """The fact cache's key of ``root``'s native_functions.yaml rows ("" when it cannot be read)."""
    import yaml

    from atenmap import sameindex

    part = sameindex.yaml_part(root)
    if not part:
        return ""
    h = _code_hash("extract/native_yaml.py", "model.py", "kinds.py")
    h.update(f"\0native_functions\0{yaml.__version__}\0{part}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _yaml_rows(root: str) -> tuple[list[tuple], list[tuple], str, bool]:
    """Worker (or parent): ``_operator_rows``, the fact cache key of the bytes they were made from
    ("" when the cache is off, or the file changed while it was read: the key is taken before
    and after) and whether they were read here (to be stored under that key)."""
    cache = fact_cache() if _facts_now is _UNSET else _facts_now
    key = yaml_key(Path(root)) if cache else ""
    if key:
        got = cache.yaml_rows(key)
        if got is not None:
            return (*got, key, False)
    rows, disp = _read_operator_rows(root)
    if key and yaml_key(Path(root)) != key:
        key = ""
    return rows, disp, key, bool(key)


def _read_operator_rows(root: str) -> tuple[list[tuple], list[tuple]]:
    """native_functions.yaml read into rows of the operators and dispatch tables."""
    from atenmap.extract.native_yaml import load_operators

    rows, disp = [], []
    for op in load_operators(Path(root) / YAML_REL, Path(root)):
        rows.append((str(op.name), op.name.name, op.loc.line, op.kind,
                     str(op.structured_delegate) if op.structured_delegate else None, json.dumps(operator_to_dict(op))))
        for d in op.dispatch:
            disp.append((str(op.name), d.key, d.kernel, int(d.structured), int(d.explicit)))
    return rows, disp


def _store_operators(store: Store, stamp: str, loaded: tuple[list[tuple], list[tuple]], report: BuildReport) -> None:
    rows, disp = loaded
    store.replace_operators(rows, disp)
    store.set_meta(yaml_stat=stamp)
    report.operators = len(rows)


def operator_to_dict(op: Operator) -> dict:
    return {
        "name": str(op.name),
        "schema": op.schema,
        "loc": [op.loc.file, op.loc.line],
        "dispatch": [[d.key, d.kernel, d.structured, d.explicit] for d in op.dispatch],
        "has_dispatch_key": op.has_dispatch_key,
        "variants": list(op.variants),
        "structured": op.structured,
        "structured_delegate": str(op.structured_delegate) if op.structured_delegate else None,
        "structured_inherits": op.structured_inherits,
        "ufunc_inner_loop": [[u.key, u.name, list(u.types)] for u in op.ufunc_inner_loop],
        "autogen": list(op.autogen),
        "tags": list(op.tags),
        "python_module": op.python_module,
        "manual_cpp_binding": op.manual_cpp_binding,
        "manual_kernel_registration": op.manual_kernel_registration,
        "other": [[k, v] for k, v in op.other],
    }
