"""Issue 25, vendor paths: the runtime settings that pick a vendor path (resolve/choices.py, Note
[Runtime backend choices]) label the runs and --why; CPU BLAS is reached through the qualified
REGISTER_DISPATCH of cpublas::gemm_stub and through the unqualified gemv helper (Note [Shared native
helpers], Note [Qualified stub registrations] in resolve/chain.py). Fixture files imitate
native/cuda/linalg/BatchLinearAlgebra.cpp, native/Blas.cpp, native/BlasKernel.cpp, native/CPUBlas.cpp
and native/cpu/BlasKernel.cpp."""
from __future__ import annotations

import pytest

from atenmap.model import Chain, KeyChain, Location, Operator, OperatorName, SourceInfo, Step
from atenmap.resolve.choices import aliases, label, off_default
from atenmap.resolve.runs import runs
from atenmap.resolve.why import explain

from .conftest import FIXTURE_TREE
from .test_chain import find, steps

BACKENDS = "aten/src/ATen/native/cuda/linalg/MiniBackends.cpp"


@pytest.mark.parametrize("kind, text, switch, want", [
    ("case", "case at::LinalgBackend::Magma:", "switch (preferred_backend)", ("linalg library", "Magma")),
    ("case", "default:", "switch (preferred_backend)", ("linalg library", "default")),
    ("if", "if (use_magma)", "", ("linalg library", "Magma")),
    ("else", "else of if (use_magma)", "", ("linalg library", "not Magma")),
    ("else", "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Cublaslt)", "",
     ("BLAS library", "not Cublaslt")),
    ("if", "if (beta.toComplexDouble() != 0.0 && !useLtInterface)", "", ("addmm cuBLASLt epilogue", "no")),
    ("if", "if (useLtInterface)", "", ("addmm cuBLASLt epilogue", "yes")),
    ("else", "else of if (at::native::cudnnv8_enabled_check_debug())", "", ("cuDNN API", "v7")),
    ("return", "after if (tuning_ctx->IsTunableOpEnabled()) return", "", ("TunableOp", "off")),
    ("case", "case 4:", "switch (vec_size)", None),
    ("if", "if (contiguous)", "", None),
])
def test_a_branch_on_a_runtime_setting_names_it_and_its_value(kind, text, switch, want):
    names = aliases("auto preferred_backend = at::globalContext().linalgPreferredBackend();\n"
                    "bool use_magma = at::globalContext().linalgPreferredBackend() == at::LinalgBackend::Magma;")
    assert label(kind, text, names, switch) == want


def test_a_flag_set_from_other_conditions_is_not_an_alias():
    """addmm's ``useLtInterface = beta.toComplexDouble() == 1.0 && …`` is the setting itself, not a
    variable set from one: ``if (useLtInterface)`` keeps its label."""
    names = aliases("bool useLtInterface = false;\n  useLtInterface = beta.toComplexDouble() == 1.0 && self.dim() == 1;")
    assert names == {} and label("if", "if (useLtInterface)", names) == ("addmm cuBLASLt epilogue", "yes")


def _S(role, symbol, line, detail="", children=()):
    return Step.make(role, symbol, BACKENDS, line, detail, children=children)


