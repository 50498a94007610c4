"""Backward: derivatives.yaml parsing (strict, torchgen style), Index.backward on the fixture tree
(its stand-in gen_autograd writes Functions.h/.cpp and VariableType_0.cpp), `chain --backward`."""
from __future__ import annotations

import json
import shutil

import pytest

from atenmap.errors import YamlError
from atenmap.extract.derivatives_yaml import parse_derivatives

from .conftest import FIXTURE_TREE, cli_run

DERIV = "tools/autograd/derivatives.yaml"


def walk(steps):
    for s in steps:
        yield from s.walk()


# --- the parser ---------------------------------------------------------------------------------


def test_entry_formulas_with_lines_kinds_and_statuses():
    text = ("- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n"
            "  self: mul_tensor_backward(grad, other, self.scalar_type())\n"
            "  other: not_implemented(\"other\")\n"
            "  result: other_t * self_p\n"
            "\n"
            "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n"
            "  output_differentiability: [True, False]\n"
            "  self, dim: non_differentiable\n"
            "  values: gather_with_keepdimed_indices(self_t, dim, indices, keepdim)\n")
    mul, mx = parse_derivatives(text, DERIV)
    assert (mul.op, mul.loc.line) == ("mul.Tensor", 1)
    assert [(f.names, f.kind, f.loc.line, f.status) for f in mul.formulas] == [
        (("self",), "backward", 2, ""), (("other",), "backward", 3, "not_implemented"),
        (("result",), "forward", 4, "")]
    assert mx.output_differentiability == (True, False)
    assert [(f.names, f.kind, f.status) for f in mx.formulas] == [
        (("self", "dim"), "backward", "non_differentiable"), (("values",), "forward", "")]


def test_dispatch_sections_keep_their_key():
    text = ("- name: sum(Tensor self) -> Tensor\n"
            "  dispatch:\n"
            "    Default:\n"
            "      self: grad.expand(self.sizes())\n"
            "      result: auto_linear\n"
            "    AutogradNestedTensor:\n"
            "      self: nested_sum_backward(grad, self)\n")
    (e,) = parse_derivatives(text, DERIV)
    assert [(f.dispatch, f.loc.line, f.status) for f in e.formulas] == [
        ("Default", 4, ""), ("Default", 5, "auto_linear"), ("AutogradNestedTensor", 7, "")]


@pytest.mark.parametrize("text, message", [
    ("- name: relu(Tensor self) -> Tensor\n  selff: grad\n",
     "tools/autograd/derivatives.yaml:2: unknown key 'selff' in derivatives.yaml entry 'relu'"),
    ("- self: grad\n", "tools/autograd/derivatives.yaml:1: derivatives.yaml entry has no 'name' key"),
    ("- name: relu\n", "tools/autograd/derivatives.yaml:1: 'name' is not a function schema: 'relu'"),
    ("- name: relu(Tensor self) -> Tensor\n  self: [grad]\n",
     "tools/autograd/derivatives.yaml:2: 'relu': the formula of 'self' must be a string"),
    ("- name: relu(Tensor self) -> Tensor\n- name: relu(Tensor self) -> Tensor\n",
     "tools/autograd/derivatives.yaml:2: duplicate entry 'relu' (first at line 1)"),
    ("- name: relu(Tensor self) -> Tensor\n  self: a: b\n", "tools/autograd/derivatives.yaml:2: malformed yaml"),
])
def test_bad_entries_name_file_and_line(text, message):
    with pytest.raises(YamlError) as exc:
        parse_derivatives(text, DERIV)
    assert str(exc.value).startswith(message)


# --- Index.backward on the fixture tree -----------------------------------------------------------


