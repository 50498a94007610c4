"""The pager (cli/pager.py, Note [Pager]): on a real pseudo-terminal, long output goes through
$PAGER (here a command that saves what it reads), short output, pipes, --no-pager, help and
`open`/`trace` never do; colour reaches the pager unless NO_COLOR."""
from __future__ import annotations

import fcntl
import os
import pathlib
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from atenmap.cli import pager

from .conftest import FIXTURE_TREE, REPO


def run_on_tty(args, tmp_path, rows=10, cols=100, pager_cmd=None, **env):
    """Run ``python -m atenmap ARGS`` with stdout on a pty of ``rows``x``cols``: (exit code, what
    reached the terminal, what the pager read or None when no pager ran)."""
    saved = tmp_path / "paged.txt"
    e = {k: v for k, v in os.environ.items() if k not in ("PAGER", "ATENMAP_PAGER", "NO_COLOR", "COLUMNS", "LINES")}
    e.update(PYTHONPATH=str(REPO / "src"), TERM="xterm",
             PAGER=pager_cmd if pager_cmd is not None else f"tee {saved} >/dev/null", **env)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "atenmap", *args], stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=subprocess.PIPE, env=e, cwd=tmp_path)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, shown.decode().replace("\r\n", "\n"), saved.read_text() if saved.exists() else None


@pytest.fixture
def tree_args():
    return ["--source", str(FIXTURE_TREE), "--no-codegen"]


def test_long_output_on_a_terminal_goes_through_the_pager(tmp_path, tree_args):
    code, shown, paged = run_on_tty(["ops", *tree_args], tmp_path)
    assert code == 0 and paged is not None
    assert "add.out" in paged and "add.out" not in shown  # all of it in the pager, nothing beside it
    assert "\x1b[" in paged  # colour, as on the terminal (less -R shows it)
    assert "\x1b]8;" not in paged  # `tee` would print OSC-8 links raw: only less 566+ gets them


def test_no_color_reaches_the_pager_too(tmp_path, tree_args):
    code, _, paged = run_on_tty(["ops", *tree_args], tmp_path, NO_COLOR="1")
    assert code == 0 and "add.out" in paged and "\x1b[" not in paged


@pytest.mark.parametrize("where", ["first", "last"])
def test_no_pager_prints_on_the_terminal(tmp_path, tree_args, where):
    args = ["--no-pager", "ops", *tree_args] if where == "first" else ["ops", *tree_args, "--no-pager"]
    code, shown, paged = run_on_tty(args, tmp_path)
    assert code == 0 and paged is None and "add.out" in shown


def test_output_that_fits_the_screen_is_printed_directly(tmp_path, tree_args):
    code, shown, paged = run_on_tty(["ops", *tree_args], tmp_path, rows=500)
    assert code == 0 and paged is None and "add.out" in shown


def test_empty_pager_or_cat_means_none(tmp_path, tree_args):
    code, shown, paged = run_on_tty(["ops", *tree_args], tmp_path, pager_cmd="", ATENMAP_PAGER="cat")
    assert code == 0 and paged is None and "add.out" in shown


def test_a_missing_pager_leaves_the_output_on_the_terminal(tmp_path, tree_args):
    code, shown, _ = run_on_tty(["ops", *tree_args], tmp_path, pager_cmd="/nonexistent/pager -R")
    assert code == 0 and "add.out" in shown


def test_help_is_not_paged(tmp_path):
    code, shown, paged = run_on_tty(["ops", "--help"], tmp_path, rows=5)
    assert code == 0 and paged is None and "--limit" in shown


def test_pipes_never_see_a_pager(tmp_path):
    saved = tmp_path / "paged.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PAGER": f"tee {saved} >/dev/null", "LINES": "5"}
    r = subprocess.run([sys.executable, "-m", "atenmap", "ops", "--json", "--source", str(FIXTURE_TREE),
                        "--no-codegen"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and '"add.out"' in r.stdout and not saved.exists()


def test_pager_choice():
    assert pager.pager_command({}) == "less -FRX"
    assert pager.pager_command({"PAGER": "more"}) == "more"
    assert pager.pager_command({"PAGER": "more", "ATENMAP_PAGER": "less -S"}) == "less -S"
    assert pager.pager_command({"PAGER": ""}) is None and pager.pager_command({"PAGER": "cat"}) is None
    assert pager.pager_command({"TERM": "dumb"}) is None and pager.pager_command({"TERM": "dumb", "PAGER": "less"}) == "less"


def test_no_pager_flag_is_taken_before_a_double_dash_only():
    assert pager.take_flag(["ops", "--no-pager"]) == (["ops"], True)
    assert pager.take_flag(["trace", "--", "s.py", "--no-pager"]) == (["trace", "--", "s.py", "--no-pager"], False)


class _Tty:
    def isatty(self):
        return True


@pytest.mark.parametrize("args, paged", [(["ops"], True), (["chain", "add.out"], True), (["where", "f.cu"], True),
                                         (["open", "add.out"], False), (["trace", "--", "x.py"], False),
                                         (["fetch", "2.6.0"], False), (["ops", "-h"], False)])
def test_which_commands_are_paged(args, paged):
    assert pager.wanted(args, _Tty()) is paged
    assert pager.wanted(args, open(os.devnull, "w")) is False


def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path, tree_args):
    """Issue 12: roles and [generated] are coloured on a terminal, not with NO_COLOR, not in a pipe."""
    code, shown, _ = run_on_tty(["mul.out", "--key", "CUDA", *tree_args, "--no-pager"], tmp_path)
    assert code == 0 and "\x1b[1;32m" in shown  # launch steps
    code, shown, _ = run_on_tty(["mul.out", "--key", "CUDA", *tree_args, "--no-pager"], tmp_path, NO_COLOR="1")
    assert code == 0 and "mul.out" in shown and "\x1b[" not in shown.replace("\x1b]8;", "")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("NO_COLOR", None)
    r = subprocess.run([sys.executable, "-m", "atenmap", "mul.out", "--key", "CUDA", *tree_args],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and "mul.out" in r.stdout and "\x1b" not in r.stdout
