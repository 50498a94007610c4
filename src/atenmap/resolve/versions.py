"""What a kernel name holds that the indexed tree does not: one line saying so, naming the tree's version.

Note [Code of another version]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A profile is often recorded with another PyTorch than the tree that was indexed (a wheel of 2.11 against
the 2.6.0 sources): the machinery of a kernel (``reduce_kernel``, ``vectorized_elementwise_kernel``) is
there, but the functor or the function whose lambda it runs may not be (``xor_sum_functor`` of
``hash_tensor``, added after 2.6). The operators the lookup then gives are the machinery's other users,
found by name; the answer says, in one line, which of the name's own code the tree lacks and which
version the tree is, so that nobody takes them for the operator that ran.
"""
from __future__ import annotations

__all__ = ["not_in_tree"]


def not_in_tree(names: list[str], version: str) -> str:
    """The note for ``names`` (qualified C++ names of the kernel's own code) missing from a tree of
    PyTorch ``version`` ("" when the index does not know it)."""
    shown = list(dict.fromkeys(n for n in names if n))
    what = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    tree = f"PyTorch {version}" if version else "this tree (version unknown)"
    return (f"{what} {'is' if len(shown) == 1 else 'are'} not in {tree}: the kernel was built from another "
            "version of PyTorch (a profile of a newer release?); the operators below are found from what the "
            "tree has (the kernel's machinery, the words of its name)")
