"""What a kernel name says in words, and what the names that are not kernels are.

* memory operations a profiler shows beside kernels (``Memcpy DtoD (Device -> Device)``, ``Memset
  (Device)``, ``cudaMemcpyAsync``): kind ``memcpy`` / ``memset`` and what usually issues them;
* library kernels: *which* library comes from the table in :mod:`atenmap.resolve.libraries`
  (:data:`LIBRARY_RULES` is its kernel rules, in order); the sentence describing the kernel is made here;
* ATen's own kernels: the sentence naming the functor or lambda they run.
"""
from __future__ import annotations

import re
from typing import Callable

from atenmap.resolve.kernelname.records import LambdaRef
from atenmap.resolve.libraries import ATEN_NAMESPACES, LIBRARIES, KernelFacts, KernelRule, match_kernel

__all__ = ["LIBRARY_RULES", "classify_library", "kernel_detail", "non_kernel"]

# Every kernel rule of the library table, first match first (see Note [Order of the table] there).
LIBRARY_RULES: tuple[KernelRule, ...] = tuple(rule for lib in LIBRARIES for rule in lib.kernels)

# ---- non-kernels: memory operations and host-side names ---------------------------------------------

# torch.profiler / Kineto (CUPTI activity names): "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
_PROFILER_MEMCPY_RE = re.compile(
    r"Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA|Unknown)\b(?: \((?P<src>\w+) -> (?P<dst>\w+)\))?\Z"
)
_PROFILER_MEMSET_RE = re.compile(r"Memset(?: \((?P<where>\w+)\))?\Z")
# Nsight Systems / nvprof: "[CUDA memcpy HtoD]", "[CUDA memcpy Host-to-Device]", "[CUDA memset]".
_NSYS_MEM_RE = re.compile(r"\[CUDA (?:Unified Memory )?(?P<op>memcpy|memset)(?: (?P<rest>[^\]]*))?\]\Z", re.I)
# TensorFlow / XLA traces: "MemcpyH2D", "MemcpyD2D", "Memset".
_XLA_MEMCPY_RE = re.compile(r"Memcpy(?P<dir>H2D|D2H|D2D|P2P)\Z")
# Host-side API calls: "cudaMemcpyAsync", "cuMemsetD32Async", "cudaLaunchKernel", "ncclAllReduce".
_HOST_API_RE = re.compile(
    r"(?:cuda|cu|cublas(?:Lt)?|cudnn|cufft|cusolver(?:Dn|Sp)?|cusparse|nvrtc)[A-Z][A-Za-z0-9_]*"
    r"|nccl(?!(?:Dev)?Kernel)[A-Z][A-Za-z0-9_]*"
)
_OPERATOR_NAME_RE = re.compile(r"(?:aten|prim|prims|c10d|_c10d_functional|torchvision|quantized)::[A-Za-z_]\w*(?:\.\w+)?\Z")

_DIRECTION_ALIASES = {
    "htod": "HtoD", "host-to-device": "HtoD", "h2d": "HtoD",
    "dtoh": "DtoH", "device-to-host": "DtoH", "d2h": "DtoH",
    "dtod": "DtoD", "device-to-device": "DtoD", "d2d": "DtoD",
    "ptop": "PtoP", "peer-to-peer": "PtoP", "p2p": "PtoP",
    "htoh": "HtoH", "host-to-host": "HtoH",
}
_COPY_DETAIL = {
    "HtoD": "host-to-device memory copy issued by .to('cuda')/.cuda()/copy_ from a CPU tensor",
    "DtoH": "device-to-host memory copy issued by .cpu()/.item()/.tolist()/.numpy() or printing a CUDA tensor",
    "DtoD": "device-to-device memory copy issued by copy_/to()/clone()",
    "PtoP": "peer-to-peer memory copy between two GPUs issued by copy_/to() across devices",
    "HtoH": "host-to-host memory copy through the CUDA driver",
}


