"""native_yaml against real PyTorch trees: the dispatch map and lines must equal the checkout's torchgen.

The tree comes from conftest's ``fetch_real_tree`` (scripts/fetch-pytorch-src, cached; the test skips
if it cannot be had, and fails on CI).
torchgen runs in a subprocess with that tree first on ``sys.path`` and dumps JSON, so the two
torchgen versions never meet in one interpreter.

Note [Autogen operators in the comparison]
torchgen's BackendIndex also holds operators that are not in the yaml: ``add_generated_native_functions``
(torchgen/native_function_generation.py) creates the ``autogen:`` ops (``foo.out`` for a functional
``foo``, functional variants of inplace/mutable ops) with generated CompositeExplicitAutograd kernels.
(It skips some: an ``autogen:`` on a non-core CompositeImplicitAutograd op, e.g. 2.6's ``prelu.out``,
makes nothing.) native_yaml models the yaml only, so the comparison covers every operator the yaml
declares; the operators only torchgen has must all be named by some entry's ``autogen:``.
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from atenmap.extract.native_yaml import find_operator, load_operators

from .conftest import fetch_real_tree

pytestmark = pytest.mark.realtree

YAML = "aten/src/ATen/native/native_functions.yaml"

_DUMP = r"""
import json, sys
tree = sys.argv[1]
sys.path.insert(0, tree)
from torchgen.gen import parse_native_yaml
p = parse_native_yaml(tree + "/aten/src/ATen/native/native_functions.yaml",
                      tree + "/aten/src/ATen/native/tags.yaml")
lines = {str(f.func.name): f.loc.line for f in p.native_functions}
dispatch = {}
for key, index in p.backend_indices.items():
    for op, m in index.index.items():
        dispatch.setdefault(str(op), {})[str(key)] = [m.kernel, m.structured]
json.dump({"lines": lines, "dispatch": dispatch}, sys.stdout)
"""


@pytest.fixture(scope="module", params=["2.6.0", "1.13.1"])
def tree(request):
    root = fetch_real_tree(request.param)
    r = subprocess.run([sys.executable, "-c", _DUMP, str(root)], capture_output=True, text=True,
                       cwd=root, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"torchgen of {request.param} failed:\n{r.stderr[-2000:]}")
    ops = load_operators(root / YAML, root)
    return request.param, root, ops, json.loads(r.stdout)


def test_every_dispatch_map_equals_torchgen(tree):
    version, _, ops, truth = tree
    theirs = truth["dispatch"]
    mismatches = []
    for op in ops:
        ours = {d.key: [d.kernel, d.structured] for d in op.dispatch}
        if ours != theirs.get(str(op.name), {}):
            mismatches.append(f"{op.name} ({op.loc}): ours {ours} != torchgen {theirs.get(str(op.name), {})}")
    print(f"\n{version}: {len(ops) - len(mismatches)}/{len(ops)} operators agree with torchgen, "
          f"{sum(len(op.dispatch) for op in ops)} dispatch entries")
    assert not mismatches, f"{len(mismatches)} of {len(ops)} differ:\n" + "\n".join(mismatches[:20])


def test_operators_only_torchgen_has_are_autogen(tree):
    # See Note [Autogen operators in the comparison]
    _, _, ops, truth = tree
    ours = {str(op.name) for op in ops}
    autogen = {name for op in ops for name in op.autogen}
    assert len(ours) == len(ops), "duplicate operator names"
    assert ours <= set(truth["lines"])
    only_torchgen = set(truth["lines"]) - ours
    assert only_torchgen and only_torchgen <= autogen
    assert set(truth["dispatch"]) - ours <= only_torchgen


def test_every_line_equals_torchgen(tree):
    _, _, ops, truth = tree
    wrong = [f"{op.name}: ours {op.loc.line}, torchgen {truth['lines'][str(op.name)]}"
             for op in ops if truth["lines"][str(op.name)] != op.loc.line]
    assert not wrong, "\n".join(wrong[:20])


@pytest.mark.parametrize("name", ["add.out", "linear", "exp_", "__iand__.Tensor", "zeros_like"])
def test_line_matches_grep(tree, name):
    _, root, ops, _ = tree
    op = find_operator(ops, name)
    assert op.loc.file == YAML
    r = subprocess.run(["grep", "-nF", "-e", f"- func: {name}(", str(root / YAML)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert op.loc.line == int(r.stdout.split(":", 1)[0])


def test_known_facts(tree):
    _, _, ops, _ = tree
    add_out = find_operator(ops, "add.out")
    assert add_out.kernel_for("CPU").kernel == "ufunc_add_CPU"
    assert add_out.kernel_for("CPU").structured and not add_out.kernel_for("CPU").explicit
    assert find_operator(ops, "add.Tensor").structured_delegate.overload == "out"
    assert find_operator(ops, "linear").kernel_for("CompositeImplicitAutograd") is not None

