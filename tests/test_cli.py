"""The CLI: exit codes, one-line errors, text and JSON output, the `atenmap OP` shorthand."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


from .conftest import FIXTURE_TREE, PROGRESS, cli_run


def run(capsys, *args):
    return cli_run(capsys, *args, errors_only=True)  # progress lines dropped


def test_shorthand_prints_tree_with_locations_first(capsys):
    code, out, err = run(capsys, "mul.out", "--key", "CUDA", "--source", str(FIXTURE_TREE))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("mul.out: mul.out(Tensor self")
    assert "PyTorch 2.6.0a0+fixture" in lines[1]
    assert "[CUDA]" in lines
    launch = next(ln for ln in lines if " launch " in ln)
    assert launch.startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:18 ")


def test_json_output(capsys):
    code, out, _ = run(capsys, "chain", "exp.out", "--key", "CPU", "--json", "-s", str(FIXTURE_TREE))
    d = json.loads(out)
    assert code == 0 and d["op"] == "exp.out" and d["keys"][0]["key"] == "CPU"


def test_unknown_operator_exit_1_with_suggestion(capsys):
    code, out, err = run(capsys, "mul.ot", "-s", str(FIXTURE_TREE))
    assert code == 1 and out == ""
    assert err.strip() == "atenmap: error: unknown operator 'mul.ot'; did you mean mul.out, mm.out, mul.Tensor, sub.out?"


def test_bare_overloaded_name_picks_the_python_overload_and_notes_the_others(capsys):
    code, out, err = cli_run(capsys, "add", "-s", str(FIXTURE_TREE), drop=PROGRESS)
    assert code == 0 and out.startswith("add.Tensor: ")
    assert err.splitlines() == ["atenmap: add means add.Tensor (the first overload in native_functions.yaml that is "
                                "not out= or named-dim); other overloads: add.out"]


def test_no_source_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATENMAP_NO_BUNDLE", "1")  # else the bundled 2.6.0 index answers
    code, _, err = run(capsys, "add.out")
    assert code == 2 and err.count("\n") == 1 and "--source" in err and "ATENMAP_SOURCE" in err


def test_missing_key_exit_1(capsys):
    code, _, err = run(capsys, "mul.out", "--key", "MPS", "-s", str(FIXTURE_TREE))
    assert code == 1 and "no MPS kernel" in err


def test_ops_and_index_commands(capsys):
    code, out, _ = run(capsys, "ops", "--json", "-s", str(FIXTURE_TREE))
    ops = json.loads(out)
    add = next(o for o in ops if o["op"] == "add.out")
    assert code == 0 and add["yaml"]["line"] == 8 and add["dispatch"]["CUDA"] == "ufunc_add_CUDA"
    assert next(o for o in ops if o["op"] == "linear")["kind"] == "composite_implicit"
    code, out, _ = run(capsys, "index", "-s", str(FIXTURE_TREE))
    assert code == 0 and "operators: 21" in out and "files: " in out


def test_usage_error_is_not_a_traceback(capsys):
    code, _, err = run(capsys, "--bogus")
    assert code == 2 and "Traceback" not in err


def test_python_dash_m_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-m", "atenmap", "linear", "-s", str(FIXTURE_TREE)],
                       capture_output=True, text=True, env={"ATENMAP_CACHE": str(tmp_path), "PATH": ""}, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "op_call      aten::addmm" in r.stdout


def test_undecodable_arguments_are_one_line_errors(capsys):
    code, out, err = run(capsys, "chain", "\udcff\udcfe", "-s", str(FIXTURE_TREE))
    assert code == 1 and err.count("\n") == 1 and "not an operator name" in err
    code, out, err = run(capsys, "where", "\udcff.cpp:3", "-s", str(FIXTURE_TREE))
    assert code == 2 and err.strip() == "atenmap: error: an argument is not valid UTF-8 text"


def test_open_refuses_the_bundled_index(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EDITOR", "vim")
    code, out, err = run(capsys, "open", "mul.out", "--key", "CUDA", "--print")
    assert code == 1 and out == ""
    assert err.strip().splitlines()[-1] == ("atenmap: error: this command needs a local PyTorch tree: "
                                            "pass --source PATH, or get one with `atenmap fetch`")
