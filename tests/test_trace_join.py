"""atenmap.trace without torch: linking profiler events, joining recordings with chains, the kernel
lookup (the real ``Index.kernel``) and its fallback, text/JSON/chrome output. Recordings here are
written by hand, or read from a Kineto trace with the real names an H200 printed."""
from __future__ import annotations

import json
import types

import pytest

import atenmap
from atenmap.errors import AtenmapError
from atenmap.model import SourceInfo, Step
from atenmap.trace.chrome import annotate
from atenmap.trace.events import Call, Frame, Kernel, Recording
from atenmap.trace.frames import is_user, user_traceback
from atenmap.trace.join import Joiner, _pick_launch, index_name, version_warnings
from atenmap.trace.link import ProfEvent, link
from atenmap.trace.report import Report, fmt_us, json_text, short_kernel

ADD_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
              "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
_MUL_F = "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"
MUL_KERNEL = f"void at::native::vectorized_elementwise_kernel<4, {_MUL_F}, std::array<char*, 3ul> >(int, {_MUL_F}, std::array<char*, 3ul>)"
MAIN = (Frame("/w/main.py", 24, "<module>"), Frame("/w/model.py", 10, "forward"))


def recording() -> Recording:
    mul_k = [Kernel(MUL_KERNEL, 13.0, 0, "kernel", 4)]
    return Recording(calls=[
        Call(0, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul", kernels=list(mul_k)),
        Call(1, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul", kernels=list(mul_k)),
        Call(2, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul", kernels=list(mul_k)),
        Call(3, "aten::t", "CUDA", MAIN, "torch.nn.functional.linear", ("aten::linear",)),
        Call(4, "aten::mm", "CPU", MAIN[:1], "torch.mm", cpu_us=30.0),
        Call(5, "aten::frobnicate.Tensor", "CPU", MAIN[:1], "torch.frobnicate", cpu_us=1.0),
        Call(6, "prims::convert_element_type", "CPU", MAIN[:1], None, cpu_us=1.0),
    ], unattributed=[Kernel("Memcpy HtoD (Pageable -> Device)", 2.0, 0, "memcpy", 99)],
        op_events={4: 0, 5: 0}, torch_version="2.6.0+cu124", profiled=True, cuda_available=True)


# ---- linking -------------------------------------------------------------------------------
def ev(name, corr, start, end, linked=0, device="cpu", thread=1, activity="cpu_op"):
    return ProfEvent(name, device, corr, linked, start, end, thread, 0, activity)


def test_link_kernels_parents_and_unattributed():
    events = [
        ev("aten::add", 1, 0, 100), ev("PythonDispatchMode", 2, 5, 95), ev("atenmap#0", 3, 10, 90),
        ev("aten::add", 4, 12, 80), ev("aten::empty", 5, 14, 16),
        ev("cudaLaunchKernel", 100, 20, 30, linked=4, activity="cuda_runtime"),
        ev(ADD_KERNEL, 100, 200, 213, linked=4, device="cuda", activity="kernel"),
        # a composite: aten::linear > aten::matmul > aten::mm > PythonDispatchMode > atenmap#1 > aten::mm
        ev("aten::linear", 10, 300, 500), ev("aten::matmul", 11, 310, 490), ev("aten::mm", 12, 320, 480),
        ev("PythonDispatchMode", 13, 325, 475), ev("atenmap#1", 14, 330, 470), ev("aten::mm", 15, 335, 460),
        ev("sm90_xmma_gemm_f32f32", 101, 600, 650, linked=15, device="cuda", activity="kernel"),
        # backward on another thread
        ev("autograd::engine::evaluate_function: MmBackward0", 20, 700, 900, thread=2),
        ev("atenmap#2", 21, 710, 800, thread=2), ev("aten::mm", 22, 720, 790, thread=2),
        ev("Memcpy HtoD (Pageable -> Device)", 102, 50, 52, linked=77, device="cuda", activity="gpu_memcpy"),
    ]
    out = link(events)
    assert [k.name for k in out.kernels[0]] == [ADD_KERNEL]
    assert out.kernels[0][0].duration_us == pytest.approx(0.013) and out.kernels[0][0].correlation == 4
    assert out.op_events[4] == 0 and out.op_events[5] == 0 and 1 not in out.op_events
    assert out.parents[0] == ("aten::add",)
    assert out.parents[1] == ("aten::linear", "aten::matmul", "aten::mm")
    assert [k.name for k in out.kernels[1]] == ["sm90_xmma_gemm_f32f32"]
    assert out.parents[2] == ("autograd::engine::evaluate_function: MmBackward0",) and out.op_events[22] == 2
    assert [(k.name, k.kind) for k in out.unattributed] == [("Memcpy HtoD (Pageable -> Device)", "memcpy")]


# ---- joining -------------------------------------------------------------------------------
def test_index_name():
    assert index_name("aten::add.Tensor") == "add.Tensor"
    assert index_name("aten::mm") == "mm" and index_name("aten::mm.default") == "mm"
    assert index_name("prims::convert_element_type") is None


def test_join_places_kernels_through_the_index(mini_index):
    entries = Joiner(mini_index).entries(recording())
    mul = entries[0]
    assert mul.chain.op == "mul.Tensor" and mul.chain.key == "CUDA"
    assert mul.chain.kernel.symbol == "at::native::mul_kernel_cuda" and mul.chain.stub.symbol == "mul_stub"
    site = mul.site
    assert site.function == "vectorized_elementwise_kernel" and site.via == "kernels" and site.note == ""
    assert (site.definition.file, site.definition.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 7)
    assert (site.launch.file, site.launch.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 18)
    assert site.operators == list(mini_index.kernel(MUL_KERNEL).operators) and site.operators
    mm = next(e for e in entries if e.call and e.call.op == "aten::mm")
    assert mm.kernel is None and mm.chain.native.symbol == "TORCH_IMPL_FUNC(mm_out_cpu)"
    assert [s.symbol for s in mm.chain.launches] == ["at::native::cpublas::gemm"]
    unknown = next(e for e in entries if e.call and e.call.op == "aten::frobnicate.Tensor")
    assert unknown.chain is None and unknown.notes == [
        "aten::frobnicate.Tensor is not in the indexed source (PyTorch 2.6.0a0+fixture)"]
    prim = next(e for e in entries if e.call and e.call.op.startswith("prims::"))
    assert prim.chain is None and "not an ATen operator" in prim.notes[0]
    t = next(e for e in entries if e.call and e.call.op == "aten::t")
    assert t.chain.key == "CompositeExplicitAutograd"
    assert entries[-1].call is None and entries[-1].kernel.kind == "memcpy" and entries[-1].site.launch is None


def test_join_looks_each_kernel_name_up_once(mini_index):
    from atenmap.api import Index
    from atenmap.store import Store

    ix = Index(mini_index.source, Store.open(mini_index.store.path))  # Joiners share caches per Index: a new one
    j = Joiner(ix)
    j.entries(recording())
    assert list(j._lookups) == [MUL_KERNEL]  # three launches, one lookup; the memcpy none
    ix.close()


def test_join_unknown_kernel_falls_back_to_the_chain(mini_index):
    """A kernel the index does not define, launched by a call whose chain launches one of that name
    elsewhere (a newer torch): the chain's launch step places it."""
    rec = Recording(calls=[Call(0, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul",
                                kernels=[Kernel("void at::native::no_such_kernel<float>(int)", 1.0, 0, "kernel", 1)]),
                           Call(1, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul",
                                kernels=[Kernel("", 1.0, 0, "kernel", 2)])])
    first, empty = Joiner(mini_index).entries(rec)
    assert first.site.via == "" and first.site.definition is None and first.site.launch is None
    assert empty.site.via == "" and empty.site.note.startswith("kernel lookup: empty kernel name")


def test_join_does_not_swallow_errors():
    """Only atenmap's own error becomes a note; a bug in the lookup is an error with its message."""
    class Index:
        source = SourceInfo("/src", "2.6.0")

        def operator(self, name):
            raise AtenmapError("no such operator")

        def kernel(self, name):
            raise KeyError("a bug")

        def owned(self, name, make):
            return make()

    rec = Recording(calls=[Call(0, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul",
                                kernels=[Kernel(MUL_KERNEL, 1.0, 0, "kernel", 1)])])
    with pytest.raises(KeyError, match="a bug"):
        Joiner(Index()).entries(rec)


def test_pick_launch_prefers_the_calls_own_chain():
    other = Step.make("launch", "k<<<>>>", "aten/src/ATen/native/cuda/Other.cuh", 3)
    mine = Step.make("launch", "k<<<>>>", "aten/src/ATen/native/cuda/CUDALoops.cuh", 18)
    chain = types.SimpleNamespace(launches=[mine])
    assert _pick_launch((other, mine), chain) is mine
    assert _pick_launch((other, mine), None) is other and _pick_launch((), chain) is None


def test_join_without_index_keeps_raw_names():
    entries = Joiner(None).entries(recording())
    assert all(e.chain is None and not e.notes for e in entries)
    assert entries[0].site.launch is None and entries[0].site.function == "vectorized_elementwise_kernel"


# ---- rendering -------------------------------------------------------------------------------
def test_report_lines_group_by_user_stack(mini_index, tmp_path):
    rec = recording()
    rep = Report(rec, Joiner(mini_index).entries(rec), mini_index.source, ["w1"], base="/w")
    lines = rep.lines()
    assert lines[0] == ("7 aten calls, 4 device launches; torch 2.6.0+cu124; source PyTorch 2.6.0a0+fixture at "
                        f"{mini_index.source.root}")
    i = lines.index("main.py:24 -> model.py:10")
    assert lines[i + 1] == ("  torch.mul -> aten::mul.Tensor [CUDA] -> BinaryMulKernel.cu:16 mul_kernel_cuda -> CUDALoops.cuh:18 "
                            "vectorized_elementwise_kernel<4, BinaryFunctor<float, float, float, MulFunctor<float>>>"
                            "  (3 launches, 39 µs)")
    assert not any("aten::t " in ln for ln in lines)  # a CUDA view op launched nothing: no line
    j = lines.index("main.py:24")
    assert lines[j + 1] == ("  torch.mm -> aten::mm [CPU] -> LinearAlgebra.cpp:13 mm_out_cpu -> "
                            "LinearAlgebra.cpp:10 cpublas::gemm  (1 call, 30 µs)")
    assert "[aten::frobnicate.Tensor is not in the indexed source" in lines[j + 2]
    assert lines[-3:] == ["(device work under no traced call)", "  Memcpy HtoD (Pageable -> Device)  (1 launch, 2 µs)",
                          "warning: w1"]
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["entries"][0]["site"]["launch"]["line"] == 18 and d["entries"][0]["stack"][1]["line"] == 10
    assert Recording.from_dict(json.loads(json.dumps(rec.to_dict()))).to_dict() == rec.to_dict()


def test_report_key_filter(mini_index):
    rec = recording()
    text = str(Report(rec, Joiner(mini_index).entries(rec), key="CPU", base="/w"))
    assert "aten::mm [CPU]" in text and "CUDA" not in text


def test_short_kernel_and_times():
    assert short_kernel(ADD_KERNEL) == "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>"
    assert short_kernel("ampere_sgemm_32x32_sliced1x4_nn") == "ampere_sgemm_32x32_sliced1x4_nn"
    assert short_kernel("x" * 300).endswith("…") and len(short_kernel("x" * 300)) == 100
    assert (fmt_us(41.2), fmt_us(1500), fmt_us(2.5e6)) == ("41 µs", "1.5 ms", "2.50 s")


def test_chrome_trace_gets_source_locations(mini_index, tmp_path):
    rec = recording()
    entries = Joiner(mini_index).entries(rec)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "atenmap#0", "args": {"External id": 3}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "args": {"External id": 4}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"External id": 4, "correlation": 100}},
        {"ph": "X", "cat": "kernel", "name": MUL_KERNEL, "args": {"External id": 4, "correlation": 100}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "args": {"External id": 50}},
        {"ph": "M", "name": "process_name", "args": {"name": "python"}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "atenmap#0", "args": {"External id": 3}},
    ]}))
    assert annotate(path, entries, rec.op_events, base="/w") == 5
    evs = json.loads(path.read_text())["traceEvents"]
    # See Note [Chrome args once per call]: the full args on the renamed range, the call id elsewhere.
    assert evs[0]["name"] == "aten::mul.Tensor @ model.py:10"
    assert evs[0]["args"]["atenmap.source"] == "main.py:24 -> model.py:10" and evs[0]["args"]["atenmap.call"] == 0
    assert evs[0]["args"]["atenmap.op"] == "aten::mul.Tensor [CUDA]" and evs[0]["args"]["External id"] == 3
    assert evs[1]["args"] == {"External id": 4, "atenmap.call": 0}
    assert evs[2]["args"] == {"External id": 4, "correlation": 100, "atenmap.call": 0}
    assert evs[3]["args"]["atenmap.kernel_launch"].startswith("aten/src/ATen/native/cuda/CUDALoops.cuh:18 ")
    assert evs[3]["args"]["atenmap.call"] == 0 and "atenmap.source" not in evs[3]["args"]
    assert not any(k.startswith("atenmap") for k in evs[4]["args"]) and evs[5]["args"] == {"name": "python"}
    assert evs[6]["name"] == evs[0]["name"] and evs[6]["args"] == {"External id": 3, "atenmap.call": 0}


