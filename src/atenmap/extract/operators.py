"""Operators written on tensors: ``self * vec2``, ``self != self``, ``-grad``, ``out += bias``
(queries/tensor_operators.scm). Each becomes the member call the C++ operator makes.

Note [Operators written on tensors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen's C++ API defines the arithmetic, comparison and bitwise operators on Tensor
(ATen/TensorOperators.h): ``x * y`` is ``x.mul(y)``, ``x != y`` is ``x.ne(y)``, ``-x`` is
``x.neg()``, ``x += y`` is ``x.add_(y)``; with a number on the left, ``2 * x`` is ``x.mul(2)``,
``2 < x`` is ``x.gt(2)`` and ``1 - x`` fills a new tensor with 1 and runs ``sub_(x)`` on it. So
composites such as ``outer`` (``self.reshape(...) * vec2``) and ``isnan`` (``self != self``) call
operators without writing a call. C++ cannot say whether ``a * b`` is a tensor product from the text
alone: an expression counts only where one operand is a name the enclosing function declares with a
type whose last word is ``Tensor`` (a parameter ``const Tensor& self``, a local ``Tensor out``, or
a local ``auto result = self;`` copied from one), or,
for ``+ - * /``, where the left one is a call of an ``at::`` function given such a name first
(diff's ``at::narrow_symint(result, dim, 1, n) - at::narrow_symint(result, dim, 0, n)``, gradient's
``at::slice(self, d, 2) - at::slice(self, d, 0, -2)``: ATen's functions on tensors return tensors;
``at::get_thread_num() * 2`` is given none). It
becomes a ``call`` fact of the operator's method (``mul``; qual ``Tensor::operator*``, shown as
``aten::mul (operator*)`` like a backward formula's arithmetic), detail ``member``, whose ``arg`` is the other
operand (``vec2:Tensor``, ``2``), the way a written member call keeps its arguments (Note [Arguments
of operator calls] in calls.py), so the overload is chosen the same way.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from atenmap.extract.nodes import WORD_BYTES, node_text
from atenmap.extract.unit import Scopes, Unit
from atenmap.kinds import CallDetail, FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node

# operator -> (method with a tensor on the left, method with a number on the left and a tensor on the right)
_BINARY = {
    "+": ("add", "add"), "*": ("mul", "mul"), "-": ("sub", "sub_"), "/": ("div", "div_"),
    "%": ("remainder", "remainder_"), "&": ("bitwise_and", "bitwise_and"), "|": ("bitwise_or", "bitwise_or"),
    "^": ("bitwise_xor", "bitwise_xor"), "<": ("lt", "gt"), "<=": ("le", "ge"), ">": ("gt", "lt"),
    ">=": ("ge", "le"), "==": ("eq", "eq"), "!=": ("ne", "ne"),
}
_ASSIGN = {"+=": "add_", "-=": "sub_", "*=": "mul_", "/=": "div_", "%=": "remainder_",
           "&=": "bitwise_and_", "|=": "bitwise_or_", "^=": "bitwise_xor_"}
_UNARY = {"-": "neg", "~": "bitwise_not"}
_TENSOR = "Tensor"


def tensor_operator(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.tensor_operator``: Note [Operators written on tensors]."""
    if scope < 0 or (node.start_byte, node.end_byte) in unit.operators:
        return  # outside a function, or matched already (a name on both sides)
    unit.operators.add((node.start_byte, node.end_byte))
    op = node.child_by_field_name("operator")
    if op is None:
        return
    sign = node_text(op)
    left, right = caps.get("left"), caps["right"]
    if left is None:
        name = _UNARY.get(sign)
        if name and _is_tensor(unit, right, scope, scopes):
            unit.facts.append(_fact(unit, node, scope, name, "", sign))
        return
    if node.type == "assignment_expression":
        name = _ASSIGN.get(sign)
        if name and _is_tensor(unit, left, scope, scopes):
            unit.facts.append(_fact(unit, node, scope, name, _operand(unit, right, scope, scopes), sign))
        return
    names = _BINARY.get(sign)
    if names is None:
        return
    if sign in _ARITHMETIC and _is_tensor_call(unit, left, scope, scopes):
        unit.facts.append(_fact(unit, node, scope, names[0], _operand(unit, right, scope, scopes), sign))
    elif _is_tensor(unit, left, scope, scopes):
        unit.facts.append(_fact(unit, node, scope, names[0], _operand(unit, right, scope, scopes), sign))
    elif _is_tensor(unit, right, scope, scopes):
        number = left.type == "number_literal"
        receiver_first = not number and sign not in ("<", "<=", ">", ">=")  # a tensor-valued expression on the left
        name = names[0] if receiver_first else names[1]
        unit.facts.append(_fact(unit, node, scope, name, _operand(unit, right if receiver_first else left, scope, scopes),
                                sign))


_ARITHMETIC = frozenset({"+", "-", "*", "/"})


def _is_tensor_call(unit: Unit, n: Node, scope: int, scopes: Scopes) -> bool:
    """``at::slice(self, ...)``: a call of an ``at::`` function whose first argument is a name the
    function declares as a Tensor (Note [Operators written on tensors])."""
    if n.type == "parenthesized_expression" and n.named_child_count == 1:
        n = n.named_children[0]
    if n.type != "call_expression":
        return False
    fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
    if fn is None or args is None or fn.type != "qualified_identifier" or not args.named_child_count:
        return False
    name = node_text(fn)
    if not name.startswith("at::") or "::" in name[4:]:
        return False
    return _is_tensor(unit, args.named_children[0], scope, scopes)


