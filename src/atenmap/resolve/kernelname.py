"""Kernel names as profilers print them -> a structured :class:`KernelName`.

Users paste GPU kernel names from torch.profiler tables and chrome traces, Nsight Systems, Nsight Compute
and Perfetto. :func:`parse_kernel_name` turns one such string into a record the kernel lookup can use:

* for a kernel of ATen (or any other C++ kernel): the ``__global__`` function, its namespaces, its
  template arguments, and the functors and lambdas named inside them — those name the operator's own
  code (``CUDAFunctor_add``, ``exp_kernel_cuda(...)::{lambda()#2}``), which is what the lookup searches for;
* for a kernel of a library (cuBLAS, cuDNN, NCCL, CUB, Triton from torch.compile, ...): which library,
  from the declarative table :data:`LIBRARY_RULES`; the function and qualname are kept all the same
  (CUB, flash-attention and mem-efficient attention kernels are launched from ATen source);
* for the memory operations a profiler shows beside kernels (``Memcpy DtoD (Device -> Device)``,
  ``Memset (Device)``, ``cudaMemcpyAsync``): kind ``memcpy`` / ``memset`` and a sentence saying what
  usually issues them.

Pure text work: no index, no torch, no tree-sitter. Only :func:`demangle` leaves Python (see
Note [Demangling]).

Sections:
  1. records            LambdaRef, KernelName
  2. demangling         demangle, demangle_many
  3. bracket text       split_template_args, strip_templates (linear helpers the lookup reuses)
  4. name structure     qualified names, template arguments, functors, lambdas
  5. non-kernels        memcpy / memset / host-side names
  6. libraries          LIBRARY_RULES, each with the public profile that showed the real name
  7. parse_kernel_name

Note [Names as tools print them]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The same kernel reaches us in several spellings, and all of them parse to the same record:
  * the GNU demangler (torch.profiler, Nsight Systems, c++filt):
    ``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)``
  * Nsight Compute: values with their types, ``>>`` closers, ``<unnamed>`` for anonymous namespaces and
    ``T1``-style placeholders: ``...<(int)4, at::native::<unnamed>::offset_t, ...>(int, T2, T3)``
  * nvprof: ``gemv2N_kernel_val<float, float, float, int=128, ...>``
  * cut short: torch.profiler tables cut names at ``max_name_column_width`` (55 by default) and append
    ``...``; nsys cuts with ``…``; users abbreviate with ``<...>`` and ``(...)``. Such a record has
    ``truncated=True`` and describes the visible part (``function`` may be a prefix of the real name).
  * mangled (``_ZN2at6native...``) when the tool did not demangle.
  * with decorations: whole table rows (numbers before/after the name) and Nsight Compute's launch
    suffix ``(1024, 1, 1)x(256, 1, 1), Context 1, Stream 7`` are dropped, with a note.
``template_args`` keep the text as printed (``(int)4`` stays ``(int)4``); ``<unnamed>`` becomes
``(anonymous namespace)`` everywhere so that ``qualname`` is the same whichever tool printed it.

Note [Lambda ordinals]
~~~~~~~~~~~~~~~~~~~~~~
``{lambda(float)#1}`` is how the demangler prints an unnamed closure type. Per the Itanium C++ ABI
(5.1.8, closure types), the number counts the closures *with the same parameter list* in the same
enclosing scope, in lexical order, starting at 1. So ``direct_copy_kernel_cuda(...)::{lambda()#3}`` is
the third ``[&]() {...}`` / ``[&] {...}`` lambda written directly in the body of
``direct_copy_kernel_cuda`` — usually an ``AT_DISPATCH_*`` case — and ``{lambda(float)#1}`` nested in
it is the first lambda taking one ``float`` inside that one. :class:`LambdaRef` keeps the whole chain.

Note [Bounded work]
~~~~~~~~~~~~~~~~~~~
Names come from users and from trace files, so nothing here may be quadratic or raise. Input past
:data:`MAX_NAME_CHARS` is cut (with a note). Brackets are matched in one pass with a stack
(:func:`_match_brackets`); every later walk jumps over a bracketed group through that table, so each
character is looked at a constant number of times. Recursion into nested template arguments stops at
:data:`MAX_NESTING` levels, and the number and size of collected functors and lambdas is capped.
Unbalanced brackets (a cut name) close at the end of the enclosing group. Only an empty name raises
(:class:`~atenmap.errors.AtenmapError`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Iterable

from atenmap.errors import AtenmapError

__all__ = [
    "KINDS",
    "LIBRARY_RULES",
    "MAX_NAME_CHARS",
    "MAX_NESTING",
    "KernelName",
    "LambdaRef",
    "LibraryRule",
    "demangle",
    "demangle_many",
    "parse_kernel_name",
    "split_template_args",
    "strip_templates",
]

MAX_NAME_CHARS = 64 * 1024  # longer input is cut: real kernel names stay well below 20 KiB
MAX_NESTING = 100  # bracket levels analysed; real names nest about 15 deep
_MAX_LAMBDAS = 64
_MAX_FUNCTORS = 256
_MAX_SIGNATURE_CHARS = 4096
_MAX_LAMBDA_TEXT_CHARS = 512

KINDS = ("kernel", "library", "memcpy", "memset", "unknown")

# =====================================================================================================
# 1. Records
# =====================================================================================================


@dataclass(frozen=True)
class LambdaRef:
    """A lambda named in a kernel's template arguments: where it is written. See Note [Lambda ordinals].

    For ``at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float)#1}``:
    ``enclosing="at::native::exp_kernel_cuda"``, ``enclosing_name="exp_kernel_cuda"``, ``ordinal=2``,
    ``signature="(at::TensorIteratorBase&)"``, ``chain=("{lambda()#2}", "{lambda(float)#1}")``.

    A lambda written inside a call operator records class and method both:
    ``at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}``
    gives ``enclosing="at::native::sum_functor::operator()"`` and ``enclosing_name="sum_functor"`` — the
    name to search for in the source, since ``operator()`` alone finds nothing. Template arguments are
    removed from ``enclosing``; ``signature`` is the enclosing function's parameter list as printed.
    """

    enclosing: str
    enclosing_name: str
    ordinal: int  # the outermost lambda's #N (1-based, as printed); 0 where the text did not show it
    signature: str
    chain: tuple[str, ...] = ()  # every lambda level, outermost first; the ``operator()() const`` between them dropped

    def __str__(self) -> str:
        return "::".join([f"{self.enclosing}{self.signature}", *self.chain])


@dataclass(frozen=True)
class KernelName:
    """One kernel name, parsed. ``raw`` is kept verbatim; every other field is derived from it.

    ``kind`` is one of :data:`KINDS`. ``kernel``: a kernel not matched by :data:`LIBRARY_RULES` (ATen's,
    or an extension's); ``library``: matched, ``library`` says which; ``unknown``: not a GPU kernel name
    we could read (host-side API names, operator names, text) — ``function`` is then a best guess or "".
    """

    raw: str
    demangled: str  # decorations removed, demangled if it was mangled (``_Z...``), whitespace runs collapsed
    kind: str
    function: str  # unqualified __global__ function, e.g. "vectorized_elementwise_kernel"
    qualname: str  # "at::native::vectorized_elementwise_kernel"; no template arguments
    namespaces: tuple[str, ...]  # qualifiers before the function (namespaces, or a class)
    template_args: tuple[str, ...]  # the function's own template arguments, split at depth-0 commas
    functors: tuple[str, ...]  # class names inside the template arguments, qualified, without their arguments
    lambdas: tuple[LambdaRef, ...]  # in order of appearance of their first lambda; no duplicates
    library: str | None
    detail: str  # one short sentence for people
    truncated: bool = False  # the tool cut or abbreviated the name; fields describe the visible part
    notes: tuple[str, ...] = ()  # what was dropped, cut, or could not be done

    def __str__(self) -> str:
        return self.demangled


# =====================================================================================================
# 2. Demangling
# =====================================================================================================
#
# Note [Demangling]
# ~~~~~~~~~~~~~~~~~
# Itanium-mangled names (``_Z...``) are demangled by ``c++filt`` when it is on PATH: one subprocess per
# batch (:func:`demangle_many`), and a demangler crash on hostile input cannot take the process down.
# Without c++filt, libstdc++'s ``__cxa_demangle`` is called through ctypes (present on any Linux with a
# C++ runtime; no new dependency). Both are libiberty's demangler and print identical text. If neither
# can demangle a name, the name comes back unchanged, and parse_kernel_name reads the leading qualified
# name straight from the mangling (:func:`_partial_demangle`) so the lookup still has a function.

_MANGLED_RE = re.compile(r"_Z[A-Za-z0-9_$.]+\Z")


def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name; ``name`` unchanged if it is not one or fails.

    >>> demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_")
    'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)'
    """
    return demangle_many([name])[0]


def demangle_many(names: Iterable[str]) -> list[str]:
    """:func:`demangle` for many names at once (one ``c++filt`` run); same order, same length."""
    out = list(names)
    wanted: dict[str, list[int]] = {}
    for i, name in enumerate(out):
        s = name.strip()
        if len(s) <= MAX_NAME_CHARS and _MANGLED_RE.match(s):
            wanted.setdefault(s, []).append(i)
    if not wanted:
        return out
    keys = list(wanted)
    for key, text in zip(keys, _demangle_batch(tuple(keys))):
        if text is not None:
            for i in wanted[key]:
                out[i] = text
    return out


@functools.lru_cache(maxsize=256)
def _demangle_batch(names: tuple[str, ...]) -> list[str | None]:
    got = _demangle_cxxfilt(names)
    if got is not None:
        return got
    return [_demangle_cxa(n) for n in names]


def _demangle_cxxfilt(names: tuple[str, ...]) -> list[str | None] | None:
    """None where c++filt is missing or misbehaved as a whole; per name, None where it could not demangle."""
    exe = shutil.which("c++filt")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "-n"],  # -n: no underscore stripping (the default on ELF; not on Mach-O)
            input="\n".join(names) + "\n",
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0:
        return None
    lines = proc.stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(names):
        return None
    return [None if text == name else text for text, name in zip(lines, names)]


