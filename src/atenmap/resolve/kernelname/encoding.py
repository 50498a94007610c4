"""What a kernel name encodes besides its code: the family of work (gemm, conv dgrad, potrf, radix sort...)
and the element type (``sgemm`` is float, ``h1688gemm`` half, ``s1688gemm`` tf32, ``bf16``...).

Note [Dtypes in kernel names]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Vendor kernels spell the type in the name: cuBLAS's legacy kernels by BLAS letter (``sgemm`` float,
``dgemm`` double, ``hgemm`` half, ``cgemm``/``zgemm`` complex), its tensor-core kernels by the MMA shape
(``h1688gemm``/``h16816gemm``: half inputs; ``s1688gemm``/``s16816gemm`` without a ``bf16`` or ``f16``
beside it: float data on TF32 tensor cores; ``i8816gemm``/``imma``: int8), and xmma/CUTLASS kernels by
``f32``/``bf16``/``f16``/``tf32``/``e4m3`` tokens. ATen's own kernels carry the C++ type as a template
argument (``CUDAFunctor_add<float>``, ``softmax_warp_forward<c10::BFloat16, ...>``): the first one
named wins, except that a reduced-precision type anywhere wins over ``float`` (the accumulate type of a
bf16 kernel is float).
"""
from __future__ import annotations

import re

from atenmap.resolve.kernelname.records import KernelName

__all__ = ["call_dtype", "dtype_of", "family_of", "FAMILY_CALLS"]

_VENDOR_DTYPES = (  # see Note [Dtypes in kernel names]; first match wins
    ("bf16", r"bf16|bfloat16"),
    ("fp8", r"e4m3|e5m2|fp8"),
    ("half", r"(?<![b\d])f16|fp16|(?<![a-z])h\d*gemm|hgemm|__half|c10::half\b"),
    ("tf32", r"tf32|(?<![a-z])s(?:1688|16816|884)gemm"),
    ("int8", r"(?<![a-z])i8|int8|imma|i8816"),
    ("complex128", r"zgemm|complex<double>"),
    ("complex64", r"cgemm|complex<float>|float2\b"),
    ("double", r"dgemm|(?<![a-z])f64|\bdouble\b"),
    ("float", r"sgemm|(?<![a-z])f32|ffma|\bfloat\b|scudnn"),
)
_VENDOR_RES = tuple((d, re.compile(p, re.I)) for d, p in _VENDOR_DTYPES)

_CPP_TYPES = (  # template-argument spellings of ATen's types
    ("bf16", r"c10::BFloat16|__nv_bfloat16"), ("half", r"c10::Half|__half\b"),
    ("fp8", r"c10::Float8_\w+"), ("complex128", r"c10::complex<double>"), ("complex64", r"c10::complex<float>"),
    ("double", r"\bdouble\b"), ("float", r"\bfloat\b"), ("int64", r"\blong\b|\bint64_t\b"),
    ("int32", r"\bint\b|\bint32_t\b"), ("int16", r"\bshort\b"), ("int8", r"\bsigned char\b|\bint8_t\b"),
    ("uint8", r"\bunsigned char\b|\buint8_t\b"), ("bool", r"\bbool\b"),
)
_CPP_RES = tuple((d, re.compile(p)) for d, p in _CPP_TYPES)
_REDUCED = ("bf16", "half", "fp8")

# BLAS/LAPACK letters in a call's name: cublasSgemm, cusolverDnDpotrf, magma_zgetrf_gpu
_CALL_LETTER = re.compile(r"(?:cublas|cusolverDn|cusolverSp|magma_)([SDCZH])(?=[a-z])", re.I)
_LETTER = {"s": "float", "d": "double", "c": "complex64", "z": "complex128", "h": "half"}


