"""The default recorder: ``torch.profiler`` alone, joined after the run (Note [Joining after the run]
in assemble.py). With ``record.py`` the only modules of atenmap that import torch.

While the user's code runs, nothing of atenmap's runs: the profiler records with ``with_stack=True``
(the Python calls, each with its caller's line) and ``record_shapes=True`` (the input types that
pick the overload). ``stop`` reads the profiler's event tree once and hands plain events to
``assemble``. See docs/trace.md, "Overhead", for what this costs against the profiler alone.
"""
from __future__ import annotations

import os
import sys
import warnings

import torch

from atenmap.trace.assemble import DeviceEvent, HostEvent, assemble
from atenmap.trace.events import Recording
from atenmap.trace.frames import is_user
from atenmap.trace.overloads import pick as pick_overload
from atenmap.trace.record import torch_versions

_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}

# Note [Code objects outlive the recording]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The profiler's Python tracer keeps, per call, pointers into the code object that ran and reads
# its file and function names when the profile is read, after the run. A code object that died in
# between (a script's module code once runpy's exec returns, code generated and dropped) then reads
# as "(0): <module>" with no file, or as bytes that are not UTF-8 (Note [Undecodable profiler
# names]). So while a recording is open, every code object given to exec() (the "exec" audit
# event: runpy runs scripts that way, torch.fx its generated forward) is kept alive until stop.
# Functions a script defines are constants of its module code, so they stay too. An audit hook
# cannot be removed: it is installed once, and does nothing while no recording is open.
_KEEP: list | None = None
_HOOKED = False


def _keep_code(event: str, args: tuple) -> None:
    if _KEEP is not None and event == "exec" and args:
        _KEEP.append(args[0])


def _hold_code(on: bool) -> None:
    global _KEEP, _HOOKED
    if on and not _HOOKED:
        sys.addaudithook(_keep_code)
        _HOOKED = True
    _KEEP = [] if on else None


class ProfRecorder:
    """Start/stop ``torch.profiler``; ``stop()`` returns the ``Recording``. ``prof`` (its sessions)
    stays for ``export_chrome_trace``."""

    def __init__(self, *, cuda: bool | None = None, chrome: bool = False):
        version, git, cuda_ok = torch_versions()
        self.cuda = cuda_ok if cuda is None else (cuda and cuda_ok)
        self.chrome = chrome
        self.recording = Recording(torch_version=version, torch_git=git, cuda_available=cuda_ok, profiled=True)
        self.prof = None
        self.warm_up_s = 0.0
        self.warnings: list[str] = []
        self.lost = ""  # why part of the run went unrecorded, said as a warning (Trace.stop)
        self._prefixes: list[str] = []

    def start(self, root=None) -> "ProfRecorder":
        from torch.profiler import ProfilerActivity, profile

        from atenmap.trace.inductor import prepare
        from atenmap.trace.sessions import Sessions

        self._prefixes = _path_prefixes()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        # one profiler session, or several with torch.compile's compilations left out between them:
        # See Note [No recording while compiling]
        self.prof = Sessions(lambda: profile(activities=acts, with_stack=True, record_shapes=True), self._read,
                             chrome=self.chrome)
        self._undo_inductor = prepare(torch, self.prof.pause, self.prof.resume)  # See Note [Compiled code under a trace]
        _hold_code(True)  # See Note [Code objects outlive the recording]
        self.prof.start()
        self._keep(self.prof.warnings)
        return self

    def stop(self) -> Recording:
        if self.prof.live is not None and not torch._C._autograd._profiler_enabled():
            # the script's own torch.profiler ended atenmap's session (one profiler per process):
            # what ran after that is not in the report, which said nothing (issue 34, item 12)
            self.lost = ("the script ran its own torch.profiler, which ended atenmap's recording: what ran after it "
                         "started is not traced (trace the script without its own profiler, or read its chrome "
                         "trace with `atenmap kernel --from-trace`)")
        self.prof.stop()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if getattr(self, "_undo_inductor", None):
                self._undo_inductor()
            while self.prof.done:  # each session's events, oldest first, into the one Recording
                host, device = self.prof.done.pop(0)
                assemble(host, device, self.recording, user=is_user, pick=_torch_pick, composite=_composite)
                del host, device
        _hold_code(False)
        self._keep(self.prof.warnings + caught)
        if self.prof.gaps:
            self.recording.notes.append(f"the profiler was paused while torch.compile compiled ({self.prof.gaps} "
                                        "time(s)): the compiled code's runs are recorded, its compilation is not")
        return self.recording

    def _read(self, session) -> tuple[list[HostEvent], list[DeviceEvent]]:
        """One finished profiler session as plain events (Note [A session is read when it ends])."""
        results = session.profiler.kineto_results
        types, device = _kineto_events(results) if self.cuda else ({}, [])
        return _host_events(results.experimental_event_tree(), types, self._absolute), device

    def _keep(self, caught) -> None:
        for w in caught:
            msg = f"{w.category.__name__}: {str(w.message).splitlines()[0] if str(w.message) else ''}"
            if msg not in self.warnings:
                self.warnings.append(msg)

    def _absolute(self, name: str) -> str:
        """The profiler writes files relative to sys.path entries (``torch/nn/functional.py``,
        ``train.py``); back to the path Python had, where one of those entries holds it."""
        if not name or os.path.isabs(name) or name.startswith("<"):
            return name
        for p in self._prefixes:
            if os.path.exists(p + name):
                return p + name
        return name


