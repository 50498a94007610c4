"""The vendor libraries ATen hands work to, in one table: how a call into each is written in ATen's
source, and how each one's GPU kernels are named in a profile.

A chain ends at a library call (the kernel that runs is the library's, not ATen's), and a profiler
kernel of a library is traced back to the ATen lines that call that library. Both directions read
:data:`LIBRARIES`; nothing else keeps library names or patterns. (How a kernel of each library is
*described* in words stays with the kernel-name parser, ``resolve/kernelname/classify.py``.)

Note [Library families]
~~~~~~~~~~~~~~~~~~~~~~~
What a user calls one library is often several: ``cublasGemmEx`` runs cuBLASLt kernels and CUTLASS
kernels shipped inside cuBLAS, ATen reaches all of them through its ``at::cuda::blas::gemm`` wrappers,
and ``torch.linalg`` on CUDA calls cuSOLVER or MAGMA for the same routine depending on the sizes and
``torch.backends.cuda.preferred_linalg_library``. Each :class:`Library` therefore has a ``name`` (what a
chain step or a kernel lookup prints) and a ``family`` (what a kernel name and a source call are
compared on, :func:`same_family`).

Note [Order of the table]
~~~~~~~~~~~~~~~~~~~~~~~~~
The first matching record wins, for calls and for kernel names alike, and within a record its kernel
patterns are tried in order. Two orders matter today: cuBLASLt before cuBLAS (``cublasLtMatmul`` also
reads as ``cublas`` + an upper-case letter; ``cublasLt::`` kernels also contain ``cublas``), the
attention kernels and cuDNN before cuBLAS (cuDNN's ``..._execute_kernel__5x_cudnn`` GEMM-like engines),
and cuSOLVER and MAGMA before cuBLAS (their kernels take ``cublasFillMode_t`` parameters, and MAGMA's
``trsm_template_batched_*`` would read as cuBLAS's ``trsm``).

Note [Libraries that run other libraries]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Some libraries are built on another one and launch its kernels inside their own calls, so a
profile of ``torch.linalg.eig`` shows cuBLAS GEMM/TRMV kernels under ATen's one cuSOLVER/MAGMA
call. A record's ``runs`` names those families, only where the vendor documents it:

* cuSOLVER is built on cuBLAS: NVIDIA's cuSOLVER documentation has an application that links
  cuSOLVER statically link cuBLAS and cuBLASLt with it, and the libcusolver packages NVIDIA ships
  (conda, the CUDA apt repositories) depend on libcublas.
* MAGMA's GPU BLAS is cuBLAS on CUDA: each ``magma_queue_t`` owns a cuBLAS handle
  (``magma_queue_get_cublas_handle``), and the ``magma_*gemm`` / ``trsm`` / ``trmv`` routines its
  LAPACK drivers use call it.

:func:`runs_kernels_of` reads it; a chain still shows only the call ATen makes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

__all__ = [
    "LIBRARIES",
    "ATEN_NAMESPACES",
    "KernelFacts",
    "KernelRule",
    "Library",
    "by_name",
    "family_calls_like",
    "library_of",
    "library_of_call",
    "match_kernel",
    "runners_of",
    "runs_kernels_of",
    "same_family",
]


@dataclass(frozen=True)
class KernelRule:
    """One way to recognise a library's kernel name.

    ``where``: ``"name"`` — the function name, only for names without namespaces (libraries that name
    kernels ``ampere_sgemm_128x64_nn``); ``"qualname"`` — the qualified name (``cub::``, ``cublasLt::``);
    ``"text"`` — anywhere in the whole name, template arguments included (``..._cublas``, ``cudnn::`` in a
    parameter), skipped for names in ``at::``/``c10::``/``torch::`` so ATen kernels that merely mention
    a library are not claimed by it. ``seen`` says where the real name was observed.
    """

    library: str
    where: str
    regex: str
    seen: str
    flags: int = 0

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled when a kernel name is first matched: a chain never asks (Note [Start-up budget]
        in cli/__init__.py)."""
        return re.compile(self.regex, self.flags)


