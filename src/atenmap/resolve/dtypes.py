"""The dtypes an ``AT_DISPATCH_*`` macro compiles its lambda for, as torch names them.

Note [Dispatch type groups]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen instantiates a kernel's lambda once per dtype through the macros of
aten/src/ATen/Dispatch.h: ``AT_DISPATCH_<GROUP>(TYPE, NAME, lambda)`` switches over a fixed group
(``FLOATING_TYPES`` = Double, Float; ``ALL_TYPES`` = the integral types and Double, Float; ...),
and ``AT_DISPATCH_<GROUP>_AND<N>(T1, ..., TN, TYPE, NAME, lambda)`` adds N more
(``AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, ...)`` -> double, float, half, bfloat16;
``_AND`` alone is one). Each is ``AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_<GROUP>(...))``,
and the ``AT_DISPATCH_CASE_<GROUP>[_AND<N>](T1, ..., lambda)`` / ``AT_DISPATCH_CASE(T, lambda)``
pieces are used directly too (torchgen's UfuncCUDA_<op>.cu writes one AT_DISPATCH_CASE per dtype
of the yaml's ``ufunc_inner_loop``). Since 2.1, aten/src/ATen/Dispatch_v2.h adds
``AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(lambda), T1, ..., AT_EXPAND(AT_ALL_TYPES), ...)``, whose
type list mixes single types and the group lists AT_INTEGRAL_TYPES, AT_FLOATING_TYPES,
AT_ALL_TYPES, AT_FLOAT8_TYPES, ... defined there. ``GROUPS`` and ``V2_GROUPS`` below copy those
definitions; tests/test_dtypes_realtree.py checks them against the headers of 2.6.0 and 1.13.1.
Types are ScalarType names (c10/core/ScalarType.h), shown by their torch names (Half -> half,
Byte -> uint8); a type argument that is not a ScalarType (a variable) is shown as written.
"""
from __future__ import annotations

import re

# c10::ScalarType (c10/core/ScalarType.h, in its order) -> torch's name (the short alias where
# torch has one: torch.float, torch.half, torch.long).
TORCH_NAMES: dict[str, str] = {
    "Byte": "uint8", "Char": "int8", "Short": "short", "Int": "int", "Long": "long", "Half": "half",
    "Float": "float", "Double": "double", "ComplexHalf": "chalf", "ComplexFloat": "cfloat",
    "ComplexDouble": "cdouble", "Bool": "bool", "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32",
    "BFloat16": "bfloat16", "QUInt4x2": "quint4x2", "QUInt2x4": "quint2x4", "Bits1x8": "bits1x8",
    "Bits2x4": "bits2x4", "Bits4x2": "bits4x2", "Bits8": "bits8", "Bits16": "bits16",
    "Float8_e5m2": "float8_e5m2", "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2fnuz": "float8_e5m2fnuz",
    "Float8_e4m3fnuz": "float8_e4m3fnuz", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
}
_ORDER = {name: i for i, name in enumerate(TORCH_NAMES)}

_INTEGRAL = ("Byte", "Char", "Int", "Long", "Short")
_FLOATING = ("Double", "Float")
_COMPLEX = ("ComplexDouble", "ComplexFloat")

# AT_DISPATCH_<GROUP> / AT_DISPATCH_CASE_<GROUP> of Dispatch.h (See Note [Dispatch type groups]).
GROUPS: dict[str, tuple[str, ...]] = {
    "FLOATING_TYPES": _FLOATING,
    "FLOATING_TYPES_AND_HALF": (*_FLOATING, "Half"),
    "REDUCED_FLOATING_TYPES": ("Half", "BFloat16"),
    "COMPLEX_TYPES": _COMPLEX,
    "FLOATING_AND_COMPLEX_TYPES": (*_FLOATING, *_COMPLEX),
    "INTEGRAL_TYPES": _INTEGRAL,
    "ALL_TYPES": (*_INTEGRAL, *_FLOATING),
    "ALL_TYPES_AND_COMPLEX": (*_INTEGRAL, *_FLOATING, *_COMPLEX),
    "ALL_TYPES_AND_HALF": (*_INTEGRAL, *_FLOATING, "Half"),  # deprecated (1.13.1)
    "QINT_TYPES": ("QInt8", "QUInt8", "QInt32"),
    "QINT_BYTE_TYPES": ("QInt8", "QUInt8"),
    "QINT_AND_SUB_BYTE_TYPES": ("QInt8", "QUInt8", "QInt32", "QUInt4x2", "QUInt2x4"),
    "BIT_TYPES": ("Bits1x8", "Bits2x4", "Bits4x2", "Bits8", "Bits16"),
    "INDEX_TYPES": ("Int", "Long"),
}

