"""Views on the fixture tree: graph (dot/mermaid/svg/png), quickfix lines, editor commands,
OSC-8 links, gdb scripts, search, and operator completion."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from atenmap.cli import main
from atenmap.model import Step
from atenmap.views import UsageError
from atenmap.cli import completions as complete
from atenmap.views import editor
from atenmap.views import gdb
from atenmap.views import graph
from atenmap.resolve import search

from .conftest import FIXTURE_TREE

SRC = str(FIXTURE_TREE)
HAS_DOT = shutil.which("dot") is not None
NO_DOT = "Graphviz `dot` is not installed"


@pytest.fixture(autouse=True)
def _shared_index(request, monkeypatch):
    """CLI tests read the fixture tree's index (with torchgen output, as the CLI builds it) that
    ``mini_index_gen`` built, instead of building their own; tests that need a cache of their own
    ask for ``own_cache``."""
    if "own_cache" not in request.fixturenames:
        store_path = request.getfixturevalue("mini_index_gen").store.path  # CACHE/indexes/NAME/index.sqlite
        monkeypatch.setenv("ATENMAP_CACHE", str(store_path.parents[2]))


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "own-cache"))
    return tmp_path / "own-cache"


_PROGRESS = ("atenmap: indexing", "atenmap: running torchgen", "atenmap: torchgen ran in")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    err = "".join(ln for ln in out.err.splitlines(True) if not ln.startswith(_PROGRESS))
    return exc.value.code or 0, out.out, err


def one_error_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("atenmap: error: ") and "Traceback" not in err


# ---- graph ----------------------------------------------------------------------------------
def test_graph_nodes_edges_and_leaves(mini_index):
    ch = mini_index.chain("mul.out", keys=["CUDA"])
    g = graph.build_graph([ch])
    steps = {graph.node_key(s) for s in ch.keys[0].walk()}
    assert set(g.nodes) == steps
    by_role: dict[str, str] = {}
    for n in g.nodes.values():
        by_role.setdefault(n.step.role, n.id)  # the first of each role
    kinds = {(e.src, e.dst): e.kind for e in g.edges.values()}
    assert kinds[(by_role["yaml"], by_role["native"])] == "dispatch"
    assert kinds[(by_role["stub_call"], by_role["register"])] == "registration"
    assert kinds[(by_role["register"], by_role["kernel"])] == "registration"
    assert kinds[(by_role["kernel"], by_role["call"])] == "call"
    assert not [e for e in g.edges.values() if e.src == by_role["launch"]]
    assert g.shared == []


def test_graph_merges_shared_steps_of_several_ops(mini_index):
    chains = [mini_index.chain(op, keys=["CUDA"]) for op in ("mul.out", "exp.out")]
    g = graph.build_graph(chains)
    shared = {n.step.symbol for n in g.shared}
    assert shared == {"at::native::gpu_kernel", "at::native::gpu_kernel_impl",
                      "at::native::launch_vectorized_kernel",
                      "vectorized_elementwise_kernel<<<grid, num_threads(), 0, stream>>>"}
    launch = next(n for n in g.shared if n.step.role == "launch")
    assert launch.ops == ["mul.out", "exp.out"]
    assert sum(1 for n in g.nodes.values() if n.step.role == "launch") == 1
    dot = graph.to_dot(g)
    gpu = next(n for n in g.shared if n.step.symbol == "at::native::gpu_kernel")
    assert re.search(rf'^  {gpu.id} \[label="Loops.cuh:8\\ngpu_kernel", .*penwidth=2.5\];$', dot, re.M)
    assert "shared by mul.out, exp.out" in dot and ">shared</td>" in dot


def test_helper_and_call_steps_of_one_function_merge():
    a = Step.make("helper", "at::native::gpu_kernel", "Loops.cuh", 8)
    b = Step.make("call", "at::native::gpu_kernel", "Loops.cuh", 8)
    assert graph.node_key(a) == graph.node_key(b) != graph.node_key(Step.make("kernel", b.symbol, b.file, b.line))


def test_graph_labels_keys_on_dispatch_edges_when_several_keys(mini_index):
    g = graph.build_graph([mini_index.chain("mul.out")])
    labels = {tuple(e.labels) for e in g.edges.values() if e.kind == "dispatch"}
    assert labels == {("CPU", "CUDA")}  # yaml -> meta and yaml -> native are shared by both keys
    assert not [e for e in g.edges.values() if e.kind != "dispatch" and e.labels]


def test_dot_text(mini_index):
    dot = graph.render([mini_index.chain("mul.out", keys=["CUDA"])], "dot").decode()
    assert dot.startswith("digraph atenmap {\n  graph [rankdir=TB,") and dot.endswith("}\n")
    assert 'label="BinaryOps.cpp:46\\nTORCH_IMPL_FUNC(mul_out)", fillcolor="#c9daf8"' in dot
    assert 'label="CUDALoops.cuh:18\\nvectorized_elementwise_kernel<<<…>>>"' in dot and "shape=cds" in dot
    assert 'label="BinaryOps.h:14\\nDECLARE_DISPATCH(mul_stub)"' in dot
    assert "style=dashed" in dot and "style=bold" in dot
    assert "rankdir=LR" in graph.render([mini_index.chain("mul.out", keys=["CUDA"])], "dot", "LR").decode()


def test_generated_steps_are_dashed_and_labelled(mini_index):
    from atenmap.model import Chain, KeyChain

    real = mini_index.chain("add.out", keys=["CUDA"])
    placeholder = Step.make("generated", "TORCH_IMPL_FUNC(ufunc_add_CUDA)", None, None, generated=True,
                       children=[Step.make("stub_call", "add_stub", None, None)])
    wrapper = Step.make("generated", "at::(anonymous namespace)::wrapper_CUDA_add_out_out", "/c/aten/RegisterCUDA.cpp", 4,
                   generated=True)
    reg = Step.make("register", 'm.impl("add.out", TORCH_FN(wrapper_CUDA_add_out_out))', "/c/aten/RegisterCUDA.cpp", 24,
               generated=True, children=[wrapper])
    root = Step.make("yaml", "add.out", real.op.loc.file, real.op.loc.line, children=[placeholder, reg])
    g = graph.build_graph([Chain(real.op, real.source, [KeyChain("CUDA", [root])])])
    dot, mm = graph.to_dot(g), graph.to_mermaid(g)
    assert re.search(r'label="\(generated\)\\nTORCH_IMPL_FUNC\(ufunc_add_CUDA\)", fillcolor="#f3f3f3".*'
                     r'style="rounded,filled,dashed"', dot)
    assert 'label="(no source line)\\nadd_stub"' in dot
    # a generated registration keeps its role's colour; the dashes say generated
    assert re.search(r'label="RegisterCUDA.cpp:24\\nm.impl\(\\"add.out\\", wrapper_CUDA_add_out_out\)", '
                     r'fillcolor="#b6d7a8".*dashed', dot)
    assert '<td style="dashed">generated</td>' in dot
    gen_ids = {n.id for n in g.nodes.values() if n.step.generated}
    assert "  classDef gen stroke-dasharray:4 3" in mm.splitlines()
    assert mm.splitlines()[-1] == f"  class {','.join(sorted(gen_ids, key=lambda i: int(i[1:])))} gen"


def test_add_and_mul_share_gpu_kernel_through_generated_code(mini_index_gen):
    add = mini_index_gen.chain("add.out", keys=["CUDA"])
    assert any(s.generated and s.file for s in add.keys[0].walk())
    g = graph.build_graph([add, mini_index_gen.chain("mul.out", keys=["CUDA"])])
    gpu = next(n for n in g.shared if n.step.symbol == "at::native::gpu_kernel")
    assert gpu.ops == ["add.out", "mul.out"]


def test_mermaid_text(mini_index):
    mm = graph.render([mini_index.chain("mul.out", keys=["CUDA"])], "mermaid").decode().splitlines()
    assert mm[0] == "flowchart TB"
    assert '  n0["native_functions.yaml:30<br/>mul.out"]' in mm
    assert any(ln.endswith('["CUDALoops.cuh:18<br/>vectorized_elementwise_kernel#lt;#lt;#lt;…#gt;#gt;#gt;"]') for ln in mm)
    assert "  n0 ==> n2" in mm and any(re.fullmatch(r"  n\d+ -\.-> n\d+", ln) for ln in mm)
    assert "  classDef launch fill:#ea9999,stroke:#444" in mm
    node_ids = {m.group(1) for ln in mm if (m := re.match(r"  (n\d+)\[", ln))}
    for ln in mm:  # every edge joins declared nodes; no raw <, > or " inside a label
        if m := re.fullmatch(r"  (n\d+) (?:-->|==>|-\.->)(?:\|[^|]*\|)? (n\d+)", ln):
            assert {m.group(1), m.group(2)} <= node_ids
        if m := re.fullmatch(r'  n\d+\["(.*)"\]', ln):
            assert not re.search(r'[<>"]', m.group(1).replace("<br/>", ""))


@pytest.mark.skipif(not HAS_DOT and not os.environ.get("CI"), reason=NO_DOT)  # CI installs it (.ci/run)
def test_svg_and_png_through_graphviz(capsys, tmp_path):
    code, out, _ = run(capsys, "graph", "mul.out", "exp.out", "--key", "CUDA", "--format", "svg", "-s", SRC)
    assert code == 0 and out.lstrip().startswith(("<?xml", "<!DOCTYPE", "<svg")) and "</svg>" in out
    assert "TORCH_IMPL_FUNC(mul_out)" in out
    png = tmp_path / "g.png"
    code, out, _ = run(capsys, "graph", "mul.out", "-k", "CUDA", "-f", "png", "-o", str(png), "-s", SRC)
    assert code == 0 and out == "" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_svg_without_graphviz_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    code, out, err = run(capsys, "graph", "mul.out", "--format", "svg", "-s", SRC)
    assert code == 2 and out == "" and one_error_line(err) and "Graphviz" in err and "--format dot" in err


def test_graph_cli_writes_dot_file_and_rejects_bad_input(capsys, tmp_path):
    out_file = tmp_path / "g.dot"
    code, out, _ = run(capsys, "graph", "mul.out", "-k", "CUDA", "-o", str(out_file), "-s", SRC)
    assert code == 0 and out == "" and out_file.read_text().startswith("digraph atenmap {")
    code, _, err = run(capsys, "graph", "mul.out", "--format", "jpeg", "-s", SRC)
    assert code == 2 and one_error_line(err) and "dot, mermaid, svg, png" in err  # a usage error
    code, _, err = run(capsys, "graph", "mul.out", "--rankdir", "XY", "-s", SRC)
    assert code == 2 and one_error_line(err) and "TB, LR" in err
    code, _, err = run(capsys, "graph", "mul.out", "mul.ot", "-s", SRC)
    assert code == 1 and one_error_line(err) and "unknown operator 'mul.ot'" in err
    code, _, err = run(capsys, "graph", "mul.out", "-k", "MPS", "-s", SRC)
    assert code == 1 and one_error_line(err) and "no MPS kernel" in err


# ---- quickfix lines -------------------------------------------------------------------------
QF = re.compile(r"^(?P<path>[^:\s]+):(?P<line>[1-9]\d*):1: (?P<role>[a-z_]+) (?P<rest>\S.*)$")


def test_render_lines_format(mini_index):
    ch = mini_index.chain("mul.out", keys=["CUDA"])
    lines = editor.render_lines(ch)
    assert lines[0] == "aten/src/ATen/native/native_functions.yaml:30:1: yaml mul.out — CUDA: mul_out (structured)"
    assert lines[2] == "aten/src/ATen/native/BinaryOps.cpp:46:1: native TORCH_IMPL_FUNC(mul_out)"
    assert all(QF.match(ln) for ln in lines)
    assert len(lines) == len([s for s in ch.keys[0].walk() if s.file])
    for ln in editor.render_lines(ch, absolute=True):
        m = QF.match(ln)
        assert os.path.isabs(m["path"]) and os.path.isfile(m["path"])


def test_render_lines_skips_steps_without_file_and_dedups_keys(mini_index):
    ch = mini_index.chain("add.out", keys=["CUDA"])
    lines = editor.render_lines(ch)
    assert not any("ufunc_add_CUDA)" in ln.split(" — ")[0] for ln in lines)
    assert any(ln.startswith("aten/src/ATen/native/ufunc/add.h:6:1: kernel ufunc::add") for ln in lines)
    both = editor.render_lines(mini_index.chain("mul.out"))
    assert len(both) == len(set(both))
    assert both.count("aten/src/ATen/native/BinaryOps.cpp:46:1: native TORCH_IMPL_FUNC(mul_out)") == 1


def test_lines_cli(capsys):
    code, out, _ = run(capsys, "lines", "exp.out", "--key", "CUDA", "-s", SRC)
    assert code == 0 and all(QF.match(ln) for ln in out.splitlines())
    assert out.splitlines()[-1].startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:18:1: launch vectorized_elementwise_kernel<<<")


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_reads_lines_as_a_quickfix_list(capsys, tmp_path, mini_index):
    code, out, _ = run(capsys, "lines", "mul.out", "--key", "CUDA", "--absolute", "-s", SRC)
    qf, dump = tmp_path / "qf.txt", tmp_path / "qf.out"
    qf.write_text(out)
    r = subprocess.run(["vim", "-es", "-u", "NONE", "-i", "NONE", "-N", "-q", str(qf), "-c",
                        'call writefile(map(getqflist(), {_, v -> v.valid . "|" . bufname(v.bufnr) . "|" . v.lnum . "|" . v.col}),'
                        f' "{dump}")', "-c", "qa!"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    got = [ln.split("|") for ln in dump.read_text().splitlines()]
    want = [QF.match(ln) for ln in out.splitlines()]
    assert len(got) == len(want) > 10
    for (valid, path, line, col), m in zip(got, want):
        assert (valid, os.path.realpath(path), line, col) == ("1", os.path.realpath(m["path"]), m["line"], "1")


# ---- open -----------------------------------------------------------------------------------
@pytest.mark.parametrize("ed,argv", [
    ("vim", ["vim", "+12", "/t/f.cu"]), ("/usr/bin/nvim", ["/usr/bin/nvim", "+12", "/t/f.cu"]),
    ("vi", ["vi", "+12", "/t/f.cu"]), ("emacsclient -nw", ["emacsclient", "-nw", "+12", "/t/f.cu"]),
    ("emacs", ["emacs", "+12", "/t/f.cu"]), ("nano", ["nano", "+12", "/t/f.cu"]),
    ("code --wait", ["code", "--wait", "--goto", "/t/f.cu:12"]), ("codium", ["codium", "--goto", "/t/f.cu:12"]),
    ("subl", ["subl", "/t/f.cu:12"]), ("ed", ["ed", "/t/f.cu"]), ("'my editor' -x", ["my editor", "-x", "/t/f.cu"]),
])
def test_editor_argument_conventions(ed, argv):
    assert editor.editor_command(editor.editor_from_env({"EDITOR": ed}), "/t/f.cu", 12) == argv


def test_visual_wins_over_editor_and_none_is_an_error():
    assert editor.editor_from_env({"VISUAL": "nvim", "EDITOR": "nano"}) == ["nvim"]
    assert editor.editor_from_env({"VISUAL": " ", "EDITOR": "nano"}) == ["nano"]
    with pytest.raises(UsageError, match=r"set \$VISUAL or \$EDITOR"):
        editor.editor_from_env({})


def test_open_print_default_step_and_choices(capsys, monkeypatch):
    monkeypatch.setenv("EDITOR", "vim")
    monkeypatch.delenv("VISUAL", raising=False)
    loops = f"{SRC}/aten/src/ATen/native/cuda/CUDALoops.cuh"
    code, out, _ = run(capsys, "open", "mul.out", "--key", "CUDA", "--print", "-s", SRC)
    assert code == 0 and out == f"vim +18 {loops}\n"  # the launch
    code, out, _ = run(capsys, "open", "mul.out", "--key", "CPU", "--print", "-s", SRC)
    assert out == f"vim +10 {SRC}/aten/src/ATen/native/cpu/BinaryOpsKernel.cpp\n"  # no launch on CPU: the kernel
    code, out, _ = run(capsys, "open", "mul.out", "-k", "CUDA", "--role", "native", "--print", "-s", SRC)
    assert out == f"vim +46 {SRC}/aten/src/ATen/native/BinaryOps.cpp\n"
    code, out, _ = run(capsys, "open", "linear", "--print", "-s", SRC)
    assert code == 0 and out.startswith("vim +") and "Linear.cpp" in out  # composite: the native step
    monkeypatch.setenv("VISUAL", "code --wait")
    code, out, _ = run(capsys, "open", "mul.out", "-k", "CUDA", "--step", "3", "--print", "-s", SRC)
    _, lines, _ = run(capsys, "lines", "mul.out", "-k", "CUDA", "--absolute", "-s", SRC)
    third = QF.match(lines.splitlines()[2])
    assert out == f"code --wait --goto {third['path']}:{third['line']}\n"  # 3rd line of `atenmap lines`


def test_open_errors(capsys, monkeypatch, mini_index):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    code, out, err = run(capsys, "open", "mul.out", "--print", "-s", SRC)
    assert code == 2 and out == "" and one_error_line(err) and "$EDITOR" in err
    monkeypatch.setenv("EDITOR", "vim")
    code, _, err = run(capsys, "open", "mul.out", "-k", "CUDA", "--step", "99", "--print", "-s", SRC)
    _, lines, _ = run(capsys, "lines", "mul.out", "-k", "CUDA", "-s", SRC)
    n = len(lines.splitlines())
    assert code == 1 and one_error_line(err) and f"steps 1..{n} " in err
    code, _, err = run(capsys, "open", "mul.out", "-k", "CPU", "--role", "launch", "--print", "-s", SRC)
    assert code == 1 and one_error_line(err) and "no such step" in err and "kernel" in err
    code, _, err = run(capsys, "open", "mul.out", "--step", "1", "--role", "kernel", "--print", "-s", SRC)
    assert code == 2 and one_error_line(err)
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    code, _, err = run(capsys, "open", "mul.out", "-s", SRC)
    assert code == 1 and one_error_line(err) and "cannot run editor" in err


def test_open_runs_the_editor(capsys, monkeypatch, tmp_path):
    fake = tmp_path / "nvim"  # named like nvim so it gets +LINE FILE
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\n')
    fake.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(fake))
    code, out, _ = run(capsys, "open", "exp.out", "-k", "CUDA", "--role", "kernel", "-s", SRC)
    assert code == 0 and out == ""
    assert (tmp_path / "args").read_text().splitlines() == ["+4", f"{SRC}/aten/src/ATen/native/cuda/UnaryOpsKernel.cu"]


# ---- hyperlinks -----------------------------------------------------------------------------
class _Tty:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_hyperlink_only_on_capable_terminals():
    env = {"TERM": "xterm-256color"}
    link = editor.hyperlink("Loops.cuh:8", "/src/a b/Loops.cuh", 8, _Tty(True), env)
    m = re.fullmatch(r"\x1b\]8;;file://([^/]*)/src/a%20b/Loops\.cuh#8\x1b\\Loops\.cuh:8\x1b\]8;;\x1b\\", link)
    assert m and m.group(1)
    assert editor.hyperlink("x", "/p", 1, _Tty(False), env) == "x"  # piped
    assert editor.hyperlink("x", "/p", 1, _Tty(True), {**env, "NO_COLOR": "1"}) == "x"
    assert editor.hyperlink("x", "/p", 1, _Tty(True), {"TERM": "dumb"}) == "x"
    assert editor.hyperlink("x", "/p", 1, object(), env) == "x"  # no isatty at all


# ---- gdb ------------------------------------------------------------------------------------
@pytest.mark.parametrize("role,symbol,detail,name", [
    ("native", "TORCH_IMPL_FUNC(mul_out)", "", "at::native::structured_mul_out::impl"),
    ("meta", "TORCH_META_FUNC2(mul, Tensor)", "", "at::meta::structured_mul_Tensor::meta"),
    ("meta", "TORCH_META_FUNC(exp)", "", "at::meta::structured_exp::meta"),
    ("meta", "TORCH_PRECOMPUTE_META_FUNC2(max, dim)", "", "at::meta::structured_max_dim::meta"),
    ("generated", "TORCH_IMPL_FUNC(ufunc_add_CUDA)", "", "at::native::structured_ufunc_add_CUDA::impl"),
    ("kernel", "at::native::mul_kernel_cuda", "", "at::native::mul_kernel_cuda"),
    ("kernel", "at::native::(anonymous namespace)::mul_kernel", "", "at::native::(anonymous namespace)::mul_kernel"),
    ("call", "at::native::MulFunctor::operator()", "", "at::native::MulFunctor::operator()"),
    ("kernel", "at::native::CPU_CAPABILITY::copy_kernel", "", None),  # DEFAULT/AVX2/AVX512 copies
    ("call", "cpu_kernel", "loop helper", None),  # a call site, not a definition
    ("register", "REGISTER_DISPATCH(mul_stub, mul_kernel)", "", None),
    ("op_call", "aten::mm", "", None),
    ("generated", "at::(anonymous namespace)::wrapper_CUDA_mul_out_out", "", "at::(anonymous namespace)::wrapper_CUDA_mul_out_out"),
    ("generated", "torch.mul -> THPVariable_mul", "", "THPVariable_mul"),
    ("generated", "dispatch_mul", "", None),  # a lambda held in a variable
])
def test_debugger_names(role, symbol, detail, name):
    assert gdb.debugger_name(Step.make(role, symbol, "f.cpp", 1, detail=detail)) == name


def test_gdb_script_for_cuda_chain(mini_index):
    text = gdb.gdb_script(mini_index.chain("mul.out", keys=["CUDA"]))
    lines = text.splitlines()
    assert lines[0] == "# atenmap gdb script for mul.out [CUDA]"
    assert f"# source: {SRC} (PyTorch 2.6.0a0+fixture)" == lines[1]
    assert "#   gdb -x THIS_FILE --args python script.py        (CPU and host side of CUDA)" in lines
    assert "set breakpoint pending on" in lines
    breaks = [ln[len("break "):] for ln in lines if ln.startswith("break ")]
    want = [
        "at::meta::structured_mul_Tensor::meta", "at::native::structured_mul_out::impl",
        "at::native::mul_kernel_cuda", "at::native::opmath_symmetric_gpu_kernel_with_scalars",
        "at::native::gpu_kernel", "at::native::gpu_kernel_impl", "at::native::launch_vectorized_kernel",
        "aten/src/ATen/native/cuda/CUDALoops.cuh:18",  # the launch
        "aten/src/ATen/native/cuda/CUDALoops.cuh:7",  # the __global__ kernel it launches
    ]
    assert [b for b in breaks if b in want] == want and len(breaks) == len(set(breaks))
    assert not [b for b in breaks if b.startswith(("aten/src/ATen/native/native_functions.yaml", "REGISTER"))]
    assert all(ln.startswith(("#", "set ", "break ")) or not ln for ln in lines)


def test_gdb_script_for_cpu_chain_uses_file_line_for_cpu_capability(mini_index):
    text = gdb.gdb_script(mini_index.chain("copy_", keys=["CPU"]))
    breaks = [ln for ln in text.splitlines() if ln.startswith("break ")]
    assert breaks == ["break at::native::copy_", "break aten/src/ATen/native/cpu/CopyKernel.cpp:4",
                      "break aten/src/ATen/native/cpu/CopyKernel.cpp:6"]
    both = gdb.gdb_script(mini_index.chain("mul.out"))
    assert both.count("break at::native::structured_mul_out::impl") == 1 and "# [CPU]" in both and "# [CUDA]" in both


def test_gdb_generated_files_by_bare_name():
    """torchgen's files are indexed from atenmap's cache (absolute paths); a build wrote them elsewhere."""
    gen = "/cache/codegen-1/aten/UfuncCUDA_add.cu"
    assert gdb.breakpoints(Step.make("launch", "k<<<g, b>>>", gen, 40, "kernel launch; __global__ k at line 12",
                                generated=True)) == [
        ("UfuncCUDA_add.cu:40", f"launch k<<<g, b>>>  ({gen}:40)"),
        ("UfuncCUDA_add.cu:12", "__global__ k (device code: cuda-gdb)")]
    assert gdb.breakpoints(Step.make("native", "TORCH_IMPL_FUNC(ufunc_add_CUDA)", gen, 332, generated=True))[0][0] == \
        "at::native::structured_ufunc_add_CUDA::impl"
    assert gdb.breakpoints(Step.make("yaml", "add.out", "aten/src/ATen/native/native_functions.yaml", 8)) == []


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_gdb_accepts_the_script(capsys, tmp_path):
    script = tmp_path / "mul.gdb"
    code, out, _ = run(capsys, "gdb", "mul.out", "-o", str(script), "-s", SRC)
    assert code == 0 and out == ""
    r = subprocess.run(["gdb", "-nx", "-batch", "-x", str(script), "/bin/true"], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    bad = [ln for ln in (r.stdout + r.stderr).splitlines()
           if not re.match(r'^(Function ".*" not defined\.|No source file named .*\.|No symbol table is loaded\.'
                           r'  Use the "file" command\.|Breakpoint \d+ .*pending\.)$', ln)]
    assert bad == []
    assert r.stdout.count("pending.") == script.read_text().count("\nbreak ")


@pytest.mark.skipif(shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++")
def test_gdb_names_resolve_in_a_compiled_program(mini_index, tmp_path):
    """The names the script uses are the ones g++ emits for the macros they come from."""
    src = tmp_path / "prog.cpp"
    src.write_text("""
