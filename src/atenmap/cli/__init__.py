"""The ``atenmap`` command: each command opens the index, calls one library verb, renders.

One module per command under ``atenmap/cli/``; each registers itself on ``common.app``.
``atenmap OP`` is short for ``atenmap chain OP``: a first argument that is not a command name is
an operator. Operators whose bare name is also a command (``index``, ``where``, ``trace``) are
reached with ``atenmap chain NAME`` or with their overload (``atenmap index.Tensor``).
"""
from __future__ import annotations

import errno
import importlib
import sqlite3
import sys

import typer

from atenmap.errors import AmbiguousOperator, AtenmapError
from atenmap.cli.common import app, err

# Command modules, imported for their @app.command registrations.
_COMMAND_MODULES = ["chain", "ops", "index", "graph", "lines", "open", "search", "gdb", "trace", "kernel", "where",
                    "fetch", "sources"]
for _m in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_m}")


def command_names() -> set[str]:
    return {c.name for c in app.registered_commands if c.name}


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if first is not None and first not in command_names() and args[:1] != ["--help"]:
        args.insert(args.index(first), "chain")
    try:
        app(args=args, prog_name="atenmap", standalone_mode=True)
    except AmbiguousOperator as exc:
        err(str(exc).split(";")[0] + ":")
        for c in exc.candidates:
            typer.echo(f"  {c}", err=True)
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


def _os_error(exc: OSError) -> str:
    """``OSError`` in one line: what failed, on which path, and what to do for the usual ones."""
    what = exc.strerror or str(exc)
    where = f": {exc.filename}" if exc.filename is not None else ""
    hint = {errno.ENOSPC: " (free some space, or set ATENMAP_CACHE to another disk)",
            errno.EACCES: " (check the permissions, or set ATENMAP_CACHE to a folder of yours)",
            errno.EROFS: " (set ATENMAP_CACHE to a writable folder)"}.get(exc.errno, "")
    return f"{what}{where}{hint}"


__all__ = ["app", "main"]
