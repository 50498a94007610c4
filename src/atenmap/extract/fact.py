"""The record the extractor returns: one thing found in a file (``Fact``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Fact:
    """One thing found in a file. ``scope`` is the index (in the same file's fact list) of the
    enclosing function fact, or -1. Kinds:

    function      name=unqualified, qual=qualified (namespace::Class::name), arg=signature-ish
    global        a ``__global__`` CUDA kernel (otherwise like function)
    impl_func     TORCH_IMPL_FUNC(name)
    meta_func     TORCH_META_FUNC(name) / TORCH_META_FUNC2(name, overload) -> name_overload
    class         struct/class with a body (functors)
    macro_block   NAME(args) { ... } with NAME a macro (TORCH_LIBRARY_IMPL, ...)
    declare_dispatch / define_dispatch / register_dispatch   name=stub; arg=kernel (register),
                  type (declare); detail=macro name (REGISTER_CUDA_DISPATCH, ...)
    call          name=callee's last component, qual=callee as written (templates dropped;
                  ``Type::method`` for a member call on a local of a named class type, see
                  Note [Member calls on locals]), detail="member" for a.b() calls, targs=the
                  explicit template arguments as written (``f<A, B>(x)`` -> ``A, B``)
    launch        name=kernel launched with <<<>>>, detail=launch configuration
                  detail="object_arg" for a functor object passed by name (arg=the object; see
                  Note [Functor objects passed by name] in objects.py), detail="macro_arg" for a
                  function handed to a macro (Note [Functions handed to a macro]); arg=the identifier
                  arguments of a ``*jitted_gpu*`` launcher call
    torch_impl    m.impl("op", fn): name=op, arg=fn text
    include       name=included path
    jit_name      ``constexpr char NAME[] = "fn";``: arg=fn (Note [Jiterator kernels] in jiterator.py)
    jit_code      ``NAME = jiterator_stringify(``: the line of the jiterator code string

    Every fact has ``cond``: the preprocessor condition in force at its line, see
    Note [Preprocessor conditions] in preproc.py. ``function`` facts of explicit specializations
    have detail ``specialization<ARGS>`` (Note [Explicit specializations]).
    """

    kind: str
    name: str
    qual: str
    line: int
    end_line: int
    namespace: str = ""
    scope: int = -1
    arg: str = ""
    detail: str = ""
    via_macro: str = ""
    cond: str = ""
    targs: str = ""
