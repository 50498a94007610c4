"""A kernel lookup's answer for one platform of the CUDA key (``atenmap kernel --platform rocm``).

``Index.kernel`` answers for every build at once: a library kernel lists each ATen line that calls
into its library's family, whichever side of ``#if`` it is on (kept so in the index's caches and in
the chains kept beside it). For ``rocm`` the lines a ROCm build does not compile are dropped (the
``#if !defined(USE_ROCM)`` side, cuDNN's code: Note [What a ROCm build leaves out] in rocmbuild.py) and
the calls hipify renames are shown with the name that runs (Note [hipify names] in hipify.py):
``cublasSgemm (hipblasSgemm on ROCm)``. ``cuda`` (the default) is the answer as it always was.

Note [ROCm calls first]
~~~~~~~~~~~~~~~~~~~~~~~
On ``rocm`` the lines that call a ROCm library by its own name (``rocblas_gemm_ex``,
``hipblasLtMatmul`` in tunable/GemmHipblaslt.h, ``miopen…``, the CK and AOTriton calls: a library
record of resolve/libraries.py whose family is a ROCm one) come before the hipified CUDA spellings
(``cublasSgemm (hipblasSgemm on ROCm)``), each group in the order the index gave: what a ROCm
build's ``USE_ROCM`` branch calls is what its profile names first. The operators' order is the
index's (it is decided by how near each operator reaches the kernel's library, on both platforms).
"""
from __future__ import annotations

import dataclasses

from atenmap.kinds import FactKind
from atenmap.model_answers import KernelMatch
from atenmap.resolve import conditions, hipify, rocmbuild
from atenmap.resolve.libraries import ROCM_FAMILIES, library_of_call

__all__ = ["for_platform"]


def for_platform(store, match: KernelMatch | None, platform: str = conditions.DEFAULT_PLATFORM,
                 _conds: dict | None = None) -> KernelMatch | None:
    """``match`` as a ``platform`` build has it (see the module's doc); ``store``: the index's, to read
    each call line's ``#if``; ``_conds``: a cache shared over several matches (a trace's)."""
    if match is None or platform != "rocm" or not match.library_calls:
        return match
    conds = {} if _conds is None else _conds
    kept = []
    for step in match.library_calls:
        if step.loc is None:
            kept.append(step)
            continue
        if step.loc.file not in conds:
            rows = store.in_file_like(step.loc.file, (FactKind.CALL,))
            got: dict[tuple[int, str], list[str]] = {}
            for r in rows:
                got.setdefault((r.line, r.qual), []).append(r.cond)
            conds[step.loc.file] = got
        at_line = conds[step.loc.file].get((step.loc.line, step.symbol), [""])
        if all(conditions.excluded(c, "rocm") for c in at_line) or not rocmbuild.built(step.loc.file):
            continue
        kept.append(dataclasses.replace(step, symbol=hipify.shown(step.symbol)))
    kept.sort(key=lambda step: not _rocm_native(step.symbol))  # stable: Note [ROCm calls first]
    return dataclasses.replace(match, library_calls=tuple(kept))


def _rocm_native(symbol: str) -> bool:
    """Whether a library call is spelled as a ROCm library's own (not hipified from a CUDA name)."""
    lib = library_of_call(symbol)
    return lib is not None and lib.family in ROCM_FAMILIES and hipify.rocm_name(symbol) is None
