"""The bundled default index: what is shipped, its first-use install into the cache, answering
with no source tree (permalinks, generated steps), building one (on the fixture tree), and
--link."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from atenmap.source import bundle
from .conftest import build_bundle
from atenmap.views import links
from atenmap.api import Index
from atenmap.errors import IndexError_, SourceNotFound
from atenmap.model import SourceInfo, Step
from atenmap.source.find import find_source

from .conftest import FIXTURE_TREE, cli_run

PERMALINK = "https://github.com/pytorch/pytorch/blob/v2.6.0/"


def run(capsys, *args):
    return cli_run(capsys, *args)


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No --source, no ATENMAP_SOURCE, a cwd outside any checkout, nothing fetched."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- what is shipped ---------------------------------------------------------------------------
def test_shipped_bundle_matches_its_manifest():
    man = bundle.manifest()
    assert man is not None, "src/atenmap/data/bundle.json is missing: run scripts/build-bundle"
    data = resources.files("atenmap").joinpath("data", man["file"]).read_bytes()
    assert len(data) == man["xz_size"] and hashlib.sha256(data).hexdigest() == man["xz_sha256"]
    assert man["version"] == "2.6.0" and man["tag"] == "v2.6.0"
    assert man["xz_size"] < 5_000_000, "the bundle should stay a few MB"
    from atenmap.store import SCHEMA_VERSION

    assert man["schema_version"] == SCHEMA_VERSION, "schema changed: rebuild the bundle with scripts/build-bundle"


def test_install_into_cache_once_and_no_build_machine_paths():
    path = bundle.installed_index()
    man = bundle.manifest()
    assert path == Path(os.environ["ATENMAP_CACHE"]) / "bundle" / f"pytorch-2.6.0-{man['xz_sha256'][:12]}" / "index.sqlite"
    assert bundle.installed_index() == path
    assert not list(path.parent.glob("*.tmp-*"))
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["codegen_dir"] == "<torchgen>" and meta["source_root"] == "<bundled>" and meta["complete"] == "1"
    assert "built_at" not in meta and "yaml_stat" not in meta
    assert conn.execute("SELECT count(*) FROM files WHERE path LIKE '/%'").fetchone()[0] == 0
    gen = [r[0] for r in conn.execute("SELECT path FROM files WHERE generated = 1")]
    assert gen and all(p.startswith("<torchgen>/") for p in gen)
    assert "<torchgen>/aten/RegisterCUDA.cpp" in gen and "<torchgen>/aten/UfuncCUDA_add.cu" in gen
    for table, col in (("files", "path"), ("facts", "arg"), ("facts", "detail"), ("meta", "value")):
        leaked = conn.execute(f"SELECT count(*) FROM {table} WHERE {col} LIKE '%/.cache/%' OR {col} LIKE '%codegen-%'"
                              " OR " + f"{col} LIKE '/root/%' OR {col} LIKE '/home/%'").fetchone()[0]
        assert leaked == 0, (table, col)
    # secondary indexes are made at install time
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "facts_name" in names
    conn.close()


def test_corrupt_bundle_is_refused_and_leaves_nothing(monkeypatch):
    man = dict(bundle.manifest())
    man["sqlite_sha256"] = "0" * 64
    monkeypatch.setattr(bundle, "manifest", lambda: man)
    with pytest.raises(IndexError_, match="corrupt"):
        bundle.installed_index()
    folder = bundle.install_dir(man)
    assert not (folder / "index.sqlite").exists() and not list(folder.glob("index.sqlite.tmp-*"))


# ---- answering with no tree --------------------------------------------------------------------
def test_no_tree_answers_from_the_bundle(nowhere):
    with pytest.raises(SourceNotFound):
        find_source(None)  # plain find_source: only real trees
    info = find_source(None, bundled=True)
    assert info.origin == "bundled" and info.root == "https://github.com/pytorch/pytorch/tree/v2.6.0"
    with Index.open() as ix:
        assert ix.source.origin == "bundled"
        chain = ix.chain("add.out", keys=["CUDA"])
    steps = list(chain.keys[0].walk())
    launches = [s for s in steps if s.role == "launch"]
    assert launches and all(s.file == "aten/src/ATen/native/cuda/CUDALoops.cuh" for s in launches)
    gen = [s for s in steps if s.generated and s.file]
    assert gen and all(s.file.startswith("<torchgen>/aten/") for s in gen)
    assert chain.generated_root == "<torchgen>"


def test_the_bundle_names_kernels_handed_to_a_callback(nowhere):
    # Note [Kernels passed to a callback]: the bundle quotes the lines its reading needs, so the
    # bundled chain names mem-efficient attention's kernels as a tree's does, not `kernel_fn`
    with Index.open() as ix:
        runs = [r for r in ix.chain("_efficient_attention_forward", keys=["CUDA"]).runs if r.key == "CUDA"]
    assert runs[0].name == "fmha_cutlassF_f32_aligned_64x64_rf_sm80", [r.name for r in runs[:3]]
    assert "kernel_fn" not in [r.name for r in runs]


def test_the_bundle_ranks_runs_as_the_tree(nowhere):
    # Note [The runs the bundle keeps]: mm's cuBLAS gemm leads, as on a tree; mm never reaches
    # gemm_and_bias (Note [Arguments a caller binds]), which led when the bundle ranked by #if alone
    with Index.open() as ix:
        chain = ix.chain("mm", keys=["CUDA"])
        assert chain.runs[0].name == "at::cuda::blas::gemm" and chain.runs[0].file == "aten/src/ATen/native/cuda/Blas.cpp"
        assert "gemm_and_bias" not in {r.name.rsplit("::", 1)[-1] for r in chain.runs}
        assert "else of if (useLtInterface)" in " · ".join(c.text for c in chain.runs[0].when)
        assert not [w for w in chain.warnings if "#if alone" in w]
        # --why: the same runs in the same order (Note [--why does not rank]), --why's "when"
        why = ix.chain("mm", keys=["CUDA"], why=True)
        assert [(r.name, r.loc) for r in why.runs] == [(r.name, r.loc) for r in chain.runs]
        assert [r.when for r in why.runs] != [r.when for r in chain.runs]
        # a composite-only operator: its runs are CUDA's, through the operators it calls
        conv = ix.chain("conv2d")
        assert conv.runs and {r.key for r in conv.runs} == {"CUDA"} and all(r.via for r in conv.runs)


def test_the_bundle_says_what_it_did_not_apply(nowhere, capsys):
    """A call's facts and a non-default chain: the kept ranking is not theirs, and the answer says so."""
    from atenmap.resolve.callfacts import CallFacts

    with Index.open() as ix:
        plain = ix.chain("mm", keys=["CUDA"])
        half = ix.chain("mm", keys=["CUDA"], facts=CallFacts(dtype="Half"))
        assert half.runs == plain.runs and half.unapplied == ("dtype float16",) and not half.given
        assert half.to_dict()["unapplied"] == ["dtype float16"]
        shallow = ix.chain("mm", keys=["CUDA"], depth=3)
        assert [w for w in shallow.warnings if w.startswith("runs of CUDA: ranked by each line's #if alone")]
    code, out, err = run(capsys, "mm", "--key", "CUDA", "--dtype", "float16", "--runs")
    assert code == 0, err
    assert "for your call: dtype float16 -- not applied: the bundled index keeps the runs ranked for a call with " \
           "the defaults" in out


