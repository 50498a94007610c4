"""`atenmap trace`: running a script, its report, failing scripts, --key CUDA without GPU work,
--json/--chrome, -m, and no torch at all."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest


from .conftest import FIXTURE_TREE, PROGRESS, REPO, cli_run

OK = textwrap.dedent("""\
    import sys
    import torch

    a = torch.ones(4, 4)
    b = torch.mul(a, a)        # line 5
    c = torch.mm(a, b)         # line 6
    print("script says", sys.argv[1:])
""")
BAD = textwrap.dedent("""\
    import torch


    def boom(a):
        return torch.mm(a, a)  # line 5: 2x3 @ 2x3 fails


    x = torch.exp(torch.ones(2, 3))
    boom(x)                    # line 9
""")


def run(capsys, *args):
    return cli_run(capsys, *args, drop=PROGRESS)


@pytest.fixture
def work(tmp_path, monkeypatch, shared_cache, mini_index):
    """A folder with the scripts, as cwd; the fixture tree's index already built."""
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text(OK)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_script_lines_joined_to_chains(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    code, out, err = run(capsys, "trace", "-s", str(FIXTURE_TREE), "--", "ok.py", "--flag", "x")
    assert code == 0, err
    assert "script says ['--flag', 'x']" in out
    lines = out.splitlines()
    assert "ok.py:5" in lines, out
    i = lines.index("ok.py:5")
    assert lines[i + 1].startswith("  torch.mul -> aten::mul.Tensor [CPU] -> BinaryOpsKernel.cpp:10 mul_kernel")
    j = lines.index("ok.py:6")
    assert lines[j + 1].startswith("  torch.mm -> aten::mm [CPU] -> LinearAlgebra.cpp:13 mm_out_cpu -> "
                                   "LinearAlgebra.cpp:10 cpublas::gemm  (1 call, ")
    assert "warning: the indexed source is PyTorch 2.6.0a0+fixture but the installed torch is" in err


def test_failing_script_shows_its_traceback_and_what_ran(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    code, out, err = run(capsys, "trace", "-s", str(FIXTURE_TREE), "--", "bad.py")
    assert code == 1
    tb = err[err.index("Traceback"):]
    assert f'File "{work / "bad.py"}", line 9, in <module>' in tb and 'bad.py", line 5, in boom' in tb
    assert tb.count('File "') == 2  # no atenmap, runpy or torch frames
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in tb
    assert "aten::exp [CPU]" in out and "bad.py:9 -> bad.py:5" in out  # recorded up to the failure
    assert err.rstrip().splitlines()[-1].startswith("atenmap: error: bad.py raised RuntimeError: ")


def test_key_cuda_without_gpu_work_says_so(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    code, out, err = run(capsys, "trace", "--key", "CUDA", "-s", str(FIXTURE_TREE), "--", "ok.py")
    assert code == 0
    assert "nothing ran on CUDA: the traced code made" in err
    assert "[CPU]" not in out


def test_json_and_chrome_written_only_where_asked(work, capsys):
    torch = pytest.importorskip("torch", reason="atenmap trace needs torch")
    before = set(p.name for p in work.iterdir())
    code, _, err = run(capsys, "trace", "--json", "t.json", "--chrome", "c.json", "-s", str(FIXTURE_TREE), "ok.py")
    assert code == 0, err
    assert set(p.name for p in work.iterdir()) - before == {"t.json", "c.json"}
    d = json.loads((work / "t.json").read_text())
    assert d["script"]["exit_code"] == 0 and d["torch_version"] == torch.__version__
    mul = next(e for e in d["entries"] if e["op"] == "aten::mul.Tensor")
    assert mul["stack"][-1]["line"] == 5 and mul["chain"]["kernel"]["file"].endswith("BinaryOpsKernel.cpp")
    evs = json.loads((work / "c.json").read_text())["traceEvents"]
    mul = next(e for e in evs if e.get("args", {}).get("atenmap.op") == "aten::mul.Tensor [CPU]")
    assert mul["name"] == "aten::mul" and mul["args"]["atenmap.source"] == "ok.py:5"


def test_module_and_exit_code(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    (work / "pkgmod.py").write_text("import sys, torch\ntorch.exp(torch.ones(1))\nsys.exit(3)\n")
    code, out, _ = run(capsys, "trace", "-s", str(FIXTURE_TREE), "-m", "pkgmod")
    assert code == 3 and "pkgmod.py:2" in out and "aten::exp [CPU]" in out
    code, out, _ = run(capsys, "trace", "-s", str(FIXTURE_TREE), "--", "-m", "pkgmod")
    assert code == 3 and "pkgmod.py:2" in out


def test_bad_input_exit_2(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    code, _, err = run(capsys, "trace", "-s", str(FIXTURE_TREE), "--", "missing.py")
    assert code == 2 and err == "atenmap: error: no such script: missing.py\n"
    code, _, err = run(capsys, "trace", "-s", str(FIXTURE_TREE))
    assert code == 2 and "no script given" in err
    # Output paths are checked before the script runs: the script never prints.
    (work / "loud.py").write_text("print('ran')\n")
    for opt in ("--json", "--chrome"):
        code, out, err = run(capsys, "trace", opt, "no/such/dir/out.json", "-s", str(FIXTURE_TREE), "--", "loud.py")
        assert code == 1 and "ran" not in out
        assert err == "atenmap: error: cannot write no/such/dir/out.json: no folder no/such/dir\n"


def test_no_torch_exit_2(work, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec("torch") is None: as if not installed
    code, out, err = run(capsys, "trace", "-s", str(FIXTURE_TREE), "--", "ok.py")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("atenmap: error: torch is not installed in this Python")


def test_script_that_changes_directory_keeps_json_where_asked(work, capsys):
    """Issue 14, item 7: `--json rep.json` names a file where atenmap was started, whatever the script's cwd."""
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    (work / "sub").mkdir()
    (work / "cd.py").write_text("import os, torch\nos.chdir('sub')\ntorch.mul(torch.ones(2), torch.ones(2))\n")
    code, _, err = run(capsys, "trace", "--json", "rep.json", "-s", str(FIXTURE_TREE), "cd.py")
    assert code == 0, err
    assert (work / "rep.json").is_file() and not (work / "sub" / "rep.json").exists()
    assert json.loads((work / "rep.json").read_text())["script"]["exit_code"] == 0


@pytest.mark.parametrize("close", ["sys.stdout.close()", "os.close(1)"])
def test_script_that_closes_stdout_keeps_the_report(work, shared_cache, close):
    """Issue 14, item 5: the report is printed after a script closed stdout (it was lost)."""
    import os
    import subprocess

    pytest.importorskip("torch", reason="atenmap trace needs torch")
    (work / "close.py").write_text(f"import os, sys, torch\ntorch.mul(torch.ones(2), torch.ones(2))\n{close}\n")
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "ATENMAP_CACHE": str(shared_cache)}
    r = subprocess.run([sys.executable, "-m", "atenmap", "trace", "-s", str(FIXTURE_TREE), "--", "close.py"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "close.py:2" in r.stdout and "aten::mul" in r.stdout, r.stdout


def test_dispatch_mode_is_opt_in_and_answers_the_same_lines(work, capsys):
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    outs = {}
    for flag in ((), ("--dispatch-mode",)):
        code, out, err = run(capsys, "trace", *flag, "--json", "t.json", "-s", str(FIXTURE_TREE), "--", "ok.py")
        assert code == 0, err
        d = json.loads((work / "t.json").read_text())
        outs[flag] = (d["profiled"], [(e["op"], e["stack"][-1]["line"]) for e in d["entries"]
                                      if e["op"] in ("aten::mul.Tensor", "aten::mm")])
    # the default is the profiler alone; the dispatch mode (opt-in) sees the same calls on the same lines
    assert outs[()][0] is True and outs[()][1] == outs[("--dispatch-mode",)][1] == [("aten::mul.Tensor", 5), ("aten::mm", 6)]
