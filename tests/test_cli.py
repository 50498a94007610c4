"""The CLI: exit codes, one-line errors, text and JSON output, the `atenmap OP` shorthand."""
from __future__ import annotations

import json
import pathlib
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
    assert err.strip() == "atenmap: error: unknown operator 'mul.ot'; did you mean mul.out, mv.out, mm.out, mul.Tensor, sub.out?"


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


def test_a_key_no_operator_has_is_a_usage_error_listing_the_keys(capsys, mini_index):
    code, out, err = run(capsys, "mul.out", "--key", "bogus", "-s", str(FIXTURE_TREE))
    keys = sorted({d.key for o in mini_index.operators() for d in o.dispatch})  # every operator's, decoded
    assert code == 2 and out == ""
    assert err.strip() == f"atenmap: error: --key bogus: no such dispatch key; keys: {', '.join(keys)}"
    code, _, _ = run(capsys, "mul.out", "--key", "cuda", "-s", str(FIXTURE_TREE))  # any case
    assert code == 0


def test_ops_and_index_commands(capsys):
    code, out, _ = run(capsys, "ops", "--json", "-s", str(FIXTURE_TREE))
    ops = json.loads(out)
    add = next(o for o in ops if o["op"] == "add.out")
    assert code == 0 and add["yaml"]["line"] == 8 and add["dispatch"]["CUDA"] == "ufunc_add_CUDA"
    assert next(o for o in ops if o["op"] == "linear")["kind"] == "composite_implicit"
    code, out, _ = run(capsys, "index", "-s", str(FIXTURE_TREE))
    assert code == 0 and "operators: 56" in out and "files: " in out


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
    assert code == 2 and out == ""  # a missing tree exits 2 (README; issue 34, item 13)
    assert err.strip().splitlines()[-1] == ("atenmap: error: this command needs a local PyTorch tree: "
                                            "pass --source PATH, or get one with `atenmap fetch`")


