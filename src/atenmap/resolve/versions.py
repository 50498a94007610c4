"""What a kernel name holds that the indexed tree does not: one line saying so, naming the tree's version.

Note [Code of another version]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A profile is often recorded with another PyTorch than the tree that was indexed (a wheel of 2.11 against
the 2.6.0 sources): the machinery of a kernel (``reduce_kernel``, ``vectorized_elementwise_kernel``) is
there, but the functor or the function whose lambda it runs may not be (``xor_sum_functor`` of
``hash_tensor``, added after 2.6). The operators the lookup then gives are the machinery's other users,
found by name; the answer says, in one line, which of the name's own code the tree lacks and which
version the tree is, so that nobody takes them for the operator that ran. An index built without
torchgen's output cannot tell a newer version's code from generated code (``CUDAFunctor_add`` is
written by torchgen into UfuncCUDA_add.cu): the note then says both.
"""
from __future__ import annotations

__all__ = ["not_in_tree", "recorded_with", "unknown_kernel"]


def not_in_tree(names: list[str], version: str, generated: bool = True) -> str:
    """The note for ``names`` (qualified C++ names of the kernel's own code) missing from a tree of
    PyTorch ``version`` ("" when the index does not know it). ``generated``: whether torchgen's output
    is indexed; when it is not, the code may be generated (``CUDAFunctor_add`` is written by torchgen
    into UfuncCUDA_add.cu) and the note says so instead of blaming the version."""
    shown = list(dict.fromkeys(n for n in names if n))
    what = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    tree = f"PyTorch {version}" if version else "this tree (version unknown)"
    verb = "is" if len(shown) == 1 else "are"
    found = "the operators below are found from what the tree has (the kernel's machinery, the words of its name)"
    if not generated:
        return (f"{what} {verb} not in {tree}'s indexed sources: torchgen's output is not indexed and may hold "
                f"it, or the kernel was built from another version of PyTorch; {found}")
    return (f"{what} {verb} not in {tree}: the kernel was built from another version of PyTorch (a profile "
            f"of a newer release?); {found}")


def unknown_kernel(name: str, version: str, nearest: tuple[str, ...] | list[str] = ()) -> str:
    """The one line for a kernel name of which the tree has nothing (no ``__global__`` function, launch,
    functor or library): it names the tree's version, since the usual cause is a profile of another
    PyTorch (Note [Code of another version]), and the nearest names the tree has."""
    tree = f"PyTorch {version}" if version else "this tree (version unknown)"
    return (f"no kernel named {name[:120]!r} in the index of {tree}: not in this tree (built from another "
            "version of PyTorch?)" + (f"; nearest: {', '.join(nearest)}" if nearest else ""))


def recorded_with(torch_version: str) -> str:
    """What a trace says of the PyTorch that ran it, to end the line of :func:`unknown_kernel` or
    :func:`not_in_tree` for a kernel of that trace: ``atenmap trace`` records torch's version, a chrome
    trace from ``torch.profiler`` does not (its metadata holds the CUDA driver, runtime and CUPTI
    versions only)."""
    if torch_version:
        return f"; the trace was recorded with torch {torch_version}"
    return "; the trace does not record which torch ran it"