@dataclass(frozen=True)
class Library:
    """One vendor library (or one way ATen reaches it). See Note [Library families].

    ``calls``: matches a callee's qualified name as written in ATen's source, templates removed
    (``cublasGemmEx``, ``at::cuda::blas::gemm``, ``pocketfft::c2c``); None for libraries ATen never calls
    by name. ``kernels``: the patterns of its kernel names in a profile. ``like``: SQL LIKE patterns
    that every call matching ``calls`` also matches (a cheap preselection in the index).
    """

    name: str
    family: str
    calls: re.Pattern[str] | None
    kernels: tuple[KernelRule, ...] = ()
    like: tuple[str, ...] = ()
    note: str = ""
    runs: tuple[str, ...] = ()  # families whose kernels it launches itself: Note [Libraries that run other libraries]


@dataclass(frozen=True)
class KernelFacts:
    """What a kernel-name rule is matched against (the parser's reading of one name)."""

    text: str  # the whole name, template arguments and parameters included
    function: str
    qualname: str
    namespaces: tuple[str, ...]


def _k(where: str, pattern: str, seen: str, flags: int = 0) -> tuple[str, str, str, int]:
    return where, pattern, seen, flags


def _lib(name: str, family: str, calls: str | None, kernels: tuple = (), like: tuple[str, ...] = (),
         note: str = "", runs: tuple[str, ...] = ()) -> Library:
    rules = tuple(KernelRule(name, where, pattern, seen, flags) for where, pattern, seen, flags in kernels)
    return Library(name, family, re.compile(calls) if calls else None, rules, like, note, runs)


COPY_FAMILY = "CUDA copies"  # calls that launch no kernel (Note [Copies without a kernel])

