"""--dtype, --shape and --example read into CallFacts (resolve/callfacts.py, Note [One call's facts])."""
from __future__ import annotations

import pytest

from atenmap.errors import UsageError
from atenmap.resolve.callfacts import CallFacts, parse_dtype, parse_example, parse_shapes, torch_dtype


@pytest.mark.parametrize("text,scalar", [("float32", "Float"), ("torch.float", "Float"), ("half", "Half"),
                                         ("bfloat16", "BFloat16"), ("int64", "Long"), ("complex64", "ComplexFloat")])
def test_dtype_names(text, scalar):
    assert parse_dtype(text) == scalar


def test_dtype_canonical_name():
    assert torch_dtype("Float") == "float32" and torch_dtype("Half") == "float16" and torch_dtype("Long") == "int64"


def test_bad_dtype_names_the_choices():
    with pytest.raises(UsageError) as e:
        parse_dtype("complex7")
    assert "complex7" in str(e.value) and "float32" in str(e.value) and "\n" not in str(e.value)
    assert e.value.exit_code == 2


def test_shapes():
    assert parse_shapes("64x64,64x64") == ((64, 64), (64, 64))
    assert parse_shapes("(),0x3") == ((), (0, 3))


@pytest.mark.parametrize("bad", ["3xx", "x3", "-1x2", "axb", "1" * 20])
def test_bad_shapes(bad):
    with pytest.raises(UsageError) as e:
        parse_shapes(bad)
    assert "--shape" in str(e.value) and e.value.exit_code == 2


def test_example_mm():
    f = parse_example("torch.mm(torch.randn(64, 64), torch.randn(64, 64))")
    assert f == CallFacts(shapes=((64, 64), (64, 64)), call="torch.mm", operator="mm", positional=2)
    assert f.used() == ("call torch.mm", "shapes 64x64, 64x64")


def test_example_dtype_out_and_alias():
    f = parse_example("torch.add(x, x, out=y, dtype=torch.float16)")
    assert (f.operator, f.dtype, f.aliases, f.shapes) == ("add.out", "Half", ((0, 1),), None)


def test_example_method_call_and_factories():
    f = parse_example("torch.randn(3, 4, dtype=torch.bfloat16).abs()")
    assert (f.call, f.operator, f.dtype, f.shapes) == ("Tensor.abs", "abs", "BFloat16", ((3, 4),))
    f = parse_example("F.cross_entropy(torch.randn(8, 10), torch.randint(0, 10, (8,)))")
    assert (f.operator, f.shapes) == ("cross_entropy", ((8, 10), (8,)))
    assert parse_example("torch.sum(torch.tensor([[1, 2], [3, 4]]))").shapes == ((2, 2),)


@pytest.mark.parametrize("bad,words", [
    ("__import__('os').system('x')", "dunder"),
    ("torch.randn(3).__class__", "dunder"),
    ("os.path.join('a')", "attribute chains"),
    ("torch.mm(", "not one valid Python expression"),
    ("import os", "not one valid Python expression"),
    ("1 + 2", "names no torch call"),
    ("[x for x in y]", "refused"),
    ("torch.mm(a, b)" + " " * 10_001, "over 10000 bytes"),
])
def test_refused_examples(bad, words):
    with pytest.raises(UsageError) as e:
        parse_example(bad)
    assert words in str(e.value) and "\n" not in str(e.value) and e.value.exit_code == 2


def test_example_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(UsageError):
        parse_example(f"open({str(marker)!r}, 'w')")
    parse_example(f"torch.save(torch.randn(1), {str(marker)!r})")  # a torch call: read, not run
    assert not marker.exists()


def test_aliased_arguments_bound_by_schema_name():
    from atenmap.resolve.decide import condition
    from atenmap.resolve.runs import aliased

    bound = aliased("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", parse_example("torch.add(x, x)"))
    assert bound["self"] == bound["other"]
    assert condition("(&self != &other)", CallFacts(), {}, bound) is False
    assert condition("(self.is_same(other))", CallFacts(), {}, bound) is True
    assert aliased("add.Tensor(Tensor self, Tensor other) -> Tensor", parse_example("torch.add(x, y)")) == {}


