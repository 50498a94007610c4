"""What a composite's locals and the boolean helpers its conditions call hold for one call, read from
the function's text with the ranks and sizes the call gives (``Index.output_node``, issue 38).

Note [A helper a condition calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``_matmul_impl`` folds a batch into a matrix ``else if (should_fold(tensor1, tensor2, has_out))``, and
``should_fold`` is a helper of the same file whose body is declarations and ``if (c) return
true/false;`` statements over the ranks and sizes of its parameters (``if (!(dim_t1 >= 3 && dim_t2 <=
2)) return false;``), ending in a ``return``. Such a condition is decided by binding the call's
arguments into the helper (the ranks and sizes of the tensors passed, the value of a flag passed) and
reading its statements in order: a return whose ``if`` holds gives the value; one whose ``if`` the
call leaves open adds its value to those the helper may give, and the reading goes on; the helper's
value is known when every value it may give is one. A loop that returns (``for (...) { if (...)
return false; }``) may give what it returns; an ``else`` or a return inside a block of other
statements makes the helper unread (None), as does any value the call does not decide: the
condition stays "not decided", never guessed.

The locals the statements read are declared once (``const auto NAME = EXPR;``, ``int64_t``, ``bool``,
``MaybeOwned<Tensor>``), each read in source order with what is known above it:
- a tensor chosen by a condition the ranks decide (``t1 = tensor1_larger ? MaybeOwned<Tensor>::
  borrowed(tensor1) : MaybeOwned<Tensor>::owned(tensor2.mT())``): the chosen tensor's rank and sizes
  (``t()``/``mT()`` swap the last two sizes; ``*opt`` of an optional tensor the call passes is it);
- a rank (``t1->dim()``), a flag (``const bool has_out = out.defined();``: ``out`` an undefined
  tensor the caller passes, ``at::Tensor result, unused;``, so false), a number;
- a tensor's leading sizes (``tensor1.sizes().slice(0, ...)``, ``IntArrayRef b(tensor2.sizes().data(),
  ...)``): ``b[k]`` is the tensor's size ``k`` (a batch size; the code indexes only what it holds).
The node question presumes autograd records the call (Note [The node of a composite's output]):
its tensors require grad, as torch's own recording (bench/autograd_oracle.py) has them, so
``t.requires_grad()`` of a tensor the call passes is true; an optional tensor the call passes
``has_value()``.
"""
from __future__ import annotations

import dataclasses
import re

from atenmap.extract import macros
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.decide import condition

MAX_DEPTH = 3  # helpers inside helpers
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DECL = re.compile(r"(?:const\s+)?(?:(?:c10|at|std)::)?(?:auto|bool|int64_t|int|size_t|Tensor|IntArrayRef|"
                   r"MaybeOwned\s*<[^<>;]*>)\s*&?\s+(\w+)\s*(?:=\s*(.+)|\((.+)\))$", re.S)
_TENSOR = re.compile(r"(?:(?:c10::)?MaybeOwned\s*<\s*(?:at::)?Tensor\s*>\s*::\s*(?:borrowed|owned)\s*\()?\s*"
                     r"(\*?)(\w+)((?:\s*(?:\.|->)\s*(?:t|mT|contiguous)\(\))*)\s*\)?")
_RANK = re.compile(r"(?<![\w.])(\w+)\s*(?:\.|->)\s*(?:dim|ndimension)\(\)")
_LEADING = re.compile(r"(\w+)\s*\.\s*sizes\(\)\s*(?:\.\s*slice\(\s*0\s*,.*\)|\.\s*data\(\)\s*,.*)")
_LITERAL_CMP = re.compile(r"(?<![\w.])(-?\d+)\s*(==|!=|<=|>=|<|>)\s*(-?\d+)(?![\w.])")
_UNDECLARED = re.compile(r"^\s*(?:at::)?Tensor\s+(\w+(?:\s*,\s*\w+)*)\s*;", re.M)


