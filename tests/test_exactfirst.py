"""The first complete answer from the pre-scan's candidates (exactfirst.py, Note [A complete answer
from the candidates]) on the fixture tree: the same bytes as the full index's, a question it cannot
answer exactly seen, and the CLI answering from it, then building the full index."""
from __future__ import annotations

import contextlib
import io
import json
import shutil

import pytest

from atenmap.api import Index
from atenmap.cli.chain_run import show_chain
from atenmap.exactfirst import _SCAN_CHUNK, LazyStore, TreeFiles, first_index, generated_files
from atenmap.indexstate import codegen_decision, index_path
from atenmap.kinds import FactKind
from atenmap.source.find import find_source

from .conftest import FIXTURE_TREE, cli_run

OPS = ["add.out", "mul.out", "sub.out", "exp.out", "mm", "addmm", "linear", "copy_", "max", "topk.values",
       "mini_functors.out", "_fft_r2c"]


def _answer(ix, op: str, key) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show_chain(op, key, 8, False, None, False, None, True, "json", None, False, _ix=ix, _preview=False)
    return out.getvalue()


@pytest.mark.parametrize("gen", [False, True], ids=["hand-written", "generated"])
def test_answers_are_the_full_index_answers(gen):
    info = find_source(str(FIXTURE_TREE), bundled=False)
    decision = codegen_decision(info, "always" if gen else False)
    full = Index.open(info, codegen=decision)  # in this test's cache: the generated paths name it
    files = TreeFiles(FIXTURE_TREE, generated_files(info, decision)[0], keep_parsed=True)
    exact = 0
    for op in OPS:
        for key in (None, ["CUDA"]):
            want = _answer(full, op, key)
            with first_index(info, decision, files=files) as (ix, lazy):
                got = _answer(ix, op, key)
                assert len(lazy.loaded) < len(files.meta), op  # not every file: those its questions name
            if lazy.exact:
                exact += 1
                assert got == want, (op, key)
    full.close()
    assert exact >= len(OPS)  # most answers are given so


def test_a_question_over_every_file_is_not_exact(mini_index):
    info = find_source(str(FIXTURE_TREE), bundled=False)
    with first_index(info, codegen_decision(info, False)) as (ix, lazy):
        assert isinstance(ix.store, LazyStore) and lazy.exact
        ix.store.by_name("mul_out", (FactKind.FUNCTION, FactKind.IMPL_FUNC))
        assert lazy.exact and lazy.loaded
        assert "add_stub" in ix.store.stub_names() and lazy.exact
        ix.store.facts_of_kind(FactKind.FUNCTION)  # a reverse lookup over every file
        assert not lazy.exact and lazy.inexact_questions == ["facts_of_kind"]


def test_cli_answers_first_then_builds_the_index(tmp_path, capsys, monkeypatch):
    tree = tmp_path / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, tree)
    monkeypatch.setenv("ATENMAP_EXACT_FIRST", "1")
    info = find_source(str(tree), bundled=False)
    assert not index_path(info).exists()
    code, out, _err = cli_run(capsys, "mul.out", "--key", "CUDA", "--json", "--no-codegen", "--source", str(tree))
    assert code == 0
    first = json.loads(out)
    assert index_path(info).exists()  # built after the answer
    monkeypatch.setenv("ATENMAP_EXACT_FIRST", "0")
    code, out, _err = cli_run(capsys, "mul.out", "--key", "CUDA", "--json", "--no-codegen", "--source", str(tree))
    assert code == 0 and json.loads(out) == first


def test_a_killed_run_s_temporary_index_is_removed_by_the_next(tmp_path):
    # a run killed mid-answer leaves first-<pid>.sqlite (57 MB on 2.6.0) and its side files; the next
    # run removes those whose process is gone, never a live one's (locks.remove_dead_owners)
    import os
    import subprocess
    import sys

    from atenmap.locks import remove_dead_owners

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(child.stdout)
    for name in (f"first-{dead}.sqlite", f"first-{dead}.sqlite-wal", f"first-{os.getpid()}.sqlite",
                 f"preview-{dead}.sqlite", "first-notapid.sqlite"):
        (tmp_path / name).write_bytes(b"x")
    remove_dead_owners(tmp_path, "first-")
    assert {p.name for p in tmp_path.iterdir()} == {
        "first-notapid.sqlite", f"first-{os.getpid()}.sqlite", f"preview-{dead}.sqlite"}


def test_a_file_parsed_for_its_definitions_is_parsed_whole_when_its_calls_are_asked(mini_index):
    # Note [A file's definitions first]: the same facts as the full index's, in the same id order
    info = find_source(str(FIXTURE_TREE), bundled=False)
    every = tuple(FactKind)
    with first_index(info, codegen_decision(info, False)) as (ix, lazy):
        fns = [f for f in ix.store.by_name("mul_out", (FactKind.FUNCTION, FactKind.IMPL_FUNC)) if f.end_line > f.line]
        assert fns and lazy.exact and lazy.loaded and not lazy.entered  # for their definitions only
        path = fns[0].file
        assert FactKind.CALL not in {f.kind for f in lazy.store.in_file(path, every)}  # not parsed whole yet
        calls = ix.store.in_scope(fns[0].id, (FactKind.CALL, FactKind.LAUNCH))
        assert calls and path in lazy.entered and lazy.exact
        want = [f for f in mini_index.store.by_name("mul_out", (FactKind.FUNCTION, FactKind.IMPL_FUNC)) if f.file == path]
        got_calls = [(f.name, f.line) for f in calls]
        assert got_calls == [(f.name, f.line) for f in mini_index.store.in_scope(want[0].id, (FactKind.CALL, FactKind.LAUNCH))]
        order = lambda rows: [(f.kind, f.name, f.line) for f in sorted(rows, key=lambda f: f.id)]  # noqa: E731
        assert order(lazy.store.in_file(path, every)) == order(mini_index.store.in_file(path, every))


def test_the_pool_s_pre_scan_is_the_serial_one():
    # Note [The pre-scan in the pool]: chunks scanned by the workers, taken in the walk's order
    info = find_source(str(FIXTURE_TREE), bundled=False)
    gen = generated_files(info, codegen_decision(info, False))[0]
    serial, pooled = TreeFiles(FIXTURE_TREE, gen, jobs=1), TreeFiles(FIXTURE_TREE, gen, jobs=2)
    try:
        assert len(pooled.meta) > 2 * _SCAN_CHUNK  # more than one chunk
        assert pooled._scans is not None and serial._scans is None  # scanned in the pool, not yet taken

        def state(c):
            return {k: v for k, v in vars(c).items() if k != "_shapes"}

        assert state(pooled.candidates) == state(serial.candidates)
        assert pooled._scans is None and pooled.texts == serial.texts
        assert pooled.defining("mul_out") == serial.defining("mul_out") != []
    finally:
        pooled.close()
        serial.close()


def test_the_pre_scans_pool_is_closed_when_the_temporary_index_cannot_be_made(tmp_path, monkeypatch):
    # TreeFiles starts its pool (the pre-scan) before first_index makes the temporary store: a failure
    # there closes the pool (no worker left running, no scan left pending)
    import multiprocessing

    from atenmap.source.find import index_dir

    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path))
    info = find_source(str(FIXTURE_TREE), bundled=False)
    index_dir(info).parent.mkdir(parents=True)
    index_dir(info).write_text("not a folder")  # the index's folder cannot be made
    before = set(multiprocessing.active_children())
    with pytest.raises(OSError):
        with first_index(info, codegen_decision(info, False)):
            pass
    assert set(multiprocessing.active_children()) <= before