# ---- `atenmap OP` without typer (cli/quick.py) ---------------------------------------------------
def test_quick_path_reads_exactly_the_chain_commands_options():
    import click
    import typer.main

    from atenmap.cli import _COMMAND_MODULES, command_names, typer_app
    from atenmap.cli.quick import CHAIN_OPTIONS, MAX_DEPTH

    cmd = typer.main.get_command(typer_app()).commands["chain"]
    opts = {o: (p.name, not p.is_flag) for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
    assert opts == CHAIN_OPTIONS
    assert next(p for p in cmd.params if p.name == "depth").type.max == MAX_DEPTH
    assert command_names() == set(_COMMAND_MODULES)


@pytest.mark.parametrize("args", [
    ["mul.out", "--key", "CUDA"], ["chain", "exp.out", "-k", "CPU", "--json"], ["linear", "--format", "lines"],
    ["--key=all", "add.out", "--no-expand", "--depth", "3"], ["mm", "-w", "--link", "local"], ["add"],
    ["nosuch.op"], ["mul.out", "-k", "XLA"]])
def test_quick_path_answers_as_typer_does(capsys, args):
    from atenmap.cli import main, quick

    full = [*args, "-s", str(FIXTURE_TREE)]
    assert quick.chain_arguments(full) is not None
    cli_run(capsys, *full)  # builds the index if needed
    quick_answer = cli_run(capsys, *full)
    with pytest.raises(SystemExit) as exc:
        main(full, quick=False)
        raise SystemExit(0)
    typed = capsys.readouterr()
    assert (exc.value.code or 0, typed.out, typed.err) == quick_answer


@pytest.mark.parametrize("args", [
    [], ["--help"], ["mul.out", "-h"], ["-V"], ["ops"], ["-s", "TREE", "ops"], ["mul.out", "--bogus"], ["mul.out", "--depth", "0"],
    ["mul.out", "--depth", "x"], ["mul.out", "extra"], ["index"], ["--", "mul.out"], ["mul.out", "-kCUDA"],
    ["mul.out", "--key"], ["mul.out", "--json=1"], ["mul.out", "--key", "--json"]])
def test_quick_path_leaves_everything_else_to_typer(args):
    from atenmap.cli import quick

    assert quick.chain_arguments(args) is None


def test_quick_path_takes_an_operator_named_like_a_command_after_chain():
    from atenmap.cli import quick

    assert quick.chain_arguments(["chain", "index", "-k", "CPU", "-k", "CUDA"])["op"] == "index"
    assert quick.chain_arguments(["chain", "index", "-k", "CPU", "-k", "CUDA"])["key"] == ["CPU", "CUDA"]


def test_a_warm_chain_query_imports_neither_typer_nor_yaml_nor_tree_sitter(tmp_path):
    """Nor what only builds use (shutil, importlib.resources, build.py: a query reads indexstate.py) nor
    hashlib's OpenSSL (source/find.py), nor the other verbs' records (model_answers.py)."""
    src = pathlib.Path(__file__).resolve().parents[1] / "src"
    env = {"ATENMAP_CACHE": str(tmp_path), "PATH": "", "PYTHONPATH": str(src)}
    argv = ["mul.out", "-k", "CUDA", "-s", str(FIXTURE_TREE)]
    build = subprocess.run([sys.executable, "-m", "atenmap", *argv], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL)
    assert build.returncode == 0, build.stderr
    probe = ("import sys; from atenmap.cli import main; main(sys.argv[1:]); "
             "heavy = ('typer', 'click', 'yaml', 'tree_sitter', 'multiprocessing', 'concurrent.futures', "
             "'importlib.metadata', 'shutil', 'hashlib', 'importlib.resources', 'atenmap.model_answers', 'atenmap.build'); print('loaded:', [m for m in heavy if m in sys.modules], file=sys.stderr)")
    warm = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == build.stdout
    assert warm.stderr.splitlines()[-1] == "loaded: []"



def test_a_warm_chain_query_on_a_terminal_does_not_load_the_build(tmp_path):
    """On a terminal a query asks whether torchgen is pending (Note [Generated steps later]) and
    whether the tree was ever indexed (the preview), and sets up the progress display: none of it
    loads build.py when the index is fresh. stdout and stderr are a pseudo-terminal here."""
    import os
    import pty
    import threading

    src = pathlib.Path(__file__).resolve().parents[1] / "src"
    env = {"ATENMAP_CACHE": str(tmp_path), "PATH": "", "PYTHONPATH": str(src), "ATENMAP_PAGER": "",
           "COLUMNS": "120"}
    argv = ["mul.out", "-k", "CUDA", "-s", str(FIXTURE_TREE)]
    build = subprocess.run([sys.executable, "-m", "atenmap", *argv], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL)
    assert build.returncode == 0, build.stderr
    said = tmp_path / "loaded"
    probe = ("import sys; from atenmap.cli import main\n"
             "try:\n    main(sys.argv[2:])\n"
             "finally:\n    open(sys.argv[1], 'w').write(str(sorted(m for m in ('atenmap.build', 'atenmap.preview', "
             "'tree_sitter') if m in sys.modules)))\n")
    master, slave = pty.openpty()
    drained = threading.Thread(target=lambda: _drain(master), daemon=True)
    drained.start()
    warm = subprocess.run([sys.executable, "-c", probe, str(said), *argv], stdout=slave, stderr=slave, env=env,
                          stdin=subprocess.DEVNULL)
    os.close(slave)
    drained.join()
    assert warm.returncode == 0
    assert said.read_text() == "['atenmap.preview']"  # never_indexed asks the preview module; the build stays out


def _drain(fd: int) -> None:
    import os

    try:
        while os.read(fd, 65536):
            pass
    except OSError:  # the terminal's other side closed
        pass
    os.close(fd)

# ---- start-up (Note [Start-up budget] in cli/__init__.py) ------------------------------------------
# Watched from outside, nothing of atenmap's replaced: an audit hook notes each atenmap module as it
# is first imported and whether the collector was on then; once ``imports_done`` has run the
# collector is back on, so a module imported with it on was loaded after that point.
_GC_PROBE = ("import atexit, gc, sys\n"
             "loads = []\n"
             "def hook(event, args):\n"
             "    if event == 'import' and str(args[0]).startswith('atenmap.'):\n"
             "        loads.append((args[0], gc.isenabled()))\n"
             "sys.addaudithook(hook)\n"
             "import atenmap.cli as cli\n"
             "before = len(loads)  # what importing cli itself loads, before program() starts\n"
             "atexit.register(lambda: print('paused while loading:', any(not on for _m, on in loads[before:]), "
             "'at exit: enabled', gc.isenabled(), 'frozen', gc.get_freeze_count() > 0, "
             "'loaded after:', sorted(m for m, on in loads[before:] if on), file=sys.stderr))\n"
             "sys.argv[0] = 'atenmap'\n"
             "cli.program()\n")


@pytest.mark.parametrize("args", [["mul.out", "-k", "CUDA"], ["ops", "--key", "CUDA"]])
def test_program_pauses_the_collector_until_the_commands_modules_are_loaded(tmp_path, args):
    """``program()`` (the script, ``python -m atenmap``) answers as ``main()`` does; the collector
    is paused while the modules load and resumes afterwards, on the quick path and typer's. A warm
    chain query loads no atenmap module after ``imports_done`` (quick.CHAIN_MODULES is complete)."""
    src = pathlib.Path(__file__).resolve().parents[1] / "src"
    env = {"ATENMAP_CACHE": str(tmp_path), "PATH": "", "PYTHONPATH": str(src)}
    argv = [*args, "-s", str(FIXTURE_TREE)]
    build = subprocess.run([sys.executable, "-m", "atenmap", *argv], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL)
    assert build.returncode == 0, build.stderr
    warm = subprocess.run([sys.executable, "-c", _GC_PROBE, *argv], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == build.stdout
    last = warm.stderr.splitlines()[-1]
    assert last.startswith("paused while loading: True at exit: enabled True frozen True loaded after: ")
    if args[0] != "ops":  # typer's commands load their views when they run
        assert last.endswith("loaded after: []")


def test_main_inside_another_program_leaves_the_collector_alone(capsys):
    import gc

    from atenmap.cli import main

    frozen = gc.get_freeze_count()
    with pytest.raises(SystemExit) as exc:
        main(["ops", "-s", str(FIXTURE_TREE)], quick=False)
        raise SystemExit(0)
    capsys.readouterr()
    cli_run(capsys, "mul.out", "-k", "CUDA", "-s", str(FIXTURE_TREE))
    assert (exc.value.code or 0, gc.isenabled(), gc.get_freeze_count()) == (0, True, frozen)