# The type lists of Dispatch_v2.h, used as AT_EXPAND(AT_ALL_TYPES) in AT_DISPATCH_V2.
V2_GROUPS: dict[str, tuple[str, ...]] = {
    "AT_INTEGRAL_TYPES": _INTEGRAL,
    "AT_FLOATING_TYPES": _FLOATING,
    "AT_COMPLEX_TYPES": _COMPLEX,
    "AT_BAREBONES_UNSIGNED_TYPES": ("UInt16", "UInt32", "UInt64"),
    "AT_INTEGRAL_TYPES_V2": (*_INTEGRAL, "UInt16", "UInt32", "UInt64"),
    "AT_QINT_TYPES": ("QInt8", "QUInt8", "QInt32"),
    "AT_FLOAT8_TYPES": ("Float8_e5m2", "Float8_e5m2fnuz", "Float8_e4m3fn", "Float8_e4m3fnuz"),
    "AT_ALL_TYPES": (*_INTEGRAL, *_FLOATING),
    "AT_ALL_TYPES_AND_COMPLEX": (*_INTEGRAL, *_FLOATING, *_COMPLEX),
}

_MACRO = re.compile(r"^AT_DISPATCH_(CASE_)?(.+?)(?:_AND(\d*))?$")
_EXPAND = re.compile(r"^AT_EXPAND\s*\(\s*(\w+)\s*\)$")


def scalar_type(arg: str) -> str:
    """``at::ScalarType::Half`` / ``kHalf`` / ``c10::kHalf`` / ``ScalarType::Half`` -> ``Half``;
    anything else is returned as written."""
    name = arg.strip().rsplit("::", 1)[-1]
    if name in TORCH_NAMES:
        return name
    if name.startswith("k") and name[1:] in TORCH_NAMES:
        return name[1:]
    return arg.strip()


def _group(macro: str) -> tuple[tuple[str, ...], int] | None:
    """``AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3`` -> (the group's types, 3 extra types first)."""
    m = _MACRO.match(macro)
    if m is None or m.group(2) not in GROUPS:
        return None
    extra = m.group(3)
    return GROUPS[m.group(2)], 0 if extra is None else int(extra or 1)


def dispatch_types(macro: str, args: tuple[str, ...]) -> tuple[str, ...] | None:
    """The ScalarType names (or arguments as written) ``macro(args)`` compiles its lambda for, in
    ScalarType order; None for a macro that picks no types itself (AT_DISPATCH_SWITCH)."""
    if macro in ("AT_DISPATCH_CASE", "AT_DISPATCH_CASE_QINT"):
        found = [scalar_type(args[0])] if args else []
    elif macro == "AT_DISPATCH_V2":
        found = []
        for a in args[3:]:
            m = _EXPAND.match(a)
            found += V2_GROUPS.get(m.group(1), (m.group(1),)) if m else [scalar_type(a)]
    else:
        g = _group(macro)
        if g is None:
            return None
        base, n = g
        found = [*base, *(scalar_type(a) for a in args[:n])]
    return ordered(found)


def ordered(types) -> tuple[str, ...]:
    """``types`` once each, in ScalarType order (arguments that are no ScalarType last)."""
    return tuple(sorted(dict.fromkeys(types), key=lambda t: _ORDER.get(t, len(_ORDER))))


# The C++ type of scalar_t -> ScalarType (c10/core/ScalarType.h's AT_FORALL_SCALAR_TYPES_WITH_COMPLEX).
_CPP_TYPES = {
    "uint8_t": "Byte", "int8_t": "Char", "int16_t": "Short", "short": "Short", "int": "Int", "int32_t": "Int",
    "int64_t": "Long", "long": "Long", "Half": "Half", "float": "Float", "double": "Double",
    "BFloat16": "BFloat16", "bool": "Bool", "complex<Half>": "ComplexHalf", "complex<float>": "ComplexFloat",
    "complex<double>": "ComplexDouble",
    # CUTLASS's own (mem-efficient attention's dispatchers: Note [Kernels passed to a callback])
    "cutlass::half_t": "Half", "cutlass::bfloat16_t": "BFloat16",
}


def cpp_scalar_type(cpp: str) -> str | None:
    """``c10::complex<double>`` / ``at::Half`` / ``float`` -> the ScalarType name; None for another type."""
    text = "".join(cpp.split())
    for ns in ("c10::", "at::", "std::"):
        text = text.replace(ns, "")
    return _CPP_TYPES.get(text)


def torch_name(scalar: str) -> str:
    return TORCH_NAMES.get(scalar, scalar)


__all__ = ["GROUPS", "V2_GROUPS", "TORCH_NAMES", "cpp_scalar_type", "dispatch_types", "ordered", "scalar_type", "torch_name"]
