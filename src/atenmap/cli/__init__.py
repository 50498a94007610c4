"""The ``atenmap`` command: each command opens the index, calls one library verb, renders.

One module per command under ``atenmap/cli/``; each registers itself on ``common.app``.
``atenmap OP`` is short for ``atenmap chain OP``: a first argument that is not a command name is
an operator. Operators whose bare name is also a command (``index``, ``where``, ``trace``) are
reached with ``atenmap chain NAME`` or with their overload (``atenmap index.Tensor``).
"""
from __future__ import annotations

import errno
import gc
import importlib
import sqlite3
import os
import sys

from atenmap.config import printable
from atenmap.errors import AmbiguousOperator, AtenmapError
from atenmap.cli.plain import echo, err, version_text  # noqa: F401 (version_text: part of this module's API)

# Command modules, imported for their @app.command registrations (when typer is needed: a plain
# `atenmap OP` is answered by quick.py without it).
from atenmap.cli.quick import COMMAND_MODULES as _COMMAND_MODULES  # quick.py reads them too


def typer_app():
    """The typer app with every command registered (imports typer, click and the command modules)."""
    import typer.core

    # typer 0.20 escapes option help's "[required]" / "[default: ...]" for rich even when rich markup is
    # off (rich_markup_mode=None), printing a literal "\[required]"; with markup off that escape is
    # all this flag still controls in typer.core.
    typer.core.HAS_RICH = False
    from atenmap.cli.common import app

    for m in _COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{m}")
    return app


def __getattr__(name: str):
    if name == "app":  # `from atenmap.cli import app` (tests, typer.testing.CliRunner)
        return typer_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def command_names() -> set[str]:
    return {c.name for c in typer_app().registered_commands if c.name}


def _value_options() -> set[str]:
    """Option names of any command that take a value (``--key CUDA``), to find the first argument."""
    import click
    import typer.main

    group = typer.main.get_command(typer_app())
    return {name for cmd in group.commands.values() for p in cmd.params
            if isinstance(p, click.Option) and not p.is_flag and not p.count for name in p.opts}


def command_line(args: list[str]) -> list[str]:
    """``args`` with the command first: ``atenmap OP`` is ``atenmap chain OP``, and options may come
    before the command or operator (``atenmap --key CUDA add.out``, ``atenmap -s TREE ops``)."""
    if not args or args[0] in command_names() or any(a in ("-h", "--help", "-V", "--version") for a in args[:1]):
        return args
    takes_value = _value_options()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return ["chain", *args]
        if not a.startswith("-") or a == "-":
            break
        i += 2 if a in takes_value else 1
    else:
        return ["chain", *args] if args and not any(a in ("-h", "--help", "-V", "--version") for a in args) else args
    if args[i] in command_names():
        return [args[i], *args[:i], *args[i + 1:]]
    return ["chain", *args]


# Note [Start-up budget]
# ~~~~~~~~~~~~~~~~~~~~~~
# A warm `atenmap OP` (index built, nothing changed) is a new process every time, and issue 24 gives
# it 100 ms of wall time, interpreter start included. Where that goes (2-core box, bytecode cached,
# mul.out --key CUDA on 2.6.0): the interpreter and site ~15 ms; imports ~55 ms (the stdlib the
# code needs, sqlite3, re, pathlib, json, dataclasses with inspect, ~20 ms; model.py's frozen
# dataclasses ~7 ms, each compiles its generated methods; the resolvers and views ~20 ms); opening
# the index with its stat-only freshness proof ~8 ms (Note [Cheap freshness] in freshness.py); the
# chain itself ~20 ms; the garbage collector ~10 ms of it all. What keeps it there:
#
# - no typer or click for a plain chain query (quick.py), nothing only builds use (a test checks
#   the modules a warm query loads): build.py itself is not loaded, a query's questions to the index
#   (its path, is_fresh, the codegen decision, whether torchgen is pending, operator records) are in
#   indexstate.py (~3 ms), also on a terminal, where the progress display is set up;
# - the two whole-index answers every chain reads (the operator names in yaml order, the
#   DispatchStub names) come from indexes that hold them alone (operators_line, facts_stub in
#   store/indexes.sql), not from a scan of the rows: ~3-5 ms of a fresh process;
# - the records of the other verbs (16 dataclasses, ~7 ms) are in model_answers.py, loaded when
#   first asked for; regexes only kernel-name questions use are compiled on first use
#   (resolve/libraries.py);
# - the collector: loading the modules leaves ~14,000 objects it tracks (classes, functions, dicts),
#   all living until exit; its passes over them while they load (and the full one at exit) free
#   nothing. ``program()``, the
#   process's entry point, pauses it; once the command's modules are loaded (``imports_done``:
#   quick.py after the chain's modules, ``_run`` after typer's app) what they made is frozen out of
#   later collections and the collector resumes, so a build in the same process collects as ever.
#   ``main()`` called inside another program (tests, a script of the user's) leaves it alone.
#
# Without a bytecode cache (PYTHONDONTWRITEBYTECODE=1, or a checkout whose __pycache__ cannot be
# written) every run compiles ~9,000 lines of atenmap first: 60-90 ms more (build.py alone ~10 ms,
# for the few functions a query uses). pip compiles the bytecode when it installs the wheel; the
# target is for that case, and bench/bench_speed.py's warm rows measure both (--warm-only).
_STARTING = [False]  # program() paused the collector until imports_done()


