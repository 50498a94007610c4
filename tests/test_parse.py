"""Tag queries and extraction: every annotated fixture line, plus focused snippets.

Fixture sources carry annotations of the form ``// ^ KIND NAME``: the nearest code line above must
yield a fact of that kind and name (lines 1-based, like every atenmap output).
"""
from __future__ import annotations

import re

import pytest

from atenmap.extract import parse
from atenmap.extract.macros import MacroDef, expand, find_uses

from .conftest import FIXTURE_TREE

ANNOT = re.compile(r"^\s*// \^ (\w+) (\S+)\s*$")


def _annotations():
    for path in sorted(FIXTURE_TREE.rglob("*")):
        lang = parse.language_of(str(path.relative_to(FIXTURE_TREE)))  # as the build does: cuda/ headers are CUDA
        if lang is None:
            continue
        lines = path.read_text().splitlines()
        for i, text in enumerate(lines):
            m = ANNOT.match(text)
            if not m:
                continue
            j = i - 1
            while j >= 0 and (ANNOT.match(lines[j]) or not lines[j].strip()):
                j -= 1
            aten = FIXTURE_TREE / "aten/src/ATen"
            rel = path.relative_to(aten if path.is_relative_to(aten) else FIXTURE_TREE)  # FunctionsManual.cpp
            yield pytest.param(path, lang, j + 1, m.group(1), m.group(2),
                               id=f"{rel}:{j + 1}:{m.group(1)}:{m.group(2)}")


@pytest.mark.parametrize("path,lang,line,kind,name", list(_annotations()))
def test_annotated_fixture_line(path, lang, line, kind, name):
    _, facts = parse.extract_file(path.read_bytes(), lang)
    found = {(f.kind, f.name) for f in facts if f.line <= line <= f.end_line and (f.line == line or f.kind not in ("call", "launch"))}
    at_line = {(f.kind, f.name) for f in facts if f.line == line}
    assert (kind, name) in at_line or (kind, name) in found, f"{path.name}:{line}: no {kind} {name}; got {sorted(at_line)}"


def test_every_query_pattern_has_a_fixture_line():
    kinds = {p.values[3] for p in _annotations()}
    for kind in ("function", "global", "impl_func", "meta_func", "class", "call", "launch",
                 "declare_dispatch", "define_dispatch", "register_dispatch"):
        assert kind in kinds, f"no fixture annotation proves {kind}"


def _facts(src: str, lang: str = "cpp"):
    return parse.extract(src.encode(), lang)


def test_register_dispatch_with_and_without_semicolon_and_multiline():
    facts = _facts("namespace at::native {\nREGISTER_DISPATCH(a_stub, &a_kernel)\n"
                   "REGISTER_DISPATCH(b_stub, &b_kernel);\nREGISTER_ARCH_DISPATCH(\n  c_stub,\n  DEFAULT,\n  &c_kernel)\n"
                   "REGISTER_NO_CPU_DISPATCH(d_stub)\n}\n")
    regs = {(f.name, f.arg, f.detail, f.line) for f in facts if f.kind == "register_dispatch"}
    assert ("a_stub", "a_kernel", "REGISTER_DISPATCH", 2) in regs
    assert ("b_stub", "b_kernel", "REGISTER_DISPATCH", 3) in regs
    assert ("c_stub", "c_kernel", "REGISTER_ARCH_DISPATCH", 4) in regs
    assert ("d_stub", "", "REGISTER_NO_CPU_DISPATCH", 8) in regs
    assert all(f.namespace == "at::native" for f in facts if f.kind == "register_dispatch")


def test_export_macros_do_not_hide_functions():
    src = ("namespace at { namespace native {\nTORCH_API Tensor& foo_out(const Tensor& self, Tensor& out) {\n"
           "  return bar(out);\n}\nC10_HOST_DEVICE inline float baz(float x) { return x; }\n}}\n")
    facts = _facts(src)
    funcs = {f.qual: f.line for f in facts if f.kind == "function"}
    assert funcs == {"at::native::foo_out": 2, "at::native::baz": 5}
    call = next(f for f in facts if f.kind == "call")
    assert call.name == "bar" and facts[call.scope].name == "foo_out"