def test_chrome_rewrite_keeps_the_rest_of_the_document(mini_index, tmp_path):
    rec = recording()
    entries = Joiner(mini_index).entries(rec)
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200"}],
           "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "atenmap#0", "args": {"External id": 3}},
                           {"ph": "X", "cat": "cpu_op", "name": "aten::add", "args": {"External id": 4, "s": "\u00b5 \\ \"x\""}}],
           "traceName": "t.json", "displayTimeUnit": "ms", "baseTimeNs": 12, "empty": [], "nested": {"a": [1, {}]}}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc, indent=4))
    assert annotate(path, entries, rec.op_events, base="/w") == 2
    got = json.loads(path.read_text())
    assert {k: v for k, v in got.items() if k != "traceEvents"} == {k: v for k, v in doc.items() if k != "traceEvents"}
    assert got["traceEvents"][1]["args"] == {"External id": 4, "s": "\u00b5 \\ \"x\"", "atenmap.call": 0}
    path.write_text(json.dumps({"traceEvents": []}))
    assert annotate(path, entries, rec.op_events) == 0 and json.loads(path.read_text()) == {"traceEvents": []}
    path.write_text(json.dumps([{"name": "atenmap#0"}]))  # the list form of the format
    assert annotate(path, entries, rec.op_events) == 1 and json.loads(path.read_text())[0]["name"].startswith("aten::mul.Tensor @ ")


