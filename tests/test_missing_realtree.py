"""What MPS lacks on the real 2.6.0 tree (issue 36): the count of ``atenmap ops --key MPS --missing``
and three operators checked by hand against native_functions.yaml and ATen/mps/MPSFallback.mm:

- grid_sampler_3d (yaml:2919): CPU and CUDA kernels only, no composite, nothing under native/mps or
  ATen/mps registers it: an MPS call raises in mps_error_fallback (MPSFallback.mm:45, registered at
  :81), or runs on the CPU with PYTORCH_ENABLE_MPS_FALLBACK=1 (mps_fallback, :9);
- embedding_renorm_ (yaml:2310): CPU and CUDA only; MPSFallback.mm:91 registers it to mps_fallback;
- all.dims (yaml:707): structured_delegate all.dims_out (CPU, CUDA: all_dims_out, no MPS) and
  CompositeExplicitAutograd: all_dims_default, which MPS runs.
"""
from __future__ import annotations

import collections

import pytest

from atenmap.errors import AtenmapError
from atenmap.kinds import KeyGroup, Lacking

pytestmark = pytest.mark.realtree

MM = "aten/src/ATen/mps/MPSFallback.mm"
YAML = "aten/src/ATen/native/native_functions.yaml"


def test_mps_missing_count_and_three_operators_checked_by_hand(real_index_26):
    found = real_index_26.missing("MPS")
    counts = collections.Counter(str(x.outcome) for x in found)
    assert len(found) == 586 and counts == {"error": 425, "composite": 156, "cpu_fallback": 5}
    by = {str(x.op.name): x for x in found}
    g = by["grid_sampler_3d"]
    assert g.outcome == Lacking.ERROR and str(g.op.loc) == f"{YAML}:2919"
    assert str(g.at) == f"{MM}:45" and str(g.registered) == f"{MM}:81" and f"(mps_fallback, {MM}:9)" in g.says
    e = by["embedding_renorm_"]
    assert e.outcome == Lacking.CPU_FALLBACK and str(e.registered) == f"{MM}:91" and str(e.op.loc) == f"{YAML}:2310"
    a = by["all.dims"]
    assert a.outcome == Lacking.COMPOSITE and a.served_by == KeyGroup.CEA and str(a.op.loc) == f"{YAML}:707"
    # the other four MPSFallback.mm registers to mps_fallback (linalg_svd has no dispatch section: the
    # registration wins over its CompositeImplicitAutograd kernel)
    assert {n for n, x in by.items() if x.outcome == Lacking.CPU_FALLBACK} == {
        "embedding_renorm_", "linalg_svd", "linalg_svd.U", "col2im", "upsample_nearest3d.vec"}
    assert "add.out" not in by and "_slow_conv2d_forward" not in by  # an MPS kernel; a hand-written MPS kernel


def test_the_chain_says_what_an_mps_call_does(real_index_26):
    ch = real_index_26.chain("grid_sampler_3d", keys=["MPS"])
    assert ch.keys == () and any(w.startswith("grid_sampler_3d has no MPS kernel and no composite: a call on MPS "
                                              f"raises NotImplementedError (mps_error_fallback, {MM}:45)")
                                 for w in ch.warnings)
    ch = real_index_26.chain("linalg_svd", keys=["MPS"])  # not its CompositeImplicitAutograd chain
    assert ch.keys == () and any(f"registers it to mps_fallback (at {MM}:92)" in w for w in ch.warnings)


def test_xpu_names_torch_xpu_ops_and_keeps_the_trees_own_xpu_kernels(real_index_26):
    ch = real_index_26.chain("add.out", keys=["XPU"])
    assert ch.keys == () and ch.warnings[-1] == (
        "add.out has no XPU kernel in this tree: XPU kernels live in the separate torch-xpu-ops repository "
        f"(its own yaml registers them); this tree's entry: {YAML}:575")
    ch = real_index_26.chain("mm.out", keys=["XPU"])  # native/mkldnn/xpu/Blas.cpp: a real chain
    assert [k.key for k in ch.keys] == ["XPU"]
    assert any(s.file == "aten/src/ATen/native/mkldnn/xpu/Blas.cpp" for s in ch.keys[0].walk())
    with pytest.raises(AtenmapError, match="torch-xpu-ops"):
        real_index_26.missing("XPU")