def test_formulas_node_and_chain_of_the_formula_helper(mini_index_gen):
    b = mini_index_gen.backward("mul.Tensor", keys=["CUDA"])
    assert b.warnings == ()
    assert (b.entry.loc.file, b.entry.loc.line) == (DERIV, 2)
    assert [(f.names, f.loc.line, f.kind) for f in b.formulas] == [
        (("self",), 3, "backward"), (("other",), 4, "backward"), (("result",), 5, "forward")]
    assert b.node == "MulBackward0"
    reg, struct, apply = b.node_steps
    assert reg.role == "register" and reg.file.endswith("/autograd/VariableType_0.cpp") and reg.line == 20
    wrapper = reg.children[0]
    assert wrapper.symbol.endswith("VariableType::(anonymous namespace)::mul_Tensor") and wrapper.line == 4
    assert [c.line for c in wrapper.children] == [7, 8, 9, 12]
    assert struct.file.endswith("/autograd/Functions.h") and struct.line == 3
    assert apply.symbol.endswith("MulBackward0::apply") and apply.file.endswith("/autograd/Functions.cpp")
    assert [(c.line, c.detail) for c in apply.children] == [(7, "gradient of self"), (11, "gradient of other")]
    (kc,) = b.keys
    self_f = kc.steps[0]
    assert (self_f.file, self_f.line) == (DERIV, 3)
    helper = self_f.children[0]
    assert (helper.role, helper.file, helper.line) == ("helper", "torch/csrc/autograd/FunctionsManual.cpp", 5)
    mul = next(s for s in helper.walk() if s.role == "op_call")
    assert mul.symbol == "aten::mul (operator*)" and mul.line == 7
    launch = next(s for s in mul.walk() if s.role == "launch")
    assert (launch.file, launch.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 18)
    # the second formula reaches mul.Tensor again: shown once per key
    again = next(s for s in kc.steps[1].walk() if s.role == "op_call")
    assert "already shown above" in again.detail and not again.children


def test_formula_text_operators_and_statuses(mini_index_gen):
    b = mini_index_gen.backward("exp", keys=["CPU"])
    (step,) = b.keys[0].steps
    op = step.children[0]
    assert op.symbol == "aten::mul (operator*)" and (op.file, op.line) == (DERIV, 8)
    assert any(s.role == "kernel" for s in op.walk())
    mm = mini_index_gen.backward("mm", keys=["CPU"])
    first, second = mm.keys[0].steps
    assert first.children[0].symbol == "aten::mm"
    assert "not_implemented" in second.detail and not second.children
    copy = mini_index_gen.backward("copy_", keys=["CPU"])
    assert [(f.dispatch, f.status) for f in copy.formulas] == [
        ("Default", ""), ("Default", ""), ("AutogradNestedTensor", "not_implemented")]
    assert len(copy.keys[0].steps) == 2  # the nested-tensor formula is not the CPU key's


def test_composite_op_without_entry_decomposes(mini_index_gen):
    b = mini_index_gen.backward("linear", keys=["CPU"])
    assert b.entry is None and b.keys == ()
    addmm = next(d for d in b.decomposed if d.op == "addmm")
    assert (addmm.call.file, addmm.call.line) == ("aten/src/ATen/native/Linear.cpp", 13)
    assert addmm.entry.loc.line == 15
    assert next(d for d in b.decomposed if d.op == "t").entry is None


def test_without_generated_code_formulas_still_come(mini_index):
    b = mini_index.backward("mul.Tensor", keys=["CPU"])
    assert b.node is None and b.node_steps == ()
    assert b.entry.loc.line == 2 and b.keys
    assert any("autograd node not shown" in w for w in b.warnings)


# --- the CLI --------------------------------------------------------------------------------------