@functools.lru_cache(maxsize=1)
def _cxa_functions():
    """(``__cxa_demangle``, ``free``) from the C++ runtime, or None."""
    candidates = ["libstdc++.so.6", ctypes.util.find_library("stdc++"), "libc++abi.so.1", ctypes.util.find_library("c++abi")]
    for lib in candidates:
        if not lib:
            continue
        try:
            fn = getattr(ctypes.CDLL(lib), "__cxa_demangle")
            libc = ctypes.CDLL(None)
            free = libc.free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.restype = None
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


def _demangle_cxa(name: str) -> str | None:
    fns = _cxa_functions()
    if fns is None:
        return None
    fn, free = fns
    status = ctypes.c_int(0)
    ptr = fn(name.encode("ascii", "replace"), None, None, ctypes.byref(status))
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        free(ptr)


_SOURCE_NAME_LEN_RE = re.compile(r"\d{1,6}")


def _partial_demangle(mangled: str) -> str | None:
    """The leading qualified name of a mangled function: ``_ZN2at6native4fooI...`` -> ``at::native::foo``.

    Reads only ``<source-name>`` pieces of the first nested name (and ``St``); stops at anything else.
    Enough for the lookup when the full demangling failed (e.g. a mangled name cut short by a table).
    """
    s = mangled
    if not s.startswith("_Z"):
        return None
    i = 2
    if s.startswith("L", i):  # internal linkage
        i += 1
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":  # cv- and ref-qualifiers of a member function
            i += 1
    parts: list[str] = []
    while i < len(s):
        if s.startswith("St", i):
            parts.append("std")
            i += 2
            continue
        m = _SOURCE_NAME_LEN_RE.match(s, i)
        if not m:
            break
        n = int(m.group())
        ident = s[m.end() : m.end() + n]
        if n == 0 or len(ident) != n:
            break
        parts.append("(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident)
        i = m.end() + n
        if not nested:
            break
    return "::".join(parts) or None


# =====================================================================================================
# 3. Bracket text
# =====================================================================================================

_NOT_BRACKET = -2  # in the match table: not a bracket (any other character, operator<, ->, a stray closer)
_UNCLOSED = -1  # an opener whose partner never came: the group runs to the end of its enclosing group
_OPENERS = "<([{"
_PARTNER = {">": "<", ")": "(", "]": "[", "}": "{"}
_OPERATOR_RE = re.compile(
    r"operator\s*(\(\)|\[\]|->\*|->|<=>|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,](?:=)?)"
)
_BRACKET_TOKEN_RE = re.compile(r"\boperator\b|[<>()\[\]{}]")


def _match_brackets(s: str) -> list[int]:
    """For every position of ``s``: the index of the partner bracket, _UNCLOSED, or _NOT_BRACKET. Linear.

    ``<`` and ``>`` count as brackets except in ``operator<`` and friends and in ``->``. A closer that
    does not fit the innermost opener first ends any unclosed ``<`` above its own opener (a cut or a
    less-than); a stray closer is ignored. Each opener is pushed and popped once.
    """
    match = [_NOT_BRACKET] * len(s)
    stack: list[int] = []
    skip_to = 0
    for tok in _BRACKET_TOKEN_RE.finditer(s):
        i = tok.start()
        if i < skip_to:
            continue
        c = s[i]
        if c == "o":  # the word "operator"
            m = _OPERATOR_RE.match(s, i)
            if m:
                skip_to = m.end()
            continue
        if c in _OPENERS:
            stack.append(i)
            match[i] = _UNCLOSED
            continue
        if c == ">" and i > 0 and s[i - 1] == "-":
            continue
        want = _PARTNER[c]
        if c != ">":
            while stack and s[stack[-1]] == "<" and want != "<":
                stack.pop()  # stays _UNCLOSED
        if stack and s[stack[-1]] == want:
            j = stack.pop()
            match[i], match[j] = j, i
    return match


def _group_end(match: list[int], i: int, hi: int) -> int:
    """Index of the closer of the group opened at ``i`` (``hi`` if unclosed: it runs to the range end)."""
    j = match[i]
    return j if 0 <= j < hi else hi


def _split_commas(s: str, match: list[int], lo: int, hi: int) -> list[str]:
    parts: list[str] = []
    start = i = lo
    while i < hi:
        c = s[i]
        if c in _OPENERS and match[i] != _NOT_BRACKET:
            if match[i] == _UNCLOSED:
                break  # the rest of the range is inside this group
            i = _group_end(match, i, hi) + 1
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
    match = _match_brackets(s)
    lo, hi = 0, len(s)
    if s[0] == "<" and (match[0] == len(s) - 1 or match[0] == _UNCLOSED):
        lo, hi = 1, (match[0] if match[0] >= 0 else len(s))
    return _split_commas(s, match, lo, hi)


def strip_templates(qualname: str) -> str:
    """Remove every template argument list: ``"at::native::sum_functor<float, float, float>::operator()"`` ->
    ``"at::native::sum_functor::operator()"``. ``operator<`` and friends are kept; Nsight Compute's
    ``<unnamed>`` becomes ``(anonymous namespace)``. An unclosed list (a cut name) is removed to the end.
    Linear time.
    """
    s = qualname.replace("<unnamed>::", "(anonymous namespace)::")
    match = _match_brackets(s)
    out: list[str] = []
    start = 0
    i = s.find("<")
    while i != -1:
        if match[i] == _UNCLOSED:
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


# =====================================================================================================
# 4. Name structure
# =====================================================================================================
#
# A demangled name is a sequence of qualified names and bracketed groups. A qualified name is a chain of
# components joined by "::"; a component is an identifier (or operator, "(anonymous namespace)", or a
# lambda "{lambda(float)#1}") optionally followed by template arguments "<...>" and a parameter list
# "(...)" with cv-qualifiers ("operator()() const::{lambda...}"). _Reader walks that structure with the
# match table: template arguments are searched for functors and lambdas, parameter lists for lambdas
# only (their types are the function's parameters, not the operator's code).

_ID_RE = re.compile(r"~?[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER_RE = re.compile(r"[0-9][0-9A-Za-z_.]*")
_CONVERSION_OPERATOR_RE = re.compile(r"operator ([A-Za-z_][A-Za-z0-9_]*)")
_CV_BEFORE_SCOPE_RE = re.compile(r" (?:const|volatile|&&|&)(?: (?:const|volatile))*(?=::)")
_LAMBDA_ORDINAL_RE = re.compile(r"#(\d{1,9})")
_ANON = "(anonymous namespace)"

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


class _Reader:
    """Walks one name text; collects functors and lambdas. See Note [Bounded work]."""

    def __init__(self, s: str):
        self.s = s
        self.match = _match_brackets(s)
        self.functors: dict[str, None] = {}
        self.lambdas: dict[tuple[str, tuple[str, ...]], tuple[int, LambdaRef]] = {}
        self.too_deep = False
        self.cut_at = len(s) + 1  # set to len(s) when the text was cut: a head ending there may be partial

    # -- reading -------------------------------------------------------------------------------------

    def _is_anon(self, i: int) -> bool:
        return self.s.startswith(_ANON, i)

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
                op = _OPERATOR_RE.match(s, i)
                if op and op.end() <= hi:
                    return _Comp("operator" + op.group(1), "op", i, op.end())
                conv = _CONVERSION_OPERATOR_RE.match(s, i)
                if conv and conv.end() <= hi:
                    return _Comp(conv.group(), "op", i, conv.end())
            return _Comp(m.group(), "id", i, m.end())
        if c == "(" and self._is_anon(i):
            return _Comp(_ANON, "anon", i, i + len(_ANON))
        if c == "{" and self.match[i] != _NOT_BRACKET:
            end = _group_end(self.match, i, hi)
            stop = min(end + 1, hi)
            if s.startswith("lambda(", i + 1):
                p = i + len("{lambda")
                p_end = _group_end(self.match, p, end)
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
            if j < hi and s[j] == "<" and match[j] != _NOT_BRACKET and comp.kind in ("id", "op"):
                end = _group_end(match, j, hi)
                comp.targs = (j + 1, end)
                j = min(end + 1, hi)
            k = j
            if top:
                while k < hi and s[k] == " ":
                    k += 1
            if k < hi and s[k] == "(" and match[k] != _NOT_BRACKET and not self._is_anon(k) and comp.kind != "anon":
                end = _group_end(match, k, hi)
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
            if c in _OPENERS and match[i] != _NOT_BRACKET:
                end = _group_end(match, i, hi)
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
        if prefix:
            fn = prefix[-1]
            enclosing_name = prefix[-2].head if fn.kind == "op" and len(prefix) >= 2 else fn.head
            if fn.params is not None:
                lo, hi = fn.params
                closed = hi < len(self.s) and self.s[hi] == ")"
                signature = _clip("(" + self.s[lo:hi] + (")" if closed else ""), _MAX_SIGNATURE_CHARS)
        key = (enclosing, chain)
        if key not in self.lambdas:
            ref = LambdaRef(enclosing, enclosing_name, comps[first].ordinal, signature, chain)
            self.lambdas[key] = (comps[first].start, ref)

    def sorted_lambdas(self) -> tuple[LambdaRef, ...]:
        return tuple(ref for _, ref in sorted(self.lambdas.values(), key=lambda item: item[0]))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# =====================================================================================================
# 5. Non-kernels: memory operations and host-side names
# =====================================================================================================

# torch.profiler / Kineto (CUPTI activity names): "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
_PROFILER_MEMCPY_RE = re.compile(
    r"Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA|Unknown)\b(?: \((?P<src>\w+) -> (?P<dst>\w+)\))?\Z"
)
_PROFILER_MEMSET_RE = re.compile(r"Memset(?: \((?P<where>\w+)\))?\Z")
# Nsight Systems / nvprof: "[CUDA memcpy HtoD]", "[CUDA memcpy Host-to-Device]", "[CUDA memset]".
_NSYS_MEM_RE = re.compile(r"\[CUDA (?:Unified Memory )?(?P<op>memcpy|memset)(?: (?P<rest>[^\]]*))?\]\Z", re.I)
# TensorFlow / XLA traces: "MemcpyH2D", "MemcpyD2D", "Memset".
_XLA_MEMCPY_RE = re.compile(r"Memcpy(?P<dir>H2D|D2H|D2D|P2P)\Z")
# Host-side API calls: "cudaMemcpyAsync", "cuMemsetD32Async", "cudaLaunchKernel", "ncclAllReduce".
_HOST_API_RE = re.compile(
    r"(?:cuda|cu|cublas(?:Lt)?|cudnn|cufft|cusolver(?:Dn|Sp)?|cusparse|nvrtc)[A-Z][A-Za-z0-9_]*"
    r"|nccl(?!(?:Dev)?Kernel)[A-Z][A-Za-z0-9_]*"
)
_OPERATOR_NAME_RE = re.compile(r"(?:aten|prim|prims|c10d|_c10d_functional|torchvision|quantized)::[A-Za-z_]\w*(?:\.\w+)?\Z")

_DIRECTION_ALIASES = {
    "htod": "HtoD", "host-to-device": "HtoD", "h2d": "HtoD",
    "dtoh": "DtoH", "device-to-host": "DtoH", "d2h": "DtoH",
    "dtod": "DtoD", "device-to-device": "DtoD", "d2d": "DtoD",
    "ptop": "PtoP", "peer-to-peer": "PtoP", "p2p": "PtoP",
    "htoh": "HtoH", "host-to-host": "HtoH",
}
_COPY_DETAIL = {
    "HtoD": "host-to-device memory copy issued by .to('cuda')/.cuda()/copy_ from a CPU tensor",
    "DtoH": "device-to-host memory copy issued by .cpu()/.item()/.tolist()/.numpy() or printing a CUDA tensor",
    "DtoD": "device-to-device memory copy issued by copy_/to()/clone()",
    "PtoP": "peer-to-peer memory copy between two GPUs issued by copy_/to() across devices",
    "HtoH": "host-to-host memory copy through the CUDA driver",
}


def _copy_detail(direction: str, src: str | None = None, dst: str | None = None) -> str:
    text = _COPY_DETAIL.get(direction, f"memory copy ({direction})")
    if direction == "HtoD" and src == "Pageable":
        text += "; the source is pageable (not pinned), so the copy is synchronous"
    elif direction == "HtoD" and src == "Pinned":
        text += "; the source is pinned, so it can overlap with non_blocking=True"
    elif direction == "DtoH" and dst == "Pageable":
        text += "; into pageable memory, so the CPU waits for it"
    return text


_MEMSET_DETAIL = (
    "device memory fill (cudaMemset*), e.g. zeroing a buffer; issued by ATen or by a library "
    "(cuBLAS/cuDNN workspaces, NCCL)"
)


def _non_kernel(text: str) -> tuple[str, str] | None:
    """(kind, detail) for names that are not kernels; None for everything else."""
    m = _PROFILER_MEMCPY_RE.match(text)
    if m:
        return "memcpy", _copy_detail(m.group("dir"), m.group("src"), m.group("dst"))
    if _PROFILER_MEMSET_RE.match(text):
        return "memset", _MEMSET_DETAIL
    m = _NSYS_MEM_RE.match(text)
    if m:
        if m.group("op").lower() == "memset":
            return "memset", _MEMSET_DETAIL
        rest = (m.group("rest") or "").lower().replace("unified ", "").strip()
        return "memcpy", _copy_detail(_DIRECTION_ALIASES.get(rest, rest or "unknown direction"))
    m = _XLA_MEMCPY_RE.match(text)
    if m:
        return "memcpy", _copy_detail(_DIRECTION_ALIASES[m.group("dir").lower()])
    if text in ("Memset", "MemsetD"):
        return "memset", _MEMSET_DETAIL
    if _HOST_API_RE.fullmatch(text):
        api = re.sub(r"_v\d+\Z", "", text)
        if "memcpy" in api.lower():
            return "memcpy", f"host-side call {api}: the CPU side of a copy; the GPU side shows up as 'Memcpy ...'"
        if "memset" in api.lower():
            return "memset", f"host-side call {api}: the CPU side of a memory fill; the GPU side shows up as 'Memset ...'"
        return "unknown", f"host-side API call {api}, not a GPU kernel"
    if _OPERATOR_NAME_RE.match(text):
        return "unknown", f"operator name {text}, not a kernel: look it up as an operator"
    return None


# =====================================================================================================
# 6. Libraries
# =====================================================================================================


@dataclass(frozen=True)
class _Facts:
    text: str
    function: str
    qualname: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True)
class LibraryRule:
    """One way to recognise a library's kernel. First matching rule of :data:`LIBRARY_RULES` wins.

    ``where``: ``"name"`` — the function name, only for names without namespaces (libraries that name
    kernels ``ampere_sgemm_128x64_nn``); ``"qualname"`` — the qualified name (``cub::``, ``cublasLt::``);
    ``"text"`` — anywhere in the whole name, template arguments included (``..._cublas``, ``cudnn::`` in a
    parameter), skipped for names in ``at::``/``c10::``/``torch::`` so ATen kernels that merely mention
    a library are not claimed by it. ``seen`` says where the real name was observed.
    """

    library: str
    where: str
    pattern: re.Pattern[str]
    describe: Callable[[re.Match[str], _Facts], str]
    seen: str


_ATEN_NAMESPACES = frozenset({"at", "c10", "torch"})


def _nccl(m: re.Match[str], f: _Facts) -> str:
    tokens = f.function.split("_")[1:]
    coll = tokens[0] if tokens else "collective"
    ops = [t for t in tokens[1:] if t in ("Sum", "Prod", "Min", "Max", "Avg", "PreMulSum", "SumPostDiv")]
    algo = [t for t in tokens[1:] if t.upper() in ("RING", "TREE", "NVLS", "NVLS_TREE", "COLLNET", "PAT") or t.startswith("COLLNET")]
    proto = [t for t in tokens[1:] if t.upper() in ("LL", "LL128", "SIMPLE")]
    dtypes = [t for t in tokens[1:] if re.fullmatch(r"(?:[fiu]\d+|bf16|f8e\w+|half|float|double|int\w*|u?int\d+)", t)]
    bits = [", ".join(x) for x in (ops, dtypes) if x] + (["/".join(algo + proto)] if algo or proto else [])
    inner = f" ({'; '.join(bits)})" if bits else ""
    return (
        f"NCCL {coll} kernel{inner}; torch.distributed collectives launch it, and the name only hints at "
        "the operation, algorithm and protocol NCCL actually ran"
    )


_TRITON_KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "tem": "template (matmul/conv/flex-attention)",
    "for": "foreach",
    "spl": "split scan",
    "mm": "matmul",
    "bmm": "batched matmul",
}


