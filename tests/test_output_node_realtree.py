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
    # conv2d returns `is_batched ? std::move(output) : output.squeeze(0)`: the moved local is followed
    # to its assignment, at::convolution (the batched input, the default call), not squeeze
    ("F.conv2d(x, w)", "ConvolutionBackward0"), ("F.conv_transpose2d(x, w)", "ConvolutionBackward0"),
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


@pytest.mark.parametrize("example,node", [
    # Note [A branch the ranks pick]: _matmul_impl's `dim_tensor1 == 2 && dim_tensor2 == 2`, decided by
    # the ranks of the shapes the example gives (through `result = _matmul_impl(unused, tensor1, tensor2);
    # return result;`, and the not-out side of `has_out ? at::mm_out(...) : tensor1.mm(tensor2)`)
    ("torch.matmul(torch.randn(3, 4), torch.randn(4, 5))", "MmBackward0"),
    ("torch.matmul(torch.randn(3), torch.randn(3))", "DotBackward0"),
    ("torch.matmul(torch.randn(3, 4), torch.randn(4))", "MvBackward0"),
    # Note [The overload a C++ call's arguments pick]: `tensor1.unsqueeze(0).mm(tensor2).squeeze_(0)` passes
    # one integer, so squeeze_.dim (SqueezeBackward4, as torch records), not the no-argument squeeze_
    ("torch.matmul(torch.randn(4), torch.randn(4, 5))", "SqueezeBackward4"),
    ("torch.mm(a, b)", "MmBackward0"),
    # linear's `input_dim == 2 && bias->defined()` (a local set from input.dim()): a 2-D input's addmm
    ("F.linear(torch.randn(3, 4), torch.randn(5, 4), torch.randn(5))", "AddmmBackward0"),
])
def test_ranks_the_example_gives_decide_the_node(real_index_26, example, node):
    got = real_index_26.output_answer(parse_example(example), "CPU")
    assert got.decided and not got.ranked and got.nodes == (node,)


def test_shape_option_decides_like_the_example(real_index_26):
    from atenmap.resolve.callfacts import facts_from_options

    facts = facts_from_options(shape="3x4,4x5", example="torch.matmul(a, b)")
    assert real_index_26.output_answer(facts, "CPU").nodes == ("MmBackward0",)
    facts = facts_from_options(shape="3,3", example="torch.matmul(a, b)")
    assert real_index_26.output_answer(facts, "CPU").nodes == ("DotBackward0",)


@pytest.mark.parametrize("example,first,also", [
    # the ranks are not given: not decided, every node a return gives kept, the default call's
    # (2-D tensors) first, then the decomposition's other nodes (none dropped)
    ("torch.matmul(a, b)", "MmBackward0", {"DotBackward0", "MvBackward0", "UnsafeViewBackward0", "BmmBackward0"}),
    ("F.linear(x, w, b)", "AddmmBackward0", {"AddBackward0", "MmBackward0", "UnsafeViewBackward0"}),
])
def test_ranks_not_given_rank_the_candidates(real_index_26, example, first, also):
    ix = real_index_26
    facts = parse_example(example)
    got = ix.output_answer(facts, "CPU")
    assert not got.decided and got.ranked
    assert got.nodes[0] == first
    assert also <= set(got.nodes)
    assert set(ix.backward(ix.lookup_call(facts, "CPU").operator, keys=["CPU"], expand=False).nodes()) <= set(got.nodes)
    assert len(got.nodes) == len(set(got.nodes))


