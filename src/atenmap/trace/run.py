"""Running the user's script (or ``-m module``) as ``python`` would, inside a trace. No torch.

The script sees ``__name__ == "__main__"``, its own ``sys.argv`` and its folder first on
``sys.path``; all three are put back afterwards, and so are the working directory (a script's
``os.chdir`` must not move ``--json OUT``) and stdout (a script that closes it must not take the
report with it). An exception it raises is caught, kept, and
shown with the user's frames only (``frames.user_traceback``): what was recorded until then is
still reported. ``SystemExit`` is the script's exit code.
"""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from dataclasses import dataclass

from atenmap.errors import AtenmapError
from atenmap.trace.frames import user_traceback


@dataclass
class Outcome:
    exit_code: int = 0
    error: BaseException | None = None
    traceback: str = ""  # the user's part of the traceback, "" when the script did not raise


class ScriptNotFound(AtenmapError):
    exit_code = 2


def check(target: str, *, module: bool = False) -> None:
    """Raise ``ScriptNotFound`` (exit 2) before anything runs when ``target`` cannot be run."""
    if not module and not os.path.isfile(target):
        raise ScriptNotFound(f"no such script: {target}")
    if module and not _module_exists(target):
        raise ScriptNotFound(f"no module named {target!r}")


def run(target: str, args: list[str], *, module: bool = False) -> Outcome:
    """Run ``target`` (a path, or a module name when ``module``) with ``args``. A process the
    script forked that comes back here ends at once with its own exit code (Note [A forked child
    of the script])."""
    check(target, module=module)
    pid = os.getpid()
    outcome = _run(target, args, module)
    if os.getpid() != pid:
        _end_child(outcome)
    return outcome


# Note [A forked child of the script]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A script that calls ``os.fork()`` and lets the child run to its end returns twice from runpy:
# the child went on into atenmap's report, wrote the JSON over the parent's and blocked at exit
# on the profiler's threads, while the parent waited for it (issue 34, item 5). What the child ran
# is not part of the trace (the profiler records the process that started it), so the child does
# nothing of atenmap's: it ends where ``python script.py`` would have, with the script's exit
# code and its traceback, through ``os._exit`` (no atexit handler of the parent's runs twice, and
# no temporary folder of the parent's is removed: tempdirs.py).


def _end_child(outcome: Outcome) -> None:
    if outcome.traceback:
        sys.stderr.write(outcome.traceback)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(outcome.exit_code & 0xFF)


def _run(target: str, args: list[str], module: bool) -> Outcome:
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    saved = {1: (sys.stdout, _dup(1)), 2: (sys.stderr, _dup(2))}
    try:
        if module:
            sys.argv = [target, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            path = os.path.abspath(target)
            sys.argv = [target, *args]
            sys.path.insert(0, os.path.dirname(path))
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return Outcome(0)
        if isinstance(code, int):
            return Outcome(code)
        print(code, file=sys.stderr)
        return Outcome(1)
    except KeyboardInterrupt as exc:  # Ctrl-C: what was recorded is reported, and the exit is the shell's 130
        return Outcome(130, exc, user_traceback(exc))
    except BaseException as exc:  # the user's script failed: keep what was recorded, show its traceback
        return Outcome(1, exc, user_traceback(exc))
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        for fd, (stream, copy) in saved.items():
            _restore(fd, stream, copy)
    return Outcome(0)


def describe(exc: BaseException) -> str:
    """``Type: message`` of the script's exception, even when its ``__str__`` raises."""
    try:
        text = str(exc)
    except Exception as inner:  # noqa: BLE001 -- the user's __str__, not atenmap's code
        text = f"<its str() raised {type(inner).__name__}>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:  # no such stream at all (started with it closed)
        return None


def _same_file(fd: int, copy: int) -> bool:
    try:
        a, b = os.fstat(fd), os.fstat(copy)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _restore(fd: int, saved, copy: int | None) -> None:
    """``sys.stdout`` (fd 1) or ``sys.stderr`` (fd 2) as it was before the script. A script that
    closed the descriptor (``os.close(2)``) gets it back from the copy taken before it ran; one
    that closed the stream (``sys.stdout.close()``) leaves a new stream on the descriptor in its
    place. Without stderr, the report's warnings and the JSON's line were lost (issue 34, item 12)."""
    name = "stdout" if fd == 1 else "stderr"
    try:
        if copy is not None and not _same_file(fd, copy):  # closed, or closed and then reused by the script
            os.dup2(copy, fd)
        if getattr(saved, "closed", False) and copy is not None:
            saved = open(fd, "w", encoding=getattr(saved, "encoding", None) or "utf-8", closefd=False)
            original = getattr(sys, f"__{name}__")
            if original is None or original.closed:
                setattr(sys, f"__{name}__", saved)
        setattr(sys, name, saved)
    finally:
        if copy is not None:
            os.close(copy)


def _module_exists(name: str) -> bool:
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)
