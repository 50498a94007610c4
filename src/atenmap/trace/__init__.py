"""``atenmap.trace``: the user's call stack at every kernel launch, joined to the static chain.

    import atenmap
    with atenmap.trace() as t:          # or atenmap.trace(key="CUDA")
        model(x)
    t.report()                          # one line per kernel launch (per op on CPU), by source line
    t.report(source="~/pytorch").to_dict()
    t.write_chrome("trace.json")        # the profiler's chrome trace, with atenmap.* args per event

Recording (``record.py``, the only module importing torch) is separate from joining (``join.py``:
recorded calls + ``Index`` chains) and rendering (``report.py``, ``chrome.py``); ``t.recording``
is plain data (``events.Recording``, JSON round-trip) that can be joined elsewhere.

Note [A callable package]
~~~~~~~~~~~~~~~~~~~~~~~~~
``atenmap.trace`` is both this package and the function users call. Importing a submodule sets
the parent package's attribute to the module, so a function of that name would be shadowed as
soon as anything imports ``atenmap.trace.*``. The module's class is therefore swapped for a
``ModuleType`` subclass whose ``__call__`` is ``trace``: ``atenmap.trace(...)`` works whichever
way the name was reached.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import types
import warnings
from pathlib import Path

from atenmap.errors import AtenmapError
from atenmap.trace.events import Call, Frame, Kernel, Recording
from atenmap.trace.join import Entry, Joiner, version_warnings
from atenmap.trace.outputs import writable
from atenmap.trace.report import Report, json_text


_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "mps": "MPS", "xpu": "XPU", "hip": "HIP"}


class TorchMissing(AtenmapError):
    exit_code = 2


def require_torch() -> None:
    """Raise ``TorchMissing`` (one line, exit 2 in the CLI) when torch cannot be imported here."""
    if importlib.util.find_spec("torch") is None:
        raise TorchMissing(f"torch is not installed in this Python ({sys.executable}); "
                           "atenmap trace runs your code under PyTorch's own profiler: install torch here")


class Trace:
    """A traced region. Use as a context manager; afterwards ``recording`` holds what ran."""

    def __init__(self, *, key: str | None = None, profile: bool | None = None, chrome: bool = False,
                 source: str | os.PathLike | None = None, dispatch: bool = False):
        self.key = _KEYS.get(key.lower(), key) if key else None
        self.dispatch = dispatch
        self.torch_warnings: list[str] = []
        self.source = source
        self.recording: Recording | None = None
        self.warm_up_s = 0.0
        self._profile = profile
        self._chrome = chrome
        self._recorder = None
        self._index = None

    # ---- recording --------------------------------------------------------------------------
    def __enter__(self) -> "Trace":
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self) -> "Trace":
        require_torch()
        with warnings.catch_warnings(record=True) as caught:  # torch's own, at import: see _torch_warned
            warnings.simplefilter("always")
            from atenmap.trace import profrec, record
        self._torch_warned(caught)
        cuda = None if self.key is None else self.key not in ("CPU", "Meta")
        root = sys._getframe(1)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        while root is not None and root.f_code.co_filename.startswith(here):  # the caller outside atenmap
            root = root.f_back
        if self.dispatch:  # the opt-in Python dispatch mode: see docs/trace.md, "--dispatch-mode"
            self._recorder = record.Recorder(profile=self._profile, cuda=cuda, chrome=self._chrome).start(root)
        else:
            self._recorder = profrec.ProfRecorder(cuda=cuda, chrome=self._chrome).start(root)
        self.warm_up_s = self._recorder.warm_up_s
        return self

    def _torch_warned(self, caught) -> None:
        """Warnings torch raised inside atenmap's own work (importing torch, starting and reading the
        profiler) are kept once each, for the report's warnings (the CLI prints them on stderr,
        prefixed), instead of torch's multi-line form in the middle of the output."""
        for w in caught:
            text = str(w.message).splitlines()[0] if str(w.message) else ""
            msg = f"torch warned: {w.category.__name__}: {text}"
            if msg not in self.torch_warnings:
                self.torch_warnings.append(msg)

    def stop(self) -> Recording:
        if self._recorder is None:
            raise AtenmapError("trace was not started")
        if self.recording is None:
            self.recording = self._recorder.stop()
            if self._recorder.lost:
                self.torch_warnings.append(self._recorder.lost)
            for w in getattr(self._recorder, "warnings", ()):
                if f"torch warned: {w}" not in self.torch_warnings:
                    self.torch_warnings.append(f"torch warned: {w}")
        return self.recording

    # ---- joining and output -----------------------------------------------------------------
    def index(self, source: str | os.PathLike | None = None):
        """The ``Index`` the report joins with (``--source``, else ATENMAP_SOURCE, else the checkout
        around the cwd); opened once, built on first use."""
        if self._index is None or source is not None:
            from atenmap.api import Index

            self._index = Index.open(source if source is not None else self.source)
        return self._index

    def entries(self, *, index=None, source: str | os.PathLike | None = None) -> list[Entry]:
        return Joiner(index if index is not None else self.index(source)).entries(self._recorded())

    def report(self, source: str | os.PathLike | None = None, *, index=None, key: str | None = None,
               base: str | None = None) -> Report:
        ix = index if index is not None else self.index(source)
        rec = self._recorded()
        warnings = version_warnings(ix.source, rec.torch_version, rec.torch_git) if ix is not None else []
        warnings += self.torch_warnings
        key = (_KEYS.get(key.lower(), key) if key else None) if key is not None else self.key
        if key and not any(c.key == key for c in rec.calls):
            warnings.append(no_work_message(rec, key))
        return Report(rec, Joiner(ix).entries(rec), ix.source if ix is not None else None, warnings, key, base)

    def summary(self, *, index=None, source: str | os.PathLike | None = None):
        """The run as one table (``trace.summary.Summary``: a row per kernel, op, ATen line and user
        line; on a run with no device work, per host op and CPU time), as ``kernel --from-trace`` gives it."""
        from atenmap.trace.fromtrace import recording_summary

        return recording_summary(index if index is not None else self.index(source), self._recorded())

    def write_json(self, path: str | os.PathLike, report: Report | None = None) -> Path:
        p = writable(path)
        report = report or self.report()
        p.write_text(json_text(report.to_dict()))
        return p

    def write_chrome(self, path: str | os.PathLike, report: Report | None = None) -> int:
        """Export the profiler's chrome trace to ``path`` with source locations added to each kernel
        and op event's ``args``; returns how many events were annotated."""
        from atenmap.trace.chrome import annotate

        prof = self._recorder.prof if self._recorder is not None else None
        if prof is None:
            raise AtenmapError("no profiler ran in this trace: use atenmap.trace(chrome=True) for a chrome trace")
        writable(path)
        report = report or self.report()
        prof.export_chrome_trace(str(path))
        return annotate(path, report.entries, self._recorded().op_events, report.base, shapes_asked=self.dispatch)

    def close(self) -> None:
        """Remove the recording's temporary files (the profiler's chrome sessions, which
        ``write_chrome`` reads): at once, instead of at exit (tempdirs.py)."""
        from atenmap.trace.sessions import Sessions

        prof = self._recorder.prof if self._recorder is not None else None
        if isinstance(prof, Sessions):
            prof.close()

    def _recorded(self) -> Recording:
        if self.recording is None:
            raise AtenmapError("the trace is still running: call report() after the `with` block")
        return self.recording