# ---- versions, frames ----------------------------------------------------------------------
def test_version_warnings():
    src = SourceInfo("/src", "2.6.0a0", None)
    assert version_warnings(src, "2.6.0+cu124", "abc") == []
    (w,) = version_warnings(src, "2.13.0+cpu", "cf30153c4c131c8164ee7798e5022d810682e2cb")
    assert "PyTorch 2.6.0a0" in w and "2.13.0+cpu" in w and "commit cf30153c4c131c8164ee7798e5022d810682e2cb" in w
    assert version_warnings(SourceInfo("/src", "2.6.0a0", "cf30153c4c13" + "0" * 28), "2.6.0", "cf30153c4c13" + "0" * 28) == []
    (w,) = version_warnings(SourceInfo("/src", "2.6.0a0", "1" * 40), "2.6.0", "2" * 40)  # same version, other commit
    assert "checkout" not in w and "atenmap fetch" in w  # /src is no git checkout
    (w,) = version_warnings(SourceInfo("https://github.com/pytorch/pytorch/tree/v2.6.0", "2.6.0a0", None, origin="bundled"),
                            "2.13.0", "2" * 40)
    assert "git -C" not in w  # the bundled index is no checkout
    assert "matching source" not in version_warnings(src, "2.13.0", None)[0]


