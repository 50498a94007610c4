"""The join's chains kept beside the index (trace/chaincache.py, Note [Chains kept beside the
index]): a second process (here: a second Index object on the same file) reads them instead of
resolving, with the same report; a rebuilt index or another atenmap drops them."""
from __future__ import annotations

import json

from atenmap.api import Index
from atenmap.trace import chaincache
from atenmap.trace.events import Call, Frame, Kernel, Recording
from atenmap.trace.join import Joiner
from atenmap.trace.report import Report, json_text

MUL_F = "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"
MUL_KERNEL = f"void at::native::vectorized_elementwise_kernel<4, {MUL_F}, std::array<char*, 3ul> >(int, {MUL_F}, std::array<char*, 3ul>)"
MAIN = (Frame("/w/main.py", 24, "<module>"), Frame("/w/model.py", 10, "forward"))


def recording() -> Recording:
    return Recording(calls=[
        Call(0, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul", kernels=[Kernel(MUL_KERNEL, 13.0, 0, "kernel", 4)]),
        Call(1, "aten::mul.Tensor", "CUDA", MAIN, "torch.mul", kernels=[Kernel(MUL_KERNEL, 12.0, 0, "kernel", 5)],
             node="MulBackward0"),
        Call(2, "aten::t", "CUDA", MAIN, "torch.nn.functional.linear", ("aten::linear",)),
        Call(3, "aten::mm", "CPU", MAIN[:1], "torch.mm", cpu_us=30.0),
        Call(4, "aten::add.Tensor", "CPU", MAIN[:1], "torch.add", cpu_us=3.0),
        Call(5, "aten::frobnicate.Tensor", "CPU", MAIN[:1], "torch.frobnicate", cpu_us=1.0),
    ], torch_version="2.6.0+cu124", profiled=True, cuda_available=True)


def report_json(ix: Index) -> tuple[str, Joiner]:
    rec = recording()
    j = Joiner(ix)
    rep = Report(rec, j.entries(rec), ix.source, [], base="/w")
    return json_text(rep.to_dict()) + "\n" + str(rep), j


PAIRS = 5  # (op, key) pairs of the recording: mul CUDA, t CUDA, mm CPU, add CPU, frobnicate CPU
KEPT = PAIRS + 2  # and one kernel name and one autograd node, looked up once


def test_a_second_process_reads_the_chains_with_the_same_report(mini_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    first = Index.open(mini_tree, codegen=False)
    text, j = report_json(first)
    assert j.kept().stored == KEPT and j.kept().hits == 0
    assert (first.store.path.parent / chaincache.FILE_NAME).exists()
    second = Index.open(mini_tree, codegen=False)  # a new Index: nothing shared in memory
    again, j2 = report_json(second)
    assert j2.kept().hits == KEPT and j2.kept().stored == 0  # nothing resolved, no kernel looked up
    assert j2.kernel_match(MUL_KERNEL) == first.kernel(MUL_KERNEL)  # the whole KernelMatch, children included
    assert again == text
    mul = Joiner(second).chain("aten::mul.Tensor", "CUDA")[0]
    assert mul.kernel.symbol == "at::native::mul_kernel_cuda" and mul.stub.symbol == "mul_stub"
    assert json.loads(text.split("\n}\n")[0] + "\n}")["entries"][0]["chain"]["kernel"]["line"] == mul.kernel.line
    first.close()
    second.close()


def test_a_rebuilt_index_drops_the_kept_chains(mini_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    ix = Index.open(mini_tree, codegen=False)
    _, j = report_json(ix)
    line = j.chain("aten::mul.Tensor", "CUDA")[0].kernel.line
    ix.close()
    cu = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    cu.write_text("// a line above\n" + cu.read_text())  # the kernel moves one line down
    rebuilt = Index.open(mini_tree, codegen=False)
    text, j2 = report_json(rebuilt)
    assert j2.kept().hits == 0 and j2.kept().stored == KEPT
    assert j2.chain("aten::mul.Tensor", "CUDA")[0].kernel.line == line + 1
    rebuilt.close()
    fresh = Index.open(mini_tree, codegen=False)  # the new rows serve the new index
    again, j3 = report_json(fresh)
    assert j3.kept().hits == KEPT and again == text
    fresh.close()


def test_another_atenmap_drops_the_kept_chains(mini_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    ix = Index.open(mini_tree, codegen=False)
    text, _ = report_json(ix)
    monkeypatch.setattr(chaincache, "_CODE_KEY", "another atenmap's modules")
    other = Index.open(mini_tree, codegen=False)
    again, j = report_json(other)
    assert j.kept().hits == 0 and j.kept().stored == KEPT and again == text
    ix.close()
    other.close()


def test_encode_decode_round_trips_a_summary(mini_index):
    value = Joiner(mini_index)._chain("aten::mul.Tensor", "CUDA")
    back = chaincache.decode(json.loads(json.dumps(chaincache.encode(value))))
    assert back[0].to_dict() == value[0].to_dict() and back[1] == value[1]
    assert {k: [s.symbol for s in v] for k, v in back[0].leads.items()} == \
        {k: [s.symbol for s in v] for k, v in value[0].leads.items()}
    none = chaincache.decode(chaincache.encode((None, ["no kernel"])))
    assert none == (None, ["no kernel"])


def test_kernel_matches_round_trip_whole(mini_index):
    for name in (MUL_KERNEL, "ampere_sgemm_128x64_tn", "void at::native::unknown_kernel<float>(float*)"):
        m = mini_index.kernel(name)
        back = chaincache.decode_match(json.loads(json.dumps(chaincache.encode_match(m))))
        assert back == m and back.to_dict() == m.to_dict()


def test_autograd_nodes_round_trip(mini_index_gen):
    node = mini_index_gen.autograd_node("MulBackward0")
    assert node is not None and node.entry is not None
    assert chaincache.decode_node(json.loads(json.dumps(chaincache.encode_node(node)))) == node
    assert chaincache.decode_node(chaincache.encode_node(None)) is None