def no_work_message(rec: Recording, key: str) -> str:
    msg = f"nothing ran on {key}: the traced code made {len(rec.calls)} aten calls, none on a {key} tensor"
    if key in ("CUDA", "HIP") and not rec.cuda_available:
        msg += f" (this torch {rec.torch_version} has no usable CUDA device)"
    return msg


def trace(*, key: str | None = None, profile: bool | None = None, chrome: bool = False,
          source: str | os.PathLike | None = None, dispatch: bool = False) -> Trace:
    """Trace a region: ``with atenmap.trace() as t: model(x)`` then ``t.report()``.

    ``key``: CPU or CUDA: the report keeps calls that ran there (CUDA also turns on the profiler's
    CUDA activity). ``profile``: run torch.profiler (default: where CUDA is available, or ``chrome``).
    ``source``: the PyTorch tree to join with (else ATENMAP_SOURCE, else the checkout around the cwd).
    ``dispatch``: record with a Python dispatch mode on every aten call instead of the profiler alone
    (slower; see docs/trace.md for what it adds). ``profile`` only applies there: the default
    recorder is the profiler.
    """
    return Trace(key=key, profile=profile, chrome=chrome, source=source, dispatch=dispatch)


class _CallableModule(types.ModuleType):
    """See Note [A callable package]."""

    def __call__(self, *args, **kwargs) -> Trace:
        return trace(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["Call", "Entry", "Frame", "Kernel", "Recording", "Report", "Trace", "TorchMissing", "require_torch", "trace"]
