"""The Metal kernel names an MPS lookup builds, as patterns, and the instantiations they match
(resolve/mpsgraph.py reads the lines; issue 36).

Note [Kernel names a format builds]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Many MPS kernels look their Metal function up by a name built at run time, not a literal:
``lib.getPipelineStateForFunc(fmt::format("{}_{}_{}", name, scalarToMetalTypeString(input),
scalarToMetalTypeString(output)))`` (SpecialOps.mm), or a local first, ``const std::string kernel =
"searchsorted_" + scalarToMetalTypeString(input) + "_" + scalarToMetalTypeString(output);`` then
``getPipelineStateForFunc(kernel)`` (Bucketization.mm, HistogramKernel.mm, BinaryKernel.mm,
RenormKernel.mm, Quantized.mm). The name is read as a pattern:

* a lookup whose argument is a local name is read through each assignment of that name before it
  in the same body (``kernel = fmt::format("int8pack_mv_{}", ...)`` and ``kernel =
  fmt::format("large_m_int8pack_mm_{}", ...)`` in the two branches of Quantized.mm: both);
* ``c ? A : B`` is both A and B;
* ``fmt::format("FMT", args...)``: each ``{}`` is its argument; ``A + B + ...``: the parts joined;
* a string literal is itself, a parameter the caller binds to a literal is that literal (Note [A
  kernel name the caller gives] in mpsgraph.py), ``scalarToMetalTypeString(x)`` is the call's
  dtype's Metal name (``float``, ``half``…) when ``--dtype`` gives it, and anything else is one
  word (``\\w+``). A pattern that does not start with a literal names nothing (an unbound
  ``func_name + "_" + ...`` would match every kernel).

The pattern is matched against every instantiation's host name in the tree's .metal files (Note
[Metal kernels a macro instantiates]; the macro uses expanded, each ``host_name`` paired with the
``kernel void NAME<`` after it, ``void kernel`` spelled either way): the kernels they instantiate
are the lookup's, each a ``kernel void NAME`` run at its definition (the line that names it; a
``void kernel`` alone on the line before is part of it) and an ``instantiated as ...`` run at the
first match. A pattern with no word left that matches no host name is a plain kernel's name
(``fmt::format("weight_to_int4pack")``), found at its ``kernel void NAME(``. A name the lookup
expression gives as a literal prefix keeps the older reading (metal_definition) first.
"""
from __future__ import annotations

import re
from typing import Iterable

from atenmap.extract import macros

__all__ = ["METAL_TYPES", "compact", "head_name", "host_kernels", "is_head", "name_patterns", "pattern_matches"]

# ScalarType -> scalarToMetalTypeString (native/mps/OperationUtils.mm)
METAL_TYPES = {"Float": "float", "Half": "half", "BFloat16": "bfloat", "Int": "int", "Long": "long", "Short": "short",
               "Char": "char", "Byte": "uchar", "Bool": "bool", "ComplexHalf": "half2", "ComplexFloat": "float2"}
_WORD = r"\w*"
_FORMAT = re.compile(r'^(?:fmt::|std::)?format\s*\(\s*"([^"\\]*)"\s*(?:,(.*))?\)$', re.S)
_LIT = re.compile(r'^"([^"\\]*)"$')
_TYPE_STRING = re.compile(r"^(?:\w+::)*scalarToMetalTypeString\s*\(")
_HOST_KERNEL = re.compile(r'host_name\(\s*((?:"[^"]*"\s*)+)\)\s*\]\]\s*(kernel\s+void|void\s+kernel)\s+([A-Za-z_]\w*)')
_HEAD = re.compile(r"(?:\bkernel\s+void|\bvoid\s+kernel)\s+([A-Za-z_]\w*)\s*[(<]")
_HEAD_END = re.compile(r"(?:\bkernel\s+void|\bvoid\s+kernel)\s*$")
_LEAD = re.compile(r"\s*([A-Za-z_]\w*)\s*[(<]")


