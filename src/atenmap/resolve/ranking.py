"""Ranking the operators that can launch a kernel: most likely first.

Note [Ranking operators for a kernel]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The upward walk (Note [Walking up to operators] in kernels.py) finds every operator whose chain can
reach a kernel, and how many calls away each is. Distance alone ranks generic callers too high: a
``CUDAFunctor_add`` kernel is also reached by ``index_select`` on SparseCUDA (it adds), and ``sub``
reaches it through ``add_stub`` as closely as ``add`` does. A person reading the name ranks by what the
name says first. So each operator is ranked by, in order:

1. what the name says (``tier``): 0 when the operator's base name is spelled by the kernel's own
   code, its functor or its lambda's enclosing function, with the ``__global__`` function's words
   helping (``indexFuncSmallIndex<..., ReduceAdd>`` -> ``index_add``) (``CUDAFunctor_add`` -> ``add``,
   ``hardsigmoid_kernel(...)::{lambda}`` -> ``hardsigmoid``, ``GroupNormKernelImplInternal`` ->
   ``native_group_norm``, ``normal_and_transform`` -> ``normal``); 1 when the ``__global__`` function's
   own name spells it (``softmax_warp_forward`` -> ``_softmax``, ``CatArrayBatchedCopy`` -> ``cat``);
   2 when a word of the kernel's own code (four letters or more, or an arithmetic word that a ``std::``
   function object gives: ``std::plus`` -> sum) is inside the base name (``cumsum``); 3 otherwise. Spelled means: every word of the base name (``_``-separated, ``native`` and
   ``out`` ignored) is a word of the name (words split at ``_`` and at lower-to-upper case changes),
   or the base name is one of its words with the ``_`` removed (``logsumexp``);
2. of two spelled alike, the one the name says first (``div_floor_kernel_cuda``: ``div`` before
   ``floor``; ``CatArrayBatchedCopy``: ``cat`` before ``copy``, camel-case pieces in their order; lambdas before the functors around them: ``bernoulli_kernel``'s lambda inside
   ``uniform_and_transform`` gives ``bernoulli_``), then the longer (``log_normal`` before ``normal``
   for a ``log_normal_kernel`` lambda, ``log10`` before ``log``); of two holding a word, the one it
   covers more of;
3. of two the name does not tell apart, the one from the more specific step: the step reached by
   fewer operators (Note [Specific steps first]), then the distance: calls from the code the name
   points at up to the operator's kernel (an operator running through ``structured_delegate`` counts
   as its delegate's distance);
4. the dispatch key: the device key (CUDA) before a composite key before another device's
   CUDA-capable key (SparseCUDA, QuantizedCUDA, NestedTensorCUDA...), which users meet less often;
5. the overload the name says: a kernel's ``inplace`` flag (Note [A kernel's inplace flag]), the overload
   words its own names say (Note [Overloads a kernel's name says]), the overload whose arguments are its
   function's parameters (Note [A kernel function's parameters mirror its overload]); then, as the oracle
   records what really launches when nothing says more: the functional one (``add.Tensor``)
   before the in-place one (``add_.Tensor``) before ``out=`` (``add.out``) — a person calls
   ``torch.add`` far more often than ``torch.add(..., out=)``.

Note [Operators that call operators]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A profiler records the innermost operator active at a launch. When the upward walk passes an
operator's own kernel function named like an ``at::`` function (``at::native::where``, which calls of
``at::where(...)`` reach by name) and goes on to the functions that call it, every operator found above
is one that *calls* the first through the dispatcher, and the profiler names the first: those
candidates carry ``through`` and rank after every other, before the tiers. A plain C++ call of a kernel
function crosses no dispatcher; see the next Note.

Note [Plain calls of a kernel]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An operator's kernel often runs another operator's kernel function as a plain C++ function:
``index_select_cuda`` calls ``index_select_out_cuda``, ``where`` calls ``at::native::where_self_out``,
``nonzero_cuda`` calls ``nonzero_out_cuda``. No dispatcher is crossed, so the profiler records only
the caller's operator (``aten::index_select``); the callee's (``index_select.out``) is recorded only
when a user calls that overload itself. So when the walk passes an operator's kernel function whose
name is no operator's ``at::`` function name (no ``at::X``/``at::X_out``/``at::X_outf``: a call of it
can only be a plain one), the operators above are not ``through`` it (their reason names the plain
call), and an operator of the same base name above it is as close as it: the two run one code, and
the overload rule (5. of Note [Ranking operators for a kernel]) puts the functional one first, as a
profile of ``torch.index_select`` shows. A kernel function named like an ``at::`` function
(``at::native::cat``: ``at::cat`` calls reach it by name too) keeps the rule above.
Note [Functors made together]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A name that nests functors (``BUnaryFunctor<float, float, float, MulFunctor<float>>``) was made where
the code names them together: ``div_true_kernel_cuda`` builds ``BUnaryFunctor<...>(MulFunctor<...>(),
1 / b)`` for a division by a scalar, while ``mul_kernel_cuda`` names only ``MulFunctor`` (the wrapper
``BUnaryFunctor`` that ``gpu_kernel_with_scalars`` adds is its own code's). When some functions make
every functor of the name, the operators above the others count as ``partial`` and rank after, like
those that call another operator: what the functor's name spells weighs less than who built it.

Note [Specific steps first]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
A name may point at several steps: ``BinaryFunctor<int, int, bool, CompareEqFunctor<int>>`` at
``CompareEqFunctor`` (made by ``compare_eq_ne_kernel``, for ``eq`` and ``ne``) and at ``BinaryFunctor``
(the wrapper dozens of binary kernels build: ``fmax``, ``fmin``, ...). An operator the name does not
spell is ranked by how many operators reach the step it came from (fewest first), before the distance:
``ne``, which shares ``CompareEqFunctor`` with ``eq`` alone, comes before ``fmax``. A step all
operators share explains nothing about which one ran. (Functor steps only: two launch lines of one
``__global__`` function say nothing of the kind; and not for a library's kernels: there every step
is a call into the library, and the operators that reach a narrow call, ``_int_mm`` reaching
``int8_gemm``, are not the likelier for it.)

Note [Operators that share a step]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Some operators run one functor: ``sub`` calls ``add_stub`` with ``-alpha`` (``CUDAFunctor_add``), ``ne``
builds ``CompareEqFunctor`` with ``EqOpType::NE``. The name spells one of them, so that one ranks
first; the other reaches the same step in as many calls, and its reason says so ("the kernel's name
cannot tell them apart"): a profile's op column, or ``--from-trace``, tells which one ran.

Likewise an operator found by its name only (no call path: ``norm``'s kernel reaches
``linalg_vector_norm``'s through a generated ``at::`` call that the walk does not cross) ranks after
every walked operator, whether or not that one shares a word with the kernel's code: the words of a
functor say what it computes, not who runs it (``AbsMaxOps`` spells ``abs`` and ``max``, found by name
only, while the walk from it reaches the norm kernels that build it: ``linalg_vector_norm`` first).
Only when the walk reaches nothing are the operators its words spell the answer. The answer's head
lifts the first three distinct operators over further overloads of the first (kernels._distinct_first);
that lift picks among the walked operators only, so ``exp`` (its name in ``exp2_kernel_vectorized4_kernel``,
found by name only) stays after ``exp2``'s overloads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from atenmap import devices

__all__ = ["JOINING", "NOISE", "Candidate", "device_inputs", "call_operands", "inplace_flag", "inside", "joining_words", "loop_functor", "merged",
           "name_words", "overload_said", "overload_words", "rank_key", "schema_kinds", "signature_kinds", "spelled", "std_words",
           "tensor_inputs"]

# Words that say nothing about which operator: loop machinery, devices, parts of speech of C++ names.
NOISE = frozenset("""kernel kernels cuda cpu functor functors impl internal op ops native at launch launcher
    template templates detail cuh cu the and of for with out gpu device host vectorized unrolled elementwise
    apply tensor iterator base helper helpers func wrapper void""".split())
# Note [Joining words that name an operator]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``and`` is a noise word of a kernel's name because it joins other words (``normal_and_transform``), but
# the logical and bitwise operators are named with it (``logical_and``, ``bitwise_and``, ``__and__``):
# ``logical_and_kernel_cuda`` spells ``logical_and`` as ``logical_or_kernel_cuda`` spells ``logical_or``.
# So a joining word of the kernel's own names counts for an operator whose name holds it
# (:func:`joining_words`), and only with the other words of that name (:func:`spelled`): ``and`` alone
# spells nothing, and ``normal_and_transform`` still spells ``normal`` only.
JOINING = frozenset({"and", "of", "for", "with", "the"})
_OP_NOISE = frozenset({"native", "out", "", "cuda", "impl", "special", "linalg"})  # torch.special.*, torch.linalg.*


@dataclass(frozen=True)
class Candidate:
    """One operator the walk reached: ``op`` as the yaml names it (``add.out``), its dispatch ``key``,
    how many calls from the anchor ``dist``, the anchor's fact id ``origin``, and ``via``: the
    delegate's name when it runs through ``structured_delegate``."""

    op: str
    key: str
    dist: int
    origin: int
    via: str = ""
    through: str = ""  # the operator whose kernel the walk passed on its way up (Note [Operators that call operators])
    partial: bool = False  # walked from code that makes only some of the name's functors (Note [Functors made together])
    direct: str = ""  # the operator whose kernel it runs through at::<key>:: (Note [Direct backend calls])


