"""Note [The signature a call parses] (resolve/names.py) and Note [The path a call's arguments take]
(resolve/pylayer.py) on inline schemas and Python source."""
from __future__ import annotations

from atenmap.extract.pyfuncs import read_module
from atenmap.model import Location, Operator, OperatorName
from atenmap.resolve.callfacts import parse_example
from atenmap.resolve.names import parses
from atenmap.resolve.pylayer import returned_on_path


def _op(schema: str) -> Operator:
    return Operator(OperatorName.parse(schema.split("(", 1)[0]), schema, Location("native_functions.yaml", 1))


def test_a_call_parses_by_its_arguments():
    one = _op("where(Tensor condition) -> Tensor[]")
    three = _op("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")
    scalar = _op("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor")
    out = _op("where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)")
    f = parse_example("torch.where(c, x, y)")
    assert (f.positional, f.keywords, f.numbers) == (3, (), ())
    assert [parses(o, 3, ()) for o in (one, three, scalar, out)] == [False, True, True, False]
    assert parses(one, 1, ()) and not parses(three, 1, ())
    assert not parses(three, 3, (), numbers=(2,)) and parses(scalar, 3, (), numbers=(2,))
    assert parses(out, 3, ("out",)) and parses(three, 1, ("input", "other"))  # self by its Python name
    assert not parses(three, 1, ("bogus",))
    assert parse_example("x.sum(1, keepdim=True)").positional == 2  # the receiver is self
    assert parse_example("torch.pow(x, -2)").numbers == (1,)


SRC = '''
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    if has_torch_function_unary(input):
        return handle_torch_function(norm, (input,), input, p=p)
    if input.layout == torch.strided and input.device.type in ("cpu", "cuda", torch.x._name):
        if isinstance(p, str):
            if p == "fro" and (dim is None or len(dim) <= 2):
                if out is None:
                    return torch.linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
            return torch.linalg.matrix_norm(input, p, dim, keepdim, dtype=dtype)
    if dim is None and out is None and dtype is None and p is not None:
        if isinstance(p, str):
            if p == "fro":
                return _VF.frobenius_norm(input, dim=(), keepdim=keepdim)
        return _VF.norm(input, p, dim=dim, keepdim=keepdim)

def dropout(input, p=0.5, training=True, inplace=False):
    return _VF.dropout_(input, p, training) if inplace else _VF.dropout(input, p, training)
'''


def test_the_path_the_defaults_take():
    fns = read_module(SRC, "torch")
    norm = fns["norm"]
    assert returned_on_path(norm, {"input"}, "cpu").name == "torch.linalg.vector_norm"
    # on MPS the strided path's device test is unknown (the privateuse1 backend's name), but the
    # frobenius_norm return's own tests all hold once has_torch_function is false (an eager call on
    # plain tensors), and the first return whose tests all hold answers ("We don't do this for MPS"
    # in torch/functional.py: the privateuse1 name is not "mps" unless a backend renames it)
    assert returned_on_path(norm, {"input"}, "mps").name == "torch._C._VariableFunctions.frobenius_norm"
    plain = read_module(SRC.replace(", torch.x._name", ""), "torch")["norm"]
    assert returned_on_path(plain, {"input"}, "mps").name == "torch._C._VariableFunctions.frobenius_norm"
    # p given (unknown): no path is certain; the first one no test rules out
    assert returned_on_path(norm, {"input", "p"}, "cpu").name == "torch.linalg.vector_norm"
    drop = fns["dropout"]
    assert returned_on_path(drop, {"input", "p", "training"}, "cpu").name == "torch._C._VariableFunctions.dropout"
    assert returned_on_path(drop, {"input", "p", "training", "inplace"}, "cpu") is not None
