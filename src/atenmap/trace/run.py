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
    """Run ``target`` (a path, or a module name when ``module``) with ``args``."""
    check(target, module=module)
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    saved_out, out_fd = sys.stdout, _dup(1)
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
    except BaseException as exc:  # the user's script failed: keep what was recorded, show its traceback
        return Outcome(1, exc, user_traceback(exc))
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        _restore_stdout(saved_out, out_fd)
    return Outcome(0)


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:  # no stdout at all (started with 1 closed)
        return None


def _restore_stdout(saved, fd: int | None) -> None:
    """``sys.stdout`` as it was before the script. A script that closed descriptor 1
    (``os.close(1)``) gets it back from the copy taken before it ran; one that closed the stream
    (``sys.stdout.close()``) leaves a new stream on descriptor 1 in its place."""
    try:
        if fd is not None:
            try:
                os.fstat(1)
            except OSError:
                os.dup2(fd, 1)
        if getattr(saved, "closed", False) and fd is not None:
            saved = open(1, "w", encoding=getattr(saved, "encoding", None) or "utf-8", closefd=False)
            if sys.__stdout__ is None or sys.__stdout__.closed:
                sys.__stdout__ = saved
        sys.stdout = saved
    finally:
        if fd is not None:
            os.close(fd)


def _module_exists(name: str) -> bool:
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)