def _graph_runs(ix, op):
    return [(r.name, r.file.rsplit("/", 1)[-1], r.line, r.via) for r in ix.chain(op, keys=["MPS"]).runs]


@pytest.mark.parametrize("op, expected", [
    # BinaryOps.mm: add_sub_lerp_template's block (lines 286-301) and binaryOpTensor's runMPSGraph
    ("add.out", [("MPSGraph additionWithPrimaryTensor", "BinaryOps.mm", 299, ()), ("runMPSGraph", "BinaryOps.mm", 183, ())]),
    # LinearAlgebra.mm: do_mm's [graph matrixMultiplicationWithPrimaryTensor:] and mm_out_mps_impl's run
    ("mm", [("MPSGraph matrixMultiplicationWithPrimaryTensor", "LinearAlgebra.mm", 72, ()),
            ("runMPSGraph", "LinearAlgebra.mm", 245, ())]),
    # softmax.int is CompositeImplicitAutograd: its _softmax's MPS graph
    ("softmax", [("MPSGraph softMaxWithTensor", "SoftMax.mm", 103, ("aten::_softmax",)),
                 ("runMPSGraph", "SoftMax.mm", 129, ("aten::_softmax",))]),
    ("index_select", [("MPSGraph gatherWithUpdatesTensor", "Indexing.mm", 658, ()), ("runMPSGraph", "Indexing.mm", 685, ())]),
])
def test_mps_runs_are_the_graph_operations_and_the_graph_run(real_index_26, op, expected):
    got = _graph_runs(real_index_26, op)
    for run in expected:
        assert run in got, got
    # the operator's own main path first; its runs the default call cannot take (add.out's lerp and
    # sub subtractions, dead for op_name "add": Note [An if without braces]) rank after the others
    first_via = next((i for i, g in enumerate(got) if g[3]), len(got))
    assert all(got.index(run) < first_via for run in expected if not run[3]), got


def test_mps_metal_kernel_lookup_definition_and_dispatch(real_index_26):
    """mm's do_metal_mm (LinearAlgebra.mm:39, for large strides before macOS 14.4 or with
    PYTORCH_MPS_PREFER_METAL): lib.getPipelineStateForFunc at :42,
    ``kernel void naive_matmul(`` at kernels/LinearAlgebra.metal:14, mtl_dispatch1DJob at :54."""
    got = _graph_runs(real_index_26, "mm")
    assert ('Metal kernel "naive_matmul_" + mps::scalarToMetalTypeString(output)', "LinearAlgebra.mm", 42, ()) in got
    assert ("kernel void naive_matmul", "LinearAlgebra.metal", 14, ()) in got
    assert ("Metal dispatch", "LinearAlgebra.mm", 54, ()) in got


# ---- Note [The branches of an MPS run] in resolve/mpsgraph.py; each line read in the .mm file ----
def _when(run):
    return [(w.kind, w.text, w.loc.line) for w in run.when]