def _triton(m: re.Match[str], f: _Facts) -> str:
    kind = _TRITON_KINDS.get(m.group("kind"), m.group("kind"))
    fused = re.search(r"_fused_(\w+?)(?:_\d+)?\Z", f.function)
    what = f" fusing {fused.group(1)}" if fused else ""
    return f"Triton {kind} kernel generated by torch.compile (Inductor){what}; its source is the generated code, not ATen"


def _flash(m: re.Match[str], f: _Facts) -> str:
    fn = f.function
    direction = "backward " if "bwd" in fn else "forward (split-KV) " if "splitkv" in fn else "forward " if "fwd" in fn else ""
    if f.qualname.startswith("pytorch_flash::"):
        return (
            f"FlashAttention-2 {direction}kernel vendored in ATen (aten/src/ATen/native/transformers/cuda/flash_attn), "
            "the flash backend of scaled_dot_product_attention"
        )
    return f"FlashAttention {direction}kernel (flash:: namespace: the flash-attn package or a copy of it)"


def _mem_eff(m: re.Match[str], f: _Facts) -> str:
    direction = {"F": "forward ", "B": "backward "}.get(m.groupdict().get("dir") or "", "")
    return (
        f"memory-efficient attention {direction}kernel (CUTLASS-based, from xFormers) vendored in ATen "
        "(aten/src/ATen/native/transformers/cuda/mem_eff_attention), the efficient backend of "
        "scaled_dot_product_attention"
    )


