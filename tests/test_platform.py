"""``--platform rocm`` (issue 36, Note [The ROCm side of #if] in resolve/conditions.py) on a copy of the
fixture tree with fixtures/rocm/ (a launch on each side of USE_ROCM, a native/miopen file whose
real body is under AT_ROCM_ENABLED()); ``--platform cuda``, the default, answers as before."""
from __future__ import annotations

import shutil

import pytest

from atenmap.api import Index
from atenmap.resolve import conditions

from .conftest import FIXTURE_TREE, cli_run

ROCM = FIXTURE_TREE.parent / "rocm"
CU = "aten/src/ATen/native/cuda/MiniRocm.cu"
MIOPEN = "aten/src/ATen/native/miopen/Conv_miopen.cpp"
ADDED_OPS = """
- func: mini_platform(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_platform_cuda

- func: mini_miopen_conv(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_miopen_conv
"""


@pytest.fixture
def rocm_tree(mini_tree):
    shutil.copy(ROCM / "MiniRocm.cu", mini_tree / CU)
    (mini_tree / MIOPEN).parent.mkdir(parents=True)
    shutil.copy(ROCM / "Conv_miopen.cpp", mini_tree / MIOPEN)
    yaml = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + ADDED_OPS)
    return mini_tree


def _runs(ix, op, platform):
    return [(r.name, r.file, r.line) for r in ix.chain(op, keys=["CUDA"], platform=platform).runs]


def test_rocm_takes_the_use_rocm_side_and_follows_miopen(rocm_tree):
    with Index.open(rocm_tree, codegen=False) as ix:
        assert _runs(ix, "mini_platform", "cuda") == [("mini_cuda_kernel", CU, 14)]
        assert _runs(ix, "mini_platform", "rocm") == [("mini_rocm_kernel", CU, 12)]
        assert _runs(ix, "mini_miopen_conv", "rocm") == [("miopenConvolutionForward", MIOPEN, 17)]

        def natives(platform):
            return [(s.file, s.line) for s in ix.chain("mini_miopen_conv", keys=["CUDA"], platform=platform).keys[0].walk()
                    if s.role == "native"]
        # a CUDA build has no ROCm: the stub is the definition it compiles (Note [Build-configuration
        # macros] in resolve/conditions.py; before, both sides of AT_ROCM_ENABLED() were shown)
        assert natives("cuda") == [(MIOPEN, 8)]
        assert natives("rocm") == [(MIOPEN, 16)]  # not the !AT_ROCM_ENABLED() stub
        # the default platform answers exactly as without the option
        assert ix.chain("mul.out", keys=["CUDA"]) == ix.chain("mul.out", keys=["CUDA"], platform="cuda")


def test_platform_option(capsys, rocm_tree):
    code, out, err = cli_run(capsys, "mini_platform", "--key", "CUDA", "--platform", "rocm", "--runs",
                             "-s", str(rocm_tree), "--no-codegen", errors_only=True)
    assert code == 0 and f"{CU}:12" in out and "mini_rocm_kernel" in out and "mini_cuda_kernel" not in out
    for args in (("mini_platform",), ("chain", "mini_platform"), ("graph", "mini_platform")):
        code, out, err = cli_run(capsys, *args, "--platform", "metal", "-s", str(rocm_tree), "--no-codegen",
                                 errors_only=True)
        if args[0] == "graph":  # graph has no --platform: click's one-line usage error
            assert code == 2 and err.count("\n") == 1 and "--platform" in err
            continue
        assert code == 2 and out == "" and err.strip() == (
            "atenmap: error: --platform metal: no such platform; platforms: cuda, rocm")


SELECT_OPS = """
- func: mini_select_conv(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_select_conv

- func: mini_select_rnn(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_select_rnn

- func: mini_select_empty(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_select_empty_cuda

- func: mini_select_native(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_select_native_cuda

- func: mini_cudnn_backend(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_cudnn_backend

- func: mini_miopen_backend(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_miopen_backend

- func: mini_miopen_depthwise(Tensor self) -> Tensor
  dispatch:
    CUDA: mini_miopen_depthwise
"""
SELECT = "aten/src/ATen/native/MiniSelect.cpp"
BACKENDS = "aten/src/ATen/native/cuda/MiniBackends.cu"
CUDNN = "aten/src/ATen/native/cudnn/MiniCudnnBackend.cpp"
MIOPEN_BACKEND = "aten/src/ATen/native/miopen/MiniMiopenBackend.cpp"
HANDLE = "aten/src/ATen/cudnn/MiniHandle.cpp"


@pytest.fixture
def select_tree(mini_tree):
    for name, dest in (("MiniSelect.cpp", SELECT), ("MiniBackends.cu", BACKENDS), ("MiniCudnnBackend.cpp", CUDNN),
                       ("MiniMiopenBackend.cpp", MIOPEN_BACKEND), ("MiniHandle.cpp", HANDLE)):
        (mini_tree / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROCM / name, mini_tree / dest)
    yaml = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + SELECT_OPS)
    return mini_tree


