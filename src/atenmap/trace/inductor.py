"""torch.compile under ``atenmap trace``: Inductor's provenance recorded while the script compiles,
and its kernels answered from the output code (inductor/outputcode.py).

Note [Compiled code under a trace]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``prepare(torch)`` runs before the user's script. It switches on, through Inductor's own settings,
what the answers need and nothing else:
- ``config.trace.provenance_tracking_level = 1`` (where the torch has it): Inductor then keeps, per
  ``NAME:handle``, the stack traces of the FX nodes each kernel came from and writes the handle above
  the kernel's call in the output code (Note [User lines of a kernel]);
- ``config.cpp.enable_kernel_profile = True``: Inductor's C++ kernels open a profiler range named
  after the kernel, so CPU runs show ``cpp_fused_*`` events (Triton kernels are CUDA kernels the
  profiler sees anyway).
Inductor is imported only when the script first calls ``torch.compile`` (the wrapper set on
``torch.compile``), so an eager script pays nothing. After each graph's ``compile_to_module``, the
provenance table is written beside atenmap's cache (``outputcode.provenance_path``), keyed by the
output file, where ``find_kernel`` (and ``atenmap kernel`` later) reads it.

The recording is paused (``pause``/``resume``, Note [No recording while compiling] in sessions.py)
while ``torch.compile`` itself runs (its first call imports torch._dynamo) and while dynamo
compiles a frame: from the first to the last of dynamo's compile callbacks
(``torch._dynamo.callback_handler``: a frame's compile, with AOTAutograd and Inductor inside it,
and a backward compiled lazily at its first run). Its ``run_start_callbacks`` /
``run_end_callbacks`` are wrapped on the handler object, not registered in its lists, because
``torch._dynamo.reset()`` clears the lists. (Pausing around every frame dynamo looks at,
``convert_frame.CatchErrorsWrapper.__call__``, also left out its checks before a compile, but
split a small script's recording into 13 sessions and the first compiled run's events from their
``Torch-Compiled Region`` range.) A script that imported torch._dynamo before the trace
started (``g = torch.compile(f)`` then ``with atenmap.trace():``) is set up at once.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Callable

from atenmap.inductor.outputcode import provenance_path


def _nothing() -> None:
    return None


def prepare(torch, pause: Callable[[], None] = _nothing, resume: Callable[[], None] = _nothing) -> Callable[[], None]:
    """Set up the recording (Note [Compiled code under a trace]); returns the undo."""
    original = torch.compile
    state = {"patched": None}

    def setup() -> None:
        if state["patched"] is None:
            state["patched"] = _patch_inductor(pause, resume)

    def compile(*args, **kwargs):  # noqa: A001 - torch.compile's own name, as the user calls it
        pause()  # importing torch._dynamo and torch._inductor is the compiler's work too
        try:
            setup()
            return original(*args, **kwargs)
        finally:
            resume()

    compile.__wrapped__ = original
    compile.__doc__ = original.__doc__
    torch.compile = compile
    if "torch._dynamo" in sys.modules:  # compiled before the trace started
        setup()

    def undo() -> None:
        torch.compile = original
        if state["patched"]:
            state["patched"]()

    return undo


def _patch_inductor(pause: Callable[[], None], resume: Callable[[], None]) -> Callable[[], None]:
    import torch._dynamo
    import torch._inductor.config as cfg
    import torch._inductor.debug as dbg
    from torch._inductor.graph import GraphLowering

    saved = {}
    for section, name, value in (("trace", "provenance_tracking_level", 1), ("cpp", "enable_kernel_profile", True)):
        sub = getattr(cfg, section, None)
        if sub is not None and hasattr(sub, name):
            saved[(section, name)] = getattr(sub, name)
            setattr(sub, name, value)
    orig = GraphLowering.compile_to_module

    def compile_to_module(self, *a, **kw):
        mod = orig(self, *a, **kw)
        write_provenance(getattr(mod, "__file__", None), getattr(dbg, "_inductor_kernel_stack_trace", None))
        return mod

    GraphLowering.compile_to_module = compile_to_module
    unhook = _pause_while_compiling(torch._dynamo, pause, resume)

    def undo() -> None:
        GraphLowering.compile_to_module = orig
        unhook()
        for (section, name), value in saved.items():
            setattr(getattr(cfg, section), name, value)

    return undo


def _pause_while_compiling(dynamo, pause: Callable[[], None], resume: Callable[[], None]) -> Callable[[], None]:
    """``pause()`` before dynamo's first compile callback runs, ``resume()`` after its last, or, for a
    frame's compile, once dynamo's frame callback has returned (Note [Resuming after dynamo's
    callback]); the undo. A torch without the handler (before 2.6) is recorded compiling, as before."""
    handler = getattr(dynamo, "callback_handler", None)
    if handler is None or not hasattr(handler, "run_start_callbacks") or not hasattr(handler, "run_end_callbacks"):
        return _nothing
    undo: list[Callable[[], None]] = []
    state = {"inside": 0, "deferred": 0}
    wrapper = getattr(getattr(dynamo, "convert_frame", None), "CatchErrorsWrapper", None)
    if wrapper is not None and "__call__" in vars(wrapper):
        call = vars(wrapper)["__call__"]

        def frame_callback(self, *args, **kwargs):
            state["inside"] += 1
            try:
                return call(self, *args, **kwargs)
            finally:
                state["inside"] -= 1
                if not state["inside"]:
                    while state["deferred"]:
                        state["deferred"] -= 1
                        resume()

        wrapper.__call__ = frame_callback
        undo.append(lambda: setattr(wrapper, "__call__", call))
    start, end = handler.run_start_callbacks, handler.run_end_callbacks

    def run_start_callbacks(args) -> None:
        pause()
        start(args)

    def run_end_callbacks(args) -> None:
        try:
            end(args)
        finally:
            if state["inside"]:
                state["deferred"] += 1
            else:
                resume()

    handler.run_start_callbacks = run_start_callbacks
    handler.run_end_callbacks = run_end_callbacks
    undo.append(lambda: [handler.__dict__.pop(n, None) for n in ("run_start_callbacks", "run_end_callbacks")])

    def unhook() -> None:
        for u in reversed(undo):
            u()

    return unhook


# Note [Resuming after dynamo's callback]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo compiles a frame from inside its frame evaluator's callback (convert_frame's
# ``CatchErrorsWrapper.__call__``), and its end callbacks run there, before the frame it is
# compiling runs. A profiler session started at that point (torch 2.13, Python 3.11) left the
# process to crash in the garbage collector later (a segmentation fault at exit); one started
# after the callback returned did not. So the resume after a frame's compile waits until the
# outermost ``CatchErrorsWrapper.__call__`` has returned; the compiled code's first run, which
# follows, is recorded. A compile outside that callback (a backward compiled lazily at its first
# run) resumes at its end callback.


def write_provenance(output_file: str | None, table) -> None:
    """``{"file", "kernels": {NAME:handle: [stack traces]}}`` for one output file; best effort (a
    read-only cache only costs the user lines)."""
    if not output_file or not isinstance(table, dict) or not table:
        return
    path = provenance_path(output_file)
    data = {"file": output_file, "kernels": {str(k): [str(s) for s in v] for k, v in table.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


class InductorAnswers:
    """The ``InductorKernel`` of kernel event names, each looked up once, for one join (a Joiner
    owns one): the Inductor cache may gain output code between two joins of one process (a server,
    a second trace), so a new join looks again; within one join it is taken as it was."""

    def __init__(self):
        from atenmap.inductor.outputcode import OutputNames

        self._found: dict[str, object] = {}
        self._names = OutputNames()  # which file defines what, read once per file for this join

    def __call__(self, name: str):
        """The ``InductorKernel`` of a kernel event's name (``find_kernel`` in the default Inductor
        cache, with the provenance this trace recorded), None for a name that is not Inductor's or
        is not found."""
        from atenmap.inductor.outputcode import find_kernel, kind_of

        if not kind_of(name):
            return None
        key = f"{os.environ.get('TORCHINDUCTOR_CACHE_DIR', '')}\0{name}"
        if key not in self._found:
            self._found[key] = find_kernel(name, names=self._names)
        return self._found[key]


def answer_dict(k) -> dict:
    """The ``"inductor"`` object of a kernel event in ``--json``: kernel, file, line, call_line, aten,
    user (``[{file, line, code}]``), and kind, nodes, note."""
    return {"kernel": k.name, "file": k.file, "line": k.line, "call_line": k.call_line, "aten": list(k.aten),
            "user": [{"file": f, "line": ln, "code": c} for f, ln, c in k.user], "kind": k.kind,
            "nodes": list(k.nodes), "note": k.note}
