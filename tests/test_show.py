"""`atenmap show PATH:LINE` (source/excerpt.py): the lines around a place a chain names, gen:
paths in torchgen's output; the bundled index says where the text is, in one line, and fails."""
from __future__ import annotations

import json
import os
import re

import pytest

from atenmap.errors import UsageError
from atenmap.source.excerpt import NoSourceText, parse_place

from .conftest import FIXTURE_TREE, PROGRESS, cli_run

SRC = str(FIXTURE_TREE)


def run(capsys, *args):
    return cli_run(capsys, *args, drop=PROGRESS)


def test_show_a_tree_file(capsys):
    code, out, err = run(capsys, "show", "aten/src/ATen/native/cuda/Blas.cpp:11", "-C", "1", "-s", SRC)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("aten/src/ATen/native/cuda/Blas.cpp:11  (") and len(lines) == 4
    text = (FIXTURE_TREE / "aten/src/ATen/native/cuda/Blas.cpp").read_text().splitlines()
    assert lines[2] == f"> 11  {text[10]}" and lines[1] == f"  10  {text[9]}"


def test_show_every_generated_step_of_a_chain(capsys, mini_index_gen):
    """Each gen: place the text view prints opens; --json names the real absolute file."""
    from atenmap.views.text import chain_lines

    text = chain_lines(mini_index_gen.chain("add.out", keys=["CUDA"]))
    places = {ln.split()[0] for ln in text if re.match(r"gen:\S+:\d+ ", ln)}
    assert places
    for place in places:
        ex = mini_index_gen.show(place, 0)
        assert os.path.isfile(ex.path) and ex.path.startswith(mini_index_gen.generated_root) and len(ex.lines) == 1
    code, out, _ = run(capsys, "show", sorted(places)[0], "--json", "-s", SRC)
    d = json.loads(out)
    assert code == 0 and os.path.isabs(d["path"]) and d["line"] == int(sorted(places)[0].rsplit(":", 1)[1])
    # the machine-read views keep real paths: gdb's comments name files that exist
    code, out, _ = run(capsys, "gdb", "add.out", "--key", "CUDA", "-s", SRC)
    named = re.findall(r"\((/[^()]+):\d+\)$", out, re.M)
    assert code == 0 and any("/codegen/" in p for p in named)
    assert all(os.path.isfile(p) for p in named) and "gen:" not in out


@pytest.mark.parametrize("place, code, msg", [
    ("nope", 2, "expected PATH:LINE"), ("a.cpp:0", 2, "expected PATH:LINE"),
    ("../../../etc/passwd:1", 2, "outside"), ("/etc/passwd:1", 2, "not in the source tree"),
    ("aten/src/nothing.cpp:3", 1, "no such file"), ("aten/src/ATen/native/cuda/Blas.cpp:99999", 1, "has"),
])
def test_show_bad_places(capsys, place, code, msg):
    got, out, err = run(capsys, "show", place, "-s", SRC, "--no-codegen")
    assert got == code and out == "" and err.startswith("atenmap: error: ") and msg in err and err.count("\n") == 1


def test_parse_place():
    assert parse_place("gen:aten/RegisterCUDA.cpp:43955") == ("gen:aten/RegisterCUDA.cpp", 43955)
    with pytest.raises(UsageError):
        parse_place("aten/x.cpp:")


def test_bundle_says_where_the_text_is(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no tree around: the bundled index answers
    code, out, err = cli_run(capsys, "show", "aten/src/ATen/native/BinaryOps.cpp:440")
    lines = [ln for ln in err.splitlines() if ln.startswith("atenmap: error")]
    assert code == NoSourceText.exit_code == 1 and out == "" and len(lines) == 1
    assert "https://github.com/pytorch/pytorch/blob/v2.6.0/aten/src/ATen/native/BinaryOps.cpp#L440" in lines[0]
    code, out, err = cli_run(capsys, "show", "gen:aten/RegisterCUDA.cpp:43955")
    lines = [ln for ln in err.splitlines() if ln.startswith("atenmap: error")]
    assert code == 1 and len(lines) == 1 and "not in the repository" in lines[0] and "atenmap fetch" in lines[0]
