"""Shared pieces of the CLI: the typer app and the common options. The helpers that need no typer
(the index opener, notes, key checks) are in plain.py and re-exported here."""
from __future__ import annotations

import typer

from atenmap.cli.complete import RootGroup  # completion of `atenmap OP`
from atenmap.cli.plain import (check_keys, codegen_setting, echo, echo_text, err, linker, load_chain, lookup_note,  # noqa: F401
                               open_index, progress, status_line, version_text)

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



def _version(value: bool) -> None:
    if value:
        echo(version_text())
        raise typer.Exit()


@app.callback(context_settings={"help_option_names": ["-h", "--help"]})
def _root(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_version,
                                       help="Print atenmap's, Python's and tree-sitter's versions and exit."),
          no_pager: bool = typer.Option(False, "--no-pager", help="Print long output on the terminal instead of through "
                                        "$ATENMAP_PAGER, $PAGER or less -FRX (any command, any position; see cli/pager.py).")
          ) -> None:
    pass  # --no-pager is taken out of the command line by cli.main() before click sees it


SourceOpt = typer.Option(None, "--source", "-s", help="PyTorch source tree (else $ATENMAP_SOURCE, else the checkout around the cwd, else a tree from `atenmap fetch`, else the bundled 2.6.0 index).")
LinkOpt = typer.Option(None, "--link", metavar="github|local|none",
                       help="Locations as GitHub permalinks (hand-written steps), absolute local paths, or paths "
                            "relative to the source root. Default: github for the bundled index, else none.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")
NoCodegenOpt = typer.Option(False, "--no-codegen", help="Do not run the checkout's torchgen; chains stop where generated code begins.")
CodegenOpt = typer.Option(None, "--codegen", metavar="never|ask|always",
                          help="Whether to run the tree's own torchgen (its code): never, ask (on a terminal), always. "
                               "Default: $ATENMAP_CODEGEN, else config.toml, else yes (your own tree, or one "
                               "`atenmap fetch` got as you asked).")

