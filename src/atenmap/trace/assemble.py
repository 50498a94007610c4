"""A profiler's own records -> a ``Recording``: which op ran, where in the user's code, what it
launched. No torch: the events come from the live profiler (``profrec.py``) or from a chrome trace
file someone recorded (``chrome.read_recording``), and both are joined by this one module, so that
``atenmap trace`` and ``atenmap kernel --from-trace`` give the same answer per kernel event.

Note [Joining after the run]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``torch.profiler.profile(with_stack=True, record_shapes=True)`` records all a trace needs; nothing of
atenmap runs while the user's code does:

* every op event (``aten::add``) with its External id (``correlation``) and its input types
  (Note [Overloads from recorded input types]); every device event (kernel, memcpy, memset) with the
  External id of the innermost op that was open on the host when it was issued. A kernel's op is
  the op of that id; the ops around it are its parents.
* every Python function and C function call (``with_stack``), nested with the ops by time per
  thread: the frames above an op are its Python stack. In the live profiler each call event also
  knows its *caller's* line at the moment of the call (``_PyFrameState`` ``caller``), so the line
  of the user's statement is exact; in a chrome trace a python_function event is named with its
  function's first line only (``train.py(40): step``), and that is what a stack read from a file
  shows (``Frame.exact`` False). An op a user frame runs without a call event in between (``a + b``
  is a C slot, not a call) also shows its function's first line, not exact.

Which op events are calls (one report line each): every op that launched device work, and, for
work on the host, each ``aten::`` op with no enclosing ``aten::`` op other than composite ones
(``aten::linear`` decomposes into ``aten::t`` and ``aten::addmm``, both calls; ``aten::addmm``'s own
``aten::copy_`` is part of it). This is what a Python dispatch mode sees.
Autograd's engine threads run backward ops with no Python frame of their own: those get the
stack of the ``run_backward`` call that was running when they started (the ``loss.backward()`` line).
"""
from __future__ import annotations

import bisect
import os
import re
from typing import Callable, NamedTuple

from atenmap.trace.events import Call, Frame, Kernel, Recording
from atenmap.trace.lines import statement_line

_EVAL = "autograd::engine::evaluate_function: "
_PY_NAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
_C_METHOD = re.compile(r"^<built-in method (\w+) of (\w+(?:\.\w+)*) object")
_C_FUNCTION = re.compile(r"^<built-in function (\w+)>")
_RUNNER_FILE = os.path.join("atenmap", "trace", "run.py")  # atenmap trace's script runner: what called it is the tool
_COMPILER_FILES = ("torch/_dynamo/convert_frame.py",)
_OP_NAME = re.compile(r"^\w+::\w+$")
_CPP_RANGE = re.compile(r"^(?:graph_\d+_)?cpp_fused_")  # See Note [C++ kernel profile ranges] in inductor/outputcode.py


class HostEvent(NamedTuple):
    """One host event: an op (``kind`` "op"), a Python or C function call ("py"), or anything else."""

    kind: str
    name: str
    thread: int
    start_ns: int
    end_ns: int
    parent: int = -1  # index of the enclosing event in the same list, -1 at the top
    correlation: int = 0  # op: its External id
    types: tuple = ()  # op: recorded input types
    file: str = ""  # py: the called function's file, its first line, its name
    line: int = 0
    function: str = ""
    caller_line: int = 0  # py: the calling frame's line at the call (0: not recorded)
    device: str = ""  # op: the dispatch key of its first tensor input, where recorded ("CPU", "SparseCUDA")
    proc: int = 0  # the process that recorded it: External ids are its own (Note [External ids are per process])


class DeviceEvent(NamedTuple):
    name: str
    kind: str  # kernel, memcpy, memset, other
    duration_us: float
    device: int
    linked: int  # the External id of the op that issued it
    correlation: int = 0
    start_ns: int = 0
    proc: int = 0  # the host process whose op issued it; ANY_PROC: not known (Note [External ids are per process])


ANY_PROC = -1

# Note [External ids are per process]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Kineto numbers External ids per process: two ranks' traces merged into one file (pids 100 and
# 101) both have an op with id 1, and a kernel of rank 101 must not be credited to rank 100's op
# (issue 34). So an id is looked up within the process that recorded the op: a host event's process
# is its pid; a device event's pid is its device's number, not a process's, so it belongs to the
# host process of the same pid if there is one, else to the only host process of the file; in a
# file of several host processes it stays ANY_PROC and goes to the first op of that id in any of
# them. One op per id: where several ops of one process share an id (a hostile or broken file),
# the first in nesting order gets its device events and the others none, so the cost stays linear
# in the events (3,000 ops and 3,000 kernels of one id were 9,000,000 device events before).