#define TORCH_IMPL_FUNC(name) void structured_##name::impl
#define TORCH_META_FUNC2(name, overload) void structured_##name##_##overload::meta
namespace at { namespace meta { struct structured_mul_Tensor { void meta(); };
TORCH_META_FUNC2(mul, Tensor)() {} } }
namespace at { namespace native {
struct structured_mul_out { void impl(); };
TORCH_IMPL_FUNC(mul_out)() {}
namespace { void mul_kernel(int) {} }
void mul_kernel_cuda(int) {}
template <typename F> void gpu_kernel(F f) { f(); }
}}
int main() { at::meta::structured_mul_Tensor().meta(); at::native::structured_mul_out().impl();
  at::native::mul_kernel(1); at::native::mul_kernel_cuda(1); at::native::gpu_kernel([] {}); }
""")
    subprocess.run(["g++", "-g", "-O0", str(src), "-o", str(tmp_path / "prog")], check=True, timeout=120)
    script = tmp_path / "s.gdb"
    script.write_text(gdb.gdb_script(mini_index.chain("mul.out")))
    r = subprocess.run(["gdb", "-nx", "-batch", "-x", str(script), str(tmp_path / "prog")], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    resolved = set(re.findall(r"^Breakpoint \d+ at 0x[0-9a-f]+: file .*prog\.cpp, line (\d+)\.$", r.stdout, re.M))
    assert resolved == {"5", "8", "9", "10", "11"}, r.stdout + r.stderr


# ---- search ---------------------------------------------------------------------------------
def test_like_pattern_and_ranks():
    assert search.like_pattern("a_b%") == "%a%\\_%b%\\%%"
    assert [search.match_rank("mul", n) for n in ("MUL", "mul_out", "a_mul", "m_u_l", "lum")] == [0, 1, 2, 3, None]


def names(hits):
    return [(h.kind, h.name) for h in hits]


def test_search_ranks_exact_prefix_substring_subsequence(mini_index):
    hits = mini_index.search("mul_kernel")
    assert names(hits)[:2] == [("kernel", "mul_kernel"), ("kernel", "mul_kernel_cuda")]
    assert ("function", "mul_kernel") in names(hits)
    # kinds in order (op, stub, kernel, function), each exact > prefix > substring; guesses last
    order = ["op", "stub", "kernel", "function"]
    keys = [(h.rank == 3, order.index(h.kind), h.rank) for h in hits]
    assert keys == sorted(keys)
    hits = mini_index.search("mul")
    assert hits[0].kind == "op" and [h.kind for h in hits if h.rank < 3] == sorted(
        (h.kind for h in hits if h.rank < 3), key=order.index)
    hits = mini_index.search("mlkrnl", kinds=("kernel",))
    assert names(hits)[0] == ("kernel", "mul_kernel") and {h.rank for h in hits} == {3}
    assert ("kernel", "mul_kernel_cuda") in names(hits) and ("kernel", "normal_kernel") in names(hits)
    hits = mini_index.search("aten::mul", kinds=("op",))
    assert names(hits) == [("op", "mul.out"), ("op", "mul.Tensor")] and hits[0].rank == 0
    k = next(h for h in mini_index.search("mul_kernel_cuda") if h.kind == "kernel")
    assert (k.file, k.line, k.extra) == ("aten/src/ATen/native/cuda/BinaryMulKernel.cu", 26,
                                         "REGISTER_DISPATCH(mul_stub, …) cuda")


def test_search_filters(mini_index):
    search = mini_index.search
    cuda = search("kernel", kinds=("kernel",), key="CUDA")
    # CUDA kernels live in .cu files and in native/cuda/**/*.cpp (linalg: MiniLinalg.cpp)
    assert cuda and all(h.file.endswith((".cu", ".cuh")) or "/cuda/" in h.file for h in cuda)
    assert ("kernel", "vectorized_elementwise_kernel") in names(cuda)  # a __global__ function
    stubs = search("stub", kinds=("stub",), key="CUDA")
    assert ("stub", "mul_stub") in names(stubs) and all("cuda" in h.extra for h in stubs)
    pointwise = search("a", tag="pointwise")
    assert pointwise and {h.kind for h in pointwise} == {"op"} and "add.out" in [h.name for h in pointwise]
    assert all("pointwise" in h.extra for h in pointwise)
    ops = search("mul", kinds=("op",), key="CUDA")
    assert [h.name for h in ops] == ["mul.out", "mul.Tensor"]  # mul.Tensor through its structured_delegate
    assert ops[1].extra.startswith("CUDA: mul_out (via mul.out)")
    by_kernel = search("ufunc_add", kinds=("op",))
    assert [h.name for h in by_kernel] == ["add.out", "add.Tensor"] and by_kernel[0].rank == 2
    assert search("%", kinds=("op",)) == []  # LIKE wildcards are literal


@pytest.mark.parametrize("kw,msg", [
    (dict(pattern=" "), "empty search pattern"),
    (dict(pattern="x", kinds=("class",)), "--kind class"),
    (dict(pattern="x", kinds=("stub",), tag="pointwise"), "--tag selects operators"),
])
def test_search_bad_input(mini_index, kw, msg):
    with pytest.raises(UsageError, match=re.escape(msg)):
        mini_index.search(**kw)


def test_search_cli(capsys):
    code, out, _ = run(capsys, "search", "mul_stub", "-s", SRC)
    assert code == 0
    first = out.splitlines()[0]
    assert re.fullmatch(r"aten/src/ATen/native/BinaryOps\.h:14 +stub {6}mul_stub  \[DECLARE_DISPATCH\(structured_binary_fn\);"
                        r" registered for cpu, cuda\]", first)
    code, out, _ = run(capsys, "search", "softmax", "-s", SRC)
    assert code == 1 and out == ""
    code, out, err = run(capsys, "search", "mul", "--kind", "op", "--json", "-n", "1", "-s", SRC)
    d = json.loads(out)
    assert code == 0 and d["total"] == 2 and d["hits"][0] == {
        "kind": "op", "name": "mul.out", "file": "aten/src/ATen/native/native_functions.yaml", "line": 30,
        "extra": "CPU: mul_out, CUDA: mul_out", "rank": 0, "generated": False}
    code, out, err = run(capsys, "search", "mul", "-n", "2", "-s", SRC)
    assert code == 0 and len(out.splitlines()) == 2 and "more; use --limit 0" in err
    code, _, err = run(capsys, "search", "x", "--kind", "bogus", "-s", SRC)
    assert code == 2 and one_error_line(err)


# ---- completion -----------------------------------------------------------------------------
def test_completion_never_builds_an_index(tmp_path, monkeypatch, own_cache):
    cache = own_cache
    assert complete.operator_completions("mu", SRC) == []
    assert not (cache / "indexes").exists() or not any((cache / "indexes").rglob("*.sqlite"))
    assert complete.operator_completions("mu", tmp_path) == []  # not a PyTorch tree
    monkeypatch.chdir(tmp_path)
    assert complete.complete_operator("mu") == []


def test_completion_from_a_fresh_index(mini_tree, monkeypatch, own_cache):
    from atenmap.api import Index

    Index.open(mini_tree).close()
    assert complete.operator_completions("mu", mini_tree) == ["mul.Tensor", "mul.out"]
    assert complete.operator_completions("aten::ad", mini_tree) == ["aten::add.Tensor", "aten::add.out", "aten::addmm"]
    assert complete.operator_completions("zz", mini_tree) == []
    assert len(complete.operator_completions("", mini_tree)) == 56
    monkeypatch.setenv("ATENMAP_SOURCE", str(mini_tree))
    assert complete.complete_operator("mul.") == ["mul.Tensor", "mul.out"]
    f = mini_tree / "aten/src/ATen/native/BinaryOps.cpp"
    f.write_text(f.read_text() + "\n// changed\n")
    assert complete.operator_completions("mu", mini_tree) == []  # stale: answer nothing, build nothing


def test_shell_completion_through_typer(mini_tree, own_cache):
    from atenmap.api import Index

    Index.open(mini_tree).close()
    env = {**os.environ, "_ATENMAP_COMPLETE": "complete_bash", "COMP_WORDS": f"atenmap gdb --source {mini_tree} mu",
           "COMP_CWORD": "4"}
    r = subprocess.run([sys.executable, "-m", "atenmap"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["mul.Tensor", "mul.out"], r.stderr


# ---- Python bindings (synthetic chain: independent of what torchgen the fixture carries) -----
def _chain_with_binding(mini_index):
    from atenmap.model import Chain, KeyChain

    gen = "/cache/codegen-1/python/python_torch_functions_0.cpp"
    binding = Step.make("generated", "torch.mul -> THPVariable_mul", gen, 3, generated=True,
                   children=[Step.make("generated", "dispatch_mul", gen, 17, generated=True)])
    real = mini_index.chain("mul.out", keys=["CUDA"])
    return Chain(real.op, real.source, [KeyChain("CUDA", real.keys[0].steps)], bindings=[binding])


def gen_path(ch):
    return ch.bindings[0].file


def test_bindings_in_graph_lines_and_gdb(mini_index):
    ch = _chain_with_binding(mini_index)
    g = graph.build_graph([ch])
    lam = g.nodes[graph.node_key(ch.bindings[0].children[0])]
    yaml = g.nodes[graph.node_key(ch.keys[0].steps[0])]
    assert g.edges[(lam.id, yaml.id)].kind == "dispatch"
    assert 'label="python_torch_functions_0.cpp:3\\ntorch.mul -> THPVariable_mul"' in graph.to_dot(g)
    lines = editor.render_lines(ch, absolute=True)
    assert lines[0] == "/cache/codegen-1/python/python_torch_functions_0.cpp:3:1: generated torch.mul -> THPVariable_mul [generated]"
    script = gdb.gdb_script(ch).splitlines()
    i = script.index("# [Python]")
    assert script[i + 2:i + 5] == ["break THPVariable_mul", "# generated dispatch_mul  (" + gen_path(ch) + ":17)",
                                   "break python_torch_functions_0.cpp:17"]
    assert script.index("# [CUDA]") > i
