"""The pattern registry (extract/registry.py): each pattern has a fixture line its query matches, and
a pattern added through the registry alone (one .scm, one handler) reaches a chain and the preview."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from atenmap.extract import parse, registry, scan, treesitter
from atenmap.extract.nodes import node_text, split_call_args
from atenmap.extract.registry import Pattern, ScanShape, Stage
from atenmap.kinds import FactKind

from .conftest import FIXTURE_TREE

PATTERNS_FIXTURE = FIXTURE_TREE.parent / "patterns" / "Patterns.cpp"

# (capture, query) -> (fixture file, a text of the line the pattern matches). A new pattern adds its line here.
FIXTURE_LINES = {
    ("definition.function", "definitions"): (FIXTURE_TREE / "aten/src/ATen/native/BinaryOps.cpp", "TORCH_IMPL_FUNC(mul_out)"),
    ("definition.class", "definitions"): (FIXTURE_TREE / "aten/src/ATen/native/cuda/BinaryMulKernel.cu", "struct MulFunctor {"),
    ("reference.call", "calls"): (FIXTURE_TREE / "aten/src/ATen/native/BinaryOps.cpp", "mul_stub(device_type(), *this)"),
    ("reference.functor_decl", "calls"): (FIXTURE_TREE / "aten/src/ATen/cuda/MiniBlas.cpp", "mini_gemm_internal<float>(MINI_GEMM_ARGS(float));"),
    ("reference.functor_arg", "calls"): (FIXTURE_TREE / "aten/src/ATen/native/cuda/FunctorObjects.cu", "MiniReduceAdd{}"),
    ("reference.stub_arg", "calls"): (FIXTURE_TREE / "aten/src/ATen/native/DelegatedOps.cpp", "unary_op_impl_float(self, angle_stub)"),
    ("definition.lambda", "lambdas"): (FIXTURE_TREE / "aten/src/ATen/native/Blas.cpp", '"mv_impl_cpu", [&] {'),
    ("reference.include", "includes"): (FIXTURE_TREE / "aten/src/ATen/native/BinaryOps.cpp", "#include <ATen/native/BinaryOps.h>"),
    ("reference.vexing_call", "misread_calls"): (FIXTURE_TREE / "aten/src/ATen/cuda/MiniBlas.cpp", "mini_gemm_internal<float>(MINI_GEMM_ARGS(float));"),
    ("reference.braced_call", None): (PATTERNS_FIXTURE, "typename ops_t::acc_t{}"),
    ("reference.tensor_operator", "tensor_operators"): (FIXTURE_TREE / "aten/src/ATen/native/LinearAlgebra.cpp", "* vec2;"),
    ("reference.launch", "launches"): (FIXTURE_TREE / "aten/src/ATen/native/cuda/CUDALoops.cuh", "vectorized_elementwise_kernel<4, func_t, array_t>"),
    ("reference.call", "impl_calls"): (PATTERNS_FIXTURE, 'm.impl("mini_argmax"'),
    ("text.dispatch_macro", None): (FIXTURE_TREE / "aten/src/ATen/native/RegisterForms.cpp", "DECLARE_DISPATCH("),
}


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, f"{path.name}: {text!r} on lines {hits}"
    return hits[0]


def _lang(path: Path) -> str:
    return parse.language_of(str(path.relative_to(path.parent.parent if path == PATTERNS_FIXTURE else FIXTURE_TREE)))


def test_every_pattern_has_a_fixture_line():
    assert {(p.capture, p.query) for p in registry.PATTERNS} == set(FIXTURE_LINES)


@pytest.mark.parametrize("capture,query", list(FIXTURE_LINES), ids=[f"{c}:{q}" for c, q in FIXTURE_LINES])
def test_pattern_matches_its_fixture_line(capture, query):
    """The pattern's own query file, alone, matches the line with its main capture; a pattern
    without a query (made by another's handler, or read as text) gives a fact of its kinds there,
    and no query match does."""
    path, text = FIXTURE_LINES[(capture, query)]
    pattern = next(p for p in registry.PATTERNS if (p.capture, p.query) == (capture, query))
    line, lang, src = _line_of(path, text), _lang(path), path.read_bytes()
    if query is not None:
        mains = {(c.name, c.line) for match in treesitter.captures(src, lang, query) for c in match}
        assert (capture, line) in mains
        return
    _, facts = parse.extract_file(src, lang)
    assert any(f.line == line and f.kind in pattern.kinds for f in facts)
    queried = {c.line for q in registry.query_files(lang) for match in treesitter.captures(src, lang, q)
               for c in match if c.name == "reference.call"}
    assert line not in queried  # the fact comes from this pattern, not from the call pattern


# The toy pattern: a stub registered by a macro of its own, TOY_REGISTER_KERNEL(stub, kernel);
# (as ATen's REGISTER_*_DISPATCH family grows a new member), one .scm and one handler.
TOY_QUERY = """; A stub registered by the toy macro (tests/test_registry.py).
(call_expression
  function: (identifier) @macro (#eq? @macro "TOY_REGISTER_KERNEL")
  arguments: (argument_list) @args) @reference.toy_register
"""


def _toy_register(unit, node, caps) -> None:
    """The toy macro expands to REGISTER_CUDA_DISPATCH: its fact says so (the resolver reads a
    registration's device from that macro, devices.registration_device)."""
    args = split_call_args(node_text(caps["args"]))
    unit.facts.append(unit.fact(FactKind.REGISTER_DISPATCH, args[0], args[0], unit.line_of(node),
                                namespace=unit.ns_of(node)[0], arg=args[-1].lstrip("&").strip(),
                                detail="REGISTER_CUDA_DISPATCH"))


def _toy_pattern(tmp_path: Path) -> Pattern:
    scm = tmp_path / "toy_register.scm"
    scm.write_text(TOY_QUERY)
    return Pattern("reference.toy_register", scm, _toy_register, kinds=(FactKind.REGISTER_DISPATCH,),
                   stage=Stage.DEFINITION, with_calls=True, without_calls=True,
                   scan_words=(b"TOY_REGISTER_KERNEL",), scan_shape=ScanShape.ANY_ARGUMENT)


def _toy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "pytorch-mini"
    shutil.copytree(FIXTURE_TREE, tree)
    kernel = tree / "aten/src/ATen/native/cuda/UnaryOpsKernel.cu"
    kernel.write_text(kernel.read_text().replace("REGISTER_DISPATCH(exp_stub, &exp_kernel_cuda)",
                                                 "TOY_REGISTER_KERNEL(exp_stub, &exp_kernel_cuda);"))
    return tree


def _register_step(tree: Path, cache: Path) -> tuple[list[tuple], list[str]]:
    """(the register and kernel steps of exp.out's CUDA chain, the files the preview's finder reads for it)."""
    from atenmap import preview
    from atenmap.api import Index

    os.environ["ATENMAP_CACHE"] = str(cache)
    ix = Index.open(tree, codegen=False)
    try:
        steps = list(ix.chain("exp.out", keys=["CUDA"]).keys[0].walk())
        closure = preview.find_files(tree, ix._get("exp.out"), ix, ["CUDA"])
    finally:
        ix.close()
    return [(s.role, s.symbol, s.file) for s in steps if s.role in ("register", "kernel")], closure.files


def test_a_pattern_added_through_the_registry_reaches_a_chain_and_the_preview(tmp_path, monkeypatch):
    tree = _toy_tree(tmp_path)
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache-before"))
    rel = "aten/src/ATen/native/cuda/UnaryOpsKernel.cu"
    texts = {rel: (tree / rel).read_bytes()}
    steps, files = _register_step(tree, tmp_path / "cache-before")
    assert steps == [] and rel not in files  # no pattern reads the toy macro
    assert scan.defined_in("exp_stub", texts, [rel]) == ([], [])
    with registry.registered(_toy_pattern(tmp_path)):
        facts = parse.extract(texts[rel], "cuda")
        assert [(f.name, f.arg, f.line) for f in facts if f.kind == FactKind.REGISTER_DISPATCH] == \
            [("exp_stub", "exp_kernel_cuda", 10)]
        steps, files = _register_step(tree, tmp_path / "cache-after")
        assert steps == [("register", "REGISTER_CUDA_DISPATCH(exp_stub, exp_kernel_cuda)", rel),
                         ("kernel", "at::native::exp_kernel_cuda", rel)]
        assert rel in files
        assert scan.defined_in("exp_stub", texts, [rel]) == ([rel], [])  # the preview's finder
    assert registry.query_files("cuda")[-1] == "launches"  # gone with the block