_XMMA_RE = re.compile(r"sm(?P<arch>\d+)_xmma_(?P<op>gemm|fprop|dgrad|wgrad)_(?:(?P<algo>[a-z_]+?)_)?(?P<dt>(?:bf|tf|f|e|s|u|i)\d+(?:m\d+)?)")
_CONV_OPS = {"fprop": "forward", "dgrad": "data-gradient", "wgrad": "weight-gradient"}


def _cudnn(m: re.Match[str], f: _Facts) -> str:
    name = f.function
    sdpa = re.match(r"cudnn_generated_fort_native_sdpa_(?P<arch>sm\d+)_flash_(?P<dir>fprop|bprop)", name)
    if sdpa:
        direction = "forward" if sdpa.group("dir") == "fprop" else "backward"
        return (
            f"cuDNN fused attention {direction} kernel ({sdpa.group('arch')}), "
            "the cuDNN backend of scaled_dot_product_attention"
        )
    x = _XMMA_RE.search(name)
    if x and x.group("op") in _CONV_OPS:
        algo = ", implicit GEMM" if "implicit_gemm" in name else ""
        return f"cuDNN convolution {_CONV_OPS[x.group('op')]} kernel (sm{x.group('arch')} xmma{algo}, {x.group('dt')})"
    if x:
        return f"cuDNN GEMM kernel (sm{x.group('arch')} xmma, {x.group('dt')})"
    if re.search(r"convolve_sgemm|scudnn|winograd|conv|fprop|dgrad|wgrad|fft2d", name, re.I):
        return f"cuDNN convolution kernel {name}"
    if name.startswith("bn_"):
        return f"cuDNN batch-norm kernel {f.qualname}"
    return f"cuDNN kernel {f.qualname}"