# See Note [Order of the table]. The kernel patterns name the public profile where each real kernel
# name was seen (GitHub issues and pull requests; "profile dumps" are public trace/table files).
LIBRARIES: tuple[Library, ...] = (
    _lib("NCCL", "NCCL", r"(^|::)nccl[A-Z]\w*$|(^|::)cuda::nccl::\w+$", (
        _k("qualname", r"\Anccl\w*Kernel",
           "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>) in PyTorch profile "
           "dumps; ncclKernel_SendRecv_RING in NVIDIA/nccl#739; naming explained in NVIDIA/nccl#2196"),
    ), like=("nccl%", "%cuda::nccl::%"), note="collectives of torch.distributed (ProcessGroupNCCL, torch/csrc/cuda/nccl.cpp)"),
    _lib("Triton", "Triton", None, (
        _k("name", r"\Atriton_(?P<kind>poi|red|per|tem|for|spl|mm|bmm)_",
           "triton_poi_fused_add_mul_..., triton_red_fused_..., triton_tem_fused_mm_0 in torch.compile "
           "profile dumps"),
    ), note="kernels generated by torch.compile (Inductor); never called from ATen"),
    _lib("flash-attention", "flash-attention", None, (
        _k("qualname", r"\A(?:pytorch_flash|flash)::",
           "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<...>>(pytorch_flash::Flash_fwd_params) "
           "(pytorch/pytorch#131257, huggingface/blog#3451)"),
        _k("name", r"\Aflash_(?:fwd|bwd)\w*kernel",
           "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 128, 4, ...>> in profile dumps"),
        _k("text", r"\bflash::\w*(?:Flash|flash)",
           "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90...>> (vLLM trace)"),
    ), note="vendored in ATen (native/transformers/cuda/flash_attn): its kernels are launched from ATen source"),
    _lib("mem-efficient-attention", "mem-efficient-attention", None, (
        _k("name", r"\Afmha_cutlass(?P<dir>[FB])",
           "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params) in "
           "PyTorch profile dumps"),
        _k("text", r"PyTorchMemEffAttention::", "as above"),
    ), note="vendored in ATen (native/transformers/cuda/mem_eff_attention): launched from ATen source"),
    _lib("cuDNN", "cuDNN", r"(^|::)cudnn[A-Z]\w*$|(^|::)cudnn_frontend::", (
        _k("text", r"cudnn",
           "sm80_xmma_fprop_implicit_gemm_..._execute_kernel__5x_cudnn, cudnn_generated_fort_native_sdpa_sm90_"
           "flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0, cudnn::bn_fw_inf_1C11_kernel_NHWC, "
           "maxwell_scudnn_128x128_relu_interior_nn_v1 in profile dumps", re.I),
        _k("name", r"\Asm\d+_xmma_(?:fprop|dgrad|wgrad)_",
           "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_..._kernel "
           "(no _cudnn suffix) in TensorFlow/PyTorch profile dumps"),
        _k("name",
           r"\A(?:implicit|explicit|precomputed)_convolve_sgemm|\Afft2d_(?:r2c|c2r|c2c)|\Awgrad_alg\d|\Adgrad\w*_alg\d"
           r"|\Adgrad_engine|\Abn_(?:fw|bw)_|\A(?:nchwToNhwc|nhwcToNchw)Kernel|\Aconv2d_grouped_direct_kernel",
           "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>(...), "
           "fft2d_r2c_32x32<...>(..., cudnn::reduced_divisor, ...) in TensorFlow profile dumps"),
    ), like=("cudnn%", "%cudnn_frontend::%")),
    _lib("cuSOLVER", "cuSOLVER/MAGMA", r"(^|::)cusolver[A-Z]\w*$|(^|::)cuda::solver::\w+$", (
        _k("text", r"cusolver|\bsytrf\w*Params\b", "cuSOLVER's own parameter types; cusolverDnXfill_kernel<float>("
           "cublasFillMode_t, ...), blocksize_decision_kernel<...>(..., sytrfExchangeParams<float, ...>) on an H200", re.I),
        _k("name",
           r"\A(?:potrf|potrs|potri|getrf|getrs|getri|geqr[f2]|orgqr|ormqr|ormtr|orgtr|sytrd|syevj|syevd|stedc"
           r"|steqr|sterf|gesvd|gebrd|larf|laswp|trtri|sytrf|gels|lacpy|lansy|gebal|ipiv|\w*getf2|\w*potf2"
           r"|\w*_info_ker|\w*svd_|batched_svd|xx\w*trf)",
           "geqr2_smem<double, double, 8, 6, 4>, geqr2_smem_domino_fast, ormtr_gemv_c<float, 4>, "
           "potrf_alg2_cta_upper<double2, double, 32>, sytrd4_gpu in nvprof/nsys dumps; lacpy_kernel, "
           "gebal_prologue_kernel, ipiv_lower_diag, xxtrf4_set_info_ker, batched_svd_qr_32x16 on an H200"),
    ), like=("cusolver%", "%solver::%"), note="cusolverDn* directly, or through ATen's at::cuda::solver wrappers",
        runs=("cuBLAS",)),
    _lib("MAGMA", "cuSOLVER/MAGMA", r"(^|::)magma_\w+$", (
        _k("text", r"\bmagma_(?:diag|uplo|trans|side|int|queue)_t\b",
           "trsm_template_batched_lNL_kernel<float, 4, 32>(magma_diag_t, ...) on an H200"),
        _k("name", r"\Amagma_(?!\w*gemm)", "magma_iset_pointer_kernel(int**, int*, ...) on an H200"),
    ), like=("magma_%",), runs=("cuBLAS",)),
    _lib("cuBLASLt", "cuBLAS", r"(^|::)cublasLt[A-Z]\w*$", (
        _k("text", r"cublasLt",
           "cublasLt::splitKreduce_kernel<32, 16, int, float, bf16...> in sglang profile tables "
           "(sgl-project/sglang#22353 lists its neighbours)"),
    ), like=("cublasLt%", "%blas::%")),
    _lib("cuBLAS", "cuBLAS", r"(^|::)cublas[A-Z]\w*$", (
        _k("text", r"cublas",
           "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
           "kernel__5x_cublas (NVIDIA/TensorRT-LLM#1541, triton-lang/triton#3668); gemmSN_NN_kernel<..., "
           "cublasGemvTensorStridedBatched<double> > in nvprof dumps", re.I),
        _k("name", r"\Asm\d+_xmma_gemm_",
           "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma "
           "(pytorch/pytorch#167503)"),
        _k("name", r"\A(?:maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_\w*gemm",
           "volta_sgemm_32x128_tn (official-stockfish/nnue-pytorch#96), ampere_sgemm_128x64_tn, "
           "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn (karpathy/nanochat#105)"),
        _k("name", r"\Anvjet_",
           "nvjet_tst_128x24_64x11_2x1_v_bz_TNT (sgl-project/sglang#22353), nvjet_sm90_hss_320x128 "
           "(GindaChen/nsys-ai#582: 'what recent cuBLAS calls its Hopper GEMMs')"),
        _k("name",
           r"\Agemv|\AgemmSN_|\Agemmk1_kernel|\AsplitKreduce_kernel|\Amagma_\w*gemm\w*_kernel|\Atrsm"
           r"|\Ascal_kernel|\Adot_kernel|\Areduce_1Block_kernel",
           "gemv2T_kernel_val (official-stockfish/nnue-pytorch#96), gemv2N_kernel_val, gemvNSP_kernel, "
           "gemmSN_NN_kernel, splitKreduce_kernel<float, ...>(cublasSplitKParams<float>, ...), "
           "magma_sgemmEx_kernel in profile dumps; trsm from the cuBLAS API (cublas<t>trsm)"),
        _k("qualname", r"\Agemvx::", "gemvx::kernel<...> in profile dumps"),
    ), like=("cublas%", "%blas::%"), note="cublasSgemm, cublasGemmEx, cublasGemmStridedBatchedEx, ..."),
    _lib("cuBLAS (at::cuda::blas)", "cuBLAS",
         r"(^|::)(cuda::)?blas::(gemm|bgemm|gemv|dot|vdot|scaled_gemm|int8_gemm|gemm_and_bias|trsm|trsmBatched"
         r"|getrsBatched|getrfBatched|geqrfBatched|gelsBatched|gemm_internal|bgemm_internal)\w*$",
         like=("%blas::%",), note="ATen's wrappers (aten/src/ATen/cuda/CUDABlas.cpp) that pick cuBLAS or cuBLASLt"),
    _lib("CUTLASS", "cuBLAS", None, (
        _k("qualname", r"\Acutlass\w*::",
           "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(...) (pytorch/pytorch#167503), "
           "cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>> (NVIDIA/cutlass#85)"),
        _k("name", r"\Acutlass(?:3x)?_",
           "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8 in profile dumps"),
    ), note="CUTLASS kernels in a profile are mostly the ones cuBLAS ships"),
    _lib("thrust", "thrust", r"(^|::)thrust::\w+", (
        _k("qualname", r"(?:\A|::)thrust::",
           "void thrust::cuda_cub::core::_kernel_agent<thrust::cuda_cub::__parallel_for::ParallelForAgent<"
           "thrust::cuda_cub::__uninitialized_fill::functor<...>, unsigned long>, ...> in nvprof dumps"),
    ), like=("thrust::%",)),
    _lib("CUB", "CUB", r"(^|::)cub::\w+|(^|::)cuda::cub::\w+$", (
        _k("qualname", r"(?:\A|::)cub::",
           "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...> (awslabs/keys_values#66, PyTorch "
           "profile tables), cub::CUB_200700_860_1200_NS::DeviceScanKernel<...> in nsys dumps"),
    ), like=("%cub::%",), note="cub::Device* directly, or through ATen's at::cuda::cub wrappers (cuda/cub.cuh)"),
    _lib("cuFFT", "cuFFT", r"(^|::)cufft[A-Z]\w*$", (
        _k("qualname", r"\ADSE::",
           "void DSE::vector_fft<0, 1, 256, 16, 16, 1, float, float, float2>(...) in Nsight Compute dumps"),
        _k("name", r"\A(?:vector|regular|prime)_fft|\Aregular_bluestein_fft|\Abluestein_|\Afft_",
           "vector_fft<4096, ...>, regular_fft_factor, prime_fft_factor, regular_bluestein_fft, "
           "regular_fft_c2r<300> in nsys dumps"),
        _k("text", r"cufft", "cuFFT's own parameter types", re.I),
    ), like=("cufft%",), note="plans (cufftMakePlan*, cufftXtMakePlanMany, kept in ATen's plan cache) and "
                              "their execution (cufftXtExec, cufftExec*)"),
    _lib("cuTENSOR", "cuTENSOR", None, (
        _k("text", r"cutensor",
           "CUTENSOR_NAMESPACE::permutationKernelPLC3<...>, cutensor_internal_namespace::... in profile dumps",
           re.I),
    )),
    _lib("cuSPARSE", "cuSPARSE", r"(^|::)cusparse[A-Z]\w*$", (
        _k("text", r"cusparse", "cuSPARSE's own parameter types", re.I),
    ), like=("cusparse%",)),
    _lib("nvFuser", "nvFuser", None, (
        _k("qualname", r"\ACudaCodeGen::",
           "CudaCodeGen::kernel5(CudaCodeGen::Tensor<CudaCodeGen...) in a PyTorch profile table (TorchScript era)"),
    )),
    _lib("TransformerEngine", "TransformerEngine", None, (
        _k("qualname", r"\Atransformer_engine::",
           "transformer_engine::normalization::ln_fwd_tuned_kernel<...> (ROCm/TransformerEngine#610)"),
    )),
    _lib("MIOpen", "MIOpen", r"(^|::)miopen[A-Z]\w*$", like=("miopen%",)),
    _lib("CUDA runtime (copy engine)", COPY_FAMILY,
         r"^cudaMemcpy\w*$|^cudaMemset\w*$|(^|::)CUDACachingAllocator::memcpyAsync$|(^|::)cuda::memcpy_and_sync$",
         like=("cudaMemcpy%", "cudaMemset%", "%memcpyAsync", "%memcpy_and_sync"),
         note="Note [Copies without a kernel]: cudaMemcpyAsync and friends run on the copy engine; a "
              "profile shows them as 'Memcpy HtoD (Pageable -> Device)' or 'Memset (Device)', not as kernels"),
    _lib("CPU BLAS (at::native::cpublas)", "BLAS", r"(^|::)cpublas::\w+$", like=("%cpublas::%",),
         note="ATen's CPU BLAS front (native/CPUBlas.cpp): cpublas::gemm -> MKL/OpenBLAS or cpublas::gemm_stub"),
    _lib("BLAS", "BLAS", r"^(s|d|c|z)(gemm|gemv|axpy|dot|scal|trsm|syrk)_$|^cblas_\w+$",
         like=("%gemm_", "%gemv_", "%axpy_", "%dot_", "%scal_", "%trsm_", "%syrk_", "cblas_%")),
    _lib("LAPACK", "LAPACK",
         r"^(s|d|c|z)(getrf|getrs|geqrf|potrf|potrs|gesdd|syevd|heevd|gels\w*|orgqr|ungqr|ormqr|trtrs)_$|^lapack\w+$",
         like=("%_", "lapack%")),
    _lib("oneDNN", "oneDNN", r"(^|::)(dnnl|ideep)::|(^|::)mkldnn_(matmul|gemm\w*)$",
         like=("%dnnl::%", "%ideep::%", "%mkldnn_matmul", "%mkldnn_gemm%")),
    _lib("MKL", "MKL", r"^mkl_\w+$|^Dfti[A-Z]\w*$|^vm?[sdcz][A-Z][a-z]\w*$|^vsl[A-Z]\w*$",
         like=("mkl_%", "Dfti%", "v%"),
         note="DFTI (DftiComputeForward, ...), VSL (vslNewStream, vdRngGaussian, ...), VML (vsErf; with a mode "
              "argument vmsErfInv, vmdLn: ATen's vml.h makes them by token pasting, vm##mkltype##mklop, and the "
              "index reads the expanded names)"),
    _lib("pocketfft", "pocketfft", r"(^|::)pocketfft::(detail::)?\w+$", like=("%pocketfft::%",),
         note="the CPU FFT when PyTorch is built without MKL (native/mkl/SpectralOps.cpp): c2c, r2c, c2r"),
)

