"""--why: the branches around a call (extract/branches.py), the AT_DISPATCH dtype table
(resolve/dtypes.py), the reasons on chain steps (resolve/why.py), JSON and text. Fixture:
fixtures/pytorch-mini/aten/src/ATen/native/cuda/WhyBranches.cu (each call line marked `// site: NAME`)."""
from __future__ import annotations

import json

import pytest

from atenmap.extract.branches import FileBranches
from atenmap.model import Chain, KeyChain, Location, Reason, SourceInfo, Step
from atenmap.resolve import dtypes
from atenmap.resolve.why import explain
from atenmap.views.terminal import Terminal
from atenmap.views.text import chain_lines

from .conftest import FIXTURE_TREE, PROGRESS, cli_run

REL = "aten/src/ATen/native/cuda/WhyBranches.cu"
SRC = (FIXTURE_TREE / REL).read_bytes()
LINES = SRC.decode().split("\n")


def site(name: str) -> int:
    """1-based line of the call marked ``// site: name``."""
    return next(i for i, text in enumerate(LINES, 1) if text.rstrip().endswith(f"// site: {name}"))


@pytest.fixture(scope="module")
def fb():
    return FileBranches(SRC, "cuda")


def kinds(fb, name, callee=""):
    return [(b.kind, b.text, b.line) for b in fb.around(site(name), callee) if b.kind != "dispatch"]


def test_switch_and_case(fb):
    assert kinds(fb, "case 4") == [("switch", "switch (vec_size)", 11), ("case", "case 4:", 12)]
    assert kinds(fb, "case 1") == [("switch", "switch (vec_size)", 11), ("case", "case 1:", 16)]


def test_a_case_label_keeps_its_qualified_enumerator():
    # `case ConvBackend::Cudnn:` was cut at its `::` ("case ConvBackend::"), so --why's reasons named no
    # backend and the runs block under --why lost the selector's order (Note [Backends a selector returns])
    src = b"void f(ConvBackend b) {\n  switch (b) {\n    case at::native::ConvBackend::Cudnn: {\n      go();\n    }\n  }\n}\n"
    got = [(b.kind, b.text) for b in FileBranches(src, "cpp").around(4) if b.kind == "case"]
    assert got == [("case", "case at::native::ConvBackend::Cudnn:")]


def test_if_and_early_returns(fb):
    assert kinds(fb, "32-bit split") == [("return", "after if (iter.numel() == 0) return", 27),
                                         ("if", "if (!iter.can_use_32bit_indexing())", 28)]
    assert kinds(fb, "contiguous") == [("return", "after if (iter.numel() == 0) return", 27),
                                       ("return", "after if (!iter.can_use_32bit_indexing()) return", 28),
                                       ("if", "if (contiguous)", 35)]


def test_else(fb):
    assert kinds(fb, "else")[-1] == ("else", "else of if (contiguous)", 41)


def test_ternary_sides(fb):
    assert kinds(fb, "ternary", "pick_two")[-1] == ("ternary", "sizeof(float) >= 4 ? here : …", 42)
    assert kinds(fb, "ternary", "pick_four")[-1] == ("ternary", "sizeof(float) >= 4 ? … : here", 42)


def test_preprocessor_condition_and_its_directive(fb):
    assert fb.condition(site("rocm")) == ("defined(USE_ROCM)", 36)
    assert fb.condition(site("contiguous")) == ("!(defined(USE_ROCM))", 38)
    assert fb.condition(site("else")) == ("", 0)


def test_if_false_of_torchgen_chains_is_left_out(fb):
    assert kinds(fb, "bool tensor") == [("else", "else of if (iter.is_cpu_scalar(1))", 63)]


