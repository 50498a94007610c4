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
  dtype's Metal name (``float``, ``half``…) when ``--dtype`` gives it (for the first tensor a name
  reads and that tensor again: Note [A kernel name a helper returns] in mpsgraph.py, which also
  reads a part a same-file helper returns), and anything else is one word (``\\w+``). A pattern
  that does not start with a literal names nothing (an unbound ``func_name + "_" + ...`` would
  match every kernel).

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

__all__ = ["ELEMENT_BITS", "METAL_TYPES", "compact", "decide", "head_name", "host_kernels", "is_head", "name_patterns",
           "pattern_matches", "returned", "tensor_key", "top_split", "unwrap"]

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
# ``x == ScalarType::Float``, ``x != kBool``, ``x == at::kHalf``
_DTYPE_TEST = re.compile(r"(.+?)\s*(==|!=)\s*(?:(?:at|c10)::)?(?:ScalarType::|k)([A-Z]\w*)")
# std::to_string(c10::elementSize(x) * 8): the size of x's dtype in bits
_BIT_SIZE = re.compile(r"std::to_string\(\s*\(*\s*(?:c10::)?elementSize\((.+)\)\s*\*\s*8\s*\)*\s*\)")
# [type] NAME = VALUE / NAME += VALUE
_ASSIGN = re.compile(r"(?:[\w:<>&*]+\s+)*?([A-Za-z_]\w*)\s*(\+?=)(?!=)\s*(.+)", re.S)
ELEMENT_BITS = {"Float": 32, "Half": 16, "BFloat16": 16, "Int": 32, "Long": 64, "Short": 16, "Char": 8, "Byte": 8,
                "Bool": 8, "Double": 64, "ComplexHalf": 32, "ComplexFloat": 64}


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


def _branches(expr: str, bound: dict[str, str] | None = None, dtype: "_Dtype | None" = None) -> list[str]:
    """``c ? A : B`` -> [A, B] (nested on the right), only A or B where ``c`` is decided (Note [A
    kernel name a helper returns]); else [expr]."""
    parts = _top_split(expr, "?")
    if len(parts) < 2:
        return [expr]
    rest = "?".join(parts[1:]).replace("::", "\0")  # a qualified name's '::' is no ':' of the ternary
    sides = _top_split(rest, ":")  # the first ':' ends A: ``c ? A : d ? B : C`` nests on the right
    if len(sides) < 2:
        return [expr]
    sides = [sides[0].replace("\0", "::"), ":".join(sides[1:]).replace("\0", "::")]
    taken = decide(parts[0], bound or {}, dtype) if dtype is not None else None
    if taken is not None:
        return _branches(sides[0] if taken else sides[1], bound, dtype)
    return _branches(sides[0], bound, dtype) + _branches(sides[1], bound, dtype)


class _Dtype:
    """The call's dtype (``--dtype``) and the tensor it is given for: the first tensor whose type a
    name uses takes it, and every later use of that tensor (Note [A kernel name a helper returns])."""

    def __init__(self, name: str | None):
        self.name, self.tensor = name, None

    def of(self, tensor: str) -> str | None:
        if self.name is None:
            return None
        key = tensor_key(tensor)
        self.tensor = self.tensor or key
        return self.name if key == self.tensor else None


def tensor_key(text: str) -> str:
    """The tensor an expression names: ``(inputTensor.scalar_type())`` -> ``inputTensor``."""
    text = _unwrap(text)
    text = re.sub(r"\.scalar_type\(\)$", "", text)
    return re.sub(r"^(?:\w+::)+", "", _unwrap(text))


def _unwrap(text: str) -> str:
    text = text.strip()
    while _wrapped(text):
        text = text[1:-1].strip()
    return text


def _operands(text: str, op: str) -> list[str]:
    """The operands of a top-level ``||`` or ``&&`` (``op`` its one character), or [text]."""
    parts = _top_split(text, op)
    if len(parts) > 1 and len(parts) % 2 and not any(parts[1::2]):
        return parts[0::2]
    return [text]


