"""Code reached by name on the fixture tree (fixtures/pytorch-mini/.../cuda/FunctorObjects.cu):
functor objects passed by name, alias-typed functors, functions as template arguments, jiterator
kernels and a library function handed to a macro. Each is a step of mini_functors.out's chain."""
from __future__ import annotations

import pytest

from atenmap.extract import blanking, objects, parse
from atenmap.resolve.libraries import runs_kernels_of

from .conftest import FIXTURE_TREE
from .test_chain import find, steps

CU = "aten/src/ATen/native/cuda/FunctorObjects.cu"


def _facts(rel: str):
    path = FIXTURE_TREE / rel
    return parse.extract(path.read_bytes(), parse.language_of(path.name))


def test_namespace_object_passed_in_a_function_local_macro_is_a_functor_call():
    facts = _facts(CU)
    calls = [(f.name, f.line, f.arg, f.via_macro, facts[f.scope].name) for f in facts if f.detail == "object_arg"]
    assert ("MiniReduceAdd", 46, "mini_reduce_add", "MINI_SMALL_INDEX", "mini_functors_out_cuda") in calls
    assert ("MiniWelfordOps", 51, "ops", "", "mini_functors_out_cuda") in calls


def test_objects_are_only_namespace_objects_and_alias_typed_locals():
    src = (b"struct S { ReduceAdd member; void f() { g(member); } };\n"
           b"static ReduceAdd reduce_add;\n"
           b"void h() { using ops_t = WelfordOps<float>; ops_t ops(1); int n; Tensor t;\n"
           b"  k(reduce_add, ops, n, t);\n  k(ops_t{2}); }\n")
    facts = parse.extract(src, "cpp")
    got = sorted((f.name, f.arg, f.line) for f in facts if f.detail == "object_arg")
    assert got == [("ReduceAdd", "reduce_add", 4), ("WelfordOps", "ops", 4), ("WelfordOps", "ops_t", 5)]


def test_aliases_resolve_through_each_other():
    table = objects.aliases(b"using a = b; using b = Foo<int>;", lambda pos: -1)
    assert objects.resolve_alias("a", -1, table) == "Foo"


def test_jiterator_name_and_code_facts():
    name = next(f for f in _facts(CU) if f.kind == "jit_name")
    assert (name.name, name.arg, name.line) == ("mini_lgamma_name", "mini_lgamma_kernel", 40)
    code = next(f for f in _facts("aten/src/ATen/native/cuda/MiniMath.cuh") if f.kind == "jit_code")
    assert (code.name, code.line) == ("mini_lgamma_string", 6)
    call = next(f for f in _facts(CU) if f.name == "jitted_gpu_kernel")
    assert (call.line, call.arg) == (54, "iter,mini_lgamma_string")


def test_chain_has_every_functor_reached_by_name(mini_index):
    ch = mini_index.chain("mini_functors.out", keys=["CUDA"])
    add = find(ch, "CUDA", "helper", "MiniReduceAdd::operator()")
    assert (add.file, add.line) == (CU, 14) and "passed as the object mini_reduce_add" in add.detail
    welford = find(ch, "CUDA", "call", "MiniWelfordOps")
    assert (welford.file, welford.line) == (CU, 27) and f"object ops at {CU}:51" in welford.detail
    fn = find(ch, "CUDA", "call", "mini_nearest_source_index")
    assert (fn.file, fn.line) == (CU, 31) and "template argument of mini_upsample_template" in fn.detail


def test_chain_has_the_jitted_kernel_at_its_source_string(mini_index):
    ch = mini_index.chain("mini_functors.out", keys=["CUDA"])
    jit = find(ch, "CUDA", "jit", "mini_lgamma_kernel")
    assert (jit.file, jit.line) == ("aten/src/ATen/native/cuda/MiniMath.cuh", 6)
    assert "mini_lgamma_kernel_vectorized<N>_kernel" in jit.detail and f"{CU}:54" in jit.detail


