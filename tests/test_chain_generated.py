"""Chains through the checkout's generated code, with the fixture tree's stand-in torchgen
(fixtures/pytorch-mini/torchgen writes files shaped like torchgen's) and, marked realtree, with
the real 2.6.0 and 1.13.1 torchgen."""
from __future__ import annotations

import os


import pytest



def walk(chain, key):
    return [s for kc in chain.keys if kc.key == key for s in kc.walk()]


def find(steps, role, part, file_part=None):
    for s in steps:
        if s.role == role and part in s.symbol and (file_part is None or file_part in (s.file or "")):
            return s
    raise AssertionError(f"no {role} {part!r}: {[(s.role, s.symbol, s.file) for s in steps]}")


def test_ufunc_cuda_chain_through_generated_files(mini_index_gen):
    ch = mini_index_gen.chain("add.out", keys=["CUDA"])
    s = walk(ch, "CUDA")
    reg = find(s, "register", 'm.impl("add.out"')
    assert reg.generated and reg.file.endswith("/aten/RegisterCUDA.cpp") and reg.line == 24
    wrapper = find(s, "generated", "wrapper_CUDA_add_out_out")
    assert wrapper.line == 4
    native = find(s, "native", "TORCH_IMPL_FUNC(ufunc_add_CUDA)")
    assert native.generated and native.file.endswith("/aten/UfuncCUDA_add.cu")
    functor = find(s, "helper", "CUDAFunctor_add::operator()")
    assert "functor" in functor.detail
    inner = find(s, "call", "ufunc::add")
    assert inner.file == "aten/src/ATen/native/ufunc/add.h" and not inner.generated
    find(s, "launch", "vectorized_elementwise_kernel", "CUDALoops.cuh")
    assert ch.generated_root and reg.file.startswith(ch.generated_root)
    # RegisterSparseCUDA's m.impl is for SparseCUDA, not CUDA
    assert not [x for x in s if "SparseCUDA" in x.symbol]


def test_stub_registration_only_in_generated_code(mini_index_gen):
    s = walk(mini_index_gen.chain("sub.out", keys=["CPU"]), "CPU")
    reg = find(s, "register", "REGISTER_DISPATCH(add_stub")
    assert reg.generated and reg.file.endswith("UfuncCPUKernel_add.cpp")
    find(s, "kernel", "add_kernel")
    declares = [x for x in s if x.role == "stub_declare"]
    assert not declares[0].generated  # the hand-written declaration comes first


def test_python_binding_is_the_entry_point(mini_index_gen):
    ch = mini_index_gen.chain("mul.Tensor", keys=["CUDA"])
    assert [b.symbol for b in ch.bindings] == ["torch.mul -> THPVariable_mul"]
    lam = ch.bindings[0].children[0]
    assert lam.symbol == "dispatch_mul" and lam.line == 10  # the lambda, under its marker comment
    s = walk(ch, "CUDA")
    top = ch.keys[0].steps[0]
    assert top.children[0].role == "register" and "mul.Tensor" in top.children[0].symbol
    assert find(s, "delegate", "mul.out")
    d = ch.to_dict()
    assert d["python"][0]["symbol"] == "torch.mul -> THPVariable_mul"


def test_no_codegen_keeps_the_placeholder(mini_index):
    ch = mini_index.chain("add.out", keys=["CUDA"])
    s = walk(ch, "CUDA")
    gen = find(s, "generated", "ufunc_add_CUDA")
    assert gen.file is None and "UfuncCUDA_add.cu" in gen.detail
    assert not ch.bindings and ch.generated_root is None


def test_codegen_failure_is_one_warning_not_a_crash(mini_tree, monkeypatch):
    from atenmap.api import Index

    (mini_tree / "torchgen" / "gen.py").write_text("raise RuntimeError('broken torchgen in this tree')\n")
    with Index.open(mini_tree) as ix:
        ch = ix.chain("add.out", keys=["CUDA"])
    assert any("torchgen failed" in w and "broken torchgen" in w for w in ch.warnings)
    find(walk(ch, "CUDA"), "generated", "ufunc_add_CUDA")  # the chain without generated steps


def test_text_view_prints_generated_files_by_their_real_path(mini_index_gen):
    """Generated steps print as gen:PATH, the header says once which real folder gen: is (Note
    [Generated paths in text]); no <torchgen> placeholder and no long cache path on a step line."""
    from atenmap.views import text as render

    gen = mini_index_gen.generated_root
    lines = render.chain_lines(mini_index_gen.chain("add.out", keys=["CUDA"]))
    assert f"gen: = {gen}/ (the checkout's torchgen output; steps marked [generated])" in lines
    assert any(ln.startswith("gen:aten/RegisterCUDA.cpp:24 ") for ln in lines)
    assert os.path.isfile(os.path.join(gen, "aten/RegisterCUDA.cpp"))
    assert not any("<torchgen>" in ln for ln in lines)
    assert sum(gen in ln for ln in lines) == 1


