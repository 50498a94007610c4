"""Issue 21 on the real 2.6.0 tree: at 80 columns, on a real pseudo-terminal and with COLUMNS=80,
every launch, jit and library name of --json is printed whole, one within the first 15 lines
(for mm a cuBLAS call, for SDPA a flash kernel), and no line is wider than the terminal."""
from __future__ import annotations

import json
import re

import pytest

from .conftest import PROGRESS, cli_run
from .test_progress import run_on_pty

pytestmark = pytest.mark.realtree

OPS = ["_scaled_dot_product_flash_attention", "softmax.int", "mm", "add.out", "index_put_", "cumsum", "sort.stable",
       "torch.nn.functional.scaled_dot_product_attention", "mul.out"]
_ESC = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x1b]*\x1b\\")


def _names(d: dict) -> set[str]:
    out, todo = set(), [s for k in d["keys"] for s in k["steps"]]
    while todo:
        s = todo.pop()
        if s["role"] in ("launch", "jit", "library"):
            out.add(s["symbol"].split("<<<", 1)[0].strip() if s["role"] == "launch" else s["symbol"])
        todo += s["children"]
    return out


def _check(op: str, text: str, names: set[str], runs: list[dict]) -> None:
    lines = text.splitlines()
    assert names and all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80][:3]
    missing = [n for n in names if n not in text]
    assert not missing, (op, missing)
    first = next(i for i, ln in enumerate(lines) if any(n in ln for n in names))
    assert first < 15, (op, lines[:16])
    lead = lines[first]
    if op == "mm":
        assert re.search(r"\bcublas|at::cuda::blas::", lead), lead
    if "scaled_dot_product" in op:
        assert "flash_fwd" in lead, lead
    assert runs and runs[0]["name"] in lead


@pytest.fixture(scope="module")
def json_of(real_index_26, shared_cache):
    """``--json`` of an op, asked once per module."""
    got = {}

    def get(capsys, monkeypatch, op):
        if op not in got:
            monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
            code, out, err = cli_run(capsys, op, "--key", "CUDA", "-s", real_index_26.source.root, "--json",
                                     drop=PROGRESS)
            assert code == 0, err
            got[op] = json.loads(out)
        return got[op]
    return get


@pytest.mark.parametrize("op", OPS)
def test_columns_80(capsys, monkeypatch, real_index_26, shared_cache, json_of, op):
    d = json_of(capsys, monkeypatch, op)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli_run(capsys, op, "--key", "CUDA", "-s", real_index_26.source.root, drop=PROGRESS)
    assert code == 0, err
    _check(op, out, _names(d), d["runs"])


@pytest.mark.parametrize("op", OPS)
def test_real_pty_80(capsys, monkeypatch, tmp_path, real_index_26, shared_cache, json_of, op):
    d = json_of(capsys, monkeypatch, op)
    code, _, raw = run_on_pty([op, "--key", "CUDA", "-s", real_index_26.source.root, "--no-pager"], tmp_path, 80,
                              {"ATENMAP_CACHE": str(shared_cache)}, stdout_on_pty=True)
    assert code == 0
    text = _ESC.sub("", raw)
    assert "\x1b" not in text
    _check(op, "\n".join(ln for ln in text.splitlines() if not ln.startswith("atenmap: ")), _names(d), d["runs"])


