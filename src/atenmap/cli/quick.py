"""`atenmap OP [options]` without typer: the everyday query pays neither typer's nor click's import
(about 60 ms of a 0.1 s answer). Only plain command lines are read here: the chain command's own
options, each given once as ``--opt VALUE``, ``--opt=VALUE`` or a flag. Anything else (help,
another command, an unknown or malformed option, shell completion) is left to typer, which then
answers exactly as before. ``CHAIN_OPTIONS`` must name chain.py's options (tests/test_cli.py
checks it), and both paths end in chain_run.show_chain.
"""
from __future__ import annotations

import os
from typing import Callable

# one module per command, named as it (cli/__init__.py registers them with typer)
COMMAND_MODULES = ["chain", "ops", "index", "graph", "lines", "open", "search", "gdb", "trace", "kernel", "where",
                   "fetch", "sources", "mcp", "show"]

# option -> (parameter, takes a value)
CHAIN_OPTIONS = {
    "--key": ("key", True), "-k": ("key", True), "--depth": ("depth", True), "--no-expand": ("no_expand", False),
    "--source": ("source", True), "-s": ("source", True), "--no-codegen": ("no_codegen", False),
    "--codegen": ("codegen", True), "--json": ("as_json", False), "--format": ("fmt", True), "-f": ("fmt", True),
    "--link": ("link", True), "--wide": ("wide", False), "-w": ("wide", False), "--why": ("why", False),
    "--backward": ("backward", False), "--tree": ("tree", False), "--runs": ("runs", False),
    "--compile": ("compile_", False), "--dtype": ("dtype", True), "--shape": ("shape", True),
    "--example": ("example", True), "--platform": ("platform", True),
}
MAX_DEPTH = 30  # chain.py's --depth max
# What a chain answer loads (the command, the text view, the Index, the resolvers): loaded before
# the collector resumes (Note [Start-up budget] in cli/__init__.py). One missing here costs only time.
CHAIN_MODULES = ("atenmap.cli.chain_run", "atenmap.views.text", "atenmap.api", "atenmap.freshness",
                 "atenmap.extract.inductor_stamp", "atenmap.resolve.names", "atenmap.resolve.chain",
                 "atenmap.resolve.runs")  # tests/test_cli.py checks a warm chain loads nothing after them


def chain_arguments(args: list[str]) -> dict | None:
    """The chain command's parameters when ``args`` is a plain chain query, else None (typer's turn)."""
    if os.environ.get("_ATENMAP_COMPLETE"):  # typer's shell completion
        return None
    commands = COMMAND_MODULES

    explicit = args[:1] == ["chain"]  # `atenmap chain index`: an operator named like a command
    if explicit:
        args = args[1:]
    params: dict = {"op": None, "key": None, "depth": 8, "no_expand": False, "source": None, "no_codegen": False,
                    "codegen": None, "as_json": False, "fmt": "text", "link": None, "wide": False,
                    "why": False, "backward": False, "tree": False, "runs": False,
                    "compile_": False, "dtype": None, "shape": None, "example": None, "platform": "cuda"}
    i = 0
    while i < len(args):
        a = args[i]
        if not _ok(a):  # typer's path says what is wrong with it
            return None
        if not a.startswith("-") or a == "-":
            if params["op"] is not None or (a in commands and not explicit):
                return None
            params["op"] = a
            i += 1
            continue
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        spec = CHAIN_OPTIONS.get(name)
        if spec is None:
            return None
        param, takes_value = spec
        if not takes_value:
            if eq:
                return None
            params[param] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        i += 1
        if value.startswith("-") and value != "-":
            return None
        if param == "key":
            params["key"] = [*(params["key"] or ()), value]
        elif param == "depth":
            if not value.isdigit() or not 1 <= int(value) <= MAX_DEPTH:
                return None
            params["depth"] = int(value)
        else:  # given twice: the last wins, as in click
            params[param] = value
    return params if params["op"] is not None else None


def _ok(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def run(args: list[str], loaded: Callable[[], None]) -> bool:
    """Answer ``args`` if it is a plain chain query (True), else leave it to typer (False).
    ``loaded``: called once the chain's modules are imported (cli.imports_done, passed by the caller:
    quick.py never imports the package above it)."""
    import sys

    params = chain_arguments(args)
    if params is None:
        return False
    import importlib

    for name in CHAIN_MODULES:
        importlib.import_module(name)
    loaded()
    from atenmap.cli.chain_run import show_chain

    try:
        show_chain(**params)
    except KeyboardInterrupt:  # what click prints
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)
    sys.stdout.flush()  # a closed pipe shows here, inside main()'s guard
    return True
