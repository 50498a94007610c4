"""Shared fixtures: the miniature tree in fixtures/, real PyTorch trees, private caches."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
FIXTURE_TREE = REPO / "fixtures" / "pytorch-mini"


def _load_script(name: str):
    """A module of scripts/ (build tools that are not part of the installed package)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


build_bundle = _load_script("build_bundle")


PROGRESS = ("atenmap: indexing", "atenmap: running ", "atenmap: torchgen ran in", "USDT:")


def cli_run(capsys, *args, drop: tuple[str, ...] = (), errors_only: bool = False):
    """Run the CLI in-process: ``(exit code, stdout, stderr)``. ``drop``: stderr lines starting
    with these go; ``errors_only``: of atenmap's own stderr lines keep only ``atenmap: error``."""
    import pytest
    from atenmap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    err = "".join(ln for ln in out.err.splitlines(True)
                  if not (drop and ln.startswith(drop))
                  and not (errors_only and ln.startswith("atenmap: ") and not ln.startswith("atenmap: error")))
    return exc.value.code or 0, out.out, err


def fetch_real_tree(version: str) -> pathlib.Path:
    """The tree from scripts/fetch-pytorch-src (cached); skip the test when it cannot be had, but
    fail it on CI (``CI=true``): a measure of atenmap that quietly skips there measures nothing."""
    try:
        r = subprocess.run([str(REPO / "scripts" / "fetch-pytorch-src"), version],
                           capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        skip_or_fail_on_ci(f"cannot fetch PyTorch {version}: {exc}")
    if r.returncode != 0:
        skip_or_fail_on_ci(f"cannot fetch PyTorch {version} (no network?): {r.stderr.strip()[-300:]}")
    return pathlib.Path(r.stdout.strip().splitlines()[-1])


def skip_or_fail_on_ci(why: str) -> None:
    """Skip the test for ``why`` (a real tree, the pinned torch... cannot be had here), but fail it on CI
    (``CI=true``), where .ci/run installs everything the tests need. The one place this rule lives:
    tests/test_test_rules.py checks that no other test fetches a tree on its own."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (CI=true: a real-tree test does not skip on CI)", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Session fixtures (built before any test's own cache) write into a temporary cache too."""
    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("session-cache")
    mp.setenv("ATENMAP_CACHE", str(path))
    mp.setenv("ATENMAP_CODEGEN", os.environ.get("ATENMAP_CODEGEN") or "always")  # as _private_cache says
    yield path
    mp.undo()


_PASSED = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Each phase's outcome, for _private_cache's teardown."""
    rep = yield
    item.stash.setdefault(_PASSED, {})[rep.when] = rep.passed
    return rep


@pytest.fixture(autouse=True)
def _private_cache(request, tmp_path_factory, monkeypatch, _session_cache):
    """Every test gets a cache of its own unless it asks for a shared one; never ~/.cache. A passing
    test's cache (its indexes, torchgen's output, fetched trees) is deleted when it ends, as its
    tmp_path is (tmp_path_retention_policy): a full run stays small in the temp dir."""
    now = os.environ.get("ATENMAP_CACHE", "")
    mine = None
    if not now.startswith(str(tmp_path_factory.getbasetemp())) or now == str(_session_cache):
        mine = tmp_path_factory.mktemp("cache")
        monkeypatch.setenv("ATENMAP_CACHE", str(mine))
    monkeypatch.delenv("ATENMAP_SOURCE", raising=False)
    # Tests run without a terminal, where a tree's torchgen runs only with consent (Note [Whose
    # code runs]): the suite gives it, as a user's ATENMAP_CODEGEN=always would. A test of the
    # default removes it (tests/test_codegen_trust.py).
    monkeypatch.setenv("ATENMAP_CODEGEN", os.environ.get("ATENMAP_CODEGEN") or "always")
    yield
    if mine is not None and request.node.stash.get(_PASSED, {}).get("call", False):
        shutil.rmtree(mine, ignore_errors=True)


@pytest.fixture
def terminal(monkeypatch, capsys):
    """stdin and stderr answer isatty() like a person's terminal; stdout stays a pipe. Patched on
    pytest's capture classes, since capture re-installs its stream objects between phases."""
    import sys

    monkeypatch.setattr(type(sys.stdin), "isatty", lambda self: True, raising=False)
    monkeypatch.setattr(type(sys.stderr), "isatty", lambda self: self is sys.stderr, raising=False)


@pytest.fixture
def mini_tree(tmp_path) -> pathlib.Path:
    """A writable copy of the fixture tree."""
    dst = tmp_path / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, dst)
    return dst


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("shared-cache")


def _open_shared(cache, tree, **kw):
    from atenmap.api import Index

    old = os.environ.get("ATENMAP_CACHE")
    os.environ["ATENMAP_CACHE"] = str(cache)
    try:
        return Index.open(tree, **kw)
    finally:
        if old is None:
            os.environ.pop("ATENMAP_CACHE", None)
        else:
            os.environ["ATENMAP_CACHE"] = old


@pytest.fixture(scope="session")
def mini_index(tmp_path_factory):
    """The Index of the (read-only) fixture tree without generated code, built once per session."""
    ix = _open_shared(tmp_path_factory.mktemp("mini-cache"), FIXTURE_TREE, codegen=False)
    yield ix
    ix.close()


@pytest.fixture(scope="session")
def mini_index_gen(tmp_path_factory):
    """The fixture tree with its stand-in torchgen's output indexed (fixtures/pytorch-mini/torchgen),
    and its (empty) torch.compile facts, as a bundle's index holds them."""
    ix = _open_shared(tmp_path_factory.mktemp("mini-gen-cache"), FIXTURE_TREE, codegen=True, compile_facts=True)
    yield ix
    ix.close()


@pytest.fixture(scope="session")
def real_index_26(shared_cache):
    """The real 2.6.0 tree's index (torchgen's output and the torch.compile facts included, as
    `atenmap index` and scripts/build-bundle make it), built once per session."""
    ix = _open_shared(shared_cache, fetch_real_tree("2.6.0"), compile_facts=True)
    yield ix
    ix.close()


@pytest.fixture(scope="session")
def real_index_113(shared_cache):
    """The real 1.13.1 tree's index, built once per session (each test building its own wrote ~0.2 GB)."""
    ix = _open_shared(shared_cache, fetch_real_tree("1.13.1"))
    yield ix
    ix.close()
