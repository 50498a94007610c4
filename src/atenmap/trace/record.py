"""The opt-in recorder (``atenmap trace --dispatch-mode``, ``atenmap.trace(dispatch=True)``): a Python
dispatch mode on every aten call. The default recorder is ``profrec.py`` (the profiler alone); these
two are the only modules of atenmap that import torch. See docs/trace.md for what this one adds.

* a ``TorchDispatchMode`` sees every aten call as its exact overload (``aten.add.Tensor``), with
  the tensors it ran on, and walks ``sys._getframe`` for the caller's Python stack;
* a ``TorchFunctionMode`` keeps the torch-level function being called (``torch.nn.functional.linear``),
  the parent of the aten calls it decomposes into;
* ``torch.profiler`` (when asked for, and always where CUDA is available) records the kernels each
  call launched and the op events around it. See Note [Linking kernels to calls] in link.py.

The hot path (``_Dispatch.__torch_dispatch__``) keeps raw objects (OpOverload, code objects); names,
frames and keys become plain ``events`` records once, in ``Recorder.stop``.

Note [Stack walks stop at the traced block]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Walking ``f_back`` makes Python create a frame object for every level it passes, on every aten
call. The frame that opened the trace (``with atenmap.trace():``) stays alive while the traced code
runs, and so do the frames above it, at fixed lines: those are read once at ``start`` (``_outer``)
and a walk that reaches the opening frame takes its current line and stops. Calls from other
threads (autograd's device threads) never meet it and walk to their end. Under the CLI, walks stop
at atenmap's script runner: what is above it is the tool.

Note [Mode warm-up]
~~~~~~~~~~~~~~~~~~~
The first aten call under a dispatch mode in a process costs seconds when the mode's
``__torch_dispatch__`` carries torch's ``_disable_dynamo`` wrapper: its first call imports
``torch._dynamo`` (1.4 s on the 2-core box, 4-6 s on the H200 host). Where the mode opts out of
the wrapper (see Note [Dynamo off in the modes]) nothing is imported and this costs nothing.
``warm_up`` pays whatever it is once, before the user's code runs, with a throwaway mode and a
one-element add (it also counts the wrapper frames, ``_SKIP``); ``Recorder.warm_up_s`` says what it cost.
"""
from __future__ import annotations

import bisect
import sys
import threading
import time

import torch
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

from atenmap.trace.events import Call, Frame, Recording
from atenmap.trace.frames import is_user
from atenmap.trace.link import LABEL, ProfEvent, link
from atenmap.trace.run import run as _run_script

_getframe = sys._getframe
_get_ident = threading.get_ident
_now_ns = time.perf_counter_ns
_NO_KWARGS: dict = {}
_RecordFunctionFast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)
# Note [Autograd nodes in a trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# While loss.backward() runs, the engine runs one node at a time (MulBackward0) and the aten calls
# its apply makes reach the dispatch mode; torch._C._current_autograd_node() is that node (None in
# forward code), with or without the profiler. Each call keeps the node's name; join.py links it to
# the derivatives.yaml entry through Index.autograd_node.
_current_node = getattr(torch._C, "_current_autograd_node", None)
_DEVICE_KEY = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "mps": "MPS", "xpu": "XPU", "hip": "HIP"}
_warm_s: float | None = None
# sys._getframe depth of the op's caller inside __torch_dispatch__: 1 + torch's wrapper frames,
# found by warm_up. sys._getframe(n) does not build frame objects for the levels it skips.
_SKIP = 1
_WRAPPER_FILES = ("torch/_dynamo/eval_frame.py", "torch/_compile.py")
# Stacks stop at atenmap's script runner: what called it is the tool, not the user's program.
_RUNNER = _run_script.__code__


# Note [Dynamo off in the modes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch wraps every TorchDispatchMode subclass's __torch_dispatch__ in torch._disable_dynamo, so
# that torch.compile never traces into a mode: two more Python frames and three set_eval_frame calls
# on every aten call (about a tenth of the mode's cost on a tiny op). The same guarantee costs nothing
# per call when given to the code objects instead: dynamo's frame evaluator reads a per-code
# strategy, and (SKIP, SKIP) runs the frame and everything it calls without dynamo (what
# torch.compiler.disable does for the code it may not wrap). So the modes opt out of the wrapper
# (_should_skip_dynamo, torch's own switch) only where this torch has that strategy and it was set
# on their hot-path code; elsewhere the wrapper stays. warm_up measures the frames either way.
def _no_dynamo(*codes) -> bool:
    try:
        from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy, set_code_exec_strategy
    except ImportError:
        return False
    try:
        for code in codes:
            set_code_exec_strategy(code, _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP))
    except (TypeError, AttributeError, RuntimeError):  # another signature in another torch: keep the wrapper
        return False
    return True