def test_mm_on_mps_runs_the_graph_first_and_the_metal_path_when_use_metal_mm(real_index_26):
    """LinearAlgebra.mm: mm_out_mps_impl checks supportedFloatingOrComplexType(self) (:205), returns
    on an empty output (:213) and takes do_metal_mm when use_metal_mm(...) (:221), whose return is
    ``always_use_metal || (!is_macos_14_4_or_newer && <sizes>)``: false on a current macOS without
    PYTORCH_MPS_PREFER_METAL, so the MPSGraph matmul (:72) and its run (:245) lead."""
    runs = real_index_26.chain("mm", keys=["MPS"]).runs
    assert [(r.name, r.line) for r in runs[:2]] == [("MPSGraph matrixMultiplicationWithPrimaryTensor", 72),
                                                     ("runMPSGraph", 245)]
    assert _when(runs[1]) == [("return", "after if (use_metal_mm(self, other, output)) return", 221),
                              ("return", "after if (output.numel() == 0) return", 213),
                              ("check", "after TORCH_CHECK(supportedFloatingOrComplexType(self))", 205)]
    metal = next(r for r in runs if r.line == 42)
    assert _when(metal)[0] == ("if", "if (use_metal_mm(self, other, output))", 221)
    assert runs.index(metal) > 1


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_a_dtype_mps_refuses_runs_nothing(real_index_26, dtype):
    """mm's TORCH_CHECK(supportedFloatingOrComplexType(self), "MPS device does not support mm for
    non-float inputs") (LinearAlgebra.mm:205): float32, float16 and bfloat16 only (and complex)."""
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    assert real_index_26.chain("mm", keys=["MPS"], facts=CallFacts(dtype=parse_dtype(dtype))).runs == ()
    kept = real_index_26.chain("mm", keys=["MPS"], facts=CallFacts(dtype=parse_dtype("float16"))).runs
    assert kept[0].line == 72 and kept[0].decided == "undecided"  # the sizes use_metal_mm reads are not given


def test_a_metal_kernel_op_picks_its_kernel_by_dtype(real_index_26):
    """UnaryKernel.mm's exec_unary_kernel: ``if (c10::isComplexType(self.scalar_type()))`` (:31) looks
    up NAME_complex_kernel (:33), else NAME_kernel (:35); erfinv_out_mps checks ``self.scalar_type() !=
    ScalarType::Double`` (:66) first."""
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    def lookups(op, dtype=None):
        facts = CallFacts(dtype=parse_dtype(dtype)) if dtype else None
        return [r.line for r in real_index_26.chain(op, keys=["MPS"], facts=facts).runs if r.name.startswith("Metal kernel")]
    assert lookups("erfinv.out") == [35, 33]  # the default call's float32 first
    assert lookups("erfinv.out", "complex64") == [33] and lookups("erfinv.out", "float16") == [35]
    assert lookups("erfinv.out", "float64") == []
    first = real_index_26.chain("erfinv.out", keys=["MPS"]).runs[0]
    assert _when(first) == [("else", "else of if (c10::isComplexType(self.scalar_type()))", 34),
                            ("return", "after if (length == 0) return", 25),
                            ("check", "after TORCH_CHECK(self.scalar_type() != ScalarType::Double)", 66)]


def test_an_older_macos_path_ranks_after(real_index_26):
    """Indexing.mm's nonzero_out_mps returns the CPU fallback ``if (!is_macos_13_or_newer(
    MacOSVersion::MACOS_VER_15_0_PLUS) && (...))`` (:345): on a current macOS its graph (:379, :388)
    is the first run. SoftMax.mm's reshape/transpose (:112) for ``memory_format == ChannelsLast &&
    !is_macOS_15_0_or_newer`` (:106, the flag set at :42) ranks after softmax's graph run (:129)."""
    runs = real_index_26.chain("nonzero", keys=["MPS"]).runs
    assert [(r.name, r.line) for r in runs[:2]] == [("MPSGraph nonZeroIndicesOfTensor", 379), ("runMPSGraph", 388)]
    assert ("return", "after if (!is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS) && (self.numel() >= "
                      "nonZeroMaxSize || self.is_complex())) return", 345) in _when(runs[0])
    runs = real_index_26.chain("softmax", keys=["MPS"]).runs
    assert [r.line for r in runs[:2]] == [103, 129]
    reshape = next(r for r in runs if r.line == 112)
    assert _when(reshape)[0] == ("if", "if (memory_format == at::MemoryFormat::ChannelsLast && !is_macOS_15_0_or_newer)", 106)