_IS_OP: dict[str, bool] = {}


def is_op(name: str) -> bool:
    """An operator event (``aten::add``, ``torchvision::nms``), not a range or an autograd node."""
    hit = _IS_OP.get(name)
    if hit is None:
        hit = bool(_OP_NAME.match(name)) and not name.startswith(("autograd::", "profiler::"))
        if len(_IS_OP) < 1 << 16:
            _IS_OP[name] = hit
    return hit


def nest(events: list[HostEvent]) -> list[HostEvent]:
    """Parents by time, per thread (a chrome trace's events carry no parent): an event's parent is
    the innermost one open when it starts. Sorts ``events`` in start order and sets the parents in
    place (a second list of 10^6 events would double the reader's peak memory); returns it."""
    events.sort(key=lambda e: (e.thread, e.start_ns, -e.end_ns))
    stack: list[int] = []  # indexes into events
    thread = None
    for i, e in enumerate(events):
        if e.thread != thread:
            stack, thread = [], e.thread
        while stack and events[stack[-1]].end_ns <= e.start_ns:
            stack.pop()
        if stack:
            events[i] = e._replace(parent=stack[-1])
        stack.append(i)
    return events


class Assembler:
    """``assemble`` in parts. ``user(file)``: is this frame the user's; ``pick(name, types)``: the
    overload (or None); ``composite(op)``: does an op of that (overload) name only decompose."""

    def __init__(self, host: list[HostEvent], device: list[DeviceEvent], *, user: Callable[[str], bool],
                 pick: Callable | None = None, composite: Callable | None = None, host_calls: bool = True):
        self.host, self.device = host, device
        self.user, self.pick, self.composite = user, pick, composite
        self.host_calls = host_calls
        self._names: dict = {}
        self._stacks: dict = {}
        self._same: dict = {}  # (frames, function) -> itself: calls with the same stack share it
        self._windows: list | None = None
        self._calls_in: dict | None = None  # py event -> [(start, caller line)] of the calls it made

    def op_name(self, i: int) -> str:
        e = self.host[i]
        key = (e.name, e.types)
        hit = self._names.get(key)
        if hit is None:
            hit = self._names[key] = (self.pick(e.name, e.types) if self.pick and e.types else None) or e.name
        return hit

    def ancestors(self, i: int) -> list[int]:
        out, p = [], self.host[i].parent
        while p >= 0:
            out.append(p)
            p = self.host[p].parent
        return out[::-1]  # outermost first

    def is_call(self, i: int, launched: bool, blocked: bool) -> bool:
        """``blocked``: an ``aten::`` op that does more than decompose encloses event ``i``."""
        e = self.host[i]
        if launched or (e.kind == "op" and _CPP_RANGE.match(e.name)):  # Inductor's C++ kernel range
            return True
        if not self.host_calls or blocked or e.kind != "op" or not is_op(e.name):
            return False
        return self.composite is None or not self.composite(self.op_name(i))  # a composite only decomposes

    def blocks(self, i: int) -> bool:
        """Does op event ``i`` make the ops inside it parts of itself (not calls of their own)?"""
        e = self.host[i]
        return e.kind == "op" and is_op(e.name) and (self.composite is None or not self.composite(self.op_name(i)))

    # ---- where in the user's code ---------------------------------------------------------
    def python_chain(self, i: int) -> tuple[int, ...]:
        """The Python call events above event ``i``, outermost first."""
        return tuple(a for a in self.ancestors(i) if self.host[a].kind == "py")

    def stack(self, chain: tuple[int, ...]) -> tuple[tuple[Frame, ...], str | None]:
        """(the user's frames, the torch-level function called from the innermost one), per chain;
        see Note [Joining after the run]. Memoised by what the chain's events say (each call of a
        loop has events of its own, with the same content)."""
        host = self.host
        key = tuple([host[p][1:2] + host[p][8:12] for p in chain])  # name, file, line, function, caller_line
        hit = self._stacks.get(key)
        if hit is not None:
            return hit
        frames, inner = [], -1
        first = max((k + 1 for k, p in enumerate(chain) if host[p].file.endswith(_RUNNER_FILE)), default=0)
        for k, p in enumerate(chain):
            e = host[p]
            if k < first or not e.file or not self.user(e.file):
                continue
            nxt = host[chain[k + 1]] if k + 1 < len(chain) else None
            if nxt is not None and nxt.caller_line > 0:
                frames.append(Frame(e.file, nxt.caller_line, e.function))
            else:
                frames.append(Frame(e.file, e.line, e.function, exact=False))
            inner = k
        function = None
        for p in chain[inner + 1:]:
            function = torch_function(host[p])
            if function:
                break
        hit = (tuple(frames), function)
        hit = self._stacks[key] = self._same.setdefault(hit, hit)  # one copy per distinct stack
        return hit

    def backward_stack(self, start_ns: int) -> tuple[tuple[Frame, ...], str | None] | None:
        """The stack of the ``run_backward`` call running at ``start_ns`` (autograd's threads)."""
        if self._windows is None:
            wins = []
            for i, e in enumerate(self.host):
                if e.kind == "py" and "run_backward" in e.name:
                    wins.append((e.start_ns, e.end_ns, i))
            self._windows = sorted(wins)
        starts = [w[0] for w in self._windows]
        k = bisect.bisect_right(starts, start_ns) - 1
        while k >= 0:
            s, end, i = self._windows[k]
            if end >= start_ns:
                frames, _ = self.stack(self.python_chain(i) + (i,))
                return frames, "torch.Tensor.backward"
            k -= 1
        return None

    def infer_line(self, i: int, p: int, frames: tuple) -> tuple:
        """The innermost frame's statement for an op it ran with no call event in between
        (Note [Lines of operators without a call])."""
        if self._calls_in is None:
            self._calls_in = {}
            for k, e in enumerate(self.host):
                if e.kind == "py" and e.parent >= 0 and e.caller_line > 0:
                    self._calls_in.setdefault(e.parent, []).append((e.start_ns, e.caller_line))
        start = self.host[i].start_ns
        after = before = None
        for s, line in self._calls_in.get(p, ()):
            if s <= start:
                after = line
            elif before is None:
                before = line
        top = next((a for a in self.ancestors(i) if a > p and self.host[a].kind == "op" and is_op(self.host[a].name)), i)
        f = frames[-1]
        line = statement_line(f.file, f.function, f.line, self.host[top].name, after, before)
        return frames if line is None else frames[:-1] + (Frame(f.file, line, f.function),)

    # ---- the recording --------------------------------------------------------------------
    def recording(self, rec: Recording) -> Recording:
        launched: dict[int, list[Kernel]] = {}
        by_corr: dict[tuple[int, int], int] = {}  # (process, External id) -> its first op
        by_id: dict[int, int] = {}  # External id -> its first op in any process
        for i, e in enumerate(self.host):
            if e.kind == "op" and e.correlation:
                by_corr.setdefault((e.proc, e.correlation), i)
                by_id.setdefault(e.correlation, i)
        for d in sorted(self.device, key=lambda d: d.start_ns):
            k = Kernel(d.name, d.duration_us, d.device, d.kind, d.linked)
            i = by_id.get(d.linked) if d.proc == ANY_PROC else by_corr.get((d.proc, d.linked))
            if i is None:
                rec.unattributed.append(k)
            else:
                launched.setdefault(i, []).append(k)
        call_of: dict[int, int] = {}
        threads: dict[int, int] = {}
        compiling = self.compiling()
        host = self.host
        blocked = [False] * len(host)  # an aten op that is more than a decomposition encloses it
        chains: list[tuple] = [()] * len(host)  # the Python call events above it
        for i, e in enumerate(host):
            p = e.parent
            if p >= 0:
                blocked[i] = blocked[p] or self.blocks(p)
                chains[i] = chains[p] + (p,) if host[p].kind == "py" else chains[p]
            if i in compiling:
                continue  # torch.compile at work (tracing with fake tensors): see Note [Compiling is not running]
            if e.kind == "op" and self.is_call(i, i in launched, blocked[i]):
                c = self.call(i, len(rec.calls), launched.get(i, []), threads, chains[i])
                rec.calls.append(c)
                call_of[i] = c.index
            elif p >= 0 and p in call_of:
                call_of[i] = call_of[p]
            if e.kind == "op" and e.correlation and i in call_of:
                rec.op_events[e.correlation] = call_of[i]
        return rec

    # Note [Compiling is not running]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # The first call of a torch.compile'd function compiles it inside the traced region: dynamo
    # runs the function's ops on fake tensors (and Inductor more of them) under
    # torch/_dynamo/convert_frame.py. The profiler records those ops like any other, but they are
    # the compiler's work, not the program's: they are no calls (and kernels they issue, none on fake
    # tensors, would be unattributed). What the compiled code then runs is recorded as it ran.
    def compiling(self) -> set[int]:
        """Indexes of the events that run inside torch.compile's compiler."""
        out: set[int] = set()
        for i, e in enumerate(self.host):
            if e.parent in out or (e.kind == "py" and compiler_frame(e)):
                out.add(i)
        return out

    def call_parts(self, i: int, chain: tuple) -> tuple[tuple[Frame, ...], str | None, tuple[str, ...], str | None]:
        """(frames, torch-level function, parent ops, autograd node) of op event ``i``: what its
        call takes from its ancestors and its own name (a backward thread's frames, which depend on
        its start, are ``call``'s). A trace read from a file computes them once per distinct
        ancestry (spill.py, Note [One answer per ancestry])."""
        frames, function = self.stack(chain)
        if frames and not frames[-1].exact and chain and self.host[chain[-1]].file == frames[-1].file:
            frames = self.infer_line(i, chain[-1], frames)
        parents, node = [], None
        for a in self.ancestors(i):
            name = self.host[a].name
            if self.host[a].kind == "op":
                parents.append(self.op_name(a) if is_op(name) else name)
                if name.startswith(_EVAL):
                    node = name[len(_EVAL):]
        return frames, function, tuple(parents), node

    def call(self, i: int, index: int, kernels: list[Kernel], threads: dict, chain: tuple) -> Call:
        e = self.host[i]
        frames, function, parents, node = self.call_parts(i, chain)
        if not frames:
            frames, function = self.backward_stack(e.start_ns) or (frames, function)
        # no tensor input (a factory op): where its kernels ran, else the host
        key = e.device or ("CUDA" if kernels else "CPU")
        c = Call(index, self.op_name(i), key, frames, function, parents, (e.end_ns - e.start_ns) / 1000.0,
                 list(kernels), threads.setdefault(e.thread, len(threads)), node, types=tuple(e.types),
                 correlation=e.correlation)
        if self.pick is not None:
            c.extra["overload"] = "picked"  # by the running torch's own schemas: the join keeps it
        return c


