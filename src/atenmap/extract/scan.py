"""Which files may define a name, by a scan of their bytes (step 2 of Note [Query-driven preview]
in preview.py): the preview's definition finder, without a parse.

The words that say "this line defines the name after me" come from the pattern registry
(extract/registry.py): each pattern's ``scan_words``, placed by its ``scan_shape`` (the macros
whose first argument is the name defined, those that name it in any argument, the keywords that
stand before a class). A pattern added to the registry with scan words is found here without a
change to this module. What stays spelled here is the shape of C++ around a name (a parameter
list followed by a body), the preprocessor's ``#define`` and the pasting macros: text a query
cannot see, since the files are not parsed.
"""
from __future__ import annotations

import re
from functools import lru_cache

from atenmap.extract import registry
from atenmap.extract.registry import ScanShape
from atenmap.kinds import FactKind


def _alternatives(words: tuple[bytes, ...]) -> bytes:
    return b"|".join(re.escape(w) for w in words) or rb"(?!)"


@lru_cache(maxsize=4)
def _before(generation: int) -> tuple[re.Pattern, tuple[bytes, ...], frozenset[bytes]]:
    """(macro before, meta macros, class keywords), from the registry's scan words."""
    first = _alternatives(registry.scan_words(ScanShape.FIRST_ARGUMENT))
    meta = registry.scan_words(ScanShape.FIRST_ARGUMENT, FactKind.META_FUNC)
    anywhere = _alternatives(registry.scan_words(ScanShape.ANY_ARGUMENT))
    keywords = frozenset(registry.scan_words(ScanShape.KEYWORD))
    if any(w.translate(None, bytes(_WORD)) or not w for w in keywords):
        raise ValueError(f"a class keyword of the registry is not a word: {sorted(keywords)}")
    # A macro's arguments: the first, or any (not AT_DISPATCH_*, the dtype switch, which passes
    # arguments and defines nothing); ``#define name`` is preprocessor text.
    # Not a query: the scan reads unparsed bytes (the pattern is built from the registry's words).
    macro = re.compile(rb"(?:(?:%s)\s*\(\s*|(?<!AT)(?:%s)\w*\s*\((?:[^;)]*\W)?|#\s*define\s+)\Z" % (first, anywhere))
    return macro, meta, keywords


# Note [The preview's shapes as string code]
# Where a shape is fixed words and punctuation next to the name, string code reads it: the meta
# macro before it, the class keyword before it and the class body's brace after it, the return type
# on the line above. They replaced regexes of the same shapes, with the same answers on every
# occurrence of a word in both test trees' files and fuzz (bench/regex_equal.py).
_BLANKS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes


def _meta_before(text: bytes, meta: tuple[bytes, ...]) -> bool:
    """Whether ``text`` ends with a meta macro of ``meta`` and ``(``, blanks between and after."""
    text = text.rstrip(_BLANKS)
    return text.endswith(b"(") and text[:-1].rstrip(_BLANKS).endswith(meta)


def _class_before(text: bytes, keywords: frozenset[bytes]) -> bool:
    """Whether ``text`` ends with a class keyword and words (``struct C10_API ``), each followed by
    blanks."""
    end = len(text)
    while True:
        word_end = len(text[:end].rstrip(_BLANKS))
        if word_end == end:
            return False
        start = word_end
        while start > 0 and text[start - 1] in _WORD:
            start -= 1
        if start == word_end:
            return False
        if text[start:word_end] in keywords:
            return True
        end = start


def _class_after(data: bytes, at: int) -> bool:
    """Whether a class body's ``{`` follows the name that ends at ``at`` before any of ``;()``,
    within 4000 bytes, the name ending a word there."""
    if (at > 0 and data[at - 1] in _WORD) == (at < len(data) and data[at] in _WORD):
        return False
    stops = [k for k in (data.find(c, at, at + 4000) for c in (b"{", b";", b"(", b")")) if k >= 0]
    return bool(stops) and data[min(stops)] == 0x7B