@dataclasses.dataclass
class Known:
    """What is known of one function's names for the call: tensors' shapes (a rank known with no
    sizes is a shape of ``None`` sizes), flags' and numbers' values (``"true"``, ``"3"``, ``"None"``
    for an optional or undefined tensor), and leading-size locals (name -> the tensor)."""

    facts: CallFacts
    ranks: dict[str, int] = dataclasses.field(default_factory=dict)
    sizes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    values: dict[str, str] = dataclasses.field(default_factory=dict)
    leading: dict[str, str] = dataclasses.field(default_factory=dict)
    helpers: dict[str, str] = dataclasses.field(default_factory=dict)  # helper name -> its text

    def rewrite(self, text: str) -> str:
        """``text`` with what is known written in: ranks, a leading size ``b[0]``, a tensor's
        ``requires_grad()``/``has_value()``, the flags and numbers, comparisons of two numbers."""
        text = _RANK.sub(lambda m: str(self.ranks[m.group(1)]) if m.group(1) in self.ranks else m.group(0), text)
        text = re.sub(r"(?<![\w.])(\w+)\s*\[\s*(\d+)\s*\]", self._size, text)
        text = re.sub(r"(?<![\w.])(\w+)\s*(?:\.|->)\s*(requires_grad|has_value)\(\)",
                      lambda m: "true" if m.group(1) in self.ranks else m.group(0), text)
        text = re.sub(r"(?<![\w.>:])([A-Za-z_]\w*)\b(?!\s*(?:\(|\.|->|::|\[))",
                      lambda m: self.values.get(m.group(1), m.group(1)) if self.values.get(m.group(1)) != "None"
                      else m.group(1), text)
        for _ in range(4):
            new = _LITERAL_CMP.sub(_literal, text)
            new = re.sub(r"\(\s*(true|false)\s*\)", r"\1", new)
            if new == text:
                break
            text = new
        return text

    def shape_of(self, expr: str) -> tuple[int, ...] | None:
        """The shape of a tensor expression of known tensors: a name, ``*name``, and the views
        ``t()``/``mT()`` (the last two sizes swapped), ``contiguous()``, ``squeeze(k)`` of a size-1
        dim ``k`` and ``unsqueeze(k)``; None when not known."""
        m = re.fullmatch(r"\s*\*?(\w+)((?:\s*\.\s*\w+\(\s*-?\d*\s*\))*)\s*", expr)
        if m is None or m.group(1) not in self.sizes:
            return None
        shape = self.sizes[m.group(1)]
        for name, arg in re.findall(r"\.\s*(\w+)\(\s*(-?\d*)\s*\)", m.group(2)):
            k = int(arg) if arg else None
            if name in ("t", "mT") and k is None:
                shape = shape[:-2] + shape[-2:][::-1] if len(shape) >= 2 else shape
            elif name == "contiguous" and k is None:
                pass
            elif name == "squeeze" and k is not None and -len(shape) <= k < len(shape):
                if shape[k] == 1:
                    shape = shape[:k % len(shape)] + shape[k % len(shape) + 1:]
            elif name == "unsqueeze" and k is not None and 0 <= k <= len(shape):
                shape = shape[:k] + (1,) + shape[k:]
            else:
                return None
        return shape

    def _size(self, m: re.Match) -> str:
        tensor = self.leading.get(m.group(1))
        shape = self.sizes.get(tensor) if tensor else None
        k = int(m.group(2))
        return str(shape[k]) if shape is not None and k < len(shape) else m.group(0)

    def truth(self, text: str) -> bool | None:
        bound = {n: v for n, v in self.values.items() if v == "None"}
        return condition(self.rewrite(text), self.facts, {}, bound)


def _literal(m: re.Match) -> str:
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    return "true" if {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op] else "false"


def _ternary(expr: str) -> tuple[str, str, str] | None:
    """``c ? a : b`` at the top level (``b`` may be another ternary), or None."""
    depth, q, nested = 0, -1, 0
    for i, ch in enumerate(expr):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?":
            if q < 0:
                q = i
            else:
                nested += 1
        elif depth == 0 and ch == ":" and q >= 0 and expr[i - 1] != ":" and expr[i + 1:i + 2] != ":":
            if nested:
                nested -= 1
                continue
            return expr[:q], expr[q + 1:i], expr[i + 1:]
    return None


