"""inductor/outputcode.py: Inductor output code as the cache holds it. A hand-written module in the
CUDA/Triton layout, the real CPU output code of torch 2.13 (fixtures/compile/outputcode/), and a
function compiled here with a temporary TORCHINDUCTOR_CACHE_DIR."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from atenmap.inductor.outputcode import aten_op, find_kernel, kernel_name, kind_of, missing_note, name_ops

from .conftest import REPO, cli_run

FIX = REPO / "fixtures" / "compile" / "outputcode"

TRITON = '''
# AOT ID: ['0_inference']
import torch
from torch._inductor.select_algorithm import extern_kernels
aten = torch.ops.aten
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_u/ab/cabc.py
# Topologically Sorted Source Nodes: [add, y], Original ATen: [aten.add, aten.relu]
# Source node to ATen node mapping:
#   add => add
#   y => relu
# Graph fragment:
#   %arg0_1 : Tensor "f32[8, 16][16, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %add : Tensor "f32[8, 16][16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg0_1, 1.0), kwargs = {})
#   %relu : Tensor "f32[8, 16][16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%add,), kwargs = {})
triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', """
@triton.jit
def triton_poi_fused_add_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
""", device_str='cuda')


# kernel path: /tmp/torchinductor_u/cd/ccd.py
triton_per_fused__softmax_1 = async_compile.triton('triton_per_fused__softmax_1', """
""", device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        buf0 = empty_strided_cuda((8, 16), (16, 1), torch.float32)
        # Topologically Sorted Source Nodes: [add, y], Original ATen: [aten.add, aten.relu]
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_relu_0.run(arg0_1, buf0, 128, stream=stream0)
        del arg0_1
        buf1 = empty_strided_cuda((8, 4), (4, 1), torch.float32)
        # Topologically Sorted Source Nodes: [y, z], Original ATen: [aten.mm]
        extern_kernels.mm(buf0, arg1_1, out=buf1)
        buf2 = empty_strided_cuda((8, 4), (4, 1), torch.float32)
        # Topologically Sorted Source Nodes: [softmax], Original ATen: [aten._softmax]
        triton_per_fused__softmax_1.run(buf1, buf2, 8, 4, stream=stream0)
        # Topologically Sorted Source Nodes: [attn], Original ATen: [aten._scaled_dot_product_efficient_attention]
        buf3 = torch.ops.aten._scaled_dot_product_efficient_attention.default(buf2, buf2, buf2, None, False)
    return (buf2, )
'''


def _cache(tmp_path: Path, text: str, sub: str = "ab") -> Path:
    (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    (tmp_path / sub / "cabcdef.py").write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(textwrap.dedent(text).lstrip().splitlines(), 1) if needle in ln)


def test_triton_layout(tmp_path):
    cache = _cache(tmp_path, TRITON)
    k = find_kernel("triton_poi_fused_add_relu_0", [cache])
    assert (k.kind, k.line, k.call_line) == ("triton", _line(TRITON, "triton_poi_fused_add_relu_0 = async_compile"),
                                             _line(TRITON, "triton_poi_fused_add_relu_0.run("))
    assert k.aten == ("aten.add", "aten.relu") and k.nodes == ("add", "y")
    assert k.overloads == ("aten.add.Tensor", "aten.relu.default")
    # no comment on the definition: the one above its call (not reaching past the previous call)
    sm = find_kernel("triton_per_fused__softmax_1", [cache])
    assert sm.aten == ("aten._softmax",) and sm.nodes == ("softmax",) and sm.note.startswith("no user lines")
    mm = find_kernel("extern_kernels.mm", [cache])
    assert (mm.kind, mm.line, mm.call_line, mm.aten) == ("extern", None, _line(TRITON, "extern_kernels.mm("), ("aten.mm",))
    assert aten_op(mm) == "mm"
    fb = find_kernel("torch.ops.aten._scaled_dot_product_efficient_attention.default", [cache])
    assert fb.kind == "fallback" and fb.call_line == _line(TRITON, "buf3 = torch.ops.aten._scaled")
    assert aten_op(fb) == "_scaled_dot_product_efficient_attention"


def test_newest_file_wins_and_others_are_counted(tmp_path):
    _cache(tmp_path, TRITON, "ab")
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "cnewer.py").write_text(textwrap.dedent(TRITON).lstrip())
    os.utime(tmp_path / "ab" / "cabcdef.py", ns=(1, 1))
    k = find_kernel("triton_poi_fused_add_relu_0", [tmp_path])
    assert k.file.endswith("zz/cnewer.py") and "1 older output file(s)" in k.note


def test_missing_and_foreign(tmp_path):
    assert find_kernel("triton_poi_fused_gelu_0", [tmp_path / "nope"]) is None
    assert missing_note("triton_poi_fused_gelu_0", [tmp_path / "nope"]).startswith(
        "triton_poi_fused_gelu_0: no Inductor cache at ")
    assert find_kernel("void at::native::foo<float>(int)", [tmp_path]) is None and kind_of("ampere_sgemm_128x64_nn") == ""
    # a file that names the kernel but is not output code this reader knows
    _cache(tmp_path, "triton_poi_fused_add_0 = async_compile.triton(\ndef call(args):\n  pass\n")
    k = find_kernel("triton_poi_fused_add_0", [tmp_path])
    assert k.line is None and "another torch version's format" in k.note


def test_names():
    assert name_ops("cpp_fused__softmax_1") == ("aten._softmax",)
    assert name_ops("triton_red_fused__to_copy_native_layer_norm_2", {"_to_copy", "native_layer_norm"}) == (
        "aten._to_copy", "aten.native_layer_norm")


def test_cpu_output_code_of_torch_2_13(tmp_path):
    shutil.copy(FIX / "cpu_torch2.13_provenance.py", _cache(tmp_path, "") / "ab" / "cabcdef.py")
    k = find_kernel("cpp_fused_add_relu_0", [tmp_path])
    assert (k.line, k.call_line, k.aten) == (33, 147, ("aten.add", "aten.relu"))
    assert "from the kernel's name" in k.note
    mm = find_kernel("extern_kernels.mm", [tmp_path])
    assert mm.call_line == 152 and mm.nodes == ("add", "y", "z") and mm.aten == ("aten.mm",)


def test_cpp_kernel_profile_ranges_of_torch_2_13(tmp_path):
    """With ``config.cpp.enable_kernel_profile`` the profiler's event is ``graph_0_cpp_fused_*`` (Note
    [C++ kernel profile ranges]); the output code defines ``cpp_fused_*``. Real output code of the
    2.13 CPU run (bench/compile_trace_demo.py): the graph's own file wins over a newer one of another
    graph that made the same name."""
    assert kernel_name("graph_0_cpp_fused_add_mul_relu_0") == "cpp_fused_add_mul_relu_0"
    assert kind_of("graph_12_cpp_fused__softmax_1") == "cpp" and kind_of("graph_0_triton_x") == ""
    assert kernel_name("aten::graph_0_cpp_x") == "aten::graph_0_cpp_x"
    text = (FIX / "cpu_torch2.13_kernel_profile.py").read_text()
    _cache(tmp_path, text, "ab")
    k = find_kernel("graph_0_cpp_fused_add_mul_relu_0", [tmp_path])
    assert (k.name, k.kind, k.line, k.call_line) == ("cpp_fused_add_mul_relu_0", "cpp", 33, 162)
    assert k.aten == ("aten.add", "aten.mul", "aten.relu")
    other = text.replace('"graph_0_cpp_fused_add_mul_relu_0"', '"graph_1_cpp_fused_add_mul_relu_0"')
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "cnewer.py").write_text("\n\n" + other)  # newer, and its lines differ
    os.utime(tmp_path / "ab" / "cabcdef.py", ns=(1, 1))
    assert find_kernel("graph_0_cpp_fused_add_mul_relu_0", [tmp_path]).file.endswith("ab/cabcdef.py")
    assert find_kernel("graph_1_cpp_fused_add_mul_relu_0", [tmp_path]).line == 35
    assert find_kernel("cpp_fused_add_mul_relu_0", [tmp_path]).file.endswith("zz/cnewer.py")  # no graph id: newest


def test_trace_join_with_a_stale_or_foreign_inductor_cache(tmp_path, monkeypatch, mini_index):
    """A kernel event whose output code is gone (cache cleared, another TORCHINDUCTOR_CACHE_DIR), or is
    in a format this reader does not know: one note on that entry, the rest of the report comes."""
    from atenmap.trace.events import Call, Frame, Recording
    from atenmap.trace.join import Joiner
    from atenmap.trace.report import Report

    main = (Frame(str(tmp_path / "model.py"), 5, "f"),)
    rec = Recording(calls=[Call(0, "graph_0_cpp_fused_add_mul_relu_0", "CPU", main, None, cpu_us=2.0),
                           Call(1, "aten::mm", "CPU", main, "torch.mm", cpu_us=30.0),
                           Call(2, "graph_0_cpp_fused__softmax_1", "CPU", main, None, cpu_us=3.0)],
                    torch_version="2.13.0+cpu", profiled=True)
    for case, setup in (("missing", lambda d: None),
                        ("foreign", lambda d: _cache(d, "cpp_fused_add_mul_relu_0 = async_compile.cpp(\n"
                                                        "def call(args):\n    cpp_fused_add_mul_relu_0(x)\n"))):
        cache = tmp_path / case
        setup(cache)
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
        entries = Joiner(mini_index).entries(rec)
        relu, mm, softmax = entries
        assert mm.chain is not None and mm.chain.native is not None  # the rest of the report
        assert softmax.inductor is None and len(softmax.notes) == 1
        assert softmax.notes[0].startswith("graph_0_cpp_fused__softmax_1: ")
        if case == "missing":
            assert "no Inductor cache at" in softmax.notes[0] and relu.inductor is None and len(relu.notes) == 1
        else:
            assert relu.inductor.line is None and "another torch version's format" in relu.inductor.note
            assert "not in the output code of the Inductor cache" in softmax.notes[0]
        text = str(Report(rec, entries, mini_index.source))
        assert "mm_out_cpu" in text and text.count("graph_0_cpp_fused__softmax_1: ") == 1


def test_kernel_command_json(tmp_path, capsys, mini_tree, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(_cache(tmp_path, TRITON)))
    code, out, err = cli_run(capsys, "kernel", "triton_poi_fused_add_relu_0", "--json", "--source", str(mini_tree),
                             "--no-codegen")
    assert code == 0, err
    ind = json.loads(out)["inductor"]
    assert ind["aten"] == ["aten.add", "aten.relu"] and ind["call_line"] == _line(TRITON, ".run(arg0_1")
    code, out, err = cli_run(capsys, "kernel", "triton_poi_fused_gelu_0", "--source", str(mini_tree), "--no-codegen")
    assert code == 0 and err.count("not in the output code of the Inductor cache") == 1


COMPILED = '''
import torch
from atenmap.trace.inductor import prepare
undo = prepare(torch)
def f(x, w):
    y = torch.relu(x + 1.0)
    z = y @ w
    return torch.softmax(z, dim=-1)
print(torch.compile(f)(torch.randn(8, 16), torch.randn(16, 4)).shape)
'''


def test_compiled_here_on_cpu(tmp_path):
    pytest.importorskip("torch")
    if not shutil.which("g++") and not shutil.which("c++"):
        pytest.skip("Inductor's CPU backend needs a C++ compiler")
    script = tmp_path / "f.py"
    script.write_text(COMPILED)
    cache = tmp_path / "inductor"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), PYTHONPATH=str(REPO / "src"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    files = [p for p in cache.rglob("*.py") if "def call(" in p.read_text()]
    assert files
    text = files[0].read_text()
    names = [ln.split(" = ")[0] for ln in text.splitlines() if " = async_compile.cpp" in ln]
    assert names and all(n.startswith("cpp_fused_") for n in names)
    for n in names:
        k = find_kernel(n, [cache])
        assert k.line and k.call_line and k.aten, k
        # prepare() recorded Inductor's provenance: the user's lines of the fused ops
        assert k.user and all(f == str(script) for f, _ln, _c in k.user), k
    relu = find_kernel(next(n for n in names if "relu" in n), [cache])
    assert [(ln, c) for _f, ln, c in relu.user] == [(6, "y = torch.relu(x + 1.0)")]
    assert {a for n in names for a in find_kernel(n, [cache]).aten} >= {"aten.add", "aten.relu", "aten._softmax"}
    mm = find_kernel("extern_kernels.mm", [cache])
    assert mm.call_line and mm.aten == ("aten.mm",)


def test_user_lines_through_the_provenance_handle(tmp_path):
    text = TRITON.replace("        stream0 = get_raw_stream(0)\n",
                          "        stream0 = get_raw_stream(0)\n        # [Provenance debug handles] triton_poi_fused_add_relu_0:1\n")
    cache = _cache(tmp_path, text)
    traces = ['  File "/home/u/model.py", line 12, in forward\n    y = torch.relu(x + 1.0)\n',
              '  File "/home/u/model.py", line 20, in <module>\n    out = model(x)\n'
              '  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1750, in _call_impl\n'
              '    return forward_call(*args)\n']
    k = find_kernel("triton_poi_fused_add_relu_0", [cache],
                    provenance=lambda p: {"triton_poi_fused_add_relu_0:1": traces})
    assert k.user == (("/home/u/model.py", 12, "y = torch.relu(x + 1.0)"), ("/home/u/model.py", 20, "out = model(x)"))
    # another kernel's handle is not this one's
    assert find_kernel("triton_poi_fused_add_relu_0", [cache], provenance=lambda p: {"triton_x_0:1": traces}).user == ()


def test_kernel_from_trace_answers_inductor_kernels(tmp_path, capsys, mini_tree, monkeypatch):
    import gzip

    h200 = REPO / "fixtures" / "compile" / "h200_torch2.11" / "mlp"
    trace = tmp_path / "trace.json"
    trace.write_bytes(gzip.decompress((h200 / "trace.json.gz").read_bytes()))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(h200 / "code"))
    code, out, err = cli_run(capsys, "kernel", "--from-trace", str(trace), "--json", "--source", str(mini_tree),
                             "--no-codegen")
    assert code == 0, err
    rows = {d["query"]: d for d in json.loads(out)}
    gelu = rows["triton_poi_fused_gelu_0"]["inductor"]
    assert gelu["aten"] == ["aten.gelu"] and gelu["line"] == 49 and gelu["call_line"] == 163
    assert rows["triton_poi_fused_gelu_0"]["launches_in_trace"][0]["inductor"] == gelu
    assert all("inductor" not in d for q, d in rows.items() if not q.startswith("triton_"))
