"""The kinds atenmap names, each defined once: what a fact is (``FactKind``), what a call fact's
detail says (``CallDetail``) and the dispatch-key groups (``KeyGroup``). Roles of chain steps are
``model.Role``.

Every enum here is a ``str`` enum whose hash is its value's: ``FactKind.CALL == "call"``, it keys a
dict that a string looks up (and the reverse), SQLite stores it as its text and JSON carries the
value. The rows of the index stay plain text, so an index or a fact dump is the same bytes whether
its writer used the enum or the string. Code names a kind by its member, never by its string.
"""
from __future__ import annotations

from enum import Enum


class _Text(str, Enum):
    """A ``str`` enum that behaves as its value everywhere a string would."""

    __hash__ = str.__hash__  # Enum hashes the member's name; a dict keyed by values must find it

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class FactKind(_Text):
    """What one row of ``facts`` is (extract/fact.py's ``Fact.kind``; the fields each kind uses are
    listed there)."""

    FUNCTION = "function"
    GLOBAL = "global"  # a __global__ CUDA kernel
    IMPL_FUNC = "impl_func"  # TORCH_IMPL_FUNC(name)
    META_FUNC = "meta_func"  # TORCH_META_FUNC(name) / TORCH_META_FUNC2(name, overload)
    CLASS = "class"
    LAMBDA = "lambda"
    MACRO_BLOCK = "macro_block"  # NAME(args) { ... } with NAME a macro (TORCH_LIBRARY_IMPL, ...)
    DECLARE_DISPATCH = "declare_dispatch"
    DEFINE_DISPATCH = "define_dispatch"
    REGISTER_DISPATCH = "register_dispatch"
    CALL = "call"
    LAUNCH = "launch"  # <<<...>>>
    TORCH_IMPL = "torch_impl"  # m.impl("op", fn)
    INCLUDE = "include"
    BINDING = "binding"  # a Python binding marker of torchgen's output
    JIT_NAME = "jit_name"  # a jiterator kernel's name string
    JIT_CODE = "jit_code"  # a jiterator kernel's code string

    @property
    def is_definition(self) -> bool:
        """A kind that defines a function (the things a call can resolve to)."""
        return self in _DEFINITIONS

    @property
    def is_dispatch(self) -> bool:
        """DECLARE/DEFINE/REGISTER_DISPATCH."""
        return self in _DISPATCH


_DEFINITIONS = frozenset({FactKind.FUNCTION, FactKind.GLOBAL, FactKind.IMPL_FUNC, FactKind.META_FUNC})
_DISPATCH = frozenset({FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH})


class CallDetail(_Text):
    """What a ``call`` fact's ``detail`` says of the call (empty: a plain call by name)."""

    PLAIN = ""
    MEMBER = "member"  # a.b(...)
    FUNCTOR = "functor"  # a functor class constructed at the call
    FUNCTOR_ARG = "functor_arg"  # a functor constructed as an argument
    OBJECT_ARG = "object_arg"  # a functor object or alias passed by name (Note [Functor objects passed by name])
    MACRO_ARG = "macro_arg"  # a function handed to a macro (Note [Functions handed to a macro])
    ARGUMENT = "argument"  # a stub passed on as an argument


class KeyGroup:
    """Groups of dispatch keys, each listed once."""

    COMMON = ("CPU", "CUDA")  # the keys most people ask about
    # The composite keys, in the order that serves a device without a kernel of its own
    # (Note [Composite kernels serve every backend] in resolve/chain.py).
    CEA = "CompositeExplicitAutograd"
    COMPOSITE_NON_FUNCTIONAL = "CompositeExplicitAutogradNonFunctional"
    CIA = "CompositeImplicitAutograd"  # the one key whose kernel decomposes into other operators
    COMPOSITE = (COMPOSITE_NON_FUNCTIONAL, CEA, CIA)
    COMPOSITE_EXPLICIT = (CEA, COMPOSITE_NON_FUNCTIONAL)
    COMPOSITE_IMPLICIT = (CIA,)
    # Keys whose kernels a PyTorch tree mostly does not hold: key -> the repository that registers
    # them (Note [Kernels that live elsewhere] in resolve/missing.py).
    ELSEWHERE = {"XPU": "torch-xpu-ops"}


class Lacking(_Text):
    """What a call does on a key for which an operator has no kernel of its own
    (resolve/missing.py, ``atenmap ops --key K --missing``)."""

    ERROR = "error"  # NotImplementedError (the key's error fallback, or the dispatcher's own)
    CPU_FALLBACK = "cpu_fallback"  # registered to a fallback that runs the CPU kernel
    FALLBACK = "fallback"  # the key's boxed fallback, not known to raise or to run on the CPU
    COMPOSITE = "composite"  # a composite kernel serves it (CPU or CUDA have their own)
    ELSEWHERE = "elsewhere"  # the key's kernels are registered by another repository (XPU)