def _chain():
    """The steps a chain has for MiniBackends.cpp's kernels (each helper with its call sites)."""
    lib = lambda name, line: Step.make("library", name, "aten/x.cpp", line, "cuSOLVER")  # noqa: E731
    chol = _S("kernel", "at::native::mini_chol_kernel", 5, children=[
        Step.make("call", "at::native::mini_chol_magma", "aten/m.cpp", 1,
                  f"called at {BACKENDS}:13, 19, 22", children=[lib("magma_spotrf_gpu", 3)]),
        Step.make("call", "at::native::mini_chol_cusolver", "aten/c.cpp", 1,
                  f"called at {BACKENDS}:10, 17", children=[lib("cusolverDnSpotrf", 4)])])
    svd = _S("kernel", "at::native::mini_svd_kernel", 27, children=[
        Step.make("call", "at::native::mini_svd_cusolver", "aten/c.cpp", 9, f"called at {BACKENDS}:32",
                  children=[lib("cusolverDnSgesvd", 10)])])
    conv = _S("helper", "at::native::mini_conv", 36, children=[
        Step.make("call", "at::native::mini_conv_v7", "aten/v7.cpp", 1, f"called at {BACKENDS}:40",
                  children=[lib("cudnnConvolutionForward", 5)])])
    op = Operator(OperatorName("op"), "op(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    return Chain(op, SourceInfo(str(FIXTURE_TREE), "2.6.0"), (KeyChain("CUDA", (chol, svd, conv)),))


def test_runs_name_the_setting_that_picks_each_vendor_path():
    got = {r.name: [w.text for w in r.when if w.kind == "runtime"] for r in runs(_chain(), str(FIXTURE_TREE))}
    assert got["magma_spotrf_gpu"] == ["linalg library: Magma or default (torch.backends.cuda.preferred_linalg_library)"]
    assert got["cusolverDnSpotrf"] == [
        "linalg library: Cusolver or default (torch.backends.cuda.preferred_linalg_library)"]
    assert got["cusolverDnSgesvd"] == ["linalg library: not Magma (torch.backends.cuda.preferred_linalg_library)"]
    assert got["cudnnConvolutionForward"] == ["cuDNN API: v7 (TORCH_CUDNN_V8_API_DISABLED=1 picks v7)"]


def test_an_else_after_another_platforms_region_is_not_its_choice():
    """CUDABlas's gemm_internal<T>: ``if (… == Cublaslt) {…} #ifdef USE_ROCM else if (… == Ck) {…}
    #endif else {…}``. In a CUDA build the else follows the Cublaslt if, not the ROCm-only Ck one;
    under a condition a CUDA build may have, the value carries the #if."""
    lib = lambda name, line: Step.make("library", name, "aten/x.cpp", line, "cuBLAS")  # noqa: E731
    cublas = _S("helper", "at::native::mini_gemm_internal", 45, children=[
        Step.make("call", "at::native::mini_gemm_cublas", "aten/b.cpp", 1, f"called at {BACKENDS}:55",
                  children=[lib("cublasSgemm", 3)])])
    versioned = _S("helper", "at::native::mini_gemm_versioned", 60, children=[
        Step.make("call", "at::native::mini_gemm_default", "aten/b.cpp", 9, f"called at {BACKENDS}:70",
                  children=[lib("cublasGemmEx", 11)])])
    op = Operator(OperatorName("op"), "op(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    chain = Chain(op, SourceInfo(str(FIXTURE_TREE), "2.6.0"), (KeyChain("CUDA", (cublas, versioned)),))
    got = {r.name: [w.text for w in r.when if w.kind in ("runtime", "else")] for r in runs(chain, str(FIXTURE_TREE))}
    assert got["cublasSgemm"] == [
        "BLAS library: not Cublaslt (torch.backends.cuda.preferred_blas_library)",
        "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Cublaslt)"]
    # Note [An else-if chain's earlier tests]: the last else runs when neither the region's test nor
    # the if's before it holds (that one in every build: no #if)
    assert got["cublasGemmEx"] == [
        "BLAS library: not Cublas and not Cublaslt [#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000] "
        "(torch.backends.cuda.preferred_blas_library)",
        "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Cublaslt)"
        " [#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000]",
        "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Cublas)"]


def test_the_last_else_of_a_rocm_chain_is_off_rocms_default():
    """Note [An else-if chain's earlier tests]: on ROCm, gemm_internal<T>'s last else follows both
    the ROCm-only ``else if (… == Ck)`` and the ``if (… == Cublaslt)`` before it, so its cuBLAS
    (hipBLAS) call runs for neither value: off ROCm's default (Cublaslt), where ``not Ck`` alone held
    for it. The CK call in the else-if keeps ``Ck`` (its ``not Cublaslt`` said by it)."""
    lib = lambda name, line: Step.make("library", name, "aten/x.cpp", line, "cuBLAS")  # noqa: E731
    gemm = _S("helper", "at::native::mini_gemm_internal", 45, children=[
        Step.make("call", "at::native::mini_gemm_cublas", "aten/b.cpp", 1, f"called at {BACKENDS}:55",
                  children=[lib("cublasSgemm", 3)]),
        Step.make("call", "at::native::mini_gemm_ck", "aten/b.cpp", 5, f"called at {BACKENDS}:51",
                  children=[lib("ck_gemm", 7)])])
    op = Operator(OperatorName("op"), "op(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    chain = Chain(op, SourceInfo(str(FIXTURE_TREE), "2.6.0"), (KeyChain("CUDA", (gemm,)),))
    got = {r.name.split(" ")[0]: r for r in runs(chain, str(FIXTURE_TREE), platform="rocm")}  # hipify's name after it
    runtime = {name: [w for w in r.when if w.kind == "runtime"] for name, r in got.items()}
    assert [w.text for w in runtime["cublasSgemm"]] == [
        "BLAS library: not Cublaslt and not Ck [#if defined(USE_ROCM)] (torch.backends.cuda.preferred_blas_library)"]
    assert [w.text for w in got["cublasSgemm"].when if w.kind == "else"] == [
        "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Ck) [#if defined(USE_ROCM)]",
        "else of if (at::globalContext().blasPreferredBackend() == BlasBackend::Cublaslt)"]
    assert [w.text for w in runtime["ck_gemm"]] == ["BLAS library: Ck (torch.backends.cuda.preferred_blas_library)"]
    assert off_default(runtime["cublasSgemm"], "rocm") and not off_default(runtime["cublasSgemm"], "cuda")


def test_why_labels_the_call_under_the_setting():
    ch = explain(_chain(), str(FIXTURE_TREE))
    svd = ch.keys[0].steps[1].children[0]
    runtime = [r for r in svd.why if r.kind == "runtime"]
    assert [(r.text, r.loc.line) for r in runtime] == [
        ("linalg library: not Magma (torch.backends.cuda.preferred_linalg_library)", 31)]


def test_cpu_gemv_reaches_the_fortran_blas_call(mini_index):
    """mv_out_cpu (addmv_out_cpu's pattern) calls gemv<scalar_t> of another native file, unqualified: on CPU it is
    followed because it reaches a vendor call (gemv_fast_path<float> -> sgemv_)."""
    ch = mini_index.chain("mv.out", keys=["CPU"])
    assert find(ch, "CPU", "helper", "at::native::gemv").file == "aten/src/ATen/native/BlasKernel.cpp"
    lib = find(ch, "CPU", "library", "sgemv_")
    assert (lib.file, lib.line) == ("aten/src/ATen/native/BlasKernel.cpp", 13) and "BLAS" in lib.detail


def test_cpublas_stub_registered_by_a_qualified_name(mini_index):
    ch = mini_index.chain("mv.out", keys=["CPU"])
    reg = find(ch, "CPU", "register", "axpy_stub")
    assert (reg.file, reg.line) == ("aten/src/ATen/native/cpu/BlasKernel.cpp", 11)
    assert find(ch, "CPU", "kernel", "cpublas_axpy_impl").line == 6
    assert not [w for w in ch.warnings if "axpy_stub" in w]


def test_shared_helpers_stay_out_of_cuda_chains(mini_index):
    """The rule is for CPU: a CUDA chain does not pick up CPU helpers of native/ by their library calls."""
    assert not [s for s in steps(mini_index.chain("mm.out", keys=["CUDA"]), "CUDA") if s.symbol == "sgemv_"]


def test_function_passed_by_name_to_a_helper_that_calls_it(mini_index):
    """Note [Functions passed by name]: cuDNN's v7 path passes its work to the batch-splitting
    helper, which calls its parameter; the v7 cuDNN call is reached and labelled v7."""
    ch = mini_index.chain("cudnn_conv_mini", keys=["CUDA"])
    fn = find(ch, "CUDA", "call", "mini_conv_out_32bit")
    assert fn.line == 17 and "passed by name to split_batch_dim_to_32bit_out, which calls its parameter" in fn.detail
    assert [c.symbol for c in fn.children] == ["cudnnConvolutionForward"]
    when = {r.name: [w.text for w in r.when if w.kind == "runtime"] for r in ch.runs}
    assert when["cudnnConvolutionForward"] == ["cuDNN API: v7 (TORCH_CUDNN_V8_API_DISABLED=1 picks v7)"]
    assert when["cudnnBackendExecute"] == ["cuDNN API: v8 (cudnn_frontend) (TORCH_CUDNN_V8_API_DISABLED=1 picks v7)"]


def test_copy_engine_paths_beside_the_copy_kernel(mini_index):
    """Note [Copies without a kernel]: copy_kernel_cuda's cudaMemcpyAsync paths are library steps
    of the CUDA runtime, each with its condition, beside the copy kernel's gpu_kernel."""
    ch = mini_index.chain("copy_", keys=["CUDA"])
    libs = {s.symbol: s for s in steps(ch, "CUDA") if s.role == "library"}
    assert {"CUDACachingAllocator::memcpyAsync", "cudaMemcpyAsync", "at::cuda::memcpy_and_sync"} <= set(libs)
    assert libs["cudaMemcpyAsync"].line == 15 and "CUDA runtime" in libs["cudaMemcpyAsync"].detail
    assert find(ch, "CUDA", "call", "gpu_kernel") is not None
    when = {r.name: [w.text for w in r.when] for r in ch.runs}
    assert "if (memcpy_eligible)" in when["CUDACachingAllocator::memcpyAsync"]
    assert "else of if (non_blocking)" in when["at::cuda::memcpy_and_sync"]


def test_vml_names_made_by_token_pasting_are_mkl_calls(mini_index):
    """vml.h's IMPLEMENT_VML_MKL_STUB writes vm##mkltype##mklop: the chain names vmsExp/vmdExp, the
    real MKL functions, once per specialization (the macro's three calls sit on one line)."""
    ch = mini_index.chain("exp.out", keys=["CPU"])
    libs = [s for s in steps(ch, "CPU") if s.role == "library"]
    assert sorted(s.symbol for s in libs) == ["vmdExp", "vmsExp"]
    assert all(s.file == "aten/src/ATen/cpu/vml.h" and "MKL" in s.detail for s in libs)