# The standard library's function objects say the arithmetic (``scan_dim(..., std::plus<float>())`` is a
# cumsum, ``std::multiplies`` a cumprod, ``std::greater_equal`` a cummax).
_STD_FUNCTORS = {"plus": "sum add", "multiplies": "prod mul", "minus": "sub", "divides": "div", "greater": "max",
                 "greater_equal": "max", "less": "min", "less_equal": "min", "logical_and": "all and",
                 "logical_or": "any or", "maximum": "max", "minimum": "min", "bit_and": "and", "bit_or": "or",
                 "bit_xor": "xor"}
_STD_RE = re.compile(r"\bstd::(?:__\w+::)?(" + "|".join(sorted(_STD_FUNCTORS, key=len, reverse=True)) + r")\b")


def std_words(text: str) -> dict[str, int]:
    """Words of the operators that the ``std::`` function objects named in a kernel name compute, placed
    after every word of the kernel's own names (see :func:`name_words`)."""
    return {w: 10_000 for m in _STD_RE.finditer(text[:4000]) for w in _STD_FUNCTORS[m.group(1)].split()}


def name_words(names) -> dict[str, int]:
    """The words of C++ names, each with the place it first appears (earlier names first):
    ``CUDAFunctor_add`` -> {add}; ``GroupNormKernelImplInternal`` -> {group, norm, groupnorm, ...};
    ``log10_kernel_cuda`` -> {log, log10}; lower case, noise words dropped. Each ``_``-separated part
    is a word, and so are its camel-case pieces and each run of two or three of them joined
    (``LogSoftMaxForwardEpilogue`` -> log, soft, max, softmax, logsoftmax, ...)."""
    out: dict[str, int] = {}
    at = 0
    for n in names:
        for part in re.split(r"[_\W]+", n or ""):
            if not part:
                continue
            pieces = [t.lower() for t in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", part)]
            found = [(part.lower(), 0), *((p, i) for i, p in enumerate(pieces))]
            for k in (2, 3):
                found += [("".join(pieces[i:i + k]), i) for i in range(len(pieces) - k + 1)]
            for w, i in found:  # a camel-case piece placed after the ones before it (CatArrayBatchedCopy: cat, copy)
                if w not in NOISE and not w.isdigit():
                    out[w] = min(out.get(w, at + i / 100), at + i / 100)
            at += 1
        at += 100  # the next name's words come after this one's
    return out


def merged(*words: dict[str, int]) -> dict[str, int]:
    """Several word tables as one, each word at its earliest place."""
    out: dict[str, int] = {}
    for table in words:
        for w, i in table.items():
            out[w] = min(i, out.get(w, i))
    return out


def _parts(op: str) -> list[str]:
    base = op.split(".")[0].strip("_").lower()
    return [p for p in base.split("_") if p not in _OP_NOISE]


def spelled(op: str, words: set[str]) -> bool:
    """Whether the words of a name spell operator ``op``'s base name. See Note [Ranking operators for a kernel]."""
    parts = _parts(op)
    if not parts or not words or all(p in JOINING for p in parts):  # Note [Joining words that name an operator]
        return False
    return all(p in words for p in parts) or "".join(parts) in words


def joining_words(names) -> dict[str, float]:
    """The joining words (``and``...) of C++ names with their places, which :func:`name_words` drops as
    noise. See Note [Joining words that name an operator]."""
    return {w: i for w, i in overload_words(names).items() if w in JOINING}


def inside(op: str, words: set[str]) -> float:
    """How much of ``op``'s base name a word of four letters or more, or a known arithmetic word, covers
    (``cumsum`` holds ``sum``: 0.5; ``logcumsumexp`` too: 0.25); 0 when none does. Weaker than
    :func:`spelled`."""
    base = "".join(_parts(op))
    found = [len(w) for w in words if (len(w) >= 4 or w in _ARITH) and w in base]
    return max(found) / len(base) if found and base else 0.0


_ARITH = frozenset(w for v in _STD_FUNCTORS.values() for w in v.split())


def _key_rank(key: str) -> int:
    if devices.key_device(key) == "cuda" and key == "CUDA":
        return 0
    if key.startswith("Composite") or devices.key_device(key) == "any":
        return 1
    return 2


def _overload_rank(op: str) -> int:
    name, _, overload = op.partition(".")
    if "out" in overload.split("_") or overload.endswith("out") or overload.startswith("out"):
        return 2
    return 1 if name.endswith("_") and not name.endswith("__") else 0


# Note [Overloads a kernel's name says]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An overload's name is part of its schema (native_functions.yaml: ``random_.from``, ``bernoulli_.Tensor``,
# ``pow.Tensor_Tensor``), and ATen often names the code that runs one overload's form after it:
# ``random_from_to_kernel`` is what ``random_(from, to)`` runs (``random_()`` runs ``random_kernel``),
# ``bernoulli_tensor_cuda_kernel`` what ``bernoulli_(Tensor p)`` runs (``bernoulli_(float p)`` runs
# ``bernoulli_scalar``), ``pow_tensor_tensor_kernel`` what ``pow(Tensor, Tensor)`` runs. So of the
# overloads of one operator that rank alike, the one whose overload words the kernel's own names say
# most (each word said counts for it, each not said against it) comes first, then the one whose word the
# name says first (``random_from_to``: ``.from`` before ``.to``). The words of every name are read here,
# ``tensor`` too (a noise word for the operator's base name), and never a type word (``bernoulli_.float``:
# ``float`` names the type of ``p``, and every ``<float>`` kernel says it), ``out``, nor a word of the
# operator's own name (``max.dim_max``, the ``out=`` form of ``max.dim``: every max kernel says ``max``).
# An overload's name is read in words as the kernel's names are, camel case split (``_foreach_add.ScalarList``:
# ``scalar`` and ``list``, both said by ``BinaryOpScalarListFunctor``, so it comes before ``.Scalar`` and ``.List``,
# each of which says only one of them); a token the kernel spells whole (``scalarlist``) says all its words.
# An ``out=`` form's overload is named after its output argument (``avg_pool3d_backward.grad_input``), which
# says what a kernel writes (``avg_pool3d_cuda_update_grad_input``), not which overload ran: its words do
# not count (kernels.py reads the schema).
_TYPE_WORDS = frozenset("float double int long bool half complex bfloat16 out".split())
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # a name's camel-case words (ScalarList: Scalar, List)


def overload_words(names) -> dict[str, float]:
    """Every word of C++ names with its place, noise words kept (``bernoulli_tensor_cuda_kernel`` ->
    bernoulli, tensor, cuda, kernel). See Note [Overloads a kernel's name says]."""
    out: dict[str, float] = {}
    at = 0
    for n in names:
        for part in re.split(r"[_\W]+", n or ""):
            for piece in [part.lower(), *(t.lower() for t in _CAMEL.findall(part))]:
                if piece and piece not in out:
                    out[piece] = at
            at += 1
    return out


def overload_said(op: str, words: dict[str, float]) -> tuple[int, float]:
    """(minus the overload words ``words`` says less those it does not, the place of the first it says):
    smaller first. ``random_.from`` for ``random_from_to_kernel``: (-1, 1). See Note [Overloads a
    kernel's name says]."""
    name, _, overload = op.partition(".")
    whole: dict[str, str] = {}  # each word of the overload -> the token it is in (ScalarList: scalar, list)
    for token in overload.split("_"):
        for w in [t.lower() for t in _CAMEL.findall(token)] or [token.lower()]:
            whole.setdefault(w, token.lower())
    parts = set(whole) - {""} - _TYPE_WORDS - set(name.lower().split("_"))
    said = [words[w] if w in words else words[whole[w]] for w in parts if w in words or whole[w] in words]
    if not said:
        return (0, 10_000)
    return (len(parts) - 2 * len(said), min(said))


def inplace_flag(op: str, affirmed: frozenset, denied: frozenset) -> int:
    """0 when a kernel's ``inplace`` template flag agrees with overload ``op`` (or says nothing), 1 when not.

    Note [A kernel's inplace flag]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    Some kernels carry whether they write their input as a template flag
    (``triu_tril_kernel<scalar_t, IndexType, upper, elements_per_thread, inplace>``, TriangularOps.cu):
    the structured ``triu_`` passes ``inplace = true`` (its output is ``self``), ``triu`` and
    ``triu.out`` pass ``false``. By Note [Template flags of a kernel] the name's ``true`` says the
    in-place overload (``triu_``, a name ending in ``_``) ran, its ``false`` that another did."""
    if "inplace" not in affirmed and "inplace" not in denied:
        return 0
    name = op.partition(".")[0]
    mutating = name.endswith("_") and not name.endswith("__")
    return int(mutating != ("inplace" in affirmed))


# Note [A kernel function's parameters mirror its overload]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The function a kernel's lambda is written in is often the kernel an overload's dispatch runs, and the
# name prints its parameters: ``normal_kernel(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)``
# is what ``normal_(Tensor self, float mean, float std, *, Generator?)`` runs, a tensor and two numbers;
# ``normal.Tensor_float(Tensor mean, float std)`` runs it after filling its output from ``mean``, one
# number; ``bernoulli_tensor_cuda_kernel(TensorBase const&, TensorBase const&, PhiloxCudaState)`` is
# ``bernoulli_.Tensor(Tensor self, Tensor p)``'s, not ``bernoulli_.float(Tensor self, float p)``'s. So the
# parameters are read as a sequence of kinds (a tensor, a number, a list), the generator and RNG state
# left out, and so is each overload's schema (its ``out=`` tensors and generator left out); of the
# overloads that rank alike, one whose sequence is the function's comes first. A parameter of another
# kind (a string, a dtype, a struct) makes the function's sequence unknown, and nothing is moved.
_NUMBER_TYPES = frozenset("double float long int bool short char unsigned signed c10::Scalar at::Scalar "
                          "Scalar c10::SymInt SymInt int64_t int32_t uint64_t".split())


def signature_kinds(signature: str) -> tuple[str, ...] | None:
    """``(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)`` -> ("T", "N", "N"); None when
    a parameter is of another kind (or there is no list). See Note [A kernel function's parameters mirror
    its overload]."""
    if not signature.startswith("(") or not signature.endswith(")"):
        return None
    out = []
    for p in (x.strip() for x in _split_params(signature[1:-1])):
        if not p or "Generator" in p or "PhiloxCudaState" in p:
            continue
        bare = re.sub(r"\b(const|volatile)\b|[&*]", " ", p).split()
        if any("Tensor" in w for w in bare) and "ArrayRef" not in p and "List" not in p:
            out.append("T")
        elif "ArrayRef" in p or "std::vector" in p:
            out.append("L")
        elif bare and all(w in _NUMBER_TYPES for w in bare):
            out.append("N")
        else:
            return None
    return tuple(out)


def _split_params(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "<(") - (ch in ">)")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]] if text.strip() else parts