def test_launch_bounds_and_global_in_cuda():
    src = ("template <int N>\nC10_LAUNCH_BOUNDS_1(num_threads())\n__global__ void k(int n) {}\n"
           "void go() {\n  k<4><<<g, b, 0, s>>>(n);\n}\n")
    facts = _facts(src, "cuda")
    assert [(f.kind, f.name, f.line) for f in facts if f.kind in ("global", "launch")] == [
        ("global", "k", 3), ("launch", "k", 5)]
    launch = next(f for f in facts if f.kind == "launch")
    assert launch.detail == "<<<g, b, 0, s>>>" and facts[launch.scope].name == "go"


def test_cpp_grammar_does_not_report_launches():
    facts = _facts("void go() { k<<<g, b>>>(n); }\n", "cpp")
    assert not [f for f in facts if f.kind == "launch"]


def test_calls_inside_dispatch_lambdas_belong_to_the_function():
    src = ('void k(TensorIteratorBase& iter) {\n  AT_DISPATCH_ALL_TYPES(iter.dtype(), "k", [&]() {\n'
           "    gpu_kernel(iter, []GPU_LAMBDA(scalar_t a) -> scalar_t { return a; });\n  });\n}\n")
    facts = _facts(src, "cuda")
    call = next(f for f in facts if f.kind == "call" and f.name == "gpu_kernel")
    assert call.line == 3 and facts[call.scope].name == "k"


def test_macro_expansion_token_pasting_and_stringizing():
    d = MacroDef.from_parts("K", "(op)", " void op##_kernel() { f(#op); } \\\n REGISTER_DISPATCH(op##_stub, &op##_kernel)", 1)
    use = find_uses("K(exp)\n", {"K": d})[0]
    assert use.line == 1 and use.args == ("exp",)
    text = expand(use, {"K": d})
    assert "void exp_kernel()" in text and 'f("exp")' in text and "REGISTER_DISPATCH(exp_stub, &exp_kernel)" in text


def test_macro_uses_inside_defines_or_functions_are_not_expanded():
    src = ("#define MK(op) void op##_k() {}\n#define TWO(op) \\\n  MK(op)\nvoid f() {\n  MK(inner)\n}\nMK(top)\n")
    facts = _facts(src)
    names = {f.name for f in facts if f.kind == "function"}
    assert "top_k" in names and "inner_k" not in names
    top = next(f for f in facts if f.name == "top_k")
    assert top.line == 7 and top.via_macro == "MK"


def test_torch_library_impl_registration():
    src = ('namespace at { namespace {\nTORCH_LIBRARY_IMPL(aten, CUDA, m) {\n'
           '  m.impl("add.out", TORCH_FN(wrapper_CUDA_add_out_out));\n}\n}}\n')
    facts = _facts(src)
    impl = next(f for f in facts if f.kind == "torch_impl")
    assert impl.name == "add.out" and impl.arg == "TORCH_FN(wrapper_CUDA_add_out_out)" and impl.line == 3
    assert facts[impl.scope].kind == "macro_block" and "CUDA" in facts[impl.scope].arg


def test_strip_templates_keeps_operators():
    assert parse.strip_templates("at::native::gemm<float>") == "at::native::gemm"
    assert parse.strip_templates("Foo<A<B>>::operator()") == "Foo::operator()"
    assert parse.strip_templates("operator<<") == "operator<<"


def test_language_of():
    assert parse.language_of("a.cu") == "cuda" and parse.language_of("a.cuh") == "cuda"
    assert parse.language_of("a.cpp") == "cpp" and parse.language_of("a.h") == "cpp"
    assert parse.language_of("a.mm") == "objcpp" and parse.language_of("a.py") is None
    assert parse.language_of("aten/src/ATen/native/cuda/DistributionTemplates.h") == "cuda"


def test_global_kernel_in_a_header_read_with_the_cpp_grammar():
    facts = _facts("namespace at {\ntemplate <int N>\n__global__ void k(int n) {}\n}\n", "cpp")
    assert [(f.kind, f.name, f.line) for f in facts if f.name == "k"] == [("global", "k", 3)]


# ---- Issue 10: every kernel that runs is in the chain (extractor side) ------------------------

ATEN = FIXTURE_TREE / "aten/src/ATen"


def _file_facts(rel: str):
    path = ATEN / rel
    return parse.extract_file(path.read_bytes(), parse.language_of(path.name))[1]