@pytest.mark.parametrize("cond, key, converts, want", [
    ("dst_device.is_cuda() && src_device.is_cuda()", "CUDA", False, True),
    ("dst_device.is_cpu() || src_device.is_cpu()", "CUDA", False, False),
    ("self.is_cuda()", "CPU", False, False),
    ("iter.dtype(0) == iter.dtype(1)", "CUDA", False, True),
    ("iter.dtype(0) == iter.dtype(1)", "CUDA", True, False),
    ("self.scalar_type() != result.scalar_type()", "CUDA", True, True),
    ("!needs_dynamic_casting<func_t>::check(iter)", "CUDA", False, True),
    ("!needs_dynamic_casting<func_t>::check(iter)", "CUDA", True, False),
    ("self._is_zerotensor()", "CUDA", False, False),
    ("self.numel() == self.size(dim)", "CUDA", False, False),
    ("dim == ndim - 1", "CUDA", False, None),  # what the default call does not say stays undecided
    ("self.dim() == 0 || other.dim() == 0", "CUDA", False, False),  # inner's scalar case: no fresh tensor is 0-dim
    ("self.dim() > 0", "CUDA", False, True),
    ("self.dim() == 2", "CUDA", False, None),
    ("self.dim() == 1", "CUDA", False, None),  # a vector is diag's common input: left open
    ("grad.size(0) == 1", "CUDA", False, False),  # more than one element in each dimension
])
def test_the_default_call_on_its_key_s_device(cond, key, converts, want):
    # Note [Deciding a branch]: the default call's tensors are fresh, on the key's device, of one
    # dtype unless the operator converts (a required ScalarType parameter)
    from atenmap.resolve.decide import condition
    from atenmap.resolve.runs import default_call

    assert condition(cond, default_call(key, converts)) is want


def test_only_the_default_call_assumes_devices_and_dtypes():
    from atenmap.resolve.decide import condition

    user = CallFacts(dtype="Float")  # a user's --dtype says nothing of devices or of another tensor's dtype
    for cond in ("src.is_cuda()", "iter.dtype(0) == iter.dtype(1)", "self.numel() == self.size(dim)", "self.dim() == 0"):
        assert condition(cond, user) is None


def test_a_parameter_is_declared_not_merely_named():
    # Note [A parameter named like a stub] (resolve/chain.py)
    from atenmap.resolve.passed import declares_parameter

    assert declares_parameter("void scatter_impl(const Tensor& self,\n FillStub& fill_stub, bool b = true)", "fill_stub")
    assert declares_parameter("void f(Stub stub)", "stub")
    assert not declares_parameter("CREATE_UNARY_TORCH_IMPL_FUNC(sqrt_out, sqrt_stub)", "sqrt_stub")
    assert not declares_parameter("void f(int x) {", "fill_stub")


def test_a_flag_set_from_one_call_compares_as_the_call():
    # decide.py: ``const auto dim_tensor1 = tensor1.dim();`` then ``dim_tensor1 == 0`` is ``tensor1.dim() == 0``
    from atenmap.resolve.decide import condition
    from atenmap.resolve.runs import DEFAULT_FACTS

    flags = {"dim_tensor1": "tensor1.dim()", "n": "a + b"}
    assert condition("dim_tensor1 == 0", DEFAULT_FACTS, flags) is False
    assert condition("dim_tensor1 == 2", DEFAULT_FACTS, flags) is None
    assert condition("n == 1", DEFAULT_FACTS, flags) is None  # not one call: not read


def test_reduction_enumerators_against_a_bound_reduction():
    # decide.py: at::Reduction's None/Mean/Sum are 0/1/2; runs.schema_defaults binds `int reduction=Mean` to 1
    from atenmap.resolve.decide import condition
    from atenmap.resolve.runs import DEFAULT_FACTS, schema_defaults

    assert schema_defaults("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
                           "SymInt ignore_index=-100) -> Tensor")["reduction"] == "1"
    bound = {"reduction": "1"}
    assert condition("reduction == Reduction::None && n_dims == 2", DEFAULT_FACTS, {}, bound) is False
    assert condition("reduction == at::Reduction::Mean", DEFAULT_FACTS, {}, bound) is True


def test_an_optional_passed_nullopt_has_no_value():
    # _flash_attention_forward is called with std::nullopt for cumulative_sequence_length_q/_k
    # (attention.cu): its `if (cumulative_sequence_length_q.has_value())` varlen path is not taken
    from atenmap.resolve.decide import condition

    for none in ("std::nullopt", "c10::nullopt", "None"):
        assert condition("cum_q.has_value()", CallFacts(), {}, {"cum_q": none}) is False
        assert condition("!cum_q.has_value()", CallFacts(), {}, {"cum_q": none}) is True
    assert condition("cum_q.has_value()", CallFacts(), {}, {"cum_q": "cu_seqlens"}) is None


def test_example_strings_passed_by_keyword():
    facts = parse_example('torch.nn.functional.pad(torch.randn(2, 3, 4), (1, 1), mode="reflect", value=None)')
    assert facts.strings == (("mode", "reflect"),)
    assert "mode='reflect'" in facts.used()
    assert parse_example("torch.mm(torch.randn(2, 2), torch.randn(2, 2))").strings == ()
