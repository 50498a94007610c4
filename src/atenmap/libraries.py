"""Calls that leave ATen for a vendor library: cuBLAS, cuDNN, CUB, BLAS, oneDNN, ...

A chain ends at such a call: the kernel that runs is the library's, not ATen's.
"""
from __future__ import annotations

import re

# (library, pattern on the callee as written, templates removed). First match wins.
_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("cuBLASLt", re.compile(r"(^|::)cublasLt\w+$")),
    ("cuBLAS", re.compile(r"(^|::)cublas\w+$")),
    ("cuBLAS (at::cuda::blas)", re.compile(r"(^|::)cuda::blas::\w+$|^blas::(gemm|bgemm|gemv|dot|vdot|scaled_gemm|int8_gemm|gemm_and_bias|trsm|trsmBatched|getrsBatched|getrfBatched|geqrfBatched|gelsBatched|gemm_internal|bgemm_internal)\w*$")),
    ("cuDNN", re.compile(r"(^|::)cudnn[A-Z]\w*$|(^|::)cudnn_frontend::")),
    ("cuFFT", re.compile(r"(^|::)cufft\w+$")),
    ("cuSOLVER", re.compile(r"(^|::)cusolver\w+$|(^|::)cuda::solver::\w+$")),
    ("cuSPARSE", re.compile(r"(^|::)cusparse\w+$")),
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


def library_of(qual: str) -> str | None:
    """Library name for a call, or None for ordinary code."""
    for lib, pat in _PATTERNS:
        if pat.search(qual):
            return lib
    return None
