"""Run the checkout's own torchgen in a subprocess and cache what it writes.

PyTorch generates a good part of the dispatch chain at build time (``RegisterCUDA.cpp``,
``UfuncCUDA_add.cu``, ``python_torch_functions_*.cpp``). atenmap never builds PyTorch; it runs the
torchgen that lives in the user's source tree, so the output matches that exact version, and keeps
the result under ``cache_dir/codegen-<input_hash>/``. See Note [What torchgen writes].

Failures of torchgen itself (not a PyTorch tree, a missing Python module, a non-zero exit, a
timeout) are never raised: they come back as ``out_dir=None`` and one warning line. Only misuse
(``root`` is not a directory, an unusable ``cache_dir``) raises :class:`AtenmapError`.

Layout of one cache entry::

    codegen-<input_hash>/
      aten/     torchgen.gen --install_dir              -> CodegenResult.out_dir
      python/   tools/autograd python bindings          -> CodegenResult.python_dir
      autograd/ tools/autograd gen_autograd (libtorch)  -> CodegenResult.autograd_dir
      aoti/     AOTInductor C shims (2.x only; written there so the checkout stays untouched)
      DONE      json: hash, root, timings, file counts, warnings -- written last
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atenmap import config, files
from atenmap.locks import exclusive
from atenmap.errors import AtenmapError

# The wall-clock limit for each torchgen subprocess (ATen, then python bindings) is
# config.codegen_timeout() (ATENMAP_CODEGEN_TIMEOUT, default 120 s); see Note [Running a tree's code].

# Bump when the commands, flags or the cache layout below change: the recipe is part of the hash,
# so an older atenmap's cache entries are not mistaken for this one's.
_RECIPE = "atenmap-codegen/3"  # 2: also gen_autograd (autograd/); 3: --generate sources

_NATIVE_YAML = "aten/src/ATen/native/native_functions.yaml"
_TAGS_YAML = "aten/src/ATen/native/tags.yaml"
_GENERATE_CODE = "tools/setup_helpers/generate_code.py"

# The files, and (folder, suffixes or None for every file), whose contents decide what torchgen writes.
_INPUT_FILES = (_NATIVE_YAML, _TAGS_YAML, _GENERATE_CODE)
_INPUT_TREES: tuple[tuple[str, frozenset[str] | None], ...] = (
    ("torchgen", frozenset({".py", ".yaml"})),
    ("aten/src/ATen/templates", None),
    ("tools/autograd", frozenset({".py", ".yaml"})),
    ("tools/autograd/templates", None),
)

_LOCK_NAME = ".codegen.lock"
_CANCEL_POLL_S = 0.1
_DONE_NAME = "DONE"
_DONE_FORMAT = 1

# Note [What torchgen writes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``python -m torchgen.gen --source-path <root>/aten/src/ATen --install_dir aten/`` is the command
# CMake runs (cmake/Codegen.cmake), minus ``--per-operator-headers``. Checked on 1.13.1 and 2.6.0,
# it writes the same set of names into aten/ (2.6 adds RegisterNestedTensorXPU.cpp,
# RegisterSparseXPU.cpp, RegisterSparseCsrMeta.cpp):
#   Register<Key>.cpp        one per backend, never sharded: RegisterCPU.cpp, RegisterCUDA.cpp,
#                            RegisterMeta.cpp, RegisterCompositeImplicitAutograd.cpp, ... with the
#                            ``wrapper_*`` functions and ``m.impl("add.out", ...)``. The wrappers are
#                            ``wrapper_CUDA_add_out_out`` in 2.x and ``wrapper_add_out_out`` (same name
#                            in every Register<Key>.cpp, inside an anonymous namespace) in 1.13.
#   RegisterFunctionalization_{0..3}.cpp, RegisterSchema.cpp, RegisterBackendSelect.cpp
#   Ufunc{CPU,CPUKernel,CUDA}_<op>.cpp/.cu   the ``ufunc_inner_loop`` operators (only ``add`` in
#                            both versions): TORCH_IMPL_FUNC(ufunc_add_CPU), REGISTER_DISPATCH(add_stub,
#                            &add_kernel), CUDAFunctor_add.
#   Operators.h, Operators_{0..4}.cpp, Functions.h/.cpp, NativeFunctions.h, NativeMetaFunctions.h,
#   <Key>Functions{,_inl}.h, RedispatchFunctions.h, MethodOperators.h, RegistrationDeclarations.h,
#   Declarations.yaml, core/TensorBody.h, core/TensorMethods.cpp, core/ATenOpList.cpp, ...
#   *Everything.cpp          (OperatorsEverything.cpp, RegisterFunctionalizationEverything.cpp, and
#                            python_torch_functionsEverything.cpp among the bindings) repeat the
#                            numbered shards in one file, for IDEs: index one or the other, not both.
# Without ``--per-operator-headers`` every operator is declared in the monolithic headers above and
# aten/ops/ stays empty; with it, torchgen would add ~10k ATen/ops/<op>*.h files that say nothing
# the monolithic headers do not. atenmap asks for the sources alone: Note [Sources, not headers].
#
# 2.x also writes AOTInductor C shims and, unless told otherwise, compares them with the checked-in
# headers under torch/csrc/ -- an AssertionError when a patched tree differs. ``--aoti-install-dir
# aoti/`` (passed only where gen.py knows the flag) sends them to our folder, where torchgen finds no
# header to compare and just prints "not found".
#
# The python bindings come from ``python -m tools.setup_helpers.generate_code --subset pybindings``
# (what CMake's generate-torch-sources runs; same flags in 1.13 and 2.6). It calls
# tools/autograd/gen_autograd.py's gen_autograd_python(), which reads derivatives.yaml,
# deprecated.yaml and tools/autograd/templates, and writes <gen-dir>/torch/csrc/autograd/generated/:
# python_torch_functions_{0,1,2}.cpp (torch.add -> THPVariable_add), python_variable_methods.cpp
# (Tensor.add), python_nn/fft/linalg/special/sparse/nested_functions.cpp,
# python_functions_{0..4}.cpp, python_return_types.cpp, python_enum_tag.cpp. That folder becomes
# python/.
#
# Both subprocesses run with cwd set to a scratch folder inside our temporary output and every path
# absolute, and with PYTHONDONTWRITEBYTECODE=1: whatever default path torchgen might grow in a later
# version lands in our folder, and the user's checkout is never written to.

# Note [Running a tree's code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchgen is Python code from the tree atenmap reads: running it runs whatever that tree says.
# Whether it runs is decided above this module (build.codegen_decision: ATENMAP_CODEGEN /
# config.toml / --codegen; by default it runs: Note [Whose code runs] there). Here: the first
# time a tree's code runs, one line on stderr says so (``notice``; trees already told of are
# listed in ``<cache>/codegen/.noticed``); each run is a new process group (session), killed as a
# whole -- torchgen and anything it started -- after ``timeout_s`` or when atenmap is interrupted.
# A group of its own also means that a SIGKILL of atenmap's group does not reach it, so the
# bootstrap asks Linux for SIGKILL when its parent dies (PR_SET_PDEATHSIG, as the parse workers
# do: Note [Locks a dead owner cannot hold]) and exits if the parent is already gone: no
# generator of a killed build keeps writing into its dead temporary folder.

# Note [The checkout's torchgen, not an installed one]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An installed torch wheel ships its own top-level ``torchgen`` package, of its own version. The
# subprocess gets PYTHONPATH=<root> first, and a small bootstrap (below) puts <root> at sys.path[0],
# imports torchgen and refuses to go on if it came from anywhere else (say, a sitecustomize that
# imported it first), before running the module as ``__main__``.
_BOOTSTRAP = """\
import os, runpy, sys
if sys.platform.startswith("linux"):
    try:
        import ctypes, signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass
if os.getppid() != int(os.environ.get("ATENMAP_CODEGEN_PARENT", os.getppid())):
    os._exit(1)
root, module = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
import torchgen
where = os.path.dirname(os.path.realpath(torchgen.__file__))
if os.path.dirname(where) != os.path.realpath(root):
    sys.exit(f"torchgen was imported from {where}, not from the checkout {root}")
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""

# Note [Stopping torchgen from another thread]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# build.py runs ``run_codegen`` in a thread beside the parse (Note [The cold build's critical
# path]); Ctrl-C or an error reaches only the main thread. It sets ``cancel``: the thread waiting
# on the generators (_Runs.result) looks at it every _CANCEL_POLL_S, kills their groups and raises
# :class:`CodegenCancelled`, and nothing is cached. PR_SET_PDEATHSIG (Note [Running a tree's
# code]) fires when the *thread* that started torchgen ends; that thread waits for torchgen, so it
# only ends first when the whole process dies.


class CodegenCancelled(AtenmapError):
    """``run_codegen``'s ``cancel`` was set: torchgen was killed and nothing was cached."""


@dataclass(frozen=True)
class CodegenResult:
    """What one :func:`run_codegen` call produced or found in the cache."""

    out_dir: Path | None  # generated ATen sources (Register*.cpp, Ufunc*, ...); None if torchgen failed
    python_dir: Path | None  # python bindings (python_torch_functions_*.cpp, ...); None if not made
    seconds: float  # time spent in this call; 0.0 when reused from the cache
    reused: bool
    warnings: tuple[str, ...]  # one line each, e.g. "torchgen failed: ModuleNotFoundError: ..."
    input_hash: str  # sha256 over recipe, python_bindings flag and codegen_inputs() (paths + contents)
    autograd_dir: Path | None = None  # tools/autograd's gen_autograd: Functions.cpp, VariableType_*.cpp, ...


