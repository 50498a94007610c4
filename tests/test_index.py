"""Index build: counts, refresh of changed files only, removal, bad files, never a half index."""
from __future__ import annotations

import os
import sqlite3
import time

import pytest

from atenmap import build as index
from atenmap.errors import IndexError_, SourceNotFound
from atenmap.source.find import describe, find_source
from atenmap.store import Store


def test_build_then_refresh_only_changed(mini_tree):
    src = describe(mini_tree, "option")
    first = index.build(src, jobs=1)
    assert first.rebuilt and first.parsed == first.files_total > 21 and first.operators == 56
    assert first.facts["register_dispatch"] >= 8 and first.facts["launch"] >= 2
    assert index.is_fresh(src)

    again = index.build(src, jobs=1)
    assert (again.parsed, again.reused, again.removed) == (0, first.files_total, 0)

    kernel = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    kernel.write_text(kernel.read_text().replace("mul_kernel_cuda", "mul_kernel_cuda2"))
    os.utime(kernel, ns=(time.time_ns(), time.time_ns() + 10**9))
    (mini_tree / "aten/src/ATen/native/sparse/SparseTensorMath.cpp").unlink()
    assert not index.is_fresh(src)
    third = index.build(src, jobs=1)
    assert (third.parsed, third.removed) == (1, 1)
    store = Store.open(index.index_path(src))
    assert [r.file for r in store.by_name("mul_kernel_cuda2", ("function",))] == [
        "aten/src/ATen/native/cuda/BinaryMulKernel.cu"]
    assert not store.by_name("mul_kernel_cuda", ("function",))
    assert not store.by_name("add_out_sparse_cpu", ("function",))
    store.close()


def test_parallel_build_matches_serial(mini_tree, tmp_path, monkeypatch):
    src = describe(mini_tree, "option")
    serial = index.build(src, jobs=1, force=True).facts
    many = mini_tree / "aten/src/ATen/native/extra"
    many.mkdir()
    for i in range(40):  # enough files for the process pool to be used
        (many / f"K{i}.cpp").write_text(f"namespace at::native {{ void k{i}() {{ f(); }} }}\n")
    parallel = index.build(src, jobs=2, force=True).facts
    assert parallel["function"] == serial["function"] + 40
    assert parallel["register_dispatch"] == serial["register_dispatch"]


def test_non_utf8_and_unreadable_files_are_skipped_and_counted(mini_tree):
    (mini_tree / "aten/src/ATen/native/Latin1.cpp").write_bytes(b"// caf\xe9\nvoid f() {}\n")
    src = describe(mini_tree, "option")
    report = index.build(src, jobs=1)
    assert report.skipped == {"not-utf8": 1}
    store = Store.open(index.index_path(src))
    assert store.file_status_counts()["skipped:not-utf8"] == 1
    store.close()


def test_incomplete_or_foreign_index_is_never_used(mini_tree):
    src = describe(mini_tree, "option")
    index.build(src, jobs=1)
    path = index.index_path(src)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'complete'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexError_, match="incomplete"):
        Store.open(path)
    assert not index.is_fresh(src)
    index.build(src, jobs=1)  # a build repairs it
    Store.open(path).close()

    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexError_, match="schema"):
        Store.open(path)
    path.write_bytes(b"not a database")
    with pytest.raises(IndexError_, match="corrupt \\(file is not a database\\)"):
        Store.open(path)
    assert index.build(src, jobs=1).rebuilt


def test_killed_build_leaves_previous_index_and_no_temp(mini_tree, monkeypatch):
    src = describe(mini_tree, "option")
    index.build(src, jobs=1)
    path = index.index_path(src)
    before = path.read_bytes()
    (mini_tree / "aten/src/ATen/native/New.cpp").write_text("void g() {}\n")

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "finish", boom)  # the last step before the rename
    with pytest.raises(KeyboardInterrupt):
        index.build(src, jobs=1)
    assert path.read_bytes() == before
    assert not list(path.parent.glob("*.tmp-*"))