# What may stand before a name on its line, and after it, where the name is defined (step 2 of
# Note [Query-driven preview]); checked only where the name occurs, so a file costs one find. A
# stub's macros (DECLARE/DEFINE/REGISTER_*_DISPATCH) name it; AT_DISPATCH_* (the dtype switch)
# only passes arguments (``AT_DISPATCH_ALL_TYPES(iter.dtype(), ...)`` does not define ``dtype``).
# The macros and keywords are the registry's (_before); the shapes below are C++'s.
# Not a query: unparsed bytes, the return type and qualifiers before a function's name ...
_FUNCTION_BEFORE = re.compile(rb"[ \t]*(?:(?!return\b|else\b|case\b)[\w:<>,*&]+[ \t]+)+[*&]?(?:\w+::)*\Z")
# ... and its parameter list followed by a body (a call never has one). Not a query: unparsed bytes.
_FUNCTION_AFTER = re.compile(rb"\s*(?:<[^;{}()]*>)?\s*\((?:[^;{}()]|\([^;{}()]*\))*\)[\s\w:&*]*(?:->[^;{]*)?\{")
# The return type alone on the line above the name (``__global__ void`` / ``name(params) {``, the
# CUDA kernels' style): words, ``::``, ``<...>``, ``*``/``&``, not ending as a statement or a call
# (Note [The preview's shapes as string code]).
_TYPE_CHARS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:<>,*&"
_NOT_TYPE_WORDS = (b"return", b"else", b"case", b"do")


def _is_type_line(line: bytes) -> bool:
    """Whether ``line`` is spaces and tabs, then a type's characters (_TYPE_CHARS, spaces and tabs)
    not opening with one of _NOT_TYPE_WORDS."""
    body = line.lstrip(b" \t")
    if not body or body[0] not in _TYPE_CHARS or body.translate(None, _TYPE_CHARS + b" \t"):
        return False
    return not any(body.startswith(w) and body[len(w):len(w) + 1] not in _WORD_BYTES for w in _NOT_TYPE_WORDS)


def _type_above(data: bytes, line_start: int) -> bool:
    if line_start < 2:
        return False
    prev = data[data.rfind(b"\n", 0, line_start - 1) + 1:line_start - 1]
    return bool(prev.strip()) and _is_type_line(prev) and not prev.rstrip().endswith((b",", b"<"))


_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_WORD_BYTES = tuple(bytes((c,)) for c in _WORD)  # each word byte as a one-byte string


# A stub registered by a macro that pastes its name (``STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512(exp)``
# expands to ``ALSO_REGISTER_AVX512_DISPATCH(exp_stub, ...)``): an upper-case macro at the start of
# a line, named for a kernel, a dispatch or an implementation, given the stub's name without ``_stub``.
# Not a query: a macro use whose expansion (a registration) is not in the file's text.
PASTED_STUB = rb"(?m)^[ \t]*[A-Z0-9_]*(?:KERNEL|DISPATCH|IMPLEMENT)[A-Z0-9_]*\(\s*%s\s*[,)]"


def defines(data: bytes, name: str, meta_only: bool = False) -> bool:
    """Whether ``data`` defines ``name`` by the text around one of its occurrences."""
    macro_before, meta, keywords = _before(registry.generation())
    needle = name.encode()
    i = data.find(needle)
    while i >= 0:
        j = i + len(needle)
        if (i == 0 or data[i - 1] not in _WORD) and (j == len(data) or data[j] not in _WORD):
            before = data[data.rfind(b"\n", 0, i) + 1:i]
            # a macro's arguments may start on the next line (``REGISTER_DISPATCH(\n    name_stub,``)
            macro = data[data.rfind(b"\n", 0, max(i - len(before) - 1, 0)) + 1:i] if not before.strip() else before
            if meta_only:
                if _meta_before(macro, meta):
                    return True
            elif macro_before.search(macro) \
                    or _class_before(before, keywords) and _class_after(data, j) \
                    or (_FUNCTION_BEFORE.match(before) or not before.strip() and _type_above(data, i - len(before))) \
                    and _FUNCTION_AFTER.match(data, j, j + 4000):
                return True
        i = data.find(needle, j)
    return False


def class_heads(name: str) -> tuple[bytes, ...]:
    """What a file that defines class ``name`` holds: a class keyword of the registry, a space, the name
    (``struct Foo``, ``class Foo``): a search for them spares most files the regex of defines_class."""
    return tuple(w + b" " + name.encode() for w in registry.scan_words(ScanShape.KEYWORD))