# Note [Autotuning is not running]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The first run of a compiled graph on CUDA autotunes its Triton kernels: Inductor's
# ``CachingAutotuner`` launches each config several times to time it, and its benchmarker clears the
# L2 cache between runs with a ``fill_``/``zero_`` of a large buffer. Those launches run under the
# user's line but are not the program's work (a model run 4 times showed 216 launches of one kernel
# and 412 ``fill_`` launches, issue 35): like compiling, they are no calls. They are the ops under a
# Python frame of Inductor's benchmarker or of the autotuner's benchmarking methods.
_AUTOTUNE_FILES = ("torch/_inductor/runtime/benchmarking.py", "torch/_inductor/autotune_process.py",
                   "triton/testing.py")
_AUTOTUNE_FUNCTIONS = {"torch/_inductor/runtime/triton_heuristics.py": ("benchmark_all_configs", "bench",
                                                                       "autotune_to_one_config", "coordinate_descent_tuning"),
                       "torch/_inductor/select_algorithm.py": ("benchmark_example_value", "do_autotuning", "benchmark")}


def compiler_frame(e: HostEvent) -> bool:
    """A Python frame of torch.compile's compiler or of Inductor's autotuning (Note [Compiling is
    not running], Note [Autotuning is not running]): the ops under it are not calls."""
    f = e.file.replace("\\", "/")
    if f.endswith(_COMPILER_FILES) or f.endswith(_AUTOTUNE_FILES):
        return True
    for file, functions in _AUTOTUNE_FUNCTIONS.items():
        if f.endswith(file) and e.function in functions:
            return True
    return False


