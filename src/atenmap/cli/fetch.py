"""`atenmap fetch [VERSION]`: a PyTorch source tree into the cache, then its index."""
from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from atenmap.cli.common import CodegenOpt, JsonOpt, NoCodegenOpt, app, open_index, status_line


def _progress():
    """(callback, status, stop): a rich bar on a terminal (status lines printed above it); on a
    pipe, no bar: the status lines say enough."""
    if not sys.stderr.isatty():
        return None, status_line, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    console = Console(stderr=True, highlight=False)
    prog = Progress(TextColumn("{task.description:<11}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeRemainingColumn(), console=console, transient=True)
    tasks: dict[str, int] = {}

    def cb(phase: str, done: int, total: int | None) -> None:
        if phase not in tasks:
            if not tasks:
                prog.start()
            tasks[phase] = prog.add_task("downloading" if phase == "download" else "unpacking", total=total)
        prog.update(tasks[phase], completed=done, total=total)

    def say(msg: str) -> None:
        console.print(f"atenmap: {msg}", markup=False)
    return cb, say, prog.stop


@app.command("fetch")
def fetch_cmd(
    version: Optional[str] = typer.Argument(None, help="PyTorch release, e.g. 2.6.0 (default: the installed torch's version)."),
    source: Optional[str] = typer.Option(None, "--from", metavar="URL|FILE|debian",
                                         help="Where from: a URL, a local .tar.gz/.tar.xz, or debian (Debian's source "
                                              "packages: 2.6.0, 1.13.1). Default: GitHub's archive of the release tag "
                                              "(or commit); $ATENMAP_ARCHIVE_URL overrides its address."),
    sha256: Optional[str] = typer.Option(None, "--sha256", help="Expected sha256 of the archive (known for --from debian)."),
    force: bool = typer.Option(False, "--force", help="Fetch again even if the tree is in the cache."),
    no_index: bool = typer.Option(False, "--no-index", help="Only fetch; index on first use."),
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Download a PyTorch source tree into <cache>/sources/pytorch-VERSION and index it; prints its path.
    Example: atenmap fetch 2.6.0 --from debian"""
    from atenmap.source import fetch as _fetch

    p = _fetch.plan(version, source, sha256)
    cb, say, stop = _progress()
    try:
        result = _fetch.fetch(p, force=force, progress=cb, status=say)
    finally:
        stop()
    m = result.marker
    if result.reused:
        status_line(f"PyTorch {m.get('version', '?')} is already in the cache: {result.path} (--force fetches it again)")
    else:
        status_line(f"fetched PyTorch {m.get('version', '?')} ({m.get('origin')}) into {result.path} "
                    f"in {result.seconds:.1f} s")
    report = None
    if not no_index:
        with open_index(str(result.path), no_codegen, codegen) as ix:
            report = ix.stats()
        status_line(f"indexed: {report['operators']} operators, {sum(report['facts'].values())} facts")
    if as_json:
        typer.echo(json.dumps({"path": str(result.path), "reused": result.reused, "marker": m,
                               "downloaded": result.downloaded, "seconds": round(result.seconds, 3),
                               "index": None if report is None else report["path"]}, indent=1))
    else:
        typer.echo(str(result.path))