_BY_NAME = {lib.name: lib for lib in LIBRARIES}

# Note [Copies without a kernel]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``copy_`` on CUDA copies contiguous same-dtype tensors without a kernel: copy_kernel_cuda
# (cuda/Copy.cu) calls ``cudaMemcpyAsync`` for host<->device copies (``at::cuda::memcpy_and_sync``
# when blocking) and ``CUDACachingAllocator::memcpyAsync`` (cudaMemcpyAsync or
# cudaMemcpyPeerAsync) between devices; only the other cases launch the copy kernel. These calls are
# a chain's ``library`` steps of the CUDA runtime, so the copy paths show beside the kernel. A
# profiler lists them as memcpy/memset activities, not kernels: the record has no kernel patterns.

# Names in those namespaces that launch nothing: iterators, functors, policies, tuples.
_NOT_LAUNCHING = re.compile(
    r"::(device_ptr|device_pointer_cast|raw_pointer_cast|make_\w+_iterator|\w+_iterator|par|par_nosync|"
    r"equal_to|not_equal_to|greater|greater_equal|less|less_equal|maximum|minimum|plus|minus|multiplies|"
    r"identity|negate|get|tie|make_tuple|tuple|pair|make_pair|get_num_bits|\w+_t)$")


def by_name(name: str) -> Library:
    """The record named ``name`` (a chain step's or a kernel lookup's library). KeyError if none."""
    return _BY_NAME[name]


