"""The truth bench's own view of a kernel (bench/bench_truth.py): ATen's or a vendor's is read from
the tree's files and the name, never from atenmap's index (issue 25)."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from .conftest import FIXTURE_TREE, REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_truth", REPO / "bench" / "bench_truth.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tree_text_finds_written_and_macro_made_kernels(bench):
    t = bench.TreeText(str(FIXTURE_TREE))
    assert t.global_files("vectorized_elementwise_kernel") == ["aten/src/ATen/native/cuda/CUDALoops.cuh"]
    assert t.global_files("cdist_kernel_cuda_impl") == ["aten/src/ATen/native/cuda/DistanceKernel.cu"]  # static
    # DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...): the macro's first parameter names the kernel
    assert t.global_files("flash_fwd_kernel") == [
        "aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h"]
    assert t.global_files("kernelName") == []  # the macro's parameter, not a kernel
    assert t.has_op("add.out") and not t.has_op("add.no_such_overload")


@pytest.mark.parametrize("kernel,family", [
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_execute_kernel__5x_cublas", "cuBLAS"),
    ("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<P>(int)", "CUB"),
    ("void cusolverDnXfill_kernel<float>(cublasFillMode_t, long, long, float*, long, float)", "solver"),
    ("void getrf_pivot<getrf_params_<float, 32, 1, 32, 32, 1> >(int, int)", "solver"),
    ("void regular_fft<3u, EPT<3u>, 256u>(x)", "cuFFT"),
    ("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)", "cuDNN"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)", None),
    ("copy_info_kernel", None),
])
def test_vendor_family_from_the_name(bench, kernel, family):
    assert bench.vendor_family(kernel) == family


def test_qualifier_is_the_scope_after_the_return_type(bench):
    assert bench._qualifier("std::enable_if<true, void>::type internal::gemvx::kernel<int>(P)") == "internal::gemvx"
    assert bench._qualifier("void kernel<getrf_wo_pivot_params_<float> >(int)") == ""
