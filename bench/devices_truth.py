"""Hand-verified steps of MPS and ROCm chains on the 2.6.0 tree (issue 36's acceptance sets).

    PYTHONPATH=src .venv/bin/python bench/devices_truth.py [--tree PATH_TO_PYTORCH_2.6.0] [--json out.json]

Which operators: drawn by a rule, never picked, from operators named in no issue's text (a yaml name,
its base name or its base without the trailing ``_`` not a word of ``issues show N`` for any N):
* MPS: the yaml entries with an ``MPS:`` dispatch, in yaml order; of the 321 not named, every 26th
  starting at the 13th (12 operators); then 4 of a second draw (every 13th from the 6th: 24
  operators, all run and looked at, these 4 checked step by step after the fixes the first set
  showed, so they measure the fixes' reach, not a before);
* ROCm (``--key CUDA --platform rocm``): the yaml entries with a ``CUDA:`` dispatch whose kernel
  function is defined in a ``native/cuda/*.cu``/``*.cpp`` file holding ``USE_ROCM``; of the 55 not
  named, every 6th starting at the 4th (8 operators).

* the patterns of issue 36's second helper (branch t41), one operator per pattern, picked to show it
  (so they measure the patterns' reach, not a draw): a kernel name built by ``fmt::format`` from a
  caller's literal (i0.out), by ``fmt::format`` into a local (_weight_int4pack_mm), by concatenation
  into a local with a ternary (searchsorted.Tensor); MPS library kernels (bmm.out's
  MPSNDArrayMatrixMultiplication, linalg_solve_triangular.out's MPSMatrixSolveTriangular); an
  ``at::index_put_out`` call of an out= overload torchgen makes (masked_scatter_).
* the pattern of branch t45, picked the same way: a kernel name a helper function returns, its
  instantiations nested macros (index.Tensor_out's index_select kernels, _index_put_impl_'s four
  index_put kernels).

What a step is: each place the operator's own code reaches that runs something on the device (an
MPSGraph operation ``[graph SELECTOR:``, ``runMPSGraph``, a Metal ``getPipelineStateForFunc`` lookup,
the ``kernel void`` it names, a Metal dispatch; a CUDA/HIP kernel launch, a library call), plus the
native function's definition. Each was read by hand in the 2.6.0 source, following the calls from
the yaml's kernel through its helpers (including helpers the index does not define, macro-made
natives and template calls). A run through another operator (``copy_``, ``fill_``: ``via``) counts
only where the operator's own work is that operator's (eye's fill_). The verdicts say what was
found wrong or missing when the set was made (session of issue 36, branch t36).

Scored: a step is found when atenmap's answer (runs, or a step of the tree) has its file and line;
an answer's line is nonexistent when its file lacks that line, or the line does not hold what the
run names (a selector, runMPSGraph, a lookup, a dispatch, a launch's or library call's name or, for
a macro use, the macro argument the name is made of). Exit status 0 whatever the score.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MPS_OPS = "aten/src/ATen/native/mps/operations/"
UTILS = "aten/src/ATen/native/mps/OperationUtils.mm"
UTILS_H = "aten/src/ATen/native/mps/OperationUtils.h"
KERNELS = "aten/src/ATen/native/mps/kernels/"
LOOPS = "aten/src/ATen/native/cuda/CUDALoops.cuh"

# (op, key, platform) -> (expected [(file, line, what)], verdict before this branch's fixes)
SETS: dict[tuple[str, str, str], tuple[list[tuple[str, int, str]], str]] = {
    ("bernoulli_.Tensor", "MPS", "cuda"): ([
        (MPS_OPS + "Distributions.mm", 326, "native bernoulli_mps_(Tensor&, const Tensor& p_, ...)"),
        (MPS_OPS + "Distributions.mm", 226, "MPSGraph lessThanWithPrimaryTensor (bernoulli_mps_impl's block)"),
        (UTILS, 712, "castTensor: castMPSTensor(..., [randomTensor dataType]) in the block, MPSDataType overload"),
        (UTILS, 716, "castTensor: castMPSTensor(..., self.scalar_type()) in random_mps_impl, ScalarType overload"),
        (MPS_OPS + "Distributions.mm", 114, "MPSGraph randomTensorWithShape (random_mps_impl<bool>)"),
        (MPS_OPS + "Distributions.mm", 152, "runMPSGraph (random_mps_impl)"),
    ], "missed 4 of 6: random_mps_impl<bool>(...) was not followed (a call with template arguments; and "
       "bernoulli_mps_impl was read first from the other overload with no hops left)"),
    ("empty_strided", "MPS", "cuda"): ([
        ("aten/src/ATen/native/mps/TensorFactory.cpp", 86, "native empty_strided_mps: an allocation, runs nothing"),
    ], "right: no runs"),
    ("logaddexp2.out", "MPS", "cuda"): ([
        (MPS_OPS + "BinaryOps.mm", 501, "native TORCH_IMPL_FUNC(logaddexp2_out_mps)"),
        (MPS_OPS + "BinaryOps.mm", 505, "MPSGraph additionWithPrimaryTensor, exponentBase2WithTensor"),
        (MPS_OPS + "BinaryOps.mm", 506, "MPSGraph exponentBase2WithTensor"),
        (MPS_OPS + "BinaryOps.mm", 508, "MPSGraph logarithmBase2WithTensor"),
        (UTILS, 716, "castTensor (binaryOpTensor's castMPSTensor to a ScalarType)"),
        (MPS_OPS + "BinaryOps.mm", 183, "runMPSGraph (binaryOpTensor)"),
    ], "right"),
    ("reciprocal.out", "MPS", "cuda"): ([
        (MPS_OPS + "UnaryOps.mm", 226, "native made by CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC; its "
                                       "[mpsGraph reciprocalWithTensor:] (func_stub##WithTensor)"),
        (UTILS, 716, "castTensor (unary_op_noresize, integer input to a float output)"),
        (MPS_OPS + "UnaryOps.mm", 118, "runMPSGraph (unary_op_noresize)"),
    ], "missed the operation itself (a send spelled by the macro); listed OperationUtils.h:420, "
       "mtl_dispatch1DJob's definition, as a Metal dispatch"),
    ("tanh.out", "MPS", "cuda"): ([
        (MPS_OPS + "UnaryKernel.mm", 73, "native TORCH_IMPL_FUNC(tanh_out_mps)"),
        (MPS_OPS + "UnaryKernel.mm", 35, "Metal lookup name + \"_kernel\" (name = \"tanh\")"),
        (MPS_OPS + "UnaryKernel.mm", 33, "Metal lookup name + \"_complex_kernel\" (complex input)"),
        ("aten/src/ATen/native/mps/UnaryConstants.h", 53, "kernel void tanh_kernel (UNARY_KERNEL_TEMPLATE)"),
        (MPS_OPS + "UnaryKernel.mm", 52, "mtl_dispatch1DJob"),
        (UTILS_H, 427, "[encoder dispatchThreads:] in mtl_dispatch1DJob"),
    ], "missed the kernel's definition (the name is the caller's literal, the source a header's string); "
       "listed OperationUtils.h:420 (mtl_dispatch1DJob's definition) as a dispatch"),
    ("scatter.src_out", "MPS", "cuda"): ([
        (MPS_OPS + "ScatterGather.mm", 302, "native TORCH_IMPL_FUNC(scatter_src_out_mps)"),
        *[(MPS_OPS + "ScatterGather.mm", n, "MPSGraph operation in scatter_mps_general")
          for n in (185, 186, 188, 209, 212, 232, 255, 260, 261, 264, 270, 274, 276)],
        (UTILS, 716, "castTensor (castMPSTensor to output.scalar_type())"),
        (MPS_OPS + "ScatterGather.mm", 298, "runMPSGraph"),
    ], "missed all 15: scatter_mps_general (ScatterGather.mm:111) has no function fact (tree-sitter-cpp "
       "cannot fit its body)"),
    ("triu_indices", "MPS", "cuda"): ([
        (MPS_OPS + "TriangularOps.mm", 163, "native triu_indices_mps"),
        (MPS_OPS + "TriangularOps.mm", 187, "Metal lookup \"triu_indices_\" + scalarToMetalTypeString(tensor)"),
        ("aten/src/ATen/native/mps/kernels/TriangularOps.metal", 183, "kernel void triu_indices"),
        ("aten/src/ATen/native/mps/kernels/TriangularOps.metal", 219, "INSTANTIATE_TRI_INDICES(triu, long): "
                                                                     "host_name triu_indices_long (and :220, int)"),
        (MPS_OPS + "TriangularOps.mm", 194, "mtl_dispatch1DJob"),
        (UTILS_H, 427, "[encoder dispatchThreads:] in mtl_dispatch1DJob"),
    ], "found all; also listed OperationUtils.h:420 (mtl_dispatch1DJob's definition) as a dispatch"),
    ("lerp.Tensor_out", "MPS", "cuda"): ([
        (MPS_OPS + "Lerp.mm", 14, "native TORCH_IMPL_FUNC(lerp_Tensor_mps)"),
        (MPS_OPS + "Lerp.mm", 32, "MPSGraph subtractionWithPrimaryTensor"),
        (MPS_OPS + "Lerp.mm", 33, "MPSGraph multiplicationWithPrimaryTensor"),
        (MPS_OPS + "Lerp.mm", 34, "MPSGraph additionWithPrimaryTensor"),
        (MPS_OPS + "Lerp.mm", 45, "runMPSGraph"),
    ], "right"),
    ("normal.Tensor_float", "MPS", "cuda"): ([
        (MPS_OPS + "Distributions.mm", 280, "native normal_mps(const Tensor& mean, double std, ...)"),
        (MPS_OPS + "Distributions.mm", 181, "MPSGraph multiplicationWithPrimaryTensor (normal_mps_impl's block)"),
        (MPS_OPS + "Distributions.mm", 187, "MPSGraph additionWithPrimaryTensor"),
        (MPS_OPS + "Distributions.mm", 114, "MPSGraph randomTensorWithShape (random_mps_impl<double>)"),
        (MPS_OPS + "Distributions.mm", 152, "runMPSGraph"),
    ], "missed 2 of 5: random_mps_impl<double>(...) not followed"),
    ("hardtanh_backward.grad_input", "MPS", "cuda"): ([
        (MPS_OPS + "Activation.mm", 1865, "native hardtanh_backward_out_mps"),
        *[(MPS_OPS + "Activation.mm", n, "MPSGraph operation")
          for n in (1889, 1892, 1895, 1898, 1901, 1904, 1907, 1911, 1915, 1918)],
        (MPS_OPS + "Activation.mm", 1934, "runMPSGraph"),
    ], "right"),
    ("reflection_pad1d_backward.grad_input", "MPS", "cuda"): ([
        (MPS_OPS + "Pad.mm", 331, "native TORCH_IMPL_FUNC(reflection_pad1d_backward_out_mps)"),
        (MPS_OPS + "Pad.mm", 278, "MPSGraph padGradientWithIncomingGradientTensor (pad_out_template, backward)"),
        (MPS_OPS + "Pad.mm", 287, "MPSGraph sliceGradientTensor"),
        (MPS_OPS + "Pad.mm", 288, "MPSGraph shapeOfTensor"),
        (MPS_OPS + "Pad.mm", 313, "runMPSGraph"),
    ], "right (the forward's padTensor/sliceTensor are listed too: same template)"),
    ("_upsample_nearest_exact2d.out", "MPS", "cuda"): ([
        (MPS_OPS + "UpSample.mm", 381, "native TORCH_IMPL_FUNC(_upsample_nearest_exact2d_out_mps)"),
        (MPS_OPS + "UpSample.mm", 115, "MPSGraph constantWithData (scale_w > 0)"),
        (MPS_OPS + "UpSample.mm", 133, "MPSGraph resizeNearestWithTensor (scale and offset)"),
        (MPS_OPS + "UpSample.mm", 148, "MPSGraph resizeNearestWithTensor (sizes)"),
        (MPS_OPS + "UpSample.mm", 213, "runMPSGraph"),
    ], "missed all 4 runs: upsample_out_template (UpSample.mm:43) has no function fact"),
    # MPS, a second draw (every 13th from the 6th of the same list), checked after the fixes above
    ("tanh_backward.grad_input", "MPS", "cuda"): ([
        (MPS_OPS + "Activation.mm", 492, "native TORCH_IMPL_FUNC(tanh_backward_out_mps)"),
        *[(MPS_OPS + "Activation.mm", n, "MPSGraph operation") for n in (509, 510, 511, 514)],
        (MPS_OPS + "Activation.mm", 528, "runMPSGraph"),
    ], "right"),
    ("trunc.out", "MPS", "cuda"): ([
        (MPS_OPS + "UnaryOps.mm", 169, "native TORCH_IMPL_FUNC(trunc_out_mps)"),
        (MPS_OPS + "UnaryOps.mm", 152, "MPSGraph truncateWithTensor (trunc_tensor, from the block)"),
        (UTILS, 716, "castTensor (unary_op_noresize)"),
        (MPS_OPS + "UnaryOps.mm", 118, "runMPSGraph (unary_op_noresize)"),
    ], "right"),
    ("lt.Scalar_out", "MPS", "cuda"): ([
        (MPS_OPS + "BinaryOps.mm", 370, "native made by CREATE_MPS_STRUCTURED_BOOLEAN_OP_FUNC; its "
                                       "[mpsGraph lessThanWithPrimaryTensor:] (func_stub##WithPrimaryTensor)"),
        (UTILS, 716, "castTensor (binaryOpTensor)"),
        (MPS_OPS + "BinaryOps.mm", 183, "runMPSGraph (binaryOpScalar -> binaryOpTensor)"),
    ], "right after the macro fix"),
    ("digamma.out", "MPS", "cuda"): ([
        (MPS_OPS + "Gamma.mm", 435, "native TORCH_IMPL_FUNC(digamma_out_mps)"),
        (MPS_OPS + "Gamma.mm", 392, "Metal lookup getPipelineStateForFunc(fname) in getCPLState (fname = \"digamma\")"),
        (MPS_OPS + "Gamma.mm", 340, "kernel void digamma (Gamma.mm's own R\"METAL( source)"),
        (MPS_OPS + "Gamma.mm", 463, "mtl_dispatch1DJob"),
        (UTILS_H, 427, "[encoder dispatchThreads:] in mtl_dispatch1DJob"),
    ], "missed the definition until .mm files' own Metal source was searched"),
    # MPS, the patterns of branch t41 (picked, one per pattern; verdicts: main before them)
    ("i0.out", "MPS", "cuda"): ([
        (MPS_OPS + "SpecialOps.mm", 44, "stub kernel i0_kernel_mps: unary_kernel_mps(iter, \"i0\")"),
        (MPS_OPS + "SpecialOps.mm", 28, "Metal lookup getPipelineStateForFunc( / fmt::format(\"{}_{}_{}\", name, ...) "
                                        "on the next line"),
        (KERNELS + "SpecialOps.metal", 135, "kernel i0: `void kernel` (:134), then `i0(`"),
        (KERNELS + "SpecialOps.metal", 155, "REGISTER_I0_I1(float, float): host_name i0_float_float"),
        (MPS_OPS + "SpecialOps.mm", 36, "mtl_dispatch1DJob"),
        (UTILS_H, 427, "[encoder dispatchThreads:] in mtl_dispatch1DJob"),
    ], "missed the lookup (its argument on the next line), the definition and the instantiations"),
    ("_weight_int4pack_mm", "MPS", "cuda"): ([
        (MPS_OPS + "Quantized.mm", 72, "native _weight_int4pack_mm_mps"),
        (MPS_OPS + "Quantized.mm", 112, "Metal lookup getPipelineStateForFunc(kernel), kernel = "
                                        "fmt::format(\"int4pack_mm_{}_{}\", qGroupSize, ...) at :111"),
        (KERNELS + "Quantized.metal", 119, "kernel void int4pack_mm (template)"),
        (KERNELS + "Quantized.metal", 222, "INSTANTIATE_INT4MV(float, 32): host_name int4pack_mm_32_float"),
        (MPS_OPS + "Quantized.mm", 116, "[computeEncoder dispatchThreads:]"),
    ], "missed the definition and the instantiations (a name built by fmt::format into a local)"),
    ("searchsorted.Tensor", "MPS", "cuda"): ([
        (MPS_OPS + "Bucketization.mm", 130, "native searchsorted_mps"),
        (MPS_OPS + "Bucketization.mm", 50, "Metal lookup getPipelineStateForFunc(kernel), kernel = \"searchsorted_\" + "
                                           "... + (sorter.defined() ? \"_sorter\" : \"\") at :48-49"),
        (KERNELS + "Bucketization.metal", 121, "kernel void searchsorted"),
        (KERNELS + "Bucketization.metal", 89, "kernel void searchsorted_sorter (a sorter given)"),
        (KERNELS + "Bucketization.metal", 179, "REGISTER_SEARCHSORTED_OP(float, int): both host names"),
        (MPS_OPS + "Bucketization.mm", 66, "[computeEncoder dispatchThreadgroups:]"),
    ], "missed both definitions and the instantiations"),
    ("bmm.out", "MPS", "cuda"): ([
        (MPS_OPS + "LinearAlgebra.mm", 911, "native TORCH_IMPL_FUNC(bmm_out_mps)"),
        (MPS_OPS + "LinearAlgebra.mm", 661, "MPSGraph transposeTensor"),
        (MPS_OPS + "LinearAlgebra.mm", 664, "MPSGraph matrixMultiplicationWithPrimaryTensor"),
        (MPS_OPS + "LinearAlgebra.mm", 677, "runMPSGraph"),
        (MPS_OPS + "LinearAlgebra.mm", 510, "[MPSNDArrayMatrixMultiplication alloc] (tiled_bmm_out_mps_impl, macOS 15+, "
                                            "a result over 2^32 elements)"),
        (MPS_OPS + "LinearAlgebra.mm", 581, "[matmul encodeToCommandEncoder:]"),
    ], "missed the MPS library kernel and its encode"),
    ("linalg_solve_triangular.out", "MPS", "cuda"): ([
        (MPS_OPS + "LinearAlgebra.mm", 951, "native linalg_solve_triangular_mps_out"),
        (MPS_OPS + "LinearAlgebra.mm", 729, "[MPSMatrixSolveTriangular alloc] (linalg_solve_triangular_mps_impl)"),
        (MPS_OPS + "LinearAlgebra.mm", 767, "[filter encodeToCommandBuffer:]"),
    ], "missed both (no MPSGraph in its own code)"),
    ("masked_scatter_", "MPS", "cuda"): ([
        (MPS_OPS + "Indexing.mm", 863, "native masked_scatter__mps"),
        (MPS_OPS + "Indexing.mm", 245, "index_put_kernel_mps (at::index_put_out -> index_put -> index_put_ -> "
                                       "_index_put_impl_ -> index_put_stub)"),
        (MPS_OPS + "Indexing.mm", 150, "Metal lookup getPipelineStateForFunc(indexFunction) (dispatchIndexKernel)"),
        (MPS_OPS + "Indexing.mm", 180, "[computeEncoder dispatchThreads:]"),
        (MPS_OPS + "Indexing.mm", 79, "kernel_index_offsets lookup (generateKernelDataOffsets)"),
        (MPS_OPS + "Indexing.mm", 89, "its dispatch"),
    ], "missed all but the native: at::index_put_out names an out= overload only torchgen makes "
       "(autogen: index_put.out), which reached nothing"),
    # MPS, the pattern of branch t45 (picked: a kernel name a helper function returns; verdicts: main before it)
    ("index.Tensor_out", "MPS", "cuda"): ([
        (MPS_OPS + "Indexing.mm", 238, "stub kernel index_kernel_mps: dispatchIndexKernel(..., /*index_select=*/true, ...)"),
        (MPS_OPS + "Indexing.mm", 150, "Metal lookup getPipelineStateForFunc(indexFunction), indexFunction = "
                                       "getIndexFunctionName(...) at :148, built by = and += at :104-117"),
        (KERNELS + "Indexing.metal", 11, "kernel void index_select (template)"),
        (KERNELS + "Indexing.metal", 138, "REGISTER_INDEX_OP_ALL_DTYPES(select): eight REGISTER_INDEX_OP uses, "
                                          "host_name index_select_8bit_idx32 ..."),
        (MPS_OPS + "Indexing.mm", 180, "[computeEncoder dispatchThreads:]"),
        (MPS_OPS + "Indexing.mm", 79, "kernel_index_offsets lookup (generateKernelDataOffsets)"),
        (KERNELS + "Indexing.metal", 170, "kernel void kernel_index_offsets"),
        (KERNELS + "Indexing.metal", 186, "host_name kernel_index_offsets_32"),
        (MPS_OPS + "Indexing.mm", 89, "mtl_dispatch1DJob"),
        (UTILS_H, 427, "[encoder dispatchThreads:] in mtl_dispatch1DJob"),
    ], "missed index_select's definition and instantiations (a name a helper returns, nested macros)"),
    ("_index_put_impl_", "MPS", "cuda"): ([
        (MPS_OPS + "Indexing.mm", 245, "stub kernel index_put_kernel_mps: /*index_select=*/false, accumulate"),
        (MPS_OPS + "Indexing.mm", 150, "Metal lookup getPipelineStateForFunc(indexFunction)"),
        (KERNELS + "Indexing.metal", 92, "kernel void index_put"),
        (KERNELS + "Indexing.metal", 139, "REGISTER_INDEX_OP_ALL_DTYPES(put)"),
        (KERNELS + "Indexing.metal", 66, "kernel void index_put_serial (deterministic algorithms)"),
        (KERNELS + "Indexing.metal", 167, "REGISTER_SINGLE_THREADED_INDEX_OP_ALL_DTYPES(put_serial)"),
        (KERNELS + "Indexing.metal", 248, "kernel void atomic_index_put_accumulate (accumulate, float)"),
        (KERNELS + "Indexing.metal", 275, "host_name index_put_accumulate_32bit_float_idx32"),
        (KERNELS + "Indexing.metal", 203, "kernel void index_put_accumulate_native_dtypes (accumulate, int)"),
        (KERNELS + "Indexing.metal", 297, "host_name index_put_accumulate_32bit_int_idx32"),
        (MPS_OPS + "Indexing.mm", 180, "[computeEncoder dispatchThreads:]"),
    ], "missed the four kernels' definitions and instantiations (a name a helper returns, nested macros)"),
    # ROCm: --key CUDA --platform rocm
    ("native_dropout_backward", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/Dropout.cu", 399, "native native_dropout_backward_cuda"),
        (LOOPS, 158, "vectorized_elementwise_kernel<4>"), (LOOPS, 163, "vectorized_elementwise_kernel<2>"),
        (LOOPS, 172, "unrolled_elementwise_kernel (vec_size 1)"),
        (LOOPS, 230, "elementwise_kernel: launch_legacy_kernel, the #ifdef USE_ROCM side of gpu_kernel_impl's "
                     "contiguous dynamic cast (CUDA: launch_unrolled_kernel, :201, not on ROCm)"),
    ], "right"),
    ("embedding_renorm_", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/Embedding.cu", 347, "native embedding_renorm_cuda_"),
        ("aten/src/ATen/native/cuda/Embedding.cu", 363, "cuda::cub::unique"),
        ("aten/src/ATen/cuda/cub.cuh", 585, "DeviceSelect::Unique (NO_ROCM(at_cuda_detail)::cub: ::cub on ROCm)"),
        ("aten/src/ATen/native/cuda/Embedding.cu", 381, "renorm_kernel<<<>>>"),
    ], "right (the name keeps at_cuda_detail::, which NO_ROCM drops on ROCm)"),
    ("eye.out", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/TensorFactories.cu", 34, "native eye_out_cuda(n, result)"),
        ("aten/src/ATen/native/cuda/Resize.cpp", 36, "hipMemcpyAsync (resize_ of a storage that has data)"),
        (LOOPS, 158, "fill_'s vectorized_elementwise_kernel<4>"), (LOOPS, 163, "<2>"),
        (LOOPS, 172, "unrolled_elementwise_kernel"), (LOOPS, 230, "elementwise_kernel"),
    ], "right"),
    ("native_layer_norm_backward", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/layer_norm_kernel.cu", 1172, "cuComputeGradInput (#ifdef USE_ROCM, M >= 32768)"),
        ("aten/src/ATen/native/cuda/layer_norm_kernel.cu", 1184, "layer_norm_grad_input_kernel (ROCm, else)"),
        ("aten/src/ATen/native/cuda/layer_norm_kernel.cu", 1219, "GammaBetaBackwardSimpleCUDAKernel (M < 128)"),
        ("aten/src/ATen/native/cuda/layer_norm_kernel.cu", 1244, "cuComputePartGradGammaBeta (#if defined(USE_ROCM))"),
        ("aten/src/ATen/native/cuda/layer_norm_kernel.cu", 1258, "cuComputeGradGammaBeta"),
    ], "right"),
    ("range.out", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/RangeFactories.cu", 60, "elementwise_kernel_with_index<int>"),
        ("aten/src/ATen/native/cuda/RangeFactories.cu", 63, "elementwise_kernel_with_index<int64_t>"),
    ], "right"),
    ("_efficientzerotensor", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/TensorFactories.cu", 63, "native _efficientzerotensor_cuda: an allocation"),
    ], "right: no runs"),
    ("masked_fill_.Tensor", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/Indexing.cu", 1729, "native masked_fill__cuda(Tensor value)"),
        (LOOPS, 158, "masked_fill_kernel's gpu_kernel: vectorized_elementwise_kernel<4>"), (LOOPS, 163, "<2>"),
        (LOOPS, 172, "unrolled_elementwise_kernel"), (LOOPS, 230, "elementwise_kernel"),
    ], "right (value.item()'s device-to-host copy is not counted: item is a metadata accessor by design, "
       "resolve/opcalls.py ACCESSORS, on every platform)"),
    ("triu_indices", "CUDA", "rocm"): ([
        ("aten/src/ATen/native/cuda/TensorFactories.cu", 382, "triu_indices_kernel<<<>>>"),
    ], "right"),
}


def _places(chain) -> tuple[set[tuple[str, int]], list]:
    """(file, line) of every run and tree step of ``chain``'s keys, and the runs."""
    found: set[tuple[str, int]] = set()
    runs = list(chain.runs)
    for r in runs:
        if r.loc is not None:
            found.add((r.loc.file, r.loc.line))
    stack = [s for kc in chain.keys for s in kc.steps]
    while stack:
        s = stack.pop()
        if s.file and s.line:
            found.add((s.file, s.line))
        stack += list(s.children)
    return found, runs