def _copy_detail(direction: str, src: str | None = None, dst: str | None = None) -> str:
    text = _COPY_DETAIL.get(direction, f"memory copy ({direction})")
    if direction == "HtoD" and src == "Pageable":
        text += "; the source is pageable (not pinned), so the copy is synchronous"
    elif direction == "HtoD" and src == "Pinned":
        text += "; the source is pinned, so it can overlap with non_blocking=True"
    elif direction == "DtoH" and dst == "Pageable":
        text += "; into pageable memory, so the CPU waits for it"
    return text


_MEMSET_DETAIL = (
    "device memory fill (cudaMemset*), e.g. zeroing a buffer; issued by ATen or by a library "
    "(cuBLAS/cuDNN workspaces, NCCL)"
)


def non_kernel(text: str) -> tuple[str, str] | None:
    """(kind, detail) for names that are not kernels; None for everything else."""
    m = _PROFILER_MEMCPY_RE.match(text)
    if m:
        return "memcpy", _copy_detail(m.group("dir"), m.group("src"), m.group("dst"))
    if _PROFILER_MEMSET_RE.match(text):
        return "memset", _MEMSET_DETAIL
    m = _NSYS_MEM_RE.match(text)
    if m:
        if m.group("op").lower() == "memset":
            return "memset", _MEMSET_DETAIL
        rest = (m.group("rest") or "").lower().replace("unified ", "").strip()
        return "memcpy", _copy_detail(_DIRECTION_ALIASES.get(rest, rest or "unknown direction"))
    m = _XLA_MEMCPY_RE.match(text)
    if m:
        return "memcpy", _copy_detail(_DIRECTION_ALIASES[m.group("dir").lower()])
    if text in ("Memset", "MemsetD"):
        return "memset", _MEMSET_DETAIL
    if _HOST_API_RE.fullmatch(text):
        api = re.sub(r"_v\d+\Z", "", text)
        if "memcpy" in api.lower():
            return "memcpy", f"host-side call {api}: the CPU side of a copy; the GPU side shows up as 'Memcpy ...'"
        if "memset" in api.lower():
            return "memset", f"host-side call {api}: the CPU side of a memory fill; the GPU side shows up as 'Memset ...'"
        return "unknown", f"host-side API call {api}, not a GPU kernel"
    if _OPERATOR_NAME_RE.match(text):
        return "unknown", f"operator name {text}, not a kernel: look it up as an operator"
    return None


# ---- libraries: which one comes from atenmap.resolve.libraries; here, what its kernel does -------------


def _nccl(m: re.Match[str], f: KernelFacts) -> str:
    tokens = f.function.split("_")[1:]
    coll = tokens[0] if tokens else "collective"
    ops = [t for t in tokens[1:] if t in ("Sum", "Prod", "Min", "Max", "Avg", "PreMulSum", "SumPostDiv")]
    algo = [t for t in tokens[1:] if t.upper() in ("RING", "TREE", "NVLS", "NVLS_TREE", "COLLNET", "PAT") or t.startswith("COLLNET")]
    proto = [t for t in tokens[1:] if t.upper() in ("LL", "LL128", "SIMPLE")]
    dtypes = [t for t in tokens[1:] if re.fullmatch(r"(?:[fiu]\d+|bf16|f8e\w+|half|float|double|int\w*|u?int\d+)", t)]
    bits = [", ".join(x) for x in (ops, dtypes) if x] + (["/".join(algo + proto)] if algo or proto else [])
    inner = f" ({'; '.join(bits)})" if bits else ""
    return (
        f"NCCL {coll} kernel{inner}; torch.distributed collectives launch it, and the name only hints at "
        "the operation, algorithm and protocol NCCL actually ran"
    )


_TRITON_KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "tem": "template (matmul/conv/flex-attention)",
    "for": "foreach",
    "spl": "split scan",
    "mm": "matmul",
    "bmm": "batched matmul",
}