def assemble(host: list[HostEvent], device: list[DeviceEvent], rec: Recording, **kw) -> Recording:
    """``rec`` (versions, notes) filled with calls; see Note [Joining after the run]."""
    return Assembler(host, device, **kw).recording(rec)


# Note [Names users know]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The torch-level function of a call is the first torch frame below the user's, named by its module
# and function. Some of torch's frames are wrappers a user never wrote: ``torch._jit_internal.fn``
# (``boolean_dispatch``, which makes ``F.max_pool2d`` choose between ``_max_pool2d`` and
# ``max_pool2d_with_indices``), ``torch.optim.optimizer.wrapper`` (the step hooks around
# ``opt.step()``), ``torch.utils._contextlib``'s ``decorate_context`` (``no_grad`` as a decorator),
# and torch.compile's own machinery (``torch._dynamo``, ``torch._inductor``: an ``eval_frame._fn``
# or ``triton_heuristics.run`` is not the user's function). Those are looked through; the halves of a
# ``boolean_dispatch`` take their public name, and an optimizer's ``step`` its class's
# (``torch.optim.AdamW.step``).
_WRAPPERS = {"torch/_jit_internal.py": ("fn",), "torch/optim/optimizer.py": ("wrapper", "_use_grad", "maybe_fallback"),
             "torch/utils/_contextlib.py": None, "torch/_compile.py": None, "torch/_dynamo/": None,
             "torch/_inductor/": None, "torch/autograd/profiler.py": None, "torch/_ops.py": None}
