"""codegen.py: running the checkout's torchgen, caching, reuse, atomicity, failure warnings.

Most tests use a fake tree whose ``torchgen/gen.py`` and ``tools/setup_helpers/generate_code.py``
write a file or two and then behave as $ATENMAP_FAKE_TORCHGEN / $ATENMAP_FAKE_PYBINDINGS say.
The ``realtree`` tests run the real torchgen of PyTorch 2.6.0 and 1.13.1 once per session.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import atenmap
from atenmap.extract.codegen import CodegenResult, _last_meaningful_line, codegen_inputs, input_hash, run_codegen
from atenmap.errors import AtenmapError

from .conftest import fetch_real_tree

SRC = Path(atenmap.__file__).resolve().parents[1]
REPO = SRC.parent

FAKE_GEN = '''\
"""Stands in for torchgen.gen: writes RegisterCPU.cpp, then behaves as $ATENMAP_FAKE_TORCHGEN says."""
import json, os, pathlib, sys, time
if os.environ.get("ATENMAP_FAKE_LOG"):
    with open(os.environ["ATENMAP_FAKE_LOG"], "a") as log:
        log.write("gen\\n")
args = sys.argv[1:]
out = pathlib.Path(args[args.index("--install_dir") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "RegisterCPU.cpp").write_text('m.impl("add.out", TORCH_FN(wrapper_CPU_add_out_out));\\n')
(out / "argv.json").write_text(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "file": __file__}))
pathlib.Path("relative-default.txt").write_text("where a default output path would land\\n")
mode = os.environ.get("ATENMAP_FAKE_TORCHGEN", "ok")
if mode == "missing-module":
    import atenmap_no_such_module
elif mode == "assert":
    assert False, "\\n\\nWARNING: The generated C shim header files have changed.\\n\\n    "
elif mode == "silent-exit":
    sys.exit(3)
elif mode == "writes-nothing":
    import shutil; shutil.rmtree(out)
elif mode == "slow-child":  # a grandchild that would outlive a plain kill of torchgen
    import subprocess
    woke = os.environ["ATENMAP_FAKE_STARTED"] + ".woke"  # written only if the grandchild outlives its kill
    child = subprocess.Popen([sys.executable, "-c", f"import pathlib, time; time.sleep(60); pathlib.Path({woke!r}).touch()"])
    pathlib.Path(os.environ["ATENMAP_FAKE_STARTED"]).write_text(str(child.pid))
    time.sleep(60)
elif mode == "slow":
    pathlib.Path(os.environ["ATENMAP_FAKE_STARTED"]).touch()
    time.sleep(float(os.environ.get("ATENMAP_FAKE_SLEEP", "60")))
elif mode == "rendezvous":  # succeeds only if a bindings run is alive at the same time
    here = pathlib.Path(os.environ["ATENMAP_FAKE_MEET"])
    (here / "aten").touch()
    for _ in range(600):
        if (here / "pybindings").exists():
            sys.exit(0)
        time.sleep(0.05)
    sys.exit(4)
elif mode == "fail-late":  # fails once a bindings run has started
    here = pathlib.Path(os.environ["ATENMAP_FAKE_MEET"])
    while not (here / "pybindings").exists():
        time.sleep(0.05)
    sys.exit(5)
'''

FAKE_GENERATE_CODE = '''\
"""Stands in for tools.setup_helpers.generate_code --subset pybindings."""
import os, pathlib, sys
if os.environ.get("ATENMAP_FAKE_PYBINDINGS") == "fail":
    raise RuntimeError("boom")
args = sys.argv[1:]
if os.environ.get("ATENMAP_FAKE_MEET") and "pybindings" in args:
    here = pathlib.Path(os.environ["ATENMAP_FAKE_MEET"])
    (here / "pid").write_text(str(os.getpid()))
    (here / "pybindings").touch()
    if os.environ.get("ATENMAP_FAKE_PYBINDINGS") == "hang":
        import time; time.sleep(120)
gen = pathlib.Path(args[args.index("--gen-dir") + 1]) / "torch" / "csrc" / "autograd" / "generated"
gen.mkdir(parents=True)
(gen / "python_torch_functions_0.cpp").write_text("static PyObject * THPVariable_add(PyObject* self_)\\n")
'''

ATEN_PROGRESS = "running torchgen (ATen)…"
PYTHON_PROGRESS = "running torchgen (python bindings)…"
AUTOGRAD_PROGRESS = "running torchgen (autograd)…"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def fake_tree(tmp_path: Path) -> Path:
    root = tmp_path / "pytorch"
    write(root / "aten/src/ATen/native/native_functions.yaml", "- func: add.out(Tensor self, Tensor other) -> Tensor\n")
    write(root / "aten/src/ATen/native/tags.yaml", "- tag: pointwise\n")
    write(root / "aten/src/ATen/templates/RegisterDispatchKey.cpp", "// ${dispatch_registrations}\n")
    write(root / "torchgen/__init__.py", "")
    write(root / "torchgen/gen.py", FAKE_GEN)
    write(root / "torchgen/README.md", "not an input\n")
    write(root / "torchgen/__pycache__/gen.cpython-311.yaml", "not an input either\n")
    write(root / "tools/__init__.py", "")
    write(root / "tools/setup_helpers/__init__.py", "")
    write(root / "tools/setup_helpers/generate_code.py", FAKE_GENERATE_CODE)
    write(root / "tools/autograd/__init__.py", "")
    write(root / "tools/autograd/derivatives.yaml", "- name: add.out\n")
    write(root / "tools/autograd/deprecated.yaml", "[]\n")
    write(root / "tools/autograd/templates/python_torch_functions.cpp", "// ${py_methods}\n")
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Counts fake torchgen runs: one line per run."""
    path = tmp_path / "torchgen.log"
    monkeypatch.setenv("ATENMAP_FAKE_LOG", str(path))
    return path


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def entries(cache: Path) -> list[str]:
    """The cache's entries, less the list of trees already told of (see test_notice_...)."""
    return sorted(p.name for p in cache.iterdir() if p.name != ".noticed") if cache.exists() else []