def test_an_optional_tensor_left_out_is_none(real_index_26):
    # Note [Optional tensors a call leaves out]: F.linear(x, w) passes no bias, so linear's bias_opt and
    # the local `bias` made from it are None (bias->defined() false) and it returns at::matmul(input,
    # weight.t()), asked with the shapes that call passes: 3x4 @ 4x5 is mm, as torch records
    from atenmap.resolve.callfacts import facts_from_options

    got = real_index_26.output_answer(facts_from_options(shape="3x4,5x4", example="F.linear(x, w)"), "CPU")
    assert got.decided and got.nodes == ("MmBackward0",)
    # a 3-D input reaches matmul's fold (Note [A helper a condition calls]: should_fold of 3-D @ 2-D is
    # true), whose mm is reshaped by _unsafe_view, as torch records
    got = real_index_26.output_answer(facts_from_options(shape="2x3x4,5x4", example="F.linear(x, w)"), "CPU")
    assert got.decided and got.nodes == ("UnsafeViewBackward0",)
    # with the bias given, nothing is left out: a 2-D input is addmm
    got = real_index_26.output_answer(facts_from_options(shape="3x4,5x4,5", example="F.linear(x, w, b)"), "CPU")
    assert got.decided and got.nodes == ("AddmmBackward0",)


@pytest.mark.parametrize("example,node", [
    # Note [A helper a condition calls]: `else if (should_fold(tensor1, tensor2, has_out))` is read by
    # binding the ranks into should_fold (3-D @ 2-D: true), then `t2_is_matrix = t2->dim() == 2` of the
    # MaybeOwned the ranks chose: the mm's _unsafe_view
    ("torch.matmul(torch.randn(2, 3, 4), torch.randn(4, 5))", "UnsafeViewBackward0"),
    # 2-D @ 3-D folds transposed (`transpose ? output.mT().contiguous() : output`): contiguous's clone
    ("torch.matmul(torch.randn(3, 4), torch.randn(2, 4, 5))", "CloneBackward0"),
    # 3-D @ 3-D: should_fold is false (dim_t2 == 3); batches 2 and 2 are equal (`batch_tensor1[0] !=
    # batch_tensor2[0]`, the leading sizes): bmm's _unsafe_view
    ("torch.matmul(torch.randn(2, 3, 4), torch.randn(2, 4, 5))", "UnsafeViewBackward0"),
    # batches 1 and 2: `return _matmul_impl(out, tensor1.squeeze(0), tensor2);`, read again with 3x4 @
    # 2x4x5, the 2-D @ 3-D fold: CloneBackward0, as torch records
    ("torch.matmul(torch.randn(1, 3, 4), torch.randn(2, 4, 5))", "CloneBackward0"),
])
def test_a_helper_a_condition_calls_is_read_with_the_ranks(real_index_26, example, node):
    got = real_index_26.output_answer(parse_example(example), "CPU")
    assert got.decided and got.nodes == (node,)


def test_a_size_the_call_does_not_give_stays_undecided(real_index_26):
    # the default call (no shapes): matrices, so not decided, ranked, nothing dropped
    got = real_index_26.output_answer(parse_example("torch.matmul(a, b)"), "CPU")
    assert not got.decided and got.ranked and "UnsafeViewBackward0" in got.nodes