_DISPATCHED = {f"{p}{n}" for p in ("max_pool", "adaptive_max_pool") for n in ("1d", "2d", "3d")} | {
    "fractional_max_pool2d", "fractional_max_pool3d"}
_OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "adagrad": "Adagrad", "adadelta": "Adadelta",
               "adamax": "Adamax", "asgd": "ASGD", "lbfgs": "LBFGS", "nadam": "NAdam", "radam": "RAdam",
               "rmsprop": "RMSprop", "rprop": "Rprop", "sparse_adam": "SparseAdam", "adafactor": "Adafactor"}


def _wrapper(f: str, function: str) -> bool:
    for file, functions in _WRAPPERS.items():
        if (f.endswith(file) or (file.endswith("/") and file in f)) and (functions is None or function in functions):
            return True
    return False


def torch_function(e: HostEvent) -> str | None:
    """The torch-level function a Python call event is: ``torch.add``, ``torch.Tensor.t``,
    ``torch.nn.functional.softmax``; None for nn.Module plumbing and torch's wrappers, which are
    skipped (Note [Names users know])."""
    name = e.name
    f = e.file.replace("\\", "/")
    if name.startswith("nn.Module: ") or "torch/nn/modules/" in f:
        return None  # module plumbing and forward(): the function it calls is the answer
    m = _C_METHOD.match(name)
    if m:
        owner = m.group(2)
        if owner.startswith("pybind11_builtins") or m.group(1).startswith("_record_function"):
            return None  # the profiler's own record_function entry, a wrapper's bookkeeping
        return f"torch.Tensor.{m.group(1)}" if owner in ("Tensor", "TensorBase") else (
            f"torch.{m.group(1)}" if owner == "type" else f"{owner}.{m.group(1)}")
    m = _C_FUNCTION.match(name)
    if m:  # torch._C._nn.linear and friends: torch.nn.functional's names for them
        fn = m.group(1)
        if fn.startswith("_has_torch_function") or fn == "kernel":  # Inductor's C++ kernels are bound as "kernel"
            return None
        return f"torch.nn.functional.{fn}"
    at = f.rfind("torch/")
    if at >= 0 and f.endswith(".py"):
        if _wrapper(f, e.function):
            return None
        mod = f[at:-3].replace("/", ".").removesuffix(".__init__")
        mod = {"torch._tensor": "torch.Tensor"}.get(mod, mod)
        function = e.function
        if mod == "torch.nn.functional":
            public = function.lstrip("_").removesuffix("_with_indices")
            function = public if public in _DISPATCHED else function
        elif mod.startswith("torch.optim.") and function == "step" and mod[12:] in _OPTIMIZERS:
            mod = "torch.optim." + _OPTIMIZERS[mod[12:]]
        return f"{mod}.{function}"
    return None  # another library's or the standard library's Python code: look further in


def py_event_fields(name: str) -> tuple[str, int, str]:
    """(file, first line, function) of a chrome trace's python_function name ``t.py(12): step``;
    a C call (``<built-in method add ...>``) or a module (``nn.Module: Linear_0``) has no file."""
    m = _PY_NAME.match(name)
    if m:
        digits = m.group(2)  # a line beyond 9 digits is no line (issue 34: 2**64 overflowed SQLite)
        return m.group(1), int(digits) if len(digits) <= 9 else 0, m.group(3)
    return "", 0, name
