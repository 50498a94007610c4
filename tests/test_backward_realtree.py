"""Index.backward on the real 2.6.0 and 1.13.1 trees: derivatives.yaml lines, the autograd nodes the
trees' own gen_autograd writes (exact lines in Functions.cpp/.h, VariableType_<n>.cpp) and the
chains of the operators the formulas call."""
from __future__ import annotations

import os

import pytest


pytestmark = pytest.mark.realtree
DERIV = "tools/autograd/derivatives.yaml"


def text_at(step) -> str:
    with open(step.file, encoding="utf-8") as f:
        return f.read().splitlines()[step.line - 1].strip()


def gen(step):
    """A generated step's place as ``(file name, line)``."""
    return os.path.basename(step.file), step.line


# op -> (entry line, first backward formula line, node, Functions.h struct, Functions.cpp apply)
CASES_26 = {
    "mul.Tensor": (1212, 1213, "MulBackward0", 4370, 9208),
    "relu": (2091, 2092, "ReluBackward0", 8361, 17732),
    "_softmax": (2196, 2197, "SoftmaxBackward0", 8871, 18797),
    "mm": (1203, 1204, "MmBackward0", 4321, 9096),
    "native_layer_norm": (1255, 1256, "NativeLayerNormBackward0", 4625, 9847),
    "sum.dim_IntList": (1687, 1690, "SumBackward1", 6683, 14275),
}


@pytest.mark.parametrize("op", sorted(CASES_26))
def test_entries_and_generated_nodes_26(real_index_26, op):
    entry, first, node, struct, apply = CASES_26[op]
    b = real_index_26.backward(op, keys=["CUDA"])
    # the formulas' helpers reach at::sum_to (ExpandUtils.h) and its reduction; fill_'s two overloads
    # on the way are each shown, and said so: nothing else is worth a warning
    assert [w for w in b.warnings if "definitions named fill_ (overloads)" not in w] == []
    assert (b.entry.loc.file, b.entry.loc.line) == (DERIV, entry)
    assert b.formulas[0].loc.line == first and b.formulas[0].kind == "backward"
    assert b.node == node
    structs = [s for s in b.node_steps if s.symbol == f"struct torch::autograd::generated::{node}"]
    applies = [s for s in b.node_steps if s.symbol == f"torch::autograd::generated::{node}::apply"]
    assert [gen(s) for s in structs] == [("Functions.h", struct)]
    assert [gen(s) for s in applies] == [("Functions.cpp", apply)]
    assert b.keys[0].key == "CUDA" and b.keys[0].steps[0].loc.line == first


def test_mul_tensor_26_node_formula_helper_and_launch(real_index_26):
    b = real_index_26.backward("mul.Tensor", keys=["CUDA"])
    reg = b.node_steps[0]
    assert gen(reg) == ("VariableType_0.cpp", 18813) and "Autograd" in reg.detail
    wrapper = reg.children[0]
    assert gen(wrapper) == ("VariableType_0.cpp", 13279)
    assert [c.line for c in wrapper.children] == [13287, 13290, 13294, 13310]
    functional = b.node_steps[2].children[0]
    assert gen(functional) == ("Functions.cpp", 9187)
    assert [(c.line, c.detail) for c in functional.children] == [(9198, "gradient of other"), (9202, "gradient of self")]
    self_f = b.keys[0].steps[0]
    assert self_f.symbol == "self: mul_tensor_backward(grad, other, self.scalar_type())"
    helper = self_f.children[0]
    assert (helper.file, helper.line) == ("torch/csrc/autograd/FunctionsManual.cpp", 597)
    mul = next(s for s in helper.children if s.symbol == "aten::mul (operator*)")
    assert mul.line == 598
    assert ("aten/src/ATen/native/cuda/BinaryMulKernel.cu", 22) in [(s.file, s.line) for s in mul.walk() if s.role == "kernel"]
    assert ("aten/src/ATen/native/cuda/CUDALoops.cuh", 158) in [(s.file, s.line) for s in mul.walk() if s.role == "launch"]


def test_formula_operators_26(real_index_26):
    relu = real_index_26.backward("relu", keys=["CUDA"]).keys[0].steps[0]
    op = relu.children[0]
    assert op.symbol == "aten::threshold_backward" and (op.file, op.line) == (DERIV, 2092)
    assert any(s.role == "register" and "ActivationThresholdKernel.cu" in (s.file or "") for s in op.walk())
    softmax = real_index_26.backward("_softmax", keys=["CUDA"]).keys[0].steps[0]
    assert softmax.children[0].symbol == "aten::_softmax_backward_data"
    assert any(s.role == "launch" for s in softmax.walk())
    mm = real_index_26.backward("mm", keys=["CUDA"]).keys[0].steps[0]
    helper = mm.children[0]
    assert (helper.symbol, helper.line) == ("torch::autograd::generated::details::mm_mat1_backward", 1415)
    assert any(s.role == "library" and "cublas" in s.detail.lower() for s in helper.walk())
    sums = real_index_26.backward("sum.dim_IntList", keys=["CPU"])
    assert [(f.dispatch, f.loc.line) for f in sums.formulas] == [
        ("Default", 1690), ("Default", 1691), ("AutogradNestedTensor", 1694)]
    assert sums.keys[0].steps[0].children[0].line == 688  # FunctionsManual.cpp sum_backward


def test_composite_op_decomposes_26(real_index_26):
    b = real_index_26.backward("layer_norm", keys=["CUDA"])
    assert b.entry is None
    d = next(d for d in b.decomposed if d.op == "native_layer_norm")
    assert (d.call.file, d.call.line) == ("aten/src/ATen/native/layer_norm.cpp", 199)
    assert d.entry.loc.line == 1255 and d.node == "NativeLayerNormBackward0"


def test_mul_tensor_113(real_index_113):
    ix = real_index_113
    b = ix.backward("mul.Tensor", keys=["CPU"])
    assert [w for w in b.warnings if "definitions named fill_ (overloads)" not in w] == []  # as above
    assert b.entry.loc.line == 1125 and b.formulas[0].loc.line == 1126
    assert b.node == "MulBackward0"
    # 1.13's gen_autograd orders some output by set iteration: the generated lines are checked by
    # their text (codegen.py runs it with PYTHONHASHSEED=0, so one cache entry keeps its lines)
    reg, struct, apply = b.node_steps
    assert text_at(reg) .startswith('m.impl("mul.Tensor"') and reg.file.endswith("/VariableType_0.cpp")
    assert text_at(struct).startswith("struct TORCH_API MulBackward0 ") and struct.file.endswith("/Functions.h")
    assert text_at(apply).startswith("variable_list MulBackward0::apply(") and apply.file.endswith("/Functions.cpp")
    assert [c.detail for c in apply.children] == ["gradient of other", "gradient of self"]
    assert all("mul_tensor_backward(" in text_at(c) for c in apply.children)
    helper = b.keys[0].steps[0].children[0]
    assert (helper.file, helper.line) == ("torch/csrc/autograd/FunctionsManual.cpp", 520)
    assert any(s.role == "kernel" for s in helper.walk())
