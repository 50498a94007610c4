"""Issue 34 ("Trust III"), each fault with its original input: a hostile checkout's torchgen under
the MCP server and without a terminal, FIFOs, devices, symlinks and huge files where atenmap reads
an outside file, control characters in the server's text, `trace` in a forked child, leaked
temporary folders. Items 4 and 10 (trace joins, malformed trace events) are tested in
tests/test_trace_*.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import FIXTURE_TREE, REPO, cli_run

PAYLOAD = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def evil_tree(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture tree with a torchgen/__init__.py that writes a marker file when imported."""
    tree = tmp_path / "evil"
    shutil.copytree(FIXTURE_TREE, tree)
    marker = tmp_path / "PWNED"
    init = tree / "torchgen" / "__init__.py"
    init.write_text(PAYLOAD.format(marker=str(marker)) + init.read_text())
    return tree, marker


def _server_env(**extra) -> dict[str, str]:
    return {"ATENMAP_CACHE": os.environ["ATENMAP_CACHE"], "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1",
            "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", "/nonexistent"), **extra}


def ask_server(args: list[str], calls: list[tuple[str, dict]], *, cwd=None, env=None, errfile: Path):
    """Start `atenmap mcp ARGS`, make ``calls`` in turn, return their results."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "atenmap", "mcp", *args],
                                   cwd=str(cwd) if cwd else None, env=env or _server_env())
    out = []

    async def main():
        with open(errfile, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for name, arguments in calls:
                        with anyio.fail_after(120):
                            out.append(await s.call_tool(name, arguments))

    anyio.run(main)
    return out


# ---- item 1: a tree's code runs only with consent -------------------------------------------------
@pytest.fixture
def no_setting(monkeypatch, tmp_path):
    """No codegen setting anywhere (the suite's consent removed, no config file)."""
    monkeypatch.delenv("ATENMAP_CODEGEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("where", ["source", "cwd"])
def test_the_server_never_runs_a_checkouts_torchgen_by_default(tmp_path, no_setting, where):
    tree, marker = evil_tree(tmp_path)
    args = ["--source", str(tree)] if where == "source" else []
    res = ask_server(args, [("chain", {"op": "mul.out", "key": "CUDA"})], cwd=tree / "aten" if where == "cwd" else None,
                     errfile=tmp_path / "err.txt")
    assert not marker.exists()
    assert not res[0].is_error and res[0].structured_content["source"]["root"] == str(tree.resolve())
    err = (tmp_path / "err.txt").read_text()
    assert "torchgen not run: no terminal" in err and "Traceback" not in err


def test_the_server_runs_it_with_consent(tmp_path, no_setting):
    tree, marker = evil_tree(tmp_path)
    ask_server(["--source", str(tree)], [("chain", {"op": "mul.out", "key": "CUDA"})],
               env=_server_env(ATENMAP_CODEGEN="always"), errfile=tmp_path / "err.txt")
    assert marker.read_text() == "ran"


def test_the_server_ignores_ask(tmp_path, no_setting):
    """`ask` in a server: stdin is the protocol, never a person -- treated as never."""
    tree, marker = evil_tree(tmp_path)
    ask_server(["--source", str(tree), "--codegen", "ask"], [("ops", {"limit": 1})], errfile=tmp_path / "err.txt")
    assert not marker.exists()
    assert "--codegen ask and no terminal to ask on" in (tmp_path / "err.txt").read_text()


def test_a_run_without_a_terminal_never_runs_it_by_default(capsys, tmp_path, no_setting):
    tree, marker = evil_tree(tmp_path)
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree))
    assert code == 0 and not marker.exists()
    assert "atenmap: torchgen not run: no terminal, and running a tree's code without one needs consent" in err
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree), "--codegen", "always")
    assert code == 0 and marker.read_text() == "ran"


def test_on_a_terminal_the_default_still_runs_it(capsys, tmp_path, no_setting, terminal):
    tree, marker = evil_tree(tmp_path)
    code, out, err = cli_run(capsys, "index", "--source", str(tree))
    assert code == 0 and marker.exists(), err
    assert "(code from that tree)" in " ".join(err.split())  # the notice, wrapped for the terminal
