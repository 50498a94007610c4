"""Long output on a terminal goes through a pager, as git does.

Note [Pager]
~~~~~~~~~~~~
Only when stdout is a terminal: a pipe, a file or a test's capture never sees a pager, and neither
does ``--no-pager`` (anywhere before a ``--``). The pager is ``$ATENMAP_PAGER``, else ``$PAGER``,
else ``less -FRX``; an empty value or ``cat`` means none (git's rule), and so does ``TERM=dumb``
with neither variable set. Like git, ``LESS=FRX`` is set when ``$LESS`` is not.

The command's stdout is collected while it runs (the views still see a terminal: width, colour
unless ``NO_COLOR``, hyperlinks), then printed directly when it fits the screen, else handed to
the pager. OSC-8 hyperlinks reach only a pager that shows them (less 566 or later); SGR colours
reach every pager, as with git. A pager that cannot be started prints nothing of its own: the
output goes to the terminal. Commands that run something interactive (``open``: the editor,
``trace``: the user's script, ``fetch``: progress bars) are never paged, nor are help and
completion.
"""
from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from typing import Mapping

FLAG = "--no-pager"
DEFAULT = "less -FRX"
PAGED_COMMANDS = frozenset({"chain", "ops", "where", "search", "kernel", "lines", "graph", "gdb", "sources"})
_OSC8 = re.compile(r"\x1b\]8;[^\x1b\x07]*(?:\x1b\\|\x07)")
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_SHELL_CHARS = set("|&;<>()$`*?[]#~=%{}\n")  # a command line with these runs through sh (as git's does)


def take_flag(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without ``--no-pager`` (before a ``--``), and whether it was there."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != FLAG]
    return kept + args[end:], len(kept) != end


def pager_command(env: Mapping[str, str] | None = None) -> str | None:
    """The pager to run (a shell command line), or None for no pager. See Note [Pager]."""
    env = os.environ if env is None else env
    for name in ("ATENMAP_PAGER", "PAGER"):
        if name in env:
            cmd = env[name].strip()
            return None if cmd in ("", "cat") else cmd
    return None if env.get("TERM") == "dumb" else DEFAULT


def wanted(args: list[str], stdout=None) -> bool:
    """Whether this command line's stdout should go through a pager (before ``--no-pager`` is taken)."""
    stdout = sys.stdout if stdout is None else stdout
    try:
        tty = stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    head = args[: args.index("--")] if "--" in args else args
    return (tty and bool(args) and args[0] in PAGED_COMMANDS
            and not any(a in ("-h", "--help", "-V", "--version") for a in head)
            and not any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ))


class _Collected(io.StringIO):
    """stdout while a paged command runs: a terminal to whoever asks, text kept for the pager."""

    def __init__(self, real):
        super().__init__()
        self._real = real

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._real.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._real, "encoding", None) or "utf-8"


def _shows_links(argv: list[str]) -> bool:
    """less 566+ passes OSC-8 hyperlinks through with -R; other pagers would show them raw."""
    if os.path.basename(argv[0]) != "less":
        return False
    try:
        out = subprocess.run([argv[0], "--version"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.match(r"less (\d+)", out)
    return bool(m) and int(m.group(1)) >= 566


def _rows(text: str, size: os.terminal_size) -> int:
    """How many screen rows ``text`` takes (long lines wrap)."""
    cols = max(size.columns, 1)
    plain = _SGR.sub("", _OSC8.sub("", text))
    return sum(max(1, -(-len(line) // cols)) for line in plain.split("\n"))


def _start(cmd: str, env: dict[str, str]) -> tuple[subprocess.Popen, list[str]] | None:
    """The pager process reading its stdin, or None when it cannot be started."""
    try:
        argv = ["sh", "-c", cmd] if set(cmd) & _SHELL_CHARS else shlex.split(cmd)
    except ValueError:  # unbalanced quotes: the shell says what is wrong
        argv = ["sh", "-c", cmd]
    if argv and argv[0] != "sh" and shutil.which(argv[0]) is None:
        return None
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, env=env), argv
    except OSError:
        return None


def show(text: str, real, env: Mapping[str, str] | None = None) -> None:
    """``text`` on the terminal ``real``: directly when it fits the screen, else through the pager."""
    env = dict(os.environ if env is None else env)
    cmd = pager_command(env)
    size = shutil.get_terminal_size((80, 24))
    started = _start(cmd, {**env, "LESS": env.get("LESS", "FRX"), "LV": env.get("LV", "-c")}) \
        if cmd and text and _rows(text.rstrip("\n"), size) >= size.lines else None
    if started is None:
        real.write(text)
        real.flush()
        return
    proc, argv = started
    if not _shows_links(argv):
        text = _OSC8.sub("", text)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the pager's to handle (git does the same)
    try:
        try:
            proc.stdin.write(text.encode(getattr(real, "encoding", None) or "utf-8", "replace"))
            proc.stdin.close()
        except BrokenPipeError:  # the reader quit early: no failure
            pass
        proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)


def unpaged(stream):
    """The terminal behind ``stream`` when ``stream`` is a paged command's collector, else
    ``stream``: for text shown now rather than in the pager at the end (the hand-written answer
    before torchgen's steps, Note [Generated steps later] in chain_run.py)."""
    return stream._real if isinstance(stream, _Collected) else stream


class Paging:
    """``with Paging(on):`` collects stdout and shows it at the end (see Note [Pager])."""

    def __init__(self, on: bool):
        self.on = on
        self._real = None

    def __enter__(self) -> "Paging":
        if self.on:
            self._real = sys.stdout
            sys.stdout = _Collected(self._real)
        return self

    def __exit__(self, *exc) -> None:
        if self._real is None:
            return
        collected, sys.stdout = sys.stdout, self._real
        show(collected.getvalue(), self._real)