def codegen_inputs(root: Path) -> list[Path]:
    """The files of ``root`` whose relative paths and contents make up the cache key, sorted.

    Files that do not exist in this version (``tags.yaml`` before 1.12, ``tools/autograd`` in a
    stripped tree) are simply absent from the list.
    """
    root = Path(root)
    found = {root / rel for rel in _INPUT_FILES if (root / rel).is_file()}
    for folder, suffixes in _INPUT_TREES:
        base = root / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if suffixes is None or path.suffix in suffixes:
                found.add(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def input_signature(root: Path) -> tuple[dict[str, list[int] | None], dict[str, int]]:
    """What ``input_hash`` reads, by stat alone: ``({input file: [size, mtime_ns] or None when
    absent}, {folder of an input tree: mtime_ns})``, paths relative to ``root``. When neither
    changed, neither did the hash (see Note [Cheap freshness] in freshness.py)."""
    root_s = str(root)
    files: dict[str, list[int] | None] = {}
    dirs: dict[str, int] = {}
    for rel in _INPUT_FILES:
        try:
            st = os.stat(os.path.join(root_s, rel))
            files[rel] = [st.st_size, st.st_mtime_ns]
        except OSError:
            files[rel] = None
    for folder, suffixes in _INPUT_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root_s, folder)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel_dir = os.path.relpath(dirpath, root_s)
            try:
                dirs[rel_dir] = os.stat(dirpath).st_mtime_ns
            except OSError:
                continue
            for fn in filenames:
                if suffixes is None or os.path.splitext(fn)[1] in suffixes:
                    try:
                        st = os.stat(os.path.join(dirpath, fn))
                    except OSError:
                        continue
                    files[f"{rel_dir}/{fn}"] = [st.st_size, st.st_mtime_ns]
    return files, dirs


