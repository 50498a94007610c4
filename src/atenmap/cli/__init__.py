"""The ``atenmap`` command: each command opens the index, calls one library verb, renders.

One module per command under ``atenmap/cli/``; each registers itself on ``common.app``.
``atenmap OP`` is short for ``atenmap chain OP``: a first argument that is not a command name is
an operator. Operators whose bare name is also a command (``index``, ``where``, ``trace``) are
reached with ``atenmap chain NAME`` or with their overload (``atenmap index.Tensor``).
"""
from __future__ import annotations

import importlib
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


__all__ = ["app", "main"]
