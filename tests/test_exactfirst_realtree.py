"""The first complete answer from the pre-scan's candidates (exactfirst.py, Note [A complete answer
from the candidates]) on the real trees: the narrower rules it asks by hold for every fact of the
whole 2.6.0 and 1.13.1 trees (torchgen's output included), and its answers are the full index's."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from atenmap.cli.chain_run import show_chain
from atenmap import build
from atenmap.exactfirst import DEFS_KINDS, TreeFiles, first_index, generated_files
from atenmap import defscan
from atenmap.indexstate import codegen_decision
from atenmap.kinds import FactKind

pytestmark = pytest.mark.realtree

# Facts a scope of whose qualified name is written as none of Note [Where a scope can be]'s shapes
# (neither in their file's bytes nor in its macro expansions): names the extractor derives wrongly
# (``INLINEboolMulOp``, ``typenamestd``); counted, as
# test_defscan_realtree's NOT_A_WORD, so that an extractor making more of them is seen.
NOT_MENTIONED = {"2.6.0": 4, "1.13.1": 0}
# Every word of a qualified name that ``::`` follows (``Foo<S::x>::f``: ``S`` and ``x>``'s none): a
# scope that by_name_qual's ``instr(qual, 'scope::')`` may find (Note [Where a scope can be])
_SCOPE = re.compile(r"(\w+)::")


def _check(ix, version: str) -> None:
    root = Path(ix.source.root)
    texts: dict[str, bytes] = {}
    parts: dict[str, defscan.Parts] = {}
    candidates = defscan.Candidates()
    qualified: dict[tuple[str, str], bool] = {}

    def scanned(rel: str) -> defscan.Parts:
        if rel not in parts:
            texts[rel] = (Path(rel) if rel.startswith("/") else root / rel).read_bytes()
            parts[rel] = defscan.Parts()
            defscan.scan_file(texts[rel], parts[rel])
            candidates.add(rel, texts[rel])
        return parts[rel]

    counts = dict.fromkeys(("stub", "class", "torch_impl", "scope"), 0)
    missed, not_mentioned = [], 0
    for kind in defscan.KINDS:
        for f in ix.store.facts_of_kind(kind):
            got = scanned(f.file)
            key = defscan.name_key(f.name).encode()
            assert key not in defscan.KEYWORDS, (f.file, f.line, f.name)
            if kind in defscan.STUB_KINDS:  # Candidates.stub_files
                counts["stub"] += 1
                if key not in got.stubs:
                    missed.append((f.file, f.line, f.kind, f.name))
            if kind == FactKind.CLASS and re.search(rb"(?<!\w)%s(?!\w)" % re.escape(key), texts[f.file]):
                counts["class"] += 1  # Candidates.class_files (a name no word of its file: NOT_A_WORD there)
                if key not in got.classes:
                    missed.append((f.file, f.line, f.kind, f.name))
            for scope in _SCOPE.findall(f.qual):  # Candidates.qualifying, for by_name_qual
                counts["scope"] += 1
                if (scope, f.file) not in qualified:
                    qualified[scope, f.file] = bool(candidates.qualifying(scope, [f.file]))
                if not qualified[scope, f.file]:
                    not_mentioned += 1
    for f in ix.store.facts_of_kind(FactKind.TORCH_IMPL):  # TreeFiles.holding
        scanned(f.file)
        counts["torch_impl"] += 1
        name = f.name.encode()
        if b'"%s"' % name not in texts[f.file] and b'::%s"' % name not in texts[f.file]:
            missed.append((f.file, f.line, f.kind, f.name))
    assert missed == []
    assert not_mentioned <= NOT_MENTIONED[version]
    assert counts["stub"] > 1500 and counts["class"] > 4000 and counts["torch_impl"] > 8000 and counts["scope"] > 100_000


def test_the_narrower_rules_hold_on_260(real_index_26):
    _check(real_index_26, "2.6.0")


def test_the_narrower_rules_hold_on_1131(real_index_113):
    _check(real_index_113, "1.13.1")


OPS = ["mul.out", "add.out", "softmax.int", "mm", "linear", "copy_"]


def _answer(ix, op: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show_chain(op, ["CUDA"], 8, False, None, False, None, True, "json", None, False, _ix=ix, _preview=False)
    return out.getvalue()


def test_answers_are_the_full_index_answers_on_260(real_index_26, shared_cache, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))  # the index's cache: torchgen's paths are its
    info = real_index_26.source
    decision = codegen_decision(info, "always")
    files = TreeFiles(Path(info.root), generated_files(info, decision)[0], keep_parsed=True)
    try:
        for op in OPS:
            with first_index(info, decision, files=files) as (ix, lazy):
                got = _answer(ix, op)
                assert lazy.exact, (op, lazy.inexact_questions)
                assert len(lazy.loaded) < len(files.meta) * 0.9, op
                assert len(lazy.entered) < len(lazy.loaded), op  # most files parsed for their definitions only
            assert got == _answer(real_index_26, op), op
    finally:
        files.close()


def _definitions_first(ix, shared_cache, monkeypatch) -> None:
    """Note [A file's definitions first] in exactfirst.py: for every file of the index (torchgen's
    output included), the parse for DEFS_KINDS gives the whole parse's facts of those kinds, in the
    same order, with the same local scopes (none in the scope of a fact of another kind) and the
    same status."""
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))  # the index's fact cache: the whole parses
    info = ix.source
    files = TreeFiles(Path(info.root), generated_files(info, codegen_decision(info, "always"))[0])
    differ, scoped, compared = [], 0, 0
    for rel, (lang, _size, _mtime) in files.meta.items():
        _r, status, rows, _put = build._parse_one((str(info.root), rel, lang))
        _r, defs_status, defs, _put = build._parse_one((str(info.root), rel, lang, DEFS_KINDS))
        if build.keep_kinds(rows, DEFS_KINDS) != defs or status != defs_status:
            differ.append(rel)
        scoped += sum(1 for r in rows if r[0] in DEFS_KINDS and r[6] >= 0 and rows[r[6]][0] not in DEFS_KINDS)
        compared += len(defs)
    assert differ == [] and scoped == 0
    assert compared > 80_000


def test_definitions_first_is_the_whole_parse_on_260(real_index_26, shared_cache, monkeypatch):
    _definitions_first(real_index_26, shared_cache, monkeypatch)


def test_definitions_first_is_the_whole_parse_on_1131(real_index_113, shared_cache, monkeypatch):
    _definitions_first(real_index_113, shared_cache, monkeypatch)