def test_cli_backward_text_and_json(capsys):
    code, out, err = cli_run(capsys, "mul.Tensor", "--backward", "--key", "CUDA", "--wide", "-s", str(FIXTURE_TREE),
                             "--codegen", "always", errors_only=True)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "[CUDA]" in lines and "[backward]" in lines and "[backward CUDA]" in lines
    assert lines.index("[CUDA]") < lines.index("[backward]")
    assert any(ln.startswith(f"{DERIV}:3 ") and "self: mul_tensor_backward(grad, other, self.scalar_type())" in ln
               for ln in lines)
    assert any(ln.startswith("torch/csrc/autograd/FunctionsManual.cpp:5 ") for ln in lines)
    assert any("MulBackward0::apply" in ln and ln.startswith("gen:autograd/Functions.cpp:3 ") for ln in lines)
    code, out, _ = cli_run(capsys, "mul.Tensor", "--backward", "--json", "-k", "CPU", "-s", str(FIXTURE_TREE),
                           "--codegen", "always", errors_only=True)
    d = json.loads(out)
    assert code == 0 and d["keys"][0]["key"] == "CPU"
    bw = d["backward"]
    assert bw["entry"]["line"] == 2 and bw["node"] == "MulBackward0"
    assert bw["formulas"][0] == {"names": ["self"], "formula": "mul_tensor_backward(grad, other, self.scalar_type())",
                                 "file": DERIV, "line": 3, "kind": "backward", "dispatch": "Default", "status": ""}
    assert bw["keys"][0]["key"] == "CPU"


def test_cli_bad_derivatives_yaml_warns_once_and_prints_the_chain(capsys, mini_tree):
    (mini_tree / DERIV).write_text("- name: mul.Tensor(Tensor self) -> Tensor\n  bogus: grad\n")
    code, out, err = cli_run(capsys, "mul.Tensor", "--backward", "-k", "CPU", "-s", str(mini_tree), "--no-codegen",
                             drop=("atenmap: indexing", "atenmap: running"))
    assert code == 0 and "[CPU]" in out and "[backward]" in out
    warnings = [ln for ln in err.splitlines() if ln.startswith("atenmap: warning:")]
    assert [w for w in warnings if DERIV in w] == [
        f"atenmap: warning: {DERIV}:2: unknown key 'bogus' in derivatives.yaml entry 'mul.Tensor' "
        "(neither an input nor an output of its schema); backward formulas not shown"]
    (mini_tree / DERIV).unlink()
    code, out, err = cli_run(capsys, "mul.Tensor", "--backward", "-k", "CPU", "-s", str(mini_tree), "--no-codegen")
    assert code == 0 and "[CPU]" in out and f"no {DERIV} in" in err


# --- atenmap trace: autograd nodes linked to their derivatives.yaml entry --------------------------


def test_trace_links_autograd_nodes_to_derivatives_yaml(mini_index_gen):
    torch = pytest.importorskip("torch", reason="atenmap trace needs torch")
    import atenmap.trace as amtrace
    from atenmap.model import Location
    from atenmap.trace.join import join
    from atenmap.trace.report import entry_text

    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    with amtrace.trace(key="CPU") as t:
        (x * w).sum().backward()
    rec = t.recording
    forward = [c for c in rec.calls if c.op == "aten::mul.Tensor" and c.function == "torch.Tensor.mul"]
    backward = [c for c in rec.calls if c.op == "aten::mul.Tensor" and c.node == "MulBackward0"]
    assert forward and all(c.node is None for c in forward)
    assert len(backward) == 2  # grad * w, grad * x
    entries = [e for e in join(rec, mini_index_gen) if e.call is not None and e.call.node == "MulBackward0"]
    node = entries[0].node
    assert (node.name, node.op, node.entry) == ("MulBackward0", "mul.Tensor", Location(DERIV, 2))
    assert node.apply.file.endswith("/autograd/Functions.cpp") and node.apply.line == 3
    assert "MulBackward0 (tools/autograd/derivatives.yaml:2 mul.Tensor) -> aten::mul.Tensor [CPU]" in entry_text(entries[0])
    assert entries[0].to_dict()["autograd_node"]["entry"] == {"file": DERIV, "line": 2}
    # a node no generated kernel makes (the engine's own) keeps its name, without an entry
    other = [e for e in join(rec, mini_index_gen) if e.call is not None and e.call.node and e.node is None]
    assert all(e.call.node in entry_text(e) for e in other)
