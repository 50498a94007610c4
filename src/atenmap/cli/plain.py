"""What the commands share that needs no typer: writing lines, notes on stderr, the index opener,
key checks. ``atenmap OP`` runs on these alone (cli/quick.py), without importing typer or click;
common.py and output.py re-export them for the typer commands."""
from __future__ import annotations

import os
import sys
from typing import Optional

from atenmap.errors import SourceNotFound, UsageError
from atenmap.views.terminal import Terminal

FORMATS = ("text", "json", "lines")


def echo(text: str = "", err: bool = False) -> None:
    """One line to stdout (or stderr), flushed: what ``typer.echo`` does for text. Its ANSI
    stripping never applies: the views colour only a terminal (Note [Terminal output])."""
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{text}\n")
    stream.flush()


def version_text() -> str:
    """``atenmap --version``: atenmap's, Python's and tree-sitter's versions."""
    from importlib.metadata import PackageNotFoundError, version

    from atenmap import __version__

    try:
        ts = version("tree-sitter")
    except PackageNotFoundError:
        ts = "not installed"
    py = sys.version.split()[0]
    return f"atenmap {__version__} (Python {py}, tree-sitter {ts})"


def err(msg: str) -> None:
    from atenmap.config import printable

    echo(f"atenmap: error: {printable(msg)}", err=True)  # a path or yaml string in it cannot forge lines


def status_line(msg: str) -> None:
    from atenmap.config import printable

    echo(f"atenmap: {printable(msg)}", err=True)


note = status_line


def warn(msg: str) -> None:
    from atenmap.config import printable

    echo(f"atenmap: warning: {printable(msg)}", err=True)


def echo_text(text: str, err: bool = False) -> None:
    """``text``'s lines, each with its control characters escaped (kernel names from a trace, a
    tree's file names: nothing the input holds reaches the terminal as an escape)."""
    from atenmap.config import printable

    echo("\n".join(printable(line) for line in text.split("\n")), err=err)


def more(total: int, shown: int) -> None:
    """The "N more" line after a list cut by ``--limit``."""
    if total > shown:
        note(f"{total - shown} more; use --limit 0 to see all")


def terminal(wide: bool = False) -> Terminal:
    """Width, colour and hyperlinks for stdout (see Note [Terminal output] in views/terminal.py)."""
    return Terminal.detect(sys.stdout, wide=wide)


def output_format(fmt: str, as_json: bool) -> str:
    """``--format`` with ``--json``: one of FORMATS; a bad or contradicting choice is a usage error."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose text, json or lines")
    if as_json and fmt not in ("text", "json"):
        raise UsageError(f"--json and --format {fmt} contradict each other: give one")
    return "json" if as_json else fmt


def codegen_setting(no_codegen: bool = False, codegen: Optional[str] = None):
    """What ``--no-codegen`` / ``--codegen MODE`` ask of build.codegen_decision: False, a mode, or
    True (follow ATENMAP_CODEGEN / config.toml)."""
    from atenmap import config
    from atenmap.errors import AtenmapError
    from atenmap.indexstate import CodegenDecision

    if isinstance(codegen, CodegenDecision):  # already decided (chain_run._torchgen_first): as it is
        return codegen
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


def progress():
    """``(progress, prog)`` for an index build: on a terminal ``prog`` is a BuildProgress (one line
    per phase; its ``status`` takes the build's status lines, ``stop`` ends it; Note [Build
    progress]), else None and the callback says one line."""
    if not sys.stderr.isatty():
        started = {"done": False}

        def line(done: int, total: int, path: str) -> None:
            if not started["done"]:
                started["done"] = True
                echo(f"atenmap: indexing {total} files…", err=True)
        return line, None
    from atenmap.cli.progress import BuildProgress

    prog = BuildProgress(sys.stderr, _stderr_width())
    return prog.progress, prog


def _stderr_width() -> int:
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        return 80


def byte_progress(label: str):
    """(callback(done_bytes, total_bytes), finish()) for reading a large file: a rich bar on a
    terminal only; nothing otherwise."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    prog = Progress(TextColumn(label), BarColumn(), DownloadColumn(), console=Console(stderr=True), transient=True)
    state = {"task": None}

    def cb(done: int, total: int) -> None:
        if state["task"] is None:
            prog.start()
            state["task"] = prog.add_task("", total=total)
        prog.update(state["task"], completed=done)

    return cb, lambda: prog.stop() if state["task"] is not None else None


def open_index(source: Optional[str], no_codegen: bool = False, codegen: Optional[str] = None,
               compile_facts: bool = False):
    from atenmap.api import Index

    setting = codegen_setting(no_codegen, codegen)
    cb, prog = progress()
    try:
        return Index.open(source, progress=cb, codegen=setting, status=prog.status if prog else status_line,
                          compile_facts=compile_facts)
    finally:
        if prog is not None:
            prog.stop()


def load_chain(source: Optional[str], op: str, keys, *, no_codegen: bool = False, depth: Optional[int] = None,
               local_only: bool = False, codegen: Optional[str] = None, runs: bool = False):
    """The chain of ``op`` for ``keys``; asking only for keys the op has no kernel for is an error.
    ``local_only``: refuse the bundled index (commands that open files of the tree); ``runs``: also
    what runs (``open``'s first run)."""
    from atenmap.errors import AtenmapError

    with open_index(source, no_codegen, codegen) as ix:
        if local_only and ix.source.origin == "bundled":
            raise SourceNotFound("this command needs a local PyTorch tree: pass --source PATH, or get one with "
                                 "`atenmap fetch`")  # exit 2, as a missing tree is (README)
        found = ix.lookup(op)
        if found.picked:
            status_line(lookup_note(found))
        if keys:
            check_keys(ix, keys)
        chain = ix.chain(found.operator, keys=keys, depth=depth, runs=runs)  # lines, gdb: the tree only
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
    known = {k.lower() for k in ix.dispatch_keys()} | {k.lower() for k in ("CPU", "CUDA", "MPS", "XPU", "Meta")}
    bad = [k for k in keys if k.lower() not in known]
    if bad:
        raise UsageError(f"--key {bad[0]}: no such dispatch key; keys: {', '.join(ix.dispatch_keys())}")