@lru_cache(maxsize=8192)  # pure; a chain asks it of every call it visits, the same callees again and again
def library_of_call(qual: str) -> Library | None:
    """The library a call leaves ATen for, from the callee's qualified name as written (templates
    removed); None for ordinary code and for library helpers that launch no work
    (thrust::device_ptr, thrust::make_counting_iterator, cub::get_num_bits...)."""
    if _NOT_LAUNCHING.search(qual):
        return None
    for lib in LIBRARIES:
        if lib.calls is not None and lib.calls.search(qual):
            return lib
    return None


# Note [Set-up calls]
# ~~~~~~~~~~~~~~~~~~~
# Vendor C APIs name their configuration calls with a verb in CamelCase after the library's prefix:
# cublasSetStream, cublasSetWorkspace, cublasLtMatmulDescSetAttribute, cublasLtMatmulAlgoGetHeuristic,
# cudnnSetStream, cudnnCreateTensorDescriptor, cusolverDnCreate, cufftSetWorkArea. They do no work
# on the tensors; the call that does (cublasLtMatmul, cublasSgemm, cudnnConvolutionForward) has no
# such verb. The runs block (resolve/runs.py) ranks them after the work.
_SETUP_VERB = re.compile(r"(?<=[a-z0-9])(?:Set|Get|Create|Destroy)(?:[A-Z0-9_]|$)")