# Note [Dtypes in Tensile names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Tensile (the GEMMs of rocBLAS and hipBLASLt) names a kernel ``Cijk_<A's indices>_<B's indices>_<types>_…``:
# ``Cijk_Ailk_Bljk_SB_MT64x64x16_…``. The types token starts with the input type's letter, then the
# output's and the compute type's when they differ (``HHS``: half in, half out, float compute;
# ``BBS``: bfloat16 likewise), and a trailing ``B`` for a batched kernel (``SB``, ``HB``, ``BB``;
# ``_BH`` after it: batched, high-precision accumulate). The letters: S float, D double, H half,
# B bfloat16, C complex64, Z complex128, I8 int8. The input type is the dtype a user chose.
_TENSILE = re.compile(r"\ACijk_A[a-z]+_B[a-z]+_(?P<t>I8|4xi8|F8|B8|[SDHBCZI])")
_TENSILE_LETTER = {"S": "float", "D": "double", "H": "half", "B": "bf16", "C": "complex64", "Z": "complex128",
                   "I8": "int8", "4xi8": "int8", "F8": "fp8", "B8": "fp8", "I": "int32"}
# MIOpen's kernels end with their type (``naive_conv_fwd_nchw_float``, ``..._half``, ``_bf16``, ``fp32``)
_MIOPEN_DTYPES = (("bf16", r"bf16|bfloat16|ushort"), ("half", r"half|fp16|f16"), ("double", r"double|fp64"),
                  ("float", r"float|fp32|f32"), ("int8", r"int8"))


def dtype_of(n: KernelName) -> str:
    """The element type a kernel name encodes, "" when it does not say. See Note [Dtypes in kernel names]."""
    if n.kind in ("memcpy", "memset", "unknown"):
        return ""
    if n.kind == "library" and n.library == "Tensile":  # Note [Dtypes in Tensile names]
        m = _TENSILE.match(n.function)
        return _TENSILE_LETTER[m.group("t")] if m else ""
    if n.kind == "library" and n.library == "MIOpen":
        low = n.function.lower()
        return next((d for d, w in _MIOPEN_DTYPES if re.search(rf"(?:^|_)(?:{w})(?:_|$)", low)), "")
    if n.kind == "library" and n.library not in ("CUB", "flash-attention", "mem-efficient-attention"):
        text = n.function if not n.template_args else n.demangled.split("(")[0]
        for dtype, rx in _VENDOR_RES:
            if rx.search(text):
                return dtype
        return ""
    args = ", ".join(n.template_args) if n.template_args else n.demangled
    hits = [(m.start(), d) for d, rx in _CPP_RES for m in [rx.search(args)] if m]
    if not hits:
        return ""
    reduced = [h for h in hits if h[1] in _REDUCED]
    return min(reduced or hits)[1]


def call_dtype(callee: str) -> str:
    """The type a library call's name is for (``cublasSgemm`` float, ``magma_zgetrf_gpu`` complex128),
    "" for type-generic calls (``cublasGemmEx``, ``cublasLtMatmul``, ``at::cuda::blas::gemm``);
    ``int8``/``fp8`` for ATen's ``int8_gemm``/``scaled_gemm``."""
    last = callee.rsplit("::", 1)[-1]
    m = _CALL_LETTER.match(last)
    if m:
        return _LETTER[m.group(1).lower()]
    if "int8" in last:
        return "int8"
    if "scaled" in last:
        return "fp8"
    return ""


# ---- families: what kind of work, and which calls of ATen's can issue it ------------------------------

# (family, words in the kernel name); the first match wins. Words are searched in the lower-case name.
_BLAS = (("splitK reduce", r"splitkreduce"), ("gemv", r"gemv(?!tensor)|gemvx::"), ("dot", r"dot_kernel|reduce_1block"),
         ("trsm", r"trsm"), ("gemm", r"gemm|nvjet|matmul|xmma|cutlass|kernel2"))
_DNN = (("attention", r"sdpa|fmha|flash"), ("conv dgrad", r"dgrad"), ("conv wgrad", r"wgrad"),
        ("conv fprop", r"fprop|convolve|conv\d?d?_|winograd|scudnn|implicit|fft2d"),
        ("layout transform", r"nchwtonhwc|nhwctonchw|tensortransform"), ("batch norm", r"\bbn_|batchnorm|bn_fw|bn_bw"),
        ("gemm", r"gemm"))
