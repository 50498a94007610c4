"""Everyday faults are one line and a non-zero exit, never a traceback (while programming errors
still are tracebacks); injection through file names and yaml strings; unknown keys."""
from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from atenmap.errors import YamlError
from atenmap.extract.native_yaml import parse_operators
from atenmap.model import Chain, KeyChain, SourceInfo, Step
from atenmap.store import Store
from atenmap.views import gdb, text

from .conftest import FIXTURE_TREE, REPO, cli_run

SRC = str(FIXTURE_TREE)


def one_error(err: str) -> str:
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("atenmap: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_duplicate_operator_names_both_lines():
    yaml = ("- func: add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
            "- func: mul(Tensor self, Tensor other) -> Tensor\n"
            "- func: add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n")
    with pytest.raises(YamlError, match=r"^x.yaml:3: duplicate operator 'add.out' \(first at line 1\)$"):
        parse_operators(yaml, "x.yaml")


def test_duplicate_operator_in_a_tree_is_one_line(capsys, mini_tree):
    y = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    first = next(ln for ln in y.read_text().splitlines() if ln.startswith("- func: "))
    n = len(y.read_text().splitlines())
    with open(y, "a") as f:
        f.write(first + "\n")
    code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen")
    assert code == 2 and f"native_functions.yaml:{n + 1}: duplicate operator" in one_error(err)


def test_unwritable_cache_is_one_line(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache should be a folder\n")
    monkeypatch.setenv("ATENMAP_CACHE", str(blocker / "cache"))
    code, out, err = cli_run(capsys, "ops", "--source", SRC, "--no-codegen")
    assert code == 1 and str(blocker) in one_error(err)


@pytest.mark.parametrize("fault, words", [
    (sqlite3.OperationalError("database or disk is full"), "the disk is full: database or disk is full"),
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device (free some space"),
    (PermissionError(errno.EACCES, "Permission denied", "/x/index.sqlite"), "Permission denied: /x/index.sqlite"),
])
def test_disk_full_and_permissions_are_one_line(capsys, monkeypatch, fault, words):
    def finish(self, analyze: bool = True):
        raise fault

    monkeypatch.setattr(Store, "finish", finish)  # the fault, injected where a build meets the disk
    code, out, err = cli_run(capsys, "index", "--source", SRC, "--no-codegen")
    assert code == 1 and words in one_error(err)


def test_programming_errors_still_raise(capsys, monkeypatch):
    def finish(self, analyze: bool = True):
        raise AttributeError("a bug")

    monkeypatch.setattr(Store, "finish", finish)
    with pytest.raises(AttributeError, match="a bug"):
        cli_run(capsys, "index", "--source", SRC, "--no-codegen")


def test_huge_search_pattern_is_refused_clearly(capsys):
    code, out, err = cli_run(capsys, "search", "a" * 25_000, "--source", SRC, "--codegen", "never")
    assert code != 0 and "search pattern of 25000 characters; at most 1000" in one_error(err)


def test_unknown_key_among_good_ones_fails(capsys):
    code, out, err = cli_run(capsys, "add.out", "--key", "CUDA", "--key", "Bogus", "--source", SRC, "--no-codegen")
    assert code == 2 and "Bogus" in one_error(err)  # a usage error (issue 12)
    code, out, err = cli_run(capsys, "add.out", "--key", "cuda", "--key", "CPU", "--source", SRC, "--no-codegen")
    assert code == 0, err


# ---- injection ---------------------------------------------------------------------------------
EVIL = "aten/src/ATen/native/x\nshell touch /tmp/atenmap-pwned\n#.cpp"


def evil_chain(mini_index) -> Chain:
    good = mini_index.chain("mul.out", keys=["CUDA"])
    bad = KeyChain("CUDA", (Step.make("launch", "evil<<<1, 1>>>", EVIL, 3),
                            Step.make("native", "at::native::ok\x1b[2J", "aten/src/ATen/native/ok.cpp", 4,
                                      detail="yaml says \x1b]0;title\x07")))
    return Chain(good.op, SourceInfo("/src/\x1b[31mred", "2.6.0"), (*good.keys, bad), warnings=("w\nshell id",))


@pytest.fixture
def mini_index():
    from atenmap.api import Index

    with Index.open(SRC, codegen=False) as ix:
        yield ix


def test_gdb_script_has_no_commands_from_file_names(mini_index):
    script = gdb.gdb_script(evil_chain(mini_index))
    lines = script.splitlines()
    assert all(ln.startswith(("#", "set ", "break ")) or not ln for ln in lines), lines
    assert not any("shell" in ln and not ln.startswith("#") for ln in lines)
    assert "\x1b" not in script
    assert any(ln.startswith("# skipped: a location gdb cannot be given safely") for ln in lines)
    assert "break at::native::ok" not in script  # an ESC in a name: no break either


def test_text_views_escape_control_characters(mini_index):
    out = "\n".join(text.chain_lines(evil_chain(mini_index)))
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred" in out and "x\\x0ashell touch" in out
    # warnings go to stderr through the CLI's warn(), which escapes them the same way
    from atenmap.config import printable
    assert printable("w\nshell id") == "w\\x0ashell id"


# ---- item 5: non-UTF-8 and unreadable yaml / torchgen ------------------------------------------
def test_non_utf8_yaml_names_its_line(capsys, mini_tree):
    """It said "an argument is not valid UTF-8 text" (the command line was fine)."""
    y = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    n = len(y.read_bytes().splitlines())
    with open(y, "ab") as f:
        f.write(b"- func: caf\xe9(Tensor self) -> Tensor\n")
    code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen")
    assert code == 2 and one_error(err).endswith(f"native_functions.yaml:{n + 1}: not UTF-8 text (byte 0xe9)")


def test_yaml_with_control_characters_is_one_line_with_its_line(capsys, mini_tree):
    """PyYAML's reader error took two lines ('  in "<unicode string>", position N') and no yaml line."""
    y = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    n = len(y.read_text().splitlines())
    with open(y, "a") as f:
        f.write("- func: bell(Tensor self) -> Tensor\n  tags: \x07\n")
    code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen")
    assert code == 2 and f"native_functions.yaml:{n + 2}: malformed yaml: unacceptable character #x0007" in one_error(err)


@pytest.mark.parametrize("what", ["aten/src/ATen/native/native_functions.yaml", "torchgen/gen.py"])
def test_unreadable_yaml_or_torchgen_is_one_line(capsys, mini_tree, what):
    (mini_tree / what).chmod(0)
    try:
        (mini_tree / what).read_bytes()
    except PermissionError:
        code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--codegen", "always")
        assert code == 1 and f"Permission denied: {mini_tree / what}" in one_error(err)
        return
    # root reads files whatever their mode (CAP_DAC_OVERRIDE): the same command in a process that
    # has lost the capabilities that bypass file modes
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("this user reads files whatever their mode and setpriv (util-linux) is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([setpriv, "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "atenmap",
                        "ops", "--source", str(mini_tree), "--codegen", "always"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and f"Permission denied: {mini_tree / what}" in one_error(r.stderr), r.stderr