def input_hash(root: Path, *, python_bindings: bool = True) -> str:
    """The cache key of ``root``: sha256 (hex) over the recipe and ``codegen_inputs(root)``."""
    root = Path(root)
    digest = hashlib.sha256(f"{_RECIPE}\npython_bindings={int(python_bindings)}\n".encode())
    for path in codegen_inputs(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        # a FIFO or a huge file among torchgen's inputs: an OSError (files.NotRegular, TooLarge)
        digest.update(hashlib.sha256(files.read_bytes(path)).digest())
    return digest.hexdigest()


def run_codegen(
    root: Path,
    cache_dir: Path,
    *,
    python: str = sys.executable,
    progress: Callable[[str], None] | None = None,
    python_bindings: bool = True,
    timeout_s: float | None = None,
    notice: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> CodegenResult:
    """Generate ``root``'s ATen sources (and python bindings) into ``cache_dir``, or reuse them.

    ``python`` runs torchgen; it needs pyyaml (and typing_extensions for 2.x). ``progress`` gets
    short status lines for a spinner. Safe to call from several processes at once: one generates,
    the others wait for it and reuse its output. A python-bindings failure keeps the ATen output
    and is cached with it (delete the ``codegen-*`` folder to retry). ``timeout_s``: per torchgen
    process (default config.codegen_timeout()); ``notice`` gets the one line said the first time
    this tree's code runs (default: stderr). See Note [Running a tree's code]. ``cancel``: when
    set (from another thread), torchgen is killed and :class:`CodegenCancelled` raised (Note
    [Stopping torchgen from another thread]).
    """
    root = Path(root)
    timeout_s = config.codegen_timeout() if timeout_s is None else timeout_s
    if not root.is_dir():
        raise AtenmapError(f"codegen: source root {root} is not a directory")
    root = root.resolve()
    cache_dir = Path(cache_dir)
    report = progress or (lambda _message: None)
    start = time.monotonic()

    key = input_hash(root, python_bindings=python_bindings)
    problem = _not_runnable(root)
    if problem:
        return CodegenResult(None, None, time.monotonic() - start, False, (problem,), key)

    final = cache_dir / f"codegen-{key}"
    cached = _load(final, key)
    if cached is not None:
        return cached
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AtenmapError(f"codegen: cannot create cache folder {cache_dir}: {exc.strerror}") from exc

    with exclusive(cache_dir / _LOCK_NAME, report, "waiting for another atenmap codegen run…"):
        cached = _load(final, key)  # another process may have finished it while we waited
        if cached is not None:
            return cached
        _remove_dead_temporaries(cache_dir)
        _notice_once(root, cache_dir, notice)
        return _generate(root, cache_dir, final, key, python, report, python_bindings, timeout_s, start, cancel)


def is_cached(root: Path, cache_dir: Path, *, python_bindings: bool = True) -> bool:
    """True when ``root``'s torchgen output is in the cache: using it runs nothing."""
    root = Path(root).resolve()
    key = input_hash(root, python_bindings=python_bindings)
    return _load(Path(cache_dir) / f"codegen-{key}", key) is not None


def _notice_once(root: Path, cache_dir: Path, notice: Callable[[str], None] | None) -> None:
    """Say, the first time, that code from ``root`` is about to run. See Note [Running a tree's code]."""
    record = cache_dir / ".noticed"
    try:
        told = set(record.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeError):
        told = set()
    if str(root) in told:
        return
    line = f"running {root}/torchgen (code from that tree); ATENMAP_CODEGEN=never turns this off"
    if notice is not None:
        notice(line)
    else:
        print(f"atenmap: {line}", file=sys.stderr, flush=True)
    try:
        with open(record, "a", encoding="utf-8") as f:
            f.write(f"{root}\n")
    except OSError:
        pass  # told again next time: harmless


def _not_runnable(root: Path) -> str | None:
    """A warning line when ``root`` cannot hold a torchgen run, else None."""
    if not (root / _NATIVE_YAML).is_file():
        return f"torchgen skipped: {root} is not a PyTorch source tree (no {_NATIVE_YAML})"
    if not (root / "torchgen" / "gen.py").is_file():
        return f"torchgen skipped: {root} has no torchgen/gen.py (PyTorch before 1.12 kept it in tools/codegen)"
    return None


def _generate(
    root: Path,
    cache_dir: Path,
    final: Path,
    key: str,
    python: str,
    report: Callable[[str], None],
    python_bindings: bool,
    timeout_s: float,
    start: float,
    cancel: threading.Event | None = None,
) -> CodegenResult:
    """Run torchgen into a temporary sibling of ``final``; rename it into place when complete."""
    tmp = Path(tempfile.mkdtemp(prefix=f".codegen-{key[:16]}.tmp-", dir=cache_dir))
    try:
        scratch = tmp / "scratch"
        scratch.mkdir()
        aten = tmp / "aten"
        failure, times, python_dir, autograd_dir, warnings = _run_generators(
            root, python, tmp, scratch, report, python_bindings, timeout_s, cancel)
        if not failure and not aten.is_dir():
            failure = "exited 0 but wrote nothing"
        if failure:
            return CodegenResult(None, None, time.monotonic() - start, False, (f"torchgen failed: {failure}",), key)
        aten_s, python_s, autograd_s = times
        shutil.rmtree(scratch)

        total_s = time.monotonic() - start
        done = {
            "format": _DONE_FORMAT,
            "input_hash": key,
            "root": str(root),
            "python_bindings": python_bindings,
            "python": python,
            "seconds": {"aten": round(aten_s, 3), "python": round(python_s, 3), "autograd": round(autograd_s, 3),
                        "total": round(total_s, 3)},
            "files": {"aten": _count_files(aten), "python": _count_files(python_dir) if python_dir else 0,
                      "autograd": _count_files(autograd_dir) if autograd_dir else 0},
            "python_dir": "python" if python_dir else None,
            "autograd_dir": "autograd" if autograd_dir else None,
            "warnings": warnings,
            "created": time.time(),
        }
        (tmp / _DONE_NAME).write_text(json.dumps(done, indent=2) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp made it 0700
        if final.is_symlink():  # not ours either: the link goes, never what it points at
            final.unlink()
        elif final.exists():  # a folder without a valid DONE: not ours to trust
            shutil.rmtree(final)
        tmp.rename(final)
        _remove_stale(cache_dir, final, root, python_bindings)
        return CodegenResult(
            out_dir=final / "aten",
            python_dir=final / "python" if python_dir else None,
            seconds=time.monotonic() - start,
            reused=False,
            warnings=tuple(warnings),
            input_hash=key,
            autograd_dir=final / "autograd" if autograd_dir else None,
        )
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# Note [What gen_autograd writes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``python -m tools.setup_helpers.generate_code --subset libtorch`` (what CMake's
# generate-torch-sources runs for libtorch; same flags as pybindings in 1.13 and 2.6) calls
# tools/autograd/gen_autograd.py's gen_autograd(native_functions, tags, out, autograd_dir, selector),
# which loads derivatives.yaml and writes, into <gen-dir>/torch/csrc/autograd/generated/:
# Functions.h/.cpp (one ``struct MulBackward0 : public TraceableFunction`` per derivatives.yaml
# entry, its saved variables, ``MulBackward0::apply`` with the formulas inlined),
# VariableType_{0..4}.cpp (the Autograd-key kernels: ``VariableType::mul_Tensor`` makes the node,
# saves its inputs and redispatches, registered by ``m.impl("mul.Tensor", ...)`` in
# ``TORCH_LIBRARY_IMPL(aten, Autograd, m)``), ADInplaceOrViewType_*.cpp, TraceType_*.cpp,
# ViewFuncs.*, variable_factories.h. About 5 s on 2.6.0; that folder becomes autograd/.


def _generate_code(root: Path, python: str, tmp: Path, subset: str, name: str, report: Callable[[str], None],
                   warnings: list[str], timeout_s: float, procs: "_Runs | None" = None) -> tuple[Path | None, float]:
    """One ``tools.setup_helpers.generate_code --subset SUBSET`` run into ``tmp/name``; a failure
    is a warning (the rest of the output stays)."""
    what = {"pybindings": "python bindings", "libtorch": "autograd"}[subset]
    if not _has_generate_code(root):
        warnings.append(f"{what} skipped: {root} has no tools/autograd or {_GENERATE_CODE}")
        return None, 0.0
    report(f"running torchgen ({what})…")
    began = time.monotonic()
    gen_dir = tmp / "scratch" / name
    failure = _run_module(python, root, "tools.setup_helpers.generate_code",
                          _python_args(root, gen_dir, subset), _scratch(tmp / "scratch", f"cwd-{name}"), timeout_s, procs)
    seconds = time.monotonic() - began
    generated = gen_dir / "torch" / "csrc" / "autograd" / "generated"
    if failure:
        warnings.append(f"torchgen ({what}) failed: {failure}")
    elif not generated.is_dir():
        warnings.append(f"torchgen ({what}) wrote nothing to {generated.relative_to(gen_dir)}")
    else:
        generated.rename(tmp / name)
        return tmp / name, seconds
    return None, seconds


# Note [Sources, not headers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What the index reads from torchgen.gen (Note [Which generated files are indexed] in build.py)
# is all in its "sources" output: Register<Key>.cpp, Ufunc*, CompositeViewCopyKernels.cpp. The
# headers (NativeFunctions.h, Functions.h, Operators.h, <Key>Functions*.h, ...) and
# Declarations.yaml are declarations the chain never needs, and writing them is most of
# torchgen's time. ``--generate sources`` (both 1.13 and 2.6 know the flag) drops them:
# measured on 2 cores, 2.6.0 took 6.8 s of CPU instead of 20.4 s and 1.13.1 4.2 s instead of
# 10.6 s, and the 27 (2.6.0) and 24 (1.13.1) files that are indexed came out byte-identical.
# A tree whose gen.py lacks the flag gets the full run.

# Note [The generators run side by side]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchgen.gen (ATen), generate_code --subset pybindings and --subset libtorch read the same yaml
# files and write into their own folders: none needs another's output. Run one after the other
# they took 12.1 + 3.0 + 3.2 s on 2.6.0 (2 cores); started together the first build waits for
# the longest, ATen's. Each runs in a scratch folder of its own (a default path one of them grows
# cannot meet another's), in a thread that only waits on its subprocess. The process groups are
# kept in one list: when ATen fails the others are killed (their output would be thrown away),
# and so are all three when the build is interrupted (Ctrl-C reaches only the main thread).
# Warnings keep the order of the serial runs: bindings, then autograd.
class _Runs:
    """The generator threads of one torchgen run and their subprocesses."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._started: list[subprocess.Popen] = []
        self._killed = False
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="atenmap-torchgen")

    def start(self, fn):
        return self._pool.submit(fn)

    def append(self, proc: subprocess.Popen) -> None:
        """Called by ``_run_module`` with each process it starts."""
        with self._lock:
            self._started.append(proc)
            killed = self._killed
        if killed:  # started after kill(): it would only be waited for
            _signal_group(proc)

    def result(self, future, cancel: threading.Event | None):
        """``future.result()``; with ``cancel`` set meanwhile, every generator is killed and
        CodegenCancelled raised (Note [Stopping torchgen from another thread])."""
        from concurrent.futures import wait

        while True:
            done, _ = wait([future], timeout=_CANCEL_POLL_S if cancel is not None else None)
            if cancel is not None and cancel.is_set():
                self.kill()
                raise CodegenCancelled("torchgen cancelled")
            if done:
                return future.result()

    def kill(self) -> None:
        with self._lock:
            self._killed = True
            procs = list(self._started)
        for proc in procs:  # the thread that waits on each one reaps it
            if proc.poll() is None:
                _signal_group(proc)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _run_generators(root: Path, python: str, tmp: Path, scratch: Path, report: Callable[[str], None],
                    python_bindings: bool, timeout_s: float, cancel: threading.Event | None = None):
    """The three generators side by side (Note [The generators run side by side]): ``(ATen's
    failure or None, (aten_s, python_s, autograd_s), python_dir, autograd_dir, warnings)``."""
    runs = _Runs()
    py_warn: list[str] = []
    ag_warn: list[str] = []
    py_run = ag_run = None
    quiet = lambda _line: None  # noqa: E731 -- the status lines come from this thread, in order
    try:
        report("running torchgen (ATen)…")
        aten_run = runs.start(lambda: _timed(_run_module, python, root, "torchgen.gen", _aten_args(root, tmp),
                                             _scratch(scratch, "aten"), timeout_s, runs))
        if python_bindings:
            runnable = _has_generate_code(root)  # else _generate_code's warning says why
            if runnable:
                report("running torchgen (python bindings)…")
            py_run = runs.start(lambda: _generate_code(root, python, tmp, "pybindings", "python", quiet,
                                                       py_warn, timeout_s, runs))
            # See Note [What gen_autograd writes]
            if (root / _GENERATE_CODE).is_file():  # else the one "skipped" warning above says why
                if runnable:
                    report("running torchgen (autograd)…")
                ag_run = runs.start(lambda: _generate_code(root, python, tmp, "libtorch", "autograd", quiet,
                                                           ag_warn, timeout_s, runs))
        failure, aten_s = runs.result(aten_run, cancel)
        if failure or not (tmp / "aten").is_dir():
            runs.kill()  # their output would be thrown away
            return failure, (aten_s, 0.0, 0.0), None, None, []
        python_dir, python_s = runs.result(py_run, cancel) if py_run else (None, 0.0)
        autograd_dir, autograd_s = runs.result(ag_run, cancel) if ag_run else (None, 0.0)
    except BaseException:
        runs.kill()
        raise
    finally:
        runs.close()
    return None, (aten_s, python_s, autograd_s), python_dir, autograd_dir, py_warn + ag_warn


def _timed(fn, *args):
    began = time.monotonic()
    return fn(*args), time.monotonic() - began


def _scratch(scratch: Path, name: str) -> Path:
    d = scratch / name
    d.mkdir(exist_ok=True)
    return d


def _has_generate_code(root: Path) -> bool:
    return (root / "tools" / "autograd").is_dir() and (root / _GENERATE_CODE).is_file()


def _aten_args(root: Path, out: Path) -> list[str]:
    """torchgen.gen's arguments for this version. See Note [What torchgen writes]."""
    args = ["--source-path", str(root / "aten/src/ATen"), "--install_dir", str(out / "aten")]
    gen_py = files.read_text(root / "torchgen" / "gen.py", errors="replace")
    for spelling in ("--aoti-install-dir", "--aoti_install_dir"):
        if f'"{spelling}"' in gen_py:
            args += [spelling, str(out / "aoti")]
            break
    if '"--generate"' in gen_py:  # See Note [Sources, not headers]
        args += ["--generate", "sources"]
    return args


def _python_args(root: Path, gen_dir: Path, subset: str = "pybindings") -> list[str]:
    """tools.setup_helpers.generate_code's arguments (1.13 and 2.6 take the same ones)."""
    args = ["--gen-dir", str(gen_dir), "--subset", subset, "--native-functions-path", str(root / _NATIVE_YAML)]
    if (root / _TAGS_YAML).is_file():
        args += ["--tags-path", str(root / _TAGS_YAML)]
    return args


def _run_module(python: str, root: Path, module: str, args: list[str], cwd: Path, timeout_s: float,
                procs: "_Runs | None" = None) -> str | None:
    """Run ``python -m module args`` from the checkout; None on success, else the reason in one line.
    ``procs`` gets the process, so that another thread can kill its group (``_Runs.kill``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["ATENMAP_CODEGEN_PARENT"] = str(os.getpid())
    env["PYTHONHASHSEED"] = "0"  # 1.13's gen_autograd orders some output by set iteration: same lines every run
    try:
        proc = subprocess.Popen(
            [python, "-c", _BOOTSTRAP, str(root), module, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group: see Note [Running a tree's code]
        )
    except OSError as exc:
        return f"cannot run {python}: {exc.strerror or exc}"
    if procs is not None:
        procs.append(proc)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return (f"timed out after {timeout_s:g} s (torchgen and its children killed; "
                "ATENMAP_CODEGEN_TIMEOUT sets the limit)")
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode == 0:
        return None
    return _last_meaningful_line(stderr) or _last_meaningful_line(stdout) or f"exit status {proc.returncode}"


def _signal_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    _signal_group(proc)
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


_EXCEPTION_ENDINGS = ("Error", "Exception", "Interrupt")


def _python_name(text: str) -> bool:
    """An ASCII letter or ``_``, then word characters."""
    return text[:1].isascii() and (text[:1].isalpha() or text[:1] == "_") and text.replace("_", "a").isalnum()


def _is_exception_line(line: str) -> bool:
    """A traceback's ``SomeError: message`` line (or one with no message): a dotted Python name
    (``torchgen.model.ParseError``) whose last part ends in Error, Exception or Interrupt after at
    least one character, then a ``:`` or the end of the line."""
    *outer, last = line.split(":", 1)[0].split(".")
    return (all(_python_name(part) for part in outer) and _python_name(last)
            and any(last.endswith(end) and len(last) > len(end) for end in _EXCEPTION_ENDINGS))


def _last_meaningful_line(text: str) -> str:
    """The traceback's closing ``SomeError: message`` line, else the last non-blank line."""
    lines = [line.rstrip() for line in text.splitlines()]
    for i in range(len(lines) - 1, -1, -1):
        if _is_exception_line(lines[i]):
            line = lines[i].rstrip(":").rstrip()
            if line == lines[i].split(":", 1)[0]:  # "AssertionError:" with the message below it
                more = next((rest.strip() for rest in lines[i + 1 :] if rest.strip()), "")
                line = f"{line}: {more}" if more else line
            return line[:300]
    nonblank = [line.strip() for line in lines if line.strip()]
    return nonblank[-1][:300] if nonblank else ""


def _load(final: Path, key: str) -> CodegenResult | None:
    """The complete cache entry at ``final`` as a reused result, or None."""
    try:
        done = json.loads((final / _DONE_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(done, dict) or done.get("format") != _DONE_FORMAT or done.get("input_hash") != key:
        return None
    if not (final / "aten").is_dir():
        return None
    python_dir = final / done["python_dir"] if done.get("python_dir") else None
    return CodegenResult(
        out_dir=final / "aten",
        python_dir=python_dir,
        seconds=0.0,
        reused=True,
        warnings=tuple(str(w) for w in done.get("warnings", ())),
        input_hash=key,
        autograd_dir=final / done["autograd_dir"] if done.get("autograd_dir") else None,
    )


def _remove_dead_temporaries(cache_dir: Path) -> None:
    """Temporary folders of killed runs. Only the lock holder writes one, so under the lock all are dead."""
    for path in cache_dir.glob(".codegen-*.tmp-*"):
        shutil.rmtree(path, ignore_errors=True)


def _remove_stale(cache_dir: Path, keep: Path, root: Path, python_bindings: bool) -> None:
    """Older complete entries of the same checkout (and flag): its inputs changed since."""
    for path in cache_dir.glob("codegen-*"):
        if path == keep or not path.is_dir():
            continue
        try:
            done = json.loads((path / _DONE_NAME).read_text())
        except (OSError, ValueError):
            continue  # not a complete entry of ours: leave it alone
        if isinstance(done, dict) and done.get("root") == str(root) and done.get("python_bindings") == python_bindings:
            shutil.rmtree(path, ignore_errors=True)


def _count_files(folder: Path) -> int:
    return sum(1 for path in folder.rglob("*") if path.is_file())