def _top_split(expr: str, sep: str) -> list[str]:
    """``expr`` split at the top-level occurrences of the one-character ``sep`` (not in brackets or strings)."""
    out, depth, cur, quoted = [], 0, [], False
    for i, ch in enumerate(expr):
        if ch == '"' and (i == 0 or expr[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _branches(expr: str) -> list[str]:
    """``c ? A : B`` -> [A, B] (nested on the right); else [expr]."""
    parts = _top_split(expr, "?")
    if len(parts) < 2:
        return [expr]
    rest = "?".join(parts[1:]).replace("::", "\0")  # a qualified name's '::' is no ':' of the ternary
    sides = [side.replace("\0", "::") for side in _top_split(rest, ":")]
    if len(sides) != 2:
        return [expr]
    return _branches(sides[0]) + _branches(sides[1])


def _piece(part: str, bound: dict[str, str], dtype: list[str | None]) -> str:
    """One part of a name as a regular expression (Note [Kernel names a format builds]); ``dtype``
    holds the call's dtype until the first ``scalarToMetalTypeString`` takes it."""
    part = part.strip()
    if part.startswith("std::string(") and part.endswith(")"):
        part = part[len("std::string("):-1].strip()
    if _wrapped(part):
        sides = _branches(part[1:-1])  # (sorter.defined() ? "_sorter" : "")
        return "(?:" + "|".join(_piece(side, bound, dtype) for side in sides) + ")"
    part = bound.get(part, part)
    lit = _LIT.match(part)
    if lit is not None:
        return re.escape(lit.group(1))
    if _TYPE_STRING.match(part) and dtype[0] is not None:
        metal, dtype[0] = METAL_TYPES.get(dtype[0]), None  # the first dtype word is the call's
        return re.escape(metal) if metal else _WORD
    return _WORD


def _wrapped(part: str) -> bool:
    """Whether ``part`` is one parenthesized expression, ``( ... )``."""
    if not (part.startswith("(") and part.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(part):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(part) - 1:
            return False
    return True


def _pattern(expr: str, bound: dict[str, str], dtype: str | None) -> str | None:
    """The regular expression of the names ``expr`` (one side of any ternary) builds, or None when it
    does not start with a literal."""
    expr, dtype = expr.strip(), [dtype]
    fmt = _FORMAT.match(expr)
    if fmt is not None:
        args = macros.split_args(fmt.group(2) or "")
        pieces = fmt.group(1).split("{}")
        if len(pieces) - 1 != len(args):
            return None
        out = re.escape(pieces[0])
        for arg, after in zip(args, pieces[1:]):
            out += _piece(arg, bound, dtype) + re.escape(after)
    else:
        out = "".join(_piece(p, bound, dtype) for p in _top_split(expr, "+"))
    return out if out and not out.startswith((_WORD, "(?:")) else None


def name_patterns(exprs: Iterable[str], bound: dict[str, str] | None, dtype: str | None) -> list[str]:
    """The patterns (regular expressions) of the kernel names the expressions build, in order, each once."""
    out: list[str] = []
    for expr in exprs:
        for side in _branches(expr):
            got = _pattern(side, bound or {}, dtype)
            if got is not None and got not in out:
                out.append(got)
    return out


def host_kernels(text: str) -> list[tuple[str, str]]:
    """(host name, kernel name) of each ``[[host_name("a" "b")]] kernel void NAME`` in an
    instantiation's text (its literals joined)."""
    return [("".join(re.findall(r'"([^"]*)"', m.group(1))), m.group(3)) for m in _HOST_KERNEL.finditer(text)]


def pattern_matches(pattern: str, name: str) -> bool:
    return re.fullmatch(pattern, name) is not None


def head_name(text: str, before: str) -> str | None:
    """The kernel whose definition a line of Metal source (``before``: the line above it) starts:
    ``kernel void NAME(`` or ``<``, or ``NAME(`` after a line that ends with ``kernel void`` / ``void
    kernel``; an instantiation (``host_name``) is none."""
    if "host_name" in text:
        return None
    head = _HEAD.search(text)
    if head is not None:
        return head.group(1)
    lead = _LEAD.match(text)
    split = lead is not None and "host_name" not in before and _HEAD_END.search(before.split("//", 1)[0].rstrip())
    return lead.group(1) if split else None


def is_head(text: str, before: str, kernel: str) -> bool:
    return head_name(text, before) == kernel


def compact(text: str) -> str:
    """What the bundle quotes of an instantiation: its host names and kernels, ``[[host_name("a_float")]]
    kernel void a<`` each, its literals and keywords as written (Note [MPS lines from the bundle] in mpsgraph.py)."""
    return " ".join(f'[[host_name({" ".join(m.group(1).split())})]] {" ".join(m.group(2).split())} {m.group(3)}<'
                    for m in _HOST_KERNEL.finditer(text))