_SOLVER = (("potrs", r"potrs"), ("potrf", r"potrf|cholesky"), ("getrs", r"getrs"),
           # an LU without pivoting (getrf_wo_pivot_params_) factors the blocks of cuSOLVER's Cholesky as well as
           # lu_factor(pivot=False): any factorization's, not getrf's alone
           ("factorization", r"xxtrf|wo_pivot|nopiv"), ("row interchanges", r"laswp"), ("getrf", r"getrf|getf2|piv"),
           # Note [Householder steps]: larfg/larft and block reflectors serve every orthogonal reduction
           ("ormqr", r"ormqr"), ("geqrf", r"geqr|orgqr"), ("householder", r"larf|householder"),
           ("syevd", r"syev|sytrd|stedc|steqr|ormtr|orgtr|lansy|hermitian|heev"),
           ("gesvd", r"gesvd|gebrd|svd|jacobi"), ("geev", r"gebal|geev|gehrd|hseqr|trevc|topological"),
           ("sytrf", r"sytrf|ldl|pivot_kernel|1x1inv|[lu]dinv"), ("gels", r"gels"), ("trtri", r"trtri"))
# Note [CUB tile states name the algorithm]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# CUB's init kernels are shared: ``DeviceCompactInitKernel`` prepares the decoupled look-back of a
# DeviceSelect (``ScanTileState<int>``) and of a reduction by key (``ReduceByKeyScanTileState<...>``:
# DeviceReduceByKey and DeviceRunLengthEncode, which counts runs as a reduction by key). The tile state
# in the name says which algorithm runs, before the kernel's own name (``Compact`` would read as a
# selection, ``nonzero``); ATen reduces by key through ``at::cuda::cub::run_length_encode``
# (unique_consecutive, unique with counts) and thrust's ``reduce_by_key``.
_CUB = (("reduce by key", r"reducebykeyscantilestate"),
        ("segmented radix sort", r"segmentedradixsort|segmented_sort|segmentedsort"),
        # keys only: the values' type is cub::NullType (policy_hub<float, cub::NullType, ...>)
        ("radix sort keys", r"radix::policy_hub<[^,]+, [\w:]*nulltype"),
        ("radix sort", r"radixsort|radix_sort"), ("selection", r"select|compact|partition"), ("scan", r"scan"),
        ("unique", r"unique"), ("run-length encoding", r"runlength|\brle::"), ("reduction", r"reduce"),
        ("histogram", r"histogram"), ("merge sort", r"mergesort"), ("for-each", r"\bfor|foreach"))
# Note [cuBLASLt kernels are a matmul's]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# cuBLASLt is cuBLAS's matmul library: its one routine is cublasLtMatmul, and ATen reaches it only
# through its GEMM wrappers (at::cuda::blas::gemm_and_bias, gemm_internal_cublaslt, scaled_gemm). So a
# cuBLASLt kernel whose name says no BLAS routine (``cublasLt::epilogue::impl::globalKernel``, a bias or
# activation epilogue; a split-K reduction says its own) is part of a GEMM: family ``gemm``, issued by
# the GEMM calls, not a solver's internal kernel run by cuSOLVER or MAGMA; an ``epilogue`` applies a
# bias or an activation after the product (cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS/RELU/GELU, which
# ATen asks for in gemm_and_bias: addmm and _addmm_activation), so those operators rank first.
_BLASLT = (*_BLAS[:-1], ("gemm epilogue", r"epilogue"), _BLAS[-1], ("gemm", r""))
# MIOpen's kernel names: naive_conv_fwd/bwd/wrw (forward, data and weight gradients), MIOpenConv*/
# miopenSp3AsmConv* (convolutions, direction not said), MIOpenBatchNorm*
_MIOPEN = (("batch norm", r"batchnorm"), ("conv dgrad", r"conv_bwd|_bwd_|bwd"), ("conv wgrad", r"conv_wrw|_wrw_|wrw"),
           ("conv fprop", r"conv|cvd|fwd"), ("", r""))
