"""--why on the real trees: add.out's CUDA chain in 2.6.0 (CUDALoops.cuh's vectorized / unrolled /
legacy branches, the dtypes of torchgen's UfuncCUDA_add.cu) and 1.13.1; the dtype table of
resolve/dtypes.py against the Dispatch.h / Dispatch_v2.h of both releases."""
from __future__ import annotations

import re

import pytest

from atenmap.resolve import dtypes

from .conftest import fetch_real_tree

pytestmark = pytest.mark.realtree

LOOPS = "aten/src/ATen/native/cuda/CUDALoops.cuh"
# add.out's ufunc_inner_loop: Generic (AllAndComplex, BFloat16, Half, ComplexHalf), ScalarOnly (Bool),
# torchgen's DTYPE_CLASSES expand AllAndComplex; UfuncCUDA_add.cu has one AT_DISPATCH_CASE for each.
ADD_TYPES = ("uint8, int8, short, int, long, half, float, double, chalf, cfloat, cdouble, bool, bfloat16 "
             "(AT_DISPATCH_CASE)")


def _why(step):
    return [(r.kind, r.text, r.loc.file.rsplit("/", 1)[-1], r.loc.line) for r in step.why]


def _find(steps, role, symbol, line=None, called=None):
    for s in steps:
        if s.role == role and symbol in s.symbol and (line is None or s.line == line) \
                and (called is None or f":{called}" in s.detail):
            return s
    raise AssertionError(f"no {role} {symbol} {line} {called}")


def test_add_out_cuda_2_6_0(real_index_26):
    ch = real_index_26.chain("add.out", keys=["CUDA"], why=True)
    s = list(ch.keys[0].walk())
    dt = ("dtypes", ADD_TYPES, "UfuncCUDA_add.cu", 69)
    assert _why(_find(s, "helper", "launch_vectorized_kernel")) == [("if", "if (contiguous)", "CUDALoops.cuh", 308)]
    assert _why(_find(s, "launch", "vectorized_elementwise_kernel", 158)) == [
        ("switch", "switch (vec_size)", "CUDALoops.cuh", 156), ("case", "case 4:", "CUDALoops.cuh", 157), dt]
    assert _why(_find(s, "launch", "vectorized_elementwise_kernel", 163))[1] == ("case", "case 2:", "CUDALoops.cuh", 162)
    assert _why(_find(s, "launch", "unrolled_elementwise_kernel", 172))[1] == ("case", "case 1:", "CUDALoops.cuh", 167)
    assert _why(_find(s, "helper", "launch_legacy_kernel", called=313)) == [
        ("return", "after if (contiguous) return", "CUDALoops.cuh", 308)]
    assert _why(_find(s, "helper", "launch_unrolled_kernel", called=361)) == [
        ("#if", "!(defined(USE_ROCM))", "CUDALoops.cuh", 356),
        ("return", "after if (!needs_dynamic_casting<func_t>::check(iter)) return", "CUDALoops.cuh", 322),
        ("if", "if (contiguous)", "CUDALoops.cuh", 342)]
    assert _why(_find(s, "helper", "launch_legacy_kernel", called=376))[-1] == (
        "else", "else of if (contiguous)", "CUDALoops.cuh", 370)
    assert _why(_find(s, "helper", "gpu_kernel_impl", 321)) == [
        ("return", "after if (iter.numel() == 0) return", "Loops.cuh", 109),
        ("return", "after if (!iter.can_use_32bit_indexing()) return", "Loops.cuh", 113)]
    # which dtype reaches which functor: the three functors of torchgen's file, each in its branch
    assert _why(_find(s, "helper", "CUDAFunctorOnOther_add::operator()")) == [
        ("if", "if (iter.is_cpu_scalar(1))", "UfuncCUDA_add.cu", 72), dt]
    assert _why(_find(s, "helper", "CUDAFunctor_add::operator()")) == [
        ("else", "else of if (iter.is_cpu_scalar(1))", "UfuncCUDA_add.cu", 76),
        ("else", "else of if (iter.is_cpu_scalar(2))", "UfuncCUDA_add.cu", 81), dt]
    assert _why(_find(s, "helper", "at::native::gpu_kernel", 101)) == [dt]
    assert all(_why(x)[-1] == dt for x in s if x.role == "launch")
    assert not any(x.why for x in real_index_26.chain("add.out", keys=["CUDA"]).keys[0].walk())