_ARCH_GEMM_RE = re.compile(
    r"(?P<arch>maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_(?P<g>(?:[a-z0-9]+_)?[a-z0-9]*gemm)"
)
_BLAS_KINDS = (
    ("gemv", "matrix-vector product (GEMV)"),
    ("gemmSN", "small-N GEMM"),
    ("gemmk1", "GEMM with k=1"),
    ("splitKreduce", "split-K reduction, the second pass of a split-K GEMM"),
    ("trsm", "triangular solve (TRSM)"),
    ("scal", "vector scaling (SCAL)"),
    ("dot", "dot product"),
    ("reduce_1Block", "dot-product reduction"),
    ("magma", "GEMM (MAGMA-derived kernel inside cuBLAS)"),
)


def _blas_kind(function: str) -> str | None:
    for prefix, text in _BLAS_KINDS:
        if function.startswith(prefix):
            return text
    return None


def _cublas(m: re.Match[str], f: _Facts) -> str:
    name = f.function
    x = _XMMA_RE.search(name)
    if x and x.group("op") == "gemm":
        return f"cuBLAS GEMM kernel (sm{x.group('arch')} xmma, {x.group('dt')})"
    a = _ARCH_GEMM_RE.match(name)
    if a:
        return f"cuBLAS GEMM kernel ({a.group('arch')} {a.group('g')})"
    if name.startswith("nvjet_"):
        arch = re.match(r"nvjet_(sm\d+)_", name)
        return f"cuBLAS GEMM kernel (nvjet{', ' + arch.group(1) if arch else ''}: Hopper/Blackwell cuBLAS)"
    kind = _blas_kind(name) or ("matrix-vector product (GEMV)" if f.qualname.startswith("gemvx::") else None)
    return f"cuBLAS {kind} kernel" if kind else f"cuBLAS kernel {f.qualname}"


def _cublaslt(m: re.Match[str], f: _Facts) -> str:
    kind = _blas_kind(f.function)
    return f"cuBLASLt {kind} kernel" if kind else f"cuBLASLt kernel {f.qualname}"


_CUTLASS_LIBRARY_NAME_RE = re.compile(r"\bcutlass(?:3x)?_(?:sm)?\d*_?\w+")