_BY_LIBRARY = {
    "Tensile": (("gemm", r""),), "CK": (("gemm", r"gemm"),), "rocBLAS": _BLAS, "MIOpen": _MIOPEN,
    "cuBLAS": _BLAS, "cuBLASLt": _BLASLT, "CUTLASS": _BLAS, "cuDNN": _DNN, "cuSOLVER": _SOLVER, "MAGMA": _SOLVER,
    "CUB": _CUB, "thrust": _CUB, "flash-attention": (("attention", r""),), "mem-efficient-attention": (("attention", r""),),
    "cuFFT": (("fft c2r", r"c2r"), ("fft r2c", r"r2c"), ("fft c2c", r"c2c"), ("fft", r"")),
}

# family -> the words of the ATen calls that issue it (matched in the lower-case callee and its
# enclosing function); a family not here, or matching none, keeps every call of the library.
FAMILY_CALLS: dict[str, str] = {
    "gemm": r"gemm|matmul$", "splitK reduce": r"gemm|matmul$", "gemm epilogue": r"gemm|matmul$", "gemv": r"gemv|gemm|matmul$",
    "dot": r"dot|gemm|matmul$", "trsm": r"trsm|getrs|potrs|lu_solve|cholesky_solve",  # Note [Householder steps]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# LAPACK's larfg (make a Householder reflector) and larft/larfb (apply a block of them) are the step
# of every orthogonal reduction, not of QR alone: geqrf (QR), gehrd (geev's Hessenberg reduction),
# gebrd (gesvd's bidiagonalization) and sytrd (syevd's tridiagonalization) all run them, and cuSOLVER's
# ``larfg_kernel_fast`` and ``set_tau_from_block_householders`` ran under torch.linalg.eig on an H200.
# So such a kernel is issued by the QR, eigen- and singular-value calls alike, and the operators are
# ranked QR's first, then eig, svd and eigh (FAMILY_WORDS' order), one of each among the first three.

# Note [Solves run trsm]
    # a convolution's direction is an argument of cuDNN's v8 calls (run_single_conv(CUDNN_BACKEND_OPERATION_
    # CONVOLUTION_FORWARD_DESCRIPTOR, ...)), not a word of them: every cuDNN call stays, FAMILY_WORDS ranks
    "batch norm": r"batchnorm|batch_norm",
    "potrf": r"potrf|cholesky", "potrs": r"potrs|cholesky_solve", "getrf": r"getrf|lu_factor",
    "getrs": r"getrs|lu_solve", "geqrf": r"geqrf|orgqr|ormqr|householder", "ormqr": r"ormqr",
    "householder": r"geqrf|orgqr|ormqr|householder|geev|gesvd|gesdd|syev|heev|eig|svd",  # Note [Householder steps]
    # LAPACK's ``xx`` stands for any type and matrix (xxtrf: potrf, getrf, sytrf alike); LASWP swaps the
    # rows of an LU factorization and of its solve alike
    "factorization": r"potrf|getrf|sytrf|cholesky|lu_factor|ldl",
    "row interchanges": r"getrf|getrs|lu_factor|lu_solve", "syevd": r"syev|heev|eigh",
    "gesvd": r"gesvd|svd", "geev": r"geev|eig", "sytrf": r"sytrf|ldl", "gels": r"gels|lstsq", "trtri": r"trtri|inv",
    "fft": r"exec", "fft c2r": r"exec", "fft r2c": r"exec", "fft c2c": r"exec",
    "radix sort": r"sort|radix", "radix sort keys": r"sort_keys",
    "segmented radix sort": r"sort|radix", "merge sort": r"sort", "scan": r"scan",
    "selection": r"select|flagged|nonzero|compact|partition|unique", "unique": r"unique", "reduction": r"reduce",
    "run-length encoding": r"run_length|runlength|encode", "histogram": r"histogram",
    "reduce by key": r"run_length|runlength|reduce_by_key",
}


