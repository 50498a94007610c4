"""The records a kernel name parses into: :class:`KernelName` and the lambdas named in it, :class:`LambdaRef`.

Note [Lambda ordinals]
~~~~~~~~~~~~~~~~~~~~~~
``{lambda(float)#1}`` is how the demangler prints an unnamed closure type. Per the Itanium C++ ABI
(5.1.8, closure types), the number counts the closures *with the same parameter list* in the same
enclosing scope, in lexical order, starting at 1. So ``direct_copy_kernel_cuda(...)::{lambda()#3}`` is
the third ``[&]() {...}`` / ``[&] {...}`` lambda written directly in the body of
``direct_copy_kernel_cuda`` — usually an ``AT_DISPATCH_*`` case — and ``{lambda(float)#1}`` nested in
it is the first lambda taking one ``float`` inside that one. :class:`LambdaRef` keeps the whole chain.
"""
from __future__ import annotations

from dataclasses import dataclass

MAX_NAME_CHARS = 64 * 1024  # longer input is cut: real kernel names stay well below 20 KiB
MAX_NESTING = 100  # bracket levels analysed; real names nest about 15 deep

KINDS = ("kernel", "library", "memcpy", "memset", "unknown")


@dataclass(frozen=True)
class LambdaRef:
    """A lambda named in a kernel's template arguments: where it is written. See Note [Lambda ordinals].

    For ``at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float)#1}``:
    ``enclosing="at::native::exp_kernel_cuda"``, ``enclosing_name="exp_kernel_cuda"``, ``ordinal=2``,
    ``signature="(at::TensorIteratorBase&)"``, ``chain=("{lambda()#2}", "{lambda(float)#1}")``.

    A lambda written inside a call operator records class and method both:
    ``at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}``
    gives ``enclosing="at::native::sum_functor::operator()"`` and ``enclosing_name="sum_functor"`` — the
    name to search for in the source, since ``operator()`` alone finds nothing. Template arguments are
    removed from ``enclosing``; ``signature`` is the enclosing function's parameter list as printed.
    """

    enclosing: str
    enclosing_name: str
    ordinal: int  # the outermost lambda's #N (1-based, as printed); 0 where the text did not show it
    signature: str
    chain: tuple[str, ...] = ()  # every lambda level, outermost first; the ``operator()() const`` between them dropped
    # the enclosing function is a template instantiated with another lambda or functor
    # (``gpu_kernel_impl_nocast<pow_tensor_tensor_kernel(...)::{lambda...}>(...)::{lambda(int)#1}``): this
    # lambda wraps that code, it is loop machinery, not the operator's own
    wraps: bool = False

    def __str__(self) -> str:
        return "::".join([f"{self.enclosing}{self.signature}", *self.chain])


@dataclass(frozen=True)
class KernelName:
    """One kernel name, parsed. ``raw`` is kept verbatim; every other field is derived from it.

    ``kind`` is one of :data:`KINDS`. ``kernel``: a kernel not matched by :data:`LIBRARY_RULES` (ATen's,
    or an extension's); ``library``: matched, ``library`` says which; ``unknown``: not a GPU kernel name
    we could read (host-side API names, operator names, text) — ``function`` is then a best guess or "".
    """

    raw: str
    demangled: str  # decorations removed, demangled if it was mangled (``_Z...``), whitespace runs collapsed
    kind: str
    function: str  # unqualified __global__ function, e.g. "vectorized_elementwise_kernel"
    qualname: str  # "at::native::vectorized_elementwise_kernel"; no template arguments
    namespaces: tuple[str, ...]  # qualifiers before the function (namespaces, or a class)
    template_args: tuple[str, ...]  # the function's own template arguments, split at depth-0 commas
    functors: tuple[str, ...]  # class names inside the template arguments, qualified, without their arguments
    lambdas: tuple[LambdaRef, ...]  # in order of appearance of their first lambda; no duplicates
    library: str | None
    detail: str  # one short sentence for people
    truncated: bool = False  # the tool cut or abbreviated the name; fields describe the visible part
    notes: tuple[str, ...] = ()  # what was dropped, cut, or could not be done
    params: int | None = None  # how many parameters the function's own list shows; None: no list shown

    def __str__(self) -> str:
        return self.demangled
