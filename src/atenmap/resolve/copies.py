"""The ATen calls that can issue a copy or a fill a profiler shows beside kernels (``Memcpy DtoH
(Device -> Pinned)``, ``Memset (Device)``), by the direction the name says.

Note [Copies by direction]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A profiler names a copy by its direction, and ATen's copy calls say theirs in their ``cudaMemcpyKind``
argument: ``memcpy_and_sync(..., cudaMemcpyDeviceToHost, stream)`` in ``_local_scalar_dense_cuda``
(``.item()``) and ``nonzero``, ``cudaMemcpyHostToDevice`` in ``calculate_mode``; a copy between two
buffers of the GPUs goes through ``CUDACachingAllocator::memcpyAsync`` (``copy_device_to_device``) or
``cudaMemcpyPeerAsync``. So a ``DtoH`` copy is looked for among the calls that say DeviceToHost and
among those that say no kind (``copy_kernel_cuda`` passes a variable: every direction, and it is the
path of every ``.to()``/``copy_``), never among those that say another one: the operators of the
calls that say it first. A fill's groups are offered in turn (the first operator of each, then the
second...): none of them is likelier than the others without a trace. A fill (``Memset``) comes from ATen's ``cudaMemsetAsync`` calls (a
reduction's semaphores, topk's counters) and, more often in a profile, from inside a library call that
clears its workspace: a GEMM's split-K buffers (cuBLAS/cuBLASLt), CUB's radix-sort counters, cuSOLVER's
and MAGMA's info arrays, cuDNN's. Both are named as the CUDA runtime's (the copy engine's), not ATen's:
no ATen kernel runs them.
"""
from __future__ import annotations

import re

from atenmap.store import FactRow

__all__ = ["COPY_CALLS", "FILL_CALLS", "FILL_LIBRARIES", "direction_of", "general_first", "pageable", "split_by_direction"]

COPY_CALLS = ("cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpy", "memcpy_and_sync", "memcpyAsync",
              "cudaMemcpyPeerAsync")
FILL_CALLS = ("cudaMemsetAsync", "cudaMemset", "cudaMemset2DAsync")
# (library, family) of the library calls that clear a workspace inside them, in the order their
# operators are offered after ATen's own fills (Note [Copies by direction])
FILL_LIBRARIES = (("cuBLAS", "gemm"), ("CUB", "radix sort"), ("cuSOLVER", ""), ("cuDNN", ""))

_KIND = {"HtoD": "HostToDevice", "DtoH": "DeviceToHost", "DtoD": "DeviceToDevice", "PtoP": "DeviceToDevice",
         "HtoH": "HostToHost"}
_WORDS = (("HtoD", r"host-to-device"), ("DtoH", r"device-to-host"), ("DtoD", r"device-to-device"),
          ("PtoP", r"peer-to-peer"), ("HtoH", r"host-to-host"))
_ANY_KIND = re.compile(r"cudaMemcpy(HostToDevice|DeviceToHost|DeviceToDevice|HostToHost|Default)\b")


def direction_of(detail: str) -> str:
    """``HtoD``/``DtoH``/``DtoD``/``PtoP``/``HtoH`` from a copy's description, "" when it says none."""
    return next((d for d, w in _WORDS if re.search(w, detail)), "")


# Note [Pageable copies are the general copy's]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch.profiler (CUPTI) also names the host side's memory: ``Memcpy HtoD (Pageable -> Device)``,
# ``Memcpy DtoH (Device -> Pinned)``. ATen's own copies that say their direction mostly stage through
# pinned buffers it allocates itself (``_local_scalar_dense_cuda``, ``.item()``, and ``nonzero`` copy into
# ``empty_cpu(..., pin_memory=true)``), while a user's CPU tensor is pageable unless it was pinned, and the
# one path that copies a user's tensor is the general copy (``copy_kernel_cuda``, behind ``copy_``,
# ``.to()``, ``.cuda()``, ``.cpu()``), whose ``cudaMemcpyKind`` is a variable. So for a pageable host side
# the calls that say no direction come first, then those that say it; for a pinned one (or a name
# that says neither) the calls that say it come first, except for a copy to the device: ATen's own
# host-to-device copies that say so are few and narrow (``calculate_mode``'s, linalg's pivots), while a
# user's tensor reaches the GPU through the general copy whether it was pinned or not (a DataLoader's
# ``pin_memory``, ``.cuda(non_blocking=True)``). So ``Memcpy HtoD (Pinned -> Device)`` leads with
# ``copy_`` too (the GPU oracle: 4 of its 6 pinned HtoD copies ran under copy_), and ``Memcpy DtoH
# (Device -> Pinned)`` with ``.item()``'s ``_local_scalar_dense`` and ``nonzero``, which stage through pinned
# buffers of their own.
_PAGEABLE = re.compile(r"\((?:Pageable -> \w+|\w+ -> Pageable)\)")


def pageable(raw: str) -> bool:
    """Whether a profiler's copy name says its host side is pageable memory: Note [Pageable copies
    are the general copy's]."""
    return bool(_PAGEABLE.search(raw))


def general_first(raw: str, direction: str) -> bool:
    """Whether the calls that say no direction (the general copy's) rank first for a profiler's copy
    name: a pageable host side, or any copy to the device (Note [Pageable copies are the general copy's])."""
    return pageable(raw) or direction == "HtoD"


def _between_devices(r: FactRow) -> bool:
    return r.name == "cudaMemcpyPeerAsync" or (r.name == "memcpyAsync" and "CachingAllocator" in r.qual)


def split_by_direction(calls: list[FactRow], direction: str) -> tuple[list[FactRow], list[FactRow]]:
    """(the calls that say ``direction``, those that say no direction) of ``calls``; those that say
    another direction are in neither. See Note [Copies by direction]."""
    calls = [r for r in calls if r.name != "memcpyAsync" or "CachingAllocator" in r.qual]
    if not direction:
        return calls, []
    want = _KIND.get(direction, "")
    said, unsaid = [], []
    for r in calls:
        m = _ANY_KIND.search(r.arg)
        if _between_devices(r):
            (said if want == "DeviceToDevice" else []).append(r)
        elif m is None or m.group(1) == "Default":
            unsaid.append(r)
        elif m.group(1) == want:
            said.append(r)
    return said, unsaid
