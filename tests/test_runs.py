"""The runs block (resolve/runs.py, Note [What runs, first]): what each key runs, main path first,
with the condition that picks it; its text (views/text.py) and --json. Chains built from model
records for the ranking rules, the fixture tree for the CLI."""
from __future__ import annotations

import json

import pytest

from atenmap.model import Chain, KeyChain, Operator, OperatorName, Location, SourceInfo, Step
from atenmap.resolve import conditions
from atenmap.resolve.chain import OTHER_NATIVE
from atenmap.resolve.runs import run_name, runs
from atenmap.views.terminal import Terminal
from atenmap.views.text import chain_lines

from .conftest import FIXTURE_TREE, PROGRESS, cli_run

SRC = str(FIXTURE_TREE)


def S(role, symbol, file="aten/x.cpp", line=1, detail="", children=()):
    return Step.make(role, symbol, file, line, detail, children=children)


def chain_of(*steps, key="CUDA"):
    op = Operator(OperatorName("op"), "op(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    c = Chain(op, SourceInfo("/nowhere", "2.6.0"), (KeyChain(key, tuple(steps)),))
    return Chain(c.op, c.source, c.keys, runs=runs(c, None))


def test_library_calls_of_the_op_lead_helper_op_kernels_and_setup_calls_follow():
    """mm's pattern: the native calls copy_ (another op's native function) for a conj input before
    its cuBLAS calls; the cuBLAS set-up call and the copy kernel come after the gemm."""
    copy = S("helper", "at::native::copy_", "Copy.cpp", 9, f"called at Blas.cpp:3; {OTHER_NATIVE}", children=[
        S("launch", "vectorized_elementwise_kernel<<<g, b, 0, s>>>", "CUDALoops.cuh", 158)])
    gemm = S("library", "at::cuda::blas::gemm", "Blas.cpp", 5, children=[
        S("library", "cublasSetStream", "CublasHandlePool.cpp", 20), S("library", "cublasSgemm", "CUDABlas.cpp", 30)])
    c = chain_of(S("native", "TORCH_IMPL_FUNC(mm_out_cuda)", "Blas.cpp", 1, children=[copy, gemm]))
    assert [r.name for r in c.runs] == ["at::cuda::blas::gemm", "cublasSgemm", "vectorized_elementwise_kernel",
                                        "cublasSetStream"]
    assert c.runs[2].via == ("at::native::copy_".rsplit("::", 1)[-1],) and c.runs[3].setup
    assert all(r.key == "CUDA" for r in c.runs)


def test_alternatives_behind_op_calls_one_thread_launches_last():
    """SDPA's pattern: a composite picks a backend by switch; the cuDNN case launches a 1-thread
    bookkeeping kernel and sets a stream; the flash case reaches its kernels through two op_calls;
    a pad helper reaches fill kernels through three."""
    cudnn = S("op_call", "aten::_cudnn_attention", "attention.cpp", 719, children=[
        S("yaml", "_cudnn_attention", "native_functions.yaml", 2, children=[S("native", "cudnn_attention_cuda", "a.cu", 1, children=[
            S("launch", "unpack_cudnn<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>", "a.cu", 810),
            S("library", "cudnnSetStream", "Handle.cpp", 53)])])])
    fill = S("launch", "fill_kernel<<<g, b>>>", "Fill.cu", 3)
    for name in ("fill_", "constant_pad_nd", "pad"):
        fill = S("op_call", f"aten::{name}", "PadNd.cpp", 9, children=[S("yaml", name, "n.yaml", 1, children=[fill])])
    flash = S("launch", "flash_fwd_kernel<<<grid, t, smem, stream>>>", "flash_fwd_launch_template.h", 93)
    for name in ("_flash_attention_forward", "_flash_attention"):
        flash = S("op_call", f"aten::{name}", "attention.cpp", 731, children=[S("yaml", name, "n.yaml", 1, children=[flash])])
    c = chain_of(S("native", "at::native::sdpa", "attention.cpp", 696, children=[cudnn, fill, flash]))
    assert [run_name(Step.make("launch", s)) for s in ("k<<<1,1>>>",)] == ["k"]
    assert [r.name for r in c.runs] == ["flash_fwd_kernel", "fill_kernel", "unpack_cudnn", "cudnnSetStream"]
    assert c.runs[0].via == ("aten::_flash_attention", "aten::_flash_attention_forward")


def test_one_entry_per_place_kernels_only_where_nothing_launches():
    launch = S("launch", "k<<<g, b>>>", "L.cuh", 7, "kernel launch [#if !(defined(USE_ROCM))]")
    c = chain_of(S("kernel", "at::native::k_cuda", "K.cu", 1, children=[
        S("call", "at::native::gpu_kernel", "Loops.cuh", 1, children=[launch]),
        S("call", "at::native::gpu_kernel2", "Loops.cuh", 2, children=[launch])]))
    assert [(r.role, r.name, r.line) for r in c.runs] == [("launch", "k", 7)]
    assert [(w.kind, w.text) for w in c.runs[0].when] == [("#if", "!(defined(USE_ROCM))")]
    cpu = chain_of(S("kernel", "at::native::add_kernel", "AddKernel.cpp", 4), key="CPU")
    assert [(r.role, r.name) for r in cpu.runs] == [("kernel", "at::native::add_kernel")]
    assert chain_of(S("native", "f", "F.cpp", 1)).runs == ()


def test_conditions_from_the_callers_text(tmp_path):
    """The launch's own site has the switch; a launch with no branch of its own takes its caller's."""
    (tmp_path / "L.cuh").write_text(
        "void launch_vec(int vec_size) {\n  switch (vec_size) {\n    case 4:\n      vk<<<g, b>>>();\n"
        "      break;\n  }\n}\nvoid launch_unrolled() {\n  uk<<<g, b>>>();\n}\n"
        "void impl(bool contiguous) {\n  if (contiguous) {\n    launch_unrolled();\n  }\n}\n")
    unrolled = S("call", "launch_unrolled", "L.cuh", 8, "called at L.cuh:13", children=[S("launch", "uk<<<g, b>>>", "L.cuh", 9)])
    c = Chain(chain_of().op, SourceInfo(str(tmp_path), "2.6.0"), (KeyChain("CUDA", (S("kernel", "k", "L.cuh", 11, children=[
        S("call", "launch_vec", "L.cuh", 1, "called at L.cuh:12", children=[S("launch", "vk<<<g, b>>>", "L.cuh", 4)]),
        unrolled]),)),))
    got = {r.name: [(w.kind, w.text, w.loc.line) for w in r.when] for r in runs(c, str(tmp_path))}
    assert got == {"vk": [("case", "case 4:", 3), ("switch", "switch (vec_size)", 2)],
                   "uk": [("if", "if (contiguous)", 12)]}
    assert runs(c, str(tmp_path / "missing"))[0].when == ()  # no file: no condition, no error


def test_text_opens_each_key_with_its_runs_and_names_survive_80_columns():
    long = "a_kernel_name_long_enough_to_need_a_line_of_its_own_at_eighty"
    deep = S("launch", f"{long}<<<grid, block, 0, stream>>>", "aten/src/ATen/native/cuda/Deep.cuh", 12)
    for i in range(12):
        deep = S("call", f"at::native::level_{i}", "aten/src/ATen/native/cuda/Deep.cuh", 100 + i, children=[deep])
    c = chain_of(S("native", "at::native::op", "aten/src/ATen/native/Op.cpp", 3, children=[deep]))
    lines = chain_lines(c, term=Terminal(width=80))
    assert lines[:2][0].startswith("op: ") and lines[3:6] == ["[CUDA]", "runs (1, main path first):", lines[5]]
    assert long in lines[5] or long in lines[6]
    assert all(len(ln) <= 80 for ln in lines)
    tree = lines[lines.index("the way there:"):]
    assert sum(long in ln for ln in tree) == 1  # whole, on a line of its own, in the tree too
    assert any("13›" in ln for ln in tree)  # deep levels folded, the depth shown as a number
    tree_only = chain_lines(c, parts=("tree",))
    assert tree_only[3] == "[CUDA]" and tree_only[4].split() == ["aten/src/ATen/native/Op.cpp:3", "native", "at::native::op"]
    assert "the way there:" not in chain_lines(c, parts=("runs",))


def test_cli_runs_tree_and_json(capsys):
    code, out, err = cli_run(capsys, "mm", "--key", "CUDA", "-s", SRC, drop=PROGRESS)
    assert code == 0, err
    lines = out.splitlines()
    block = lines[lines.index("[CUDA]") + 1:lines.index("the way there:")]
    assert block[0] == "runs (1, main path first):"
    assert block[1].startswith("aten/src/ATen/native/cuda/Blas.cpp:11") and "library" in block[1]
    assert block[1].rstrip().endswith("at::cuda::blas::gemm")
    assert block[2].strip().startswith("when: dtypes half, float, double")
    code, out, _ = cli_run(capsys, "mm", "--key", "CUDA", "-s", SRC, "--runs", drop=PROGRESS)
    assert code == 0 and "the way there:" not in out and "at::cuda::blas::gemm" in out and "[Python]" not in out
    code, out, _ = cli_run(capsys, "mm", "--key", "CUDA", "-s", SRC, "--tree", drop=PROGRESS)
    lines = out.splitlines()
    assert code == 0 and "runs (" not in out and "the way there:" not in out and "[CUDA]" in lines
    code, out, err = cli_run(capsys, "mm", "--key", "CUDA", "-s", SRC, "--tree", "--runs", drop=PROGRESS)
    assert code == 2 and out == "" and err.startswith("atenmap: error: --tree and --runs")
    code, out, _ = cli_run(capsys, "mm", "--key", "CUDA", "-s", SRC, "--json", drop=PROGRESS)
    d = json.loads(out)
    assert d["runs"] == [{"key": "CUDA", "role": "library", "name": "at::cuda::blas::gemm",
                          "file": "aten/src/ATen/native/cuda/Blas.cpp", "line": 11, "generated": False,
                          "when": [{"kind": "dtypes", "text": d["runs"][0]["when"][0]["text"],
                                    "file": "aten/src/ATen/native/cuda/Blas.cpp", "line": 10}],
                          "via": [], "setup": False}]


@pytest.mark.parametrize("option", ["--tree", "--runs"])
def test_quick_path_knows_the_new_options(option):
    from atenmap.cli.quick import chain_arguments

    got = chain_arguments(["mm", option])
    assert got is not None and got[option[2:]] is True


@pytest.mark.parametrize("name, setup", [
    ("cublasSetStream", True), ("::cublasLtMatmulDescSetAttribute", True), ("cublasLtMatmulAlgoGetHeuristic", True),
    ("cudnnSetStream", True), ("cusolverDnCreate", True), ("cudnnCreateTensorDescriptor", True),
    ("cublasLtMatmul", False), ("cublasSgemm", False), ("at::cuda::blas::gemm_and_bias", False),
    ("cub::DeviceRadixSort::SortPairs", False), ("cufftExecC2C", False), ("thrust::sort_by_key", False),
    # snake_case C++ libraries (oneDNN's ideep): the verb comes first; the primitive's compute is the work
    ("ideep::has_bf16_type_support", True), ("ideep::attr_t::fuse_relu", True), ("ideep::tensor::get_dims", True),
    ("ideep::attr_t::set_fpmath_mode", True), ("ideep::convolution_forward::compute_v3", False),
    ("ideep::matmul_forward::compute", False), ("at::cuda::blas::getrfBatched", False), ("sgetrf_", False),
])
def test_setup_calls_by_their_verb(name, setup):
    from atenmap.resolve.libraries import is_setup_call

    assert is_setup_call(name) is setup


def test_cutting_helpers():
    from atenmap.views.terminal import fold_prefix, hang, shorten_middle, tree_levels, wrap_words

    assert shorten_middle("gen:aten/src/ATen/native/cuda/Deep.cuh:12", 30) == "gen:aten/…/cuda/Deep.cuh:12"
    assert fold_prefix("│  " * 9, 10, 4) == "10›│  │  │  " and fold_prefix("│  ", 1, 4) == "│  "
    assert tree_levels(None, 40) is None and tree_levels(80, 42) == 4
    assert hang("kernel_name", 10, 80) == [" " * 10 + "kernel_name"]
    assert hang("k" * 70, 20, 80) == [" " * 9 + "k" * 70]  # as far right as it fits, the last column free
    pieces = hang("a::" * 40, 4, 80)  # wider than the terminal: in pieces cut at "::", nothing lost
    assert len(pieces) == 2 and all(len(p) <= 80 for p in pieces) and "".join(p[2:] for p in pieces) == "a::" * 40
    lines = wrap_words("atenmap: running /a/b/torchgen (code from that tree); more words here", 30, "  ")
    assert all(len(ln) <= 30 for ln in lines) and " ".join(ln.strip() for ln in lines) == (
        "atenmap: running /a/b/torchgen (code from that tree); more words here")


def test_calls_of_one_line_run_in_the_order_they_finish(tmp_path):
    # Note [Calls run when they finish]: `at::isclose(a, b).all()` runs isclose first, though the
    # parse meets the outer call (all) first; calls on different lines keep their order
    (tmp_path / "aten").mkdir()
    (tmp_path / "aten" / "x.cpp").write_text("bool f(const Tensor& a, const Tensor& b) {\n"
                                             "  return at::isclose(a, b).all().item<bool>();\n"
                                             "}\n")
    launch = lambda name: S("launch", f"{name}<<<1, 1>>>", "aten/k.cu", 3)
    native = S("native", "at::native::f", "aten/x.cpp", 1, children=(
        S("op_call", "aten::all", "aten/x.cpp", 2, "calls the operator (all)", children=(launch("reduce_kernel"),)),
        S("op_call", "aten::isclose", "aten/x.cpp", 2, "calls the operator (isclose)",
          children=(S("launch", "eq_kernel<<<1, 1>>>", "aten/k.cu", 9),)),
    ))
    op = Operator(OperatorName("op"), "op(Tensor self) -> Tensor", Location("native_functions.yaml", 1))
    c = Chain(op, SourceInfo(str(tmp_path), "2.6.0"), (KeyChain("CompositeExplicitAutograd", (native,)),))
    assert [r.name for r in runs(c, str(tmp_path))] == ["eq_kernel", "reduce_kernel"]
    assert [r.name for r in runs(c, None)] == ["reduce_kernel", "eq_kernel"]  # no text: the parse's order


def test_a_special_value_is_an_argument_s_own(tmp_path):
    # Note [Special cases after the general one]: `n == 0`, `output_size[0] == 1` are; a size the
    # code derives from an argument (`self.numel() == 1`) is not, nor a name the schema lacks
    from atenmap.model import Reason
    from atenmap.resolve.runs import ANY_CALL, _special_case

    params = frozenset({"self", "n", "output_size"})
    ctx = lambda _r: ({}, {})
    special = lambda text: _special_case((Reason("if", text, None),), ANY_CALL, ctx, params)
    assert special("if (n == 0)") and special("if (output_size[0] == 1 && output_size[1] == 1)") and special("if (n==1)")
    assert not special("if (self.numel() == 1)") and not special("if (inner_size == 1)")
    assert not special("if (n == 0 || flag)")
    # one value named by the rank: `dim == ndim - 1` (the scans' innermost dimension) is one of ndim
    # values of the argument; the rank itself tested is not (`ndim == 2`, `self.dim() == 4`)
    params = params | {"dim"}
    special = lambda text: _special_case((Reason("if", text, None),), ANY_CALL, ctx, params)
    assert special("if (dim == ndim - 1)") and special("if (dim == self.dim() - 1)")
    assert not special("if (ndim == 2)") and not special("if (self.dim() == 4)") and not special("if (dim == other)")
    # and an enumerator: embedding_bag's `mode == EmbeddingBagMode::MAX` (sum and mean share the other kernel)
    params = params | {"mode"}
    special = lambda text: _special_case((Reason("if", text, None),), ANY_CALL, ctx, params)
    assert special("if (mode == EmbeddingBagMode::MAX)") and not special("if (kind == EmbeddingBagMode::MAX)")


def test_a_method_call_s_object_is_the_callee_s_self(tmp_path):
    # Note [Arguments an operator call binds]: `self.polygamma(n)` calls polygamma(int64_t n, const
    # Tensor& self): the object is the schema's self, not the first parameter
    from atenmap.resolve.runs import _Reader

    (tmp_path / "aten").mkdir()
    (tmp_path / "aten" / "a.cpp").write_text("Tensor special_polygamma(int64_t n, const Tensor& self) {\n"
                                             "  return self.polygamma(n);\n}\n"
                                             "Tensor polygamma(int64_t n, const Tensor& self) {\n"
                                             "  return self;\n}\n")
    call = S("op_call", "aten::polygamma", "aten/a.cpp", 2, "calls the operator (polygamma)")
    native = S("native", "at::native::polygamma", "aten/a.cpp", 4)
    outer = S("native", "at::native::special_polygamma", "aten/a.cpp", 1)
    reader = _Reader(str(tmp_path), lambda f: [(1, 3), (4, 6)])
    bound = reader.bindings((outer, call, native))
    assert bound[("aten/a.cpp", 4, 6)] == {"n": "n", "self": "self"}


@pytest.mark.parametrize("cond,key,other", [
    ("defined(__aarch64__) && AT_MKLDNN_ACL_ENABLED()", "CPU", True),
    ("AT_BUILD_WITH_BLAS() && C10_IOS", "CPU", True),
    ("AT_BUILD_WITH_BLAS() && !(C10_IOS)", "CPU", False),
    ("defined __APPLE__", "CPU", True),
    ("defined(__APPLE__)", "MPS", False),  # an MPS build is macOS on Apple silicon
    ("defined(_WIN32)", "MPS", True),
    ("defined(__aarch64__) || defined(__x86_64__)", "CPU", False),  # either machine
    ("defined(__aarch64__) && X || defined(__x86_64__)", "CPU", False),
    ("!(X && C10_MOBILE)", "CPU", False),  # the #else of a mobile-only branch
    ("defined(_WIN32 && defined(NVRTC_SHORTHASH))", "CUDA", False),  # not one macro test
    ("defined(_WIN32) && …", "CUDA", False),  # a label cut short says nothing
])
def test_another_machine_s_code(cond, key, other):
    # Note [The machine a platform's build is for]
    assert conditions.other_machine(cond, key) is other


@pytest.mark.parametrize("body, magma_line, cusolver_line", [
    ("  bool use_magma = at::globalContext().linalgPreferredBackend() == at::LinalgBackend::Magma;\n"
     "  if (use_magma) {\n    svd_magma();\n  } else {\n    svd_cusolver();\n  }\n", 10, 12),
    ("  auto b = at::globalContext().linalgPreferredBackend();\n  switch (b) {\n"
     "    case at::LinalgBackend::Magma:\n      svd_magma();\n      break;\n"
     "    case at::LinalgBackend::Cusolver:\n    default:\n      svd_cusolver();\n  }\n", 11, 15),
])
def test_a_setting_left_at_its_default_comes_first(tmp_path, body, magma_line, cusolver_line):
    """Note [A setting left at its default] (resolve/choices.py): MAGMA's path, written first, runs
    only for whoever sets preferred_linalg_library; it stays, after cuSOLVER's."""
    (tmp_path / "B.cpp").write_text("void svd_magma() {\n  magma_sgesdd();\n}\nvoid svd_cusolver() {\n"
                                    "  cusolverDnSgesvd();\n}\nvoid svd_kernel() {\n" + body + "}\n")
    c = Chain(chain_of().op, SourceInfo(str(tmp_path), "2.6.0"), (KeyChain("CUDA", (S("kernel", "svd_kernel", "B.cpp", 7, children=[
        S("call", "svd_magma", "B.cpp", 1, f"called at B.cpp:{magma_line}", children=[S("library", "magma_sgesdd", "B.cpp", 2)]),
        S("call", "svd_cusolver", "B.cpp", 4, f"called at B.cpp:{cusolver_line}",
          children=[S("library", "cusolverDnSgesvd", "B.cpp", 5)])]),)),))
    got = [r for r in runs(c, str(tmp_path)) if r.role == "library"]
    assert [r.name for r in got] == ["cusolverDnSgesvd", "magma_sgesdd"]
    said = [" ".join(w.text for w in r.when) for r in got]
    assert "linalg library: Magma" in said[1] and "Magma" not in said[0].replace("not Magma", ""), said


def test_the_local_lambda_look_sees_every_head_the_walk_reads():
    """Note [A local lambda runs where it is used]: the cheap look before the walk finds each head
    extract/enclosing.py's _local_lambda names (``auto const f = [`` too), else its uses go unread."""
    from atenmap.extract.enclosing import _local_lambda
    from atenmap.resolve.runs import _LOCAL_LAMBDA

    for head in (b"const auto f = [&]", b"auto const f = [&]", b"auto&& f = [n]", b"static const auto& f = [=]"):
        assert _local_lambda(head) == b"f" and _LOCAL_LAMBDA.search(head + b"() {"), head