def _cutlass(m: re.Match[str], f: _Facts) -> str:
    lib_name = _CUTLASS_LIBRARY_NAME_RE.search(f.text)
    if lib_name:
        return (
            f"CUTLASS kernel {lib_name.group()}; CUTLASS library kernels named like this are usually "
            "launched by cuBLAS"
        )
    if re.search(r"\bat::", f.text):
        return f"CUTLASS kernel {f.qualname} instantiated by ATen code (its template arguments name at:: types)"
    return f"CUTLASS kernel {f.qualname}"


_CUB_ALGOS = (
    ("SegmentedRadixSort", "segmented radix sort"),
    ("RadixSort", "radix sort"),
    ("SegmentedReduce", "segmented reduction"),
    ("Reduce", "reduction"),
    ("Scan", "prefix scan"),
    ("Select", "selection/compaction"),
    ("Partition", "partition"),
    ("Compact", "selection/compaction"),
    ("Unique", "unique"),
    ("RunLengthEncode", "run-length encoding"),
    ("Histogram", "histogram"),
    ("MergeSort", "merge sort"),
    ("For", "for-each"),
)


def _cub(m: re.Match[str], f: _Facts) -> str:
    algo = next((text for key, text in _CUB_ALGOS if key in f.function), None)
    text = f"CUB {f.function} ({algo})" if algo else f"CUB {f.function}"
    if f.namespaces[:1] == ("at_cuda_detail",):
        text += (
            ", launched from ATen through at::cuda::cub (aten/src/ATen/cuda/cub.cuh), "
            "e.g. by sort, unique, nonzero, cumsum or randperm"
        )
    return text


def _thrust(m: re.Match[str], f: _Facts) -> str:
    algos = list(dict.fromkeys(re.findall(r"::__(\w+?)::", f.text)))
    algos = [a for a in algos if a != "parallel_for"] or algos
    return f"Thrust algorithm kernel ({', '.join(algos[:3])})" if algos else f"Thrust kernel {f.qualname}"


def _cufft(m: re.Match[str], f: _Facts) -> str:
    return f"cuFFT kernel {f.function}; torch.fft and torch.stft on CUDA call cuFFT"


_SOLVER_ROUTINES = (
    (("potrf", "potrs", "potri"), "Cholesky"),
    (("getrf", "getrs", "getri", "laswp"), "LU"),
    (("geqr", "orgqr", "ormqr", "larf"), "QR"),
    (("syevj", "syevd", "sytrd", "stedc", "steqr", "sterf", "ormtr", "orgtr"), "symmetric eigendecomposition"),
    (("gesvd", "gebrd"), "SVD"),
    (("trtri",), "triangular inverse"),
    (("sytrf",), "symmetric indefinite factorization"),
    (("gels",), "least squares"),
)


def _cusolver(m: re.Match[str], f: _Facts) -> str:
    routine = next((text for keys, text in _SOLVER_ROUTINES if f.function.startswith(keys)), None)
    what = f" ({routine})" if routine else ""
    return f"cuSOLVER kernel {f.function}{what}; torch.linalg on CUDA calls cuSOLVER"


def _fuser(m: re.Match[str], f: _Facts) -> str:
    return f"kernel {f.qualname} generated at run time by nvFuser (TorchScript); its source is generated code, not ATen"


def _generic(library: str) -> Callable[[re.Match[str], _Facts], str]:
    def describe(m: re.Match[str], f: _Facts) -> str:
        return f"{library} kernel {f.qualname}"

    return describe


def _rule(library: str, where: str, pattern: str, describe, seen: str, flags: int = 0) -> LibraryRule:
    return LibraryRule(library, where, re.compile(pattern, flags), describe, seen)


