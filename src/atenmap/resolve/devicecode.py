"""Whether a call sits in code that runs on the GPU, inside the kernel that runs it.

Note [Library calls in device code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A vendor library's name is a run where host code calls it: ``thrust::sort(policy, ...)`` launches
kernels, ``cublasSgemm(...)`` enqueues a GEMM. The same names are also device functions:
``unpack_pivots_cuda_kernel`` (cuda/LinearAlgebra.cu) builds ``auto loop = [=]C10_DEVICE(const int
idx) { ... thrust::swap(perm_data[i], ...); }`` and hands it to ``_launch_kernel``, whose
``_elementwise_kernel<<<...>>>`` is what runs; ``thrust::swap`` there is two loads and two stores
inside that kernel, not a launch. So a library call whose innermost enclosing blocks include one
opened by a device lambda (``[=] C10_DEVICE (...) {``, ``GPU_LAMBDA``, ``C10_HOST_DEVICE``) or by a
``__device__``/``__global__`` function is no step of its own: the launch that runs the lambda is.
Read from the text of the function around the call (the index's span), braces counted after
comments and strings are blanked.
"""
from __future__ import annotations

import re

from atenmap.extract.blanking import CODE_NOISE, spaces

# what marks a block as device code, between the previous statement's end and the block's ``{``
_DEVICE_HEAD = re.compile(rb"\b(?:C10_DEVICE|C10_HOST_DEVICE|GPU_LAMBDA|__device__|__global__)\b[^{};]*$")
_HEAD_CHARS = 400  # a lambda's or function's head, at most


def in_device_code(text: bytes) -> bool:
    """Whether the end of ``text`` (a function's text from its first line through the call's line)
    is inside a block that device code opens. See Note [Library calls in device code]."""
    text = CODE_NOISE.sub(spaces, text)
    return any(_DEVICE_HEAD.search(text[max(0, i - _HEAD_CHARS):i]) for i in open_braces(text))


def open_braces(text: bytes) -> list[int]:
    """The offsets of the ``{`` still open at the end of ``text`` (comments and literals blanked),
    outermost first."""
    opened: list[int] = []
    for i, ch in enumerate(text):
        if ch == 0x7B:  # {
            opened.append(i)
        elif ch == 0x7D and opened:  # }
            opened.pop()
    return opened


def call_in_device_code(lines, first: int, line: int) -> bool:
    """:func:`in_device_code` for a call at ``line`` of a file's ``lines`` (bytes or str, 1-based),
    in the function that starts at ``first``; False where the lines are not all there (a bundle's
    quotes)."""
    if not isinstance(lines, list) or not 0 < first <= line <= len(lines):
        return False
    return in_device_code(b"\n".join(t if isinstance(t, bytes) else t.encode() for t in lines[first - 1:line]))