def schema_kinds(schema: str) -> tuple[str, ...] | None:
    """``normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> ...`` ->
    ("T", "N", "N"): its arguments' kinds, ``out=`` tensors and the generator left out; None when an
    argument is of another kind (``str``, ``ScalarType``)."""
    args = schema[schema.find("(") + 1: schema.rfind(") ->") if ") ->" in schema else len(schema)]
    out, keyword = [], False
    for a in (x.strip() for x in args.split(",")):
        if a == "*":
            keyword = True
            continue
        kind = a.split(" ")[0].rstrip("?")
        if not kind or kind.startswith("Generator"):
            continue
        if "[" in kind:
            out.append("L")
        elif kind.startswith("Tensor"):
            if keyword and "!" in kind:
                continue  # an out= tensor
            out.append("T")
        elif kind in ("float", "int", "bool", "Scalar", "SymInt"):
            out.append("N")
        else:
            return None
    return tuple(out)


def scalar_operand_form(functors: tuple[str, ...] | list[str]) -> bool | None:
    """Whether a kernel's elementwise wrapper says one operand was a CPU scalar (``AUnaryFunctor``,
    ``BUnaryFunctor``: True), that both were tensors on the device (``BinaryFunctor``: False), or nothing
    (None). See Note [Scalar operands of a binary kernel]."""
    last = {f.rsplit("::", 1)[-1] for f in functors}
    if last & {"AUnaryFunctor", "BUnaryFunctor"}:
        return True
    return False if "BinaryFunctor" in last else None