def test_find_source_order(mini_tree, tmp_path, monkeypatch):
    assert find_source(str(mini_tree)).origin == "option"
    monkeypatch.setenv("ATENMAP_SOURCE", str(mini_tree))
    assert find_source(None).origin == "env"
    monkeypatch.delenv("ATENMAP_SOURCE")
    deep = mini_tree / "aten/src/ATen/native/cpu"
    info = find_source(None, cwd=deep)
    assert info.origin == "cwd" and info.root == str(mini_tree.resolve()) and info.version == "2.6.0a0+fixture"
    with pytest.raises(SourceNotFound, match="--source"):
        find_source(None, cwd=tmp_path)
    with pytest.raises(SourceNotFound, match="not a PyTorch source tree"):
        find_source(str(tmp_path))


def _age(tree, seconds: int = 60) -> None:
    """Every folder and file of ``tree`` last changed ``seconds`` ago (past freshness's racy window)."""
    old = time.time_ns() - seconds * 10**9
    for dirpath, _dirs, files in os.walk(tree, topdown=False):
        for f in files:
            os.utime(os.path.join(dirpath, f), ns=(old, old))
        os.utime(dirpath, ns=(old, old))


def test_the_stat_proof_sees_edits_in_place_new_files_and_other_files(mini_tree):
    from atenmap import freshness

    _age(mini_tree)
    src = describe(mini_tree, "option")
    index.build(src, jobs=1, codegen=False)
    folder = index.index_path(src).parent
    store = Store.open(index.index_path(src))
    meta, files = store.meta(), store.files()
    store.close()
    assert (folder / freshness.PROOF_NAME).is_file()
    assert freshness.proven(folder, src.root, meta, files, False, "aten/src/ATen/native/native_functions.yaml")
    assert index.is_fresh(src, codegen=False)

    # An edit in place keeps the folder's mtime (set back here too): the file's own stat shows it.
    native = mini_tree / "aten/src/ATen/native"
    kernel = native / "BinaryOps.cpp"
    folder_mtime = native.stat().st_mtime_ns
    st = kernel.stat()
    kernel.write_text(kernel.read_text().replace("mul_out", "mul_0ut"))
    os.utime(kernel, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    os.utime(native, ns=(folder_mtime, folder_mtime))
    assert not index.is_fresh(src, codegen=False)
    assert index.build(src, jobs=1, codegen=False).parsed == 1

    # A new source file moves its folder's mtime.
    _age(mini_tree)
    index.build(src, jobs=1, codegen=False)
    assert index.is_fresh(src, codegen=False)
    (native / "cuda" / "New.cu").write_text("__global__ void k() {}\n")
    assert not index.is_fresh(src, codegen=False)
    assert index.build(src, jobs=1, codegen=False).parsed == 1

    # A file that is not source moves it too: the full check finds nothing to re-parse, and a
    # refresh then answers without copying the index.
    _age(mini_tree)
    index.build(src, jobs=1, codegen=False)
    (native / "notes.txt").write_text("not C++\n")
    before = index.index_path(src).stat().st_ino
    assert index.is_fresh(src, codegen=False)
    again = index.build(src, jobs=1, codegen=False)
    assert (again.parsed, again.rebuilt, again.reused) == (0, False, again.files_total)
    assert index.index_path(src).stat().st_ino == before


def test_the_commit_is_read_from_git_files_as_git_rev_parse_says(tmp_path):
    import shutil
    import subprocess

    from atenmap.source.find import git_head

    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args, cwd=repo):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git("add", "a.txt")
    git("commit", "-qm", "one")
    assert git_head(repo) == git("rev-parse", "HEAD")  # loose ref
    git("pack-refs", "--all")
    assert not (repo / ".git/refs/heads/main").exists()
    assert git_head(repo) == git("rev-parse", "HEAD")  # packed-refs
    (repo / "a.txt").write_text("b\n")
    git("commit", "-qam", "two")
    git("checkout", "-q", "--detach", "HEAD~1")
    assert git_head(repo) == git("rev-parse", "HEAD")  # detached
    git("worktree", "add", "-q", str(tmp_path / "wt"), "main")
    assert git_head(tmp_path / "wt") == git("rev-parse", "HEAD", cwd=tmp_path / "wt")  # gitdir: + commondir
    assert describe(tmp_path / "wt", "option").commit == git("rev-parse", "HEAD", cwd=tmp_path / "wt")
    (repo / ".git/HEAD").write_text("ref: refs/heads/unborn\n")
    assert git_head(repo) is None  # left to git