# Note [Householder steps]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# LAPACK's larfg (make a Householder reflector) and larft/larfb (apply a block of them) are the step
# of every orthogonal reduction, not of QR alone: geqrf (QR), gehrd (geev's Hessenberg reduction),
# gebrd (gesvd's bidiagonalization) and sytrd (syevd's tridiagonalization) all run them, and cuSOLVER's
# ``larfg_kernel_fast`` and ``set_tau_from_block_householders`` ran under torch.linalg.eig on an H200.
# So such a kernel is issued by the QR, eigen- and singular-value calls alike, and the operators are
# ranked QR's first, then eig, svd and eigh (FAMILY_WORDS' order), one of each among the first three.

# Note [Solves run trsm]
# ~~~~~~~~~~~~~~~~~~~~~~
# LAPACK's solves with a factorization are two triangular solves: getrs (LU) is laswp then trsm twice,
# potrs (Cholesky) trsm twice, and cuBLAS's getrsBatched and cuSOLVER's getrs/potrs run cuBLAS's trsm
# kernels for them (``batch_trsm_left_kernel`` under torch.linalg.lu_solve on an H200). So a trsm kernel
# is issued by ATen's trsm calls and by its getrs/potrs calls alike; FAMILY_WORDS still ranks the
# operators named for a triangular solve first.

# family -> words of the operators that do that work (torch.linalg names LAPACK's routines otherwise):
# a ranking hint, as the words of ATen's own functors are (Note [Ranking operators for a kernel]).
FAMILY_WORDS: dict[str, str] = {
    "gemm epilogue": "addmm activation",  # Note [cuBLASLt kernels are a matmul's]
    "conv fprop": "cudnn convolution", "conv dgrad": "cudnn convolution transpose backward input",
    "conv wgrad": "cudnn convolution backward weight",
    # a layout transform (NCHW <-> NHWC) runs around any cuDNN convolution: forward, transposed and backward
    "layout transform": "cudnn convolution transpose backward",
    "batch norm": "cudnn miopen batch norm", "attention": "scaled dot product attention flash efficient cudnn",
    "potrf": "cholesky", "potrs": "cholesky solve", "getrf": "lu factor", "getrs": "lu solve",
    "geqrf": "qr geqrf householder product", "ormqr": "ormqr", "factorization": "cholesky lu factor ldl",
    "householder": "qr eig svd eigh householder product geqrf",  # Note [Householder steps]
    "row interchanges": "lu factor solve", "syevd": "eigh eigvalsh", "gesvd": "svd", "geev": "eig eigvals",
    "sytrf": "ldl factor", "gels": "lstsq", "trtri": "inv", "trsm": "triangular solve",
    "fft": "fft", "fft c2r": "fft c2r", "fft r2c": "fft r2c", "fft c2c": "fft c2c",
    "radix sort": "sort", "radix sort keys": "sort unique",
    "segmented radix sort": "sort", "merge sort": "sort", "scan": "cumsum",
    "selection": "nonzero unique", "unique": "unique", "run-length encoding": "unique consecutive",
    "reduce by key": "unique consecutive",
    # a solver kernel whose name says no routine: see Note [Kernels of no name]
    "": "eig eigh svd",
}


