"""Shared pieces of the CLI: the typer app, common options, the index opener."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from atenmap.cli.complete import RootGroup  # completion of `atenmap OP`

app = typer.Typer(
    cls=RootGroup,
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Where in PyTorch's source is the kernel an operator launches? "
         "Example: atenmap add.out --key CUDA. Source order: --source, $ATENMAP_SOURCE, the checkout around the "
         "current directory, a tree fetched by `atenmap fetch` (the installed torch's version first), the bundled "
         "index of PyTorch 2.6.0 (answers with GitHub permalinks).",
)

SourceOpt = typer.Option(None, "--source", "-s", help="PyTorch source tree (else $ATENMAP_SOURCE, else the checkout around the cwd, else a tree from `atenmap fetch`, else the bundled 2.6.0 index).")
LinkOpt = typer.Option(None, "--link", metavar="github|local|none",
                       help="Locations as GitHub permalinks (hand-written steps), absolute local paths, or paths "
                            "relative to the source root. Default: github for the bundled index, else none.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")
NoCodegenOpt = typer.Option(False, "--no-codegen", help="Do not run the checkout's torchgen; chains stop where generated code begins.")
CodegenOpt = typer.Option(None, "--codegen", metavar="never|ask|always",
                          help="Whether to run the tree's own torchgen (its code): never, ask (on a terminal), always. "
                               "Default: $ATENMAP_CODEGEN, else config.toml, else yes for your own tree and no for a "
                               "fetched one.")


def codegen_setting(no_codegen: bool = False, codegen: Optional[str] = None):
    """What ``--no-codegen`` / ``--codegen MODE`` ask of build.codegen_decision: False, a mode, or
    True (follow ATENMAP_CODEGEN / config.toml)."""
    from atenmap import config
    from atenmap.errors import AtenmapError

    mode = config.codegen_mode(codegen) if codegen is not None else None
    if no_codegen and mode not in (None, "never"):
        raise AtenmapError(f"--no-codegen and --codegen {mode} contradict each other")
    return False if no_codegen else (mode or True)


def linker(chain, mode: Optional[str]):
    """The location formatter for ``--link`` (links.py); None for plain paths."""
    from atenmap.views import links

    link = links.linker(chain, mode)
    if link is not None and link.warning:
        status_line(link.warning)
    return link


def err(msg: str) -> None:
    typer.echo(f"atenmap: error: {msg}", err=True)


def progress():
    """A progress callback for index builds: a rich bar on a terminal, one line otherwise."""
    if not sys.stderr.isatty():
        started = {"done": False}

        def line(done: int, total: int, path: str) -> None:
            if not started["done"]:
                started["done"] = True
                typer.echo(f"atenmap: indexing {total} files…", err=True)
        return line, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
    state = {"task": None}

    def cb(done: int, total: int, path: str) -> None:
        if state["task"] is None:
            prog.start()
            state["task"] = prog.add_task("", total=total)
        prog.update(state["task"], completed=done, description=path.rsplit("/", 1)[-1])
    return cb, prog


def status_line(msg: str) -> None:
    typer.echo(f"atenmap: {msg}", err=True)


def open_index(source: Optional[str], no_codegen: bool = False, codegen: Optional[str] = None):
    from atenmap.api import Index

    setting = codegen_setting(no_codegen, codegen)
    cb, prog = progress()
    try:
        return Index.open(source, progress=cb, codegen=setting, status=status_line)
    finally:
        if prog is not None:
            prog.stop()


def load_chain(source: Optional[str], op: str, keys, *, no_codegen: bool = False, depth: Optional[int] = None,
               local_only: bool = False, codegen: Optional[str] = None):
    """The chain of ``op`` for ``keys``; asking only for keys the op has no kernel for is an error.
    ``local_only``: refuse the bundled index (commands that open files of the tree)."""
    from atenmap.errors import AtenmapError

    with open_index(source, no_codegen, codegen) as ix:
        if local_only and ix.source.origin == "bundled":
            raise AtenmapError("this command needs a local PyTorch tree: pass --source PATH, or get one with `atenmap fetch`")
        found = ix.lookup(op)
        if found.picked:
            status_line(lookup_note(found))
        if keys:
            check_keys(ix, keys)
        chain = ix.chain(found.operator, keys=keys, depth=depth)
    if keys and not chain.keys:
        raise AtenmapError("; ".join(chain.warnings))
    got = {kc.key.lower() for kc in chain.keys}
    missing = [k for k in keys or () if k.lower() not in got]
    if missing:  # a typo among good keys must not pass as success
        why = [w for w in chain.warnings if any(f" no {k} kernel" in w for k in missing)]
        raise AtenmapError("; ".join(why) or f"--key {missing[0]}: no chain for it")
    return chain


def lookup_note(found) -> str:
    """The note for a bare name that picked one of several overloads (Index.lookup)."""
    return (f"{found.query.strip()} means {found.operator.name} ({found.reason}); other overloads: "
            f"{', '.join(found.others)}")


def check_keys(ix, keys) -> None:
    """A --key no operator has a kernel for is a usage error (exit 2)."""
    from atenmap.errors import UsageError

    known = {k.lower() for k in ix.dispatch_keys()} | {k.lower() for k in ("CPU", "CUDA", "MPS", "XPU", "Meta")}
    bad = [k for k in keys if k.lower() not in known]
    if bad:
        raise UsageError(f"--key {bad[0]}: no such dispatch key; keys: {', '.join(ix.dispatch_keys())}")
