"""The query-driven preview on a tree never indexed (Note [Query-driven preview] in preview.py)."""
from __future__ import annotations

import pytest

from tests.test_chain_generated import _on_a_terminal


def _lines(ix, op, keys):
    from atenmap.cli.chain_run import load_chain_for
    from atenmap.views import text as render

    return render.chain_lines(load_chain_for(ix, op, keys, 8, note=lambda _m: None)[0])


def test_preview_parses_the_chains_files_only_and_answers_as_the_full_index(mini_tree):
    from atenmap import preview
    from atenmap.api import Index
    from atenmap.source.find import find_source

    info = find_source(str(mini_tree))
    assert preview.never_indexed(info)
    with preview.partial_index(info, "mul.out", ["CUDA"]) as got:
        ix, closure = got
        files = set(closure.files)
        assert {"aten/src/ATen/native/BinaryOps.cpp", "aten/src/ATen/native/cuda/BinaryMulKernel.cu",
                "aten/src/ATen/native/cuda/CUDALoops.cuh"} <= files
        assert len(files) < closure.total / 2
        assert not any("/cpu/" in f for f in files)  # another device's kernels are not read
        got_lines = _lines(ix, "mul.out", ["CUDA"])
        tmp = ix.store.path
    assert not tmp.exists()  # the partial store is removed
    assert preview.never_indexed(info)  # and it is not the index
    with Index.open(info, codegen=False) as full:
        assert got_lines == _lines(full, "mul.out", ["CUDA"])
    assert not preview.never_indexed(info)


def test_no_preview_for_an_unknown_operator(mini_tree):
    from atenmap import preview
    from atenmap.source.find import find_source

    with preview.partial_index(find_source(str(mini_tree)), "no_such_op", None) as got:
        assert got is None


def test_on_a_terminal_the_preview_comes_first_then_the_complete_answer(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    _on_a_terminal(monkeypatch)
    monkeypatch.setenv("ATENMAP_PREVIEW", "1")  # off by default (config.preview)
    code, first, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0, err
    assert [l for l in err.splitlines() if l.startswith(f"atenmap: {label}")]
    code, complete, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err  # indexed now: the complete answer at once
    assert first == complete + complete  # the preview, identical here, then the complete answer


def test_no_preview_unless_asked(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    _on_a_terminal(monkeypatch)
    monkeypatch.delenv("ATENMAP_PREVIEW", raising=False)
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err and out.count("[CUDA]") == 1


def test_pipes_and_json_get_the_complete_answer_only(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err and out.count("[CUDA]") == 1
    other = mini_tree.parent / "other"
    mini_tree.rename(other)  # a tree never indexed again, now on a terminal but with --json
    _on_a_terminal(monkeypatch)
    monkeypatch.setenv("ATENMAP_PREVIEW", "1")
    code, js, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--json", "--source", str(other))
    assert code == 0 and label not in err and js.startswith("{") and js.count('"op"') <= 1


@pytest.mark.realtree
def test_real_2_6_mul_out_cuda_preview_names_the_same_launches(real_index_26):
    """The preview of mul.out on CUDA, from a dozen files of 2.6.0, names the launches of the complete
    answer (the index with torchgen's output: the hand-written steps are the same)."""
    from atenmap import preview

    with preview.partial_index(real_index_26.source, "mul.out", ["CUDA"]) as got:
        ix, closure = got
        assert len(closure.files) <= preview.MAX_FILES and closure.total > 1000
        ch = ix.chain("mul.out", keys=["CUDA"])
        seen = {(s.file, s.line, s.symbol) for k in ch.keys for s in k.walk() if s.role == "launch"}
    full = real_index_26.chain("mul.out", keys=["CUDA"])
    want = {(s.file, s.line, s.symbol) for k in full.keys for s in k.walk() if s.role == "launch"}
    assert seen == want and len(want) >= 4
