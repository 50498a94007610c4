"""The oracle test of issue 10: every (operator, CUDA kernel) pair that real PyTorch ran on an H200
(fixtures/oracle/, recorded by bench/oracle_record.py from PyTorch's own OpInfo database) is scored
against the static chains of the 2.6.0 tree by bench/bench_truth.py. Version skew (the GPU ran
torch 2.11) is counted apart, never as a pass. The floors below are today's measurement: they only
go up. Targets (issue 10): in-tree >= 95 %, library >= 80 %."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from .conftest import REPO

pytestmark = pytest.mark.realtree

IN_TREE_FLOOR = 99.5  # measured 99.8 % (865 of 867, jiterator pairs scored as in-tree) on 2.6.0
LIBRARY_FLOOR = 99.5  # measured 100.0 % (231 of 231; 14 by a library that runs cuBLAS itself)
PER_OP_FLOOR = 99.5  # measured 99.7 % (353 of 354 ops have every scored kernel predicted)


@pytest.fixture(scope="module")
def scored(real_index_26, shared_cache, tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_truth", REPO / "bench" / "bench_truth.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_truth"] = bench
    spec.loader.exec_module(bench)
    out = tmp_path_factory.mktemp("truth") / "verdicts.json"
    mp = pytest.MonkeyPatch()
    mp.setenv("ATENMAP_CACHE", str(shared_cache))  # the index real_index_26 built
    try:
        assert bench.main(["--tree", real_index_26.source.root, "--json", str(out), "--quiet"]) == 0
    finally:
        mp.undo()
    return json.loads(out.read_text())


def test_in_tree_kernels_are_predicted(scored):
    s = scored["summary"]["in-tree"]
    assert s["percent"] >= IN_TREE_FLOOR, s
    assert s["skew"] <= 20  # kernels and ops that 2.6.0 does not have: reported apart


def test_library_kernels_have_a_library_step_of_their_family(scored):
    s = scored["summary"]["library"]
    assert s["percent"] >= LIBRARY_FLOOR, s


@pytest.mark.parametrize("op,kernel", [
    ("clamp_min", "vectorized_elementwise_kernel"),  # relu's innermost op
    ("_softmax", "softmax_warp_forward"),
    ("linalg_vector_norm.out", "reduce_kernel"),  # NormTwoOps: a reduction functor in an argument list
    ("normal_", "distribution_elementwise_grid_stride_kernel"),  # a stub chosen by a template argument
    ("mm", "gemv"),  # cuBLAS behind at::cuda::blas::gemm's specialization
])
def test_named_patterns_are_predicted(scored, op, kernel):
    mine = [v for v in scored["verdicts"] if v.get("op") == op and kernel in v.get("kernel", "")
            and v["verdict"] in ("predicted", "missed")]
    assert mine and all(v["verdict"] == "predicted" for v in mine), [(v["kernel"][:80], v.get("reason")) for v in mine]


def test_jiterator_and_library_run_library_columns(scored):
    """Jiterator kernels are scored as in-tree (a jit step names the function); cuSOLVER/MAGMA steps
    predict the cuBLAS kernels they run, counted apart (bench/bench_truth.py's docstring). cuSOLVER's
    own kernels that take cuBLAS parameter types (cusolverDnXfill_kernel(cublasFillMode_t, ...)) are
    cuSOLVER's, not counted here."""
    s = scored["summary"]
    assert s["in-tree"]["jiterator"] >= 60 and s["in-tree"]["jiterator_predicted"] == s["in-tree"]["jiterator"], s
    assert s["library"]["via_library"] >= 10, s


def test_per_op_view(scored):
    """The ops whose every observed kernel is predicted (issue 25's per-op view)."""
    s = scored["summary"]["per_op"]
    assert s["ops"] >= 340 and s["percent"] >= PER_OP_FLOOR, s


def test_generic_loop_kernels_are_about_two_thirds_of_the_in_tree_pairs(scored):
    """What the in-tree score measures (docs/truth.md): recall over kernel instantiations, most of
    them TensorIterator loops and reductions (Loops.cuh / CUDALoops.cuh / Reduce.cuh)."""
    s = scored["summary"]["in-tree"]
    assert 0.5 <= s["generic"] / s["pairs"] <= 0.7, s


def test_a_missing_tree_fails_on_ci_and_skips_elsewhere(monkeypatch):
    """The floors above must not skip on CI when the tree cannot be had (issue 25)."""
    from .conftest import fetch_real_tree

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="unknown version '0.0.0'.*CI=true"):
        fetch_real_tree("0.0.0")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="unknown version '0.0.0'"):
        fetch_real_tree("0.0.0")
