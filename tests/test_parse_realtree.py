"""Facts of single files of the real PyTorch 2.6.0 tree, asserted exactly (file:line as PyTorch has
them). Extraction only: no index, no torchgen, so these run in seconds."""
from __future__ import annotations

import pytest

from atenmap.extract import parse

from .conftest import fetch_real_tree

pytestmark = pytest.mark.realtree


@pytest.fixture(scope="module")
def tree26():
    return fetch_real_tree("2.6.0")


@pytest.fixture(scope="module")
def facts_of(tree26):
    cache = {}

    def get(rel: str):
        if rel not in cache:
            path = tree26 / rel
            cache[rel] = parse.extract_file(path.read_bytes(), parse.language_of(rel))[1]
        return cache[rel]
    return get


def _regs(facts, line):
    return [(f.name, f.arg, f.detail, f.cond) for f in facts if f.kind == "register_dispatch" and f.line == line]


def test_register_no_cpu_dispatch(facts_of):
    facts = facts_of("aten/src/ATen/native/Convolution.cpp")
    assert _regs(facts, 632) == [("cudnn_convolution_backward_stub", "", "REGISTER_NO_CPU_DISPATCH", "")]


def test_register_arch_and_capability_forms_split_over_lines(facts_of):
    facts = facts_of("aten/src/ATen/native/SegmentReduce.cpp")
    assert _regs(facts, 555) == [("_segment_reduce_offsets_backward_stub",
                                  "_segment_reduce_cpu_offsets_backward_kernel", "REGISTER_ARCH_DISPATCH", "")]
    assert _regs(facts, 559) == [("_segment_reduce_offsets_backward_stub",
                                  "_segment_reduce_cpu_offsets_backward_kernel", "REGISTER_AVX512_DISPATCH", "")]
    # the last one of the file, before the namespace's closing brace
    assert _regs(facts, 571) == [("_segment_reduce_offsets_backward_stub",
                                  "_segment_reduce_cpu_offsets_backward_kernel", "REGISTER_SVE256_DISPATCH", "")]


def test_also_register_avx512_and_declare_dispatch_found_as_text(facts_of):
    facts = facts_of("aten/src/ATen/native/cpu/FlashAttentionKernel.cpp")
    assert _regs(facts, 1309) == [("flash_attention_kernel", "flash_attention_kernel_impl",
                                   "ALSO_REGISTER_AVX512_DISPATCH", "")]
    decl = {(f.name, f.arg, f.line) for f in facts_of("aten/src/ATen/native/UnaryOps.h")
            if f.kind == "declare_dispatch"}
    assert ("bernoulli_scalar_stub", "void(*)(const TensorBase&, const double, std::optional<Generator>)", 96) in decl


def test_lazy_linalg_registration_pair_with_conditions(facts_of):
    lazy = facts_of("aten/src/ATen/native/cuda/LinearAlgebraStubs.cpp")
    assert _regs(lazy, 140) == [("cholesky_stub", "lazy_cholesky_kernel", "REGISTER_CUDA_DISPATCH",
                                 "defined(BUILD_LAZY_CUDA_LINALG)")]
    real = facts_of("aten/src/ATen/native/cuda/linalg/BatchLinearAlgebra.cpp")
    assert _regs(real, 1376) == [("cholesky_stub", "cholesky_kernel", "REGISTER_CUDA_DISPATCH", "")]
    assert next(f.namespace for f in real if f.kind == "register_dispatch" and f.line == 1376) == \
        "at::native::lazy_linalg"