def test_library_function_handed_to_a_macro_is_a_library_step(mini_index):
    ch = mini_index.chain("mini_functors.out", keys=["CUDA"])
    lib = find(ch, "CUDA", "library", "cub::DeviceSegmentedReduce::Reduce")
    assert (lib.file, lib.line, lib.detail) == (CU, 56, "CUB")
    assert not [s for s in steps(ch, "CUDA") if s.symbol.endswith("ScalarType::Half")]


def test_solver_libraries_run_cublas_kernels():
    assert runs_kernels_of("cuSOLVER", "cuBLAS") and runs_kernels_of("MAGMA", "cuBLASLt")
    assert runs_kernels_of("MAGMA", "CUTLASS")  # CUTLASS kernels are cuBLAS's family
    assert not runs_kernels_of("cuBLAS", "cuSOLVER") and not runs_kernels_of("CUB", "cuBLAS")
    assert not runs_kernels_of(None, "cuBLAS") and not runs_kernels_of("cuSOLVER", None)


def test_a_jitted_call_after_a_template_string_inside_a_function_is_read():
    # Note [Jiterator code is a string]: a `template <...>` in jiterator_stringify's argument is an ERROR
    # to tree-sitter, which swallowed the launcher call after it; inside a function the argument is
    # blanked before the parse (the same lines), at namespace scope the string's functions stay
    src = (b"namespace at::native {\n"
           b"const auto ns_string = jiterator_stringify(\n"
           b"    template <typename T> T ns_kernel(T a) { return a; });\n"
           b"constexpr char mini_mul_name[] = \"mini_mul_kernel\";\n"
           b"void mini_mul_kernel_cuda(TensorIteratorBase& iter) {\n"
           b"  if (iter.common_dtype() == kComplexHalf) {\n"
           b"    using scalar_t = c10::complex<at::Half>;\n"
           b"#if AT_USE_JITERATOR()\n"
           b"    static const auto mul_string = jiterator_stringify(\n"
           b"        template <typename T> T mini_mul_kernel(T a, T b) { return a * b; });\n"
           b"    opmath_jitted_gpu_kernel_with_scalars<mini_mul_name, scalar_t, scalar_t>(\n"
           b"        iter, mul_string);\n"
           b"#else\n"
           b"    mini_symmetric_kernel(iter);\n"
           b"#endif\n"
           b"  }\n"
           b"}\n"
           b"}\n")
    facts = parse.extract(src, "cuda")
    call = next(f for f in facts if f.name == "opmath_jitted_gpu_kernel_with_scalars")
    assert (call.line, facts[call.scope].name) == (11, "mini_mul_kernel_cuda")
    assert not [f for f in facts if f.name == "mini_mul_kernel"]  # the string's code is no code of the function
    assert [f.line for f in facts if f.kind == "jit_code"] == [2, 9]
    # only inside a function: at namespace scope (no function around it) the text stays as it was
    masked = blanking.mask_code(src, balanced_branches=True)
    assert blanking.blank_jiterator_code(src, masked, []) == src
    blanked = blanking.blank_jiterator_code(src, masked, [(src.index(b"void"), len(src) - 2, 0, "f")])
    assert len(blanked) == len(src) and blanked.count(b"\n") == src.count(b"\n") and b"ns_kernel" in blanked
    assert b"mini_mul_kernel(T a" not in blanked


@pytest.mark.parametrize("line", [b"  // the code is jiterator_stringify(ed\n", b'  log("jiterator_stringify(");\n'])
def test_jiterator_stringify_in_a_comment_or_string_blanks_no_code(line):
    """Note [Jiterator code is a string]: the name in a comment or a string literal, its parenthesis
    unbalanced, is not a call whose argument is blanked (it ran on to a later ``)`` and ate code)."""
    src = b"void f() {\n" + line + b"  g(1);\n  // end)\n  h(2);\n  log(\")\");\n}\n"
    calls = {(f.name, f.line) for f in parse.extract(src, "cuda") if f.kind == "call"}
    assert {("g", 3), ("h", 5)} <= calls
