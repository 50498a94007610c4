"""Issue 23 (Trust II): the hostile inputs that broke atenmap, each reproduced as it was found.

Every case must end in an answer or one ``atenmap: error:`` line, within 2 GiB of address space
(the cases that used to take more run in a subprocess under ``RLIMIT_AS``; its ``timeout`` only
guards against a hang, nothing here measures time), and write nothing outside the cache."""
from __future__ import annotations

import json
import lzma
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time

import pytest

from atenmap import files
from atenmap.store import factcache
from atenmap.errors import YamlError
from atenmap.extract.native_yaml import MAX_YAML_NODES, parse_operators
from atenmap.extract.derivatives_yaml import parse_derivatives
from atenmap.extract import preproc
from atenmap.locks import BUILDS_LOCK, shared
from atenmap.source.find import cache_dir, describe

from .conftest import FIXTURE_TREE, cli_run

SRC = str(pathlib.Path(__file__).resolve().parents[1] / "src")
LIMIT_AS = 2 << 30
NF = "aten/src/ATen/native/native_functions.yaml"


def _limited(code: str, cache: pathlib.Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python with 2 GiB of address space and ``cache`` as the cache."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))

    env = {**os.environ, "PYTHONPATH": SRC, "ATENMAP_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


def _cli_limited(args: list[str], cache: pathlib.Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return _limited(f"import sys; from atenmap.cli import main; sys.exit(main({args!r}))", cache, timeout)


def one_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("atenmap: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def listing(folder: pathlib.Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ---- 1: '#', '?' and '%' in the tree's and the cache's path -------------------------------------
def test_odd_characters_in_tree_and_cache_paths(capsys, tmp_path, monkeypatch):
    """The SQLite URI was not escaped: ``py#torch`` could never be queried, and ``%2e``-style names
    opened another file."""
    tree = tmp_path / "py#t?or%2Fch"
    shutil.copytree(FIXTURE_TREE, tree)
    cache = tmp_path / "ca#che?mode=rw&x=%41"
    monkeypatch.setenv("ATENMAP_CACHE", str(cache))
    before = listing(tmp_path) - {p for p in listing(tmp_path) if p.startswith(cache.name)}
    code, out, err = cli_run(capsys, "index", "--source", str(tree), "--no-codegen", "--jobs", "1")
    assert code == 0, err
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree), "--no-codegen")
    assert code == 0 and "mul_out" in out, err
    code, out, err = cli_run(capsys, "sources")
    assert code == 0 and "PyTorch 2.6.0a0+fixture" in out, err
    after = listing(tmp_path) - {p for p in listing(tmp_path) if p.startswith(cache.name)}
    assert after == before  # nothing written beside the cache


def test_sqlite_uri_keeps_the_path():
    from atenmap.store import sqlite_uri

    assert sqlite_uri("/a/b#c?d%41/index.sqlite", "ro") == "file:/a/b%23c%3Fd%2541/index.sqlite?mode=ro"


# ---- 2: escape bytes on stdout ------------------------------------------------------------------
ESC_KERNEL = "mul_out\x1b]0;pwned\x07"


@pytest.fixture
def hostile_tree(tmp_path):
    """The mini tree with ESC/BEL in a yaml kernel name, a file name (mul.out's meta function's)
    and version.txt."""
    tree = tmp_path / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, tree)
    y = tree / NF
    text = y.read_text()
    assert "CUDA: mul_out" in text
    y.write_text(text.replace("CUDA: mul_out", 'CUDA: "mul_out\\e]0;pwned\\a"', 1))
    (tree / "version.txt").write_text("2.6.0\x1b[2J\x07\n")
    native = tree / "aten/src/ATen/native"
    os.rename(native / "BinaryOps.cpp", native / "Binary\x1b[31mOps.cpp")
    return tree


@pytest.mark.parametrize("args", [["graph", "mul.out", "--format", "dot"], ["graph", "mul.out", "--format", "mermaid"],
                                  ["index"], ["sources"], ["kernel", ESC_KERNEL]])
def test_no_control_characters_reach_stdout(capsys, hostile_tree, args):
    if args[0] == "sources":
        cli_run(capsys, "index", "--source", str(hostile_tree), "--no-codegen")
        code, out, err = cli_run(capsys, *args)
    else:
        code, out, err = cli_run(capsys, *args, "--source", str(hostile_tree), "--no-codegen")
    assert "\x1b" not in out + err and "\x07" not in out + err, (out, err)
    if args[0] == "graph":
        assert code == 0 and "Binary\\x1b[31mOps.cpp:18" in out.replace("\\\\", "\\"), out
    if args[0] in ("index", "sources"):
        assert code == 0 and "2.6.0\\x1b[2J\\x07" in out, out


def test_progress_and_error_lines_are_escaped(capsys, tmp_path):
    code, out, err = cli_run(capsys, "index", "--source", str(tmp_path / "no\x1b]0;x\x07where"))
    assert code != 0 and "\x1b" not in err and "\\x1b]0;x\\x07" in one_error(err)


# ---- 3: yaml aliases ----------------------------------------------------------------------------
LAUGH = ("- func: a(Tensor self) -> Tensor\n  cpp_no_default_args: ["
         + ", ".join(["&l0 [x,x,x,x,x,x,x,x,x]"] + [f"&l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)])
         + "]\n")


@pytest.mark.parametrize("text, words", [
    (LAUGH, f"more than {MAX_YAML_NODES} nodes once its aliases are expanded"),  # 1.2 kB took 416 MB, then MemoryError
    ("- func: a(Tensor self) -> Tensor\n  cpp_no_default_args: &a [*a]\n", "an alias refers to a node that contains it"),
    ("- func: a(Tensor self) -> Tensor\n  dispatch: &a {<<: *a}\n", "an alias refers to a node that contains it"),
    ("- func: a(Tensor self) -> Tensor\n  precomputed: " + "[" * 70 + "]" * 70 + "\n", "deeper than 64 levels"),
    ("- func: a(Tensor self) -> Tensor\n  t: &d0 [x]\n" + "".join(f"  t{i}: &d{i} [[[[[[[[[[*d{i - 1}]]]]]]]]]]\n"
                                                                   for i in range(1, 8)), "deeper than 64 levels"),
])
def test_yaml_aliases_and_depth_are_bounded(text, words):
    with pytest.raises(YamlError) as exc:
        parse_operators(text, "nf.yaml")
    assert str(exc.value).startswith("nf.yaml:") and words in str(exc.value)
    with pytest.raises(YamlError) as exc:
        parse_derivatives(text.replace("- func:", "- name:"), "d.yaml")
    assert words in str(exc.value)


def test_yaml_billion_laughs_in_a_tree_is_one_line_in_2_gib(tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(FIXTURE_TREE, tree)
    with open(tree / NF, "a") as f:
        f.write(LAUGH.replace("a(Tensor", "laugh(Tensor"))
    r = _cli_limited(["ops", "--source", str(tree), "--no-codegen"], tmp_path / "cache")
    assert r.returncode != 0 and "nodes once its aliases are expanded" in one_error(r.stderr)


def test_a_huge_yaml_value_is_shown_short():
    text = "- func: a(Tensor self) -> Tensor\n  variants: [" + ",".join(["x" * 50] * 10_000) + "]\n"
    with pytest.raises(YamlError) as exc:
        parse_operators(text, "nf.yaml")
    assert len(str(exc.value)) < 1000  # was 520 kB


# ---- 5: a new FunctionsManual.h -----------------------------------------------------------------
def test_new_functions_manual_header_is_noticed(mini_tree):
    """The proof a build leaves (fresh.json) did not cover torch/csrc/autograd: a new
    FunctionsManual.h left ``--backward`` stale until ``index --force``."""
    from atenmap import build

    past = time.time() - 100  # older than freshness.RACY_NS: the proof trusts these mtimes
    for p in [mini_tree, *mini_tree.rglob("*")]:
        os.utime(p, (past, past))
    src = describe(mini_tree, "option")
    build.build(src, codegen=False, jobs=1)
    proof = json.loads((build.index_path(src).parent / "fresh.json").read_text())
    assert proof["dirs"].get("torch/csrc/autograd") is not None
    assert build.is_fresh(src, codegen=False)
    (mini_tree / "torch/csrc/autograd/FunctionsManual.h").write_text("namespace torch { void helper_backward(); }\n")
    assert not build.is_fresh(src, codegen=False)
    report = build.build(src, codegen=False, jobs=1)
    assert report.parsed == 1


# ---- 6: sources --prune during a build ----------------------------------------------------------
def test_prune_during_a_build_keeps_its_new_codegen_output(capsys, mini_tree):
    """A prune between torchgen's end and the build's rename removed the new ``codegen-...``."""
    from atenmap import build
    from atenmap.api import Index
    from atenmap.source.cache import prune

    src = describe(mini_tree, "option")
    seen, said = [], []

    def during(done, total, path):  # called as files are parsed; torchgen's are parsed after it ran
        if "/codegen/codegen-" in path and not seen:
            seen.append(prune(say=said.append))

    build.build(src, codegen="always", jobs=1, progress=during)
    report, removed = seen[0]
    assert removed == [] and said == ["codegen outputs and facts kept: an index build is running (run --prune again when it is done)"]
    with Index.open(mini_tree, codegen="always") as ix:
        gen = ix.generated_root
        assert gen and pathlib.Path(gen).is_dir()
    assert [p for p, _ in prune()[1]] == []  # no build now: nothing is stale either


def test_prune_waits_for_no_build_and_skips_symlinks(tmp_path):
    from atenmap.source.cache import prune

    cache = cache_dir()
    (cache / "indexes").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (cache / "indexes" / "gone-0123").symlink_to(outside)
    (cache / "indexes" / "gone-4567").mkdir()
    with shared(cache / BUILDS_LOCK):
        _, removed = prune()
    assert [p for p, _ in removed] == [str(cache / "indexes" / "gone-4567")]  # an index has its own lock
    assert (outside / "keep.txt").read_text() == "mine" and (cache / "indexes" / "gone-0123").is_symlink()


# ---- 7: tar header records ----------------------------------------------------------------------
def _archive(path: pathlib.Path, size: int, kind: str, chain: int = 1, members: int = 1) -> None:
    """A .tar.xz of ``members`` empty files, each after ``chain`` ``kind`` header records (GNU long
    name, pax) of ``size`` bytes, written as raw blocks (tarfile would build them in memory)."""
    with lzma.open(path, "wb", preset=0) as out:
        for _ in range(chain * members):
            h = tarfile.TarInfo("././@LongLink" if kind == "gnu" else "pax")
            h.size, h.type = size, tarfile.GNUTYPE_LONGNAME if kind == "gnu" else tarfile.XHDTYPE
            out.write(h._create_header(h.get_info(), tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
            block = b"a" * (1 << 20)
            for _ in range(size >> 20):
                out.write(block)
            out.write(b"a" * (size & ((1 << 20) - 1)) + b"\0" * (-size % 512))
            if _ % chain == chain - 1:
                out.write(tarfile.TarInfo(f"x{_}").tobuf())
        out.write(b"\0" * 1024)


@pytest.mark.parametrize("kind", ["gnu", "pax"])
def test_a_huge_tar_header_is_refused_before_it_is_read(tmp_path, kind):
    archive = tmp_path / f"{kind}.tar.xz"
    _archive(archive, 300 << 20, kind)  # 300 MB in ~46 kB: it took 1.3-1.9 GB
    assert archive.stat().st_size < 200_000
    r = _cli_limited(["fetch", "2.6.0", "--from", str(archive)], tmp_path / "cache")
    assert r.returncode != 0 and "a tar header record of 314572800 bytes" in one_error(r.stderr)
    assert not list((tmp_path / "cache" / "sources").glob(".unpack-*"))


def test_a_chain_of_tar_headers_is_refused(tmp_path):
    archive = tmp_path / "chain.tar.xz"
    _archive(archive, 1000, "gnu", chain=5000)  # tarfile follows a chain recursively
    r = _cli_limited(["fetch", "2.6.0", "--from", str(archive)], tmp_path / "cache")
    assert r.returncode != 0 and "more than 8 tar header records before one member" in one_error(r.stderr)


def test_tar_headers_count_against_fetch_max_bytes(tmp_path, monkeypatch):
    archive = tmp_path / "many.tar.xz"
    _archive(archive, 900_000, "pax", members=40)  # each header under MAX_HEADER, 36 MB in all
    r = _limited(f"""
        import os, sys
        os.environ["ATENMAP_FETCH_MAX_BYTES"] = "10000000"
        from atenmap.cli import main
        sys.exit(main(["fetch", "2.6.0", "--from", {str(archive)!r}]))
    """, tmp_path / "cache")
    assert r.returncode != 0 and "unpacks to more than 10.0 MB" in one_error(r.stderr), r.stderr


# ---- 8: deeply nested #if -----------------------------------------------------------------------
def test_deeply_nested_conditions_are_linear_and_bounded(tmp_path):
    """20,000 levels (260 kB) took 93 s and 2 GB."""
    code = """
        from atenmap.extract import preproc
        text = "".join(f"#if A{i}\\n" for i in range(20000)) + "int x;\\n" + "#endif\\n" * 20000
        c = preproc.read_conditions(text)
        cond = c.at(20001)
        assert cond.startswith("A0 && A1 && ") and cond.endswith(" && …") and len(cond) < 5000, cond
        elifs = "#if A\\n" + "".join(f"#elif B{i}\\n" for i in range(20000)) + "int y;\\n#endif\\n"
        cond = preproc.read_conditions(elifs).at(20002)
        assert cond.startswith("!(A) && !(B0)") and "…" in cond and cond.endswith("B19999"), cond
        print("ok")
    """
    r = _limited(code, tmp_path / "cache")
    assert r.stdout.strip() == "ok", r.stderr


def test_real_conditions_are_not_cut():
    text = "#if A\n#elif defined(B)\n#else\nint z;\n#endif\n"
    assert preproc.read_conditions(text).at(4) == "!(A) && !(defined(B))"


# ---- 9 and 10: .git/HEAD and version.txt --------------------------------------------------------
@pytest.mark.parametrize("what", ["fifo", "zero"])
def test_git_head_that_is_no_file(tmp_path, what):
    tree = tmp_path / "t"
    shutil.copytree(FIXTURE_TREE, tree)
    (tree / ".git").mkdir()
    if what == "fifo":
        os.mkfifo(tree / ".git" / "HEAD")  # reading it blocked every command
    else:
        (tree / ".git" / "HEAD").symlink_to("/dev/zero")  # a MemoryError
    r = _cli_limited(["ops", "--source", str(tree), "--no-codegen", "--limit", "1"], tmp_path / "cache")  # a hang guard; the time itself is bench/bench_trust.py's
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_huge_sparse_version_txt(tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(FIXTURE_TREE, tree)
    with open(tree / "version.txt", "wb") as f:
        f.truncate(200 << 20)  # 200 MB of NULs: read and escaped whole, over 60 s and 7 GB
    r = _limited(f"""
        from pathlib import Path
        from atenmap.source.find import describe
        print(repr(describe(Path({str(tree)!r}), "option").version))
    """, tmp_path / "cache")
    assert r.stdout.strip() == repr("\x00" * 64 + "…"), r.stderr
    r = _cli_limited(["index", "--source", str(tree), "--no-codegen"], tmp_path / "cache")
    assert r.returncode == 0 and "\x00" not in r.stdout and "(PyTorch \\x00\\x00" in r.stdout, r.stderr


def test_read_bytes_refuses_what_is_not_a_bounded_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 100)
    with pytest.raises(files.NotRegular):
        files.read_bytes(tmp_path / "fifo")
    with pytest.raises(files.NotRegular):
        files.read_bytes("/dev/zero")
    with pytest.raises(files.TooLarge):
        files.read_bytes(tmp_path / "big", 99)
    assert files.read_bytes(tmp_path / "big", 10, head=True) == b"x" * 10
    (tmp_path / "empty").write_bytes(b"")
    assert files.first_line(tmp_path / "empty") == ""


# ---- the smaller ones ---------------------------------------------------------------------------
def test_full_disk_while_copying_the_index_leaves_no_temporary(tmp_path, mini_tree):
    """A refresh copies the old index first; a full disk there left ``index.sqlite.tmp-PID``."""
    from atenmap import build
    from atenmap.store import INDEX_NAME

    src = describe(mini_tree, "option")
    report = build.build(src, codegen=False, jobs=1)
    size = report.path.stat().st_size
    (mini_tree / "aten/src/ATen/native/New.cpp").write_text("void fresh_one() {}\n")
    code = f"""
        import resource, signal, sys
        from pathlib import Path
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({size // 2}, {size // 2}))  # a disk that fills up mid-copy
        from atenmap.cli import main
        sys.exit(main(["index", "--source", {str(mini_tree)!r}, "--no-codegen", "--jobs", "1"]))
    """
    r = _limited(code, pathlib.Path(os.environ["ATENMAP_CACHE"]))
    assert r.returncode != 0 and "File too large" in one_error(r.stderr), r.stderr
    assert not list(report.path.parent.glob(f"{INDEX_NAME}.tmp-*"))


def test_fact_cache_never_writes_through_a_symlink(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "precious.txt"
    victim.write_text("keep")
    old = time.time() - 10 * factcache.PRUNE_AFTER
    os.utime(victim, (old, old))
    stamp = victim.stat().st_mtime_ns
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "key.sqlite").symlink_to(victim)
    (tmp_path / "facts" / "other.sqlite").symlink_to(victim)
    cache = factcache.FactCache(tmp_path / "facts" / "key.sqlite")
    cache.claim()
    assert not cache.put("ab" * 20, False, [])  # never written through it
    assert victim.read_text() == "keep" and victim.stat().st_mtime_ns == stamp  # not even touched
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]
