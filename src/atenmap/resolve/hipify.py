"""The name a ROCm build compiles where ATen's source spells a CUDA library call (``--platform rocm``).

Note [hipify names]
~~~~~~~~~~~~~~~~~~~
A ROCm build runs ``torch/utils/hipify`` over ATen's CUDA sources before compiling them: each
identifier of its table (``cuda_to_hip_mappings.py``) is replaced, so ``cublasSgemm`` in
aten/src/ATen/cuda/CUDABlas.cpp is compiled as ``hipblasSgemm``, ``cublasLtMatmul`` as
``hipblasLtMatmul`` and ``cudaMemcpyAsync`` as ``hipMemcpyAsync``. The index holds the source as
written, so a ROCm chain shows the CUDA spelling and, beside it, the name that runs. Only the three
prefix renames the table applies wholesale are read here, not the table itself:

* ``cublasLt…`` -> ``hipblasLt…`` (hipBLASLt), ``cublas…`` -> ``hipblas…`` (hipBLAS; 2.6.0's table maps
  ``cublasSgemm``, ``cublasGemmEx``, ``cublasSetStream`` so);
* ``cuda…`` -> ``hip…`` for the runtime API (``cudaMemcpyAsync``, ``cudaMemsetAsync``).

cuDNN is not renamed: hipify has no MIOpen equivalent for cuDNN's API, and a ROCm build does not
compile the cuDNN code at all (Note [What a ROCm build leaves out] in rocmbuild.py); MIOpen's calls
are their own lines in native/miopen/. Qualified names (``CUDACachingAllocator::memcpyAsync``,
``at::cuda::blas::gemm``) are ATen's own and keep their spelling, but for CUB's.

Note [CUB on ROCm]
~~~~~~~~~~~~~~~~~~
aten/src/ATen/cuda/cub.cuh calls CUB as ``NO_ROCM(at_cuda_detail)::cub::DeviceSelect::Unique``: a CUDA
build wraps CUB in the namespace ``at_cuda_detail`` (``NO_ROCM(x)`` is ``x``), a ROCm build empties
the macro (``#define NO_ROCM(x)`` under ``#ifdef USE_ROCM``), which leaves ``::cub::DeviceSelect::Unique``,
and hipify's table maps ``cub::`` to ``hipcub::`` (hipCUB, over rocPRIM). The index holds the
macro's CUDA side, so a call spelled ``at_cuda_detail::cub::X``, ``::cub::X`` or ``cub::X`` is
``hipcub::X`` on ROCm. ATen's own wrappers of the same words (``at::cuda::cub::unique``, written
``cuda::cub::unique``) keep their spelling.
"""
from __future__ import annotations

import re

__all__ = ["CUDA_LIKE", "rocm_name", "shown"]

CUDA_LIKE = ("cublas%", "::cublas%")  # SQL LIKE: the BLAS calls rocm_name renames into hipBLAS/hipBLASLt

_RENAMES = ((re.compile(r"^cublasLt(?=[A-Z])"), "hipblasLt"), (re.compile(r"^cublas(?=[A-Z])"), "hipblas"),
            (re.compile(r"^cuda(?=[A-Z])"), "hip"))
_CUB = re.compile(r"(?:at_cuda_detail::)?cub::(?=\w)")  # Note [CUB on ROCm]


def rocm_name(name: str) -> str | None:
    """The name hipify gives a CUDA library call spelled ``name`` (``cublasSgemm`` -> ``hipblasSgemm``,
    ``at_cuda_detail::cub::DeviceSelect::Unique`` -> ``hipcub::DeviceSelect::Unique``), or None when it
    keeps or has no such rename (cuDNN, qualified ATen names). See Notes [hipify names], [CUB on ROCm]."""
    bare = name[2:] if name.startswith("::") else name
    cub = _CUB.match(bare)
    if cub is not None:  # Note [CUB on ROCm]
        return "hipcub::" + bare[cub.end():]
    if "::" in bare:
        return None
    for pattern, prefix in _RENAMES:
        if pattern.match(bare):
            return pattern.sub(prefix, bare, count=1)
    return None


def shown(name: str) -> str:
    """``cublasSgemm (hipblasSgemm on ROCm)``; ``name`` itself when hipify keeps it."""
    rocm = rocm_name(name)
    return f"{name} ({rocm} on ROCm)" if rocm else name
