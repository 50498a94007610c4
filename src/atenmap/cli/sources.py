"""`atenmap sources`: what the cache holds (fetched trees, indexes, codegen outputs, the bundle)."""
from __future__ import annotations

import json

import typer

from atenmap.config import printable
from atenmap.cli.common import JsonOpt, app, status_line


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:.1f} MB"


def _echo(line: str) -> None:
    """One line of text output: names from the tree and the cache with control characters escaped."""
    typer.echo(printable(line))


@app.command("sources")
def sources_cmd(
    prune: bool = typer.Option(False, "--prune", help="Remove indexes of trees that no longer exist, codegen outputs "
                                                      "no index uses, and other atenmap versions' facts and bundles."),
    as_json: bool = JsonOpt,
) -> None:
    """List the cache: fetched trees, indexes, codegen outputs, the bundled index, with versions and
    sizes; entries marked [stale] are what --prune removes. Example: atenmap sources --prune"""
    from atenmap.build import fact_cache
    from atenmap.source.cache import cache_report, prune as _prune

    mine = fact_cache()
    current = mine.path if mine is not None else None
    report, removed = _prune(current, status_line) if prune else (cache_report(current_facts=current), [])
    if as_json:
        typer.echo(json.dumps({**report, "removed": [{"path": p, "size": s} for p, s in removed]}, indent=1))
        return
    gone = {p for p, _ in removed}
    torch = report["torch"]
    _echo(f"cache: {report['cache']}" + (f"  (installed torch {torch['version']})" if torch else "  (no torch installed)"))

    def row(text: str, e: dict) -> None:
        path = e.get("path") or e.get("installed")
        state = " [removed]" if path in gone else (f" [stale: {e['why']}]" if e.get("stale") else "")
        _echo(f"  {text}{state}")

    _echo("fetched trees:" + ("" if report["trees"] else " none (atenmap fetch VERSION)"))
    for t in report["trees"]:
        ref = t["commit"][:12] if t.get("commit") else (t.get("tag") or "")
        row(f"{t['path']}  PyTorch {t['version']} {ref}  {_mb(t['size'])}  from {t.get('origin')}"
            + ("  [matches the installed torch]" if t.get("matches_torch") else ""), t)
    _echo("indexes:" + ("" if report["indexes"] else " none"))
    for i in report["indexes"]:
        row(f"{i['path']}  PyTorch {i.get('version') or '?'}  {_mb(i['size'])}  of {i.get('source_root')}", i)
    _echo("codegen outputs:" + ("" if report["codegen"] else " none"))
    for c in report["codegen"]:
        row(f"{c['path']}  {_mb(c['size'])}  of {c.get('source_root')}", c)
    _echo("facts by content:" + ("" if report["facts"] else " none"))
    for f in report["facts"]:
        row(f"{f['path']}  {_mb(f['size'])}", f)
    _echo("bundle:" + ("" if report["bundle"] else " none in this installation"))
    for b in report["bundle"]:
        if b.get("version"):
            row(f"PyTorch {b['version']} ({b.get('tag')}), shipped {_mb(b.get('shipped_size'))} (xz); "
                + (f"unpacked {_mb(b['size'])} at {b['installed']}" if b.get("installed") else "not unpacked yet"), b)
        else:
            row(f"{b['installed']}  {_mb(b['size'])}", b)
    if report["downloads"]:
        _echo("downloads:")
        for d in report["downloads"]:
            _echo(f"  {d['path']}  {_mb(d['size'])}" + ("  [partial: the next fetch resumes it]" if d["partial"] else ""))
    if prune:
        _echo(f"removed {len(removed)} entries, {_mb(sum(s for _, s in removed))}")
