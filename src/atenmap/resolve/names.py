"""The names PyTorch users have -> operators: ``torch.softmax``, ``F.relu``, ``Tensor.add_``,
``torch.ops.aten.add.Tensor``, ``aten::add.out``, and a bare overloaded ``softmax``.

Note [Names users type]
~~~~~~~~~~~~~~~~~~~~~~~
A Python call names an operator *overload packet* (``torch.softmax``), never an overload; the
overload is picked at run time by the binding's ``PythonArgParser``, which tries the signatures in
the order torchgen wrote them. torchgen writes each binding (``THPVariable_softmax`` in
``python_torch_functions_*.cpp``, ``python_variable_methods.cpp``, ``python_nn_functions.cpp`` ...)
as a ``switch`` over those signatures, the ``// aten::softmax.int(...)`` comment above each case's
dispatch lambda (the ``binding`` facts, see Note [Python bindings] in extract/bindings.py). The first case a
plain call reaches is the first binding in that function that is not an ``out=`` overload (an
``out=`` call is the same case with ``out`` given): ``softmax`` -> ``softmax.int``, ``add`` ->
``add.Tensor``. Without generated code (``--no-codegen``, a tree torchgen failed on) the yaml
order is the fallback, out and Dimname overloads last, which torchgen's own sort agrees with for
the common operators.

Spellings:

* ``aten::X[.ov]``, ``X[.ov]``: the operator (bare: as a Python call reaches it).
* ``torch.ops.aten.X``: the packet (like bare X); ``torch.ops.aten.X.default`` is ``X``;
  ``torch.ops.aten.X.ov`` is ``X.ov``.
* ``torch.X``, ``torch.Tensor.X``, ``Tensor.X``: the function / method variant named X.
* ``torch.nn.functional.X``, ``F.X``, ``torch._C._nn.X``: X (``python_module: nn`` ops bind
  there; functional.py's Python wrappers mostly call ``torch.X`` of the same name).
* ``torch.linalg.X``, ``torch.special.X``, ``torch.fft.X``, ``torch.nested.X``, ``torch.sparse.X``:
  ``linalg_X`` ... (their yaml names carry the module prefix).
* ``torch._C._VariableFunctions.X`` (``_VF.X``), ``torch._C._nn.X``: the binding itself.

A Python spelling is first looked for among the tree's own Python functions
(``torch/nn/functional.py``, ``torch/functional.py``, ``torch/_tensor.py``, ...): ``F.normalize``
is a ``def`` there, not a binding. See Note [Python functions above the bindings] in
extract/pyfuncs.py and resolve/pylayer.py; ``python_name`` says which name to look for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from atenmap.model import Operator

# Python module -> the prefix its operators' yaml names carry (``torch.linalg.svd`` -> ``linalg_svd``).
_PREFIXED_MODULES = ("linalg", "special", "fft", "nested", "sparse")
_FUNCTIONAL = ("torch.nn.functional.", "nn.functional.", "F.", "torch._C._nn.")
_BINDINGS = ("torch._C._VariableFunctions.", "torch._C._nn.", "torch._C._linalg.", "torch._C._special.",
             "torch._C._fft.")  # the C++ bindings themselves, no Python above (their names as yaml spells them)
_METHOD = ("torch.Tensor.", "Tensor.")


@dataclass(frozen=True)
class UserName:
    """A user's spelling taken apart: ``name`` (yaml base name), ``overload`` (None: the packet,
    pick as Python does), ``surface``: where the Python call lives (torch, Tensor, nn, a module, or
    ``""`` for ATen spellings)."""

    name: str
    overload: str | None
    surface: str


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_user_name(text: str) -> UserName | None:
    """The parts of ``text``, or None when it is no name spelling we know (``find_operator`` then
    reports it with close matches)."""
    t = text.strip()
    if t.startswith("aten::"):
        return _aten(t[len("aten::"):], "")
    if t.startswith("torch.ops.aten."):
        rest = t[len("torch.ops.aten."):]
        name, _, ov = rest.partition(".")
        if not _IDENT.match(name) or (ov and not _IDENT.match(ov)):
            return None
        return UserName(name, ("" if ov == "default" else ov) if ov else None, "")
    if t.startswith("torch._C._VariableFunctions."):
        return _py(t[len("torch._C._VariableFunctions."):], "torch")
    for module in ("linalg", "special", "fft"):  # _linalg.linalg_svd: the yaml name already
        if t.startswith(f"torch._C._{module}."):
            return _py(t[len(f"torch._C._{module}."):], module)
    for prefix in _METHOD:
        if t.startswith(prefix):
            return _py(t[len(prefix):], "Tensor")
    for prefix in _FUNCTIONAL:
        if t.startswith(prefix):
            return _py(t[len(prefix):], "nn")
    for module in _PREFIXED_MODULES:
        if t.startswith(f"torch.{module}."):
            u = _py(t[len(f"torch.{module}."):], module)
            return UserName(f"{module}_{u.name}", None, module) if u else None
    if t.startswith("torch."):
        return _py(t[len("torch."):], "torch")
    return _aten(t, "")


def python_name(text: str, user: UserName) -> str | None:
    """The name to look for among the Python functions of ``user.surface``'s module (Note [Python
    functions above the bindings] in extract/pyfuncs.py), or None when ``text`` names a binding
    (``torch._C._nn.X``) or an ATen spelling, which no Python stands above."""
    if user.overload is not None or not user.surface or text.strip().startswith(_BINDINGS):
        return None
    return user.name.removeprefix(user.surface + "_") if user.surface in _PREFIXED_MODULES else user.name


def _aten(t: str, surface: str) -> UserName | None:
    name, dot, ov = t.partition(".")
    if not _IDENT.match(name) or (dot and not _IDENT.match(ov)):
        return None
    return UserName(name, ("" if ov == "default" else ov) if dot else None, surface)


def _py(t: str, surface: str) -> UserName | None:
    return UserName(t, None, surface) if _IDENT.match(t) else None


# A binding fact as the resolver needs it: (operator name, binding function, file, line).
Binding = tuple[str, str, str, int]


@dataclass(frozen=True)
class Pick:
    """The overload a bare name resolves to, the others of its packet, and why."""

    operator: Operator
    others: tuple[str, ...]
    reason: str


def pick_overload(user: UserName, overloads: list[Operator],
                  bindings: Callable[[str], Iterable[Binding]]) -> Pick | None:
    """See Note [Names users type]. ``overloads``: the operators of ``user.name`` in yaml order;
    ``bindings(op_name)``: that overload's binding facts. None when there is no overload."""
    if not overloads:
        return None
    if user.surface == "Tensor":
        methods = [o for o in overloads if "method" in o.variants]
        overloads = methods or overloads
    by_name = {str(o.name): o for o in overloads}
    first: tuple[int, str] | None = None  # (line, op) of the first case of the binding
    for kind, funcs in _binding_functions(user):
        for o in overloads:
            if _is_out(o):
                continue
            for op_name, func, file, line in bindings(str(o.name)):
                if func in funcs and _binding_file_kind(file) == kind and (first is None or line < first[0]):
                    first = (line, op_name)
        if first is not None:
            break
    if first is not None and first[1] in by_name:
        chosen, reason = by_name[first[1]], "the first signature of its Python binding"
    else:
        ranked = sorted(overloads, key=lambda o: (_is_out(o), "Dimname" in o.schema, o.loc.line))
        chosen, reason = ranked[0], "the first overload in native_functions.yaml that is not out= or named-dim"
    others = tuple(str(o.name) for o in overloads if o is not chosen)
    return Pick(chosen, others, reason)