def test_dispatch_macros_read_from_text(fb):
    """torchgen's adjacent AT_DISPATCH_CASEs: tree-sitter hides every second one; the text does not."""
    def innermost(name):
        d = [b for b in fb.around(site(name)) if b.kind == "dispatch"][-1]
        return d.text, d.line, dtypes.dispatch_types(d.text, d.args)
    assert innermost("floating") == ("AT_DISPATCH_FLOATING_TYPES_AND2", 48, ("Half", "Float", "Double", "BFloat16"))
    assert innermost("v2") == ("AT_DISPATCH_V2", 51, ("Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Bool",
                                                      "UInt16", "UInt32", "UInt64"))
    assert innermost("bool scalar") == ("AT_DISPATCH_CASE", 58, ("Bool",))
    assert innermost("float tensor") == ("AT_DISPATCH_CASE", 68, ("Float",))


@pytest.mark.parametrize("macro,args,expected", [
    ("AT_DISPATCH_FLOATING_TYPES", ("t", '"n"', "…"), ("Float", "Double")),
    ("AT_DISPATCH_FLOATING_TYPES_AND_HALF", ("t", '"n"', "…"), ("Half", "Float", "Double")),
    ("AT_DISPATCH_ALL_TYPES_AND", ("at::ScalarType::Bool", "t", '"n"', "…"),
     ("Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Bool")),
    ("AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3", ("kHalf", "kBFloat16", "kBool", "t", '"n"', "…"),
     ("Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexFloat", "ComplexDouble", "Bool",
      "BFloat16")),
    ("AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND1", ("c10::kComplexHalf", "t", '"n"', "…"),
     ("Float", "Double", "ComplexHalf", "ComplexFloat", "ComplexDouble")),
    ("AT_DISPATCH_CASE_INTEGRAL_TYPES_AND", ("kBool", "…"), ("Byte", "Char", "Short", "Int", "Long", "Bool")),
    ("AT_DISPATCH_INDEX_TYPES", ("t", '"n"', "…"), ("Int", "Long")),
    ("AT_DISPATCH_FLOATING_TYPES_AND", ("dtype", "t", '"n"', "…"), ("Float", "Double", "dtype")),
    ("AT_DISPATCH_SWITCH", ("t", '"n"', "…"), None),
])
def test_dispatch_types(macro, args, expected):
    assert dtypes.dispatch_types(macro, args) == expected


def _chain(*steps: Step) -> Chain:
    from atenmap.model import Operator, OperatorName

    op = Operator(OperatorName("relu"), "relu(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    return Chain(op, SourceInfo(str(FIXTURE_TREE), "test"), (KeyChain("CUDA", steps),))


def _why(step: Step) -> list[tuple[str, str, int]]:
    return [(r.kind, r.text, r.loc.line) for r in step.why]


def test_reasons_common_to_every_call_site_and_dtypes_of_all():
    """See Note [Reasons of several call sites]."""
    scalar = Step.make("call", "at::native::OnOther::operator()", REL, 1,
                       detail=f"called at {REL}:{site('bool scalar')}, {site('float scalar')}; functor")
    both = Step.make("helper", "at::native::why_gpu_kernel_impl", REL, 26,
                     detail=f"called at {REL}:{site('bool scalar')}, {site('bool tensor')}, {site('float tensor')}",
                     children=[Step.make("launch", "why_vectorized_kernel<<<N, 128, 0, stream>>>", REL, site("case 4"))])
    ch = explain(_chain(scalar, both), str(FIXTURE_TREE))
    got_scalar, got_both = ch.keys[0].steps
    assert _why(got_scalar) == [("if", "if (iter.is_cpu_scalar(1))", 61),
                                ("dtypes", "float, bool (AT_DISPATCH_CASE)", 58)]
    assert _why(got_both) == [("dtypes", "float, bool (AT_DISPATCH_CASE)", 58)]
    # the launch below has no AT_DISPATCH of its own: it runs for the dtypes above it
    assert _why(got_both.children[0]) == [("switch", "switch (vec_size)", 11), ("case", "case 4:", 12),
                                          ("dtypes", "float, bool (AT_DISPATCH_CASE)", 58)]


def test_preprocessor_reason_and_unreadable_file():
    call = Step.make("call", "at::native::launch_by_vec_size", REL, 9, detail=f"called at {REL}:{site('contiguous')}")
    gone = Step.make("launch", "k<<<1, 1>>>", "aten/src/ATen/native/cuda/Gone.cu", 3)
    ch = explain(_chain(call, gone), str(FIXTURE_TREE))
    assert _why(ch.keys[0].steps[0])[0] == ("#if", "!(defined(USE_ROCM))", 38)
    assert ch.keys[0].steps[1].why == ()
    assert ch.warnings == ("--why: cannot read aten/src/ATen/native/cuda/Gone.cu",)


def test_to_dict_carries_why_only_when_there_is_one():
    plain = Step.make("launch", "k<<<1, 1>>>", REL, 14)
    assert "why" not in plain.to_dict()
    from dataclasses import replace
    with_why = replace(plain, why=(Reason("case", "case 4:", Location(REL, 12)), Reason("dtypes", "float (X)", None)))
    assert with_why.to_dict()["why"] == [{"kind": "case", "text": "case 4:", "file": REL, "line": 12},
                                         {"kind": "dtypes", "text": "float (X)", "file": None, "line": None}]


def test_mini_chain_dtypes_reach_the_functor_and_the_launch(mini_index):
    ch = mini_index.chain("mul.out", keys=["CUDA"], why=True)
    by = {(s.role.value, s.symbol): s for s in ch.keys[0].walk()}
    dt = ("dtypes", "uint8, int8, short, int, long, half, float, double, cfloat, cdouble, bool, bfloat16 "
                    "(AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3)", 19)
    assert _why(by[("call", "at::native::MulFunctor::operator()")]) == [dt]
    assert _why(by[("call", "at::native::opmath_symmetric_gpu_kernel_with_scalars")]) == [dt]
    launch = next(s for s in ch.keys[0].walk() if s.role == "launch")
    assert _why(launch) == [dt] and launch.why[0].loc.file == "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    assert _why(by[("call", "at::native::gpu_kernel_impl")]) == [
        ("return", "after if (!iter.can_use_32bit_indexing()) return", 10)]
    assert all(s.why == () for s in mini_index.chain("mul.out", keys=["CUDA"]).keys[0].walk())