def test_an_early_return_that_calls_its_own_function_rules_nothing_out(real_index_26):
    """Indexing.mm's index_select_out_mps: ``if (self.is_complex())`` (:629) calls itself on
    view_as_real views (:631) and returns, so a complex64 call still runs the gather (:658) and its
    graph run (:685); the empty and scalar returns (:617, :622) stay its conditions."""
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    runs = real_index_26.chain("index_select", keys=["MPS"], facts=CallFacts(dtype=parse_dtype("complex64"))).runs
    assert [(r.name, r.line) for r in runs[:2]] == [("MPSGraph gatherWithUpdatesTensor", 658), ("runMPSGraph", 685)]
    assert [w.loc.line for w in runs[0].when][:2] == [622, 617]


# ---- issue 36's acceptance sets: bench/devices_truth.py, each step read by hand in the 2.6.0 tree ----
def test_the_hand_verified_mps_and_rocm_steps_are_found_at_real_lines(real_index_26):
    """Of the 155 steps (123 of 16 MPS and 8 ROCm operators drawn by rule, named in no issue, and 32 of
    6 MPS operators picked for the patterns of branch t41), at least 95% are found and no run sits at a line that does not hold it (bench/devices_truth.py says how
    they were drawn and what each step is). Before Notes [Helpers the index does not define],
    [Functions a macro makes], [Read once, followed deepest], [A kernel name the caller gives] and
    [A run's name in its own definition], [Metal kernels a macro instantiates]: 94 of 123, and 6
    runs at mtl_dispatch1DJob's header."""
    import importlib.util
    from pathlib import Path

    from .conftest import fetch_real_tree

    spec = importlib.util.spec_from_file_location("devices_truth", Path(__file__).parents[1] / "bench" / "devices_truth.py")
    truth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(truth)
    out = truth.score(fetch_real_tree("2.6.0"), real_index_26)
    assert out["nonexistent"] == []
    assert out["found"] / out["steps"] >= 0.95, [r for r in out["operators"] if r["missed"]]
    by_op = {(r["op"], r["key"]): r for r in out["operators"]}
    for op in ("scatter.src_out", "_upsample_nearest_exact2d.out", "bernoulli_.Tensor", "reciprocal.out", "tanh.out",
               "digamma.out", "i0.out", "_weight_int4pack_mm", "searchsorted.Tensor", "bmm.out",
               "linalg_solve_triangular.out", "masked_scatter_", "index.Tensor_out", "_index_put_impl_"):
        assert by_op[(op, "MPS")]["missed"] == [], op


# ---- Note [Kernel names a format builds] in resolve/metalnames.py; each line read in the .mm/.metal files ----
KERNELS = "aten/src/ATen/native/mps/kernels/"


def _kernels(ix, op, dtype=None):
    from atenmap.model import Role
    from atenmap.resolve.callfacts import CallFacts

    facts = CallFacts(dtype=dtype) if dtype else None
    return [(r.name, r.file, r.line) for r in ix.chain(op, keys=["MPS"], facts=facts).runs if r.role == Role.KERNEL
            and r.file.endswith(".metal")]