def test_gemm_float_specialization_and_its_calls(facts_of):
    facts = facts_of("aten/src/ATen/cuda/CUDABlas.cpp")
    funcs = {(f.qual, f.detail): f for f in facts if f.kind == "function"}
    gemm = funcs[("at::cuda::blas::gemm", "specialization<float>")]
    assert (gemm.line, gemm.end_line) == (1157, 1165)
    internal = funcs[("at::cuda::blas::gemm_internal_cublas", "specialization<float>")]
    assert (internal.line, internal.end_line) == (820, 830)
    calls = {(f.name, f.line, f.targs, f.cond): facts[f.scope] for f in facts if f.kind == "call" and f.scope >= 0}
    assert calls[("cublasSgemm", 828, "", "")] is internal
    assert calls[("gemm_internal", 1163, "float", "")] is gemm  # gemm_internal<float>(CUDABLAS_GEMM_ARGS(float))
    lt = next(f for f in facts if f.kind == "call" and f.name == "cublasLtMatmul" and f.line == 1311)
    assert facts[lt.scope].qual == "at::cuda::blas::gemm_and_bias"


def test_braced_template_call_in_a_cu_file(facts_of):
    facts = facts_of("aten/src/ATen/native/cuda/ReduceMomentKernel.cu")
    call = next(f for f in facts if f.kind == "call" and f.name == "gpu_reduce_kernel" and f.line == 20)
    assert call.targs == "scalar_t, out_t, 2" and facts[call.scope].name == "std_var_kernel_impl"
    assert not [f for f in facts if f.kind == "function" and f.name == "gpu_reduce_kernel"]


def test_use_rocm_conditions(facts_of):
    facts = facts_of("aten/src/ATen/native/cuda/Indexing.cu")
    rocm = [f for f in facts if f.kind == "launch" and f.name == "indexing_backward_kernel_rocm"]
    assert [(f.line, f.cond) for f in rocm] == [(621, "defined(USE_ROCM)"), (643, "defined(USE_ROCM)")]
    blas = facts_of("aten/src/ATen/cuda/CUDABlas.cpp")
    assert {(f.name, f.cond) for f in blas if f.kind == "call" and f.line in (1009, 1011)} == {
        ("gemm_internal_cublas", "defined(USE_ROCM)"), ("gemm_internal_cublaslt", "!(defined(USE_ROCM))")}


def test_launch_inside_function_local_define_is_at_its_launch_line(facts_of):
    facts = facts_of("aten/src/ATen/native/cuda/Indexing.cu")
    launches = {(f.name, f.line, f.via_macro, facts[f.scope].name) for f in facts if f.kind == "launch"}
    assert ("indexFuncSmallIndex", 1029, "SMALL_INDEX (used at line 1077)", "index_add_cuda_impl") in launches
    assert ("indexFuncLargeIndex", 1039, "LARGE_INDEX (used at line 1089)", "index_add_cuda_impl") in launches
    assert not [x for x in launches if x[0] == "indexFuncSmallIndex" and x[1] in (1077, 1079, 1081, 1083)]


def test_member_call_on_a_local_of_a_named_class(facts_of):
    facts = facts_of("aten/src/ATen/native/cuda/Reduce.cuh")
    call = next(f for f in facts if f.kind == "call" and f.line == 1244 and f.name == "should_global_reduce")
    assert (call.qual, call.detail) == ("ReduceConfig::should_global_reduce", "member")
    # `Launcher l` in run_launcher<scalar_t, index_t, Launcher> is a template parameter: no type
    sorting = facts_of("aten/src/ATen/native/cuda/SortingCommon.cuh")
    launch = [f for f in sorting if f.kind == "call" and f.name == "launch" and f.detail == "member"]
    assert [(f.qual, f.line, f.targs) for f in launch][:1] == [("launch", 151, "scalar_t, index_t, 1")]


def test_stub_through_a_parameter(facts_of):
    facts = facts_of("aten/src/ATen/native/ReduceOps.cpp")
    stub = next(f for f in facts if f.kind == "call" and f.name == "stub" and f.line == 1615)
    assert facts[stub.scope].name == "allany_impl"
    arg = next(f for f in facts if f.kind == "call" and f.name == "or_stub" and f.line == 1635)
    assert arg.detail == "argument"