def test_version_warning_suggests_git_only_for_a_checkout(tmp_path):
    (tmp_path / ".git").mkdir()
    (w,) = version_warnings(SourceInfo(str(tmp_path), "2.6.0a0", "1" * 40), "2.6.0", "2" * 40)
    assert f"git -C {tmp_path} checkout 222222222222" in w


def test_user_frames():
    import json as stdlib_json

    assert is_user(__file__) and is_user("/tmp/ipykernel_1/123.py")
    assert not is_user(stdlib_json.__file__) and not is_user(atenmap.__file__)
    assert not is_user("/x/lib/python3.11/site-packages/torch/nn/modules/module.py")
    assert not is_user("<frozen runpy>")

    def hook(d):
        raise ValueError("bad doc")

    with pytest.raises(ValueError) as exc:
        stdlib_json.loads('{"a": 1}', object_hook=hook)
    tb = user_traceback(exc.value)
    assert tb.startswith("Traceback (most recent call last):\n") and tb.endswith("ValueError: bad doc\n")
    assert "json" not in tb.replace("stdlib_json", "") and tb.count('File "') == 2


def test_chain_of_a_delegating_op_and_composite_keys(mini_index):
    """On the fixture tree's real index: mm (structured_delegate: mm.out) answers on CPU and CUDA
    with the TORCH_IMPL_FUNC of its delegate; t (CompositeExplicitAutograd only) answers from the
    composite key, also when no tensor said which key."""
    j = Joiner(mini_index)
    for key, native in (("CPU", ("TORCH_IMPL_FUNC(mm_out_cpu)", "aten/src/ATen/native/LinearAlgebra.cpp", 13)),
                        ("CUDA", ("TORCH_IMPL_FUNC(mm_out_cuda)", "aten/src/ATen/native/cuda/Blas.cpp", 18))):
        mm, notes = j.chain("aten::mm", key)
        assert notes == [] and mm.key == key
        assert (mm.native.symbol, mm.native.file, mm.native.line) == native
    t, _ = j.chain("aten::t", "CPU")
    assert t.key == "CompositeExplicitAutograd"
    keyless, _ = j.chain("aten::t", "")
    assert keyless is not None and keyless.key == "CompositeExplicitAutograd"
    none, notes = j.chain("aten::nosuchop", "CPU")
    assert none is None and notes == ["aten::nosuchop is not in the indexed source (PyTorch 2.6.0a0+fixture)"]


