"""Function objects passed by name: namespace-scope objects, type aliases, and where they are
passed as arguments. Read as text over a masked source (comments, literals and preprocessor
lines blanked, offsets kept); extract/calls.py turns the uses into ``call`` facts.

Note [Functor objects passed by name]
A functor is not always made where it is passed. ATen also

* declares one object at namespace scope and passes it by name: cuda/Indexing.cu has
  ``static ReduceAdd reduce_add;`` and ``index_add_cuda_impl`` hands ``reduce_add`` to the
  ``indexFuncSmallIndex<<<...>>>(..., reduce_add, alpha_value)`` launches of its SMALL_INDEX /
  LARGE_INDEX macros; ``index_reduce_cuda_out`` passes ``reduce_multiply`` (etc.) on to a helper;
* names the functor type through an alias and makes a local object of it:
  cuda/ReduceMomentKernel.cu ``using ops_t = WelfordOps<...>; ops_t ops(...);
  gpu_reduce_kernel<...>(iter, ops, ...)``, or ``ops_t{...}`` right in the argument list.

Each place such an object (or ``alias{...}``) appears as a whole argument of a call or launch
inside a function becomes a ``call`` fact of the object's class (the alias resolved), detail
``object_arg``, ``arg`` = the object's name, at the line of that argument: the resolver follows
it like a functor made there (its operator(), or its reduce/combine for reduction functors).
The class is the one the object was declared with in the same file; an object declared in a
header and used elsewhere is not seen (docs/limits.md). Local objects count only when their
type is an alias declared in the same function: any other local (``Tensor out;``) would be noise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from atenmap.extract.nodes import WORD_BYTES

_TYPE = rb"(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*"
# using X = [typename] Foo<...>;   typedef Foo<...> X;   (each at a word start: see _word_matches)
# not a query: namespace-scope lines outside functions, macro bodies included (Note [Functor objects passed by name])
_USING = re.compile(rb"using\s+([A-Za-z_]\w*)\s*=\s*(?:typename\s+)?(" + _TYPE + rb")\s*(?:<[^;]*>)?\s*;")
# not a query: as _USING
_TYPEDEF = re.compile(rb"typedef\s+(?:typename\s+)?(" + _TYPE + rb")\s*(?:<[^;]*>)?\s+([A-Za-z_]\w*)\s*;")
# [static] [const] Foo[<...>] name;  / name{...};  on one line at namespace scope
# (not name(...): that is a function declaration)
# (the possessive indent and the lookahead change no match: they spare the engine retries at each line)
# not a query: as _USING
_DECL = re.compile(rb"^[ \t]*+(?=[A-Za-z_])(?:(?:static|const|constexpr|inline)[ \t]+)*(" + _TYPE
                   + rb")(?:<[^;{}()\n]*>)?[ \t]+([A-Za-z_]\w*)[ \t]*(?:;|\{[^{};\n]*\}[ \t]*;)", re.M)
_KEYWORDS = {b"return", b"using", b"typedef", b"namespace", b"struct", b"class", b"union", b"enum", b"friend",
             b"template", b"typename", b"extern", b"public", b"private", b"protected", b"operator", b"auto",
             b"void", b"bool", b"char", b"int", b"long", b"short", b"unsigned", b"signed", b"float", b"double",
             b"case", b"goto", b"delete", b"new", b"throw", b"else", b"do", b"const", b"static", b"virtual"}


@dataclass(frozen=True)
class ObjectUse:
    """``name`` (an object, or an alias made in place) passed as an argument at byte ``pos``;
    ``type`` the class it was declared with (alias resolved), as written without template arguments."""

    pos: int
    name: str
    type: str
    scope: int


def _word_matches(pattern: re.Pattern, text: bytes, word: bytes) -> Iterator[re.Match]:
    """The matches of ``\\b`` + ``pattern`` (as one compiled pattern's finditer) for a pattern that starts with
    ``word``: the same matches, found by ``bytes.find`` of the word (8x faster than the engine's
    try at every word boundary)."""
    i = text.find(word)
    while i >= 0:
        if i == 0 or text[i - 1] not in WORD_BYTES:
            m = pattern.match(text, i)
            if m is not None:
                yield m
                i = text.find(word, m.end())
                continue
        i = text.find(word, i + 1)


def aliases(masked: bytes, scope_at: Callable[[int], int]) -> dict[tuple[int, str], str]:
    """``(scope, alias) -> aliased type`` for ``using``/``typedef`` (scope -1: namespace level)."""
    out: dict[tuple[int, str], str] = {}
    for m in _word_matches(_USING, masked, b"using"):
        out.setdefault((scope_at(m.start()), m.group(1).decode()), m.group(2).decode())
    for m in _word_matches(_TYPEDEF, masked, b"typedef"):
        out.setdefault((scope_at(m.start()), m.group(2).decode()), m.group(1).decode())
    return out


def resolve_alias(name: str, scope: int, table: dict[tuple[int, str], str]) -> str:
    """The type an alias names, seen from ``scope`` (a function's own aliases, then the file's); ``name`` if none."""
    for _ in range(4):  # using a = b; using b = Foo<...>;
        t = table.get((scope, name)) or table.get((-1, name))
        if t is None or t == name:
            return name
        name = t
    return name


def object_uses(masked: bytes, scope_at: Callable[[int], int], span_of: Callable[[int], tuple[int, int]],
                table: dict[tuple[int, str], str], visible: dict[str, str]) -> list[ObjectUse]:
    """Every whole-argument use, inside a function, of a namespace-scope object, of a local object
    whose type is a local alias, and of ``alias{...}`` / ``alias(...)`` temporaries.
    ``visible``: the namespace-scope objects (namespace_objects; for a macro body, also those of
    the file it was expanded from)."""
    found: dict[tuple[int, str], str] = {(-1, var): typ for var, typ in visible.items()}
    local_aliases: dict[int, list[str]] = {}
    for scope, alias in table:
        if scope >= 0:
            local_aliases.setdefault(scope, []).append(alias)
    for scope, names in local_aliases.items():
        lo, hi = span_of(scope)
        for alias in names:
            typ = resolve_alias(alias, scope, table)
            if not could_be_functor(typ):
                continue
            for var in _declared_with(masked[lo:hi], alias.encode()):
                found.setdefault((scope, var.decode()), typ)
    uses: list[ObjectUse] = []
    if found:  # every object passed as a whole argument: [(,] name [,)]
        for pos, var in _whole_arguments(masked, {var.encode() for _, var in found}):
            at = scope_at(pos)
            typ = found.get((at, var)) or found.get((-1, var))
            if at >= 0 and typ:
                uses.append(ObjectUse(pos, var, typ, at))
    for scope, names in local_aliases.items():
        lo, hi = span_of(scope)
        for alias in names:
            typ = resolve_alias(alias, scope, table)
            if not could_be_functor(typ):
                continue
            for m in re.finditer(rb"[(,]\s*(" + re.escape(alias.encode()) + rb")\s*[{(]", masked[lo:hi]):
                uses.append(ObjectUse(lo + m.start(1), alias, typ, scope))
    return sorted(uses, key=lambda u: u.pos)


# Note [Objects and arguments as string code]
# A local object of an alias (``ops_t ops(...)``, ``ops_t ops;``) and an object passed as a whole
# argument (``(ops,`` ``, ops)``) are found by bytes.find of the alias or the object's name and a
# look at the punctuation around it. They replaced regexes of those shapes (built per alias, and
# one alternation of every name), with the same answers on every function of both test trees and
# fuzz (bench/regex_equal.py).
_BLANKS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_IDENT_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _declared_with(text: bytes, alias: bytes) -> list[bytes]:
    """The names declared ``alias name`` followed by ``(``, ``{`` or ``;`` (blanks between), the
    alias not the end of a longer name or qualifier; a read resumes after each."""
    out, at, resume = [], text.find(alias), 0
    while at >= 0:
        if at >= resume and (at == 0 or (text[at - 1] not in WORD_BYTES and text[at - 1] != 0x3A)):
            name = end = _blanks(text, at + len(alias))
            if name > at + len(alias) and name < len(text) and text[name] in _IDENT_FIRST:
                while end < len(text) and text[end] in WORD_BYTES:
                    end += 1
                after = _blanks(text, end)
                if after < len(text) and text[after] in b"({;":
                    out.append(text[name:end])
                    resume = after + 1
        at = text.find(alias, at + 1)
    return out


def _whole_arguments(text: bytes, names: set[bytes]) -> list[tuple[int, str]]:
    """``(byte, name)`` of each of ``names`` (identifiers) that is a whole argument: after ``(`` or
    ``,`` and before ``,`` or ``)``, blanks between; in the order of the text."""
    out = []
    for name in names:
        at = text.find(name)
        while at >= 0:
            end = at + len(name)
            before = at
            while before > 0 and text[before - 1] in _BLANKS:
                before -= 1
            after = _blanks(text, end)
            if before > 0 and text[before - 1] in b"(," and after < len(text) and text[after] in b",)":
                out.append((at, name.decode()))
            at = text.find(name, at + 1)
    return sorted(out)


def _blanks(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _BLANKS:
        at += 1
    return at


def namespace_objects(masked: bytes, scope_at: Callable[[int], int], table: dict[tuple[int, str], str],
                      in_class: Callable[[int], bool] = lambda pos: False,
                      outside: list[tuple[int, int]] | None = None) -> dict[str, str]:
    """``object -> type`` of the namespace-scope objects: not in a function, not a class member.
    ``outside``: the byte ranges no function holds (Scopes.outside), in order; only their lines
    are read (a _DECL match lies in one line, so a line no range touches has none to keep)."""
    out: dict[str, str] = {}
    for lo, hi in _whole_lines(masked, outside if outside is not None else [(0, len(masked))]):
        for m in _DECL.finditer(masked, lo, hi):
            typ, var = m.group(1), m.group(2)
            if (typ.split(b"::")[0] in _KEYWORDS or var in _KEYWORDS or scope_at(m.start(2)) >= 0
                    or in_class(m.start(2))):
                continue
            resolved = resolve_alias(typ.decode(), -1, table)
            if could_be_functor(resolved):
                out.setdefault(var.decode(), resolved)
    return out


def _whole_lines(text: bytes, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` (in order) widened to whole lines, from a line's start to the end of a line
    (its newline left out), merged where they meet: the same lines, each read once."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        lo = text.rfind(b"\n", 0, lo) + 1
        end = text.find(b"\n", max(hi - 1, lo))
        hi = len(text) if end < 0 else end
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def could_be_functor(typ: str) -> bool:
    """Not a scalar alias (``int64_t``, ``opmath_type<T>``) nor a std/c10 type."""
    last = typ.rsplit("::", 1)[-1]
    return not (last.endswith(("_t", "_type")) or typ.startswith(("std::", "c10::", "::std::")))