def test_a_kernel_name_fmt_format_builds(real_index_26):
    """SpecialOps.mm:28-29: ``lib.getPipelineStateForFunc(`` then ``fmt::format("{}_{}_{}", name, ...)``,
    ``name`` = "i0" (i0_kernel_mps, :45); SpecialOps.metal's ``void kernel`` (:134) ``i0(`` (:135) and
    REGISTER_I0_I1 (:155 on); Quantized.mm's ``kernel = fmt::format(...)`` locals, one per branch."""
    i0 = _kernels(real_index_26, "i0.out")
    assert i0[0] == ("kernel void i0", KERNELS + "SpecialOps.metal", 135)
    assert i0[1][0].startswith("instantiated as i0_float_float, i0_bool_float") and i0[1][1:] == (KERNELS + "SpecialOps.metal", 155)
    assert ("instantiated as i0_half_half", KERNELS + "SpecialOps.metal", 163) in _kernels(real_index_26, "i0.out", "Half")
    int8 = _kernels(real_index_26, "_weight_int8pack_mm")
    assert {("kernel void kernel_mul_mm", KERNELS + "Quantized.metal", 292),
            ("kernel void kernel_mul_mv", KERNELS + "Quantized.metal", 570)} <= set(int8)
    search = _kernels(real_index_26, "searchsorted.Tensor")
    assert {("kernel void searchsorted", KERNELS + "Bucketization.metal", 121),
            ("kernel void searchsorted_sorter", KERNELS + "Bucketization.metal", 89)} <= set(search)


def test_mps_library_kernels_and_the_branch_around_their_block(real_index_26):
    """Note [MPS library kernels]: LinearAlgebra.mm:510 ``[MPSNDArrayMatrixMultiplication alloc]``, :581
    ``[matmul encodeToCommandEncoder:``, inside tiled_bmm_out_mps_impl's dispatch_sync block (:476) under
    ``if (is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS))`` (:465; Note [Runs inside an
    Objective-C block]); :729/:767 MPSMatrixSolveTriangular."""
    bmm = {r.line: r for r in real_index_26.chain("bmm.out", keys=["MPS"]).runs if r.file.endswith("LinearAlgebra.mm")}
    assert bmm[510].name == "MPS MPSNDArrayMatrixMultiplication (gemm)" and bmm[581].name == "MPS encodeToCommandEncoder"
    assert ("if", "if (is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS))", 465) in _when(bmm[510])
    tri = [(r.name, r.line) for r in real_index_26.chain("linalg_solve_triangular.out", keys=["MPS"]).runs]
    assert ("MPS MPSMatrixSolveTriangular (trsm)", 729) in tri and ("MPS encodeToCommandBuffer", 767) in tri


def test_masked_scatter_runs_index_puts_kernel(real_index_26):
    """Note [An out= overload torchgen makes]: masked_scatter__mps's ``at::index_put_out`` (Indexing.mm:907)
    reaches index_put, whose way ends in index_put_kernel_mps's lookup (:150) and dispatch (:180)."""
    runs = [(r.name, r.line) for r in real_index_26.chain("masked_scatter_", keys=["MPS"]).runs
            if r.file.endswith("Indexing.mm")]
    assert ("Metal kernel indexFunction", 150) in runs and ("Metal dispatch", 180) in runs


def test_index_kernels_a_helper_names(real_index_26):
    """Note [A kernel name a helper returns]: dispatchIndexKernel's lookup (Indexing.mm:150) of
    getIndexFunctionName's result (:99-118: ``= index_select ? "index_select_" : ...``, ``+=
    getBitSizeString(scalar_type)``, ``+= dtypeString`` under ``if (accumulate)``, ``+= use_64bit_indexing ?
    "_idx64" : "_idx32"``), index_kernel_mps passing ``/*index_select=*/true`` (:241), index_put_kernel_mps
    ``false`` (:251); Indexing.metal's kernels (index_select :11, index_put_serial :66, index_put :92,
    index_put_accumulate_native_dtypes :203, atomic_index_put_accumulate :248) and their instantiations:
    REGISTER_INDEX_OP_ALL_DTYPES(select) :138, (put) :139, REGISTER_SINGLE_THREADED_INDEX_OP_ALL_DTYPES(put_serial)
    :167 (each eight REGISTER_INDEX_OP uses), the accumulate ones written out at :275 and :297."""
    metal = KERNELS + "Indexing.metal"
    index = _kernels(real_index_26, "index.Tensor_out")
    assert ("kernel void index_select", metal, 11) in index
    assert ("instantiated as index_select_8bit_idx32, index_select_8bit_idx64, index_select_16bit_idx32, "
            "index_select_16bit_idx64, …", metal, 138) in index
    assert not [k for k in index if "index_put" in k[0]]
    assert ("instantiated as index_select_16bit_idx32, index_select_16bit_idx64", metal, 138) in _kernels(
        real_index_26, "index.Tensor_out", "Half")
    put = _kernels(real_index_26, "index_put_")
    assert {("kernel void index_put", metal, 92), ("kernel void index_put_serial", metal, 66),
            ("kernel void atomic_index_put_accumulate", metal, 248),
            ("kernel void index_put_accumulate_native_dtypes", metal, 203)} <= set(put)
    assert not [k for k in put if "index_select" in k[0]]
    put_float = _kernels(real_index_26, "index_put_", "Float")
    assert ("instantiated as index_put_32bit_idx32, index_put_32bit_idx64", metal, 139) in put_float
    assert ("instantiated as index_put_accumulate_32bit_float_idx32, index_put_accumulate_32bit_float_idx64",
            metal, 275) in put_float
    assert not [k for k in put_float if "native_dtypes" in k[0] or "16bit" in k[0]]
    assert ("kernel void index_put", metal, 92) in _kernels(real_index_26, "masked_scatter_")


