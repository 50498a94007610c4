"""Conventions of issue 12 that had no CLI test: shell completion of `atenmap OP` and of `--key`
after an operator (through typer, as a shell asks), also from the bundled index; `where --limit`;
generated files' real paths in text, JSON and lines from the command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import FIXTURE_TREE, REPO, cli_run

SRC = str(FIXTURE_TREE)


def complete(words: str, cwd, **env) -> list[str]:
    """What bash completion offers for ``words`` (the last word is the one being completed)."""
    parts = words.split(" ")
    e = {**os.environ, "PYTHONPATH": str(REPO / "src"), "_ATENMAP_COMPLETE": "complete_bash",
         "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1), **env}
    r = subprocess.run([sys.executable, "-m", "atenmap"], env=e, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return r.stdout.split()


def test_completion_of_atenmap_op_and_its_key(capsys, tmp_path):
    assert cli_run(capsys, "ops", "-s", SRC, "--no-codegen")[0] == 0  # an index to complete from
    env = {"ATENMAP_SOURCE": SRC}
    assert complete("atenmap mu", tmp_path, **env) == ["mul.Tensor", "mul.out"]  # was nothing: only `chain mu` worked
    assert complete("atenmap o", tmp_path, **env) == ["ops", "open"]  # commands still complete
    assert {"CPU", "CUDA"} <= set(complete("atenmap mul.out --key C", tmp_path, **env))
    assert complete("atenmap mul.out --key ", tmp_path, **env)[0] == "all"
    assert complete("atenmap chain mu", tmp_path, **env) == ["mul.Tensor", "mul.out"]


def test_completion_from_the_bundled_index(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no tree around, nothing fetched: the bundled index answers
    code, _, err = cli_run(capsys, "ops", "--limit", "1")
    assert code == 0 and "bundled index" in err
    assert complete("atenmap softm", tmp_path)[:2] == ["softmax.Dimname", "softmax.int"]
    assert "CUDA" in complete("atenmap softmax.int --key CU", tmp_path)


def test_where_limit_prints_n_more(capsys):
    args = ("where", "aten/src/ATen/native/cuda/Loops.cuh", "gpu_kernel", "-s", SRC, "--no-codegen")
    code, full, _ = cli_run(capsys, *args, "--limit", "0")
    assert code == 0
    code, out, err = cli_run(capsys, *args, "--limit", "1")
    assert code == 0 and len(out.splitlines()) < len(full.splitlines())
    assert "more; use --limit 0 to see all" in err


def test_generated_files_are_real_paths_in_text_json_and_lines(capsys, mini_tree):
    code, out, err = cli_run(capsys, "add.out", "--key", "CUDA", "-s", str(mini_tree), "--json")
    assert code == 0, err
    d = json.loads(out)
    gen = d["generated_root"]
    assert gen and os.path.isabs(gen)
    steps = [s for k in d["keys"] for s in _walk(k["steps"])]
    generated = [s for s in steps if s["generated"] and s["file"]]
    assert generated and all(s["file"].startswith(gen + "/") and os.path.isfile(s["file"]) for s in generated)
    code, out, _ = cli_run(capsys, "add.out", "--key", "CUDA", "-s", str(mini_tree), "--wide")
    assert code == 0 and "\ngen:aten/RegisterCUDA.cpp:" in out and f"gen: = {gen}/ " in out and "<torchgen>" not in out
    code, out, _ = cli_run(capsys, "add.out", "--key", "CUDA", "-s", str(mini_tree), "--format", "lines",
                           "--link", "local")
    paths = [ln.split(":", 1)[0] for ln in out.splitlines()]
    assert paths and all(os.path.isfile(p) for p in paths)  # vim -q opens each from anywhere


def _walk(steps):
    for s in steps:
        yield s
        yield from _walk(s["children"])


@pytest.mark.parametrize("args, says", [
    (("add.out", "--bogus"), "no such option '--bogus'"),  # the typer-free `atenmap OP` hands it to typer
    (("chain",), "missing argument 'OP'"),
    (("kernel", "--bogus"), "no such option '--bogus'"),
    (("ops", "--key"), "option '--key' requires an argument"),
])
def test_usage_errors_are_one_line(capsys, mini_tree, args, says):
    """Note [Usage errors in one line] (cli/__init__.py): one `atenmap: error:` line, exit 2."""
    from tests.conftest import cli_run

    code, out, err = cli_run(capsys, *args, "--source", str(mini_tree)) if args[0] != "ops" else \
        cli_run(capsys, *args)
    assert code == 2 and out == ""
    assert err.splitlines() == [err.strip()] and err.startswith(f"atenmap: error: {says}") and "--help'" in err
