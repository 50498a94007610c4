"""The shipped bundle is what scripts/build-bundle makes from the real PyTorch 2.6.0 tree today:
rebuilt here from the full index and compared, byte for byte (see Note [Deterministic bundle]),
and its chains equal the full index's. When parse.py, the queries or the grammars change, these
fail: run scripts/build-bundle and commit src/atenmap/data/."""
from __future__ import annotations

import random
import sqlite3

import pytest

from atenmap.source import bundle
from .conftest import build_bundle
from atenmap.api import Index
from atenmap.store import Store

pytestmark = pytest.mark.realtree

REBUILD = "the shipped bundle is out of date: run scripts/build-bundle and commit src/atenmap/data/"


@pytest.fixture(scope="module")
def rebuilt(real_index_26, tmp_path_factory):
    man = bundle.manifest()
    out = tmp_path_factory.mktemp("bundle")
    return build_bundle.build(real_index_26.store.path, out, version=man["version"], tag=man.get("tag"),
                        commit=man.get("commit"), source_note=man.get("source", ""), compress=False)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The shipped bundle, unpacked (into a cache of this module's own)."""
    import lzma
    from importlib import resources

    man = bundle.manifest()
    path = tmp_path_factory.mktemp("shipped") / "index.sqlite"
    path.write_bytes(lzma.decompress(resources.files("atenmap").joinpath("data", man["file"]).read_bytes()))
    return path


def _facts(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return (dict(conn.execute("SELECT key, value FROM meta")),
                conn.execute("SELECT fi.path, f.kind, f.name, f.qual, f.line, f.end_line, f.namespace, f.arg, f.detail,"
                             " f.via_macro, f.cond, f.targs FROM facts f JOIN files fi ON fi.id = f.file ORDER BY f.id").fetchall(),
                conn.execute("SELECT path, language, size, status, generated FROM files ORDER BY id").fetchall(),
                conn.execute("SELECT name, record FROM operators ORDER BY name").fetchall())
    finally:
        conn.close()


def test_rebuild_has_the_same_facts(rebuilt, shipped):
    meta_a, facts_a, files_a, ops_a = _facts(rebuilt.sqlite)
    meta_b, facts_b, files_b, ops_b = _facts(shipped)
    # the extractor's hash changes with any edit of parse.py/queries; the facts are what must match
    assert meta_a.get("schema_version") == meta_b.get("schema_version"), REBUILD
    assert files_a == files_b, REBUILD
    assert ops_a == ops_b, REBUILD
    assert len(facts_a) == len(facts_b) and facts_a == facts_b, REBUILD


def test_rebuild_is_byte_identical(rebuilt):
    assert rebuilt.manifest["sqlite_sha256"] == bundle.manifest()["sqlite_sha256"], REBUILD


def _chain_facts(chain) -> list:
    """The chain's steps as JSON, generated files relative to torchgen's output (an absolute folder in
    the cache for a full index, ``<torchgen>`` for the bundle): the same facts, wherever they lie."""
    root = (chain.generated_root or "").rstrip("/")

    def norm(d):
        f = d["file"] or ""
        if root and f.startswith(root + "/"):
            d["file"] = "<gen>/" + f[len(root) + 1:]
        if root:
            d["detail"] = d["detail"].replace(root + "/", "<gen>/")  # "called at FILE:LINE"
        d["children"] = [norm(c) for c in d["children"]]
        return d

    return [[norm(s.to_dict()) for s in kc.steps] for kc in chain.keys] + [[norm(s.to_dict()) for s in chain.bindings]]


def test_bundle_chains_equal_the_full_index(real_index_26, shipped, tmp_path):
    path = tmp_path / "slim.sqlite"
    path.write_bytes(shipped.read_bytes())
    s = Store.open(path, writable=True)
    s.finish()
    s.close()
    slim = Index(real_index_26.source, Store.open(path))
    names = [str(o.name) for o in real_index_26.operators()]
    random.seed(6)
    ops = ["add.out", "mul.out", "linear", "mm.out", "softmax.int", "index_select.out", "sum.IntList_out", "cat.out",
           "copy_", "addmm.out", "embedding", "native_layer_norm", "scatter_reduce.two", "gather"] + random.sample(names, 80)
    try:
        for op in ops:
            assert _chain_facts(real_index_26.chain(op)) == _chain_facts(slim.chain(op)), op
    finally:
        slim.close()


def _norm_json(obj, root: str):
    """``obj`` (to_dict output) with torchgen's output folder written ``<gen>`` (see _chain_facts)."""
    import json

    text = json.dumps(obj, sort_keys=True)
    return json.loads(text.replace(root + "/", "<gen>/").replace(bundle.GENERATED_PREFIX + "/", "<gen>/")) if root \
        else json.loads(text.replace(bundle.GENERATED_PREFIX + "/", "<gen>/"))


@pytest.fixture(scope="module")
def slim_bundled(shipped, tmp_path_factory):
    """The shipped bundle opened as `atenmap` opens it with no tree around (origin bundled)."""
    path = tmp_path_factory.mktemp("slim") / "index.sqlite"
    path.write_bytes(shipped.read_bytes())
    s = Store.open(path, writable=True)
    s.index_quotes()
    s.finish()
    s.close()
    ix = Index(bundle.source_info(), Store.open(path))
    yield ix
    ix.close()


WHY_OPS = ["add.out", "mul.out", "mm.out", "softmax.int", "_softmax.out", "sum.IntList_out", "index_put_", "cumsum.out",
           "sort.stable", "_scaled_dot_product_flash_attention", "addmm.out", "native_layer_norm", "gather.out"]


@pytest.mark.parametrize("op", WHY_OPS)
def test_bundle_why_equals_the_tree(real_index_26, slim_bundled, op):
    """Note [What the bundle quotes]: --why on the bundle gives the tree's reasons, step for step."""
    full = real_index_26.chain(op, why=True)
    slim = slim_bundled.chain(op, why=True)
    root = (full.generated_root or "").rstrip("/")
    assert not [w for w in slim.warnings if "--why" in w]
    assert _norm_json(_chain_facts(full), root) == _norm_json(_chain_facts(slim), root), op
    if op in ("add.out", "mul.out", "mm.out", "sum.IntList_out", "cumsum.out"):  # launches under branches
        assert any(s.why for kc in slim.keys for s in kc.walk()), op


@pytest.mark.parametrize("op", ["mul.Tensor", "relu", "_softmax", "mm", "sum.dim_IntList", "layer_norm", "add.Tensor",
                                "cross_entropy_loss", "div.Tensor"])
def test_bundle_backward_equals_the_tree(real_index_26, slim_bundled, op):
    full = real_index_26.backward(op)
    slim = slim_bundled.backward(op)
    root = (real_index_26.generated_root or "").rstrip("/")
    assert not [w for w in slim.warnings if "not shown" in w or "bundled" in w], slim.warnings
    assert _norm_json(full.to_dict(), root) == _norm_json(slim.to_dict(), root), op


def _mps_runs(ix, op) -> list:
    return [(r.name, r.role, r.file, r.line, r.via) for r in ix.chain(op, keys=["MPS"]).runs]


@pytest.mark.parametrize("op", ["add.out", "mm", "softmax", "index_select", "tril_indices", "ceil.out", "bmm.out"])
def test_bundle_mps_runs_equal_the_tree(real_index_26, slim_bundled, op):
    """Note [MPS lines from the bundle]: the MPSGraph operations, graph runs and Metal kernels of an
    MPS chain, read from the bundle's quoted lines, are the tree's; the bundle quotes no whole bodies,
    so its runs carry no branches and keep their bodies' order (Note [MPS branches on a tree])."""
    full = _mps_runs(real_index_26, op)
    assert any(name.startswith("MPSGraph ") for name, *_ in full) or op == "tril_indices", full
    assert sorted(full) == sorted(_mps_runs(slim_bundled, op)), op
    assert not any(r.when for r in slim_bundled.chain(op, keys=["MPS"]).runs), op
    if op in ("mm", "tril_indices"):  # a Metal kernel: its lookup, its definition in a .metal file, its dispatch
        names = [name for name, *_ in full]
        assert any(n.startswith("Metal kernel \"") for n in names) and "Metal dispatch" in names, names
        assert any(n.startswith("kernel void ") and f.endswith(".metal") for n, _r, f, _l, _v in full), full


# Note [The runs the bundle keeps]: the bundled answer's runs block is the tree's. The sample: the
# operators the issue names, then every operator at a fixed stride through the tree's name order.
RUNS_NAMED = ["mm", "addmm", "conv2d", "amax", "softmax", "cross_entropy_loss", "add.out", "index_select"]
RUNS_SPREAD = 40


def _runs_sample(ix) -> list[str]:
    names = sorted(str(o.name) for o in ix.operators())
    return RUNS_NAMED + names[::len(names) // RUNS_SPREAD]


def _runs_block(ix, op: str, why: bool = False):
    """What `atenmap OP --runs [--why]` shows: the text of its runs block (without the header, whose
    source line differs) and the --json runs, for the keys a default answer shows."""
    from atenmap import devices
    from atenmap.views import text as render

    operator = ix.lookup(op).operator
    chain = ix.chain(operator, keys=devices.common_keys(ix.operator_keys(operator)) or None, why=why)
    lines = render.chain_lines(chain, parts=("runs",))
    return lines[lines.index(""):], [r.to_dict() for r in chain.runs], chain


@pytest.mark.parametrize("why", [False, True], ids=["plain", "why"])
def test_bundle_runs_equal_the_tree(real_index_26, slim_bundled, why):
    root = (real_index_26.generated_root or "").rstrip("/")
    sample = _runs_sample(real_index_26)
    assert len(sample) >= 45
    differ = []
    for op in sample:
        tree_text, tree_runs, _ = _runs_block(real_index_26, op, why)
        text, runs, chain = _runs_block(slim_bundled, op, why)
        assert not [w for w in chain.warnings if "#if alone" in w], (op, chain.warnings)
        if _norm_json(tree_runs, root) != _norm_json(runs, root) or tree_text != text:
            differ.append(op)
    assert not differ, differ
