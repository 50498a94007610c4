"""C++ names as ATen writes them and as tools print them: namespaces and template argument lists.

The one place that says which namespaces are inline (not part of a name a user would write) and how
template arguments are removed or split. Pure text; used by the resolver, the kernel lookup and the
kernel-name parser alike.

Note [Inline namespaces]
~~~~~~~~~~~~~~~~~~~~~~~~
ATen compiles its CPU kernels once per CPU capability: ``native/cpu/*.cpp`` open
``namespace CPU_CAPABILITY``, a macro that becomes ``DEFAULT``, ``AVX2``, ``AVX512`` (and ``VSX``,
``ZVECTOR``, ``SVE256`` on other machines) in each copy. Helpers hide in ``namespace { }`` (printed
``(anonymous namespace)`` by the demangler, ``<unnamed>`` by Nsight Compute) and in ``detail``. None of
these is written where the name is used (``at::native::add_kernel`` calls the ``CPU_CAPABILITY``
copy), so names are compared with them removed: :func:`clean_namespace`.

Note [Bracket matching]
~~~~~~~~~~~~~~~~~~~~~~~
``<`` is both a bracket and an operator, and a name cut short by a tool leaves brackets open. Brackets
are matched in one pass with a stack (:func:`match_brackets`); every later walk jumps over a bracketed
group through that table, so each character is looked at a constant number of times. ``operator<``
and friends and ``->`` are not brackets; a closer that does not fit the innermost opener first ends any
unclosed ``<`` above its own opener (a cut or a less-than); a stray closer is ignored; an unclosed
opener runs to the end of its enclosing group.
"""
from __future__ import annotations

import re

__all__ = [
    "ANONYMOUS",
    "INLINE_NAMESPACES",
    "NOT_BRACKET",
    "OPENERS",
    "OPERATOR_RE",
    "UNCLOSED",
    "clean_namespace",
    "group_end",
    "match_brackets",
    "split_at_commas",
    "split_template_args",
    "strip_templates",
]

ANONYMOUS = "(anonymous namespace)"
# See Note [Inline namespaces].
INLINE_NAMESPACES = frozenset({"CPU_CAPABILITY", ANONYMOUS, "detail", "DEFAULT", "AVX2", "AVX512"})


def clean_namespace(ns: str) -> str:
    """A namespace (or a qualified name without template arguments) with its inline namespaces and
    empty components removed: ``at::native::(anonymous namespace)::CPU_CAPABILITY`` -> ``at::native``.
    See Note [Inline namespaces]."""
    return "::".join(p for p in ns.split("::") if p and p not in INLINE_NAMESPACES)


# ---- brackets: see Note [Bracket matching] ----------------------------------------------------------

NOT_BRACKET = -2  # in the match table: not a bracket (any other character, operator<, ->, a stray closer)
UNCLOSED = -1  # an opener whose partner never came: the group runs to the end of its enclosing group
OPENERS = "<([{"
_PARTNER = {">": "<", ")": "(", "]": "[", "}": "{"}
OPERATOR_RE = re.compile(
    r"operator\s*(\(\)|\[\]|->\*|->|<=>|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,](?:=)?)"
)
_BRACKET_TOKEN_RE = re.compile(r"\boperator\b|[<>()\[\]{}]")


def match_brackets(s: str) -> list[int]:
    """For every position of ``s``: the index of the partner bracket, UNCLOSED, or NOT_BRACKET. Linear;
    each opener is pushed and popped once. See Note [Bracket matching]."""
    match = [NOT_BRACKET] * len(s)
    stack: list[int] = []
    skip_to = 0
    for tok in _BRACKET_TOKEN_RE.finditer(s):
        i = tok.start()
        if i < skip_to:
            continue
        c = s[i]
        if c == "o":  # the word "operator"
            m = OPERATOR_RE.match(s, i)
            if m:
                skip_to = m.end()
            continue
        if c in OPENERS:
            stack.append(i)
            match[i] = UNCLOSED
            continue
        if c == ">" and i > 0 and s[i - 1] == "-":
            continue
        want = _PARTNER[c]
        if c != ">":
            while stack and s[stack[-1]] == "<" and want != "<":
                stack.pop()  # stays UNCLOSED
        if stack and s[stack[-1]] == want:
            j = stack.pop()
            match[i], match[j] = j, i
    return match


def group_end(match: list[int], i: int, hi: int) -> int:
    """Index of the closer of the group opened at ``i`` (``hi`` if unclosed: it runs to the range end)."""
    j = match[i]
    return j if 0 <= j < hi else hi


def split_at_commas(s: str, match: list[int], lo: int, hi: int) -> list[str]:
    """``s[lo:hi]`` split at the commas outside brackets (``match`` is ``match_brackets(s)``)."""
    parts: list[str] = []
    start = i = lo
    while i < hi:
        c = s[i]
        if c in OPENERS and match[i] != NOT_BRACKET:
            if match[i] == UNCLOSED:
                break  # the rest of the range is inside this group
            i = group_end(match, i, hi) + 1
            continue
        if c == ",":
            parts.append(s[start:i].strip())
            start = i + 1
        i += 1
    last = s[start:hi].strip()
    if last or parts:
        parts.append(last)
    return parts


def split_template_args(text: str) -> list[str]:
    """Split a template argument list at its depth-0 commas; each argument stripped.

    ``text`` is the list with or without its angle brackets: ``"<4, Foo<a, b>, std::array<char*, 3ul> >"``
    and ``"4, Foo<a, b>, std::array<char*, 3ul>"`` both give ``["4", "Foo<a, b>", "std::array<char*, 3ul>"]``.
    Commas inside ``<>``, ``()``, ``[]`` and ``{}`` (lambda signatures) do not split. An unclosed list (a
    cut name) runs to the end of the text. Linear time.
    """
    s = text.strip()
    if not s:
        return []
    match = match_brackets(s)
    lo, hi = 0, len(s)
    if s[0] == "<" and (match[0] == len(s) - 1 or match[0] == UNCLOSED):
        lo, hi = 1, (match[0] if match[0] >= 0 else len(s))
    return split_at_commas(s, match, lo, hi)


def strip_templates(qualname: str) -> str:
    """Remove every template argument list: ``"at::native::sum_functor<float, float, float>::operator()"`` ->
    ``"at::native::sum_functor::operator()"``. ``operator<`` and friends are kept; Nsight Compute's
    ``<unnamed>`` becomes ``(anonymous namespace)``. An unclosed list (a cut name) is removed to the end.
    Linear time.
    """
    s = qualname.replace("<unnamed>::", ANONYMOUS + "::")
    match = match_brackets(s)
    out: list[str] = []
    start = 0
    i = s.find("<")
    while i != -1:
        if match[i] == UNCLOSED:
            out.append(s[start:i])
            start = len(s)
            break
        if match[i] >= 0:
            out.append(s[start:i])
            start = match[i] + 1
            i = s.find("<", start)
        else:
            i = s.find("<", i + 1)
    out.append(s[start:])
    return "".join(out)
