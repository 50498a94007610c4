"""Which overload of ``aten::add`` ran, from the input types a profiler recorded. No torch.

Note [Overloads from recorded input types]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A profiler op event is named by the schema's name only (``aten::add``: RecordFunction takes
``schema.name()``), but with ``record_shapes`` it also lists one type per input of the boxed call,
defaults filled in: a tensor as its dtype (``float``, ``c10::Half``), a number as ``Scalar``, an
int list as ``ScalarList``, a tensor list as ``TensorList``, ``None`` and anything else (strings,
devices, generators) as ``""``. (The live profiler's event tree leaves int lists out: those are
``"?"``, which fits any argument but a tensor.) The overload is the one whose arguments, all of them and in order,
accept those kinds: ``(float, float, Scalar)`` fits ``add.Tensor(Tensor self, Tensor other, *,
Scalar alpha=1)`` and not ``add.Scalar(Tensor self, Scalar other, Scalar alpha=1)``; the number of
inputs tells ``add.out`` (one more tensor) apart. A Python number passed where a Tensor is expected
was wrapped into a 0-dim tensor before the call (``torch.add(x, 2.0)`` runs ``add.Tensor``), so the
recorded type is a dtype then, and the match stays right. Where several overloads fit, the first
in schema order wins, and where none does (a trace from another torch), the bare name stays.
"""
from __future__ import annotations

import re

TENSOR, SCALAR, SCALARS, TENSORS, OTHER, UNKNOWN = "T", "S", "SL", "TL", "N", "?"
_NON_TENSOR = {"Scalar": SCALAR, "ScalarList": SCALARS, "TensorList": TENSORS, "GenericList": OTHER, "": OTHER,
               "?": UNKNOWN}
_SCALARISH = ("Scalar", "int", "float", "bool", "SymInt", "SymFloat", "ScalarType", "Layout", "MemoryFormat",
              "complex", "SymBool")
_ARGS = re.compile(r"^[^(]*\((.*)\)\s*->")


def kind_of(recorded: object) -> str:
    """One recorded input type (a chrome trace's ``Input type`` entry) -> T, S, SL, TL or N."""
    if not isinstance(recorded, str):
        return OTHER
    return _NON_TENSOR.get(recorded, TENSOR)


def arg_types(schema: str) -> list[str] | None:
    """The argument types of a schema string (``add.Tensor(Tensor self, ...) -> Tensor``), in order,
    ``*`` left out; None when it does not parse."""
    m = _ARGS.match(schema)
    if m is None:
        return None
    out, depth, cur = [], 0, ""
    for ch in m.group(1):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    types = []
    for a in out:
        a = a.strip()
        if a == "*" or not a:
            continue
        types.append(a.split("=", 1)[0].rsplit(" ", 1)[0].strip() if " " in a else a)
    return types


def accepts(arg_type: str, kind: str) -> bool:
    """Whether an argument of schema type ``arg_type`` can have been recorded as ``kind``."""
    t = re.sub(r"\([^)]*\)", "", arg_type)  # Tensor(a!) -> Tensor
    if kind == UNKNOWN:  # recorded as unknown (not a tensor): any non-tensor argument
        return not (t.rstrip("?") == "Tensor")
    optional = t.endswith("?")
    t = t.rstrip("?")
    if kind == OTHER:
        return optional or not (t.startswith("Tensor") or t in _SCALARISH or "[" in t)
    if t.endswith("]"):
        inner = t.split("[", 1)[0].rstrip("?")
        if kind == TENSORS:
            return inner == "Tensor"
        if kind == SCALARS:
            return inner in _SCALARISH
        return False
    if kind == TENSOR:
        return t == "Tensor"
    if kind == SCALAR:
        return t in _SCALARISH
    return False


def pick(candidates: list[tuple[str, str]], recorded: list | tuple) -> str | None:
    """``candidates``: (overload name, schema string) in schema order; ``recorded``: the input types
    as recorded. The first overload that accepts them all; see Note [Overloads from recorded input types]."""
    kinds = [kind_of(r) for r in recorded]
    for name, schema in candidates:
        types = arg_types(schema)
        if types is None or len(types) != len(kinds):
            continue
        if all(accepts(t, k) for t, k in zip(types, kinds)):
            return name
    return None
