"""Whose code runs: ATENMAP_CODEGEN / config.toml / --codegen, fetched trees, ask, the notice.
See Note [Whose code runs] in build.py and Note [Running a tree's code] in codegen.py."""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from atenmap import config
from atenmap.source import fetch as F

from .conftest import FIXTURE_TREE, cli_run


@pytest.fixture(autouse=True)
def _settings(tmp_path, monkeypatch):
    monkeypatch.delenv("ATENMAP_CODEGEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(F, "installed_torch", lambda: None)


def codegen_line(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("codegen: "))


def fetched(tmp_path: Path, capsys) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(FIXTURE_TREE, arcname="pytorch-v2.6.0")
    (tmp_path / "t.tar.gz").write_bytes(buf.getvalue())
    code, out, err = cli_run(capsys, "fetch", "2.6.0", "--from", str(tmp_path / "t.tar.gz"), "--no-index")
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def test_own_tree_runs_with_a_notice_the_first_time(capsys, mini_tree, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "always")  # no terminal here: consent (tests/test_trust3.py: without it)
    code, out, err = cli_run(capsys, "index", "--source", str(mini_tree))
    assert code == 0 and codegen_line(out).startswith("codegen: torchgen ran")
    notice = f"atenmap: running {mini_tree.resolve()}/torchgen (code from that tree); ATENMAP_CODEGEN=never turns this off"
    assert notice in err.splitlines()
    code, out, err = cli_run(capsys, "index", "--source", str(mini_tree), "--force")
    assert code == 0 and "code from that tree" not in err  # cached: nothing ran, nothing said


def test_fetched_tree_runs_by_default_with_the_notice(capsys, tmp_path, terminal):
    """Note [Whose code runs]: a tree `atenmap fetch` got as the user asked answers as fully as one of
    their own (issue 21, item 5); ATENMAP_CODEGEN=never still keeps its code from running."""
    tree = fetched(tmp_path, capsys)
    code, out, err = cli_run(capsys, "index", "--source", str(tree))
    assert code == 0 and codegen_line(out).startswith("codegen: torchgen ran")
    assert f"atenmap: running {tree.resolve()}/torchgen (code from that tree); ATENMAP_CODEGEN=never turns this off" \
        in " ".join(err.split())  # wrapped for the terminal


@pytest.mark.parametrize("how, said", [("env", "ATENMAP_CODEGEN=never"), ("flag", "--codegen never"),
                                       ("no", "--no-codegen"), ("config", 'codegen = "never" in ')])
def test_messages_name_the_setting_the_user_made(capsys, mini_tree, tmp_path, monkeypatch, how, said):
    """A message about missing generated code names what turned torchgen off, never a flag the user
    did not pass (issue 21: `--backward` blamed --no-codegen)."""
    args = []
    if how == "env":
        monkeypatch.setenv("ATENMAP_CODEGEN", "never")
    elif how == "config":
        (tmp_path / "config" / "atenmap").mkdir(parents=True)
        (tmp_path / "config" / "atenmap" / "config.toml").write_text('codegen = "never"\n')
    else:
        args = ["--codegen", "never"] if how == "flag" else ["--no-codegen"]
    code, out, err = cli_run(capsys, "mul.Tensor", "--backward", "--source", str(mini_tree), *args)
    assert code == 0
    line = next(ln for ln in err.splitlines() if "autograd node not shown" in ln)
    assert said in line
    for flag in ("--no-codegen", "--codegen"):
        assert flag not in line or flag in args, line


@pytest.mark.parametrize("how", ["env", "config", "flag"])
def test_never_from_env_config_or_flag(capsys, mini_tree, tmp_path, monkeypatch, how):
    args = ["index", "--source", str(mini_tree)]
    if how == "env":
        monkeypatch.setenv("ATENMAP_CODEGEN", "never")
    elif how == "config":
        (tmp_path / "config" / "atenmap").mkdir(parents=True)
        (tmp_path / "config" / "atenmap" / "config.toml").write_text('# mine\ncodegen = "never"\n')
    else:
        args += ["--codegen", "never"]
    code, out, err = cli_run(capsys, *args)
    assert code == 0 and codegen_line(out) == "codegen: off" and "code from that tree" not in err
    # the chain commands honour it too: no torchgen, so no generated Register*.cpp step
    code, out, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree), *args[3:])
    assert code == 0 and "RegisterCUDA.cpp" not in out and "code from that tree" not in err
    # and the command line wins over the environment and the file
    code, out, err = cli_run(capsys, "index", "--source", str(mini_tree), "--codegen", "always")
    assert code == 0 and codegen_line(out).startswith("codegen: torchgen ran")