def test_dispatch_macro_dtypes_2_6_0(real_index_26):
    """A hand-written kernel: mul's AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3 (BinaryMulKernel.cu)."""
    s = list(real_index_26.chain("mul.out", keys=["CUDA"], why=True).keys[0].walk())
    got = _why(_find(s, "call", "opmath_symmetric_gpu_kernel_with_scalars"))
    assert ("dtypes", "uint8, int8, short, int, long, half, float, double, cfloat, cdouble, bool, bfloat16 "
            "(AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3)", "BinaryMulKernel.cu", 37) in got


def test_add_out_cuda_1_13_1(real_index_113):
    s = list(real_index_113.chain("add.out", keys=["CUDA"], why=True).keys[0].walk())
    assert _why(_find(s, "launch", "vectorized_elementwise_kernel", 98))[:2] == [
        ("switch", "switch (vec_size)", "CUDALoops.cuh", 96), ("case", "case 4:", "CUDALoops.cuh", 97)]
    assert _why(_find(s, "helper", "launch_vectorized_kernel")) == [
        ("if", "if (!dynamic_casting)", "CUDALoops.cuh", 212), ("if", "if (contiguous)", "CUDALoops.cuh", 213)]
    assert _why(_find(s, "helper", "launch_unrolled_kernel")) == [
        ("else", "else of if (!dynamic_casting)", "CUDALoops.cuh", 224), ("if", "if (contiguous)", "CUDALoops.cuh", 225)]
    assert _why(_find(s, "helper", "CUDAFunctorOnOther_add::operator()"))[-1] == ("dtypes", ADD_TYPES,
                                                                                  "UfuncCUDA_add.cu", 69)


# ---- the dtype table against the headers ------------------------------------------------------

_DEFINE = re.compile(r"^#define (AT_[A-Z0-9_]+)(\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)", re.M)
_TYPE = re.compile(r"\b(?:at|c10)::(?:ScalarType::|k)(\w+)")
_NESTED = re.compile(r"\bAT_DISPATCH_CASE_([A-Z_]+?)(?:_AND\d*)?\(|\bAT_EXPAND\((AT_\w+)\)")


def _defines(path):
    return {m.group(1): m.group(3) for m in _DEFINE.finditer(path.read_text())}


def _header_types(defs, name, prefix):
    body = defs[name]
    out = [t for t in _TYPE.findall(body) if t in dtypes.TORCH_NAMES]
    for case_group, v2_group in _NESTED.findall(body):
        nested = f"{prefix}{case_group}" if case_group else v2_group
        if nested != name and nested in defs:
            out += _header_types(defs, nested, prefix)
    return set(out)


@pytest.mark.parametrize("version", ["2.6.0", "1.13.1"])
def test_dispatch_groups_match_the_header(version):
    tree = fetch_real_tree(version)
    defs = _defines(tree / "aten/src/ATen/Dispatch.h")
    checked = 0
    for group, types in dtypes.GROUPS.items():
        name = next((n for n in (f"AT_DISPATCH_CASE_{group}", f"AT_DISPATCH_{group}") if n in defs), None)
        if name is None:
            continue
        assert _header_types(defs, name, "AT_DISPATCH_CASE_") == set(types), (version, group)
        checked += 1
    assert checked == (13 if version == "2.6.0" else 12)
    v2 = tree / "aten/src/ATen/Dispatch_v2.h"
    if version == "2.6.0":
        defs = _defines(v2)
        for group, types in dtypes.V2_GROUPS.items():
            assert _header_types(defs, group, "") == set(types), group
    else:
        assert not v2.exists()
