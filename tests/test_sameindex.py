"""A new index copied from a finished index of the same content (sameindex.py, Note [An index of
the same content]): the copy is the index a cold build makes; an edit, a file added or removed, a
refreshed (stale) index or a damaged one is never copied."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from atenmap import build
from atenmap.source.find import describe
from atenmap.store import read_meta
from tests.conftest import FIXTURE_TREE

KERNEL = "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
# meta that belongs to the tree or the moment, not to the content
_OWN_META = {"source_root", "built_at", "fresh_token", "yaml_stat", "compile_inputs", "content_set",
             "content_sizes"}


def _index(src) -> dict[str, list]:
    """Every table of ``src``'s index (files without their mtime, meta without _OWN_META)."""
    conn = sqlite3.connect(build.index_path(src))
    try:
        out = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
            if name == "files":
                rows = conn.execute("SELECT id, path, language, size, status, generated FROM files ORDER BY id")
            elif name == "meta":
                rows = conn.execute("SELECT key, value FROM meta ORDER BY key")
                rows = [r for r in rows if r[0] not in _OWN_META]
            else:
                rows = conn.execute(f"SELECT * FROM {name} ORDER BY rowid")
            out[name] = list(rows)
        return out
    finally:
        conn.close()


def _cold(tmp_path, tree: Path, monkeypatch, jobs: int) -> dict[str, list]:
    """The index a cold build of a copy of ``tree`` makes (the fact cache off, so nothing is copied)."""
    other = tmp_path / "cold" / tree.parent.name / "pytorch-mini"
    shutil.rmtree(other.parent, ignore_errors=True)
    shutil.copytree(tree, other)
    src = describe(other, "option")
    with monkeypatch.context() as m:
        m.setenv("ATENMAP_FACT_CACHE", "0")
        report = build.build(src, jobs=jobs, codegen=False, force=True)
    assert not report.copied_from and report.rebuilt
    return _index(src)


@pytest.fixture
def trees(tmp_path):
    """Two copies of the fixture tree at different paths."""
    a, b = tmp_path / "a" / "pytorch-mini", tmp_path / "b" / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, a)
    shutil.copytree(FIXTURE_TREE, b)
    return a, b


@pytest.mark.parametrize("jobs", [1, 2])  # the walk's order, the pool's (> 32 files)
def test_a_tree_of_the_same_content_is_a_copy_of_the_cold_index(trees, tmp_path, monkeypatch, jobs):
    a, b = trees
    first = build.build(describe(a, "option"), jobs=jobs, codegen=False)
    assert not first.copied_from and read_meta(build.index_path(describe(a, "option")))["content_set"]
    second = build.build(describe(b, "option"), jobs=jobs, codegen=False)
    assert second.copied_from == str(build.index_path(describe(a, "option")))
    assert (second.parsed, second.facts, second.skipped, second.with_errors, second.operators) == \
        (first.parsed, first.facts, first.skipped, first.with_errors, first.operators)
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, jobs)
    # each file's stat is the tree's own: the next query finds the index fresh
    files = sqlite3.connect(build.index_path(describe(b, "option"))).execute(
        "SELECT mtime_ns FROM files WHERE path = ?", (KERNEL,)).fetchone()[0]
    assert files == (b / KERNEL).stat().st_mtime_ns
    assert build.is_fresh(describe(b, "option"), build.codegen_decision(describe(b, "option"), False))
    # --force on the same tree: a copy of its own index, the same again
    again = build.build(describe(b, "option"), jobs=jobs, codegen=False, force=True)
    assert again.copied_from == str(build.index_path(describe(b, "option")))
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, jobs)


def test_an_edit_of_the_same_size_is_read_and_built(trees, tmp_path, monkeypatch):
    a, b = trees
    build.build(describe(a, "option"), jobs=2, codegen=False)
    kernel = b / KERNEL
    kernel.write_text(kernel.read_text().replace("mul_kernel_cuda", "mul_kernel_cudb"))
    report = build.build(describe(b, "option"), jobs=2, codegen=False)
    assert not report.copied_from
    got = _index(describe(b, "option"))
    assert "mul_kernel_cudb" in {r[3] for r in got["facts"]}
    assert got == _cold(tmp_path, b, monkeypatch, 2)


def test_a_file_added_or_removed_is_built(trees, tmp_path, monkeypatch):
    a, b = trees
    build.build(describe(a, "option"), jobs=2, codegen=False)
    added = b / "aten/src/ATen/native/cuda/Added.cu"
    added.write_text("namespace at { namespace native {\nvoid added_kernel() {}\n}}\n")
    report = build.build(describe(b, "option"), jobs=2, codegen=False)
    assert not report.copied_from
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, 2)
    added.unlink()
    (b / KERNEL).unlink()
    report = build.build(describe(b, "option"), jobs=2, codegen=False, force=True)
    assert not report.copied_from
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, 2)


def test_a_refreshed_index_is_never_a_source(trees, tmp_path, monkeypatch):
    """A refresh keeps files it did not read: its index records no content, so a tree with the
    content it had before is built, not copied from it."""
    a, b = trees
    build.build(describe(a, "option"), jobs=2, codegen=False)
    kernel = a / KERNEL
    text = kernel.read_text()
    kernel.write_text(text.replace("mul_kernel_cuda", "mul_kernel_cudb"))
    refreshed = build.build(describe(a, "option"), jobs=2, codegen=False)
    assert refreshed.reused and read_meta(build.index_path(describe(a, "option")))["content_set"] == ""
    report = build.build(describe(b, "option"), jobs=2, codegen=False)
    assert not report.copied_from
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, 2)


