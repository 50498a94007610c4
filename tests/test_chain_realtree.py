"""Chains on the real PyTorch 2.6.0 tree (and a smoke run on 1.13.1): the ground truth.

Each case names an operator, a key, and steps that must appear with their file (and line where
the line is stable across a refactor of atenmap: lines of the PyTorch source itself).
"""
from __future__ import annotations


import pytest


pytestmark = pytest.mark.realtree


def steps(ix, op, key):
    ch = ix.chain(op, keys=[key])
    assert [k.key for k in ch.keys] == [key], ch.warnings
    return list(ch.keys[0].walk())


def has(steps_, role, symbol_part, file_suffix=None, line=None):
    for s in steps_:
        if s.role == role and symbol_part in s.symbol and (file_suffix is None or (s.file or "").endswith(file_suffix)) \
                and (line is None or s.line == line):
            return s
    raise AssertionError(f"no {role} {symbol_part!r} in {file_suffix}:{line}; have "
                         f"{[(s.role, s.symbol[:50], s.file, s.line) for s in steps_ if s.role != 'op_call'][:40]}")


def test_mul_out_cuda(real_index_26):
    s = steps(real_index_26, "mul.out", "CUDA")
    has(s, "yaml", "mul.out", "native_functions.yaml", 4234)
    has(s, "meta", "TORCH_META_FUNC2(mul, Tensor)", "native/BinaryOps.cpp", 166)
    has(s, "native", "TORCH_IMPL_FUNC(mul_out)", "native/BinaryOps.cpp", 440)
    has(s, "stub_call", "mul_stub", "native/BinaryOps.cpp", 443)
    has(s, "stub_declare", "mul_stub", "native/BinaryOps.h")
    has(s, "register", "mul_stub", "native/cuda/BinaryMulKernel.cu", 46)
    has(s, "kernel", "mul_kernel_cuda", "native/cuda/BinaryMulKernel.cu", 22)
    has(s, "call", "gpu_kernel", "native/cuda/Loops.cuh")
    has(s, "launch", "vectorized_elementwise_kernel", "native/cuda/CUDALoops.cuh", 158)
    assert not [x for x in s if x.role == "register" and "/cpu/" in (x.file or "")]


def test_mm_out_cuda_reaches_cublas(real_index_26):
    s = steps(real_index_26, "mm.out", "CUDA")
    has(s, "native", "TORCH_IMPL_FUNC(mm_out_cuda)", "native/cuda/Blas.cpp")
    has(s, "library", "at::cuda::blas::gemm", "native/cuda/Blas.cpp")


def test_exp_out_cpu_macro_made_kernel(real_index_26):
    s = steps(real_index_26, "exp.out", "CPU")
    native = has(s, "native", "TORCH_IMPL_FUNC(exp_out)", "native/UnaryOps.cpp", 334)
    assert "CREATE_UNARY_TORCH_IMPL_FUNC" in native.detail
    reg = has(s, "register", "exp_stub", "native/cpu/UnaryOpsKernel.cpp", 880)
    assert "STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512" in reg.detail
    has(s, "kernel", "exp_kernel", "native/cpu/UnaryOpsKernel.cpp", 880)


def test_exp_out_cuda(real_index_26):
    s = steps(real_index_26, "exp.out", "CUDA")
    has(s, "kernel", "exp_kernel_cuda", "native/cuda/UnaryOpsKernel.cu")
    has(s, "launch", "elementwise_kernel", "native/cuda/CUDALoops.cuh")


def test_linear_lists_the_ops_it_calls(real_index_26):
    ch = real_index_26.chain("linear", keys=["CompositeImplicitAutograd"], expand=False)
    s = list(ch.keys[0].walk())
    native = [x for x in s if x.role == "native"]
    assert [(x.symbol, x.file) for x in native] == [("at::native::linear", "aten/src/ATen/native/Linear.cpp")]
    ops = {x.symbol for x in s if x.role == "op_call"}
    assert {"aten::addmm", "aten::matmul", "aten::t"} <= ops


def test_add_out_reaches_generated_ufunc_code(real_index_26):
    for key in ("CPU", "CUDA"):
        s = steps(real_index_26, "add.out", key)
        native = has(s, "native", f"TORCH_IMPL_FUNC(ufunc_add_{key})")
        assert native.generated and native.file.endswith(f"Ufunc{key}_add.{'cu' if key == 'CUDA' else 'cpp'}")


def test_sub_out_runs_through_add_stub(real_index_26):
    s = steps(real_index_26, "sub.out", "CUDA")
    has(s, "native", "TORCH_IMPL_FUNC(sub_out)", "native/BinaryOps.cpp")
    has(s, "stub_call", "add_stub", "native/BinaryOps.cpp")


def test_sum_reduction_reaches_reduce_kernel(real_index_26):
    s = steps(real_index_26, "sum.IntList_out", "CUDA")
    has(s, "kernel", "sum_kernel_cuda", "native/cuda/ReduceSumProdKernel.cu")
    has(s, "launch", "reduce_kernel", "native/cuda/Reduce.cuh")


def test_argmax_stub_passed_as_argument(real_index_26):
    s = steps(real_index_26, "argmax.out", "CUDA")
    has(s, "stub_call", "argmax_stub")
    has(s, "kernel", "argmax_kernel_cuda")


def test_index_select_launch_inside_a_local_macro(real_index_26):
    s = steps(real_index_26, "index_select", "CUDA")
    has(s, "native", "index_select_cuda", "native/cuda/Indexing.cu")
    # reported at the `<<<` inside SMALL_INDEX's #define (Note [Launches in function-local macros]),
    # not at its first use (line 1548)
    launch = has(s, "launch", "indexSelectSmallIndex", "native/cuda/Indexing.cu")
    assert launch.line == 1502