def decide(cond: str, bound: dict[str, str], dtype: "_Dtype") -> bool | None:
    """Whether a name's condition holds: a parameter its caller binds to ``true``/``false``, ``!``,
    ``&&``, ``||``, and a tensor's dtype compared with a ScalarType (the call's dtype where it
    is given for that tensor); None when undecided (Note [A kernel name a helper returns])."""
    c = _unwrap(cond)
    for op, short in (("|", True), ("&", False)):
        parts = _operands(c, op)
        if len(parts) > 1:
            got = [decide(p, bound, dtype) for p in parts]
            return short if short in got else (not short if all(g is not None for g in got) else None)
    if c.startswith("!") and not c.startswith("!="):
        got = decide(c[1:], bound, dtype)
        return None if got is None else not got
    m = _DTYPE_TEST.fullmatch(c)
    if m is not None:
        name = dtype.of(m.group(1))
        return None if name is None else (name == m.group(3)) == (m.group(2) == "==")
    return {"true": True, "false": False}.get(bound.get(c, c))


def _piece(part: str, bound: dict[str, str], dtype: "_Dtype") -> str:
    """One part of a name as a regular expression (Note [Kernel names a format builds]); ``dtype``
    gives the call's dtype to the first tensor a ``scalarToMetalTypeString`` names (and to that
    tensor again)."""
    part = part.strip()
    if part.startswith("std::string(") and part.endswith(")"):
        part = part[len("std::string("):-1].strip()
    if _wrapped(part):
        sides = _branches(part[1:-1], bound, dtype)  # (sorter.defined() ? "_sorter" : "")
        got = ["".join(_piece(p, bound, dtype) for p in _top_split(side, "+")) for side in sides]
        return got[0] if len(got) == 1 else "(?:" + "|".join(got) + ")"
    if part in bound and _wrapped(bound[part]):  # a caller's local: the name a helper returned
        return _piece(bound[part], {k: v for k, v in bound.items() if k != part}, dtype)
    part = bound.get(part, part)
    lit = _LIT.match(part)
    if lit is not None:
        return re.escape(lit.group(1))
    if _TYPE_STRING.match(part):
        name = dtype.of(part[part.index("(") + 1:part.rindex(")")])
        metal = METAL_TYPES.get(name) if name else None
        return re.escape(metal) if metal else _WORD
    bits = _BIT_SIZE.fullmatch(_unwrap(part))
    if bits is not None:
        name = dtype.of(bits.group(1))
        return str(ELEMENT_BITS[name]) if name in ELEMENT_BITS else _WORD
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
    expr, given = expr.strip(), _Dtype(dtype)
    fmt = _FORMAT.match(expr)
    if fmt is not None:
        args = macros.split_args(fmt.group(2) or "")
        pieces = fmt.group(1).split("{}")
        if len(pieces) - 1 != len(args):
            return None
        out = re.escape(pieces[0])
        for arg, after in zip(args, pieces[1:]):
            out += _piece(arg, bound, given) + re.escape(after)
        return out if out and not out.startswith((_WORD, "(?:")) else None
    parts = _top_split(expr, "+")
    out = "".join(_piece(p, bound, given) for p in parts)
    return out if out and _led(parts[0], bound, dtype) else None


def _led(part: str, bound: dict[str, str], dtype: str | None) -> bool:
    """Whether a name's first part starts with a literal, on each side of its ternaries."""
    part = part.strip()
    if part in bound and _wrapped(bound[part]):  # a caller's local
        return _led(bound[part], {k: v for k, v in bound.items() if k != part}, dtype)
    if _wrapped(part):
        sides = _branches(part[1:-1], bound, _Dtype(dtype))
        return all(_led(_top_split(side, "+")[0], bound, dtype) for side in sides)
    got = _piece(part, bound, _Dtype(dtype))
    return bool(got) and not got.startswith((_WORD, "(?:"))


def name_patterns(exprs: Iterable[str], bound: dict[str, str] | None, dtype: str | None) -> list[str]:
    """The patterns (regular expressions) of the kernel names the expressions build, in order, each once."""
    out: list[str] = []
    for expr in exprs:
        for side in _branches(expr, bound, _Dtype(dtype)):
            got = _pattern(side, bound or {}, dtype)
            if got is not None and got not in out:
                out.append(got)
    return out