def test_every_registration_form_split_or_not_with_its_macro_as_detail():
    facts = _file_facts("native/RegisterForms.cpp")
    regs = [(f.name, f.arg, f.detail, f.line) for f in facts if f.kind == "register_dispatch"]
    assert regs == [
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_ARCH_DISPATCH", 15),
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_AVX512_DISPATCH", 19),
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_AVX2_DISPATCH", 22),
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_VSX_DISPATCH", 24),
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_ZVECTOR_DISPATCH", 25),
        ("mini_forms_stub", "mini_forms_kernel", "REGISTER_SVE256_DISPATCH", 26),
        ("mini_gpu_only_stub", "", "REGISTER_NO_CPU_DISPATCH", 27),
        ("mini_no_avx512_stub", "", "REGISTER_NO_AVX512_DISPATCH", 29),
        ("mini_also_stub", "mini_forms_kernel", "ALSO_REGISTER_AVX512_DISPATCH", 30),
        ("mini_last_stub", "mini_forms_kernel", "REGISTER_SVE256_DISPATCH", 31),
    ]
    decl = next(f for f in facts if f.kind == "declare_dispatch")
    assert (decl.name, decl.arg, decl.line) == ("mini_forms_stub", "void (*)(TensorIterator&)", 7)
    assert [(f.name, f.line) for f in facts if f.kind == "define_dispatch"] == [("mini_forms_stub", 10)]
    assert all(f.namespace == "at::native" and f.cond == "" for f in facts if f.kind.endswith("_dispatch"))


def test_lazy_linalg_registration_pair_with_conditions():
    lazy = next(f for f in _file_facts("native/cuda/MiniLinalgStubs.cpp") if f.kind == "register_dispatch")
    assert (lazy.name, lazy.arg, lazy.line, lazy.cond) == (
        "mini_solve_stub", "lazy_mini_solve", 11, "defined(BUILD_LAZY_CUDA_LINALG)")
    real = [f for f in _file_facts("native/cuda/linalg/MiniLinalg.cpp") if f.kind == "register_dispatch"]
    assert [(f.name, f.arg, f.line, f.cond, f.namespace) for f in real] == [
        ("mini_solve_stub", "mini_solve_kernel", 19, "", "at::native::lazy_linalg")]


def test_explicit_specialization_is_a_function_with_its_calls():
    facts = _file_facts("cuda/MiniBlas.cpp")
    funcs = [(f.name, f.qual, f.line, f.detail) for f in facts if f.kind == "function"]
    assert funcs == [("mini_gemm_internal", "at::cuda::blas::mini_gemm_internal", 13, "specialization<float>"),
                     ("mini_gemm", "at::cuda::blas::mini_gemm", 30, "specialization<float>")]
    calls = {(f.name, f.line, facts[f.scope].name, f.targs, f.cond) for f in facts if f.kind == "call"}
    assert ("cublasSgemm", 24, "mini_gemm_internal", "", "") in calls
    assert ("mini_gemm_ck", 20, "mini_gemm_internal", "", "defined(USE_ROCM)") in calls
    # the most vexing parse: a declaration to tree-sitter, a call to the compiler
    assert ("mini_gemm_internal", 32, "mini_gemm", "float", "") in calls


def test_include_guard_is_not_a_condition():
    facts = _file_facts("cuda/MiniBlas.cpp")
    assert all(f.cond in ("", "defined(USE_ROCM)") for f in facts)


def test_braced_template_call_and_template_arguments():
    facts = _file_facts("native/cuda/SpecialCases.cu")
    reduce_ = [f for f in facts if f.name == "mini_reduce_kernel"]
    assert [(f.kind, f.line, f.targs, facts[f.scope].name) for f in reduce_] == [
        ("call", 41, "scalar_t, out_t, 2", "mini_reduce"), ("call", 79, "float, float, 2", "mini_argmax_cuda")]
    normal = next(f for f in facts if f.name == "mini_normal_impl_")
    assert (normal.kind, normal.line, normal.targs) == ("call", 54, "Stub, RNG")


