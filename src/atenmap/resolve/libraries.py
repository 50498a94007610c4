"""Calls that leave ATen for a vendor library: cuBLAS, cuDNN, CUB, BLAS, oneDNN, ...

A chain ends at such a call: the kernel that runs is the library's, not ATen's.
"""
from __future__ import annotations

import re

# (library, pattern on the callee as written, templates removed). First match wins.
_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("cuBLASLt", re.compile(r"(^|::)cublasLt[A-Z]\w*$")),
    ("cuBLAS", re.compile(r"(^|::)cublas[A-Z]\w*$")),
    ("cuBLAS (at::cuda::blas)", re.compile(r"(^|::)(cuda::)?blas::(gemm|bgemm|gemv|dot|vdot|scaled_gemm|int8_gemm|gemm_and_bias|trsm|trsmBatched|getrsBatched|getrfBatched|geqrfBatched|gelsBatched|gemm_internal|bgemm_internal)\w*$")),
    ("cuDNN", re.compile(r"(^|::)cudnn[A-Z]\w*$|(^|::)cudnn_frontend::")),
    ("cuFFT", re.compile(r"(^|::)cufft[A-Z]\w*$")),
    ("cuSOLVER", re.compile(r"(^|::)cusolver[A-Z]\w*$|(^|::)cuda::solver::\w+$")),
    ("cuSPARSE", re.compile(r"(^|::)cusparse[A-Z]\w*$")),
    ("CUB", re.compile(r"(^|::)cub::\w+|(^|::)cuda::cub::\w+$")),
    ("thrust", re.compile(r"(^|::)thrust::\w+")),
    ("MIOpen", re.compile(r"(^|::)miopen[A-Z]\w*$")),
    ("MAGMA", re.compile(r"(^|::)magma_\w+$")),
    ("CPU BLAS (at::native::cpublas)", re.compile(r"(^|::)cpublas::\w+$")),
    ("BLAS", re.compile(r"^(s|d|c|z)(gemm|gemv|axpy|dot|scal|trsm|syrk)_$|^cblas_\w+$")),
    ("LAPACK", re.compile(r"^(s|d|c|z)(getrf|getrs|geqrf|potrf|potrs|gesdd|syevd|heevd|gels\w*|orgqr|ungqr|ormqr|trtrs)_$|^lapack\w+$")),
    ("oneDNN", re.compile(r"(^|::)(dnnl|ideep)::|(^|::)mkldnn_(matmul|gemm\w*)$")),
    ("MKL", re.compile(r"^mkl_\w+$|^Dfti[A-Z]\w*$|^v[sdcz][A-Z][a-z]\w*$")),
]


# Names in those namespaces that launch nothing: iterators, functors, policies, tuples.
_NOT_LAUNCHING = re.compile(
    r"::(device_ptr|device_pointer_cast|raw_pointer_cast|make_\w+_iterator|\w+_iterator|par|par_nosync|"
    r"equal_to|not_equal_to|greater|greater_equal|less|less_equal|maximum|minimum|plus|minus|multiplies|"
    r"identity|negate|get|tie|make_tuple|tuple|pair|make_pair|get_num_bits|\w+_t)$")


def library_of(qual: str) -> str | None:
    """Library name for a call, or None for ordinary code (and for library helpers that launch
    no work: thrust::device_ptr, thrust::make_counting_iterator, cub::get_num_bits...)."""
    if _NOT_LAUNCHING.search(qual):
        return None
    for lib, pat in _PATTERNS:
        if pat.search(qual):
            return lib
    return None