# Note [Operands a loop kernel was given]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The TensorIterator loops name the array of operand pointers they were launched with:
# ``vectorized_elementwise_kernel<4, CompareFunctor<float>, std::array<char*, 3ul>>`` had 3 operands
# on the device, the output and two inputs. A CPU scalar never is one (gpu_kernel_with_scalars takes it
# out of the array and into the functor, cuda/Loops.cuh), so an overload that takes fewer tensors than
# that (``ge.Scalar(Tensor self, Scalar other)``: one) did not launch it: it ranks after the others
# within the tier its name earns, as Note [Scalar operands of a binary kernel]. Its ``out=`` tensor is
# no input; an in-place ``self`` is. Only this array says the count: ``elementwise_kernel<128, 4,
# gpu_kernel_impl<...>::{lambda}>`` does not, and says nothing here.
_OPERANDS = re.compile(r"\bstd::array<char\s*\*\s*,\s*(\d+)u?l?>")


#
# Note [Operands a loop functor takes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``elementwise_kernel<128, 4, gpu_kernel_impl_nocast<CompareFunctor<float>>(...)::{lambda(int)#1}>`` (the
# loop for non-contiguous operands) names no operand array, but it names the functor the loop calls once
# per element, and that functor's call operator takes one value per device input:
# ``CompareFunctor::operator()(scalar_t a, scalar_t b)`` two, so ``ge.Tensor`` launched it and ``ge.Scalar``
# did not (a CPU scalar is taken out of the operands and compared in ``compare_scalar_kernel``'s lambda,
# CompareKernels.cu). So when the name has no ``std::array``, the functor handed to ``gpu_kernel_impl`` /
# ``gpu_kernel_impl_nocast`` is looked up and the parameters of its ``operator()`` counted
# (:func:`call_operands`); the count ranks as the array's would.
_LOOP_FUNCTOR = re.compile(r"\bgpu_kernel_impl(?:_nocast)?<([\w:() ]*?)<")  # (anonymous namespace):: allowed
_CALL_OPERATOR = re.compile(r"\boperator\s*\(\s*\)\s*\(([^()]*)\)")


