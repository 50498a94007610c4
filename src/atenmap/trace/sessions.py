"""One recording as a row of ``torch.profiler`` sessions, with gaps where torch.compile compiles.

Note [No recording while compiling]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
With ``with_stack=True`` the profiler's Python tracer records every Python call, and compiling is
millions of them (dynamo tracing the bytecode, AOTAutograd, Inductor's lowering and code
generation, importing torch._dynamo and torch._inductor): 3.5 min on the H200 for one attention
block, over 10 GB on the 2-core CPU machine, all of it dropped by the join afterwards (Note
[Compiling is not running] in assemble.py). ``profile.toggle_collection_dynamic`` stops op events
only; the Python tracer goes on. So the profiler is *stopped* when compiling starts and a new
session is started when it ends (trace/inductor.py says when); each session's events are read as
it ends (Note [A session is read when it ends]) and, at the trace's stop, joined in order into the
same Recording. A session started in the middle of the program sees
the frames then open as calls that began at its start, so the stacks above later ops are whole.
Correlation ids go on across sessions (torch numbers ops per process), so a kernel's op and the
chrome trace's ``External id`` stay unique; ``export_chrome_trace`` writes the sessions' events as
one trace. Starting or stopping a session costs about a millisecond on the CPU.
"""
from __future__ import annotations

import json
import os
import threading
import warnings
from typing import Callable

from atenmap.errors import AtenmapError
from atenmap.tempdirs import TempFolder


class Sessions:
    """``make()`` builds one ``torch.profiler.profile``; ``pause``/``resume`` nest (a compile inside
    a compile pauses once). ``done`` holds what ``read`` made of each finished session, oldest first. ``chrome``: write
    each session's chrome trace as it ends. ``read(profile)`` turns a finished session into what
    ``done`` keeps (Note [A session is read when it ends])."""

    def __init__(self, make: Callable[[], object], read: Callable[[object], object], chrome: bool = False):
        self._make = make
        self._read = read
        self._chrome = chrome
        self._folder = None  # a tempdirs.TempFolder, made for the first chrome trace
        self._traces: list[str] = []  # the sessions' chrome traces, oldest first
        self.done: list = []  # what ``read`` made of each finished session, oldest first
        self.live = None
        self.gaps = 0  # how many times recording was paused (compilations left out)
        self.warnings: list = []  # warnings caught while starting or stopping a session
        self._depth = 0
        self._restart = False  # the outermost pause stopped a live session
        self._lock = threading.Lock()

    def start(self) -> None:
        self.live = self._make()
        self._quiet(self.live.__enter__)

    def pause(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1 and self.live is not None:
                live, self.live = self.live, None
                self._end(live)
                self.gaps += 1
                self._restart = True

    def resume(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)
            if self._depth == 0 and self._restart:
                self._restart = False
                self.start()

    def stop(self) -> None:
        with self._lock:
            self._restart = False
            if self.live is not None:
                live, self.live = self.live, None
                self._end(live)

    def _quiet(self, fn) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        # torch.profiler's prepare_trace warns that a cycle's events are cleared at its end (seen
        # with torch 2.11 on the H200): each session here is read before, so it says nothing
        self.warnings.extend(w for w in caught if "clears events at the end of each cycle" not in str(w.message))

    def _end(self, live) -> None:
        """Stop a session, read it, write its chrome trace, and let it go, all before another one
        starts: See Note [A session is read when it ends]."""
        self._quiet(lambda: live.__exit__(None, None, None))
        self._quiet(lambda: self.done.append(self._read(live)))
        if self._chrome:
            if self._folder is None:  # removed by close(), at exit, or by the next run: Note [Temporary folders of killed runs]
                self._folder = TempFolder("atenmap-chrome-")
            path = os.path.join(self._folder.path, f"{len(self._traces)}.json")
            self._quiet(lambda: live.export_chrome_trace(path))
            self._traces.append(path)

    # Note [A session is read when it ends]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Kineto reuses its trace buffers in the next session. With torch 2.13, a finished session kept
    # past the start of the next one could not be used or even freed safely: exporting its chrome
    # trace afterwards failed (std::bad_alloc) or crashed, and freeing it after a later session had
    # run crashed in the garbage collector. So each session is read (``read``: its event tree and
    # events, into plain records), its chrome trace is written when one is asked for (into a
    # temporary folder; ``export_chrome_trace`` joins them), and the profiler object is dropped,
    # all before the next session starts. Reading at the end of each session also reads names
    # while the code objects they point into are alive (Note [Code objects outlive the recording]).

    def export_chrome_trace(self, path: str) -> None:
        """The sessions' chrome traces as one: the first one's header, every session's events (times
        moved to the first one's ``baseTimeNanoseconds`` where a later one has another)."""
        if not self._traces:
            raise AtenmapError("no chrome trace was recorded: use atenmap.trace(chrome=True) for a chrome trace")
        merged = None
        for tmp in self._traces:
            with open(tmp, encoding="utf-8") as f:
                data = json.load(f)
            if merged is None:
                merged = data
                continue
            shift = (data.get("baseTimeNanoseconds", 0) - merged.get("baseTimeNanoseconds", 0)) / 1000.0
            for e in data.get("traceEvents", ()):
                if shift and isinstance(e.get("ts"), (int, float)):
                    e["ts"] += shift
                merged["traceEvents"].append(e)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(merged, f)

    def close(self) -> None:
        """Remove the sessions' chrome traces."""
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
            self._traces = []

    def __del__(self) -> None:
        self.close()