def test_cli_bundled_prints_paths_linked_to_permalinks(capsys, nowhere, monkeypatch):
    """The bundled index prints path:line (short); on a terminal each is an OSC-8 link to its permalink."""
    code, out, err = run(capsys, "add.out", "--key", "CUDA")
    assert code == 0, err
    assert "answering from the bundled index of PyTorch 2.6.0 (v2.6.0)" in err
    assert "https://" not in out.split("\n", 2)[2] and "\x1b" not in out  # not a terminal: plain
    launch = [ln for ln in out.splitlines() if " launch " in ln]
    assert launch and all(ln.startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:") for ln in launch)
    assert any("generated by torchgen from aten/src/ATen/templates/RegisterDispatchKey.cpp" in ln for ln in out.splitlines())
    from atenmap.views.terminal import Terminal
    monkeypatch.setattr(Terminal, "detect", classmethod(lambda cls, *a, **k: cls(width=None, color=False, links=True)))
    code, out, _ = run(capsys, "add.out", "--key", "CUDA")
    launch = next(ln for ln in out.splitlines() if " launch " in ln)
    assert launch.startswith("\x1b]8;;" + PERMALINK + "aten/src/ATen/native/cuda/CUDALoops.cuh#L")
    assert "\x1b\\aten/src/ATen/native/cuda/CUDALoops.cuh:" in launch


def test_cli_first_command_prints_permalinks(capsys, nowhere):
    code, out, err = run(capsys, "add.out", "--link", "github")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "source: https://github.com/pytorch/pytorch/tree/v2.6.0 (PyTorch 2.6.0a0)"
    assert lines[2].startswith("gen: = files torchgen writes at build time")
    yaml = next(ln for ln in lines if " yaml " in ln and "CUDA:" in ln)
    assert yaml.startswith(PERMALINK + "aten/src/ATen/native/native_functions.yaml#L")
    launch = [ln for ln in lines if " launch " in ln]
    assert launch and all(ln.startswith(PERMALINK + "aten/src/ATen/native/") for ln in launch)
    assert any(ln.startswith(PERMALINK + "aten/src/ATen/native/cuda/CUDALoops.cuh#L") for ln in launch)
    reg = next(ln for ln in lines if 'm.impl("add.out"' in ln and "RegisterCUDA" in ln)
    assert reg.startswith("gen:aten/RegisterCUDA.cpp:")
    assert "generated by torchgen from aten/src/ATen/templates/RegisterDispatchKey.cpp" in reg
    ufunc = next(ln for ln in lines if "TORCH_IMPL_FUNC(ufunc_add_CUDA)" in ln)
    assert "from aten/src/ATen/templates/UfuncCUDA.cu and aten/src/ATen/native/ufunc/add.h" in ufunc
    # every hand-written step has a permalink
    for ln in lines[4:]:
        if ln and not ln.startswith(("[", "warning:", "+", "runs (", " ", "the way there:", "… ")):
            assert ln.startswith((PERMALINK, "gen:", "(generated)")), ln


def test_cli_link_none_and_json(capsys, nowhere):
    code, out, _ = run(capsys, "add.out", "--key", "CUDA", "--link", "none")
    assert code == 0 and "https://" not in out.split("\n", 2)[2]
    assert any(ln.startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:") for ln in out.splitlines())
    code, out, _ = run(capsys, "add.out", "--key", "CUDA", "--json")
    d = json.loads(out)
    assert d["source"]["origin"] == "bundled" and d["generated_root"] == "<torchgen>"
    root = d["keys"][0]["steps"][0]
    assert root["link"].startswith(PERMALINK + "aten/src/ATen/native/native_functions.yaml#L")

    def walk(s):
        yield s
        for c in s["children"]:
            yield from walk(c)
    steps = list(walk(root))
    assert all(s["link"] is None for s in steps if s["generated"])
    assert all(s["link"].endswith(f"#L{s['line']}") for s in steps if not s["generated"] and s["file"])


def test_bundle_can_be_switched_off(capsys, nowhere, monkeypatch):
    monkeypatch.setenv("ATENMAP_NO_BUNDLE", "1")
    code, _, err = run(capsys, "add.out")
    assert code == 2 and "--source" in err and "atenmap fetch" in err


def test_bad_link_mode(capsys, nowhere):
    code, _, err = run(capsys, "add.out", "--link", "gitlab")
    assert code == 2 and "choose from auto, github, local, none" in err


# ---- --link on a local tree ------------------------------------------------------------------
def test_link_modes_on_a_local_tree(capsys):
    code, out, _ = run(capsys, "mul.out", "--key", "CUDA", "--source", str(FIXTURE_TREE), "--link", "local")
    launch = next(ln for ln in out.splitlines() if " launch " in ln)
    assert launch.startswith(f"{FIXTURE_TREE.resolve()}/aten/src/ATen/native/cuda/CUDALoops.cuh:18 ")
    reg = next(ln for ln in out.splitlines() if 'm.impl("mul.out"' in ln)
    assert reg.startswith(os.environ["ATENMAP_CACHE"]) and "/aten/RegisterCUDA.cpp:" in reg  # real path, not <torchgen>
    code, out, _ = run(capsys, "mul.out", "--key", "CUDA", "--source", str(FIXTURE_TREE), "--link", "github")
    launch = next(ln for ln in out.splitlines() if " launch " in ln)
    assert launch.startswith(PERMALINK + "aten/src/ATen/native/cuda/CUDALoops.cuh#L18 ")  # 2.6.0a0+fixture -> v2.6.0
    code, out, _ = run(capsys, "mul.out", "--key", "CUDA", "--source", str(FIXTURE_TREE))
    assert "https://" not in out and "(2.6.0a0+fixture" not in out  # default for a tree: as before


@pytest.mark.parametrize("version, tag", [("2.6.0a0", "v2.6.0"), ("2.6.0", "v2.6.0"), ("2.6.0+cpu", "v2.6.0"),
                                          ("2.6.0rc2", "v2.6.0-rc2"), ("2.7.0.dev20250101", None), ("unknown", None),
                                          ("1.13.1a0+fixture", "v1.13.1")])
def test_version_tag(version, tag):
    assert links.version_tag(version) == tag


def test_commit_beats_tag_and_unknown_refuses():
    c = "1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340"
    step = Step.make("kernel", "k", "aten/src/ATen/x.cu", 7)
    lk = links.linker(SourceInfo("/nowhere", "2.6.0a0", c, "option"), "github")
    assert lk(step) == f"https://github.com/pytorch/pytorch/blob/{c}/aten/src/ATen/x.cu#L7"
    with pytest.raises(links.LinkError, match="cannot tell which PyTorch commit or tag"):
        links.linker(SourceInfo("/nowhere", "unknown", None, "option"), "github")


@pytest.mark.parametrize("path, template", [
    ("<torchgen>/aten/RegisterCPU.cpp", "aten/src/ATen/templates/RegisterDispatchKey.cpp"),
    ("/c/codegen-1/aten/UfuncCPUKernel_add.cpp", "aten/src/ATen/templates/UfuncCPUKernel.cpp"),
    ("<torchgen>/python/python_torch_functions_1.cpp", "tools/autograd/templates/python_torch_functions.cpp"),
    ("<torchgen>/python/python_variable_methods.cpp", "tools/autograd/templates/python_variable_methods.cpp"),
    ("<torchgen>/aten/Operators_0.cpp", None),
])
def test_derived_from(path, template):
    assert links.derived_from(path) == template


# ---- building a bundle -------------------------------------------------------------------------
def test_build_on_the_fixture_tree_is_deterministic_and_slim(mini_index_gen, tmp_path):
    src = mini_index_gen.store.path
    a = build_bundle.build(src, tmp_path / "a", version="2.6.0", tag="v2.6.0", source_note="fixture")
    b = build_bundle.build(src, tmp_path / "b", version="2.6.0", tag="v2.6.0", source_note="fixture")
    assert a.xz.read_bytes() == b.xz.read_bytes() and a.sqlite.read_bytes() == b.sqlite.read_bytes()
    man = json.loads((tmp_path / "a" / "bundle.json").read_text())
    assert man["sqlite_sha256"] == hashlib.sha256(a.sqlite.read_bytes()).hexdigest()
    conn = sqlite3.connect(a.sqlite)
    assert conn.execute("SELECT count(*) FROM facts WHERE kind = 'include' AND arg = ''").fetchone()[0] == 0
    assert {r[0] for r in conn.execute("SELECT name FROM facts WHERE kind = 'macro_block'")} <= {
        "TORCH_LIBRARY_IMPL", "TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT"}
    assert conn.execute("SELECT count(*) FROM files WHERE path LIKE '/%'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM files WHERE mtime_ns != 0").fetchone()[0] == 0
    assert a.dropped.get("include", 0) > 0 and a.kept["binding"] > 0
    # scopes point at kept facts only
    orphans = conn.execute("SELECT count(*) FROM facts WHERE scope IS NOT NULL AND scope NOT IN (SELECT id FROM facts)")
    assert orphans.fetchone()[0] == 0
    conn.close()


def test_build_refuses_an_index_without_compile_facts(tmp_path, monkeypatch):
    """Note [torch.compile facts when asked]: a query's index lacks them; the bundle keeps them."""
    from atenmap.errors import AtenmapError

    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    with Index.open(FIXTURE_TREE, codegen=True) as ix:
        with pytest.raises(AtenmapError, match="no torch.compile facts"):
            build_bundle.build(ix.store.path, tmp_path / "out", version="2.6.0", tag="v2.6.0")


def test_slim_fixture_bundle_gives_the_same_chains(mini_index_gen, tmp_path, monkeypatch):
    """Chains read from the slim copy equal those of the full index (paths shown as <torchgen>/...)."""
    from atenmap.views import text as render

    rep = build_bundle.build(mini_index_gen.store.path, tmp_path, version="2.6.0", tag="v2.6.0", compress=False)
    from atenmap.store import Store

    s = Store.open(rep.sqlite, writable=True)
    s.finish()
    s.close()
    slim = Index(mini_index_gen.source, Store.open(rep.sqlite))
    try:
        for op in [str(o.name) for o in mini_index_gen.operators()]:
            gen = mini_index_gen.generated_root
            a = [" ".join(ln.replace(gen, "<torchgen>").split()) for ln in render.chain_lines(mini_index_gen.chain(op))[3:]]
            b = [" ".join(ln.split()) for ln in render.chain_lines(slim.chain(op))[3:]]
            assert a == b, op
    finally:
        slim.close()