def family_of(n: KernelName) -> str:
    """What work a kernel does, as its name says: ``gemm``, ``conv dgrad``, ``potrf``, ``radix sort``,
    ``elementwise``, ``reduction``...; "" when the name does not say."""
    if n.kind == "library":
        if n.library == "NCCL":
            parts = n.function.split("_")
            return parts[1].lower() if len(parts) > 1 else "collective"
        # the algorithm a CUB policy or tile state names first (DeviceReduceByKeyKernel<...rle::encode::
        # policy_hub...> is a run-length encoding; Note [CUB tile states name the algorithm]), then the
        # function's own name (DeviceCompactInitKernel lives in detail::scan::)
        hub = re.search(r"(?:\w+::)+(?:policy_hub|ReduceByKeyScanTileState)<[^>]*", n.demangled[:600])
        texts = (hub.group(0).lower() if hub else "", n.function.lower(),
                 (n.qualname or n.demangled).lower() + " " + n.demangled[:300].lower())
        for text in texts:
            if not text:
                continue
            for family, words in _BY_LIBRARY.get(n.library or "", ()):
                if words and re.search(words, text):
                    return family
        return next((f for f, w in _BY_LIBRARY.get(n.library or "", ()) if not w), "")
    if n.kind != "kernel":
        return ""
    fn = n.function.lower()
    if "reduce" in fn:
        return "reduction"
    if "elementwise" in fn or "pointwiseapply" in fn:
        return "elementwise"
    return ""


# Note [Kernels of no name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Some libraries' internal kernels carry no namespace and no library word (``ipiv_lower_diag``,
# ``gebal_prologue_kernel``, ``find_nan_kernel``, ``kernel::partition``: cuSOLVER's, seen under
# torch.linalg on an H200). Most still say the routine (LAPACK's, the FFT's, a convolution's): tried in
# order below on a name ATen does not define. The rest are guessed: of the libraries ATen calls, cuBLAS,
# cuDNN, cuFFT, CUB, NCCL and the attention kernels name their kernels recognisably
# (resolve/libraries.py), so an unrecognised kernel over floating-point data is most likely a solver's,
# and so is a template instantiated over integers whose signature takes pointers (the index bookkeeping
# of cuSOLVER's eigensolver: ``kernel::init_scales_blocks_list<512l, 64l>(long, long*, ...)``; a Triton
# or jiterator kernel has no parameter list in its name, and a plain ``my_kernel(int*, long)`` of an
# extension no template); the answer says it is a guess. Of a solver's routines, the eigen- and
# singular-value drivers (geev, syevd, gesvd) run by far the most internal kernels (dozens a call, against
# a few for LU, Cholesky or QR, whose kernels mostly say their routine), so such a kernel's operators are
# ranked with eig, eigh and svd first (FAMILY_WORDS[""]).
_GUESS = (("cuSOLVER", _SOLVER), ("cuFFT", (("fft", r"fft|r2c|c2r|c2c|real_complex|bluestein"),)),
          ("cuDNN", (("conv dgrad", r"dgrad"), ("conv wgrad", r"wgrad"), ("conv fprop", r"conv|fprop"))),
          ("cuBLAS", (("gemv", r"gemv"), ("gemm", r"gemm"), ("trsm", r"trsm"))))


_FLOATING = re.compile(r"\b(?:float|double|float2|double2|cuComplex|cuDoubleComplex|__half|__nv_bfloat16)\b")


def guess_vendor(n: KernelName) -> tuple[str, str, bool] | None:
    """(library, family, sure) for a kernel ATen does not define: by the routine its name says
    (``getf2``, ``laswp``, ``svd`` -> cuSOLVER; ``r2c`` -> cuFFT; ``dgrad`` -> cuDNN), sure; else, for a
    kernel over floating-point data, or a template taking pointers, a guess (``sure`` false): cuSOLVER.
    See Note [Kernels of no name]."""
    text = f"{n.function} {n.demangled[:400]}".lower()
    for library, families in _GUESS:
        for family, words in families:
            if re.search(words, text):
                return library, family, True
    if _FLOATING.search(n.demangled[:2000]) or (n.template_args and _POINTER_PARAMS.search(n.demangled[:2000])):
        return "cuSOLVER", "", False
    return None


# a compiled C++ kernel's parameter list with a pointer in it: ``reduce_scaling<64l>(long, long**, long*)``
_POINTER_PARAMS = re.compile(r"\([^()]*\*[^()]*\)\s*$")