@pytest.mark.realtree
def test_real_2_6_add_out_cuda_and_cpu(real_index_26):
    s = walk(real_index_26.chain("add.out", keys=["CUDA"]), "CUDA")
    find(s, "generated", "wrapper_CUDA_add_out_out", "RegisterCUDA.cpp")
    find(s, "native", "TORCH_IMPL_FUNC(ufunc_add_CUDA)", "UfuncCUDA_add.cu")
    find(s, "helper", "CUDAFunctor_add::operator()", "UfuncCUDA_add.cu")
    find(s, "call", "ufunc::add", "native/ufunc/add.h")
    find(s, "helper", "gpu_kernel", "native/cuda/Loops.cuh")
    find(s, "launch", "vectorized_elementwise_kernel", "native/cuda/CUDALoops.cuh")
    s = walk(real_index_26.chain("add.out", keys=["CPU"]), "CPU")
    find(s, "kernel", "add_kernel", "UfuncCPUKernel_add.cpp")
    s = walk(real_index_26.chain("sub.out", keys=["CUDA"]), "CUDA")
    find(s, "register", "REGISTER_DISPATCH(add_stub", "UfuncCUDA_add.cu")
    ch = real_index_26.chain("add.Tensor", keys=["CUDA"])
    assert {b.symbol for b in ch.bindings} >= {"torch.add -> THPVariable_add", "Tensor.add -> THPVariable_add"}


@pytest.mark.realtree
def test_real_1_13_1_with_its_own_torchgen(real_index_113):
    ix = real_index_113
    ch = ix.chain("add.out", keys=["CUDA"])
    s = walk(ch, "CUDA")
    find(s, "generated", "wrapper_add_out_out", "RegisterCUDA.cpp")
    find(s, "native", "TORCH_IMPL_FUNC(ufunc_add_CUDA)", "UfuncCUDA_add.cu")
    find(s, "launch", "elementwise_kernel", "native/cuda/CUDALoops.cuh")
    assert not [w for w in ch.warnings if "torchgen" in w]


def _on_a_terminal(monkeypatch):
    import sys

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("ATENMAP_PAGER", "")  # shown directly (pager.show): what the pager would get


def test_on_a_terminal_the_hand_written_answer_comes_before_torchgen(mini_tree, capsys, monkeypatch):
    """Note [Generated steps later] (cli/chain_run.py): on a tree never indexed, with no preview,
    the hand-written answer first, one line, then the complete answer: the same as once everything
    is indexed."""
    from atenmap.cli.chain_run import GENERATED_LATER
    from tests.conftest import cli_run

    _on_a_terminal(monkeypatch)
    monkeypatch.setenv("ATENMAP_PREVIEW", "0")
    code, first, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0 and f"atenmap: {GENERATED_LATER}" in err.splitlines()
    code, complete, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0 and GENERATED_LATER not in err  # indexed now: answered at once
    code, hand, err = cli_run(capsys, "add.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0, err
    assert "RegisterCUDA.cpp" in complete and "RegisterCUDA.cpp" not in hand
    assert first == hand + complete


def test_after_a_preview_the_complete_answer_comes_next(mini_tree, capsys, monkeypatch):
    """Note [What a preview leaves out]: the status line first, saying the generated steps follow;
    the preview (add.out's CUDA registration is torchgen's: not whole, so no runs block and no
    warning about what its few files lack); then the complete answer, not the hand-written one too."""
    from atenmap.cli.chain_run import GENERATED_LATER, PREVIEW_GENERATED, PREVIEW_PARTIAL
    from tests.conftest import cli_run

    _on_a_terminal(monkeypatch)
    monkeypatch.delenv("ATENMAP_PREVIEW", raising=False)
    code, first, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("atenmap: a preview from ") and PREVIEW_PARTIAL in lines[0]
    assert lines[0].endswith(f"{PREVIEW_GENERATED}…") and GENERATED_LATER not in err
    assert not [l for l in lines if l.startswith("atenmap: warning:")]
    code, complete, _ = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0 and first.endswith(complete) and first != complete
    preview = first[:-len(complete)]
    assert preview.count("[CUDA]") == 1 and "runs (" not in preview and "runs (" in complete


def test_without_a_terminal_the_complete_answer_only(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import GENERATED_LATER
    from tests.conftest import cli_run

    code, out, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert code == 0 and GENERATED_LATER not in err and out.count("[CUDA]") == 1
    code, again, _ = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree))
    assert again == out and "RegisterCUDA.cpp" in out
    _on_a_terminal(monkeypatch)  # and once torchgen's output is cached, a new index does not wait either
    code, fresh, err = cli_run(capsys, "add.out", "--key", "CUDA", "--source", str(mini_tree), "--json")
    assert code == 0 and GENERATED_LATER not in err and fresh.startswith("{")


@pytest.mark.realtree
def test_real_2_6_index_built_in_two_steps_answers_as_the_one_step_index(real_index_26, tmp_path, monkeypatch):
    """Note [Generated steps later]: the hand-written index (--no-codegen), then torchgen's files
    added to it by a refresh, answers exactly as the index built in one step."""
    from atenmap import build
    from atenmap.api import Index
    from atenmap.views.text import chain_json

    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    tree = real_index_26.source.root
    first = build.build(real_index_26.source, codegen=False)
    second = build.build(real_index_26.source, codegen=True)
    assert first.parsed > 1900 and second.reused == first.parsed and 40 < second.parsed < 100
    with Index.open(tree) as two_step:
        for op, key in (("mul.out", "CUDA"), ("add.out", "CUDA"), ("mm.out", "CUDA"), ("exp.out", "CPU")):
            a = chain_json(real_index_26.chain(op, keys=[key]))
            b = chain_json(two_step.chain(op, keys=[key]))
            assert a.replace(str(real_index_26.chain(op, keys=[key]).generated_root), "<gen>") == \
                b.replace(str(two_step.chain(op, keys=[key]).generated_root), "<gen>"), op