# --- caching and reuse -----------------------------------------------------------------------------


def test_first_call_generates_second_reuses(fake_tree: Path, cache: Path, log: Path) -> None:
    messages: list[str] = []
    first = run_codegen(fake_tree, cache, progress=messages.append)

    assert first.reused is False and first.warnings == () and runs(log) == 1  # it ran: the fake logged one run
    assert first.out_dir == cache / f"codegen-{first.input_hash}" / "aten"
    assert 'm.impl("add.out"' in (first.out_dir / "RegisterCPU.cpp").read_text()
    assert first.python_dir is not None
    assert "THPVariable_add" in (first.python_dir / "python_torch_functions_0.cpp").read_text()
    assert first.autograd_dir == first.out_dir.parent / "autograd"  # gen_autograd (--subset libtorch)
    assert messages == [ATEN_PROGRESS, PYTHON_PROGRESS, AUTOGRAD_PROGRESS]
    done = json.loads((first.out_dir.parent / "DONE").read_text())
    assert done["input_hash"] == first.input_hash and done["root"] == str(fake_tree.resolve())
    assert done["files"] == {"aten": 2, "python": 1, "autograd": 1}

    messages.clear()
    second = run_codegen(fake_tree, cache, progress=messages.append)
    assert second == CodegenResult(first.out_dir, first.python_dir, 0.0, True, (), first.input_hash,
                                   first.autograd_dir)
    assert messages == []
    assert runs(log) == 1


def test_torchgen_gets_absolute_paths_and_never_writes_into_the_checkout(fake_tree: Path, cache: Path) -> None:
    result = run_codegen(fake_tree, cache)

    assert result.out_dir is not None
    seen = json.loads((result.out_dir / "argv.json").read_text())
    root = fake_tree.resolve()
    flag, source, flag2, install = seen["argv"][1:]
    assert (flag, source, flag2) == ("--source-path", str(root / "aten/src/ATen"), "--install_dir")
    # written into a temporary sibling, renamed into place when complete
    assert Path(install).parent.parent == cache and Path(install).name == "aten"
    assert Path(install).parent.name.startswith(f".codegen-{result.input_hash[:16]}.tmp-")
    assert not (root / "relative-default.txt").exists()  # cwd was a scratch folder, since removed
    assert not any(root.rglob("*.pyc"))
    assert not (result.out_dir.parent / "scratch").exists()