def test_member_call_on_a_local_names_the_type():
    facts = _file_facts("native/cuda/SpecialCases.cu")
    call = next(f for f in facts if f.kind == "call" and f.name == "launch")
    assert (call.qual, call.line, call.detail, call.targs, facts[call.scope].name) == (
        "TopkLauncher::launch", 48, "member", "float, 2", "topk_cuda")
    facts = _facts("void f(const Foo<int>& p, Bar* q) {\n  auto a = Baz{1};\n  Qux b{2};\n"
                   "  p.go(); q->run(); a.x(); b.y(); c.z();\n}\n")
    assert sorted(f.qual for f in facts if f.kind == "call") == ["Bar::run", "Baz::x", "Foo::go", "Qux::y", "z"]
    # a temporary built by a constructor (kron's `KronImpl(self, other).kron()`); not a function's result
    facts = _facts("Tensor k(const Tensor& a) {\n  return KronImpl(a, a).kron();\n}\n"
                   "void g() { Vec<float>(1).store(p); Foo{1}.go(); make_x(1).run(); }\n")
    assert sorted(f.qual for f in facts if f.kind == "call" and f.detail == "member") == [
        "Foo::go", "KronImpl::kron", "Vec::store", "run"]


def test_launch_in_a_function_local_define_is_at_its_launch_line():
    facts = _file_facts("native/cuda/SpecialCases.cu")
    launches = [(f.name, f.line, f.via_macro, facts[f.scope].name) for f in facts if f.kind == "launch"]
    # one fact for the two uses of RUN_TILE in tile_copy_cuda: at the `<<<` line, first use named
    assert ("tile_copy_kernel", 28, "RUN_TILE (used at line 31)", "tile_copy_cuda") in launches
    assert not [x for x in launches if x[3] == "tile_copy_cuda" and x[1] != 28]


def test_rocm_conditions_on_functions_launches_and_includes():
    facts = _file_facts("native/cuda/SpecialCases.cu")
    by = {(f.kind, f.name, f.line): f.cond for f in facts}
    assert by[("include", "ATen/native/cuda/MiniRocmLoops.cuh", 5)] == "defined(USE_ROCM)"
    assert by[("include", "ATen/native/cuda/Loops.cuh", 3)] == ""
    assert by[("function", "rocm_only_copy", 59)] == "defined(USE_ROCM)"
    assert by[("launch", "tile_copy_kernel", 61)] == "defined(USE_ROCM)"
    assert by[("launch", "tile_copy_kernel", 66)] == "!(defined(USE_ROCM))"


def test_condition_stack_formats():
    from atenmap.extract.preproc import read_conditions

    text = ("#pragma once\n#if A\n1\n#elif B // note\n2\n#else\n3\n#ifdef X\n4\n#ifndef Y\n5\n#endif\n#endif\n"
            "#endif\n6\n#if C && \\\n    D\n7\n#endif\n")
    c = read_conditions(text)
    assert [c.at(n) for n in (1, 3, 5, 7, 9, 11, 15, 18)] == [
        "", "A", "!(A) && B", "!(A) && !(B)", "!(A) && !(B) && defined(X)",
        "!(A) && !(B) && defined(X) && !defined(Y)", "", "C && D"]
    guard = read_conditions("// c\n#ifndef FOO_H\n#define FOO_H\nint x;\n#ifdef Z\nint y;\n#endif\n#endif\n")
    assert (guard.at(4), guard.at(6)) == ("", "defined(Z)")


def test_stub_called_through_a_parameter_and_passed_as_an_argument():
    src = ("void any_impl(Tensor& r, Stub& stub) {\n  stub(iter.device_type(), iter);\n}\n"
           "void any_out(Tensor& r) {\n  any_impl<0>(r, or_stub);\n}\n")
    facts = _facts(src)
    assert {(f.kind, f.name, f.line, f.detail) for f in facts if f.kind == "call"} >= {
        ("call", "stub", 2, ""), ("call", "or_stub", 5, "argument"), ("call", "any_impl", 5, "")}


def test_every_registration_form_has_a_device():
    from atenmap import devices

    facts = [f for f in _file_facts("native/RegisterForms.cpp") if f.kind == "register_dispatch"]
    path = "aten/src/ATen/native/RegisterForms.cpp"
    assert {devices.registration_device(f.detail, path) for f in facts} == {"cpu"}
    no_cpu = next(f for f in facts if f.detail == "REGISTER_NO_CPU_DISPATCH")
    assert not devices.registration_has_kernel(no_cpu.detail) and no_cpu.arg == ""
    assert [devices.registration_capability(f.detail) for f in facts[:6]] == [
        "", "AVX512", "AVX2", "VSX", "ZVECTOR", "SVE256"]
    lazy = next(f for f in _file_facts("native/cuda/MiniLinalgStubs.cpp") if f.kind == "register_dispatch")
    assert devices.registration_device(lazy.detail, "aten/src/ATen/native/cuda/MiniLinalgStubs.cpp") == "cuda"
    assert devices.registration_device("REGISTER_DISPATCH", "aten/src/ATen/native/cuda/X.cu") == "cuda"