def test_ask_without_a_terminal_is_never_with_a_note(capsys, mini_tree, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "ask")
    code, out, err = cli_run(capsys, "index", "--source", str(mini_tree))
    assert code == 0 and codegen_line(out) == "codegen: off"
    assert "ATENMAP_CODEGEN=ask and no terminal to ask on (treated as never)" in err


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_ask_on_a_terminal_asks_once(capsys, mini_tree, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "ask")
    stdin = _Tty("y\n")
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.stderr", _Tty())
    code, out, _ = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0 and "RegisterCUDA.cpp" in out
    assert stdin.tell() == 2  # one answer read: is_fresh and build share it
    assert "to index what it generates? [y/N]" in __import__("sys").stderr.getvalue()


def test_bad_settings_are_one_line(capsys, mini_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CODEGEN", "maybe")
    code, out, err = cli_run(capsys, "ops", "--source", str(mini_tree))
    assert code == 2 and err.strip() == "atenmap: error: ATENMAP_CODEGEN='maybe': expected one of never, ask, always"
    monkeypatch.delenv("ATENMAP_CODEGEN")
    code, _, err = cli_run(capsys, "ops", "--source", str(mini_tree), "--no-codegen", "--codegen", "always")
    assert code == 1 and "contradict" in err
    cfg = tmp_path / "config" / "atenmap" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("codegen = \n")
    code, _, err = cli_run(capsys, "ops", "--source", str(mini_tree))
    assert code == 2 and err.startswith(f"atenmap: error: {cfg}") and err.count("\n") == 1
    cfg.write_text('codegn = "never"\n')
    code, _, err = cli_run(capsys, "ops", "--source", str(mini_tree))
    assert code == 2 and "unknown key 'codegn'" in err


def test_flat_parser_for_python_3_10(tmp_path):
    text = '# c\ncodegen = "never"  # trailing\ncodegen_timeout = 30\nfetch_max_bytes = 1_000\n'
    assert config._parse_flat(text, tmp_path) == {"codegen": "never", "codegen_timeout": 30, "fetch_max_bytes": 1000}
    with pytest.raises(config.ConfigError, match=":1: expected key = value"):
        config._parse_flat("[table]\n", tmp_path)


def _index_commands():
    import click
    import typer

    from atenmap.cli import app

    group = typer.main.get_command(app)
    return {name: {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
            for name, cmd in group.commands.items() if name != "sources"}  # sources opens no index


@pytest.mark.parametrize("command", sorted(_index_commands()))
def test_every_command_that_opens_an_index_takes_both_flags(command):
    """Item 2: `--no-codegen` existed on some commands only (graph, lines, open, search, gdb and
    trace had none; trace not even --codegen)."""
    assert {"--codegen", "--no-codegen"} <= _index_commands()[command]


@pytest.mark.parametrize("args", [("search", "mul"), ("graph", "mul.out"), ("lines", "mul.out"), ("gdb", "mul.out")])
def test_no_codegen_reaches_the_index_on_every_command(capsys, mini_tree, args):
    code, out, err = cli_run(capsys, *args, "-s", str(mini_tree), "--no-codegen")
    assert code == 0 and "torchgen" not in err, err  # no notice: the tree's code did not run
    code, out, _ = cli_run(capsys, "index", "-s", str(mini_tree), "--no-codegen")
    assert codegen_line(out) == "codegen: off"
    code, _, err = cli_run(capsys, *args, "-s", str(mini_tree), "--no-codegen", "--codegen", "always")
    assert code == 1 and "--no-codegen and --codegen always contradict each other" in err