def test_cli_json_and_text(capsys):
    code, out, _ = cli_run(capsys, "mul.out", "--key", "CUDA", "-s", str(FIXTURE_TREE), "--no-codegen", "--why",
                           "--json", drop=PROGRESS)
    assert code == 0
    steps = []
    todo = list(json.loads(out)["keys"][0]["steps"])
    while todo:
        s = todo.pop()
        steps.append(s)
        todo += s["children"]
    launch = next(s for s in steps if s["role"] == "launch")
    assert launch["why"] == [{"kind": "dtypes", "file": "aten/src/ATen/native/cuda/BinaryMulKernel.cu", "line": 19,
                              "text": "uint8, int8, short, int, long, half, float, double, cfloat, cdouble, bool, "
                                      "bfloat16 (AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3)"}]
    assert all("why" not in s for s in steps if s["role"] in ("yaml", "native", "kernel"))
    code, out, _ = cli_run(capsys, "mul.out", "--key", "CUDA", "-s", str(FIXTURE_TREE), "--no-codegen", "--why",
                           "--wide", drop=PROGRESS)
    assert "why: after if (!iter.can_use_32bit_indexing()) return  Loops.cuh:10" in out
    code, out, _ = cli_run(capsys, "mul.out", "--key", "CUDA", "-s", str(FIXTURE_TREE), "--no-codegen", "--format",
                           "lines", "--why", drop=PROGRESS)
    assert "why" not in out


def test_text_why_lines_fit_the_width():
    launch = Step.make("launch", "k<<<1, 1>>>", REL, 14)
    from dataclasses import replace
    launch = replace(launch, why=(Reason("dtypes", "uint8, int8, short, int, long, half, float, double (AT_X)",
                                         Location(REL, 48)),))
    lines = chain_lines(_chain(launch), term=Terminal(width=70))
    why = [ln for ln in lines if " why: " in ln]
    assert len(why) == 1 and len(why[0]) <= 70 and why[0].endswith("…  WhyBranches.cu:48")
    assert why[0].split("why:")[0].strip() == ""