def declare(known: Known, name: str, expr: str) -> None:
    """Read ``NAME = EXPR`` (Note [A helper a condition calls]) into ``known``; a name not decided is
    forgotten."""
    for d in (known.ranks, known.sizes, known.values, known.leading):
        d.pop(name, None)
    expr = " ".join(expr.split())
    for _ in range(MAX_DEPTH + 2):  # a chain of ternaries
        t = _ternary(expr)
        if t is None:
            break
        c = known.truth(t[0])
        if c is None:
            return
        expr = (t[1] if c else t[2]).strip()
    m = _TENSOR.fullmatch(expr)
    if m and m.group(2) in known.ranks and (not m.group(1) or known.values.get(m.group(2)) != "None"):
        src = m.group(2)
        known.ranks[name] = known.ranks[src]
        shape = known.sizes.get(src)
        for _swap in re.findall(r"(?:t|mT)\(\)", m.group(3)):
            shape = shape[:-2] + shape[-2:][::-1] if shape and len(shape) >= 2 else shape
        if shape is not None:
            known.sizes[name] = shape
        return
    m = _LEADING.fullmatch(expr)
    if m and m.group(1) in known.sizes:
        known.leading[name] = m.group(1)
        return
    m = _RANK.fullmatch(expr)
    if m:
        if m.group(1) in known.ranks:
            known.values[name] = str(known.ranks[m.group(1)])
        return
    if re.fullmatch(r"-?\d+", known.rewrite(expr).strip()):
        known.values[name] = known.rewrite(expr).strip()
        return
    got = known.truth(expr)
    if got is not None:
        known.values[name] = "true" if got else "false"


def read_locals(known: Known, body: str) -> Known:
    """Every declaration of ``body`` (a function's text), in order, read into ``known``; a name
    declared twice (each declaration) or assigned, incremented or decremented again is forgotten; ``Tensor a, b;`` declares undefined tensors."""
    body = _COMMENTS.sub(" ", body)
    for m in _UNDECLARED.finditer(body):
        for n in m.group(1).split(","):
            known.values[n.strip()] = "None"
    seen: set[str] = set()
    for stmt in _statements(body):
        m = _DECL.fullmatch(stmt.strip())
        if m is None:
            continue
        name, expr = m.group(1), m.group(2) or m.group(3)
        word = re.escape(name)
        if name in seen or re.search(rf"(?<![\w.]){word}\s*(?:[-+*/|&^]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*{word}\b",
                                     body[body.find(stmt) + len(stmt):]):
            for d in (known.ranks, known.sizes, known.values, known.leading):
                d.pop(name, None)
            seen.add(name)  # a later declaration of the name (another branch's) is not its value either
            continue
        seen.add(name)
        declare(known, name, expr)
    return known


def _statements(body: str) -> list[str]:
    """The ``;``-ended statements of ``body`` at any depth of braces, each without its ``if (...)``
    or ``for (...)`` head (declarations are what is read)."""
    out, cur, depth = [], [], 0
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth == 0 and ch in "{}":
            cur = []
            continue
        if depth == 0 and ch == ";":
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    return out


def helper_value(text: str, args: list[str], caller: Known, depth: int = 0) -> bool | None:
    """The value a boolean helper (its definition's ``text``) returns for ``args`` passed in the
    caller whose names ``caller`` knows: Note [A helper a condition calls]. None when not decided."""
    text = _COMMENTS.sub(" ", text)
    open_ = text.find("(")
    close = macros.balanced_paren(text, open_) if open_ >= 0 else -1
    brace = text.find("{", close) if close > 0 else -1
    if brace < 0 or depth > MAX_DEPTH:
        return None
    params = [re.sub(r"=.*", "", p).split()[-1].lstrip("&*") for p in macros.split_args(text[open_ + 1:close - 1], angles=True)
              if p.strip() and p.split()]
    if len(params) != len(args):
        return None
    known = Known(caller.facts)
    for p, a in zip(params, args):
        a = a.strip()
        if a in caller.ranks:
            known.ranks[p] = caller.ranks[a]
            if a in caller.sizes:
                known.sizes[p] = caller.sizes[a]
        elif a in caller.values:
            known.values[p] = caller.values[a]
        else:
            got = caller.truth(a)
            if got is not None:
                known.values[p] = "true" if got else "false"
    return _run(text[brace + 1:text.rfind("}")], known)


