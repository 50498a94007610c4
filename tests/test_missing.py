"""What a key lacks (issue 36): ``Index.missing`` and ``atenmap ops --key K --missing`` on a copy of
the fixture tree with fixtures/mps/MPSFallback.mm (an imitation of ATen/mps/MPSFallback.mm's
registrations) and two operators added to its yaml; the one line ``atenmap OP --key K`` prints."""
from __future__ import annotations

import json
import shutil

import pytest

from atenmap.api import Index
from atenmap.kinds import KeyGroup, Lacking

from .conftest import FIXTURE_TREE, cli_run

FALLBACK_MM = FIXTURE_TREE.parent / "mps" / "MPSFallback.mm"
MM = "aten/src/ATen/mps/MPSFallback.mm"
ADDED_OPS = """
- func: mini_mps(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_cpu
    MPS: mini_mps_mps

- func: mini_mps_pick(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_pick_cpu
    MPS: mini_mps_pick_mps

- func: mini_mps_composite(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_composite_cpu
    CompositeExplicitAutograd: mini_mps_composite
"""


@pytest.fixture
def mps_tree(mini_tree):
    (mini_tree / "aten/src/ATen/mps").mkdir()
    shutil.copy(FALLBACK_MM, mini_tree / MM)
    yaml = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + ADDED_OPS)
    return mini_tree


def _run(capsys, *args):
    return cli_run(capsys, *args, "--no-codegen", errors_only=True)


def test_missing_groups_by_what_a_call_does(mps_tree):
    with Index.open(mps_tree, codegen=False) as ix:
        found = {str(x.op.name): x for x in ix.missing("mps")}
    # registered to mps_fallback by hand: always the CPU, at the m.impl line, the fallback's definition
    kth = found["kthvalue.values"]
    assert kth.outcome == Lacking.CPU_FALLBACK and str(kth.registered) == f"{MM}:25" and str(kth.at) == f"{MM}:7"
    # no kernel, no composite: mps_error_fallback raises; the environment setting picks mps_fallback
    mm = found["mm.out"]
    assert mm.outcome == Lacking.ERROR and str(mm.at) == f"{MM}:11" and str(mm.registered) == f"{MM}:18"
    assert "raises NotImplementedError" in mm.says and f"PYTORCH_ENABLE_MPS_FALLBACK=1 it runs on the CPU (mps_fallback, {MM}:7)" in mm.says
    comp = found["mini_mps_composite"]
    assert comp.outcome == Lacking.COMPOSITE and comp.served_by == KeyGroup.CEA
    assert "mini_mps" not in found  # its own MPS kernel
    assert "linear" not in found and "sort" not in found  # composite everywhere: no device's gap


def test_a_key_without_a_fallback_gets_the_dispatchers_error(mps_tree):
    with Index.open(mps_tree, codegen=False) as ix:
        found = {str(x.op.name): x for x in ix.missing("CUDA")}
    assert found["mini_mps"].outcome == Lacking.ERROR and found["mini_mps"].at is None
    assert "Could not run 'aten::mini_mps' with arguments from the 'CUDA' backend" in found["mini_mps"].says
    assert set(found) == {"mv.out", "arange.start_out", "mini_mps", "mini_mps_pick", "mini_mps_composite"}


def test_ops_missing_text_and_json(capsys, mps_tree):
    code, out, err = _run(capsys, "ops", "--key", "MPS", "--missing", "-s", str(mps_tree))
    assert code == 0 and err == ""
    lines = out.splitlines()
    heads = [ln for ln in lines if not ln.startswith("  ")]
    total = len(lines) - len(heads)
    assert heads[0] == f"MPS: {total} operators with no MPS kernel of their own"
    assert [h.split(" (")[0] for h in heads[1:]] == ["error", "CPU fallback", "composite"]
    assert heads[1].startswith(f"error ({total - 2}): a call on MPS raises NotImplementedError (mps_error_fallback, {MM}:11)")
    assert any("kthvalue.values" in ln and f"{MM}:25" in ln for ln in lines)
    code, out, _ = _run(capsys, "ops", "--key", "MPS", "--missing", "--json", "--limit", "1", "-s", str(mps_tree))
    d = json.loads(out)
    assert code == 0 and d["key"] == "MPS" and d["total"] == total and len(d["operators"]) == 1
    assert d["counts"] == {"error": total - 2, "cpu_fallback": 1, "composite": 1}
    assert d["operators"][0]["outcome"] == "error" and d["operators"][0]["at"] == {"file": MM, "line": 11}