def defines_class(data: bytes, name: str) -> bool:
    """Whether ``data`` defines a class or struct ``name`` (the class rule of ``defines`` alone, its head
    across lines too), one regex pass. Not a query: unparsed bytes; the keywords are the registry's."""
    keyword = _alternatives(registry.scan_words(ScanShape.KEYWORD))
    return re.search(rb"\b(?:%s)\s+(?:\w+\s+)*%s\b[^;{()]*\{" % (keyword, re.escape(name.encode())), data) is not None


# The shapes of extract/jiterator.py's ``jit_name`` and ``jit_code`` facts, the first without its
# string's end, ``%s`` the name: one place for defines_jit and defscan.py. Not a query: jiterator.py
# reads them as text too (Note [Jiterator kernels]).
JIT_NAME_SHAPE = rb"\bchar\s+%s\s*\[\s*\]\s*=\s*\""
JIT_CODE_SHAPE = rb"\b%s\s*=\s*(?:[A-Za-z_]\w*\s*\+\s*)*jiterator_stringify\s*\("


def defines_jit(data: bytes, name: str) -> bool:
    """Whether ``data`` names a jiterator kernel ``name`` (``constexpr char name[] = "..."``) or its
    code (``name = jiterator_stringify(``)."""
    n = re.escape(name.encode())
    return re.search(JIT_NAME_SHAPE % n, data) is not None or re.search(JIT_CODE_SHAPE % n, data) is not None


def defined_in(name: str, texts: dict[str, bytes], among: list[str], meta_only: bool = False
               ) -> tuple[list[str], list[str]]:
    """(files of ``among`` defining ``name``, files registering it by a pasting macro: PASTED_STUB)."""
    needle = name.encode()
    found = [rel for rel in among if needle in texts[rel] and defines(texts[rel], name, meta_only)]
    more: list[str] = []
    if name.endswith("_stub") and not meta_only:
        pasted = re.compile(PASTED_STUB % re.escape(name[:-5].encode()))  # not a query: see PASTED_STUB
        more = [rel for rel in among if rel not in found and name[:-5].encode() in texts[rel]
                and pasted.search(texts[rel])]
    return found, more


# Note [Kernels a macro names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Whole families of kernels are defined by a macro of their own file that pastes the name
# (``#define FOREACH_BINARY_OP_TENSOR_ALPHA(OP) void foreach_tensor_##OP##_tensor_kernel_slow_(...)``,
# used as ``FOREACH_BINARY_OP_TENSOR_ALPHA(add)``): the full build expands it (extract/macros.py),
# the byte scan of step 2 finds no ``foreach_tensor_add_tensor_kernel_slow_``. An operator's kernel
# found nowhere is looked for in the native files whose ``#define`` bodies paste a name that could
# be it: each parameter between the ``##`` stands for any word, the rest must match, with at least
# _PASTED_LITERAL characters spelled (``a##b`` matches every name). Reading such a file only adds
# facts; what the chain picks from them is checked as any other (Note [A preview never shows a wrong
# step] in preview.py).
# Not a query: #define lines are preprocessor text.
_DEFINE_LINE = re.compile(rb"(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)")
# Not a query: the ## operator of a macro body (preprocessor text).
_PASTED_WORD = re.compile(rb"\w+(?:[ \t]*##[ \t]*\w+)+")
_PASTED_LITERAL = 4


def pasted_definers(name: str, texts: dict[str, bytes], among: list[str]) -> list[str]:
    """The files of ``among`` with a macro that pastes a name matching ``name``, used in that file with
    the words that make it (Note [Kernels a macro names])."""
    out = []
    for rel in among:
        data = texts[rel]
        if b"##" in data and any(_pastes(m, name.encode(), data) for m in _DEFINE_LINE.finditer(data)):
            out.append(rel)
    return out


def _pastes(define: re.Match, name: bytes, data: bytes) -> bool:
    params = [p.strip().rstrip(b".") for p in define.group(2).split(b",")]
    for word in _PASTED_WORD.finditer(define.group(3)):
        parts = [p.strip() for p in word.group(0).split(b"##")]
        if sum(len(p) for p in parts if p not in params) < _PASTED_LITERAL:
            continue
        got = re.fullmatch(b"".join(rb"(\w+)" if p in params else re.escape(p) for p in parts), name)
        # the macro used with those words: ``FOREACH_BINARY_OP_SCALAR(add)``
        if got and all(re.search(rb"\b%s\s*\([^;{]*\b%s\b" % (define.group(1), re.escape(w)), data)
                       for w in got.groups()):
            return True
    return False