def torch_versions() -> tuple[str, str | None, bool]:
    """(torch.__version__, its git commit or None, CUDA available)."""
    git = getattr(getattr(torch, "version", None), "git_version", None)
    return str(torch.__version__), (git if git and git != "Unknown" else None), bool(torch.cuda.is_available())


def _wrapper_frames(f) -> int:
    """How many frames torch puts between the dispatcher and ``__torch_dispatch__`` (its
    dynamo-disable wrappers: ``torch/_dynamo/eval_frame.py``, ``torch/_compile.py``)."""
    n = 0
    while f is not None and f.f_code.co_filename.replace("\\", "/").endswith(_WRAPPER_FILES):
        n += 1
        f = f.f_back
    return n


def warm_up() -> float:
    """See Note [Mode warm-up]. Returns the seconds it took (0 after the first time)."""
    global _warm_s
    if _warm_s is not None:
        return 0.0
    t0 = time.perf_counter()

    class _Throwaway(TorchDispatchMode):
        _should_skip_dynamo = _Dispatch._should_skip_dynamo  # the same frames as the real mode

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            global _SKIP
            _SKIP = 1 + _wrapper_frames(sys._getframe(1))
            return func(*args, **(kwargs or {}))

    class _ThrowawayF(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with _ThrowawayF(), _Throwaway():
        torch.add(torch.ones(1), 1)
    _warm_s = time.perf_counter() - t0
    return _warm_s


# ---- per-call helpers (hot path) -----------------------------------------------------------------
def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for e in x:
            if isinstance(e, torch.Tensor):
                return e
            if isinstance(e, (list, tuple)) and e and isinstance(e[0], torch.Tensor):
                return e[0]
    return None


def _key_of(out, args, kwargs) -> str:
    """The dispatch key that ran, from the first tensor among outputs, then arguments."""
    t = _first_tensor(out)
    if t is None:
        t = _first_tensor(args)
    if t is None:
        dev = kwargs.get("device")
        return "" if dev is None else _DEVICE_KEY.get(torch.device(dev).type, str(dev).upper())
    if t.is_cuda:
        base = "CUDA"
    elif t.is_cpu:
        base = "CPU"
    else:
        dev = t.device.type
        base = _DEVICE_KEY.get(dev, dev.upper())
    layout = t.layout
    if layout is not torch.strided:
        if layout is torch.sparse_coo:
            return "Sparse" + base
        if layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
            return "SparseCsr" + base
        if layout is torch._mkldnn:  # type: ignore[attr-defined]
            return "MkldnnCPU"
        return base
    if t.is_quantized:
        return "Quantized" + base
    if t.is_nested:
        return "NestedTensor" + base
    return base


class _Functions(TorchFunctionMode):
    """Keeps (torch-level function, the frame calling it) while it runs. The mode is off inside
    it, so the stack holds the outermost call only: ``torch.nn.functional.linear``, not the
    functions linear calls in turn."""

    def __init__(self, stack: list):
        super().__init__()
        self.stack = stack

    def __torch_function__(self, func, types, args=(), kwargs=None):
        st = self.stack
        st.append((func, _getframe(1)))
        try:
            return func(*args, **kwargs) if kwargs else func(*args)
        finally:
            st.pop()


def _walk(rec: "Recorder", f) -> tuple:
    """The user's frames from ``f`` outwards, innermost first, as (code, f_lasti)."""
    user = rec._user_codes
    root = rec._root
    frames = []
    while f is not None:
        code = f.f_code
        if f is root:  # See Note [Stack walks stop at the traced block]
            if rec._root_user:
                frames.append((code, f.f_lasti))
            frames.extend(rec._outer)
            break
        if code is _RUNNER:
            break
        u = user.get(code)
        if u is None:
            u = user[code] = is_user(code.co_filename)
        if u:
            frames.append((code, f.f_lasti))  # f_lineno decodes the line table: see _line_of
        f = f.f_back
    return tuple(frames)


def _dispatch(self: "_Dispatch", func, types, args=(), kwargs=None):
    """``_Dispatch.__torch_dispatch__``, defined first: see Note [Dynamo off in the modes]."""
    rec = self.rec
    try:
        frame = _getframe(_SKIP)
    except ValueError:  # a shallow stack: autograd's engine thread calls us with torch frames only
        frame = None
    frames = _walk(rec, frame) if frame is not None else ()
    fns = self.functions
    top = fns[-1] if fns else None
    if not frames and top is not None:
        # Autograd runs CUDA backward on its own threads, where no user frame is: the torch
        # call the user is waiting in (loss.backward()) is on the function stack.
        frames = _walk(rec, top[1])
    node = _current_node() if _current_node is not None else None  # See Note [Autograd nodes in a trace]
    raw = self.raw
    i = len(raw)
    item = [func, frames, None if top is None else top[0], "", 0, _get_ident(), None if node is None else node.name()]
    raw.append(item)
    op = func._op
    try:
        if self.label:
            with _RecordFunctionFast(f"{LABEL}{i}"):
                t0 = _now_ns()
                out = op(*args, **kwargs) if kwargs else op(*args)
        else:
            t0 = _now_ns()
            out = op(*args, **kwargs) if kwargs else op(*args)
    except BaseException:
        item[3] = _key_of(None, args, kwargs or {})
        raise
    item[4] = _now_ns() - t0
    item[3] = _key_of(out, args, kwargs or _NO_KWARGS)
    return out


_NO_DYNAMO = _no_dynamo(_dispatch.__code__)


class _Dispatch(TorchDispatchMode):
    _should_skip_dynamo = classmethod(lambda cls: not _NO_DYNAMO)  # See Note [Dynamo off in the modes]

    def __init__(self, rec: "Recorder"):
        super().__init__()
        self.rec = rec
        self.raw = rec._raw
        self.functions = rec._functions
        self.label = rec._label

    __torch_dispatch__ = _dispatch


class Recorder:
    """Start/stop the instruments; ``stop()`` returns the ``Recording``.

    ``profile``: run torch.profiler (kernels, parents, chrome trace). Default: where CUDA is
    available, or ``chrome`` is asked for; on a CPU-only run the dispatch mode's own timing is
    enough and the profiler would add half again to the cost.
    """

    def __init__(self, *, profile: bool | None = None, cuda: bool | None = None, chrome: bool = False):
        version, git, cuda_ok = torch_versions()
        self.cuda = cuda_ok if cuda is None else (cuda and cuda_ok)
        self.profile = (self.cuda or chrome) if profile is None else profile
        self.recording = Recording(torch_version=version, torch_git=git, cuda_available=cuda_ok, profiled=self.profile)
        self.prof = None  # the torch.profiler.profile, for export_chrome_trace
        self.warm_up_s = 0.0
        self.lost = ""  # why part of the run went unrecorded (profrec.ProfRecorder's; none here)
        self._raw: list[list] = []
        self._functions: list = []
        self._user_codes: dict = {}
        self._label = self.profile and _RecordFunctionFast is not None
        self._modes: list = []
        self._root = None
        self._root_user = False
        self._outer: tuple = ()

    def start(self, root=None) -> "Recorder":
        """``root``: the frame the traced block runs in (see Note [Stack walks stop at the traced block])."""
        self.warm_up_s = warm_up()
        if root is not None:
            self._root = root
            self._root_user = is_user(root.f_code.co_filename)
            outer = []
            f = root.f_back
            while f is not None and f.f_code is not _RUNNER:
                if is_user(f.f_code.co_filename):
                    outer.append((f.f_code, f.f_lasti))
                f = f.f_back
            self._outer = tuple(outer)
        if self.profile:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            self.prof = profile(activities=acts)
            self.prof.__enter__()
            if _RecordFunctionFast is None:
                self.recording.notes.append("this torch has no _RecordFunctionFast: kernels are not linked to calls")
        self._modes = [_Functions(self._functions), _Dispatch(self)]
        for m in self._modes:
            m.__enter__()
        return self

    def stop(self) -> Recording:
        try:
            for m in reversed(self._modes):
                m.__exit__(None, None, None)
        finally:
            self._modes = []
            self._root = None  # no frame kept alive past the trace
            if self.prof is not None:
                self.prof.__exit__(None, None, None)
        return self._finish()

    # ---- turning raw items into records ---------------------------------------------------
    def _finish(self) -> Recording:
        names: dict = {}
        lines: dict = {}
        fnames: dict = {}
        stacks: dict = {}
        threads: dict = {}
        calls = []
        for i, (func, frames, fn, key, ns, tid, node) in enumerate(self._raw):
            name = names.get(func)
            if name is None:
                name = names[func] = _op_name(func)
            stack = stacks.get(frames)
            if stack is None:
                stack = stacks[frames] = tuple(Frame(c.co_filename, _line_of(c, lasti, lines), c.co_name)
                                               for c, lasti in reversed(frames))
            fname = None
            if fn is not None:
                fname = fnames.get(fn)
                if fname is None:
                    fname = fnames[fn] = _function_name(fn)
            calls.append(Call(i, name, key, stack, fname, cpu_us=ns / 1000.0,
                              thread=threads.setdefault(tid, len(threads)), node=node))
        self._raw = []
        rec = self.recording
        rec.calls = calls
        if self.prof is not None and self._label:
            linked = link(_prof_events(self.prof))
            for c in calls:
                parents = linked.parents.get(c.index, ())
                base = c.op.split(".")[0]
                if parents and parents[-1] == base:
                    parents = parents[:-1]
                c.parents = parents
                c.kernels = linked.kernels.get(c.index, [])
            rec.unattributed = linked.unattributed
            rec.op_events = linked.op_events
        return rec


def _line_of(code, lasti: int, cache: dict) -> int:
    """The line of bytecode offset ``lasti`` in ``code`` (what ``frame.f_lineno`` says, computed once
    per code object here instead of on every call)."""
    table = cache.get(code)
    if table is None:
        ranges = [(start, end, line) for start, end, line in code.co_lines() if line is not None]
        table = cache[code] = ([r[0] for r in ranges], ranges)
    starts, ranges = table
    i = bisect.bisect_right(starts, lasti) - 1
    if i >= 0 and ranges[i][0] <= lasti < ranges[i][1]:
        return ranges[i][2]
    return ranges[i][2] if i >= 0 else code.co_firstlineno


def _op_name(func) -> str:
    schema = getattr(func, "_schema", None)
    if schema is None:
        return str(func)
    ov = getattr(func, "_overloadname", "") or schema.overload_name
    return schema.name if ov in ("", "default") else f"{schema.name}.{ov}"


def _function_name(fn) -> str:
    # torch's C builtins first: resolve_name's table maps aliases to one name (torch.mm -> torch.spmm).
    qual = getattr(fn, "__qualname__", "") or ""
    short = getattr(fn, "__name__", "") or ""
    if qual.startswith("_VariableFunctionsClass.") and short:
        return "torch." + short
    if qual.startswith("TensorBase.") and short:
        return "torch.Tensor." + short
    try:
        name = resolve_name(fn)
    except Exception:  # resolve_name walks torch's override tables; never let it end a report
        name = None
    if name:
        return name
    mod = getattr(fn, "__module__", None) or ""
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{mod}.{qual}" if mod else qual


def _prof_events(prof) -> list[ProfEvent]:
    results = getattr(prof.profiler, "kineto_results", None)
    if results is None:
        return []
    out = []
    devices: dict = {}
    has_activity = None
    for e in results.events():
        dt = e.device_type()
        dev = devices.get(dt)
        if dev is None:
            dev = devices[dt] = str(dt).rsplit(".", 1)[-1].lower()
        linked = e.linked_correlation_id()
        if dev == "cpu" and linked:
            continue  # runtime/driver calls (cudaLaunchKernel): their kernels carry the same link
        if has_activity is None:
            has_activity = hasattr(e, "activity_type")
        start = e.start_ns()
        out.append(ProfEvent(e.name(), dev, e.correlation_id(), linked, start, start + e.duration_ns(),
                             e.start_thread_id(), e.device_index(),
                             str(e.activity_type() or "") if has_activity and dev != "cpu" else ""))
    return out