def _is_tensor(unit: Unit, n: Node, scope: int, scopes: Scopes) -> bool:
    if n.type == "parenthesized_expression" and n.named_child_count == 1:
        n = n.named_children[0]
    return n.type == "identifier" and node_text(n) in _tensors(unit, scope, scopes)


def _tensors(unit: Unit, scope: int, scopes: Scopes) -> frozenset[str]:
    """The names the function declares as Tensor, read once per function (tensor_names)."""
    got = unit.declared.get(scope)
    if got is None:
        got = unit.declared[scope] = tensor_names(unit.text, *scopes.span(scope))
    return got


def tensor_names(text: bytes, lo: int = 0, hi: int | None = None) -> frozenset[str]:
    """The names ``text[lo:hi]`` declares with a type whose last word is ``Tensor``: parameters
    (``const Tensor& self``) and locals (``Tensor out = ...``, ``at::Tensor grad;``). Also what a
    backward helper's arithmetic is read against (resolve/backward.py, Note [Backward formulas])."""
    hi = len(text) if hi is None else hi
    names = {m.decode() for m in _tensor_declarations(text, lo, hi)}
    return frozenset(names | _auto_copies(text, lo, hi, names))


def _auto_copies(text: bytes, lo: int, hi: int, tensors: set[str]) -> set[str]:
    """``auto result = self;`` with ``self`` a Tensor: ``result`` is one too (diff's ``auto result =
    self;`` before ``at::narrow_symint(result, ...) - ...``). Read by finding ``auto``, not a regex."""
    out: set[str] = set()
    at = text.find(b"auto", lo, hi)
    while at >= 0:
        end = text.find(b";", at, hi)
        if end < 0:
            break
        before = text[at - 1:at] if at > lo else b" "
        if not (before.isalnum() or before == b"_"):
            head, eq, value = text[at + 4:end].partition(b"=")
            name, value = head.strip().lstrip(b"&").strip(), value.strip()
            if eq and name.decode("utf-8", "replace").isidentifier() and value.decode("utf-8", "replace") in tensors | out \
                    and text[at + 4:at + 5] in (b" ", b"\t", b"\n", b"&"):
                out.add(name.decode())
        at = text.find(b"auto", at + 4, hi)
    return out


# Read back only where an operator expression has a plain name on a side, as member calls' receivers
# are (Note [Member calls on locals] in calls.py: a query over every declaration cost 12 % of the index time).
# Note [Tensor declarations as string code]
# ``[at::]Tensor[&|&&] name`` followed by one of ``, ) = ; { ( [``, the type not part of a longer
# name or qualifier, is found by bytes.find of ``Tensor`` and a walk over what follows (a read
# resumes after the declaration it found). It replaced a regex of that shape, with the same names on
# every function span of both test trees and fuzz (bench/regex_equal.py).
_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_IDENT_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_AFTER_DECLARED = b",)=;{(["


def _tensor_declarations(text: bytes, lo: int, hi: int) -> set[bytes]:
    """The names declared ``[at::]Tensor[&|&&] name`` in ``text[lo:hi]`` (see Note above)."""
    names: set[bytes] = set()
    resume = lo
    at = text.find(b"Tensor", lo, hi)
    while at >= 0:
        start = at - 4 if at - 4 >= lo and text[at - 4:at] == b"at::" else at
        if start >= resume and (start == 0 or (text[start - 1] not in WORD_BYTES and text[start - 1] != 0x3A)):
            got = _declared_name(text, at + 6, hi)
            if got is not None:
                names.add(got[0])
                resume = got[1]
        at = text.find(b"Tensor", at + 1, hi)
    return names


def _declared_name(text: bytes, at: int, hi: int) -> tuple[bytes, int] | None:
    """``(name, end)`` of ``\\s*&{0,2}\\s*name\\s*`` at ``at`` followed by a byte of _AFTER_DECLARED
    before ``hi``; ``end``: after the blanks that follow the name."""
    at = _skip(text, at, hi, _WS)
    amps = _skip(text, at, hi, b"&")
    if amps - at > 2:
        return None
    first = _skip(text, amps, hi, _WS)
    if first >= hi or text[first] not in _IDENT_FIRST:
        return None
    end = _skip(text, first, hi, WORD_BYTES)
    after = _skip(text, end, hi, _WS)
    if after >= hi or text[after] not in _AFTER_DECLARED:
        return None
    return text[first:end], after


def _skip(text: bytes, at: int, hi: int, these) -> int:
    while at < hi and text[at] in these:
        at += 1
    return at


def _operand(unit: Unit, n: Node, scope: int, scopes: Scopes) -> str:
    """The operand as an argument of the method call (Note [Arguments of operator calls])."""
    text = " ".join(node_text(n).split())[:40]
    if n.type == "identifier" and text in _tensors(unit, scope, scopes):
        return f"{text}:{_TENSOR}"
    return text


def _fact(unit: Unit, node: Node, scope: int, name: str, arg: str, sign: str):
    """The method's call fact; its qual names the operator as written (``Tensor::operator*``)."""
    return unit.fact(FactKind.CALL, name, f"{_TENSOR}::{OPERATOR}{sign}", unit.line_of(node), scope=scope,
                     detail=CallDetail.MEMBER, arg=arg)


OPERATOR = "operator"  # a qual's last part that is an operator as written (resolve/chain.py labels the step)
