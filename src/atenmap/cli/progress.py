"""What the first index build shows on a terminal's stderr: one line per phase, rewritten in place.

Note [Build progress]
~~~~~~~~~~~~~~~~~~~~~
A first build parses the tree's files while the tree's own torchgen runs beside them (build.py,
Note [The cold build's critical path]); torchgen's files are parsed once it is done ("torchgen ran in 23.3 s" says so). One bar over
all of it would sit still while torchgen runs and see its total jump when torchgen's files join,
so each phase has its own line:

    atenmap: torchgen: 12 s                       (seconds so far; the time it took once done)
    atenmap: files parsed: 1200/2022              (the tree's files: the total is known at once)
    atenmap: torchgen's files parsed: 40/343      (a line of its own once torchgen is done)

The build reports ``progress(done, total, path)``; the tree's files are all stored before
torchgen's, so a total that grows starts the second parse phase. torchgen's "running torchgen
(…)" status lines start its phase; other status lines (notices) are printed above the phase
lines, broken at spaces to the terminal's width (never mid-word). A clock thread redraws the
torchgen line every half second while nothing else moves. The lines stay once the build is done.
Off a terminal the build says one line (``indexing N files…``) and nothing moves.
"""
from __future__ import annotations

import threading
import time
from typing import TextIO

from atenmap.views.terminal import wrap_words

TICK_S = 0.5
REDRAW_S = 0.05  # the parse lines are redrawn at most this often (and at their last file)


class BuildProgress:
    """``progress`` and ``status`` for ``Index.open``, drawing on ``stream`` (a terminal)."""

    def __init__(self, stream: TextIO, width: int, clock=time.monotonic):
        self.stream, self.width, self.clock = stream, max(20, width), clock
        self.lock = threading.RLock()
        self.drawn = 0  # phase lines on the screen below the cursor's line
        self.first_total: int | None = None
        self.done = self.total = 0
        self.torchgen_started: float | None = None
        self.torchgen_took: float | None = None
        self.last_draw = float("-inf")
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # ---- the build's callbacks ------------------------------------------------------------------
    def progress(self, done: int, total: int, path: str) -> None:
        with self.lock:
            if self.first_total is None:
                self.first_total = total
            if total > self.first_total and self.torchgen_started is not None and self.torchgen_took is None:
                self.torchgen_took = self.clock() - self.torchgen_started  # its files joined: it is done
            self.done, self.total = done, total
            now = self.clock()
            if done >= total or done == self.first_total or now - self.last_draw >= REDRAW_S:
                self.last_draw = now
                self._draw()

    def status(self, message: str) -> None:
        with self.lock:
            from atenmap.build import TORCHGEN_RAN  # a status line comes from a build: build.py is loaded

            if message.startswith(TORCHGEN_RAN) and self.torchgen_started is not None:
                seconds = message[len(TORCHGEN_RAN):].split()[0]
                self.torchgen_took = float(seconds) if seconds.replace(".", "", 1).isdigit() else (
                    self.clock() - self.torchgen_started)
                self._draw()
                return
            if message.startswith("running torchgen"):
                if self.torchgen_started is None:
                    self.torchgen_started = self.clock()
                    self._start_ticker()
                self._draw()
                return
            self._clear()
            for line in wrap_words(f"atenmap: {message}", self.width - 1, "  "):
                self.stream.write(line + "\n")
            self._draw()

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            if self.torchgen_started is not None and self.torchgen_took is None:
                self.torchgen_took = self.clock() - self.torchgen_started
            self._draw()

    # ---- drawing --------------------------------------------------------------------------------
    def lines(self) -> list[str]:
        out = []
        if self.torchgen_started is not None:
            took = self.torchgen_took
            out.append(f"atenmap: torchgen: {took:.1f} s" if took is not None else
                       f"atenmap: torchgen: {self.clock() - self.torchgen_started:.0f} s")
        if self.first_total is not None:
            first = self.first_total
            out.append(f"atenmap: files parsed: {min(self.done, first)}/{first}")
            if self.total > first:
                out.append(f"atenmap: torchgen's files parsed: {max(0, self.done - first)}/{self.total - first}")
        return [ln[: self.width - 1] for ln in out]

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}A\r\x1b[J")
            self.drawn = 0

    def _draw(self) -> None:
        lines = self.lines()
        text = f"\x1b[{self.drawn}A" if self.drawn else ""
        self.stream.write(text + "".join(f"\r\x1b[2K{ln}\n" for ln in lines))
        self.stream.flush()
        self.drawn = len(lines)

    def _start_ticker(self) -> None:
        def tick() -> None:
            while not self._stop.wait(TICK_S):
                with self.lock:
                    if self.torchgen_took is not None:
                        return
                    self._draw()

        self._ticker = threading.Thread(target=tick, name="atenmap-progress", daemon=True)
        self._ticker.start()


__all__ = ["BuildProgress"]
