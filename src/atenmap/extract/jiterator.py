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

import re
from atenmap.kinds import FactKind

# Note: the code is the argument of jiterator_stringify(...), C++ source inside a macro call that
# tree-sitter reads as code or ERROR nodes; the names are kept beside it as the same one scan of the
# files that mention "jit" (a query for them is possible: a candidate, facts unchanged so far).
# constexpr char lgamma_name[] = "lgamma_kernel";   const char legendre_polynomial_p_name[] = "...";
# not a query: also inside macro bodies and files tree-sitter cannot fit (Note [Jiterator kernels])
_NAME = re.compile(rb'\b(?:static\s+)?(?:constexpr\s+)?(?:const\s+)?char\s+([A-Za-z_]\w*)\s*\[\s*\]\s*=\s*"(\w+)"\s*;')
# lgamma_string = jiterator_stringify(   polygamma_string = zeta_string + jiterator_stringify(
# not a query: jiterator_stringify's argument is code as a string: not C++ to the grammar
_CODE = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*(?:[A-Za-z_]\w*\s*\+\s*)*jiterator_stringify\s*\(")

_BLANKS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes


def _may_name(src: bytes) -> bool:
    """What every _NAME match holds: ``char``, and ``[ ] = "`` with any blanks between (found in the
    text without its blanks). A test 10x faster than _NAME's search, which most files fail."""
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
    for m in _NAME.finditer(src) if _may_name(src) else ():
        line, last = line + src.count(b"\n", last, m.start()), m.start()
        out.append((FactKind.JIT_NAME, m.group(1).decode(), m.group(2).decode(), line))
    if b"jiterator_stringify" in src:
        line, last = 1, 0
        for m in _CODE.finditer(src):
            at = m.start(0) + m.group(0).index(b"jiterator_stringify")
            line, last = line + src.count(b"\n", last, at), at
            out.append((FactKind.JIT_CODE, m.group(1).decode(), "", line))
    return out