def loop_functor(demangled: str) -> str:
    """The class a TensorIterator loop kernel calls per element (``CompareFunctor``), "" when the name
    shows none. See Note [Operands a loop functor takes]."""
    m = _LOOP_FUNCTOR.search(demangled[:3000])
    short = m.group(1).rsplit("::", 1)[-1].strip() if m else ""
    return short if re.fullmatch(r"\w+", short) else ""


def call_operands(text: str) -> int | None:
    """How many parameters the first ``operator()`` in a class's text takes; None when there is none."""
    m = _CALL_OPERATOR.search(text)
    if not m:
        return None
    params = m.group(1).strip()
    return len(params.split(",")) if params and params != "void" else 0


def device_inputs(demangled: str) -> int | None:
    """The tensor inputs a loop kernel's ``std::array<char*, N>`` says it was given (N - 1), or None."""
    m = _OPERANDS.search(demangled[:3000])
    return int(m.group(1)) - 1 if m and int(m.group(1)) > 1 else None


def tensor_inputs(schema: str) -> int:
    """The tensors a schema takes as inputs: ``Tensor``/``Tensor?`` arguments, an ``out=`` one (a
    mutable tensor after ``*``) left out, a list of tensors any number (99). ``ge.Scalar(Tensor self,
    Scalar other)``: 1."""
    args = schema[schema.find("(") + 1: schema.rfind(") ->") if ") ->" in schema else len(schema)]
    count, keyword = 0, False
    for a in args.split(","):
        a = a.strip()
        if a == "*":
            keyword = True
            continue
        kind = a.split(" ")[0]
        if kind.startswith("Tensor[]") or kind.startswith("Tensor?[]"):
            return 99  # a list: any number
        if kind.startswith("Tensor") and not (keyword and "!" in kind):
            count += 1
    return count