@pytest.mark.parametrize("damage", ["facts", "operators", "facts_name", "truncated", "not-a-database"])
def test_a_damaged_index_is_never_copied(trees, tmp_path, monkeypatch, damage):
    a, b = trees
    build.build(describe(a, "option"), jobs=2, codegen=False)
    path = build.index_path(describe(a, "option"))
    data = bytearray(path.read_bytes())
    if damage in ("facts", "operators", "facts_name"):  # a table's or an index's leaves: meta and files still read
        _smash_leaves(path, data, damage)
    elif damage == "truncated":
        data = data[:len(data) // 2]
    else:
        data[:100] = b"\xab" * 100
    path.write_bytes(bytes(data))
    said: list[str] = []
    report = build.build(describe(b, "option"), jobs=2, codegen=False, status=said.append)
    assert not report.copied_from
    if damage not in ("truncated", "not-a-database"):  # its meta reads and matches: copied, checked, thrown away
        assert [line for line in said if "is not the index its meta says" in line or "could not be read" in line]
    assert _index(describe(b, "option")) == _cold(tmp_path, b, monkeypatch, 2)


def _smash_leaves(path: Path, data: bytearray, name: str) -> None:
    """Overwrite the leaf pages of the table or index ``name`` in ``data`` (``path``'s bytes)."""
    conn = sqlite3.connect(path)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (name,))]
    conn.close()
    assert leaves
    for n in leaves:
        data[(n - 1) * page:n * page] = b"\xab" * page


def test_force_on_a_damaged_index_builds_a_sound_one(trees, tmp_path, monkeypatch):
    """The remedy the CLI gives for a damaged index (`atenmap index --force`, cli/__init__.py) makes a
    sound index: the damaged one is not its own copy source."""
    a, _b = trees
    build.build(describe(a, "option"), jobs=2, codegen=False)
    path = build.index_path(describe(a, "option"))
    data = bytearray(path.read_bytes())
    _smash_leaves(path, data, "operators")
    path.write_bytes(bytes(data))
    report = build.build(describe(a, "option"), jobs=2, codegen=False, force=True)
    assert not report.copied_from
    assert sqlite3.connect(path).execute("PRAGMA quick_check").fetchall() == [("ok",)]
    assert _index(describe(a, "option")) == _cold(tmp_path, a, monkeypatch, 2)


def test_index_says_what_it_copied(trees, capsys):
    from tests.test_cli import run

    a, b = trees
    code, out, _ = run(capsys, "index", "--no-codegen", "-s", str(a))
    assert code == 0 and "copied from:" not in out
    code, out, _ = run(capsys, "index", "--no-codegen", "-s", str(b))
    assert code == 0 and f"copied from: {build.index_path(describe(a, 'option'))}" in out
    assert "operators: 56" in out


def test_the_compile_facts_are_part_of_the_content(trees, tmp_path, monkeypatch):
    """An index with the torch.compile facts is copied only by a build that asks for them, from the
    same inputs; the copy's compile stamp is its own tree's (Note [torch.compile facts when asked])."""
    from tests.test_compile import _tree

    a, b = (_tree(t) for t in trees)
    build.build(describe(a, "option"), jobs=2, codegen=False, compile_facts=True)
    plain = build.build(describe(b, "option"), jobs=2, codegen=False, force=True)
    assert not plain.copied_from  # a's index holds them, this build does not ask
    copied = build.build(describe(b, "option"), jobs=2, codegen=False, force=True, compile_facts=True)
    assert copied.copied_from == str(build.index_path(describe(a, "option")))
    got = _index(describe(b, "option"))
    assert got["compile"] and got == _index(describe(a, "option"))
    assert build._compile_made(build.index_path(describe(b, "option")), describe(b, "option"))
    refs = b / "torch/_refs/__init__.py"
    refs.write_text(refs.read_text() + "\n# edited\n")
    edited = build.build(describe(b, "option"), jobs=2, codegen=False, force=True, compile_facts=True)
    assert not edited.copied_from


def test_a_yaml_edited_during_the_build_is_not_recorded_as_read(trees, tmp_path, monkeypatch):
    """native_functions.yaml edited after the build read it (here: as its last file is stored): the
    index holds the rows of the bytes it read, so its content digest must not claim the new bytes;
    a tree with the new bytes is not a copy of it."""
    from atenmap.source.find import YAML_REL

    a, b = trees
    yaml_a, yaml_b = a / YAML_REL, b / YAML_REL
    text = yaml_a.read_text()
    assert "mul_out" in text
    edited = text.replace("mul_out", "mul_ouT")
    yaml_b.write_text(edited)

    def edit_at_the_end(done, total, _rel):
        if done == total:
            yaml_a.write_text(edited)

    build.build(describe(a, "option"), jobs=2, codegen=False, progress=edit_at_the_end)
    assert yaml_a.read_text() == edited
    report = build.build(describe(b, "option"), jobs=2, codegen=False)
    assert not report.copied_from
    got = _index(describe(b, "option"))
    assert any("mul_ouT" in json for *_r, json in got["operators"])
    assert got == _cold(tmp_path, b, monkeypatch, 2)
