"""Fetch, then ask (issue 21, item 5): a tree `atenmap fetch` got from a local release archive answers
as completely as the bundle -- its torchgen runs under the default setting (Note [Whose code runs]
in build.py), so the Python entry points and the launch lines are there -- and no message names a
flag the user did not pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from atenmap.api import Index
from atenmap.source import fetch as F

from .conftest import cli_run, fetch_real_tree, skip_or_fail_on_ci
from .test_fetch import make_tarball

FLAGS = ("--no-codegen", "--codegen")


@pytest.fixture(autouse=True)
def _defaults(tmp_path, monkeypatch, terminal):
    """No setting about torchgen anywhere, a person at a terminal: the default for fetched trees
    decides (without a terminal it is never: tests/test_trust3.py)."""
    monkeypatch.delenv("ATENMAP_CODEGEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(F, "installed_torch", lambda: None)
    monkeypatch.chdir(tmp_path)  # no checkout around: the fetched tree answers


def _launches(chain) -> set[str]:
    return {s.symbol.split("<<<")[0] for kc in chain.keys for s in kc.walk() if s.role == "launch"}


def test_fetch_then_ask_has_the_python_section_and_launch_lines(capsys, tmp_path):
    code, out, err = cli_run(capsys, "fetch", "--from", str(make_tarball(tmp_path)))
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    assert f"atenmap: running {tree.resolve()}/torchgen (code from that tree)" in " ".join(err.split())
    code, out, err = cli_run(capsys, "mul.Tensor", "--key", "CUDA", "--no-pager")  # no --source: the fetched tree
    assert code == 0, err
    assert f"source: {tree}" in out and "[Python]" in out and "torch.mul -> THPVariable_mul" in out
    assert "RegisterCUDA.cpp" in out and " launch " in out and "<<<" in out
    assert not [ln for ln in err.splitlines() if any(f in ln for f in FLAGS)], err
    code, out, err = cli_run(capsys, "mul.Tensor", "--backward", "--no-pager")
    assert code == 0 and not [ln for ln in err.splitlines() if any(f in ln for f in FLAGS)], err


@pytest.mark.realtree
def test_fetch_the_debian_release_answers_as_the_bundle(capsys, tmp_path):
    """The real 2.6.0 from Debian's orig tarball (the one scripts/fetch-pytorch-src keeps): fetched
    from the local file, indexed with its torchgen, its add.out and mul.Tensor answers hold every
    Python binding and launch the bundle's do."""
    tarball = fetch_real_tree("2.6.0").parent / "pytorch_2.6.0+dfsg.orig.tar.xz"
    if not tarball.is_file():
        skip_or_fail_on_ci(f"{tarball} is not kept here")
    code, out, err = cli_run(capsys, "fetch", "2.6.0", "--from", str(tarball))
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    with Index.open(tree) as ix, Index.open(None) as fetched:
        assert fetched.source.root == str(tree) and ix.generated_root
        from atenmap.source import bundle

        with Index(bundle.source_info(), __import__("atenmap.store", fromlist=["Store"]).Store.open(
                bundle.installed_index())) as shipped:
            for op in ("add.out", "mul.out", "mm.out"):
                mine, theirs = ix.chain(op, keys=["CUDA"]), shipped.chain(op, keys=["CUDA"])
                assert {b.symbol for b in theirs.bindings} <= {b.symbol for b in mine.bindings}, op
                assert _launches(theirs) <= _launches(mine) and _launches(mine), op
                assert not [w for w in mine.warnings if any(f in w for f in FLAGS)], mine.warnings
            b = ix.backward("mul.Tensor", keys=["CUDA"])
            assert b.node == "MulBackward0" and not [w for w in b.warnings if "not shown" in w], b.warnings