def _form_miss(op: str, scalar: bool | None) -> bool:
    """Whether overload ``op`` cannot have launched a kernel of that operand form.

    Note [Scalar operands of a binary kernel]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A binary op's CUDA kernel is launched through ``gpu_kernel_with_scalars`` (or its ``opmath_`` and
    ``_symmetric_`` forms, cuda/Loops.cuh): when an operand is a CPU scalar the functor is wrapped in
    ``AUnaryFunctor``/``BUnaryFunctor`` (the scalar held by value), otherwise in ``BinaryFunctor``. An
    overload that takes a ``Scalar`` (``eq.Scalar``, ``pow.Tensor_Scalar``, ``add.Scalar``) wraps it as a
    0-dim CPU tensor (``wrapped_scalar_tensor``), so it always launches the unary wrapper: a kernel
    named with ``BinaryFunctor`` was not launched by it. The other way does not hold (a ``.Tensor``
    overload given a 0-dim CPU tensor launches ``AUnaryFunctor`` too), so only that one case is
    ranked down, within the tier its name earns."""
    if scalar is not False:
        return False
    overload = op.partition(".")[2]
    return "Scalar" in overload.split("_")


def rank_key(c: Candidate, own: dict[str, int], function: dict[str, int], denied: frozenset = frozenset(),
             shared: int = 0, scalar: bool | None = None, affirmed: frozenset = frozenset(), few: bool = False,
             said: dict[str, float] | None = None, mirrors: bool = False) -> tuple:
    """The sort key of a candidate (smaller first); ``own``: the words of the kernel's lambdas and
    functors, ``function``: of its ``__global__`` function, each with its place (:func:`name_words`);
    ``denied``: words the kernel's ``false`` template flags say it is not; ``shared``: how many
    operators reach the step ``c`` came from (Note [Specific steps first]); ``scalar``: the operand
    form its wrapper says (:func:`scalar_operand_form`); ``affirmed``: words the kernel's ``true`` template
    flags say it is (Note [Template flags of a kernel] in kernelflags.py); ``few``: the overload takes fewer
    tensors than the loop kernel's name shows it was given (Note [Operands a loop kernel was given]);
    ``said``: every word of the kernel's own names (Note [Overloads a kernel's name says]); ``mirrors``: the
    overload's arguments are the kernel function's parameters (Note [A kernel function's parameters mirror
    its overload]).
    See Note [Ranking operators for a kernel]."""
    parts = _parts(c.op)
    both = merged(own, function)
    if denied and any(p in denied for p in parts):  # Note [Template flags of a kernel] in kernelflags.py
        tier, fit = 3, (1, 0)
    elif spelled(c.op, both) and (spelled(c.op, own) or any(p in own for p in parts)):
        tier, fit = 0, (_place(parts, both), -len("".join(parts)))
    elif spelled(c.op, function):
        tier, fit = 1, (_place(parts, function), -len("".join(parts)))
    elif inside(c.op, own):
        tier, fit = 2, (0, -inside(c.op, own))
    else:  # (a word of the __global__ function inside an operator's name says too little: reduce_kernel)
        tier, fit = 3, (0, 0)
    shared = shared if tier == 3 else 0  # Note [Specific steps first]: for operators the name does not spell
    # of two the name spells alike, the one holding more words of a true flag (is_log_softmax: log)
    flagged = -sum(p in affirmed for p in parts)
    return (bool(c.through) or c.partial, tier, _form_miss(c.op, scalar) or few, flagged, fit, shared, c.dist, _key_rank(c.key),
            inplace_flag(c.op, affirmed, denied), overload_said(c.op, said or {}), not mirrors, _overload_rank(c.op),
            len(c.op), c.op, c.key)


def _place(parts: list[str], words: dict[str, int]) -> int:
    """Where the name first says the operator: the earliest place of its first part (or of its parts
    joined)."""
    places = [words[w] for w in (parts[0], "".join(parts)) if w in words]
    return min(places) if places else 10_000