def _triton(m: re.Match[str], f: KernelFacts) -> str:
    kind = _TRITON_KINDS.get(m.group("kind"), m.group("kind"))
    fused = re.search(r"_fused_(\w+?)(?:_\d+)?\Z", f.function)
    what = f" fusing {fused.group(1)}" if fused else ""
    return f"Triton {kind} kernel generated by torch.compile (Inductor){what}; its source is the generated code, not ATen"


def _flash(m: re.Match[str], f: KernelFacts) -> str:
    fn = f.function
    direction = "backward " if "bwd" in fn else "forward (split-KV) " if "splitkv" in fn else "forward " if "fwd" in fn else ""
    if f.qualname.startswith("pytorch_flash::"):
        return (
            f"FlashAttention-2 {direction}kernel vendored in ATen (aten/src/ATen/native/transformers/cuda/flash_attn), "
            "the flash backend of scaled_dot_product_attention"
        )
    return f"FlashAttention {direction}kernel (flash:: namespace: the flash-attn package or a copy of it)"


def _mem_eff(m: re.Match[str], f: KernelFacts) -> str:
    direction = {"F": "forward ", "B": "backward "}.get(m.groupdict().get("dir") or "", "")
    return (
        f"memory-efficient attention {direction}kernel (CUTLASS-based, from xFormers) vendored in ATen "
        "(aten/src/ATen/native/transformers/cuda/mem_eff_attention), the efficient backend of "
        "scaled_dot_product_attention"
    )


_XMMA_RE = re.compile(r"sm(?P<arch>\d+)_xmma_(?P<op>gemm|fprop|dgrad|wgrad)_(?:(?P<algo>[a-z_]+?)_)?(?P<dt>(?:bf|tf|f|e|s|u|i)\d+(?:m\d+)?)")
_CONV_OPS = {"fprop": "forward", "dgrad": "data-gradient", "wgrad": "weight-gradient"}


def _cudnn(m: re.Match[str], f: KernelFacts) -> str:
    name = f.function
    sdpa = re.match(r"cudnn_generated_fort_native_sdpa_(?P<arch>sm\d+)_flash_(?P<dir>fprop|bprop)", name)
    if sdpa:
        direction = "forward" if sdpa.group("dir") == "fprop" else "backward"
        return (
            f"cuDNN fused attention {direction} kernel ({sdpa.group('arch')}), "
            "the cuDNN backend of scaled_dot_product_attention"
        )
    x = _XMMA_RE.search(name)
    if x and x.group("op") in _CONV_OPS:
        algo = ", implicit GEMM" if "implicit_gemm" in name else ""
        return f"cuDNN convolution {_CONV_OPS[x.group('op')]} kernel (sm{x.group('arch')} xmma{algo}, {x.group('dt')})"
    if x:
        return f"cuDNN GEMM kernel (sm{x.group('arch')} xmma, {x.group('dt')})"
    if re.search(r"convolve_sgemm|scudnn|winograd|conv|fprop|dgrad|wgrad|fft2d", name, re.I):
        return f"cuDNN convolution kernel {name}"
    if name.startswith("bn_"):
        return f"cuDNN batch-norm kernel {f.qualname}"
    return f"cuDNN kernel {f.qualname}"


_ARCH_GEMM_RE = re.compile(
    r"(?P<arch>maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_(?P<g>(?:[a-z0-9]+_)?[a-z0-9]*gemm)"
)
_BLAS_KINDS = (
    ("gemv", "matrix-vector product (GEMV)"),
    ("gemmSN", "small-N GEMM"),
    ("gemmk1", "GEMM with k=1"),
    ("splitKreduce", "split-K reduction, the second pass of a split-K GEMM"),
    ("trsm", "triangular solve (TRSM)"),
    ("scal", "vector scaling (SCAL)"),
    ("dot", "dot product"),
    ("reduce_1Block", "dot-product reduction"),
    ("magma", "GEMM (MAGMA-derived kernel inside cuBLAS)"),
)