def program() -> None:
    """The process's entry point (the ``atenmap`` script, ``python -m atenmap``): ``main()``
    with the collector paused while its modules load. See Note [Start-up budget]."""
    gc.disable()
    _STARTING[0] = True
    main()


def imports_done() -> None:
    """The command's modules are loaded: when ``program()`` paused the collector, freeze what
    they made out of later collections and resume it (Note [Start-up budget]); else nothing."""
    if _STARTING[0]:
        _STARTING[0] = False
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None, *, quick: bool = True) -> None:
    """``quick=False``: every command line through typer, also a plain ``atenmap OP``. Long output on
    a terminal goes through a pager (Note [Pager] in pager.py); pipes never import it."""
    raw = list(sys.argv[1:] if argv is None else argv)
    if _PAGER_FLAG not in raw and not _stdout_is_a_terminal():
        _run(raw, quick)
        return
    from atenmap.cli import pager

    raw, no_pager = pager.take_flag(raw)
    with pager.Paging(not no_pager and _paged(raw, quick)):
        _run(raw, quick)


_PAGER_FLAG = "--no-pager"  # pager.FLAG, without importing the pager on the everyday (piped) path


def _stdout_is_a_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _paged(raw: list[str], quick: bool) -> bool:
    from atenmap.cli import pager
    from atenmap.cli import quick as _quick

    if not _stdout_is_a_terminal():
        return False
    args = ["chain", *raw] if quick and _quick.chain_arguments(raw) is not None else command_line(raw)
    return pager.wanted(args)


def _run(raw: list[str], quick: bool) -> None:
    try:
        from atenmap.cli import quick as _quick

        if quick and _quick.run(raw, imports_done):  # a plain `atenmap OP ...`: answered without typer
            return
        app = typer_app()
        imports_done()
        _typer(app, command_line(raw))
    except SystemExit as exc:
        # click answers a closed stdout (`atenmap ops | head -1`) with exit 1 after quieting the
        # streams; a reader that has read enough is no failure.
        if exc.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):  # click quieted a closed pipe
            sys.exit(0)
        raise
    except BrokenPipeError:  # written outside click's guard: quiet the flush at exit (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except AmbiguousOperator as exc:
        err(str(exc).split(";")[0] + ":")
        for c in exc.candidates:
            echo(f"  {printable(c)}", err=True)
        sys.exit(exc.exit_code)
    except AtenmapError as exc:
        err(str(exc))
        sys.exit(exc.exit_code)
    except UnicodeError:
        err("an argument is not valid UTF-8 text")
        sys.exit(2)
    except sqlite3.DatabaseError as exc:  # OperationalError "database or disk is full", "malformed", ...
        text = str(exc)
        if "full" in text:
            err(f"the disk is full: {text} (free some space, or set ATENMAP_CACHE to another disk)")
        elif "malformed" in text or "not a database" in text:
            err(f"the index is damaged: {text}; rebuild it with `atenmap index --force`")
        else:
            err(f"index database: {text}")
        sys.exit(1)
    except OSError as exc:  # an environment fault (disk full, no permission, read-only cache), not a bug
        err(_os_error(exc))
        sys.exit(1)


# Note [Usage errors in one line]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# click shows a usage error in four lines (`Usage: atenmap chain [OPTIONS] OP`, `Try 'atenmap
# chain --help' for help.`, a blank line, `Error: No such option '--bogus'.`); every other error
# of atenmap is one `atenmap: error: …` line on stderr. typer runs without click's standalone
# mode, so its errors come here as exceptions and are said in one line, with the same exit
# codes (2 for usage, click's own for the rest, 130 for Ctrl-C, which typer turns into an exit
# code). No command returns a value: what typer returns is an exit code or None.
def _typer(app, args: list[str]) -> None:
    import click

    try:
        code = app(args=args, prog_name="atenmap", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `atenmap` alone: the help as lines, not one escaped line
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "atenmap"
        err(f"{_lower_first(exc.format_message()).rstrip('.')} (see '{where} --help')")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        err(_lower_first(exc.format_message()))
        sys.exit(exc.exit_code)
    except click.Abort:  # end of input at a prompt
        err("aborted")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)  # as click's standalone mode ends: always by SystemExit


def _lower_first(text: str) -> str:
    """click's "No such option …" as atenmap's errors read ("no such option …"); a name stays."""
    return text[:1].lower() + text[1:] if text[:2].istitle() and text[1:2].islower() else text


def _os_error(exc: OSError) -> str:
    """``OSError`` in one line: what failed, on which path, and what to do for the usual ones."""
    what = exc.strerror or str(exc)
    where = f": {exc.filename}" if exc.filename is not None else ""
    hint = {errno.ENOSPC: " (free some space, or set ATENMAP_CACHE to another disk)",
            errno.EACCES: " (check the permissions, or set ATENMAP_CACHE to a folder of yours)",
            errno.EROFS: " (set ATENMAP_CACHE to a writable folder)"}.get(exc.errno, "")
    return f"{what}{where}{hint}"


__all__ = ["app", "main", "program", "typer_app"]
