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

import dataclasses
from typing import Callable

from atenmap.errors import AmbiguousOperator, UnknownOperator
from atenmap.extract.pyfuncs import PyFunction
from atenmap.model import Location, OperatorLookup, PythonCall
from atenmap.model_answers import PythonFunction
from atenmap.resolve.opcalls import ACCESSORS

MAX_DEPTH = 3


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


__all__ = ["PythonLayer"]