def test_rocm_backend_selection_takes_miopen_where_cuda_takes_cudnn(select_tree):
    """Note [What a ROCm build leaves out] (resolve/rocmbuild.py): the selector's cuDNN returns are
    not taken, MIOpen takes cuDNN's place, the cuDNN body is not built (its placeholder is), the empty
    input's backend comes after the backends."""
    with Index.open(select_tree, codegen=False) as ix:
        cuda = [n for n, _, _ in _runs(ix, "mini_select_conv", "cuda")]  # as before: cuDNN before MIOpen
        assert cuda.index("cudnnConvolutionForward") < cuda.index("miopenConvolutionForward")
        rocm = _runs(ix, "mini_select_conv", "rocm")
        assert rocm[0] == ("miopenConvolutionForwardImmediate", MIOPEN_BACKEND, 9)  # Miopen, cuDNN's place
        assert rocm[1] == ("miopenConvolutionForward", MIOPEN_BACKEND, 14)  # MiopenDepthwise
        assert not any(n.startswith("cudnn") for n, _, _ in rocm)
        assert rocm[-1][0] == "mini_empty_kernel"  # the empty input's backend after the others
        assert ("mini_native_kernel", BACKENDS, 14) in rocm
        # RNN's style: `if (at::cudnn_is_acceptable(self))` is never taken on ROCm; ATen/cudnn/ is not built
        rnn_cuda = _runs(ix, "mini_select_rnn", "cuda")
        assert ("cudnnSetStream", HANDLE, 6) in rnn_cuda
        rnn = _runs(ix, "mini_select_rnn", "rocm")
        assert rnn[0] == ("miopenConvolutionForwardImmediate", MIOPEN_BACKEND, 9)
        assert not any(n.startswith("cudnn") for n, _, _ in rnn)
        # the cuDNN operator itself: on ROCm only its placeholder is built
        natives = [(s.file, s.line) for s in ix.chain("mini_cudnn_backend", keys=["CUDA"], platform="rocm").keys[0].walk()
                   if s.role == "native"]
        assert natives == [(CUDNN, 18)]


RNN_OPS = """
- func: mini_rnn(Tensor input) -> Tensor
  dispatch:
    CompositeImplicitAutograd: mini_rnn

- func: mini_miopen_rnn(Tensor input) -> Tensor
  dispatch:
    CUDA: mini_miopen_rnn
"""
RNN = "aten/src/ATen/native/MiniRNN.cpp"
RNN_MIOPEN = "aten/src/ATen/native/miopen/MiniRNN_miopen.cpp"


@pytest.fixture
def rnn_tree(mini_tree):
    for name, dest in (("MiniRNN.cpp", RNN), ("MiniRNN_miopen.cpp", RNN_MIOPEN)):
        (mini_tree / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROCM / name, mini_tree / dest)
    yaml = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + RNN_OPS)
    return mini_tree


def test_rocm_stub_kernel_that_calls_an_operator_reaches_miopen(rnn_tree):
    """Note [A stub kernel that calls an operator] (resolve/chain.py): on ROCm the stub's kernel, which
    reaches nothing but an operator call (through a template helper), is read with its operator calls."""
    with Index.open(rnn_tree, codegen=False) as ix:
        rocm = ix.chain("mini_rnn", keys=["CUDA"], platform="rocm").runs
        assert [(r.name, r.loc.file, r.loc.line, r.via) for r in rocm] == [
            ("miopenRNNForwardTraining", RNN_MIOPEN, 19, ("aten::mini_miopen_rnn",)),
            ("miopenRNNForwardInference", RNN_MIOPEN, 21, ("aten::mini_miopen_rnn",)),
            ("at::native::(anonymous namespace)::mini_rnn_miopen", RNN_MIOPEN, 34, ())]  # the registered kernel
        # the default platform does not reach the ROCm registration, as before
        assert [r.name for r in ix.chain("mini_rnn", keys=["CUDA"]).runs] == []


ATTENTION_OPS = """
- func: mini_attention(Tensor q) -> Tensor
  dispatch:
    CUDA: mini_attention_cuda
"""
ATTENTION = "aten/src/ATen/native/transformers/cuda/MiniAttention.cu"
FLASH_CUDA = "aten/src/ATen/native/transformers/cuda/flash_attn/mini_flash_api.cu"
FLASH_HIP = "aten/src/ATen/native/transformers/hip/flash_attn/mini_flash_api.hip"


@pytest.fixture
def attention_tree(mini_tree):
    for name, dest in (("MiniAttention.cu", ATTENTION), ("mini_flash_api.cu", FLASH_CUDA),
                       ("mini_flash_api.hip", FLASH_HIP)):
        (mini_tree / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROCM / name, mini_tree / dest)
    yaml = mini_tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + ATTENTION_OPS)
    return mini_tree