def test_a_chain_on_a_key_the_operator_lacks_says_what_a_call_does(capsys, mps_tree):
    code, out, err = _run(capsys, "mm.out", "--key", "MPS", "-s", str(mps_tree))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("atenmap: error: mm.out has no MPS kernel and no composite: a call on MPS raises "
                          f"NotImplementedError (mps_error_fallback, {MM}:11)")
    code, out, err = _run(capsys, "kthvalue.values", "--key", "mps", "-s", str(mps_tree))
    assert code == 1 and out == "" and err.strip() == (
        f"atenmap: error: kthvalue.values has no MPS kernel: MPS registers it to mps_fallback (at {MM}:25), which "
        "runs its CPU kernel (copies in, runs on the CPU, copies back)")


def test_xpu_kernels_live_elsewhere(capsys, mps_tree):
    code, out, err = _run(capsys, "mm.out", "--key", "XPU", "-s", str(mps_tree))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert ("XPU kernels live in the separate torch-xpu-ops repository" in err
            and "this tree's entry: aten/src/ATen/native/native_functions.yaml:46" in err)


@pytest.mark.parametrize("args, says", [
    (("ops", "--missing"), "--missing needs --key"),
    (("ops", "--key", "CompositeImplicitAutograd", "--missing"), "composite key"),
    (("ops", "--key", "mps2", "--missing"), "keys: CPU, CUDA"),
    (("mm.out", "--key", "mps2"), "--key mps2: no such dispatch key; keys: CPU, CUDA"),
])
def test_bad_input_is_one_line_exit_2(capsys, mps_tree, args, says):
    code, out, err = _run(capsys, *args, "-s", str(mps_tree))
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("atenmap: error: ") and says in err


# ---- what an MPS chain runs (Note [MPSGraph operations by text] in resolve/mpsgraph.py) -------
MINI_OPS = "aten/src/ATen/native/mps/operations/MiniOps.mm"