# The sources name the public profile where each real kernel name was seen (GitHub issues and pull
# requests; "profile dumps" are public trace/table files found in the code search corpus).
LIBRARY_RULES: tuple[LibraryRule, ...] = (
    _rule("NCCL", "qualname", r"\Anccl\w*Kernel", _nccl,
          "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>) in PyTorch profile "
          "dumps; ncclKernel_SendRecv_RING in NVIDIA/nccl#739; naming explained in NVIDIA/nccl#2196"),
    _rule("Triton", "name", r"\Atriton_(?P<kind>poi|red|per|tem|for|spl|mm|bmm)_", _triton,
          "triton_poi_fused_add_mul_..., triton_red_fused_..., triton_tem_fused_mm_0 in torch.compile "
          "profile dumps"),
    _rule("flash-attention", "qualname", r"\A(?:pytorch_flash|flash)::", _flash,
          "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<...>>(pytorch_flash::Flash_fwd_params) "
          "(pytorch/pytorch#131257, huggingface/blog#3451)"),
    _rule("flash-attention", "name", r"\Aflash_(?:fwd|bwd)\w*kernel", _flash,
          "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 128, 4, ...>> in profile dumps"),
    _rule("flash-attention", "text", r"\bflash::\w*(?:Flash|flash)", _flash,
          "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90...>> (vLLM trace)"),
    _rule("mem-efficient-attention", "name", r"\Afmha_cutlass(?P<dir>[FB])", _mem_eff,
          "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params) in "
          "PyTorch profile dumps"),
    _rule("mem-efficient-attention", "text", r"PyTorchMemEffAttention::", _mem_eff, "as above"),
    _rule("cuDNN", "text", r"cudnn", _cudnn,
          "sm80_xmma_fprop_implicit_gemm_..._execute_kernel__5x_cudnn, cudnn_generated_fort_native_sdpa_sm90_"
          "flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0, cudnn::bn_fw_inf_1C11_kernel_NHWC, "
          "maxwell_scudnn_128x128_relu_interior_nn_v1 in profile dumps", re.I),
    _rule("cuDNN", "name", r"\Asm\d+_xmma_(?:fprop|dgrad|wgrad)_", _cudnn,
          "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_..._kernel "
          "(no _cudnn suffix) in TensorFlow/PyTorch profile dumps"),
    _rule("cuDNN", "name",
          r"\A(?:implicit|explicit|precomputed)_convolve_sgemm|\Afft2d_(?:r2c|c2r|c2c)|\Awgrad_alg\d|\Adgrad\w*_alg\d"
          r"|\Adgrad_engine|\Abn_(?:fw|bw)_|\A(?:nchwToNhwc|nhwcToNchw)Kernel|\Aconv2d_grouped_direct_kernel",
          _cudnn,
          "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>(...), "
          "fft2d_r2c_32x32<...>(..., cudnn::reduced_divisor, ...) in TensorFlow profile dumps"),
    _rule("cuBLASLt", "text", r"cublasLt", _cublaslt,
          "cublasLt::splitKreduce_kernel<32, 16, int, float, bf16...> in sglang profile tables "
          "(sgl-project/sglang#22353 lists its neighbours)"),
    _rule("cuBLAS", "text", r"cublas", _cublas,
          "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
          "kernel__5x_cublas (NVIDIA/TensorRT-LLM#1541, triton-lang/triton#3668); gemmSN_NN_kernel<..., "
          "cublasGemvTensorStridedBatched<double> > in nvprof dumps", re.I),
    _rule("cuBLAS", "name", r"\Asm\d+_xmma_gemm_", _cublas,
          "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma "
          "(pytorch/pytorch#167503)"),
    _rule("cuBLAS", "name", r"\A(?:maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_\w*gemm", _cublas,
          "volta_sgemm_32x128_tn (official-stockfish/nnue-pytorch#96), ampere_sgemm_128x64_tn, "
          "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn (karpathy/nanochat#105)"),
    _rule("cuBLAS", "name", r"\Anvjet_", _cublas,
          "nvjet_tst_128x24_64x11_2x1_v_bz_TNT (sgl-project/sglang#22353), nvjet_sm90_hss_320x128 "
          "(GindaChen/nsys-ai#582: 'what recent cuBLAS calls its Hopper GEMMs')"),
    _rule("cuBLAS", "name",
          r"\Agemv|\AgemmSN_|\Agemmk1_kernel|\AsplitKreduce_kernel|\Amagma_\w*gemm\w*_kernel|\Atrsm"
          r"|\Ascal_kernel|\Adot_kernel|\Areduce_1Block_kernel",
          _cublas,
          "gemv2T_kernel_val (official-stockfish/nnue-pytorch#96), gemv2N_kernel_val, gemvNSP_kernel, "
          "gemmSN_NN_kernel, splitKreduce_kernel<float, ...>(cublasSplitKParams<float>, ...), "
          "magma_sgemmEx_kernel in profile dumps; trsm from the cuBLAS API (cublas<t>trsm)"),
    _rule("cuBLAS", "qualname", r"\Agemvx::", _cublas, "gemvx::kernel<...> in profile dumps"),
    _rule("CUTLASS", "qualname", r"\Acutlass\w*::", _cutlass,
          "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(...) (pytorch/pytorch#167503), "
          "cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>> (NVIDIA/cutlass#85)"),
    _rule("CUTLASS", "name", r"\Acutlass(?:3x)?_", _cutlass,
          "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8 in profile dumps"),
    _rule("thrust", "qualname", r"(?:\A|::)thrust::", _thrust,
          "void thrust::cuda_cub::core::_kernel_agent<thrust::cuda_cub::__parallel_for::ParallelForAgent<"
          "thrust::cuda_cub::__uninitialized_fill::functor<...>, unsigned long>, ...> in nvprof dumps"),
    _rule("CUB", "qualname", r"(?:\A|::)cub::", _cub,
          "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...> (awslabs/keys_values#66, PyTorch "
          "profile tables), cub::CUB_200700_860_1200_NS::DeviceScanKernel<...> in nsys dumps"),
    _rule("cuFFT", "qualname", r"\ADSE::", _cufft,
          "void DSE::vector_fft<0, 1, 256, 16, 16, 1, float, float, float2>(...) in Nsight Compute dumps"),
    _rule("cuFFT", "name", r"\A(?:vector|regular|prime)_fft|\Aregular_bluestein_fft|\Abluestein_|\Afft_", _cufft,
          "vector_fft<4096, ...>, regular_fft_factor, prime_fft_factor, regular_bluestein_fft, "
          "regular_fft_c2r<300> in nsys dumps"),
    _rule("cuFFT", "text", r"cufft", _cufft, "cuFFT's own parameter types", re.I),
    _rule("cuSOLVER", "text", r"cusolver", _cusolver, "cuSOLVER's own parameter types", re.I),
    _rule("cuSOLVER", "name",
          r"\A(?:potrf|potrs|potri|getrf|getrs|getri|geqr[f2]|orgqr|ormqr|ormtr|orgtr|sytrd|syevj|syevd|stedc"
          r"|steqr|sterf|gesvd|gebrd|larf|laswp|trtri|sytrf|gels)",
          _cusolver,
          "geqr2_smem<double, double, 8, 6, 4>, geqr2_smem_domino_fast, ormtr_gemv_c<float, 4>, "
          "potrf_alg2_cta_upper<double2, double, 32>, sytrd4_gpu in nvprof/nsys dumps"),
    _rule("cuTENSOR", "text", r"cutensor", _generic("cuTENSOR"),
          "CUTENSOR_NAMESPACE::permutationKernelPLC3<...>, cutensor_internal_namespace::... in profile dumps",
          re.I),
    _rule("cuSPARSE", "text", r"cusparse", _generic("cuSPARSE"), "cuSPARSE's own parameter types", re.I),
    _rule("nvFuser", "qualname", r"\ACudaCodeGen::", _fuser,
          "CudaCodeGen::kernel5(CudaCodeGen::Tensor<CudaCodeGen...) in a PyTorch profile table (TorchScript era)"),
    _rule("TransformerEngine", "qualname", r"\Atransformer_engine::", _generic("TransformerEngine"),
          "transformer_engine::normalization::ln_fwd_tuned_kernel<...> (ROCm/TransformerEngine#610)"),
)


def _classify_library(f: _Facts) -> tuple[str, str] | None:
    found = _match_library(f)
    if found is None:
        return None
    rule, m = found
    return rule.library, rule.describe(m, f)


def _match_library(f: _Facts) -> tuple[LibraryRule, re.Match[str]] | None:
    aten_owned = bool(f.namespaces) and f.namespaces[0] in _ATEN_NAMESPACES
    for rule in LIBRARY_RULES:
        if rule.where == "name":
            if f.namespaces or not f.function:
                continue
            subject = f.function
        elif rule.where == "qualname":
            subject = f.qualname
        else:
            if aten_owned:
                continue
            subject = f.text
        m = rule.pattern.search(subject)
        if m:
            return rule, m
    return None


# =====================================================================================================
# 7. parse_kernel_name
# =====================================================================================================