def test_rocm_attention_runs_aotriton(attention_tree):
    """Note [Library names a using-declaration brings in] (resolve/chain.py): the ROCm branch's
    ``attn_fwd`` is AOTriton's; Note [Functions a ROCm build defines in .hip files] (resolve/hipsource.py):
    the flash API's CUDA definition is not built on ROCm, its .hip one is read as text."""
    with Index.open(attention_tree, codegen=False) as ix:
        rocm = [(r.name, r.file, r.line) for r in ix.chain("mini_attention", keys=["CUDA"], platform="rocm").runs]
        assert sorted(rocm) == [("aotriton::v2::flash::attn_fwd", ATTENTION, 9),
                                ("aotriton::v2::flash::attn_fwd", FLASH_HIP, 14)]
        tree = ix.chain("mini_attention", keys=["CUDA"], platform="rocm").keys[0]
        hip = [s for s in tree.walk() if s.file == FLASH_HIP and s.role != "library"]
        assert [(s.symbol, s.line) for s in hip] == [("mini_flash::mha_fwd", 10)]
        assert "read as text" in hip[0].detail
        # the default platform: the CUDA kernels, as before, and no AOTriton
        cuda = [(r.name, r.file, r.line) for r in ix.chain("mini_attention", keys=["CUDA"]).runs]
        assert sorted(cuda) == [("mini_flash_fwd_kernel", FLASH_CUDA, 5), ("mini_mem_eff_kernel", ATTENTION, 11)]



@pytest.mark.parametrize("cond, cuda, rocm", [
    ("!AT_CUDNN_ENABLED()", True, False),  # the stubs of native/cudnn/*.cpp: a CUDA build has cuDNN
    ("!(!AT_CUDNN_ENABLED()) && !defined(USE_CUDNN_RNN_V8_API)", False, True),  # their #else: no cuDNN on ROCm
    ("AT_ROCM_ENABLED()", True, False),  # native/miopen's bodies
    ("!AT_ROCM_ENABLED()", False, True),
    ("!AT_MKLDNN_ENABLED()", True, True),  # both builds have oneDNN
    ("AT_MKL_ENABLED()", False, False),  # not decided by the platform: shown as before
    ("!(defined(USE_ROCM) || !AT_CUDNN_ENABLED())", False, False),  # a disjunction is not read
    ("", False, False),
])
def test_build_configuration_macros(cond, cuda, rocm):
    """Note [Build-configuration macros] (resolve/conditions.py)."""
    assert (conditions.configured_off(cond, "cuda"), conditions.configured_off(cond, "rocm")) == (cuda, rocm)


# ---- kernel --from-trace --platform rocm (Note [A trace of another platform] in trace/join.py) ----
def _rocm_trace(path):
    """A Kineto trace as a ROCm build's torch.profiler writes it (hipLaunchKernel, rocprof's names):
    mini_platform launches mini_rocm_kernel, mini_miopen_conv runs a MIOpen kernel."""
    import json

    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    for i, (op, kernel) in enumerate((("aten::mini_platform", "mini_rocm_kernel(float*)"),
                                      ("aten::mini_miopen_conv", "miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1")), 1):
        t = 1000 * i
        events += [
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 30,
             "args": {"External id": i, "Record function id": 0, "Ev Idx": i - 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": t + 5, "dur": 4,
             "args": {"External id": i, "correlation": 100 + i}},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 50, "dur": 3,
             "args": {"External id": i, "device": 0, "stream": 7, "correlation": 100 + i}},
        ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_a_rocm_trace_joins_the_rocm_chains(capsys, rocm_tree, tmp_path):
    """--platform rocm joins each call with its op's ROCm chain: the MIOpen kernel's ATen line is the
    ROCm build's mini_miopen_conv (which calls miopenConvolutionForward), where a CUDA build's chain
    ends at the !AT_ROCM_ENABLED() stub; --detail names the MIOpen call."""
    import json

    trace = _rocm_trace(tmp_path / "rocm.json")

    def table(*more):
        code, out, err = cli_run(capsys, "kernel", "--from-trace", str(trace), "--format", "json", *more,
                                 "-s", str(rocm_tree), "--no-codegen", errors_only=True)
        assert code == 0, err
        return {r["kernel"]: r for r in json.loads(out)["rows"]}

    rocm = table("--platform", "rocm")
    cuda = table()
    miopen = "miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1"
    assert rocm[miopen]["aten"] == "Conv_miopen.cpp:16"  # the ROCm build's mini_miopen_conv, which calls MIOpen
    assert cuda[miopen]["aten"] == "Conv_miopen.cpp:8"  # a CUDA build's: the !AT_ROCM_ENABLED() stub
    assert rocm["mini_rocm_kernel(float*)"]["aten"] == cuda["mini_rocm_kernel(float*)"]["aten"] == "MiniRocm.cu:10"
    code, out, err = cli_run(capsys, "kernel", "--from-trace", str(trace), "--detail", "--json", "--platform", "rocm",
                             "-s", str(rocm_tree), "--no-codegen", errors_only=True)
    assert code == 0 and "miopenConvolutionForward" in out