def test_gather_kernels_a_callers_local_names(real_index_26):
    """Note [A kernel name a helper returns]: View.mm's gatherViewTensor passes ``functionName =
    getGatherScatterFunctionName(output.scalar_type(), output.dim(), /*needsScatter=*/false)`` (:118,
    the helper at :62-65) to getPipelineState, whose lookup of ``kernel`` (:100) names the plain
    definitions in aten/src/ATen/mps/IndexKernels.h's Metal string: gather_kernel_n :122, _4 :144,
    _3 :165, _2 :185, _1 :204 (index_select reaches them through copy_), and scatterViewTensor's."""
    header = "aten/src/ATen/mps/IndexKernels.h"
    runs = {(r.name, r.file, r.line) for r in real_index_26.chain("index_select", keys=["MPS"]).runs}
    assert ("Metal kernel kernel", "aten/src/ATen/native/mps/operations/View.mm", 100) in runs
    assert {("kernel void gather_kernel_n", header, 122), ("kernel void gather_kernel_4", header, 144),
            ("kernel void gather_kernel_1", header, 204)} <= runs
    # scatterViewTensor (:164-166, /*needsScatter=*/true) reaches the same lookup: scatter_kernel_n :14, _1 :96
    assert {("kernel void scatter_kernel_n", header, 14), ("kernel void scatter_kernel_1", header, 96)} <= runs


def test_each_call_site_of_a_helper_reads_it_with_its_own_literal(real_index_26):
    """Note [Each caller's own reading of a body]: ScatterGather.mm's scatter_reduce_two_mps_kernel
    calls scatter_mps_general (:111) with "add" (:352, under case MEAN/SUM), "prod" (:354), "amin"
    (:358) and "amax" (:362); the first site alone was read before. Each is read now; its runs keep
    the branch every site shares (``switch (reduce)``, :349), as before (constantWithData, :255)."""
    from atenmap.resolve.mpsgraph import _Bodies, definitions_of, lines_of

    ix = real_index_26
    kc = ix.chain("scatter_reduce.two", keys=["MPS"], runs=False).keys[0]
    reader = _Bodies(lines_of(ix.source.root), ix.store.function_spans, definitions_of(ix.store))
    runs = {(r.name, r.loc.line): r for r in reader.runs(kc)}
    general = ("aten/src/ATen/native/mps/operations/ScatterGather.mm", 111)
    assert {dict(b).get("reduce") for b in reader._bindings[general]} >= {'"add"', '"prod"', '"amin"', '"amax"'}
    assert [w.text for w in runs[("MPSGraph constantWithData", 255)].when][-1] == "switch (reduce)"