def is_setup_call(qual: str) -> bool:
    """Whether a library call configures rather than computes. See Note [Set-up calls]."""
    return bool(_SETUP_VERB.search(qual.rsplit("::", 1)[-1]))


def library_of(qual: str) -> str | None:
    """:func:`library_of_call`'s display name (what a chain's ``library`` step prints)."""
    lib = library_of_call(qual)
    return lib.name if lib is not None else None


ATEN_NAMESPACES = frozenset({"at", "c10", "torch"})


def match_kernel(f: KernelFacts) -> tuple[KernelRule, re.Match[str]] | None:
    """The first kernel rule of :data:`LIBRARIES` that claims a parsed kernel name, with its match."""
    aten_owned = bool(f.namespaces) and f.namespaces[0] in ATEN_NAMESPACES
    for lib in LIBRARIES:
        for rule in lib.kernels:
            if rule.where == "name":
                if f.namespaces or not f.function:
                    continue
                subject = f.function
            elif rule.where == "qualname":
                subject = f.qualname
            else:
                if aten_owned:
                    continue
                subject = f.text
            m = rule.pattern.search(subject)
            if m:
                return rule, m
    return None


def _family(x: Library | str | None) -> str | None:
    if x is None:
        return None
    if isinstance(x, Library):
        return x.family
    lib = _BY_NAME.get(x)
    return lib.family if lib is not None else x


def same_family(a: Library | str | None, b: Library | str | None) -> bool:
    """Whether two libraries (records or names) are one library to a user: a cuBLASLt kernel and a
    ``at::cuda::blas::gemm`` call are. See Note [Library families]. None is no library."""
    fa = _family(a)
    return fa is not None and fa == _family(b)


def runs_kernels_of(caller: Library | str | None, kernel: Library | str | None) -> bool:
    """Whether a call into ``caller`` (a record or a name) launches kernels of ``kernel``'s family
    itself: a cuSOLVER or MAGMA call runs cuBLAS kernels. See Note [Libraries that run other libraries]."""
    lib = caller if isinstance(caller, Library) else _BY_NAME.get(caller or "")
    fam = _family(kernel)
    return lib is not None and fam is not None and fam in lib.runs


def runners_of(kernel: Library | str | None) -> tuple[str, ...]:
    """The libraries whose calls launch kernels of ``kernel``'s family themselves (cuSOLVER and MAGMA
    for cuBLAS), in the table's order. See Note [Libraries that run other libraries]."""
    fam = _family(kernel)
    return tuple(lib.name for lib in LIBRARIES if fam is not None and fam in lib.runs)


def family_calls_like(library: Library | str) -> tuple[str, ...]:
    """SQL LIKE patterns preselecting the calls of ``library``'s whole family (see ``Library.like``)."""
    fam = _family(library)
    return tuple(dict.fromkeys(p for lib in LIBRARIES if lib.family == fam for p in lib.like))
