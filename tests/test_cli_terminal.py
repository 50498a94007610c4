"""Issue 12: the CLI fits a terminal and a PyTorch user's habits. One test per convention."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run

SRC = str(FIXTURE_TREE)


def run(capsys, *args):
    return cli_run(capsys, *args, drop=PROGRESS)


def test_text_fits_columns_and_wide_keeps_whole_lines(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    code, out, _ = run(capsys, "mul.out", "-s", SRC)
    assert code == 0 and all(len(ln) <= 60 for ln in out.splitlines())
    assert any(ln.endswith("…") for ln in out.splitlines())  # details cut, not wrapped
    code, wide, _ = run(capsys, "mul.out", "-s", SRC, "--wide")
    assert code == 0 and max(map(len, wide.splitlines())) > 60 and "…" not in wide


def test_no_columns_and_no_tty_means_whole_lines(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    _, out, _ = run(capsys, "mul.out", "-s", SRC)
    _, wide, _ = run(capsys, "mul.out", "-s", SRC, "--wide")
    assert out == wide


def test_paths_are_shortened_in_the_middle():
    from atenmap.views.terminal import shorten_middle

    assert shorten_middle("aten/src/ATen/native/cuda/CUDALoops.cuh:158", 40) == "aten/src/ATen/…/cuda/CUDALoops.cuh:158"
    s = shorten_middle("aten/src/ATen/native/cuda/CUDALoops.cuh:158", 32)
    assert s.startswith("aten/") and s.endswith("/CUDALoops.cuh:158") and "…" in s


def test_colour_only_on_a_terminal_without_no_color():
    import io

    from atenmap.views.terminal import Span, Terminal

    class Tty(io.StringIO):
        def isatty(self):
            return True

    line = (Span("launch", "role.launch"),)
    assert Terminal.detect(io.StringIO(), {}).render(line) == "launch"  # piped
    assert "\x1b[" in Terminal.detect(Tty(), {"TERM": "xterm"}).render(line)
    assert Terminal.detect(Tty(), {"TERM": "xterm", "NO_COLOR": "1"}).render(line) == "launch"


def test_default_shows_cpu_and_cuda_and_names_the_other_keys(capsys):
    code, out, _ = run(capsys, "add.out", "-s", SRC)
    keys = [ln for ln in out.splitlines() if ln.startswith("[") and ln != "[Python]"]
    assert code == 0 and keys == ["[CPU]", "[CUDA]"]
    from atenmap import devices

    assert devices.common_keys(["CPU", "CUDA", "MPS", "SparseCPU"]) == ["CPU", "CUDA"]
    assert devices.common_keys(["CPU", "CompositeExplicitAutograd", "MPS"]) == ["CPU", "CompositeExplicitAutograd"]
    assert devices.common_keys(["SparseCPU"]) == ["SparseCPU"]


def test_key_all_and_summary_line(capsys):
    from atenmap.views.text import chain_lines
    from atenmap.api import Index

    with Index.open(SRC, codegen=False) as ix:
        lines = chain_lines(ix.chain("mul.out", keys=["CPU"]), more_keys=["MPS", "SparseCPU"])
    assert lines[-1] == "+2 more keys: MPS, SparseCPU (--key all shows them)"
    code, out, _ = run(capsys, "mul.out", "--key", "all", "-s", SRC)
    assert code == 0 and "more key" not in out


def test_limit_prints_n_more(capsys):
    code, out, err = run(capsys, "ops", "--limit", "2", "-s", SRC)
    assert code == 0 and len(out.splitlines()) == 2 and "more; use --limit 0 to see all" in err


@pytest.mark.parametrize("name, op", [
    ("torch.add", "add.Tensor"), ("Tensor.add", "add.Tensor"), ("torch.Tensor.add", "add.Tensor"),
    ("aten::add.out", "add.out"), ("torch.ops.aten.add.out", "add.out"), ("torch.ops.aten.exp.default", "exp"),
    ("torch.exp", "exp"), ("F.linear", "linear"), ("torch.nn.functional.linear", "linear"),
])
def test_python_names_resolve(capsys, name, op):
    code, out, _ = run(capsys, name, "-s", SRC)
    assert code == 0 and out.startswith(f"{op}: "), out[:80]


def test_version_and_short_help(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("atenmap ") and "Python 3." in out and "tree-sitter" in out
    assert run(capsys, "-V")[1] == out
    code, out, _ = run(capsys, "-h")
    assert code == 0 and "Usage: atenmap" in out
    code, out, _ = run(capsys, "chain", "-h")
    assert code == 0 and "[required]" in out and "\\[" not in out


@pytest.mark.parametrize("args", [("--format", "xml"), ("--json", "--format", "lines"), ("--key", "NoSuchKey")])
def test_usage_errors_exit_2(capsys, args):
    code, out, err = run(capsys, "mul.out", *args, "-s", SRC)
    assert code == 2 and out == "" and err.startswith("atenmap: error: ") and err.count("\n") == 1


def test_warnings_and_notes_go_to_stderr_with_prefix(capsys):
    code, out, err = run(capsys, "linear", "--key", "CUDA", "-s", SRC)
    assert code == 0 and "warning" not in out
    assert "atenmap: warning: linear has no CUDA kernel of its own" in err


def test_options_before_the_operator(capsys):
    a = run(capsys, "--key", "CUDA", "-s", SRC, "mul.out")
    b = run(capsys, "mul.out", "--key", "CUDA", "-s", SRC)
    assert a[0] == 0 and a == b
    code, out, _ = run(capsys, "-s", SRC, "ops")
    assert code == 0 and "mul.out" in out


def test_closed_pipe_exits_0(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "ATENMAP_CACHE": str(tmp_path)}
    run_ = subprocess.run([sys.executable, "-m", "atenmap", "ops", "-s", SRC], env=env, capture_output=True, timeout=300)
    assert run_.returncode == 0  # index built
    p = subprocess.Popen([sys.executable, "-m", "atenmap", "ops", "-s", SRC], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before the first line is written
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and "Traceback" not in err and "Broken pipe" not in err


def test_lines_with_link_local_are_absolute(capsys):
    code, out, _ = run(capsys, "mul.out", "--format", "lines", "--link", "local", "-s", SRC)
    assert code == 0 and out and all(ln.startswith("/") for ln in out.splitlines())


def test_key_completion(capsys):
    run(capsys, "ops", "-s", SRC)  # the index exists
    from atenmap.cli.completions import key_completions

    assert "CUDA" in key_completions("cu", SRC) and key_completions("al", SRC) == ["all"]


@pytest.mark.realtree
def test_real_add_out_and_ops_fit_120_columns(capsys, monkeypatch, real_index_26, shared_cache):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    monkeypatch.setenv("COLUMNS", "120")
    src = real_index_26.source.root
    code, out, err = run(capsys, "add.out", "-s", src)
    assert code == 0 and all(len(ln) <= 120 for ln in out.splitlines())
    keys = [ln for ln in out.splitlines() if ln.startswith("[")]
    assert keys == ["[CPU]", "[CUDA]", "[Python]"]  # what runs first; the Python entry points last
    assert out.splitlines()[-1].startswith("+8 more keys: MPS, MkldnnCPU, SparseCPU") and "(--key all" in out
    assert "<torchgen>" not in out and "warning" not in out
    code, out, _ = run(capsys, "ops", "-s", src)
    assert code == 0 and len(out.splitlines()) > 2000 and all(len(ln) <= 120 for ln in out.splitlines())


@pytest.mark.realtree
@pytest.mark.parametrize("name, op", [("softmax", "softmax.int"), ("torch.softmax", "softmax.int"), ("add", "add.Tensor"),
                                      ("F.relu", "relu"), ("F.softmax", "softmax.int"), ("Tensor.add_", "add_.Tensor"),
                                      ("torch.ops.aten.softmax", "softmax.int"), ("torch.linalg.svd", "linalg_svd")])
def test_real_python_names(real_index_26, name, op):
    assert str(real_index_26.operator(name).name) == op


@pytest.mark.realtree
def test_real_bare_name_note_on_stderr(capsys, monkeypatch, real_index_26, shared_cache):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    code, out, err = run(capsys, "softmax", "-s", real_index_26.source.root)
    assert code == 0 and out.startswith("softmax.int: ")
    assert "atenmap: softmax means softmax.int (the first signature of its Python binding); other overloads: " in err