def _path_prefixes() -> list[str]:
    try:
        from torch.profiler.python_tracer import _prefix_regex
        return list(_prefix_regex())
    except (ImportError, AttributeError):  # another torch: files stay as the profiler wrote them
        return []


def _kineto_events(results) -> tuple[dict[int, tuple], list[DeviceEvent]]:
    """(op correlation id -> recorded input types, device events)."""
    types: dict[int, tuple] = {}
    device: list[DeviceEvent] = []
    for e in results.events():
        dev = str(e.device_type()).rsplit(".", 1)[-1].lower()
        if dev == "cpu":
            if not e.linked_correlation_id():
                dt = e.dtypes()
                if dt:
                    types[e.correlation_id()] = tuple(dt)
            continue
        activity = str(getattr(e, "activity_type", lambda: "")() or "").lower().rsplit(".", 1)[-1]
        annotation = getattr(e, "is_user_annotation", None)  # torch 2.11's activity_type is a number
        if "user_annotation" in activity or (annotation is not None and annotation()):
            continue  # a record_function range's copy on the GPU track (`## Call CompiledFxGraph … ##`), not device work
        kind = _device_kind(activity, e.name())
        device.append(DeviceEvent(e.name(), kind, e.duration_ns() / 1000.0, e.device_index(),
                                  e.linked_correlation_id(), e.correlation_id(), e.start_ns()))
    return types, device


def _device_kind(activity: str, name: str) -> str:
    """kernel, memcpy, memset or other, from kineto's activity type (its spelling differs between
    torch versions: ``kernel``, ``concurrent_kernel``, ``gpu_memcpy``...), else from the name."""
    for word, kind in (("memcpy", "memcpy"), ("memset", "memset"), ("kernel", "kernel")):
        if word in activity:
            return kind
    if name.startswith("Memcpy"):
        return "memcpy"
    return "memset" if name.startswith("Memset") else "kernel"


