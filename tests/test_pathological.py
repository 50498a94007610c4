"""Pathological sources (Note [Pathological sources] in limits.py): a file over a cap is skipped
and counted, read once and never parsed; each check is one pass over the bytes."""
from __future__ import annotations

import pytest

from atenmap import build, limits
from atenmap.source.find import describe

NATIVE = "aten/src/ATen/native"


def _parsed_names(report_path) -> set[str]:
    import sqlite3

    conn = sqlite3.connect(report_path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM facts WHERE kind = 'function'")}
    finally:
        conn.close()


def _status(report_path, rel: str) -> str:
    import sqlite3

    conn = sqlite3.connect(report_path)
    try:
        return conn.execute("SELECT status FROM files WHERE path = ?", (rel,)).fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def odd_tree(mini_tree, monkeypatch):
    """The fixture tree with the three files of issue 24, the 200 MB one sparse (no disk)."""
    native = mini_tree / NATIVE
    (native / "Nested.cpp").write_text("".join(f"#if A{i}\n" for i in range(20_000)) + "void nested_fn() {}\n"
                                       + "#endif\n" * 20_000)
    (native / "LongLine.cpp").write_text("int table[] = {" + "1," * 3_000_000 + "};\nvoid long_line_fn() {}\n")
    with open(native / "Huge.cpp", "wb") as f:
        f.write(b"void huge_fn() {}\n")
        f.truncate(200 << 20)
    (native / "Fine.cpp").write_text("#if A\n#if B\nvoid fine_fn() {}\n#endif\n#endif\n")
    return mini_tree


def test_each_pathological_file_is_a_counted_skip(odd_tree, monkeypatch):
    parsed = []
    from atenmap.extract import parse

    orig = parse.extract_file
    monkeypatch.setattr(parse, "extract_file", lambda data, *a, **k: parsed.append(len(data)) or orig(data, *a, **k))
    report = build.build(describe(odd_tree, "option"), jobs=1, codegen=False)
    assert report.skipped == {"deep-nesting": 1, "long-line": 1, "too-large": 1}
    assert max(parsed) < limits.MAX_LINE  # none of the three reached the parser
    for rel, why in (("Nested.cpp", "deep-nesting"), ("LongLine.cpp", "long-line"), ("Huge.cpp", "too-large")):
        assert _status(report.path, f"{NATIVE}/{rel}") == f"skipped:{why}"
    names = _parsed_names(report.path)
    assert "fine_fn" in names and not names & {"nested_fn", "long_line_fn", "huge_fn"}


def test_the_counts_are_in_atenmap_index(odd_tree, capsys):
    from atenmap.cli import main

    with pytest.raises(SystemExit) as done:
        main(["index", "--source", str(odd_tree), "--no-codegen", "--jobs", "1"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "skipped 1 deep-nesting, 1 long-line, 1 too-large" in out


def test_the_caps_are_exact():
    line = b"x" * limits.MAX_LINE
    assert limits.too_odd(line + b"\n" + line) == ""
    assert limits.too_odd(b"y\n" + line + b"x\n") == "long-line"
    deep = b"#if A\n" * limits.MAX_IF_DEPTH + b"#endif\n" * limits.MAX_IF_DEPTH
    assert limits.too_odd(deep * 3) == ""  # deep, but closed before going deeper
    assert limits.too_odd(b"#ifdef A\n" + deep) == "deep-nesting"
    assert limits.too_odd(b"  #  ifndef A\n" + deep) == "deep-nesting"
    assert limits.too_odd(b"#include <a>\n#elif\n" * 1000) == ""  # not openings