@pytest.mark.parametrize("example,key,node", [
    # Note [The node of a composite's output]: the op producing what the composite kernel returns.
    # dropout: CPU takes _dropout_impl's multiply(input, noise) (input.mul), CUDA at::native_dropout
    # (is_fused_kernel_acceptable: is_cuda() and p, numel not ruled out)
    ("F.dropout(x, 0.5, training=True)", "CPU", "MulBackward0"),
    ("F.dropout(x, 0.5, training=True)", "CUDA", "NativeDropoutBackward0"),
    # Note [Template arguments a helper is called with]: _alpha_dropout calls _dropout_impl<false, true,
    # inplace>, so `if (!alpha_dropout)` is false there and the return is multiply(...).add_(b); the
    # `p == 1` return is one value's (Note [One value's return])
    ("F.alpha_dropout(x, 0.5, training=True)", "CPU", "AddBackward0"),
    ("F.feature_alpha_dropout(x, 0.5, training=True)", "CPU", "AddBackward0"),
    ("F.dropout2d(x, 0.5, training=True)", "CPU", "MulBackward0"),
    ("F.dropout(x, 0.5, True, True)", "CPU", "MulBackward0"),  # dropout_: input.mul_(noise)
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
    code, out, _err = cli_run(capsys, "chain", "matmul", "--example", "torch.matmul(a, b)", "--key", "CPU",
                              "--no-expand", "--backward", "--source", tree, "--no-pager")
    assert code == 0, _err
    line = next(x for x in out.splitlines() if x.startswith("output of the example on CPU: "))
    assert "not decided by the given arguments" in line and "2-D tensors: MmBackward0, " in line
    code, out, _err = cli_run(capsys, "chain", "matmul", "--example", "torch.matmul(torch.randn(3, 4), torch.randn(4, 5))",
                              "--key", "CPU", "--no-expand", "--backward", "--json", "--source", tree)
    assert code == 0, _err
    got = json.loads(out)["backward"]
    assert got["output_nodes"]["CPU"] == ["MmBackward0"] and got["output_nodes_decided"] == {"CPU": True}


def test_a_python_function_asked_by_name_is_its_default_call(real_index_26):
    # Note [The path a call's arguments take]: torch.norm(input) with p="fro", dim=None on a dense
    # tensor returns torch.linalg.vector_norm, on CPU and CUDA alike (has_torch_function_unary is
    # false for a plain tensor), so `atenmap torch.norm` shows linalg_vector_norm's chain, not _VF.norm's
    ix = real_index_26
    assert str(ix.lookup("torch.norm").operator.name) == "linalg_vector_norm"
    # Tensor.norm returns torch.norm(self, p, dim, keepdim, dtype=dtype) with the same defaults: followed
    assert str(ix.lookup("Tensor.norm").operator.name) == "linalg_vector_norm"
    assert ix.output_node(parse_example("x.norm()"), "CPU") == ("LinalgVectorNormBackward0",)
    text, facts = ix.default_call(ix.lookup("F.dropout"))
    assert text == "torch.nn.functional.dropout(input)"  # training=True, its default
    assert ix.output_node(facts, "CPU") == ("MulBackward0",)
    assert ix.output_node(facts, "CUDA") == ("NativeDropoutBackward0",)
    assert ix.default_call(ix.lookup("mm")) is None  # an operator: no Python default call


def test_a_composite_returned_is_followed_into(real_index_26):
    # cross_entropy_loss returns `at::nll_loss_nd_symint(at::log_softmax(...), ...)` (the op is
    # nll_loss_nd, spelled with its SymInt suffix): the outer call's node is nll_loss_nd's, whose own
    # return the input's rank picks (`Tensor input_ = self; if (input_.dim() == 1 || input_.dim() == 2)`):
    # not decided, the default call's (2-D) NllLossBackward0 first, never log_softmax's node first
    got = real_index_26.output_answer(parse_example("F.cross_entropy(x, t)"), "CPU")
    assert not got.decided and got.ranked
    assert got.nodes[0] == "NllLossBackward0"
    # batch_norm's returned _batch_norm_impl_index picks cuDNN/MIOpen/native by flags its arguments
    # set: read without them, it decides nothing, and the candidates stay
    got = real_index_26.output_answer(parse_example("F.batch_norm(x, m, v)"), "CPU")
    assert not got.decided and "NativeBatchNormBackward0" in got.nodes


def test_cli_an_example_that_takes_another_path_shows_that_operator(real_index_26, capsys, monkeypatch, shared_cache):
    # `atenmap chain norm --example 'torch.norm(x)' --backward`: torch.norm returns linalg_vector_norm for
    # that call, so its chain and node follow, with a line saying so; `chain F.dropout --backward` (no
    # example) gives the default call's output node
    from .conftest import cli_run

    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    tree = str(real_index_26.source.root)
    code, out, err = cli_run(capsys, "chain", "norm", "--example", "torch.norm(x)", "--backward",
                             "--source", tree, "--no-pager")
    assert code == 0, err
    assert "returns linalg_vector_norm, not norm" in err
    assert "\nlinalg_vector_norm: " in out and "output of the example on CPU: LinalgVectorNormBackward0" in out
    assert "autograd node NormBackward0]" not in out and "autograd node LinalgVectorNormBackward0]" in out
    code, out, err = cli_run(capsys, "chain", "F.dropout", "--backward", "--key", "CPU", "--source", tree, "--no-pager")
    assert code == 0, err
    assert "output of torch.nn.functional.dropout(input) on CPU: MulBackward0" in out
