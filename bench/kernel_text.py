"""A plain reading of a demangled CUDA kernel name, for the benches' EXPECTED side (issue 32, item 5).

The oracles' truth must not come from atenmap's code: bench_truth once split the oracle's names with
atenmap's own parser, so a name the parser could not read left the denominator instead of counting
as a miss. This module reads the three things the scorers need from the name's text alone, by bracket
depth, with no knowledge of any library:

* ``function(name)``: the kernel's base name -- the last component of the qualified name before its
  top-level parameter list, template arguments removed (``void at::native::reduce_kernel<512, ...>(...)``
  -> ``reduce_kernel``; ``modified_bessel_i1_forward_vectorized4_kernel`` -> itself);
* ``qualifier(name)``: the scope written before that base name (``at::native::(anonymous namespace)``);
* ``functors(name)`` / ``lambdas(name)``: the class names written inside the template arguments,
  qualified, without their arguments (value types and numbers left out), and the functions that
  enclose the lambdas written there (``at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}``
  -> ``sqrt_kernel_cuda``).

memcpy / memset are not read here: the oracle records them (a pair's ``kind``).
"""
from __future__ import annotations

import re

ANON = "(anonymous namespace)"
# Words that are C++ keywords or fundamental types, never a class name.
KEYWORDS = frozenset("""void bool char short int long signed unsigned float double const volatile struct class
    union enum true false nullptr __int64 __int128 wchar_t char16_t char32_t""".split())
# Value types (dtypes, CUDA vector types): data a kernel runs on, not code.
VALUE_TYPE = re.compile(r"(?:c10|at)::(?:Half|BFloat16|complex|Float8_\w+|qu?int\w+)\Z|__half2?\Z|__nv_bfloat162?\Z"
                        r"|(?:u?char|u?short|u?int|u?long|longlong|float|double)[1-4]\Z")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")  # not a literal's suffix (3ul)


def _top_level(text: str) -> str:
    """``text`` with everything inside ``<...>`` and ``(...)`` removed (the brackets kept, emptied)."""
    out, depth = [], 0
    for c in text:
        if c in "<(":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c in ">)":
            depth = max(0, depth - 1)
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def _head(name: str) -> str:
    """The qualified name before the top-level parameter list: ``at::native::(anon)::k``."""
    text = " ".join(name.split()).replace(ANON, "@anon@")
    flat = _top_level(text)
    head = flat.split("(", 1)[0].replace("<>", "")
    head = head.split()[-1] if head.split() else ""
    return head.replace("@anon@", ANON)


def function(name: str) -> str:
    return _head(name).rsplit("::", 1)[-1]


def qualifier(name: str) -> str:
    head = _head(name)
    return head.rsplit("::", 1)[0] if "::" in head else ""


def _template_args(name: str) -> str:
    """The text inside the main function's template brackets (``''`` when it has none)."""
    text = " ".join(name.split())
    depth, start = 0, None
    for i, c in enumerate(text):
        if c == "(" and depth == 0 and not text.startswith(ANON, i):
            break  # the parameter list: template arguments come before it
        if c == "<":
            if depth == 0:
                start = i + 1
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0 and start is not None:
                return text[start:i]
        elif c == "(" and text.startswith(ANON, i):
            continue
    return ""


def _empty_parens(text: str) -> str:
    """``text`` with every parenthesised list emptied: a lambda's scope's parameters name no functor."""
    out, depth = [], 0
    for c in text:
        if c == "(":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def _back(text: str, end: int, open_: str, close: str) -> int:
    """The index of the ``open_`` that matches the ``close`` at ``text[end]`` (-1 when none)."""
    depth = 0
    for i in range(end, -1, -1):
        if text[i] == close:
            depth += 1
        elif text[i] == open_:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _forward(text: str, start: int, open_: str, close: str) -> int:
    """The index of the ``close`` that matches the ``open_`` at ``text[start]`` (the end when none)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def lambdas(name: str) -> list[str]:
    """The functions enclosing the lambdas of the template arguments: ``f<T>(...)::{lambda`` -> ``f``. A
    lambda inside a lambda (``...::{lambda()#1}::operator()() const::{lambda(float)#1}``) is its
    outer lambda's, already counted."""
    args = _template_args(name).replace(ANON, "@anon@")
    out = []
    for m in re.finditer(r"::\{lambda", args):
        i = m.start() - 1
        if args[: i + 1].endswith(" const"):
            i -= len(" const")
        if i < 0 or args[i] != ")":
            continue
        i = _back(args, i, "(", ")") - 1
        if i >= 0 and args[i] == ">":
            i = _back(args, i, "<", ">") - 1
        if args[: i + 1].endswith("}::operator()"):
            continue  # a lambda's own call operator: the outer lambda's, already counted
        if args[: i + 1].endswith("::operator()"):  # Class<T>::operator()<U>(...): the class's
            i -= len("::operator()")
            if i >= 0 and args[i] == ">":
                i = _back(args, i, "<", ">") - 1
        word = re.search(r"[A-Za-z_]\w*\Z", args[: i + 1])
        if word and word.group(0) != "operator":
            out.append(word.group(0))
    return list(dict.fromkeys(out))


def functors(name: str) -> list[str]:
    """The qualified class names of the template arguments, without their own arguments; a name
    followed by ``(`` is a function (a lambda's scope), not a class."""
    args = _empty_parens(_template_args(name).replace(ANON + "::", ""))
    out = []
    for m in _IDENT.finditer(args):
        q = m.group(0)  # (a name nested in a skipped <...> is met again by finditer: it is inside)
        before = args[m.start() - 1] if m.start() else ""
        end = m.end()
        while args[end:end + 1] == "<":  # skip its template arguments: f<T>(...) is a function
            end = _forward(args, end, "<", ">") + 1
            more = _IDENT.match(args, end + 2) if args[end:end + 2] == "::" else None
            if more and more.group(0) == "operator":  # Class<T>::operator()(...): the class is a functor
                break
            if more:  # dists<float>::zero: the class is the last name
                q, end = q + "::" + more.group(0), more.end()
        after = args[end:end + 1]
        if (before and before in ":{#") or after == "(" or q.split("::")[-1] in KEYWORDS or VALUE_TYPE.match(q):
            continue
        if q.startswith("lambda") and before == "{":
            continue
        out.append(q)
    return list(dict.fromkeys(out))