def test_step_before_a_shared_launch_line():
    """Note [The step before a launch]: two kernels launching at one CUDALoops.cuh line are told
    apart by the kernel's name, else the native is shown; a CPU op shows the first kernel."""
    from atenmap.model import KeyChain
    from atenmap.trace.join import _summarize

    def kernel(name):
        launch = Step.make("launch", "vectorized_elementwise_kernel<<<g, b>>>", "aten/src/ATen/native/cuda/CUDALoops.cuh", 158)
        return Step.make("kernel", f"at::native::{name}", "aten/src/ATen/native/cuda/X.cu", 10 + len(name),
                         children=[launch])

    native = Step.make("native", "at::native::both_out", "aten/src/ATen/native/X.cpp", 5,
                       children=[kernel("copy_kernel_cuda"), kernel("mul_kernel_cuda")])
    sc = _summarize("both.out", KeyChain("CUDA", (native,)), None, [], device="cuda")
    launch = sc.launches[0]
    assert len(sc.launches) == 1 and len(sc.leads[(launch.file, launch.line)]) == 2
    assert sc.lead(launch, "void at::native::vectorized_elementwise_kernel<4, mul_kernel_cuda(...)::lambda>").symbol.endswith("mul_kernel_cuda")
    assert sc.lead(launch, "void at::native::vectorized_elementwise_kernel<4, AbsFunctor<float>>") is native
    assert sc.lead(None) is native  # placed nowhere, launches from two steps: the native
    assert sc.kernel.symbol.endswith("copy_kernel_cuda")  # what a CPU op's line shows


def test_json_text_is_the_reports_dict_one_entry_a_line(mini_index):
    rec = recording()
    rep = Report(rec, Joiner(mini_index).entries(rec), mini_index.source, ["w1"], base="/w")
    d = rep.to_dict()
    text = json_text(d)
    assert json.loads(text) == json.loads(json.dumps(d, indent=1))  # the same values as before
    lines = text.splitlines()
    assert len([ln for ln in lines if ln.startswith('  {"index": ')]) == len(d["entries"])
    assert json_text({"entries": [], "k": {"a": 1}}) == '{\n "entries": [],\n "k": {\n  "a": 1\n }\n}'


def test_entries_sharing_a_chain_share_its_dict_and_joiners_of_one_index_share_chains(mini_index):
    rec = recording()
    first = Joiner(mini_index)
    entries = first.entries(rec)
    d = Report(rec, entries, mini_index.source).to_dict()
    same = [e for e in d["entries"] if e["chain"] is not None and e["op"] == "aten::mul.Tensor"]
    assert len(same) >= 2 and all(e["chain"] is same[0]["chain"] for e in same)
    again = Joiner(mini_index)
    assert again.chain("aten::mul.Tensor", "CUDA")[0] is entries[0].chain is not None  # not resolved again
    assert Joiner(None)._chains is not Joiner(None)._chains