def test_aoti_install_dir_is_passed_where_gen_py_knows_it(fake_tree: Path, cache: Path) -> None:
    gen = fake_tree / "torchgen/gen.py"
    gen.write_text(gen.read_text() + '# parser.add_argument("--aoti-install-dir", "--aoti_install_dir")\n')

    result = run_codegen(fake_tree, cache)

    assert result.out_dir is not None
    argv = json.loads((result.out_dir / "argv.json").read_text())["argv"]
    assert argv[-2] == "--aoti-install-dir" and argv[-1] == str(Path(argv[4]).parent / "aoti")


def test_sources_only_where_gen_py_knows_the_flag(fake_tree: Path, cache: Path) -> None:
    """Note [Sources, not headers]."""
    gen = fake_tree / "torchgen/gen.py"
    gen.write_text(gen.read_text() + '# parser.add_argument("--generate", choices=["headers", "sources"])\n')

    result = run_codegen(fake_tree, cache)

    argv = json.loads((result.out_dir / "argv.json").read_text())["argv"]
    assert argv[-2:] == ["--generate", "sources"]


def test_changed_input_regenerates_and_drops_the_old_entry(fake_tree: Path, cache: Path, log: Path) -> None:
    old = run_codegen(fake_tree, cache)
    write(fake_tree / "aten/src/ATen/native/native_functions.yaml", "- func: sub(Tensor self) -> Tensor\n")

    new = run_codegen(fake_tree, cache)

    assert new.reused is False and new.input_hash != old.input_hash
    assert entries(cache) == [".codegen.lock", f"codegen-{new.input_hash}"]
    assert runs(log) == 2