def _host_events(tree, types: dict, absolute) -> list[HostEvent]:
    """The event tree, depth first (a parent before its children), as plain HostEvents. Each field
    of a profiler event is a call into torch (several µs for a name or an end time): only what the
    join reads is read (no name of a Python function event, whose callsite has it; no end time but
    of ops and the autograd engine's run_backward, whose time window is looked up)."""
    from torch._C._profiler import _EventType

    op_tag, py_tag, c_tag = _EventType.TorchOp, _EventType.PyCall, _EventType.PyCCall
    out: list[HostEvent] = []
    files: dict = {}
    todo = [(e, -1) for e in reversed(tree)]
    pop, extend, append = todo.pop, todo.extend, out.append
    while todo:
        e, parent = pop()
        tag = e.tag
        if tag == op_tag:
            corr = e.correlation_id
            rec = types.get(corr)
            tree_types, key = _inputs(e.extra_fields.inputs)  # the inputs read once: each read is a call into torch
            h = HostEvent("op", _text(e, "name"), e.start_tid, e.start_time_ns, e.end_time_ns, parent, corr,
                          rec if rec is not None else tree_types, device=key)
        elif tag == py_tag:
            ef = e.extra_fields
            cs = ef.callsite
            raw = _text(cs, "file_name")
            file = files.get(raw)
            if file is None:
                file = files[raw] = absolute(raw)
            h = HostEvent("py", "", e.start_tid, e.start_time_ns, 0, parent, file=file, line=cs.line_number,
                          function=_text(cs, "function_name"), caller_line=ef.caller.line_number)
        elif tag == c_tag:
            name = _text(e, "name")
            end = e.end_time_ns if "run_backward" in name else 0
            h = HostEvent("py", name, e.start_tid, e.start_time_ns, end, parent,
                          caller_line=e.extra_fields.caller.line_number)
        else:
            h = HostEvent("other", "", e.start_tid, 0, 0, parent)
        append(h)
        children = e.children
        if children:
            me = len(out) - 1
            extend((c, me) for c in reversed(children))
    return out


def _inputs(inputs) -> tuple[tuple, str]:
    """(input types, dispatch key) of an op event from the event tree's inputs, in one pass.

    Types as a chrome trace writes them (Note [Overloads from recorded input types]): a tensor as its
    dtype, a number as Scalar, a list of tensors as TensorList; what the tree leaves as None (int
    lists among them) as "?", which fits any non-tensor argument. The key: that of the first input
    with a device (its device and layout), "" when none has one."""
    out = []
    key = None
    for i in inputs:
        if i is None:
            out.append("?")
        elif isinstance(i, (bool, int, float, complex)):
            out.append("Scalar")
        elif isinstance(i, list):
            out.append("TensorList" if i and hasattr(i[0], "dtype") else "?")
        else:
            dt = getattr(i, "dtype", None)
            if dt is None:
                out.append("?")
            else:
                name = _DTYPES.get(dt)
                if name is None:
                    name = _DTYPES[dt] = str(dt).replace("torch.", "")
                out.append(name)
            if key is None:
                key = _key_of(i)
    return tuple(out), key or ""


_DTYPES: dict = {}


def _text(obj, attr: str) -> str:
    """A string field of a profiler record. Note [Undecodable profiler names]: with torch.compile,
    torch 2.13 hands back some Python call events whose name bytes are not UTF-8 (the code object
    they were read from is gone); such an event keeps "?" and the rest of the trace stands."""
    try:
        return getattr(obj, attr)
    except UnicodeDecodeError:
        return "?"


_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "mps": "MPS", "xpu": "XPU", "hip": "HIP"}


def _key_of(i) -> str | None:
    """The dispatch key of one input (device and layout), None when it has no device."""
    dev = getattr(i, "device", None)
    if dev is None:
        return None
    base = _DEVICE_KEYS.get(dev.type, dev.type.upper())
    layout = getattr(i, "layout", torch.strided)
    if layout is torch.sparse_coo:
        return "Sparse" + base
    if layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
        return "SparseCsr" + base
    return base


_SCHEMAS: dict[str, list] = {}


def _torch_pick(name: str, types: tuple) -> str | None:
    """The overload this torch ran: its own schemas, matched to the recorded types."""
    cands = _SCHEMAS.get(name)
    if cands is None:
        try:
            schemas = torch._C._jit_get_schemas_for_operator(name)
        except RuntimeError:  # not an operator torch knows by that name
            schemas = []
        cands = _SCHEMAS[name] = [(f"{name}.{s.overload_name}" if s.overload_name else name,
                                   str(s).split("::", 1)[-1]) for s in schemas]
    return pick_overload(cands, types)


_COMPOSITE: dict[str, bool] = {}


def _composite(op: str) -> bool:
    hit = _COMPOSITE.get(op)
    if hit is None:
        try:
            hit = bool(torch._C._dispatch_has_kernel_for_dispatch_key(op, "CompositeImplicitAutograd"))
        except RuntimeError:
            hit = False
        _COMPOSITE[op] = hit
    return hit
