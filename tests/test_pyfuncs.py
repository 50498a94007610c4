"""Torch names users type that are Python above the bindings (issue 21, item 9): Note [Python
functions above the bindings] in extract/pyfuncs.py, resolve/pylayer.py. A small functional.py of
our own beside the fixture tree, then the real 2.6.0 tree's torch/nn/functional.py & co."""
from __future__ import annotations

import textwrap

import pytest

from atenmap.api import Index
from atenmap.extract.pyfuncs import PyCall, read_module

from .conftest import cli_run

FUNCTIONAL = textwrap.dedent('''\
    import torch
    from torch import _VF, Tensor
    from torch._C import _add_docstr

    linear = _add_docstr(torch._C._nn.linear, r"""linear(input, weight, bias=None) -> Tensor""")


    def _scale(input: Tensor, s) -> Tensor:
        return torch.mul(input, s)


    def scaled_exp(input: Tensor, s: float = 2.0, inplace: bool = False) -> Tensor:
        if has_torch_function_unary(input):
            return handle_torch_function(scaled_exp, (input,), input, s)
        if input.dim() == 0:
            input = input.t()
        y = _scale(input, s)
        return y.exp().add(y)


    def mm_then(input, other):
        return _VF.mm(input, other).t()


    exp2 = boolean_dispatch(arg_name="x", if_true=scaled_exp, if_false=mm_then)
    ''')


def test_read_module_records_calls_in_order_and_aliases():
    fns = read_module(FUNCTIONAL, "nn")
    assert fns["linear"].alias == "torch._C._nn.linear" and fns["linear"].line == 5
    assert fns["scaled_exp"].line == 12 and fns["scaled_exp"].qualname == "torch.nn.functional.scaled_exp"
    plain = (("has_torch_function_unary(input)", False),)  # after its `if ...: return`: the test's else
    assert fns["scaled_exp"].calls == (
        PyCall("Tensor.dim", 15, False, plain), PyCall("Tensor.t", 16, False, (*plain, ("input.dim() == 0", True))),
        PyCall("_scale", 17, False, plain), PyCall("Tensor.exp", 18, True, plain), PyCall("Tensor.add", 18, True, plain))
    assert fns["scaled_exp"].params == (("input", None), ("s", "2.0"), ("inplace", "False"))
    assert fns["mm_then"].calls == (PyCall("torch._C._VariableFunctions.mm", 22, True), PyCall("Tensor.t", 22, True))
    assert [c.name for c in fns["exp2"].calls] == ["scaled_exp", "mm_then"]
    assert read_module("def broken(:\n", "nn") == {}


@pytest.fixture
def mini_with_python(mini_tree):
    (mini_tree / "torch/nn").mkdir(parents=True)
    (mini_tree / "torch/nn/functional.py").write_text(FUNCTIONAL)
    return mini_tree


def test_composite_python_function_resolves_to_its_operators(mini_with_python):
    with Index.open(mini_with_python, codegen=False) as ix:
        found = ix.lookup("F.scaled_exp")
        py = found.python
        assert (py.name, py.loc.file, py.loc.line) == ("torch.nn.functional.scaled_exp", "torch/nn/functional.py", 12)
        assert [(c.written, c.operator, c.via, c.loc.line) for c in py.calls] == [
            ("Tensor.t", "t", (), 16), ("torch.mul", "mul.Tensor", ("torch.nn.functional._scale",), 9),
            ("Tensor.exp", "exp", (), 18), ("Tensor.add", "add.Tensor", (), 18)]
        assert str(found.operator.name) == "exp"  # the first operator it returns
        assert str(ix.lookup("torch.nn.functional.linear").operator.name) == "linear"
        assert ix.lookup("F.linear").python.alias == "torch._C._nn.linear"
        assert str(ix.lookup("F.mm_then").operator.name) == "mm"  # _VF.mm: the binding, no Python above it
        assert [c.operator for c in ix.lookup("F.exp2").python.calls] == ["t", "mul.Tensor", "exp", "add.Tensor", "mm"]


def test_cli_shows_the_python_function_first(capsys, mini_with_python):
    code, out, err = cli_run(capsys, "F.scaled_exp", "--source", str(mini_with_python), "--no-codegen", "--no-pager")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["torch.nn.functional.scaled_exp: a Python function, torch/nn/functional.py:12",
                         "it calls (composite):"]
    i = lines.index("  torch/nn/functional.py:9   torch.mul -> mul.Tensor")
    assert lines[i + 1] == "  " + " " * len("torch/nn/functional.py:16") + "    through torch.nn.functional._scale"
    assert "the chain of exp follows; the others: atenmap OPERATOR" in lines
    assert any(ln.startswith("exp: exp(Tensor self) -> Tensor") for ln in lines)
    code, out, _ = cli_run(capsys, "F.scaled_exp", "--source", str(mini_with_python), "--no-codegen", "--json")
    import json

    d = json.loads(out)
    assert d["op"] == "exp" and d["python_function"]["calls"][0]["operator"] == "t"


def test_a_name_with_no_python_and_no_operator_is_still_unknown(capsys, mini_with_python):
    code, _, err = cli_run(capsys, "F.no_such_thing", "--source", str(mini_with_python), "--no-codegen")
    assert code == 1 and "unknown operator 'F.no_such_thing'" in err


@pytest.mark.realtree
@pytest.mark.parametrize("name, op, calls", [
    ("F.cross_entropy", "cross_entropy_loss", ["cross_entropy_loss"]),
    ("torch.nn.functional.normalize", "div.Tensor", ["linalg_vector_norm", "clamp_min.Tensor", "expand_as", "div.Tensor"]),
    ("torch.norm", "linalg_vector_norm", ["linalg_vector_norm", "linalg_matrix_norm", "norm.Scalar"]),  # its default call's path (Note [The path a call's arguments take])
    ("Tensor.norm", "linalg_vector_norm", ["linalg_vector_norm", "norm.Scalar"]),  # through torch.norm's default path
    ("torch.einsum", "einsum", ["einsum"]),
    ("F.relu", "relu", ["relu_", "relu"]),
    ("F.mse_loss", "mse_loss", ["broadcast_tensors", "mse_loss"]),
])
def test_real_torch_names(real_index_26, name, op, calls):
    found = real_index_26.lookup(name)
    assert str(found.operator.name) == op
    got = [c.operator for c in found.python.calls]
    assert [c for c in got if c in calls] == calls, got
    assert found.python.loc.file in ("torch/nn/functional.py", "torch/functional.py", "torch/_tensor.py")


@pytest.mark.realtree
@pytest.mark.parametrize("name, op, alias", [
    ("F.linear", "linear", "torch._C._nn.linear"), ("torch.linalg.svd", "linalg_svd", "torch._C._linalg.linalg_svd"),
    ("F.gelu", "gelu", "torch._C._nn.gelu"), ("torch.special.erf", "special_erf", "torch._C._special.special_erf")])
def test_real_aliases(real_index_26, name, op, alias):
    found = real_index_26.lookup(name)
    assert (str(found.operator.name), found.python.alias) == (op, alias)