def test_bmm_and_cudnn_and_cufft_libraries(real_index_26):
    has(steps(real_index_26, "bmm.out", "CUDA"), "library", "at::cuda::blas::bgemm")
    s = steps(real_index_26, "cudnn_convolution", "CUDA")
    assert any(x.role == "library" and x.detail == "cuDNN" for x in s)
    s = steps(real_index_26, "_fft_r2c", "CUDA")
    has(s, "library", "cufftXtExec")
    assert not [x for x in s if x.role == "library" and x.symbol == "cufft_get_plan_cache"]


def test_softmax_cuda_and_cpu(real_index_26):
    s = steps(real_index_26, "_softmax.out", "CUDA")
    has(s, "native", "TORCH_IMPL_FUNC(softmax_cuda_out)", "native/cuda/SoftMax.cu")
    has(s, "launch", "cunn_SoftMaxForward", "native/cuda/SoftMax.cu")
    has(s, "launch", "softmax_warp_forward", "native/cuda/PersistentSoftmax.cuh")
    s = steps(real_index_26, "_softmax.out", "CPU")
    has(s, "stub_call", "softmax_lastdim_kernel")  # a DispatchStub without the _stub suffix
    has(s, "kernel", "softmax_lastdim_kernel_impl", "native/cpu/SoftMaxKernel.cpp")


def test_layer_norm_cuda(real_index_26):
    s = steps(real_index_26, "native_layer_norm", "CUDA")
    has(s, "launch", "vectorized_layer_norm_kernel", "native/cuda/layer_norm_kernel.cu")


def test_sort_and_topk_cuda(real_index_26):
    s = steps(real_index_26, "sort.values_stable", "CUDA")
    has(s, "register", "sort_stub", "native/cuda/Sort.cpp")
    has(s, "library", "radix_sort_pairs", "native/cuda/SortStable.cu")
    assert not [x for x in s if x.role == "library" and "make_" in x.symbol]
    s = steps(real_index_26, "topk.values", "CUDA")
    has(s, "launch", "gatherTopK", "native/cuda/TensorTopK.cu")


def test_where_kernel_stub_without_suffix(real_index_26):
    s = steps(real_index_26, "where.self_out", "CUDA")
    has(s, "stub_call", "where_kernel")
    has(s, "launch", "elementwise_kernel", "native/cuda/CUDALoops.cuh")


def test_copy_composite_explicit_has_every_device(real_index_26):
    s = steps(real_index_26, "copy_", "CompositeExplicitAutograd")
    has(s, "register", "copy_stub", "native/cpu/CopyKernel.cpp")
    has(s, "register", "copy_stub", "native/cuda/Copy.cu")
    assert not [x for x in s if x.role == "register" and "quantized" in (x.file or "")]


def test_max_pool_embedding_cumsum_cuda(real_index_26):
    has(steps(real_index_26, "max_pool2d_with_indices.out", "CUDA"), "launch", "max_pool_forward_nchw",
        "native/cuda/DilatedMaxPool2d.cu")
    s = steps(real_index_26, "embedding_dense_backward", "CUDA")
    has(s, "launch", "embedding_backward_feature_kernel", "native/cuda/Embedding.cu")
    has(s, "library", "radix_sort_pairs")
    has(steps(real_index_26, "cumsum.out", "CUDA"), "kernel", "cumsum_cuda_kernel")


def test_relu_is_a_thin_wrapper(real_index_26):
    s = steps(real_index_26, "relu", "CUDA")
    has(s, "op_call", "aten::clamp_min", "native/Activation.cpp")


def test_structured_delegate_and_json(real_index_26):
    ch = real_index_26.chain("mul.Tensor", keys=["CUDA"])
    top = ch.keys[0].steps[0]
    reg = top.children[0]
    assert reg.role == "register" and 'm.impl("mul.Tensor"' in reg.symbol
    assert reg.children[0].children[0].role == "delegate" and reg.children[0].children[0].symbol == "mul.out"
    d = ch.to_dict()
    assert d["source"]["version"].startswith("2.6.0")


def test_every_operator_resolves_without_error(real_index_26):
    """No operator may crash the resolver; most kernels named in the yaml must be found.
    (Every 8th operator, to keep the test short: the full sweep takes ~100 s.)"""
    missing = total = 0
    for op in real_index_26.operators()[::8]:
        ch = real_index_26.chain(op, depth=3)
        for kc in ch.keys:
            total += 1
            if not [s for s in kc.walk() if s.role in ("native", "generated")]:
                missing += 1
    assert total > 500
    assert missing / total < 0.04, f"{missing}/{total} keys without a native step"


def test_1_13_1_tree(real_index_113):
    ix = real_index_113
    assert ix.source.version.startswith("1.13")  # version.txt of the 1.13.1 release says 1.13.0a0
    s = steps(ix, "mul.out", "CUDA")
    has(s, "native", "TORCH_IMPL_FUNC(mul_out)", "native/BinaryOps.cpp")
    has(s, "kernel", "mul_kernel_cuda")
    has(s, "launch", "elementwise_kernel", "native/cuda/CUDALoops.cuh")
    # Note [ROCm code under the CUDA key]: Loops.cuh includes ROCmLoops.cuh only under USE_ROCM
    assert not [x for x in s if (x.file or "").endswith("ROCmLoops.cuh")], "ROCm launches in a CUDA chain"
    has(steps(ix, "exp.out", "CPU"), "kernel", "exp_kernel", "native/cpu/UnaryOpsKernel.cpp")
    has(steps(ix, "mm.out", "CUDA"), "library", "gemm")