def _blas_kind(function: str) -> str | None:
    for prefix, text in _BLAS_KINDS:
        if function.startswith(prefix):
            return text
    return None


def _cublas(m: re.Match[str], f: KernelFacts) -> str:
    name = f.function
    x = _XMMA_RE.search(name)
    if x and x.group("op") == "gemm":
        return f"cuBLAS GEMM kernel (sm{x.group('arch')} xmma, {x.group('dt')})"
    a = _ARCH_GEMM_RE.match(name)
    if a:
        return f"cuBLAS GEMM kernel ({a.group('arch')} {a.group('g')})"
    if name.startswith("nvjet_"):
        arch = re.match(r"nvjet_(sm\d+)_", name)
        return f"cuBLAS GEMM kernel (nvjet{', ' + arch.group(1) if arch else ''}: Hopper/Blackwell cuBLAS)"
    kind = _blas_kind(name) or ("matrix-vector product (GEMV)" if f.qualname.startswith("gemvx::") else None)
    return f"cuBLAS {kind} kernel" if kind else f"cuBLAS kernel {f.qualname}"


def _cublaslt(m: re.Match[str], f: KernelFacts) -> str:
    kind = _blas_kind(f.function)
    return f"cuBLASLt {kind} kernel" if kind else f"cuBLASLt kernel {f.qualname}"


_CUTLASS_LIBRARY_NAME_RE = re.compile(r"\bcutlass(?:3x)?_(?:sm)?\d*_?\w+")


def _cutlass(m: re.Match[str], f: KernelFacts) -> str:
    lib_name = _CUTLASS_LIBRARY_NAME_RE.search(f.text)
    if lib_name:
        return (
            f"CUTLASS kernel {lib_name.group()}; CUTLASS library kernels named like this are usually "
            "launched by cuBLAS"
        )
    if re.search(r"\bat::", f.text):
        return f"CUTLASS kernel {f.qualname} instantiated by ATen code (its template arguments name at:: types)"
    return f"CUTLASS kernel {f.qualname}"


_CUB_ALGOS = (
    ("SegmentedRadixSort", "segmented radix sort"),
    ("RadixSort", "radix sort"),
    ("SegmentedReduce", "segmented reduction"),
    ("Reduce", "reduction"),
    ("Scan", "prefix scan"),
    ("Select", "selection/compaction"),
    ("Partition", "partition"),
    ("Compact", "selection/compaction"),
    ("Unique", "unique"),
    ("RunLengthEncode", "run-length encoding"),
    ("Histogram", "histogram"),
    ("MergeSort", "merge sort"),
    ("For", "for-each"),
)


def _cub(m: re.Match[str], f: KernelFacts) -> str:
    algo = next((text for key, text in _CUB_ALGOS if key in f.function), None)
    if "ReduceByKeyScanTileState<" in f.text:  # Note [CUB tile states name the algorithm] (encoding.py)
        algo = "reduction by key: run-length encoding or reduce_by_key"
    text = f"CUB {f.function} ({algo})" if algo else f"CUB {f.function}"
    if f.namespaces[:1] == ("at_cuda_detail",):
        text += (
            ", launched from ATen through at::cuda::cub (aten/src/ATen/cuda/cub.cuh), "
            "e.g. by sort, unique, nonzero, cumsum or randperm"
        )
    return text


def _thrust(m: re.Match[str], f: KernelFacts) -> str:
    algos = list(dict.fromkeys(re.findall(r"::__(\w+?)::", f.text)))
    algos = [a for a in algos if a != "parallel_for"] or algos
    return f"Thrust algorithm kernel ({', '.join(algos[:3])})" if algos else f"Thrust kernel {f.qualname}"


def _cufft(m: re.Match[str], f: KernelFacts) -> str:
    return f"cuFFT kernel {f.function}; torch.fft and torch.stft on CUDA call cuFFT"