def _run(body: str, known: Known) -> bool | None:
    """The helper's statements read in order (Note [A helper a condition calls])."""
    may: set[bool] = set()
    i = 0
    while i < len(body):
        while i < len(body) and body[i].isspace():
            i += 1
        if i >= len(body):
            break
        head = re.match(r"(if|for|while)\s*\(", body[i:])
        if head:
            close = macros.balanced_paren(body, i + head.end() - 1)
            if close <= 0:
                return None
            cond = body[i + head.end():close - 1]
            _forget_assigned(known, cond, calls=False)  # ``while (d-- > 3)``, a loop's ``++i``: not the old value
            stmt, i = _one_statement(body, close)
            if stmt is None or re.match(r"\s*else\b", body[i:]):
                return None
            inner = stmt.strip().removeprefix("{").removesuffix("}").strip()
            if "return" not in inner:
                _forget_assigned(known, inner)
                continue
            if head.group(1) != "if":  # a loop that returns: it may give what it returns
                for r in re.findall(r"\breturn\b([^;]*);", inner):
                    v = known.truth(r)
                    if v is None:
                        return None
                    may.add(v)
                continue
            r = re.fullmatch(r"return\b(.*);", inner, re.S)
            if r is None:
                return None
            c, v = known.truth(cond), known.truth(r.group(1))
            if c is False:
                continue
            if v is None:
                return None
            may.add(v)
            if c is True:
                return may.pop() if len(may) == 1 else None
            continue
        stmt, i = _one_statement(body, i)
        if stmt is None:
            return None
        r = re.fullmatch(r"\s*return\b(.*);", stmt, re.S)
        if r:
            v = known.truth(r.group(1))
            if v is None:
                return None
            may.add(v)
            return may.pop() if len(may) == 1 else None
        m = _DECL.fullmatch(stmt.strip().rstrip(";").strip())
        if m:
            declare(known, m.group(1), m.group(2) or m.group(3))
        elif "return" in stmt:
            return None
        else:
            _forget_assigned(known, stmt)
    return None


def _forget_assigned(known: Known, stmt: str, calls: bool = True) -> None:
    """A name assigned in ``stmt`` (``x = ...``, ``x += ...``, ``++x``) no longer has the value it was
    declared with; with ``calls``, nor a name passed whole to a call (``shrink(d)``: a reference the
    callee may assign)."""
    names = [m.group(1) or m.group(2) for m in
             re.finditer(r"(?<![\w.>])(\w+)\s*(?:[-+*/|&^]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*(\w+)", stmt)]
    if calls:
        names += re.findall(r"[(,]\s*&?\s*([A-Za-z_]\w*)\s*(?=[,)])", stmt)
    for name in names:
        for d in (known.ranks, known.sizes, known.values, known.leading):
            d.pop(name, None)


def _one_statement(body: str, i: int) -> tuple[str | None, int]:
    """The statement starting at ``body[i]`` (a ``{...}`` block or text to its ``;``) and the index after it."""
    while i < len(body) and body[i].isspace():
        i += 1
    if body[i:i + 1] == "{":
        depth = 0
        for j in range(i, len(body)):
            depth += {"{": 1, "}": -1}.get(body[j], 0)
            if depth == 0:
                return body[i:j + 1], j + 1
        return None, len(body)
    depth = 0
    for j in range(i, len(body)):
        depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(body[j], 0)
        if depth == 0 and body[j] == ";":
            return body[i:j + 1], j + 1
    return None, len(body)


__all__ = ["Known", "declare", "helper_value", "read_locals"]