def test_function_objects_made_in_argument_lists():
    """Note [Reduction functors]: ``gpu_reduce_kernel<...>(iter, ArgMaxOps<acc_t>{})``, also where
    the braced argument makes tree-sitter misread the whole call."""
    facts = _file_facts("native/cuda/SpecialCases.cu")
    made = [(f.line, f.detail, facts[f.scope].name) for f in facts if f.kind == "call" and f.name == "MiniArgMaxOps"]
    assert made == [(77, "functor_arg", "mini_argmax_cuda"), (79, "functor_arg", "mini_argmax_cuda")]


def test_rocm_only_cancels_double_negation():
    """The #else of ``#if !defined(USE_ROCM)`` (1.13.1's Loops.cuh includes ROCmLoops.cuh there)."""
    from atenmap.resolve.conditions import rocm_only

    assert rocm_only("!(!defined(USE_ROCM))") and rocm_only("A && !(!defined(USE_ROCM))")
    assert rocm_only("(defined(USE_ROCM))") and rocm_only("USE_ROCM")
    assert not rocm_only("!(defined(USE_ROCM))") and not rocm_only("!defined(USE_ROCM)")
    assert not rocm_only("(defined(USE_ROCM)) || (X)")


def test_without_calls_the_kept_kinds_are_the_same():
    """``kinds`` that no call makes (the generated autograd files): the query without calls
    (NO_CALLS_QUERY_FILES, impl_calls.scm) gives the facts of those kinds a full read gives."""
    from atenmap.build import keep_kinds

    src = b"""namespace torch { namespace autograd { namespace VariableType {
namespace {
struct AddBackward0 : public Node { void apply(); };
at::Tensor add_Tensor(c10::DispatchKeySet ks, const at::Tensor & self) {
  auto& self_ = unpack(self, "self", 0);
  auto _tmp = ([&]() { return at::redispatch::add(ks, self_); })();
  grad_fn->set_next_edges(collect_next_edges(self));
  return _tmp;
}
}
TORCH_LIBRARY_IMPL(aten, Autograd, m) {
  m.impl("add.Tensor", TORCH_FN(VariableType::add_Tensor));
  m.impl_UNBOXED("sub.Tensor", &sub_Tensor);
  m.def("not_an_impl(Tensor self) -> Tensor");
}
}}}
"""
    kinds = frozenset({"function", "class", "torch_impl", "macro_block"})
    row = lambda f: (f.kind, f.name, f.qual, f.line, f.end_line, f.namespace, f.scope, f.arg, f.detail)  # noqa: E731
    _, every = parse.extract_file(src, "cpp")
    _, kept = parse.extract_file(src, "cpp", kinds=kinds)
    assert keep_kinds([row(f) for f in kept], kinds) == keep_kinds([row(f) for f in every], kinds)
    impls = {(f.name, f.arg) for f in kept if f.kind == "torch_impl"}
    assert impls == {("add.Tensor", "TORCH_FN(VariableType::add_Tensor)"), ("sub.Tensor", "&sub_Tensor")}
    assert not any(f.kind == "call" for f in kept)  # the query read no call


def test_qualified_vexing_call_is_a_call():
    """CUDABlas.cpp's ``at::native::gemm_internal_ck<float>(CUDABLAS_GEMM_ARGS(float));``: tree-sitter
    reads a qualified template call whose only argument is a macro of a builtin type as a declaration
    (Note [Calls tree-sitter misreads])."""
    path = FIXTURE_TREE.parent / "rocm" / "MiniCkBlas.cpp"
    facts = parse.extract_file(path.read_bytes(), parse.language_of(path.name))[1]
    calls = [(f.name, f.qual, f.line, f.targs, f.cond) for f in facts if f.kind == "call"]
    assert ("mini_gemm_ck", "at::native::mini_gemm_ck", 10, "float", "defined(USE_ROCM)") in calls
    assert [f.name for f in facts if f.kind == "call"] == ["prefer_ck", "mini_gemm_ck"]