_SOLVER_ROUTINES = (
    (("potrf", "potrs", "potri"), "Cholesky"),
    (("getrf", "getrs", "getri", "laswp"), "LU"),
    (("geqr", "orgqr", "ormqr", "larf"), "QR"),
    (("syevj", "syevd", "sytrd", "stedc", "steqr", "sterf", "ormtr", "orgtr"), "symmetric eigendecomposition"),
    (("gesvd", "gebrd"), "SVD"),
    (("trtri",), "triangular inverse"),
    (("sytrf",), "symmetric indefinite factorization"),
    (("gels",), "least squares"),
)


def _cusolver(m: re.Match[str], f: KernelFacts) -> str:
    routine = next((text for keys, text in _SOLVER_ROUTINES if f.function.startswith(keys)), None)
    what = f" ({routine})" if routine else ""
    return f"cuSOLVER kernel {f.function}{what}; torch.linalg on CUDA calls cuSOLVER"


def _fuser(m: re.Match[str], f: KernelFacts) -> str:
    return f"kernel {f.qualname} generated at run time by nvFuser (TorchScript); its source is generated code, not ATen"


def _tensile(m: re.Match[str], f: KernelFacts) -> str:
    return (f"Tensile GEMM kernel {f.function.split('_MT', 1)[0]}, run by rocBLAS or hipBLASLt on ROCm "
            "(the hipified cuBLAS/cuBLASLt calls of CUDABlas.cpp, and its rocblas_gemm_ex)")


def _miopen(m: re.Match[str], f: KernelFacts) -> str:
    return f"MIOpen kernel {f.function}; convolution, batch norm and RNN on ROCm call MIOpen (native/miopen/)"


def _ck(m: re.Match[str], f: KernelFacts) -> str:
    return (f"composable_kernel (CK) GEMM kernel {f.qualname}, ATen's CK BLAS backend on ROCm "
            "(torch.backends.cuda.preferred_blas_library('ck'), native/hip/ck_gemm_*.hip)")


def _generic(library: str) -> Callable[[re.Match[str], KernelFacts], str]:
    def describe(m: re.Match[str], f: KernelFacts) -> str:
        return f"{library} kernel {f.qualname}"

    return describe


_DESCRIBE: dict[str, Callable[[re.Match[str], KernelFacts], str]] = {
    "NCCL": _nccl, "Triton": _triton, "flash-attention": _flash, "mem-efficient-attention": _mem_eff,
    "cuDNN": _cudnn, "cuBLASLt": _cublaslt, "cuBLAS": _cublas, "CUTLASS": _cutlass, "thrust": _thrust,
    "CUB": _cub, "cuFFT": _cufft, "cuSOLVER": _cusolver, "nvFuser": _fuser,
    "Tensile": _tensile, "MIOpen": _miopen, "CK": _ck,
}


def classify_library(f: KernelFacts) -> tuple[str, str] | None:
    """(library, sentence) for a library's kernel; None for any other name."""
    found = match_kernel(f)
    if found is None:
        return None
    rule, m = found
    return rule.library, _DESCRIBE.get(rule.library, _generic(rule.library))(m, f)


_INFRASTRUCTURE_FUNCTORS = frozenset(
    """TrivialOffsetCalculator OffsetCalculator LoadWithCast StoreWithCast LoadWithoutCast StoreWithoutCast
    TensorInfo Array ReduceOp func_wrapper_t ReduceConfig IndexToOffset""".split()
)


def kernel_detail(qualname: str, namespaces: tuple[str, ...], functors: tuple[str, ...], lambdas: tuple[LambdaRef, ...]) -> str:
    owner = "ATen kernel" if namespaces[:1] and namespaces[0] in ATEN_NAMESPACES else "CUDA kernel"
    text = f"{owner} {qualname}"
    if lambdas:
        return f"{text} running a lambda from {lambdas[0].enclosing}"
    own = [f for f in functors if f.rsplit("::", 1)[-1] not in _INFRASTRUCTURE_FUNCTORS]
    if own:
        return f"{text} applying {own[0]}"
    return text