# Note [The signature a call parses]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PythonArgParser (torch/csrc/utils/python_arg_parser.cpp, FunctionSignature::parse) tries a
# binding's signatures in order and takes the first that parses the call: more positional
# arguments than the signature has positional parameters fails it; a keyword that names none of
# its parameters fails it; a parameter without a default that is given neither by position nor by
# keyword fails it; a Python number does not parse as a ``Tensor`` (it does as ``Scalar``, ``int``,
# ``float``). So ``torch.where(c, x, y)`` is ``where.self``, never the one-argument ``where(Tensor
# condition)`` that comes first in the binding; ``torch.where(c)`` is that one. A function's
# ``self`` is spelled ``input`` in torch.X's signatures (torchgen renames it), a method's is its
# receiver (counted as the first positional argument here). ``out=`` only parses the out= overload.
def parses(op: Operator, positional: int, keywords: Iterable[str], numbers: Iterable[int] = ()) -> bool:
    """Whether a Python call with ``positional`` arguments, these ``keywords`` and number literals at
    positions ``numbers`` parses ``op``'s signature: See Note [The signature a call parses]."""
    inner = op.schema[op.schema.index("(") + 1: op.schema.rindex(") ->")] if ") ->" in op.schema else ""
    params, kw_only = [], False
    for p in _split_params(inner):
        if p == "*":
            kw_only = True
            continue
        typ, _, rest = p.partition(" ")
        name = rest.split("=", 1)[0].strip()
        params.append((typ, name, "=" in rest or typ.endswith("!") and kw_only, kw_only))
    if positional > sum(1 for *_x, kw in params if not kw):
        return False
    names = {n for _t, n, _d, _k in params} | ({"input"} if any(n == "self" for _t, n, _d, _k in params) else set())
    given = set(keywords)
    if not given <= names or ("out" in given) != _is_out(op):
        return False
    for i, (typ, name, default, _kw) in enumerate(params):
        if i < positional:
            if i in numbers and typ.rstrip("?") == "Tensor":
                return False
        elif not default and name not in given and not (name == "self" and "input" in given) and "!" not in typ:
            return False
    return True


def _split_params(inner: str) -> list[str]:
    """A schema's parameter list split at its top-level commas (``int[2] stride=[1, 1]`` is one)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    if inner[start:].strip():
        out.append(inner[start:].strip())
    return out


def _is_out(op: Operator) -> bool:
    return op.name.overload == "out" or op.name.overload.endswith("_out") or "Tensor(a!) out" in op.schema


def _binding_file_kind(file: str) -> str:
    base = file.rsplit("/", 1)[-1]
    if base.startswith("python_variable_methods"):
        return "Tensor"
    if base.startswith("python_torch_functions"):
        return "torch"
    return base.removeprefix("python_").removesuffix("_functions.cpp")  # nn, linalg, special, fft ...


def _binding_functions(user: UserName) -> list[tuple[str, tuple[str, ...]]]:
    """(binding file kind, binding functions) a call spelled like ``user`` goes through, most
    likely first."""
    fn = (f"THPVariable_{user.name}",)
    if user.surface == "Tensor":
        return [("Tensor", fn)]
    if user.surface in _PREFIXED_MODULES:  # linalg_svd is bound in python_linalg_functions.cpp as svd
        return [(user.surface, (fn[0], f"THPVariable_{user.name.removeprefix(user.surface + '_')}"))]
    if user.surface == "nn":
        return [("nn", fn), ("torch", fn), ("Tensor", fn)]
    return [("torch", fn), ("nn", fn), ("Tensor", fn)]  # torch.X, aten::X, X
