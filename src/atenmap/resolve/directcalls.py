"""Calls of an operator's kernel that skip the dispatcher: ``at::cuda::eq(self, src)``.

Note [Direct backend calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
torchgen writes, for every backend an operator has a kernel for, a function in ``at::<backend>::``
(``at::cuda::eq``, ``at::cpu::add_out``: RegisterCUDA.cpp, the ``<op>_cuda_dispatch.h`` headers) that
calls that kernel directly. ATen code uses them to skip the dispatcher (``cuda_equal`` in
native/cuda/Equal.cpp runs ``at::cuda::eq(self, src).all()``). No ``aten::eq`` record is made on the
way, so a profiler attributes the kernel to the operator whose code made the call (``aten::equal``):
the reverse walk goes on from the caller as from a plain function, the operator it passed not being one
a profiler would show (Note [Operators that call operators] in resolve/kernels.py counts only calls
through the dispatcher). The function's name is the C++ API's: the operator's base name, ``_out``
for an out= overload (``at::cuda::eq_out``, and ``eq_outf``).
"""
from __future__ import annotations

import re

from atenmap.store import FactRow, Store

# dispatch keys torchgen writes an at::<key.lower()>:: namespace for (native_function_declarations /
# dispatch_key in torchgen/gen.py: backend keys and the composite ones)
_NAMESPACED = re.compile(r"\A(?:CPU|CUDA|MPS|Meta|XPU|CompositeExplicitAutograd|"
                         r"CompositeExplicitAutogradNonFunctional|CompositeImplicitAutograd)\Z")


def cpp_names(op: str) -> tuple[str, ...]:
    """The C++ API names of overload ``op`` (``eq.Tensor`` -> eq; ``eq.Tensor_out`` -> eq_out, eq_outf)."""
    base, _, overload = op.partition(".")
    if overload == "out" or overload.endswith("_out"):
        return base + "_out", base + "_outf"
    return (base,)


def direct_callers(store: Store, cache: dict[tuple[str, str], list[FactRow]], op: str, key: str) -> list[FactRow]:
    """The functions that call ``op``'s ``key`` kernel through ``at::<key>::`` (cached in ``cache``)."""
    if not _NAMESPACED.match(key):
        return []
    if (op, key) in cache:
        return cache[(op, key)]
    ns = key.lower()
    out: list[FactRow] = []
    for name in cpp_names(op):
        for call, caller in store.callers(name):
            qual = call.qual.split("<", 1)[0]
            if caller is not None and (qual == f"at::{ns}::{name}" or qual == f"{ns}::{name}"):
                out.append(caller)
    cache[(op, key)] = out
    return out