# Nsight Compute's launch suffix: "(1024, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0"
_NCU_SUFFIX_RE = re.compile(r" \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)(?:, Context \d+.*)?\Z")
_NCU_OLD_SUFFIX_RE = re.compile(r"(?:, \d{4}-[A-Za-z]{3}-\d{2} [\d:]+)?, Context \d+, Stream \d+.*\Z")
_CLONE_RE = re.compile(r" \[clone [^\]]*\]")
# Table rows: numeric columns before (nsys stats) or after (torch.profiler) the name.
_LEADING_COLUMNS_RE = re.compile(r"\A(?:[-+]?[\d.,]+(?:%|[mnuµ]?s)?\s+)+(?=[^\d\s])")
# (?<=\S): a run of spaces is tried from its first space only, so the search stays linear.
_TRAILING_COLUMNS_RE = re.compile(r"(?<=\S)\s{2,}[-+]?\d[\d.,]*(?:%|[mnuµ]?s|[KMG]i?B|b)?(?:\s|\Z)")
_ELLIPSES = ("...", "…")
_INFRASTRUCTURE_FUNCTORS = frozenset(
    """TrivialOffsetCalculator OffsetCalculator LoadWithCast StoreWithCast LoadWithoutCast StoreWithoutCast
    TensorInfo Array ReduceOp func_wrapper_t ReduceConfig IndexToOffset""".split()
)


def _clean(text: str, notes: list[str]) -> str:
    """Drop table columns and tool decorations; collapse whitespace. See Note [Names as tools print them]."""
    t = text.strip()
    if "  " in t or "\t" in t or t[:1].isdigit():
        m = _LEADING_COLUMNS_RE.match(t)
        if m:
            t = t[m.end() :]
            notes.append("ignored the table columns before the name")
        m = _TRAILING_COLUMNS_RE.search(t)
        if m and m.start() > 0:
            t = t[: m.start()]
            notes.append("ignored the table columns after the name")
    t = " ".join(t.split())
    m = _NCU_SUFFIX_RE.search(t) or _NCU_OLD_SUFFIX_RE.search(t)
    if m and m.start() > 0:
        t = t[: m.start()]
        notes.append("ignored Nsight Compute's launch suffix")
    if "[clone " in t:
        t = _CLONE_RE.sub("", t)
    return t


def parse_kernel_name(text: str) -> KernelName:
    """Parse one kernel name as a profiler prints it. Never raises, except for an empty name.

    >>> k = parse_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    >>> k.kind, k.qualname, k.functors
    ('kernel', 'at::native::vectorized_elementwise_kernel', ('at::native::CUDAFunctor_add',))
    """
    if not text or not text.strip():
        raise AtenmapError("empty kernel name: paste the name as the profiler prints it, e.g. 'void at::native::...<...>(...)'")
    notes: list[str] = []
    truncated = False
    body = text.strip()
    if len(body) > MAX_NAME_CHARS:
        notes.append(f"the name is {len(body)} characters long; only the first {MAX_NAME_CHARS} were read")
        body = body[:MAX_NAME_CHARS]
        truncated = True
    name = _clean(body, notes)
    if not name:
        name = " ".join(body.split())

    partial: str | None = None
    if _MANGLED_RE.match(name):
        demangled = demangle(name)
        if demangled == name:
            partial = _partial_demangle(name)
            notes.append("could not demangle the name" + (f"; read {partial} from the mangling" if partial else ""))
        name = " ".join(demangled.split())

    other = _non_kernel(name)
    if other is not None:
        kind, detail = other
        return KernelName(text, name, kind, "", "", (), (), (), (), None, detail, truncated, tuple(notes))

    parse_text = name.replace("<unnamed>::", _ANON + "::")
    if any(e in parse_text for e in _ELLIPSES):
        truncated = True
        notes.append(
            "the name was cut or abbreviated ('...'); torch.profiler tables cut names at "
            "max_name_column_width (55 by default): the fields describe the visible part"
        )
    if parse_text.endswith((".", "…")):  # no kernel name ends so: nsys cuts with "." or "…", tables with "..."
        if not truncated:
            notes.append("the name ends with '.': it was cut short")
        truncated = True
        parse_text = parse_text.rstrip(".…").rstrip() or parse_text

    reader = _Reader(parse_text)
    if _UNCLOSED in reader.match and not truncated:
        truncated = True
        notes.append("brackets are not closed: the name was cut short")
    if truncated:
        reader.cut_at = len(parse_text)

    names = reader.names(0, len(parse_text), top=True)
    with_params = [n for n in names if n.comps[-1].params is not None]
    main = with_params[-1] if with_params else (names[-1] if names else None)
    ambiguous = not with_params and len(names) > 1

    function, namespaces, template_args = "", (), ()
    if partial is not None:
        *quals, function = partial.split("::")
        namespaces = tuple(quals)
    elif main is not None:
        last = main.comps[-1]
        function = last.head
        namespaces = tuple(c.head for c in main.comps[:-1])
        if last.targs is not None:
            template_args = tuple(_split_commas(parse_text, reader.match, *last.targs))
        reader.visit(main, 0, collect=True, is_kernel=True)
    if reader.too_deep:
        notes.append(f"template arguments nested deeper than {MAX_NESTING} levels were not read")
    qualname = "::".join((*namespaces, function)) if function else ""
    functors = tuple(reader.functors)
    lambdas = reader.sorted_lambdas()

    facts = _Facts(parse_text, function, qualname, namespaces)
    found = _classify_library(facts) if function else None
    if found is not None:
        kind = "library"
        library, detail = found
    elif function and not ambiguous and main is not None and main.comps[-1].kind in ("id", "op"):
        kind, library = "kernel", None
        detail = _kernel_detail(qualname, namespaces, functors, lambdas)
    elif function and partial is not None:
        kind, library = "kernel", None
        detail = _kernel_detail(qualname, namespaces, functors, lambdas)
    else:
        kind, library = "unknown", None
        detail = "not recognised as a kernel name"
    return KernelName(
        raw=text,
        demangled=name,
        kind=kind,
        function=function,
        qualname=qualname,
        namespaces=namespaces,
        template_args=template_args,
        functors=functors,
        lambdas=lambdas,
        library=library,
        detail=detail,
        truncated=truncated,
        notes=tuple(notes),
    )


def _kernel_detail(qualname: str, namespaces: tuple[str, ...], functors: tuple[str, ...], lambdas: tuple[LambdaRef, ...]) -> str:
    owner = "ATen kernel" if namespaces[:1] and namespaces[0] in _ATEN_NAMESPACES else "CUDA kernel"
    text = f"{owner} {qualname}"
    if lambdas:
        return f"{text} running a lambda from {lambdas[0].enclosing}"
    own = [f for f in functors if f.rsplit("::", 1)[-1] not in _INFRASTRUCTURE_FUNCTORS]
    if own:
        return f"{text} applying {own[0]}"
    return text
