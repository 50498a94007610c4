"""What a first index build shows on a terminal (cli/progress.py, Note [Build progress]): one line
per phase, a total that does not jump, status lines broken at spaces. On a real pseudo-terminal
(the way tests/test_pager.py runs the CLI), read back through a small terminal emulator."""
from __future__ import annotations

import io
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import fcntl

from atenmap.cli.progress import BuildProgress

from .conftest import FIXTURE_TREE, REPO

_CSI = re.compile(r"\x1b\[(\d*)([AKJ])")


def screen(raw: str, cols: int) -> tuple[list[str], list[int]]:
    """What a terminal of ``cols`` columns shows after ``raw`` (the escapes the CLI writes: cursor
    up, erase line, erase below; autowrap at the margin), and each ``files parsed`` total drawn."""
    rows, row, col, totals = [""], 0, 0, []
    i = 0
    while i < len(raw):
        m = _CSI.match(raw, i)
        if m:
            n, op = int(m.group(1) or 0), m.group(2)
            if op == "A":
                row = max(0, row - (n or 1))
            elif op == "K":
                rows[row] = ""
            else:
                del rows[row + 1:]
                rows[row] = rows[row][:col]
            i = m.end()
            continue
        ch = raw[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            line = rows[row]
            totals += [int(t) for t in re.findall(r"^atenmap: files parsed: \d+/(\d+)$", line)]
            row, col = row + 1, 0
            if row == len(rows):
                rows.append("")
        else:
            if col == cols:  # the terminal wraps
                row, col = row + 1, 0
                if row == len(rows):
                    rows.append("")
            rows[row] = rows[row][:col].ljust(col) + ch + rows[row][col + 1:]
            col += 1
    return [r for r in rows if r], totals


def test_phases_one_line_each_and_a_fixed_total():
    now = [100.0]
    out = io.StringIO()
    p = BuildProgress(out, 80, clock=lambda: now[0])
    p.status("running /a/very/long/path/to/some/pytorch/checkout/torchgen (code from that tree); "
             "ATENMAP_CODEGEN=never turns this off")
    p.status("running torchgen (ATen)…")
    p.status("running torchgen (python bindings)…")
    for done in range(1, 11):
        now[0] += 1
        p.progress(done, 10, f"aten/f{done}.cpp")
    p.status("torchgen ran in 23.4 s")
    for done in range(11, 14):
        p.progress(done, 13, f"/cache/codegen/g{done}.cpp")
    p.stop()
    shown, totals = screen(out.getvalue(), 80)
    assert shown == ["atenmap: running /a/very/long/path/to/some/pytorch/checkout/torchgen (code from",
                     "  that tree); ATENMAP_CODEGEN=never turns this off",
                     "atenmap: torchgen: 23.4 s", "atenmap: files parsed: 10/10",
                     "atenmap: torchgen's files parsed: 3/3"]
    assert set(totals) == {10}


def test_no_torchgen_no_torchgen_line():
    out = io.StringIO()
    p = BuildProgress(out, 80)
    p.progress(1, 2, "a.cpp")
    p.progress(2, 2, "b.cpp")
    p.stop()
    assert screen(out.getvalue(), 80)[0] == ["atenmap: files parsed: 2/2"]


def run_on_pty(args, cwd, cols, env, stdout_on_pty=False):
    """``python -m atenmap ARGS`` with stderr (and with ``stdout_on_pty`` stdout too) on a pty of
    ``cols`` columns: (code, stdout when piped, what the terminal got)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    e = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    e.update(PYTHONPATH=str(REPO / "src"), TERM="xterm", **env)
    p = subprocess.Popen([sys.executable, "-m", "atenmap", *args], stdin=subprocess.DEVNULL,
                         stdout=slave if stdout_on_pty else subprocess.PIPE, stderr=slave, env=e, cwd=cwd)
    os.close(slave)
    got = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    out = "" if stdout_on_pty else p.stdout.read().decode()
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, out, got.decode().replace("\r\n", "\n")


def test_first_build_on_an_80_column_terminal(tmp_path):
    tree = tmp_path / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, tree)
    code, out, raw = run_on_pty(["index", "--source", str(tree)], tmp_path, 80,
                                {"ATENMAP_CACHE": str(tmp_path / "cache"), "ATENMAP_FACT_CACHE": "0"})
    assert code == 0 and out.startswith("index: ")
    shown, totals = screen(raw, 80)
    assert all(len(ln) < 80 for ln in shown)  # nothing reached the margin: no line wrapped by the terminal
    phases = [i for i, ln in enumerate(shown) if ln.startswith(("atenmap: torchgen:", "atenmap: files parsed"))]
    notice = shown[:phases[0]]
    text = notice[0]
    for ln in notice[1:]:  # broken at a space, or inside a path too long for a line (at a "/")
        assert ln.startswith("  ")
        text += ("" if text.endswith("/") or ln.strip().startswith("/") else " ") + ln.strip()
    assert text == f"atenmap: running {tree}/torchgen (code from that tree); ATENMAP_CODEGEN=never turns this off"
    assert re.fullmatch(r"atenmap: torchgen: \d+\.\d s", next(ln for ln in shown if ln.startswith("atenmap: torchgen:")))
    assert len(set(totals)) == 1 and f"atenmap: files parsed: {totals[0]}/{totals[0]}" in shown