_TOKEN = re.compile(r"[A-Za-z_]\w*")


def _holds(text: str, name: str) -> bool:
    """Whether a source line holds what a run named ``name`` says is there."""
    if name.startswith("MPSGraph "):
        sel = name.split()[1]
        macro_use = re.match(r"\s*[A-Z_][A-Z0-9_]*\(", text)
        return sel in text or bool(macro_use) and any(sel.startswith(w) for w in _TOKEN.findall(text) if len(w) > 2)
    if name.startswith("MPS "):  # an MPS library kernel or its encode
        return name.split()[1] in text
    if name.startswith("Metal kernel "):
        return "getPipelineStateForFunc" in text
    if name == "Metal dispatch":
        return re.search(r"(?<!void )\bmtl_dispatch1DJob\s*\(|dispatchThread", text) is not None
    if name.startswith("kernel void "):
        return name.split()[2] in text
    if name.startswith("instantiated as "):  # a host_name line, or a use of the macro that writes one
        return "host_name" in text or re.match(r"\s*[A-Z_][A-Z0-9_]*\(", text) is not None
    bare = name.split(" (")[0].split("<")[0].rsplit("::", 1)[-1]
    return bare in text


def score(tree: Path, index) -> dict:
    rows, total, hit, bad = [], 0, 0, []
    for (op, key, platform), (expected, verdict) in SETS.items():
        chain = index.chain(op, keys=[key], platform=platform)
        found, runs = _places(chain)
        missed = [(f, n, what) for f, n, what in expected if (f, n) not in found]
        total += len(expected)
        hit += len(expected) - len(missed)
        for r in runs:
            if r.loc is None:
                continue
            path = tree / r.loc.file
            lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
            if not (0 < r.loc.line <= len(lines)) or not _holds(lines[r.loc.line - 1], r.name):
                bad.append((op, key, platform, r.loc.file, r.loc.line, r.name))
        rows.append({"op": op, "key": key, "platform": platform, "expected": len(expected),
                     "missed": [f"{f}:{n} {what}" for f, n, what in missed], "verdict_before": verdict})
    return {"steps": total, "found": hit, "share": hit / total if total else 1.0,
            "nonexistent": [f"{op} {key}/{platform}: {f}:{n} {name}" for op, key, platform, f, n, name in bad],
            "operators": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0"))
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import open_index

    tree = Path(args.tree)
    with open_index(tree) as index:
        out = score(tree, index)
    for row in out["operators"]:
        print(f"{row['op']:40} {row['key']:5} {row['platform']:5} {row['expected'] - len(row['missed'])}/{row['expected']}")
        for m in row["missed"]:
            print(f"    missed {m}")
    print(f"steps found: {out['found']}/{out['steps']} ({100 * out['share']:.1f}%)")
    print(f"answers at nonexistent lines: {len(out['nonexistent'])}")
    for b in out["nonexistent"]:
        print(f"    {b}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
