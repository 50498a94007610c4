"""Which definition named like an operator's kernel the dispatcher's wrapper can call.

Note [Native overload selection]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
torchgen's wrapper (``wrapper_CUDA__max`` in RegisterCUDA.cpp) calls ``at::native::max(self)``,
declared in the generated NativeFunctions headers with the C++ signature torchgen derives from the
schema: one parameter per schema argument, keyword-only and ``out`` ones included, no defaults
(``max(Tensor self)`` -> ``max(const Tensor&)``, ``max.unary_out(Tensor self, *, Tensor(a!) out)``
-> two). Many other functions share the name: ``namespace { __device__ int max(int, int) }`` in
cuda/AveragePool2d.cu, a ``__device__`` template in cuda/UpSample.cuh, ``max(self, other)`` for
``max.other``. A definition the wrapper can call therefore

- has external linkage: not in an anonymous namespace, not ``static``;
- runs on the host: not ``__global__``, not ``__device__`` without ``__host__``;
- takes exactly as many parameters as the schema has arguments (a variadic one takes at least
  that many), when the parameter count is known (Note [Function signatures] in extract/definitions.py);
- among several such overloads, has the parameter kinds of torchgen's signature of the schema
  (Note [Parameter kinds] in extract/definitions.py: ``const Tensor& repeats`` is not
  ``SymInt repeats``), where the kinds are known.

Operators whose kernels torchgen's ufunc codegen or a macro writes have no such hand-written
definition; those are found elsewhere (Note [Generated steps]).
"""
from __future__ import annotations

import re

from atenmap.kinds import FactKind
from atenmap.model import Operator
from atenmap.names import ANONYMOUS
from atenmap.store import FactRow

_PARAMS = re.compile(r"\bparams=(\d+)(\+?)")


def schema_args(schema: str) -> list[str]:
    """The text of each argument of ``schema`` (``*`` is not one), split where no ``()``/``[]`` is open."""
    head = schema[:schema.rindex(") ->")] if ") ->" in schema else schema.rstrip(")")
    inner = head[head.index("(") + 1:] if "(" in head else ""
    out, depth, cur = [], 0, ""
    for ch in inner + ",":
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            if cur.strip() and cur.strip() != "*":
                out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    return out


def schema_arity(op: Operator) -> int:
    """Number of C++ parameters of ``op``'s native function: its schema's arguments (``*`` is not one)."""
    return len(schema_args(op.schema))


def host_linkable(fn: FactRow) -> bool:
    """Whether code in another translation unit's host code can call ``fn``. See Note [Native overload selection]."""
    if fn.kind == FactKind.IMPL_FUNC:
        return True
    if fn.kind == FactKind.GLOBAL or ANONYMOUS in fn.namespace.split("::"):
        return False
    words = fn.arg.split()
    if "static" in words:
        return False
    return not ("__device__" in words and "__host__" not in words)


def fits_arity(fn: FactRow, arity: int) -> bool:
    """Whether ``fn`` takes ``arity`` arguments; true when its parameter count is unknown."""
    m = _PARAMS.search(fn.arg) if fn.kind != FactKind.IMPL_FUNC else None
    if m is None:
        return True
    n = int(m.group(1))
    return n <= arity if m.group(2) else n == arity


def callable_natives(rows: list[FactRow], op: Operator | None) -> list[FactRow]:
    """The rows the wrapper of ``op`` can call (``op`` None: any arity). See Note [Native overload selection]."""
    arity = schema_arity(op) if op is not None else None
    rows = [r for r in rows if host_linkable(r) and (arity is None or fits_arity(r, arity))]
    if op is None or len(rows) < 2:
        return rows
    want = schema_kinds(op.schema)
    fitting = [r for r in rows if _kinds_fit(r, want)]
    return fitting or rows


_TYPES = re.compile(r"\btypes=(\S+)")


def _kinds_fit(fn: FactRow, want: str) -> bool:
    """Whether no parameter of ``fn`` has a kind that differs from the schema's there (Note
    [Parameter kinds] in extract/definitions.py); true when a kind is unknown."""
    m = _TYPES.search(fn.arg) if fn.kind != FactKind.IMPL_FUNC else None
    if m is None:
        return True
    return all(a == "?" or b == "?" or a == b for a, b in zip(m.group(1), want))


def schema_kinds(schema: str) -> str:
    """The parameter kinds torchgen's C++ signature of ``schema`` has (Note [Parameter kinds]):
    ``repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None)``
    -> ``TIOO``."""
    return "".join(_schema_kind(arg.split("=", 1)[0].rsplit(" ", 1)[0]) for arg in schema_args(schema))


def _schema_kind(t: str) -> str:
    t = re.sub(r"\([^)]*\)", "", t).strip()  # alias annotations: Tensor(a!)
    if t.endswith("?"):
        return "O"  # int[1]? too: OptionalIntArrayRef
    if "[" in t:
        return "L"
    return {"Tensor": "T", "Scalar": "S", "int": "I", "SymInt": "I", "float": "F", "bool": "B",
            "ScalarType": "E", "Layout": "E", "Device": "E", "MemoryFormat": "E"}.get(t, "?")


__all__ = ["callable_natives", "fits_arity", "host_linkable", "schema_args", "schema_arity", "schema_kinds"]