def test_mps_runs_name_the_graph_operations_and_the_graph_run(mps_tree):
    (mps_tree / MINI_OPS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniOps.mm", mps_tree / MINI_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        runs = ix.chain("mini_mps", keys=["MPS"]).runs
    got = [(r.name, r.line) for r in runs]
    assert got == [("MPSGraph additionWithPrimaryTensor", 20), ("runMPSGraph", 13)]  # the comment at 12 runs nothing
    assert all(r.key == "MPS" and r.role == "library" and r.file == MINI_OPS for r in runs)


def _quoted_runs(index, rows, bodies, version, tmp_path, op: str):
    """The MPS runs of ``op`` read from a copy of ``index`` given only ``rows`` and ``bodies`` as
    quotes, as the bundled index reads them."""
    from atenmap.model import SourceInfo
    from atenmap.store import Store

    path = tmp_path / "quoted.sqlite"
    shutil.copy(index, path)
    store = Store.open(path, writable=True)
    store.add_quotes((), rows, (), (), (), bodies)
    store.close()
    bundled = Index(SourceInfo("bundled index (no files)", version, None, "bundled"), Store.open(path))
    try:
        return bundled.chain(op, keys=["MPS"]).runs
    finally:
        bundled.close()


def test_mps_runs_from_the_quoted_lines_are_the_trees(mps_tree, tmp_path):
    """Note [MPS lines from the bundle]: the builder quotes the lines that give a run or call a body
    that does (not the comment, not make_mps_graph's call), with where each such body ends; read from
    those quotes, as the bundled index reads them, the runs are the tree's."""
    from atenmap.resolve import mpsgraph

    (mps_tree / MINI_OPS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniOps.mm", mps_tree / MINI_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        runs = ix.chain("mini_mps", keys=["MPS"]).runs
        rows, bodies = mpsgraph.quoted_rows(ix.store, str(mps_tree))
        index = ix.store.path
    # the lines that give a run or lead to one, not the bodies' branches (Note [MPS branches on a tree])
    assert [(f, n) for f, n, _text in rows] == [(MINI_OPS, 13), (MINI_OPS, 20), (MINI_OPS, 22), (MINI_OPS, 29)]
    assert rows[1][2].strip().startswith("return [mpsGraph additionWithPrimaryTensor:")
    assert [(f, first, end) for f, first, _last, end in bodies] == [(MINI_OPS, 8, 15), (MINI_OPS, 17, 23), (MINI_OPS, 27, 31)]
    assert _quoted_runs(index, rows, bodies, ix.source.version, tmp_path, "mini_mps") == runs
    assert [r.name for r in runs] == ["MPSGraph additionWithPrimaryTensor", "runMPSGraph"]


def test_mps_runs_from_the_quoted_lines_carry_no_branches(mps_tree, tmp_path):
    """Note [MPS branches on a tree]: the bundle quotes no whole bodies, so its MPS runs are the
    tree's runs with no branches (no `when`), none left out; the tree's carry them."""
    from atenmap.resolve import mpsgraph

    with Index.open(_pick_tree(mps_tree), codegen=False) as ix:
        runs = ix.chain("mini_mps_pick", keys=["MPS"]).runs
        rows, bodies = mpsgraph.quoted_rows(ix.store, str(mps_tree))
        index = ix.store.path
    assert len(rows) < 10  # run lines, not bodies
    quoted = _quoted_runs(index, rows, bodies, ix.source.version, tmp_path, "mini_mps_pick")
    assert sorted((r.name, r.line) for r in quoted) == sorted((r.name, r.line) for r in runs)
    assert not any(r.when for r in quoted)
    assert runs[0].name == "MPSGraph absoluteWithTensor" and any(r.when for r in runs)


# ---- the branches of an MPS run (Note [The branches of an MPS run] in resolve/mpsgraph.py) ----
MINI_BRANCHES = "aten/src/ATen/native/mps/operations/MiniBranches.mm"


def _pick_tree(mps_tree):
    (mps_tree / MINI_BRANCHES).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniBranches.mm", mps_tree / MINI_BRANCHES)
    return mps_tree


def test_mps_runs_carry_their_branches_and_the_default_call_ranks_them(mps_tree):
    """The main path (a current macOS, float32, no PYTORCH_MPS_PREFER_METAL) first: the MPSGraph
    abs and its run; then the Metal path of use_metal_pick (a predicate read as its return), the older
    macOS's identity and the complex real part, in source order. Each run names its branches."""
    with Index.open(_pick_tree(mps_tree), codegen=False) as ix:
        runs = ix.chain("mini_mps_pick", keys=["MPS"]).runs
    assert [(r.name, r.line) for r in runs] == [
        ("MPSGraph absoluteWithTensor", 32), ("runMPSGraph", 34),
        ('Metal kernel "mini_pick_" + scalarToMetalTypeString(self)', 22), ("Metal dispatch", 23),
        ("MPSGraph identityWithTensor", 28), ("MPSGraph realPartOfTensor", 30)]
    when = {r.line: [(w.kind, w.text, w.loc.line) for w in r.when] for r in runs}
    assert when[22][0] == ("if", "if (use_metal_pick(self))", 21)
    assert when[28][0] == ("if", "if (!is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS))", 27)
    assert ("return", "after if (use_metal_pick(self)) return", 21) in when[34]
    # the dtype check is a condition; the shape check and the index's pinned dtype are not
    assert when[22] == [("if", "if (use_metal_pick(self))", 21), ("return", "after if (output.numel() == 0) return", 18),
                        ("check", "after TORCH_CHECK(supportedFloatingOrComplexType(self))", 14)]
    assert not any("dim() == 2" in w.text or "kLong" in w.text for r in runs for w in r.when)


@pytest.mark.parametrize("dtype, expected", [
    # complex: not abs (the else of the complex branch); the macOS and Metal paths are not the call's to decide
    ("complex64", [(30, "undecided"), (34, "undecided"), (22, "undecided"), (23, "undecided"), (28, "undecided")]),
    ("float16", [(32, "undecided"), (34, "undecided"), (22, "undecided"), (23, "undecided"), (28, "undecided")]),
    ("float64", []),  # TORCH_CHECK(supportedFloatingOrComplexType(self)) raises: MPS has no float64
    ("int64", []),
])
def test_a_dtype_keeps_the_mps_runs_it_can_take(mps_tree, dtype, expected):
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    with Index.open(_pick_tree(mps_tree), codegen=False) as ix:
        runs = ix.chain("mini_mps_pick", keys=["MPS"], facts=CallFacts(dtype=parse_dtype(dtype))).runs
    assert [(r.line, r.decided) for r in runs] == expected


# ---- patterns that hide an MPS run from the function facts (resolve/mpsgraph.py) ----------------
MINI_PATTERNS = "aten/src/ATen/native/mps/operations/MiniPatterns.mm"
MINI_METAL = "aten/src/ATen/native/mps/kernels/Mini.metal"
PATTERN_OPS = """
- func: mini_mps_macro(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_macro_cpu
    MPS: mini_mps_macro_mps

- func: mini_mps_random(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_random_cpu
    MPS: mini_mps_random_mps

- func: mini_mps_metal(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_metal_cpu
    MPS: mini_mps_metal_mps

- func: mini_mps_add(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_add_cpu
    MPS: mini_mps_add_mps
"""


def test_mps_runs_behind_macros_templates_and_dispatch_helpers(mps_tree):
    """Note [Functions a macro makes]: the send a macro spells with ``func_stub##WithTensor`` is the
    use's operation, at the use's line. Note [Helpers the index does not define]: a call with
    template arguments (``mini_random_impl<bool>(...)``) is followed. Note [A run's name in its own
    definition]: the dispatch helper's header is no dispatch; its ``dispatchThreads:`` is."""
    (mps_tree / MINI_PATTERNS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniPatterns.mm", mps_tree / MINI_PATTERNS)
    yaml = mps_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + PATTERN_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        macro = [(r.name, r.line) for r in ix.chain("mini_mps_macro", keys=["MPS"]).runs]
        random = [(r.name, r.line) for r in ix.chain("mini_mps_random", keys=["MPS"]).runs]
        metal = [(r.name, r.line) for r in ix.chain("mini_mps_metal", keys=["MPS"]).runs]
    assert ("MPSGraph reciprocalWithTensor", 32) in macro
    assert random == [("MPSGraph randomTensorWithShape", 17), ("runMPSGraph", 18)]
    assert ('Metal kernel "mini_kernel_" + scalarToMetalTypeString(self)', 39) in metal
    assert ("Metal dispatch", 10) in metal and ("Metal dispatch", 40) in metal
    assert ("Metal dispatch", 9) not in metal


def test_a_metal_kernel_and_the_macro_that_instantiates_it(mps_tree):
    """Note [Metal kernels a macro instantiates]: after the lookup's ``kernel void`` definition, the
    macro uses that instantiate it under host names starting with the lookup's literal, at the
    first one's line."""
    (mps_tree / MINI_PATTERNS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniPatterns.mm", mps_tree / MINI_PATTERNS)
    (mps_tree / MINI_METAL).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "Mini.metal", mps_tree / MINI_METAL)
    yaml = mps_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + PATTERN_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        metal = [(r.name, r.file, r.line) for r in ix.chain("mini_mps_metal", keys=["MPS"]).runs]
    assert ("kernel void mini_kernel", MINI_METAL, 4) in metal
    assert ("instantiated as mini_kernel_float, mini_kernel_half", MINI_METAL, 10) in metal


def test_a_macro_made_natives_send_is_quoted_for_the_bundle(mps_tree, tmp_path):
    """Note [Functions a macro makes]: the bundle quotes, at the macro use's line, the expanded
    lines that give a run; read from those quotes the runs are the tree's."""
    from atenmap.resolve import mpsgraph

    (mps_tree / MINI_PATTERNS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniPatterns.mm", mps_tree / MINI_PATTERNS)
    yaml = mps_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + PATTERN_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        runs = ix.chain("mini_mps_macro", keys=["MPS"]).runs
        rows, bodies = mpsgraph.quoted_rows(ix.store, str(mps_tree))
        index = ix.store.path
    assert any((f, n) == (MINI_PATTERNS, 32) and "[mpsGraph reciprocalWithTensor:self name:nil]" in text
               for f, n, text in rows)
    quoted = _quoted_runs(index, rows, bodies, ix.source.version, tmp_path, "mini_mps_macro")
    assert [(r.name, r.line) for r in quoted] == [(r.name, r.line) for r in runs]
    # another quote kept the use's line as written (the bundle keeps one text a line, earlier quotes
    # first): the #define's lines are quoted too, and the use is expanded from them
    assert {(MINI_PATTERNS, n) for n in range(25, 31)} <= {(f, n) for f, n, _text in rows}
    use = (mps_tree / MINI_PATTERNS).read_text().splitlines()[31]
    as_written = [(f, n, use if (f, n) == (MINI_PATTERNS, 32) else text) for f, n, text in rows]
    (tmp_path / "as_written").mkdir()
    quoted = _quoted_runs(index, as_written, bodies, ix.source.version, tmp_path / "as_written", "mini_mps_macro")
    assert [(r.name, r.line) for r in quoted] == [(r.name, r.line) for r in runs]


def test_no_float64_tensor_on_mps(mps_tree):
    """Note [No float64 on MPS]: the operator's own code has no float64 check (mini_mps builds its
    graph whatever the dtype), but no MPS tensor can be float64: such a call runs nothing."""
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    (mps_tree / MINI_OPS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniOps.mm", mps_tree / MINI_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        assert ix.chain("mini_mps", keys=["MPS"], facts=CallFacts(dtype=parse_dtype("float64"))).runs == ()
        assert len(ix.chain("mini_mps", keys=["MPS"], facts=CallFacts(dtype=parse_dtype("float32"))).runs) == 2


def test_a_callers_literal_decides_a_branch_without_braces(mps_tree):
    """Note [An if without braces]: the send on the line after ``if (op_name == "add" ||\n
    op_name == "lerp")`` has that if as its branch; Note [A kernel name the caller gives]: the
    caller passes ``"add"``, so the default call ranks the addition first and a call with a dtype
    drops the subtraction of the else."""
    from atenmap.resolve.callfacts import CallFacts, parse_dtype

    (mps_tree / MINI_PATTERNS).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_TREE.parent / "mps" / "MiniPatterns.mm", mps_tree / MINI_PATTERNS)
    yaml = mps_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + PATTERN_OPS)
    with Index.open(mps_tree, codegen=False) as ix:
        runs = ix.chain("mini_mps_add", keys=["MPS"]).runs
        typed = ix.chain("mini_mps_add", keys=["MPS"], facts=CallFacts(dtype=parse_dtype("float32"))).runs
    assert [(r.name, r.line) for r in runs] == [("MPSGraph additionWithPrimaryTensor", 49),
                                                ("MPSGraph subtractionWithPrimaryTensor", 51)]
    assert [w.text for w in runs[0].when] == ['if (op_name == "add" || op_name == "lerp")']
    assert [(r.name, r.decided) for r in typed] == [("MPSGraph additionWithPrimaryTensor", "yes")]


MINI_FORMAT = "aten/src/ATen/native/mps/operations/MiniFormat.mm"
MINI_FORMAT_METAL = "aten/src/ATen/native/mps/kernels/MiniFormat.metal"
FORMAT_OPS = """
- func: mini_mps_pair(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_pair_cpu
    MPS: mini_mps_pair_mps

- func: mini_mps_twice(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_twice_cpu
    MPS: mini_mps_twice_mps

- func: mini_mps_format(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_format_cpu
    MPS: mini_mps_format_mps

- func: mini_mps_local(Tensor self, int M) -> Tensor
  dispatch:
    CPU: mini_mps_local_cpu
    MPS: mini_mps_local_mps

- func: mini_mps_library(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_library_cpu
    MPS: mini_mps_library_mps

- func: mini_mps_index(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_index_cpu
    MPS: mini_mps_index_mps

- func: mini_mps_index_put(Tensor self, bool accumulate) -> Tensor
  dispatch:
    CPU: mini_mps_index_put_cpu
    MPS: mini_mps_index_put_mps

- func: mini_mps_gather(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_gather_cpu
    MPS: mini_mps_gather_mps

- func: mini_mps_copy(Tensor self) -> Tensor
  dispatch:
    CPU: mini_mps_copy_cpu
    MPS: mini_mps_copy_mps
"""
MINI_INDEX_KERNELS = "aten/src/ATen/mps/MiniIndexKernels.h"


@pytest.fixture
def format_tree(mps_tree):
    for fixture, rel in (("MiniFormat.mm", MINI_FORMAT), ("MiniFormat.metal", MINI_FORMAT_METAL),
                         ("MiniIndexKernels.h", MINI_INDEX_KERNELS)):
        (mps_tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURE_TREE.parent / "mps" / fixture, mps_tree / rel)
    yaml = mps_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + FORMAT_OPS)
    return mps_tree


def test_a_kernel_name_a_format_builds(format_tree):
    """Note [Kernel names a format builds]: ``fmt::format("{}_{}_{}", name, ...)`` on the line after
    the lookup, ``name`` the caller's literal, matches the host names ``mini_fmt_float_float`` and
    ``mini_fmt_half_half`` of a kernel spelled ``void kernel`` with its name on the next line; a local
    assigned in two branches names both kernels; ``--dtype`` keeps the instantiations of its type."""
    from atenmap.resolve.callfacts import CallFacts

    with Index.open(format_tree, codegen=False) as ix:
        fmt = [(r.name, r.file, r.line) for r in ix.chain("mini_mps_format", keys=["MPS"]).runs]
        local = [(r.name, r.file, r.line) for r in ix.chain("mini_mps_local", keys=["MPS"]).runs]
        half = [r.name for r in ix.chain("mini_mps_format", keys=["MPS"], facts=CallFacts(dtype="Half")).runs]
    assert fmt[0][1:] == (MINI_FORMAT, 10) and fmt[0][0].startswith('Metal kernel fmt::format("{}_{}_{}", name,')
    assert ("kernel void mini_fmt", MINI_FORMAT_METAL, 5) in fmt
    assert ("instantiated as mini_fmt_float_float, mini_fmt_half_half", MINI_FORMAT_METAL, 20) in fmt
    assert ("Metal kernel kernel", MINI_FORMAT, 26) in local
    assert {("kernel void mini_mul_mv", MINI_FORMAT_METAL, 8), ("instantiated as mini_mv_float", MINI_FORMAT_METAL, 22),
            ("kernel void mini_mul_mm", MINI_FORMAT_METAL, 11),
            ("instantiated as mini_mm_float, mini_mm_half", MINI_FORMAT_METAL, 23)} <= set(local)
    assert "instantiated as mini_fmt_half_half" in half and "instantiated as mini_fmt_float_float" not in half


def test_a_kernel_name_a_helper_returns(format_tree):
    """Note [A kernel name a helper returns]: the lookup's local is a helper's result; the helper
    builds its name by ``=`` then ``+=`` (one under ``if (accumulate)``) from another helper's
    ``std::to_string(bits) + "bit"``; the caller's ``/*select=*/true`` picks the ternary's side.
    The host names come from a macro that uses another macro (Note [Metal kernels a macro
    instantiates]); ``--dtype`` decides the size in bits and ``scalar_type == ScalarType::Float``."""
    from atenmap.resolve.callfacts import CallFacts

    def runs(op, dtype=None):
        facts = CallFacts(dtype=dtype) if dtype else None
        with Index.open(format_tree, codegen=False) as ix:
            return [(r.name, r.file, r.line) for r in ix.chain(op, keys=["MPS"], facts=facts).runs]

    select, half = runs("mini_mps_index"), runs("mini_mps_index", "Half")
    assert ("Metal kernel indexName", MINI_FORMAT, 63) in select
    assert ("kernel void mini_index_select", MINI_FORMAT_METAL, 29) in select
    assert ("instantiated as mini_index_select_16bit, mini_index_select_32bit", MINI_FORMAT_METAL, 41) in select
    assert not [r for r in select if "mini_index_put" in r[0]]
    assert ("instantiated as mini_index_select_16bit", MINI_FORMAT_METAL, 41) in half
    put = runs("mini_mps_index_put", "Float")
    assert ("kernel void mini_index_put", MINI_FORMAT_METAL, 32) in put
    assert ("instantiated as mini_index_put_32bit, mini_index_put_32bit_float", MINI_FORMAT_METAL, 42) in put
    assert not [r for r in put if "select" in r[0] or "16bit" in r[0]]


def test_a_callers_local_names_plain_kernels_a_header_defines(format_tree):
    """Note [A kernel name a helper returns]: the caller's ``functionName`` is a helper's result with
    its ``/*scatter=*/false``; the callee's lookup of its parameter names ``mini_gather_kernel_\\w*|n``,
    which no instantiation matches: the plain definitions in a header's Metal string are its kernels;
    a second caller's ``/*scatter=*/true`` adds the scatter kernel to the body read once."""
    with Index.open(format_tree, codegen=False) as ix:
        runs = [(r.name, r.file, r.line) for r in ix.chain("mini_mps_gather", keys=["MPS"]).runs]
    assert ("Metal kernel kernel", MINI_FORMAT, 85) in runs
    assert {("kernel void mini_gather_kernel_n", MINI_INDEX_KERNELS, 4),
            ("kernel void mini_gather_kernel_1", MINI_INDEX_KERNELS, 5)} <= set(runs)
    assert not [r for r in runs if "scatter" in r[0]]
    with Index.open(format_tree, codegen=False) as ix:  # a second caller binds the lookup's body again
        both = [(r.name, r.file, r.line) for r in ix.chain("mini_mps_copy", keys=["MPS"]).runs]
    assert {("kernel void mini_gather_kernel_1", MINI_INDEX_KERNELS, 5),
            ("kernel void mini_scatter_kernel_1", MINI_INDEX_KERNELS, 6)} <= set(both)
    assert [r for r in both if r[0] == "Metal kernel kernel"] == [("Metal kernel kernel", MINI_FORMAT, 85)]


def test_each_caller_of_a_helper_names_its_own_kernel(format_tree):
    """Note [Each caller's own reading of a body]: a helper read first for one caller's
    ``/*complex=*/false`` is read again for another's ``true``, a call down too (the lookup is in
    the helper's callee); two call sites of one caller that pass different literals each name their
    kernel, under their own branch."""
    with Index.open(format_tree, codegen=False) as ix:
        pair = {r.name: r for r in ix.chain("mini_mps_pair", keys=["MPS"]).runs}
        twice = {r.name: r for r in ix.chain("mini_mps_twice", keys=["MPS"]).runs}
    for runs in (pair, twice):
        assert (runs["kernel void mini_pair_real"].file, runs["kernel void mini_pair_real"].line) == (MINI_FORMAT_METAL, 47)
        assert (runs["kernel void mini_pair_complex"].file, runs["kernel void mini_pair_complex"].line) == (
            MINI_FORMAT_METAL, 46)
    assert [w.text for w in twice["kernel void mini_pair_complex"].when if w.kind in ("if", "else")] == [
        "if (self.is_complex())"]
    assert [w.text for w in twice["kernel void mini_pair_real"].when if w.kind in ("if", "else")] == [
        "else of if (self.is_complex())"]


def test_a_name_template_narrowed_by_the_dtype_for_each_type_it_reads():
    """Note [A kernel name a helper returns]: ``--dtype`` is the first tensor's whose type a name
    reads, and every later read of that tensor's; another tensor's type stays a wildcard; a flag
    the caller binds decides a ternary, ``t != kBool`` is decided by the dtype."""
    from atenmap.resolve import metalnames

    same = 'fmt::format("{}_{}_{}", "k", scalarToMetalTypeString(input), scalarToMetalTypeString(input))'
    other = 'fmt::format("{}_{}_{}", "k", scalarToMetalTypeString(input), scalarToMetalTypeString(index))'
    assert metalnames.name_patterns([same], {}, "Half") == ["k_half_half"]
    assert metalnames.name_patterns([other], {}, "Half") == [r"k_half_\w*"]
    assert metalnames.name_patterns([other], {}, None) == [r"k_\w*_\w*"]
    flagged = '(select ? "s_" : (acc && (t.scalar_type() != kBool)) ? "a_" : "p_") + "x"'
    assert metalnames.name_patterns([flagged], {"select": "true"}, None) == ["s_x"]
    assert metalnames.name_patterns([flagged], {"select": "false"}, "Bool") == ["p_x"]
    assert metalnames.name_patterns([flagged], {"select": "false"}, None) == ["(?:a_|p_)x"]


def test_an_mps_library_kernel_inside_a_block_takes_the_branch_around_it(format_tree):
    """Note [MPS library kernels]: ``[[MPSNDArrayMatrixMultiplication alloc] ...]`` is a run with its
    family, ``[matmul encodeToCommandEncoder:...]`` its encode; a descriptor is none. Note [Runs
    inside an Objective-C block]: both sit in a ``dispatch_sync_with_rethrow(..., ^() {`` block under
    an ``if (is_macos_13_or_newer(...))``, which is their branch too."""
    with Index.open(format_tree, codegen=False) as ix:
        runs = ix.chain("mini_mps_library", keys=["MPS"]).runs
    assert [(r.name, r.line) for r in runs] == [("MPS MPSNDArrayMatrixMultiplication (gemm)", 34),
                                               ("MPS encodeToCommandEncoder", 36)]
    assert all(any("is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS)" in w.text for w in r.when) for r in runs)


def test_kernel_names_a_format_builds_from_the_bundles_quotes(format_tree, tmp_path):
    """Note [MPS lines from the bundle]: the lookup's continuation line, the assignments of its local,
    every .metal kernel's head (both lines of a split one) and each instantiation's host names are
    quoted; read from the quotes, the runs are the tree's."""
    from atenmap.resolve import mpsgraph

    with Index.open(format_tree, codegen=False) as ix:
        want = {op: ix.chain(op, keys=["MPS"]).runs
                for op in ("mini_mps_format", "mini_mps_local", "mini_mps_library", "mini_mps_index", "mini_mps_index_put",
                           "mini_mps_gather", "mini_mps_copy")}
        rows, bodies = mpsgraph.quoted_rows(ix.store, str(format_tree))
        index = ix.store.path
    quoted = {(f, n): text for f, n, text in rows}
    assert quoted[(MINI_FORMAT_METAL, 20)] == '[[host_name("mini_fmt_" "float" "_" "float")]] void kernel mini_fmt<'
    assert (MINI_FORMAT_METAL, 4) in quoted and (MINI_FORMAT, 11) in quoted and (MINI_FORMAT, 22) in quoted
    for op, runs in want.items():
        (tmp_path / op).mkdir()
        got = _quoted_runs(index, rows, bodies, ix.source.version, tmp_path / op, op)
        assert [(r.name, r.file, r.line) for r in got] == [(r.name, r.file, r.line) for r in runs], op


@pytest.mark.parametrize("body, expr", [
    # a braceless ``if``'s append is the name's too, under its condition
    ('{ std::string n = "k_"; if (flag) n += "_bar"; return n; }', '("k_") + (((true)) ? ("_bar") : "")'),
    ('{ std::string n = "k_"; if (f(a)) n += "_a"; else n += "_b"; return n; }',
     '("k_") + (((f(a))) ? ("_a") : "") + ((?) ? ("_b") : "")'),
    # a name that is not one expression: no name (a wrong one would name another kernel)
    ('{ std::string n = "k_a"; n = "k_b"; return n; }', None),
    ('{ if (flag) { return "k_a"; } return "k_b"; }', None),
    ('{ if (flag) return "k_a"; return "k_b"; }', None),
])
def test_a_helpers_name_read_only_where_it_is_one_expression(body, expr):
    """Note [A kernel name a helper returns]: metalnames.returned on helper bodies."""
    from atenmap.resolve import metalnames

    assert metalnames.returned(body, ["flag"], ["true"]) == expr