def test_entries_of_other_checkouts_are_kept(fake_tree: Path, cache: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    subprocess.run(["cp", "-r", str(fake_tree), str(other)], check=True)
    write(other / "aten/src/ATen/native/native_functions.yaml", "- func: mul(Tensor self) -> Tensor\n")

    a = run_codegen(fake_tree, cache)
    b = run_codegen(other, cache)

    assert entries(cache) == sorted([".codegen.lock", f"codegen-{a.input_hash}", f"codegen-{b.input_hash}"])
    assert run_codegen(fake_tree, cache).reused


def test_codegen_inputs_and_hash(fake_tree: Path) -> None:
    rel = [p.relative_to(fake_tree).as_posix() for p in codegen_inputs(fake_tree)]
    assert rel == [
        "aten/src/ATen/native/native_functions.yaml",
        "aten/src/ATen/native/tags.yaml",
        "aten/src/ATen/templates/RegisterDispatchKey.cpp",
        "tools/autograd/__init__.py",
        "tools/autograd/deprecated.yaml",
        "tools/autograd/derivatives.yaml",
        "tools/autograd/templates/python_torch_functions.cpp",
        "tools/setup_helpers/generate_code.py",
        "torchgen/__init__.py",
        "torchgen/gen.py",
    ]
    before = input_hash(fake_tree)
    assert input_hash(fake_tree) == before
    assert input_hash(fake_tree, python_bindings=False) != before
    (fake_tree / "torchgen/README.md").write_text("edited, but not an input\n")
    assert input_hash(fake_tree) == before
    template = fake_tree / "aten/src/ATen/templates/RegisterDispatchKey.cpp"
    template.write_text("// edited\n")
    assert input_hash(fake_tree) != before
    template.rename(template.with_name("Renamed.cpp"))  # same content, other path
    edited = input_hash(fake_tree)
    template.with_name("Renamed.cpp").rename(template)
    assert input_hash(fake_tree) != edited


# --- failures ---------------------------------------------------------------------------------------


def test_missing_module_is_one_warning_and_nothing_is_cached(
    fake_tree: Path, cache: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", "missing-module")

    result = run_codegen(fake_tree, cache)

    assert result.out_dir is None and result.python_dir is None and result.reused is False
    assert result.warnings == ("torchgen failed: ModuleNotFoundError: No module named 'atenmap_no_such_module'",)
    assert entries(cache) == [".codegen.lock"]  # the partial output was thrown away
    run_codegen(fake_tree, cache)
    assert runs(log) == 2  # a failure is retried, not reused


@pytest.mark.parametrize(
    ("mode", "warning"),
    [
        ("assert", "torchgen failed: AssertionError: WARNING: The generated C shim header files have changed."),
        ("silent-exit", "torchgen failed: exit status 3"),
        ("writes-nothing", "torchgen failed: exited 0 but wrote nothing"),
    ],
)
def test_failure_reason_is_the_meaningful_line(
    fake_tree: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, mode: str, warning: str
) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", mode)
    assert run_codegen(fake_tree, cache).warnings == (warning,)


def test_timeout(fake_tree: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", "slow")
    monkeypatch.setenv("ATENMAP_FAKE_STARTED", str(tmp_path / "started"))

    result = run_codegen(fake_tree, cache, timeout_s=1)

    assert result.out_dir is None and result.warnings == (
        "torchgen failed: timed out after 1 s (torchgen and its children killed; ATENMAP_CODEGEN_TIMEOUT sets the limit)",)
    assert entries(cache) == [".codegen.lock"]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] == "Z"  # a zombie waiting for init is dead
    except FileNotFoundError:
        return True


def test_timeout_kills_the_whole_process_group_and_comes_from_the_setting(
        fake_tree: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", "slow-child")
    monkeypatch.setenv("ATENMAP_FAKE_STARTED", str(tmp_path / "started"))
    monkeypatch.setenv("ATENMAP_CODEGEN_TIMEOUT", "2")
    result = run_codegen(fake_tree, cache)
    assert result.warnings[0].startswith("torchgen failed: timed out after 2 s")
    child = int((tmp_path / "started").read_text())
    woke = tmp_path / "started.woke"
    while not _gone(child) and not woke.exists():  # one event or the other, never a clock
        time.sleep(0.05)
    assert _gone(child) and not woke.exists(), "torchgen's own child outlived the timeout"


def test_notice_the_first_time_a_trees_code_runs(fake_tree: Path, cache: Path, log: Path, capsys) -> None:
    said: list[str] = []
    run_codegen(fake_tree, cache, notice=said.append)
    assert said == [f"running {fake_tree.resolve()}/torchgen (code from that tree); "
                    "ATENMAP_CODEGEN=never turns this off"]
    write(fake_tree / "aten/src/ATen/native/native_functions.yaml", "- func: sub(Tensor self) -> Tensor\n")
    run_codegen(fake_tree, cache, notice=said.append)  # runs again (new inputs): already told
    assert runs(log) == 2 and len(said) == 1
    write(fake_tree / "aten/src/ATen/native/native_functions.yaml", "- func: mul(Tensor self) -> Tensor\n")
    cache2 = cache.parent / "cache2"
    run_codegen(fake_tree, cache2)  # no callback: stderr
    assert capsys.readouterr().err.startswith(f"atenmap: running {fake_tree.resolve()}/torchgen")


def test_interpreter_that_does_not_exist(fake_tree: Path, cache: Path, tmp_path: Path) -> None:
    result = run_codegen(fake_tree, cache, python=str(tmp_path / "no-python"))
    assert result.out_dir is None
    assert result.warnings == (f"torchgen failed: cannot run {tmp_path / 'no-python'}: No such file or directory",)


def test_not_a_pytorch_tree(tmp_path: Path, cache: Path) -> None:
    result = run_codegen(tmp_path, cache)
    assert result.out_dir is None and result.reused is False
    assert result.warnings == (
        f"torchgen skipped: {tmp_path.resolve()} is not a PyTorch source tree "
        "(no aten/src/ATen/native/native_functions.yaml)",
    )
    assert not cache.exists()


def test_tree_without_torchgen(fake_tree: Path, cache: Path) -> None:
    subprocess.run(["rm", "-r", str(fake_tree / "torchgen")], check=True)
    (warning,) = run_codegen(fake_tree, cache).warnings
    assert warning.startswith("torchgen skipped:") and "has no torchgen/gen.py" in warning


def test_missing_root_is_misuse(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(AtenmapError, match="is not a directory"):
        run_codegen(tmp_path / "nowhere", cache)


def test_python_bindings_failure_keeps_aten(fake_tree: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_PYBINDINGS", "fail")

    result = run_codegen(fake_tree, cache)

    assert result.out_dir is not None and (result.out_dir / "RegisterCPU.cpp").is_file()
    assert result.python_dir is None
    assert result.warnings == ("torchgen (python bindings) failed: RuntimeError: boom",
                               "torchgen (autograd) failed: RuntimeError: boom")
    again = run_codegen(fake_tree, cache)
    assert again.reused and again.python_dir is None and again.warnings == result.warnings


def test_generators_run_side_by_side(fake_tree: Path, cache: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Note [The generators run side by side]: the fake ATen run succeeds only if the bindings run
    is alive at the same time; the status lines keep their order."""
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", "rendezvous")
    monkeypatch.setenv("ATENMAP_FAKE_MEET", str(tmp_path))
    messages: list[str] = []
    result = run_codegen(fake_tree, cache, progress=messages.append)
    assert result.warnings == () and result.out_dir is not None and result.python_dir is not None
    assert messages == [ATEN_PROGRESS, PYTHON_PROGRESS, AUTOGRAD_PROGRESS]


def test_aten_failure_kills_the_other_generators(fake_tree: Path, cache: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATENMAP_FAKE_TORCHGEN", "fail-late")
    monkeypatch.setenv("ATENMAP_FAKE_PYBINDINGS", "hang")
    monkeypatch.setenv("ATENMAP_FAKE_MEET", str(tmp_path))
    result = run_codegen(fake_tree, cache)
    assert result.out_dir is None and result.warnings == ("torchgen failed: exit status 5",)
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not left to sleep
    assert [e for e in entries(cache) if not e.startswith(".codegen.lock")] == []  # nothing half-made kept


def test_python_bindings_skipped_or_not_asked(fake_tree: Path, cache: Path) -> None:
    not_asked = run_codegen(fake_tree, cache, python_bindings=False)
    assert not_asked.out_dir is not None and not_asked.python_dir is None and not_asked.warnings == ()

    subprocess.run(["rm", "-r", str(fake_tree / "tools")], check=True)
    no_tools = run_codegen(fake_tree, cache)
    assert no_tools.out_dir is not None and no_tools.python_dir is None
    (warning,) = no_tools.warnings
    assert warning.startswith("python bindings skipped:")


# --- the checkout's torchgen ------------------------------------------------------------------------


def decoy_torchgen(folder: Path) -> Path:
    write(folder / "torchgen/__init__.py", "")
    write(folder / "torchgen/gen.py", "raise SystemExit('the decoy torchgen ran')\n")
    return folder


def test_checkout_torchgen_wins_over_one_on_pythonpath(
    fake_tree: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(decoy_torchgen(tmp_path / "site")))

    result = run_codegen(fake_tree, cache)

    assert result.out_dir is not None and result.warnings == ()
    assert json.loads((result.out_dir / "argv.json").read_text())["file"] == str(fake_tree.resolve() / "torchgen/gen.py")


def test_preimported_foreign_torchgen_is_refused(
    fake_tree: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = decoy_torchgen(tmp_path / "site")
    write(site / "sitecustomize.py", f"import sys; sys.path.insert(0, {str(site)!r}); import torchgen\n")
    monkeypatch.setenv("PYTHONPATH", str(site))

    result = run_codegen(fake_tree, cache)

    assert result.out_dir is None
    assert result.warnings == (
        f"torchgen failed: torchgen was imported from {site / 'torchgen'}, not from the checkout {fake_tree.resolve()}",
    )


# --- atomicity and concurrency ----------------------------------------------------------------------

CALLER = """\
import json, sys
from pathlib import Path
from atenmap.extract.codegen import run_codegen
messages = []
r = run_codegen(Path(sys.argv[1]), Path(sys.argv[2]), progress=messages.append)
print(json.dumps({"out_dir": str(r.out_dir), "reused": r.reused, "warnings": r.warnings, "messages": messages}))
"""


def caller(root: Path, cache: Path, **env: str) -> subprocess.Popen[str]:
    full_env = {**os.environ, "PYTHONPATH": str(SRC), **env}
    return subprocess.Popen(
        [sys.executable, "-c", CALLER, str(root), str(cache)],
        env=full_env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so the test can kill it with its torchgen
    )


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until ``path`` appears; a caller that ends first fails the test (with what it printed)."""
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"{path} did not appear; the caller ended with {proc.returncode}: {proc.communicate()[0]!r}")
        time.sleep(0.05)


def test_killed_run_leaves_nothing_that_looks_complete(fake_tree: Path, cache: Path, tmp_path: Path, log: Path) -> None:
    started = tmp_path / "started"
    proc = caller(fake_tree, cache, ATENMAP_FAKE_TORCHGEN="slow", ATENMAP_FAKE_STARTED=str(started))
    wait_for(started, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the caller and its torchgen child
    proc.communicate()

    left = entries(cache)
    assert not [name for name in left if name.startswith("codegen-")]
    assert [name for name in left if ".tmp-" in name], "the killed run's temporary folder should still be there"

    result = run_codegen(fake_tree, cache)
    assert result.reused is False and result.out_dir is not None
    assert entries(cache) == [".codegen.lock", f"codegen-{result.input_hash}"]  # dead temporary removed
    assert runs(log) == 2


def test_concurrent_calls_generate_once(fake_tree: Path, cache: Path, tmp_path: Path, log: Path) -> None:
    env = {"ATENMAP_FAKE_TORCHGEN": "slow", "ATENMAP_FAKE_SLEEP": "2", "ATENMAP_FAKE_STARTED": str(tmp_path / "s")}
    first = caller(fake_tree, cache, **env)
    wait_for(tmp_path / "s", first)  # the first holds the lock and is generating
    second = caller(fake_tree, cache, **env)

    a, b = (json.loads(p.communicate(timeout=60)[0]) for p in (first, second))

    assert (first.returncode, second.returncode) == (0, 0)
    assert a["out_dir"] == b["out_dir"] and a["warnings"] == b["warnings"] == []
    assert (a["reused"], b["reused"]) == (False, True)
    assert b["messages"] == ["waiting for another atenmap codegen run…"]
    assert runs(log) == 1


# --- helpers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stderr", "line"),
    [
        (
            "Traceback (most recent call last):\n  File \"x.py\", line 1\nModuleNotFoundError: No module named 'yaml'\n",
            "ModuleNotFoundError: No module named 'yaml'",
        ),
        ("Traceback ...\nyaml.scanner.ScannerError: mapping values\n  in x.yaml, line 3\n\n", "yaml.scanner.ScannerError: mapping values"),
        ("Traceback ...\nAssertionError: \n\nWARNING: it changed\n   \n", "AssertionError: WARNING: it changed"),
        ("some progress\nfatal: cannot go on\n\n", "fatal: cannot go on"),
        ("/x/gen.py:3: DeprecationWarning: old\ntorchgen was imported from /a, not from /b\n", "torchgen was imported from /a, not from /b"),
        ("", ""),
    ],
)
def test_last_meaningful_line(stderr: str, line: str) -> None:
    assert _last_meaningful_line(stderr) == line


# --- real trees -------------------------------------------------------------------------------------


def real_codegen(version: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, CodegenResult]:
    root = fetch_real_tree(version)  # conftest's: skips off CI, fails on CI (CI=true)
    cache = tmp_path_factory.mktemp("codegen")  # never $ATENMAP_CACHE: a session fixture runs before the private cache
    return root, cache, run_codegen(root, cache)


@pytest.fixture(scope="session")
def codegen_260(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, CodegenResult]:
    return real_codegen("2.6.0", tmp_path_factory)


@pytest.fixture(scope="session")
def codegen_1131(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, CodegenResult]:
    return real_codegen("1.13.1", tmp_path_factory)


def grep(folder: Path, glob: str, needle: str) -> list[str]:
    return sorted(p.name for p in folder.glob(glob) if needle in p.read_text(errors="replace"))


COMMON_ATEN_FILES = [
    "RegisterCPU.cpp", "RegisterCUDA.cpp", "RegisterMeta.cpp", "RegisterCompositeImplicitAutograd.cpp",
    "UfuncCPU_add.cpp", "UfuncCPUKernel_add.cpp", "UfuncCUDA_add.cu",
    "Operators_0.cpp", "CompositeViewCopyKernels.cpp",
]
# Note [Sources, not headers]: declarations only, never indexed, and most of torchgen's time
NOT_WRITTEN = ["Operators.h", "Functions.h", "NativeFunctions.h", "Declarations.yaml"]


def check_common(result: CodegenResult) -> None:
    assert result.warnings == ()
    assert result.out_dir is not None and result.python_dir is not None
    for name in COMMON_ATEN_FILES:
        assert (result.out_dir / name).is_file(), name
    for name in NOT_WRITTEN:
        assert not (result.out_dir / name).exists(), name
    for name in ["python_torch_functions_0.cpp", "python_variable_methods.cpp", "python_nn_functions.cpp"]:
        assert (result.python_dir / name).is_file(), name
    assert grep(result.out_dir, "Ufunc*", "REGISTER_DISPATCH(add_stub, &add_kernel)") == [
        "UfuncCPUKernel_add.cpp", "UfuncCUDA_add.cu",
    ]
    assert grep(result.out_dir, "Ufunc*", "struct CUDAFunctor_add") == ["UfuncCUDA_add.cu"]
    assert grep(result.python_dir, "python_torch_functions_*.cpp", "static PyObject * THPVariable_add(") == [
        "python_torch_functions_2.cpp"
    ]


@pytest.mark.realtree
def test_real_260(codegen_260: tuple[Path, Path, CodegenResult]) -> None:
    root, cache, result = codegen_260
    check_common(result)
    assert result.out_dir is not None
    assert 'm.impl("add.out", TORCH_FN(wrapper_CUDA_add_out_out));' in (result.out_dir / "RegisterCUDA.cpp").read_text()
    assert not (root / "build").exists()
    # 2.x's AOTInductor shims go to our folder, not to the checkout's torch/csrc/inductor/.
    assert (result.out_dir.parent / "aoti" / "c_shim_cuda.cpp").is_file()
    assert not (root / "torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.cpp").exists()


@pytest.mark.realtree
def test_real_260_second_call_reuses(codegen_260: tuple[Path, Path, CodegenResult]) -> None:
    root, cache, first = codegen_260
    again = run_codegen(root, cache)
    assert again.reused is True and again.warnings == ()
    assert (again.out_dir, again.python_dir, again.input_hash) == (first.out_dir, first.python_dir, first.input_hash)


@pytest.mark.realtree
def test_real_1131(codegen_1131: tuple[Path, Path, CodegenResult]) -> None:
    root, cache, result = codegen_1131
    check_common(result)
    assert result.out_dir is not None
    # 1.13's wrappers carry no dispatch key in their name.
    assert 'm.impl("add.out", TORCH_FN(wrapper_add_out_out));' in (result.out_dir / "RegisterCUDA.cpp").read_text()
    assert not (root / "build").exists()


@pytest.mark.realtree
def test_real_codegen_writes_into_a_temporary_cache(codegen_260, tmp_path_factory):
    """It once wrote codegen-* folders into the user's $ATENMAP_CACHE root."""
    _root, cache, result = codegen_260
    assert cache.is_relative_to(tmp_path_factory.getbasetemp()) and result.out_dir.is_relative_to(cache)
