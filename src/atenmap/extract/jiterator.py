"""Jiterator kernels: the names and source strings ATen compiles at run time. Read as text.

Note [Jiterator kernels]
With AT_USE_JITERATOR() (CUDA builds), many unary/binary CUDA kernels are not compiled into
libtorch: ``jitted_gpu_kernel</*name=*/lgamma_name, ...>(iter, lgamma_string)`` hands NVRTC a
C++ source string at the first call and launches what it compiles. Two in-tree facts name it:

* ``constexpr char lgamma_name[] = "lgamma_kernel";`` (or ``const char``) -- the function the string defines; the
  compiled ``__global__`` is ``lgamma_kernel_vectorized4_kernel`` (also ``..._vectorized8_``,
  or ``lgamma_kernel_kernel`` unvectorized), the name a profiler shows;
* ``const auto lgamma_string = jiterator_stringify(...)`` (cuda/Math.cuh, often as a
  ``static const auto`` inside the kernel function): the code itself, as C++ source text.

The extractor records each as a fact (``jit_name``: arg = the string; ``jit_code``: at the
``jiterator_stringify`` line) and gives a call to a ``*jitted_gpu*`` launcher its identifier
arguments in ``arg``; the resolver turns that call into a ``jit`` step (resolve/chain.py).
"""
from __future__ import annotations

from atenmap.kinds import FactKind

# Note: the code is the argument of jiterator_stringify(...), C++ source inside a macro call that
# tree-sitter reads as code or ERROR nodes; the names are kept beside it as the same one scan of the
# files that mention "jit" (a query for them is possible: a candidate, facts unchanged so far).
# constexpr char lgamma_name[] = "lgamma_kernel";   const char legendre_polynomial_p_name[] = "...";
# lgamma_string = jiterator_stringify(   polygamma_string = zeta_string + jiterator_stringify(
#
# Note [Jiterator shapes as string code]
# Both shapes are read by bytes.find of their fixed word (``char``, ``jiterator_stringify``) and a
# walk over the words and punctuation around it, also inside macro bodies and files tree-sitter
# cannot fit. They replaced regexes of the same shapes (the leftmost start, a read resuming after
# the shape it found), with the same facts on every file of both test trees and fuzz
# (bench/regex_equal.py).
_BLANKS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")  # ``\w`` in bytes
_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_STRINGIFY = b"jiterator_stringify"


def _blanks(src: bytes, at: int) -> int:
    while at < len(src) and src[at] in _BLANKS:
        at += 1
    return at


def _blanks_before(src: bytes, at: int) -> int:
    while at > 0 and src[at - 1] in _BLANKS:
        at -= 1
    return at


def _word_end(src: bytes, at: int) -> int:
    """The end of the identifier at ``at`` (``at`` itself when none starts there)."""
    if at >= len(src) or src[at] not in _FIRST:
        return at
    while at < len(src) and src[at] in _WORD:
        at += 1
    return at


def _word_start(src: bytes, end: int) -> int:
    """The start of the identifier that ends at ``end`` (a whole word), or -1."""
    at = end
    while at > 0 and src[at - 1] in _WORD:
        at -= 1
    return at if at < end and src[at] in _FIRST else -1


def _name_array(src: bytes, at: int) -> tuple[int, bytes, bytes] | None:
    """``(end, name, value)`` of ``char name[] = "value";`` from the ``char`` at ``at``."""
    name = _blanks(src, at + 4)
    name_end = _word_end(src, name)
    if name == at + 4 or name_end == name:
        return None
    at = name_end
    for punct in b'[]="':
        at = _blanks(src, at)
        if src[at:at + 1] != bytes((punct,)):
            return None
        at += 1
    value_end = at
    while value_end < len(src) and src[value_end] in _WORD:
        value_end += 1
    end = _blanks(src, value_end + 1)
    if value_end == at or src[value_end:value_end + 1] != b'"' or src[end:end + 1] != b";":
        return None
    return end + 1, src[name:name_end], src[at:value_end]


def _array_start(src: bytes, at: int) -> int:
    """Where ``[static] [constexpr] [const] char`` starts, the ``char`` at ``at``: the leftmost of
    those words (blanks between) that begins a word."""
    start = at
    for word in (b"const", b"constexpr", b"static"):
        before = _blanks_before(src, start)
        if before == start or before < len(word) or src[before - len(word):before] != word:
            continue
        if before - len(word) > 0 and src[before - len(word) - 1] in _WORD:
            break
        start = before - len(word)
    return start


def _names(src: bytes) -> list[tuple[int, bytes, bytes]]:
    """``(start, name, value)`` of each ``[static] [constexpr] [const] char name[] = "value";``."""
    out, resume = [], 0
    at = src.find(b"char")
    while at >= 0:
        got = _name_array(src, at) if at >= resume and (at == 0 or src[at - 1] not in _WORD) else None
        if got is not None:
            out.append((_array_start(src, at), got[1], got[2]))
            resume = got[0]
        at = src.find(b"char", at + 1)
    return out


def _codes(src: bytes) -> list[tuple[int, bytes]]:
    """``(at, name)`` of each ``name = [a + b + ...] jiterator_stringify(``; ``at``: the first
    ``jiterator_stringify`` of that text."""
    out = []
    at = src.find(_STRINGIFY)
    while at >= 0:
        paren = _blanks(src, at + len(_STRINGIFY))
        start = _code_name(src, at) if src[paren:paren + 1] == b"(" and (at == 0 or src[at - 1] not in _WORD) else -1
        if start >= 0:
            out.append((src.index(_STRINGIFY, start), src[start:_word_end(src, start)]))
        at = src.find(_STRINGIFY, at + 1)
    return out


def _code_name(src: bytes, at: int) -> int:
    """Where the ``name`` of ``name = [a + b + ...]`` before ``at`` starts, or -1."""
    end = _blanks_before(src, at)
    while src[end - 1:end] == b"+":
        word = _blanks_before(src, end - 1)
        start = _word_start(src, word)
        if start < 0:
            return -1
        end = _blanks_before(src, start)
    if src[end - 1:end] != b"=" or end - 1 < 1:
        return -1
    return _word_start(src, _blanks_before(src, end - 1))


def _may_name(src: bytes) -> bool:
    """What every ``char name[] = "value";`` holds: ``char``, and ``[ ] = "`` with any blanks between
    (found in the text without its blanks). A test 10x faster than the walk, which most files fail."""
    return b"char" in src and b'[]="' in src.translate(None, _BLANKS)


def is_launcher(name: str) -> bool:
    """jitted_gpu_kernel, opmath_jitted_gpu_kernel_with_scalars, jitted_gpu_reduce_kernel."""
    return "jitted_gpu" in name


def jit_facts(src: bytes) -> list[tuple[str, str, str, int]]:
    """``(kind, name, value, line)``: ``jit_name`` facts (value = the function name string) and
    ``jit_code`` facts (value ''), lines 1-based."""
    out: list[tuple[str, str, str, int]] = []
    if b"jit" not in src:
        return out
    line, last = 1, 0  # lines counted on from the previous match: linear in the file
    for start, name, value in _names(src) if _may_name(src) else ():
        line, last = line + src.count(b"\n", last, start), start
        out.append((FactKind.JIT_NAME, name.decode(), value.decode(), line))
    if _STRINGIFY in src:
        line, last = 1, 0
        for at, name in _codes(src):
            line, last = line + src.count(b"\n", last, at), at
            out.append((FactKind.JIT_CODE, name.decode(), "", line))
    return out
