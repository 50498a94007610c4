"""The structure of a demangled kernel name: qualified names, template arguments, functors, lambdas.

A demangled name is a sequence of qualified names and bracketed groups. A qualified name is a chain of
components joined by "::"; a component is an identifier (or operator, "(anonymous namespace)", or a
lambda "{lambda(float)#1}") optionally followed by template arguments "<...>" and a parameter list
"(...)" with cv-qualifiers ("operator()() const::{lambda...}"). Reader walks that structure with the
match table: template arguments are searched for functors and lambdas, parameter lists for lambdas
only (their types are the function's parameters, not the operator's code).

Note [Bounded work]
~~~~~~~~~~~~~~~~~~~
Names come from users and from trace files, so nothing here may be quadratic or raise. Input past
:data:`MAX_NAME_CHARS` is cut (with a note). Brackets are matched once (see Note [Bracket matching] in
atenmap/names.py); every later walk jumps over a bracketed group through that table, so each character
is looked at a constant number of times. Recursion into nested template arguments stops at
:data:`MAX_NESTING` levels, and the number and size of collected functors and lambdas is capped.
Unbalanced brackets (a cut name) close at the end of the enclosing group. Only an empty name raises
(:class:`~atenmap.errors.AtenmapError`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from atenmap.names import ANONYMOUS, NOT_BRACKET, OPENERS, OPERATOR_RE, group_end, match_brackets
from atenmap.resolve.kernelname.records import MAX_NESTING, LambdaRef

__all__ = ["Reader"]

_MAX_LAMBDAS = 64
_MAX_FUNCTORS = 256
_MAX_SIGNATURE_CHARS = 4096
_MAX_LAMBDA_TEXT_CHARS = 512

_ID_RE = re.compile(r"~?[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER_RE = re.compile(r"[0-9][0-9A-Za-z_.]*")
_CONVERSION_OPERATOR_RE = re.compile(r"operator ([A-Za-z_][A-Za-z0-9_]*)")
_CV_BEFORE_SCOPE_RE = re.compile(r" (?:const|volatile|&&|&)(?: (?:const|volatile))*(?=::)")
_LAMBDA_ORDINAL_RE = re.compile(r"#(\d{1,9})")

# Words that are never class names: fundamental types, cv-qualifiers, class-keys, literals.
_KEYWORDS = frozenset(
    """void bool char wchar_t char8_t char16_t char32_t short int long signed unsigned float double
    __int64 __int128 __int8 __int16 __int32 const volatile struct class union enum typename template
    true false nullptr decltype sizeof alignof noexcept throw auto restrict __restrict__""".split()
)
# Names that are dtypes or vector types, not code: kept out of ``functors``.
_VALUE_TYPE_RE = re.compile(
    r"(?:c10|at)::(?:Half|BFloat16|complex|Float8_\w+|Float4_\w+|qu?int\w+|bits\w+)"
    r"|cutlass::(?:half_t|bfloat16_t|tfloat32_t|float_e\w+|complex|uint\w+|int\w+)"
    r"|__half2?|__nv_bfloat162?|__nv_fp8\w*|half2?|nv_bfloat162?"
    r"|(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]|dim3|T\d+"
)


@dataclass
class _Comp:
    head: str  # "reduce_kernel", "operator()", "(anonymous namespace)", "{lambda(float)#1}"
    kind: str  # "id" | "op" | "anon" | "lambda" | "unnamed"
    start: int
    end: int  # after the head
    targs: tuple[int, int] | None = None  # interior of "<...>"
    params: tuple[int, int] | None = None  # interior of "(...)"
    lambda_sig: tuple[int, int] | None = None  # interior of the lambda's "(...)"
    ordinal: int = 0


@dataclass
class _Name:
    comps: list[_Comp]
    end: int
    dangling: bool  # ended in "::" with nothing readable after it ("at::native::...")

    def qualified(self, upto: int | None = None) -> str:
        return "::".join(c.head for c in self.comps[:upto])


class Reader:
    """Walks one name text; collects functors and lambdas. See Note [Bounded work]."""

    def __init__(self, s: str):
        self.s = s
        self.match = match_brackets(s)
        self.functors: dict[str, None] = {}
        self.lambdas: dict[tuple[str, tuple[str, ...]], tuple[int, LambdaRef]] = {}
        self.too_deep = False
        self.cut_at = len(s) + 1  # set to len(s) when the text was cut: a head ending there may be partial

    # -- reading -------------------------------------------------------------------------------------

    def _is_anon(self, i: int) -> bool:
        return self.s.startswith(ANONYMOUS, i)

    def _head(self, i: int, hi: int) -> _Comp | None:
        s = self.s
        if i >= hi:
            return None
        c = s[i]
        if c.isalpha() or c in "_$~":
            m = _ID_RE.match(s, i)
            if m is None or m.end() > hi:
                return None
            if m.group() == "operator":
                op = OPERATOR_RE.match(s, i)
                if op and op.end() <= hi:
                    return _Comp("operator" + op.group(1), "op", i, op.end())
                conv = _CONVERSION_OPERATOR_RE.match(s, i)
                if conv and conv.end() <= hi:
                    return _Comp(conv.group(), "op", i, conv.end())
            return _Comp(m.group(), "id", i, m.end())
        if c == "(" and self._is_anon(i):
            return _Comp(ANONYMOUS, "anon", i, i + len(ANONYMOUS))
        if c == "{" and self.match[i] != NOT_BRACKET:
            end = group_end(self.match, i, hi)
            stop = min(end + 1, hi)
            if s.startswith("lambda(", i + 1):
                p = i + len("{lambda")
                p_end = group_end(self.match, p, end)
                num = _LAMBDA_ORDINAL_RE.match(s, p_end + 1) if p_end < end else None
                return _Comp(
                    _clip(s[i:stop], _MAX_LAMBDA_TEXT_CHARS),
                    "lambda",
                    i,
                    stop,
                    lambda_sig=(p + 1, p_end),
                    ordinal=int(num.group(1)) if num and num.end() <= end else 0,
                )
            if s.startswith("unnamed type", i + 1):
                return _Comp(_clip(s[i:stop], _MAX_LAMBDA_TEXT_CHARS), "unnamed", i, stop)
        return None

    def read_name(self, i: int, hi: int, top: bool = False) -> _Name | None:
        """The qualified name starting at ``i``; ``top``: a space may stand before the parameter list."""
        s, match = self.s, self.match
        comps: list[_Comp] = []
        j = i
        dangling = False
        while True:
            comp = self._head(j, hi)
            if comp is None:
                dangling = bool(comps)
                break
            comps.append(comp)
            j = comp.end
            if j < hi and s[j] == "<" and match[j] != NOT_BRACKET and comp.kind in ("id", "op"):
                end = group_end(match, j, hi)
                comp.targs = (j + 1, end)
                j = min(end + 1, hi)
            k = j
            if top:
                while k < hi and s[k] == " ":
                    k += 1
            if k < hi and s[k] == "(" and match[k] != NOT_BRACKET and not self._is_anon(k) and comp.kind != "anon":
                end = group_end(match, k, hi)
                comp.params = (k + 1, end)
                j = min(end + 1, hi)
            cv = _CV_BEFORE_SCOPE_RE.match(s, j)
            if cv and cv.end() + 2 <= hi:
                j = cv.end()
            if j + 2 <= hi and s.startswith("::", j):
                j += 2
                continue
            break
        if not comps:
            return None
        return _Name(comps, j, dangling)

    def _name_starts(self, i: int) -> bool:
        s = self.s
        c = s[i]
        if c == "(":
            return self._is_anon(i)
        if c == "{":
            return s.startswith("lambda(", i + 1) or s.startswith("unnamed type", i + 1)
        return c.isalpha() or c in "_$~"

    def names(self, lo: int, hi: int, top: bool = False) -> list[_Name]:
        """The qualified names at the outer level of [lo, hi); bracketed groups between them skipped."""
        out: list[_Name] = []
        for kind, a, b in self._items(lo, hi, top):
            if kind == "name":
                out.append(a)
        return out

    def _items(self, lo: int, hi: int, top: bool = False):
        """Yield ("name", _Name, None) and ("group", start, end) at the outer level of [lo, hi)."""
        s, match = self.s, self.match
        i = lo
        while i < hi:
            c = s[i]
            if self._name_starts(i):
                if c.isalpha() or c in "_$":
                    m = _ID_RE.match(s, i)
                    word_end = m.end() if m else i + 1
                    if m and m.group() in _KEYWORDS and not s.startswith("::", word_end):
                        i = word_end
                        continue
                name = self.read_name(i, hi, top)
                if name is not None and name.end > i:
                    yield ("name", name, None)
                    i = name.end
                    continue
                i += 1
                continue
            if c in OPENERS and match[i] != NOT_BRACKET:
                end = group_end(match, i, hi)
                yield ("group", i, end)
                i = end + 1
                continue
            if c.isdigit():
                m = _NUMBER_RE.match(s, i)
                i = m.end() if m else i + 1
                continue
            i += 1

    # -- collecting ----------------------------------------------------------------------------------

    def scan(self, lo: int, hi: int, depth: int, collect: bool) -> None:
        """Collect lambdas (and, if ``collect``, functors) from [lo, hi) and everything nested in it."""
        if depth > MAX_NESTING:
            self.too_deep = True
            return
        for kind, a, b in self._items(lo, hi):
            if kind == "name":
                self.visit(a, depth, collect)
            else:  # a bare group: a cast "(int)4", a function type, "<...>" a user wrote
                self.scan(a + 1, b, depth + 1, collect and self.s[a] == "<")

    def visit(self, name: _Name, depth: int, collect: bool, is_kernel: bool = False) -> None:
        comps = name.comps
        first_lambda = next((k for k, c in enumerate(comps) if c.kind == "lambda"), None)
        if first_lambda is not None:
            self._add_lambda(name, first_lambda)
            prefix = comps[:first_lambda]
            # The class of a member function that holds a lambda is code too: sum_functor<...>::operator().
            if collect and len(prefix) >= 2 and (prefix[-1].kind == "op" or prefix[-2].targs is not None):
                self._add_functor(name.qualified(first_lambda - 1))
        elif collect and not is_kernel and not name.dangling and comps[-1].end < self.cut_at:
            self._add_functor(name.qualified())
        for c in comps:
            if c.targs:
                self.scan(c.targs[0], c.targs[1], depth + 1, collect)
            if c.params:
                self.scan(c.params[0], c.params[1], depth + 1, False)
            if c.lambda_sig:
                self.scan(c.lambda_sig[0], c.lambda_sig[1], depth + 1, False)

    def _add_functor(self, qualname: str) -> None:
        if len(self.functors) >= _MAX_FUNCTORS or qualname in self.functors:
            return
        first = qualname.split("::", 1)[0]
        if not qualname or first == "std" or qualname.startswith("cuda::std::") or _VALUE_TYPE_RE.fullmatch(qualname):
            return
        self.functors[qualname] = None

    def _add_lambda(self, name: _Name, first: int) -> None:
        if len(self.lambdas) >= _MAX_LAMBDAS:
            return
        comps = name.comps
        prefix = comps[:first]
        chain = tuple(c.head for c in comps[first:] if c.kind == "lambda")
        enclosing = name.qualified(first)
        enclosing_name = ""
        signature = ""
        wraps = False
        if prefix:
            fn = prefix[-1]
            if fn.targs is not None:
                inner = self.s[fn.targs[0]:fn.targs[1]]
                wraps = "{lambda" in inner or "Functor" in inner or "functor" in inner
            enclosing_name = prefix[-2].head if fn.kind == "op" and len(prefix) >= 2 else fn.head
            if fn.params is not None:
                lo, hi = fn.params
                closed = hi < len(self.s) and self.s[hi] == ")"
                signature = _clip("(" + self.s[lo:hi] + (")" if closed else ""), _MAX_SIGNATURE_CHARS)
        key = (enclosing, chain)
        if key not in self.lambdas:
            ref = LambdaRef(enclosing, enclosing_name, comps[first].ordinal, signature, chain, wraps)
            self.lambdas[key] = (comps[first].start, ref)

    def sorted_lambdas(self) -> tuple[LambdaRef, ...]:
        return tuple(ref for _, ref in sorted(self.lambdas.values(), key=lambda item: item[0]))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
