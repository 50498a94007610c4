"""A Python function users type (``F.cross_entropy``, ``F.normalize``, ``torch.norm``,
``Tensor.norm``) -> the operators it reaches: See Note [Python functions above the bindings] in
extract/pyfuncs.py, whose records (one module's functions) this resolves.

Each call of the function's body, in source order, is looked up as a name users type
(``lookup``: api.Index.lookup): ``torch._C._nn.cross_entropy_loss`` is operator
``cross_entropy_loss``; ``Tensor.norm`` the overload a method call reaches; a call of another Python
function (of the same module, or ``torch.norm`` from ``Tensor.norm``) is followed into it, up to
MAX_DEPTH functions deep, and its operators are listed with it in ``via``. Calls that are no
operator (``has_torch_function_variadic``, ``torch.jit.is_scripting``) and Tensor accessors
(``input.dim()``) are left out. Each operator is listed once, at its first call.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Callable

from atenmap.errors import AmbiguousOperator, UnknownOperator
from atenmap.extract.pyfuncs import PyCall, PyFunction
from atenmap.model import Location, OperatorLookup, PythonCall
from atenmap.model_answers import PythonFunction
from atenmap.resolve.opcalls import ACCESSORS

MAX_DEPTH = 3

# Note [The path a call's arguments take]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A Python function above the bindings picks the operator it returns by its arguments: torch.norm
# (torch/functional.py) with its defaults (p="fro", dim=None, out=None) on a dense CPU or CUDA
# tensor returns ``torch.linalg.vector_norm(input, 2, _dim, keepdim, dtype=dtype)``; its
# ``_VF.norm`` and ``_VF.frobenius_norm`` lie on paths those arguments do not take (other layouts
# and devices, or a p that is a number). So the returned call of one call is read from the
# function's ``if`` tests (PyCall.guards), evaluated with the parameters the call leaves at their
# defaults bound to those defaults (the source's literals) and the ones it gives left unknown.
# What a tensor argument's attributes say is known from the dispatch key asked: a dense key (CPU,
# CUDA) is a strided tensor's (``x.layout == torch.strided``) on that device (``x.device.type ==
# "cpu"``). Tests are read with three-valued logic (``and``/``or``/``not``, ``==``/``!=``/``is``/
# ``in``/``<=``..., ``isinstance``, ``len``); anything else is unknown. The returned call is the
# first, in source order, whose tests all hold; failing that, the first none of whose tests fails.
# The call is an eager one on plain tensors: ``has_torch_function*(...)`` (no ``__torch_function__``
# override) and ``torch.jit.is_scripting()``/``is_tracing()`` are false.
#
# With no call given (``atenmap torch.norm``), the function stands for its default call: the
# parameters without a default given, the others at their defaults, on a dense tensor. The operator
# shown is the one that call returns on both CPU and CUDA, every test around it holding
# (``api.Index._default_operator``); where the tests do not decide it, the function's own order answers
# (``api._lead``). A returned call of another Python function is followed into that one's default call
# where the parameters they share have the same defaults there (``Tensor.norm(self, p="fro", dim=None,
# ...)`` returns ``torch.norm(self, p, dim, ...)``: ``x.norm()`` is ``linalg_vector_norm``).
_UNKNOWN = object()
_EAGER_FALSE = frozenset({"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
                          "torch.overrides.has_torch_function", "torch.overrides.has_torch_function_unary",
                          "torch.overrides.has_torch_function_variadic", "torch.jit.is_scripting",
                          "torch.jit.is_tracing", "torch._C._get_tracing_state"})
_STRIDED = "torch.strided"


def returned_on_path(fn: PyFunction, given: set[str], device: str | None, decided: bool = False) -> PyCall | None:
    """The call ``fn`` returns for a call giving parameters ``given`` (the rest at their defaults),
    on a dense tensor of ``device`` (``cpu``, ``cuda``; None: unknown): See Note [The path a call's
    arguments take]. None when no test decides it (or ``fn`` has no tests recorded); with
    ``decided``, also when no returned call has all its tests hold."""
    if not fn.params:
        return None
    bound: dict[str, object] = {}
    for name, default in fn.params:
        if name in given or default is None:
            continue
        try:
            bound[name] = ast.literal_eval(default)
        except (ValueError, SyntaxError):
            continue
    returned = [c for c in fn.calls if c.returned and "." in c.name]
    verdicts = [[_truth(ast.parse(t, mode="eval").body, bound, given, device) for t, _side in c.guards] for c in returned]
    sides = [[v if side else _not(v) for v, (_t, side) in zip(vs, c.guards)] for vs, c in zip(verdicts, returned)]
    if not any(c.guards for c in returned):
        return None  # no test to read: the function's own order answers (api._lead)
    for c, vs in zip(returned, sides):
        if all(v is True for v in vs):
            return c
    if decided:
        return None
    return next((c for c, vs in zip(returned, sides) if False not in vs and vs), None)


def _not(v):
    return _UNKNOWN if v is _UNKNOWN else not v


def _truth(node: ast.expr, bound: dict, given: set[str], device: str | None):
    v = _value(node, bound, given, device)
    return v if v is _UNKNOWN else bool(v)


def _value(node: ast.expr, bound: dict, given: set[str], device: str | None):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return bound.get(node.id, _UNKNOWN)
    if isinstance(node, ast.Attribute):
        dotted = ast.unparse(node)
        root = dotted.split(".", 1)[0]
        if dotted == _STRIDED:
            return _STRIDED
        if root in given and dotted == f"{root}.layout" and device:
            return _STRIDED
        if root in given and dotted == f"{root}.device.type" and device:
            return device
        return _UNKNOWN
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_value(e, bound, given, device) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _not(_truth(node.operand, bound, given, device))
    if isinstance(node, ast.BoolOp):
        out = isinstance(node.op, ast.And)
        for e in node.values:
            v = _truth(e, bound, given, device)
            if v is (not isinstance(node.op, ast.And)):
                return v  # `and` stops at False, `or` at True
            if v is _UNKNOWN:
                out = _UNKNOWN
        return out
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node.ops[0], _value(node.left, bound, given, device),
                        _value(node.comparators[0], bound, given, device))
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _EAGER_FALSE:
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_value(a, bound, given, device) for a in node.args]
        if node.func.id == "len" and len(args) == 1 and isinstance(args[0], tuple | list | str):
            return len(args[0])
        if node.func.id == "isinstance" and len(node.args) == 2 and args[0] is not _UNKNOWN:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {ast.unparse(k) for k in kinds}
            return any(type(args[0]).__name__ == n for n in names)  # a literal: str, int, float, bool, list...
    return _UNKNOWN


def _compare(op: ast.cmpop, a, b):
    if isinstance(op, ast.In | ast.NotIn):
        if a is _UNKNOWN or b is _UNKNOWN or not isinstance(b, tuple | list | str):
            return _UNKNOWN
        hit = a in b if isinstance(b, str) else any(e is not _UNKNOWN and e == a for e in b)
        if not hit and isinstance(b, tuple | list) and any(e is _UNKNOWN for e in b):
            return _UNKNOWN
        return hit if isinstance(op, ast.In) else not hit
    if a is _UNKNOWN or b is _UNKNOWN:
        return _UNKNOWN
    try:
        return {ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b, ast.Is: lambda: a is b,
                ast.IsNot: lambda: a is not b, ast.Lt: lambda: a < b, ast.LtE: lambda: a <= b,
                ast.Gt: lambda: a > b, ast.GtE: lambda: a >= b}[type(op)]()
    except TypeError:  # "fro" < 2: the source would raise; the test decides nothing
        return _UNKNOWN


class PythonLayer:
    def __init__(self, functions: Callable[[str], dict[str, PyFunction]],
                 lookup: Callable[[str], OperatorLookup]):
        self.functions = functions  # surface -> its module's functions (pyfuncs.read_module)
        self.lookup = lookup
        self.depth = 0  # lookups in progress through Python functions (a torch.norm inside Tensor.norm)

    def find(self, surface: str, name: str) -> PyFunction | None:
        return self.functions(surface).get(name)

    def resolve(self, surface: str, fn: PyFunction) -> PythonFunction:
        """``fn`` with the operators its calls reach (an alias: none; its binding answers)."""
        if fn.alias is not None:
            return PythonFunction(fn.qualname, Location(fn.file, fn.line), (), fn.alias)
        calls: dict[str, PythonCall] = {}
        self._calls(surface, fn, (), calls, {fn.qualname})
        return PythonFunction(fn.qualname, Location(fn.file, fn.line), tuple(calls.values()))

    def _calls(self, surface: str, fn: PyFunction, via: tuple[str, ...], out: dict[str, PythonCall],
               seen: set[str], returned: bool = True) -> None:
        for call in fn.calls:
            call = dataclasses.replace(call, returned=call.returned and returned)
            if "." not in call.name:  # another function of the same module
                inner = self.find(surface, call.name)
                if inner is not None and inner.qualname not in seen and len(via) < MAX_DEPTH:
                    seen.add(inner.qualname)
                    self._calls(surface, inner, (*via, inner.qualname), out, seen, call.returned)
                continue
            if call.name.startswith("Tensor.") and call.name[len("Tensor."):] in ACCESSORS:
                continue
            found = self._lookup(call.name)
            if found is None:
                continue
            loc = Location(fn.file, call.line)
            if found.python is not None and found.python.calls:  # torch.norm, a Python function itself
                for c in found.python.calls:
                    out.setdefault(c.operator, PythonCall(call.name, loc, c.operator, (*via, found.python.name, *c.via),
                                                          call.returned and c.returned))
            else:
                op = str(found.operator.name)
                out.setdefault(op, PythonCall(call.name, loc, op, via, call.returned))

    def _lookup(self, name: str) -> OperatorLookup | None:
        if self.depth >= MAX_DEPTH:
            return None
        self.depth += 1
        try:
            return self.lookup(name)
        except (UnknownOperator, AmbiguousOperator):
            return None
        finally:
            self.depth -= 1


__all__ = ["PythonLayer", "returned_on_path"]