def top_split(expr: str, sep: str) -> list[str]:
    """``expr`` split at its top-level ``sep`` (one character; not in brackets or strings)."""
    return _top_split(expr, sep)


def unwrap(text: str) -> str:
    """``text`` without the parentheses around all of it."""
    return _unwrap(text)


def returned(body: str, params: list[str], args: list[str]) -> str | None:
    """The expression of the string a helper's ``body`` (its text from the ``{``) returns, its
    parameters made the call's ``args``: the returned local's first ``=``, then each ``+=`` to it,
    one inside an ``if (c) {`` as ``(c ? X : "")``; the function's other locals put in too (Note [A
    kernel name a helper returns]); a braceless ``if (c) x += ...;`` is read as one in braces. None
    when it returns no expression at its top level, returns inside a branch, or assigns a local twice."""
    stmts = _statements(body)
    rets = [t[len("return"):].strip() for t, conds in stmts if not conds and re.match(r"return\b", t)]
    if not rets or len(params) != len(args) or any(conds and re.match(r"return\b", t) for t, conds in stmts):
        return None  # no return at the top level, or one inside a branch: the name is not one expression
    values: dict[str, str] = {}
    appends: list[str] = []
    for text, conds in stmts:
        m = _ASSIGN.fullmatch(text)
        if m is None:
            continue
        if m.group(2) == "=" and m.group(1) in values:
            return None  # a local assigned again: its first value is not what the helper returns
        if m.group(2) == "=":
            values[m.group(1)] = f"({m.group(3)})"
        elif m.group(2) == "+=" and m.group(1) == rets[-1]:
            appends.append(f"({m.group(3)})" if not conds else f'(({" && ".join(conds)}) ? ({m.group(3)}) : "")')
    ret = rets[-1]
    expr = " + ".join([values.pop(ret)] + appends) if ret in values else ret
    for _round in range(3):  # a local named in another's value
        expr = _put(expr, values)
    return _put(expr, {p: (a if re.fullmatch(r"\w+", a) else f"({a})") for p, a in zip(params, args)})


def _put(expr: str, values: dict[str, str]) -> str:
    """``expr`` with each name of ``values`` outside its string literals (and not a member) made its value."""
    if not values:
        return expr
    names = re.compile(r"(?<![\w.>:])(" + "|".join(map(re.escape, values)) + r")\b(?!\s*\()")
    return "".join(part if part.startswith('"') else names.sub(lambda m: values[m.group(1)], part)
                   for part in re.split(r'("(?:[^"\\]|\\.)*")', expr))


def _statements(body: str) -> list[tuple[str, tuple[str, ...]]]:
    """(statement, the conditions of the ``if`` blocks around it) of a function body from its ``{``;
    a block that is no plain ``if (c)`` has the condition ``?`` (undecided)."""
    out, conds, cur, quoted = [], [], [], False
    for i, ch in enumerate(body[body.index("{") + 1:] if "{" in body else ""):
        if ch == '"' and (not cur or cur[-1] != "\\"):
            quoted = not quoted
        if quoted or ch not in "{};":
            cur.append(ch)
            continue
        text = " ".join("".join(cur).split())
        cur = []
        if ch == "{":
            m = re.fullmatch(r"if\s*\((.*)\)", text)
            conds.append(f"({m.group(1)})" if m else "?")
        elif ch == "}":
            if not conds:
                break
            conds.pop()
        elif text:
            cond, text = _braceless_if(text)
            out.append((text, tuple(conds) + cond))
    return out


def _braceless_if(text: str) -> tuple[tuple[str, ...], str]:
    """``if (c) x += "a"`` -> ((``(c)``,), ``x += "a"``); an ``else`` statement's condition is ``?``."""
    if re.match(r"else\b", text):
        return ("?",), text[4:].strip()
    if not re.match(r"if\s*\(", text):
        return (), text
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ")" and depth == 0:
            return (f"({text[text.index('(') + 1:i]})",), text[i + 1:].strip()
    return ("?",), text


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