def test_runs_rank_the_main_path_first(real_index_26):
    mm = real_index_26.chain("mm", keys=["CUDA"]).runs
    # mm_out_cuda passes result as self: addmm's cuBLASLt epilogue is no run of mm (Note [Arguments a caller binds])
    # cuBLAS, the BLAS library a user who sets nothing runs, before cuBLASLt (Note [A setting left at its default])
    assert mm[0].name == "at::cuda::blas::gemm" and mm[1].name == "cublasSgemm"
    assert "cublasLtMatmul" in {r.name for r in mm}
    assert "at::cuda::blas::gemm_and_bias" not in {r.name for r in mm}
    assert "at::cuda::blas::gemm_and_bias" == real_index_26.chain("addmm", keys=["CUDA"]).runs[0].name
    # its only copy_ is addmm's `if (&result != &self)` copy of the bias: dead for mm, as is everything via it
    assert not any(r.via for r in mm) and all(r.role == "library" for r in mm)
    names = [r.name for r in mm]
    # float64's cublasDgemm (a specialization for double) after float32's work (Note [Specializations by dtype])
    assert names.index("cublasSgemm") < names.index("cublasDgemm")
    assert any(r.via == ("copy_",) for r in real_index_26.chain("addmm", keys=["CUDA"]).runs)
    assert all(r.setup for r in mm if r.name.startswith("cublasSet"))
    sdpa = real_index_26.chain("scaled_dot_product_attention", keys=["CUDA"]).runs
    assert sdpa[0].name == "flash_fwd_kernel" and sdpa[0].via[0] == "aten::_scaled_dot_product_flash_attention"
    add = real_index_26.chain("add.out", keys=["CUDA"]).runs
    # Note [Each thing that runs once, first]: the unrolled kernel before the second vector width, and
    # the strided loop that only the guessed strides rule out before it too (Note [Strides are the
    # kernel's operands'])
    assert [(r.name, r.line, [w.text for w in r.when][:2]) for r in add[:4]] == [
        ("vectorized_elementwise_kernel", 158, ["case 4:", "switch (vec_size)"]),
        ("unrolled_elementwise_kernel", 172, ["case 1:", "switch (vec_size)"]),
        ("elementwise_kernel", 230, ["after if (contiguous) return", "after if (N == 0) return"]),
        ("vectorized_elementwise_kernel", 163, ["case 2:", "switch (vec_size)"])]
    unrolled = next(r for r in add if r.line == 201)
    assert unrolled.when[0].text == "if (contiguous)"  # its caller's branch: the launch has none of its own


def test_a_local_lambda_ranks_where_it_is_used(real_index_26):
    """Note [A local lambda runs where it is used]: lu_factor's ``lu_factor_magma`` lambda is used
    only under ``preferred_backend == Magma`` (and the ``!USE_LINALG_SOLVER`` build): its looped
    MAGMA call ranks with that setting, after cuSOLVER's getrf, which the default takes."""
    runs = real_index_26.chain("linalg_lu_factor_ex", keys=["CUDA"]).runs
    names = [r.name for r in runs]
    assert names[0] == "at::cuda::solver::getrf"
    looped = next(r for r in runs if r.name == "magma_sgetrf_gpu")
    assert any(w.text.startswith("linalg library: Magma (") for w in looped.when)
    assert names.index("magma_sgetrf_gpu") > names.index("cublasSgetrfBatched")
    # Note [The first way the defaults take]: lu_solve_kernel's lambdas and helpers in the order the
    # default heuristic reaches them (n == k <= 16: the batched cuBLAS solve), not the order they are
    # written or first called under `preferred_backend == Cusolver`
    solve = [r.name for r in real_index_26.chain("linalg_lu_solve", keys=["CUDA"]).runs]
    assert solve[0] == "at::cuda::blas::getrsBatched"
    assert solve.index("at::cuda::blas::getrsBatched") < solve.index("_elementwise_kernel")
    # a later call site of the same helper is the default's when the first one's branch is decided false
    # by the default call (ldl_factor_kernel: MAGMA only `if (LD.is_complex() && hermitian)`)
    ldl = [r.name for r in real_index_26.chain("linalg_ldl_factor_ex", keys=["CUDA"]).runs]
    assert ldl[0] == "at::cuda::solver::sytrf_bufferSize" and ldl.index("at::cuda::solver::sytrf") < ldl.index("magma_ssytrf_gpu")


def test_snake_case_setup_calls_come_after_the_primitive(real_index_26):
    # Note [Set-up calls]: oneDNN's ideep names its set-up calls verb first (has_bf16_type_support,
    # attr_t::fuse_relu, tensor::get_dims); conv2d on CPU led with them, before any convolution primitive
    runs = real_index_26.chain("conv2d", keys=["CPU"]).runs
    first = [r.name for r in runs[:3]]
    assert not any(r.setup for r in runs[:3]), first
    assert any(r.name.endswith("::compute_v3") for r in runs[:3]), first
    assert any(r.setup and r.name == "ideep::has_bf16_type_support" for r in runs), first
