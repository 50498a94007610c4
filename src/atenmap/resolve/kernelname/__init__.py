"""Kernel names as profilers print them -> a structured :class:`KernelName`.

Users paste GPU kernel names from torch.profiler tables and chrome traces, Nsight Systems, Nsight Compute
and Perfetto. :func:`parse_kernel_name` turns one such string into a record the kernel lookup can use:

* for a kernel of ATen (or any other C++ kernel): the ``__global__`` function, its namespaces, its
  template arguments, and the functors and lambdas named inside them — those name the operator's own
  code (``CUDAFunctor_add``, ``exp_kernel_cuda(...)::{lambda()#2}``), which is what the lookup searches for;
* for a kernel of a library (cuBLAS, cuDNN, NCCL, CUB, Triton from torch.compile, ...): which library,
  from the table in :mod:`atenmap.resolve.libraries` (:data:`LIBRARY_RULES` lists its kernel rules); the
  function and qualname are kept all the same (CUB, flash-attention and mem-efficient attention kernels
  are launched from ATen source);
* for the memory operations a profiler shows beside kernels (``Memcpy DtoD (Device -> Device)``,
  ``Memset (Device)``, ``cudaMemcpyAsync``): kind ``memcpy`` / ``memset`` and a sentence saying what
  usually issues them.

Pure text work: no index, no torch, no tree-sitter. Only :func:`demangle` leaves Python (see
Note [Demangling]).

Modules:
  records       LambdaRef, KernelName, KINDS, the size limits         Note [Lambda ordinals]
  demangling    demangle, demangle_many (c++filt / __cxa_demangle / partial)   Note [Demangling]
  reader        qualified names, template arguments, functors, lambdas          Note [Bounded work]
  classify      memcpy/memset and host-side names, library kernels described in words
  parse         parse_kernel_name                                      Note [Names as tools print them]
Bracket text (split_template_args, strip_templates) lives in :mod:`atenmap.names`.
"""
from __future__ import annotations

from atenmap.names import split_template_args, strip_templates
from atenmap.resolve.kernelname.classify import LIBRARY_RULES
from atenmap.resolve.kernelname.demangling import demangle, demangle_many
from atenmap.resolve.kernelname.parse import parse_kernel_name
from atenmap.resolve.kernelname.records import KINDS, MAX_NAME_CHARS, MAX_NESTING, KernelName, LambdaRef
from atenmap.resolve.libraries import KernelRule as LibraryRule, Library, by_name

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
    "library_of_kernel",
    "parse_kernel_name",
    "split_template_args",
    "strip_templates",
]


def library_of_kernel(name: str) -> Library | None:
    """The library whose kernel a profiler kernel name is; None for ATen's own and other kernels.
    Here, not in libraries.py: the name is read first (parse_kernel_name, which asks libraries'
    match_kernel), so libraries.py never imports kernelname."""
    lib = parse_kernel_name(name).library
    return by_name(lib) if lib else None
