"""Re-dispatch on the real PyTorch 2.6.0 tree (Note [Re-dispatch] in resolve/opcalls.py): a native
that calls another operator shows that operator's chain for the same key, down to its kernel."""
from __future__ import annotations

from collections import Counter

import pytest

from .test_chain_realtree import has, steps

pytestmark = pytest.mark.realtree


def test_relu_reaches_clamp_min_kernel_and_launch(real_index_26):
    s = steps(real_index_26, "relu", "CUDA")
    call = has(s, "op_call", "aten::clamp_min", "native/Activation.cpp", 513)
    assert "overload clamp_min " in call.detail
    has(s, "kernel", "clamp_min_scalar_kernel_impl", "native/cuda/TensorCompare.cu", 85)
    has(s, "register", "clamp_min_scalar_stub", "native/cuda/TensorCompare.cu", 101)
    has(s, "launch", "vectorized_elementwise_kernel", "native/cuda/CUDALoops.cuh", 158)


def test_no_expand_keeps_the_leaf(real_index_26):
    ch = real_index_26.chain("relu", keys=["CUDA"], expand=False)
    s = list(ch.keys[0].walk())
    call = has(s, "op_call", "aten::clamp_min", "native/Activation.cpp", 513)
    assert call.children == () and not [x for x in s if x.role in ("kernel", "launch")]


def test_softmax_int_reaches_softmax_launches(real_index_26):
    s = steps(real_index_26, "softmax.int", "CUDA")
    has(s, "op_call", "aten::_softmax", "native/SoftMax.cpp", 447)
    has(s, "launch", "cunn_SoftMaxForward", "native/cuda/SoftMax.cu", 876)
    has(s, "launch", "softmax_warp_forward", "native/cuda/PersistentSoftmax.cuh", 330)  # the <<< line inside LAUNCH_SOFTMAX_WARP_FORWARD


def test_flash_attention_reaches_flash_launches(real_index_26):
    s = steps(real_index_26, "_scaled_dot_product_flash_attention", "CUDA")
    has(s, "op_call", "aten::_flash_attention_forward", "transformers/cuda/attention.cu", 715)
    has(s, "launch", "flash_fwd_splitkv_combine_kernel", "flash_attn/flash_fwd_launch_template.h", 145)


def test_norm_out_reaches_norm_stub_registration(real_index_26):
    s = steps(real_index_26, "norm.out", "CUDA")
    has(s, "op_call", "aten::linalg_vector_norm", "native/ReduceOps.cpp", 1539)
    has(s, "register", "norm_stub", "native/cuda/ReduceOps.cpp", 100)
    has(s, "launch", "reduce_kernel", "native/cuda/Reduce.cuh", 890)


def test_each_operator_is_expanded_once(real_index_26):
    """matmul reaches mm, dot, mv, bmm...: every operator's yaml step appears at most once per key,
    a second call says it was shown above; views stay leaves."""
    s = steps(real_index_26, "linear", "CUDA")
    yaml_steps = Counter(x.symbol for x in s if x.role == "yaml")
    assert yaml_steps and max(yaml_steps.values()) == 1, yaml_steps
    assert any("already shown above" in x.detail for x in s if x.role == "op_call")
    t = has(s, "op_call", "aten::t", "native/Linear.cpp", 96)
    assert t.children == () and "alias" in t.detail
    has(s, "library", "at::cuda::blas::gemm", "native/cuda/Blas.cpp")


def test_out_variant_calls_pick_out_overloads(real_index_26):
    """at::dot_out(...) and tensor.dot(...) in one function are two calls: out and functional."""
    s = steps(real_index_26, "matmul", "CUDA")
    calls = {x.symbol for x in s if x.role == "op_call"}
    assert {"aten::dot", "aten::dot_out"} <= calls, calls
