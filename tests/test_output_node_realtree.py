"""The autograd node a Python call's output gets (issue 38: ``Index.output_node``) for common calls
on the real 2.6.0 tree, from the call's text (``--example``), on CPU: the overload its arguments
parse (Note [The signature a call parses]) and the path a Python function takes with them (Note
[The path a call's arguments take])."""
from __future__ import annotations

import pytest

from atenmap.resolve.callfacts import parse_example

pytestmark = pytest.mark.realtree

ONE_NODE = [
    ("torch.mm(a, b)", "MmBackward0"), ("torch.add(x, y)", "AddBackward0"), ("torch.mul(x, y)", "MulBackward0"),
    ("torch.relu(x)", "ReluBackward0"), ("F.relu(x)", "ReluBackward0"), ("torch.sigmoid(x)", "SigmoidBackward0"),
    ("torch.tanh(x)", "TanhBackward0"), ("torch.exp(x)", "ExpBackward0"), ("torch.sum(x)", "SumBackward0"),
    ("torch.mean(x)", "MeanBackward0"), ("torch.softmax(x, 1)", "SoftmaxBackward0"),
    ("torch.cat([a, b])", "CatBackward0"), ("x.t()", "TBackward0"), ("torch.sub(x, y)", "SubBackward0"),
    ("torch.div(x, y)", "DivBackward0"), ("torch.pow(x, 2)", "PowBackward0"), ("torch.log(x)", "LogBackward0"),
    ("F.gelu(x)", "GeluBackward0"), ("x.transpose(0, 1)", "TransposeBackward0"),
    # the three-argument where parses where.self, never the one-argument where(condition) (a tuple via nonzero)
    ("torch.where(c, x, y)", "WhereBackward0"),
    # torch.norm's defaults (p="fro", dim=None) on a dense CPU tensor: torch.linalg.vector_norm
    ("torch.norm(x)", "LinalgVectorNormBackward0"),
]


@pytest.mark.parametrize("example,node", ONE_NODE)
def test_common_calls_name_their_output_node(real_index_26, example, node):
    assert real_index_26.output_node(parse_example(example), "CPU") == (node,)


def test_overload_by_arguments(real_index_26):
    ix = real_index_26
    assert str(ix.lookup_call(parse_example("torch.where(c, x, y)")).operator.name) == "where.self"
    assert str(ix.lookup_call(parse_example("torch.where(c)")).operator.name) == "where"
    assert str(ix.lookup_call(parse_example("torch.where(c, x, 0)")).operator.name) == "where.ScalarOther"
    assert str(ix.lookup_call(parse_example("torch.sum(x, dim=1)")).operator.name) == "sum.dim_IntList"
    assert str(ix.lookup_call(parse_example("torch.max(x, 1)")).operator.name) == "max.dim"
    assert str(ix.lookup_call(parse_example("torch.norm(x)"), "CPU").operator.name) == "linalg_vector_norm"
    assert str(ix.lookup_call(parse_example("F.dropout(x, 0.5, True, True)")).operator.name) == "dropout_"


def test_matmul_lists_the_node_among_its_candidates(real_index_26):
    # which op runs, the inputs' ranks decide (dim_tensor1 == 2...): not read from the call's text yet
    assert "MmBackward0" in real_index_26.output_node(parse_example("torch.matmul(a, b)"), "CPU")


@pytest.mark.parametrize("example,key,node", [
    # Note [The node of a composite's output]: the op producing what the composite kernel returns.
    # dropout: CPU takes _dropout_impl's multiply(input, noise) (input.mul), CUDA at::native_dropout
    # (is_fused_kernel_acceptable: is_cuda() and p, numel not ruled out)
    ("F.dropout(x, 0.5, training=True)", "CPU", "MulBackward0"),
    ("F.dropout(x, 0.5, training=True)", "CUDA", "NativeDropoutBackward0"),
    ("F.dropout(x, 0.5, True, True)", "CPU", "MulBackward0"),  # dropout_: input.mul_(noise)
    ("F.linear(x, w, b)", "CPU", "AddmmBackward0"),  # the first return not ruled out: a 2-D input's addmm
])
def test_composite_output_is_the_returned_op(real_index_26, example, key, node):
    assert real_index_26.output_node(parse_example(example), key) == (node,)


def test_cli_backward_of_an_example_says_its_output_node(real_index_26, capsys, monkeypatch, shared_cache):
    # `atenmap chain where --example 'torch.where(c, x, y)' --backward`: the chain of the overload the
    # call parses (where.self, not where(condition)), and the node its output gets, per device key
    import json

    from .conftest import cli_run

    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    tree = str(real_index_26.source.root)
    code, out, _err = cli_run(capsys, "chain", "where", "--example", "torch.where(c, x, y)", "--backward",
                              "--source", tree, "--no-pager")
    assert code == 0, _err
    assert out.startswith("where.self: ")
    assert "output of the example on CPU: WhereBackward0" in out
    code, out, _err = cli_run(capsys, "chain", "dropout", "--example", "torch.nn.functional.dropout(x, 0.5, training=True)",
                              "--backward", "--json", "--source", tree)
    assert code == 0 and json.loads(out)["backward"]["output_nodes"]["CPU"] == ["MulBackward0"]
