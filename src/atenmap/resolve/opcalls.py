"""Calls that reach another ATen operator, and which of its overloads they reach.

Note [Re-dispatch]
~~~~~~~~~~~~~~~~~~
An ATen function often does its work by calling another operator: ``relu`` is
``at::clamp_min(self, 0)``, ``softmax.int`` calls ``at::_softmax``, the flash-attention native calls
``at::_flash_attention_forward``. The kernel that runs is then in that operator's chain, for the
same dispatch key. The forms seen in ATen:

- ``at::foo(...)``, ``at::foo_out(out, ...)``, ``at::foo_outf(..., out)``, ``self.foo(...)``,
  ``self.foo_(...)``, ``at::foo_symint(...)`` (the SymInt C++ API of ``foo``): through the
  dispatcher (the profiler shows ``aten::foo``);
- ``at::_ops::foo_overload::call(...)`` / ``::redispatch(...)``: the operator named exactly, by
  torchgen's unambiguous name (``add_Tensor``);
- ``at::cuda::foo(...)``, ``at::cpu::foo(...)``, ``at::meta::...``, ``at::compositeexplicitautograd::...``:
  torchgen's per-backend functions, which call that backend's kernel directly (no dispatcher);
- ``at::native::foo(...)`` where ``foo`` is the native function of another operator: a plain C++
  call (the resolver follows it as a native, see resolve/chain.py).

Which overload: the written name says the variant (functional, ``_out``/``_outf``, in-place
``foo_``); the call's arguments, where the index has them, decide between overloads of that
variant by arity and by literal scalars (``at::clamp_min(self, 0)`` is ``clamp_min``, not
``clamp_min.Tensor``). Without arguments the default overload wins; else every candidate is shown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

from atenmap.model import Operator

# torchgen's per-backend namespaces -> the dispatch key whose kernel they call directly
KEY_NAMESPACES = {
    "cuda": "CUDA", "cpu": "CPU", "meta": "Meta", "mps": "MPS",
    "compositeexplicitautograd": "CompositeExplicitAutograd",
    "compositeimplicitautograd": "CompositeImplicitAutograd",
    "compositeexplicitautogradnonfunctional": "CompositeExplicitAutogradNonFunctional",
}
# Tensor metadata accessors: operators in the yaml, but noise in a list of what a kernel runs.
ACCESSORS = {"size", "sym_size", "stride", "sym_stride", "dim", "numel", "sym_numel", "is_contiguous",
             "is_complex", "is_floating_point", "is_nonzero", "item", "storage_offset", "is_same_size",
             "is_signed", "is_conj", "is_neg", "is_inference", "is_leaf", "output_nr", "_version"}
# Note [Helper operators after the operator's work]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Kernels reach memory set-up and movement through a few operators: fill_/zero_ (an output or a
# buffer initialised), copy_ (a contiguous or converted copy of an input), resize_, set_,
# clone, contiguous, _to_copy and the factories (empty, zeros, ones, full and their _like / new_ forms).
# F.cross_entropy's own work is log_softmax's and nll_loss's kernels; its fill_ kernels (the
# weight and total_weight buffers) come after them. A run reached through one of these operators
# ranks after every run that is not (resolve/runs.py), unless the operator asked about is one of
# them (``zeros``' work is fill_'s). The names are ATen's own base names.
HELPER_OPERATORS = frozenset({
    "fill", "zero", "copy", "_copy_from", "_copy_from_and_resize", "resize", "resize_as", "clone", "contiguous",
    "_to_copy", "to", "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided",
    "set", "_resize_output",  # a storage set or grown: resize's copy, not the op's work
})


# Note [Methods of other classes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A member call is an operator call only on a tensor: ``lower.to<double>()`` on a ``const Scalar&``
# (rrelu) is Scalar::to, and ``iter.add_output(...)`` a TensorIterator method, whatever operators
# share the name. Where the function declares the receiver with a class (extract/calls.py, Note
# [Member calls on locals]), the call's qual carries it; a class other than these is not a tensor.
# A receiver read with no declared class (a temporary, a field) still counts.
TENSOR_RECEIVERS = {"Tensor", "TensorBase", "Variable", "MaybeOwned", "ExclusivelyOwned", "OptionalTensorRef",
                    "TensorRef", "IValue"}
NOT_OPS = {"native", "cuda", "detail", "internal", "cpu", "mps", "meta", "impl", "vec", "vml", "_ops"}
_LITERAL = re.compile(r"^[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+)[fFlLuU]*$|^(true|false)$")
_SCALARISH = ("Scalar", "int", "float", "bool", "SymInt", "double", "complex")


@dataclass(frozen=True)
class OpCall:
    """A call site that reaches an operator: its base name, variant and (for per-backend calls) key."""

    base: str  # yaml base name: clamp_min, add, _softmax
    variant: str  # functional | out | inplace | exact
    key: str | None = None  # at::cuda::foo -> "CUDA"; None: the chain's own key
    exact: str | None = None  # at::_ops::add_Tensor::call -> "add.Tensor"
    outf: bool = False  # at::foo_outf(..., out): outputs last, as in the schema (foo_out: outputs first)

    @property
    def through_dispatcher(self) -> bool:
        return self.key is None


@dataclass(frozen=True)
class CallSite:
    """A place that reaches an operator outside the index's call facts (a derivatives.yaml formula,
    ``grad * other`` in a formula helper); resolve/backward.py finds them, the Resolver expands them."""

    call: OpCall
    written: str  # as the text has it: "operator*", "threshold_backward", "at::mm"
    file: str
    line: int
    args: str | None = None
    generated: bool = False


def name_table(names: Iterable[str]) -> tuple[dict[str, str], frozenset[str]]:
    """(unambiguous C++ name -> operator name, operator base names) of :class:`OperatorTable`,
    from the operator names in yaml order (a later unambiguous name wins, as torchgen's table)."""
    by_unambiguous: dict[str, str] = {}
    bases = set()
    for name in names:
        base, _, overload = name.partition(".")
        bases.add(base)
        by_unambiguous[f"{base}_{overload}" if overload else base] = name
    return by_unambiguous, frozenset(bases - NOT_OPS)


class OperatorTable:
    """Names and schemas of every operator, for classifying calls and picking overloads. Built from
    the names alone; an operator's overloads are read (``overloads_of``, in yaml order) only when a
    call needs them, so a chain does not decode all ~2,600 operator records."""

    def __init__(self, names: Iterable[str], overloads_of: Callable[[str], list[Operator]],
                 table: "tuple[dict[str, str], frozenset[str]] | None" = None):
        """``table``: :func:`name_table` of ``names``, made before (kept per open index: memo.py)."""
        self._overloads_of = overloads_of
        self._by_base: dict[str, list[Operator]] = {}
        self._picked: dict[tuple, tuple[list[tuple[str, str]], bool]] = {}
        self.by_unambiguous, self.bases = table or name_table(names)

    def overloads(self, base: str) -> list[Operator]:
        if base not in self._by_base:
            self._by_base[base] = self._overloads_of(base)
        return self._by_base[base]

    def classify(self, name: str, qual: str, member: bool) -> OpCall | None:
        """The operator a call reaches, or None for ordinary code. See Note [Re-dispatch]."""
        parts = qual.split("::")
        if len(parts) >= 4 and parts[-4:-2] == ["at", "_ops"] or (len(parts) == 3 and parts[0] == "_ops"):
            if parts[-1] in ("call", "redispatch") and parts[-2] in self.by_unambiguous:
                exact = self.by_unambiguous[parts[-2]]
                return OpCall(exact.split(".")[0], "exact", exact=exact)
            return None
        if member:
            receiver = parts[-2] if len(parts) >= 2 else ""
            if receiver and receiver != "auto" and receiver not in TENSOR_RECEIVERS:
                return None  # Note [Methods of other classes]
            return self._by_written(name) if name not in ACCESSORS else None
        if len(parts) >= 3 and parts[0] == "at" and parts[1] in KEY_NAMESPACES:
            call = self._by_written(name)
            return OpCall(call.base, call.variant, KEY_NAMESPACES[parts[1]]) if call else None
        if len(parts) == 2 and parts[0] in KEY_NAMESPACES and parts[0] not in ("cuda", "cpu"):
            call = self._by_written(name)
            return OpCall(call.base, call.variant, KEY_NAMESPACES[parts[0]]) if call else None
        if parts[0] == "at" and len(parts) == 2:
            return self._by_written(name) if name not in ACCESSORS else None
        return None

    def unqualified(self, name: str) -> OpCall | None:
        """An unqualified call that reaches an operator (Note [Unqualified calls in at::native]); the
        caller checks that ATen defines no function of that name."""
        if not (name.startswith("_") and not name.startswith("__") or name.endswith("_symint")):
            return None
        return self._by_written(name) if name not in ACCESSORS else None

    def _by_written(self, name: str) -> OpCall | None:
        if name.endswith("_symint") and name not in self.bases:  # at::foo_symint: foo's SymInt C++ API
            name = name[: -len("_symint")]
        for suffix in ("_outf", "_out"):
            if name.endswith(suffix) and name[: -len(suffix)] in self.bases and name not in self.bases:
                return OpCall(name[: -len(suffix)], "out", outf=suffix == "_outf")
        if name in self.bases:
            return OpCall(name, "inplace" if name.endswith("_") and not name.endswith("__") else "functional")
        return None

    def pick(self, call: OpCall, args: str | None = None, member: bool = False) -> tuple[list[str], bool]:
        """Overload names ``call`` may reach, and whether the choice is certain. ``args``: the
        call's argument text when the index has it (Note [Arguments of operator calls] in
        extract/calls.py); ``member``: ``self.foo(...)`` (self is the first argument). See Note
        [Choosing the overload]."""
        found, certain = self.candidates(call, args, member)
        return [n for n, _why in found], certain

    def candidates(self, call: OpCall, args: str | None = None,
                   member: bool = False) -> tuple[list[tuple[str, str]], bool]:
        """``([(overload, why), ...], certain)``: See Note [Choosing the overload]."""
        key = (call, args, member)
        if key not in self._picked:
            self._picked[key] = self._candidates(call, args, member)
        return self._picked[key]

    def _autogen_out(self, base: str) -> list[tuple[str, str]]:
        """The functional overload whose result the out= overload ``BASE.out`` (``BASE.X_out``) that
        an entry's ``autogen:`` names copies into its output (Note [An out= overload torchgen makes])."""
        for op in self.overloads(base) + self.overloads(base + "_"):
            for made in op.autogen:
                name, _, overload = made.partition(".")
                functional = base if overload == "out" else f"{base}.{overload.removesuffix('_out')}"
                if name == base and overload.endswith("out") and any(str(o.name) == functional for o in self.overloads(base)):
                    return [(functional, f"{made} is torchgen's (autogen of {op.name}): its kernel calls {functional}, "
                                         "then copies the result into out")]
        return []

    def takes_count(self, call: OpCall, args: str) -> bool:
        """Whether some overload of ``call``'s variant takes as many arguments as ``args`` (the
        call's argument text, a member call's ``self:Tensor`` first) has. Note [A method call no
        overload takes]."""
        if args.endswith("…"):
            return True
        n = len(_split_args(args))
        ops = [op for op in self.overloads(call.base) if _variant(op) == call.variant]
        return not ops or any(sum(1 for _, d in _params(op) if not d) <= n <= len(_params(op)) for op in ops)

    def _candidates(self, call: OpCall, args: str | None, member: bool) -> tuple[list[tuple[str, str]], bool]:
        if call.exact:
            return [(call.exact, "named exactly")], True
        ops = [op for op in self.overloads(call.base) if _variant(op) == call.variant]
        if not ops and call.variant == "out":  # Note [An out= overload torchgen makes]
            return self._autogen_out(call.base), False
        if not ops:
            return [], False
        if len(ops) == 1:
            return [(str(ops[0].name), "the only overload of this variant")], True
        if args is not None and not args.endswith("…"):
            written = (["self:Tensor"] if member else []) + _split_args(args)
            fitting = [op for op in ops if _fits(op, written, call)]
            plain = _named_tensor_free(fitting, written)
            if len(fitting) == 1:
                return [(str(fitting[0].name), f"the only one taking these {len(written)} arguments")], True
            if len(plain) == 1:
                return [(str(plain[0].name), f"the only one taking these {len(written)} arguments "
                                             "without a Dimname (named tensors)")], True
            if plain:
                why = f"takes these {len(written)} arguments; the call does not tell them apart"
                return [(str(op.name), why) for op in plain[:4]], False
            reason = f"default; no overload takes these {len(written)} arguments"
        else:
            reason = "default; arguments not read"
        default = [op for op in ops if not op.name.overload or op.name.overload == "out"]
        if default:
            return [(str(default[0].name), reason)], False
        return [(str(op.name), reason.removeprefix("default; ")) for op in ops[:3]], False


# Note [An out= overload torchgen makes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``autogen: index_put.out`` (on index_put_'s entry) has torchgen make an out= overload that the yaml
# does not list: its kernel, registered as CompositeExplicitAutograd (CompositeViewCopyKernels.cpp),
# calls the functional overload (``at::_ops::index_put::call``), then resizes ``out`` and copies the
# result into it. A call of its C++ API, ``at::index_put_out(...)`` (masked_scatter__mps,
# Indexing.mm:907), found no out= overload and reached nothing; it now reaches the functional one,
# ``index_put``, whose chain is followed (index_put -> index_put_ -> _index_put_impl_ -> the MPS
# index kernel). Read only where the yaml has no out= overload of that name at all (``sum_out``
# keeps its ``sum.IntList_out``), and only when the functional overload is in the yaml (an
# ``_index_put_impl.out`` whose functional is autogenerated too reaches nothing, as before).


# Note [Unqualified calls in at::native]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Inside ``namespace at::native`` an unqualified call finds ``at::native::NAME`` first and, when
# there is none, the enclosing namespace's ``at::NAME``: the operator's C++ API. ATen calls its
# private operators so: adaptive_avg_pool2d's ``return _adaptive_avg_pool2d_symint(input,
# output_size);``. Only two shapes of name are read this way, because a plain name (``exp``,
# ``abs``, ``min``) in a kernel's lambda is the math library's: a name with a leading underscore
# (ATen's private operators) and one ending in ``_symint`` (only torchgen's C++ API has those).
# A name ATen defines as a function itself stays a plain call (the resolver checks the index).


# Note [A method call no overload takes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A method call is read as the operator's Tensor method by its name (``self.foo(...)``), but ATen's
# other classes have methods of the same names: ``options.device().index()`` is c10::Device's, not
# ``Tensor::index`` (cudnn/RNN.cpp's get_dropout_state). torchgen's Tensor methods take the schema's
# parameters after ``self``, required ones without a C++ default, so a method call whose argument
# count no overload of that variant takes is some other class's method, not a call of the operator.


# Note [Choosing the overload]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The same rule for ``at::x(...)``, ``at::x_out(out, ...)``, ``at::x_outf(..., out)`` and
# ``self.x(...)`` (self first): an overload of the written variant fits a call when the call's
# argument count lies between its required and total parameter counts, and no argument is of the
# wrong kind for the parameter at its position: ``at::foo_out`` puts the outputs first, ``_outf`` and
# the schema last. An argument's kind is known when it is a literal (``0``, ``1.5``, ``true``,
# ``"mean"``, ``{0, 1}``) or a name declared in the calling function with a type (``end:Scalar``, Note
# [Arguments of operator calls] in extract/calls.py); a Tensor parameter takes only a Tensor, a
# number literal only a number type (Scalar, int, float, SymInt), a string only a str. Anything else
# fits anything; ``options:TensorOptions`` stands for the C++ API's dtype/layout/device/pin_memory
# group, so it takes the ``ScalarType? dtype`` position. Of several fitting overloads, the ones with
# ``Dimname`` parameters (named tensors) are left out unless an argument is typed Dimname. One
# fitting overload is certain; several are each shown with why; none falls back to the default
# overload (the functional one, or ``.out``).


def _variant(op: Operator) -> str:
    """The C++ API variant of ``op`` (Note [Mutable arguments are not outputs])."""
    if op.name.name.endswith("_") and not op.name.name.endswith("__"):
        return "inplace"
    return "out" if _has_outputs(op.schema) else "functional"


# Note [Mutable arguments are not outputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchgen's out variant writes into keyword-only mutable tensors (``*, Tensor(a!) out``), and its
# C++ API is at::foo_out/at::foo_outf. A schema that mutates a positional argument and has no such
# outputs (``rrelu_with_noise(Tensor self, Tensor(b!) noise, ...)``, ``_batch_norm_with_update``'s
# running stats, ``_fused_adam_``-style lists aside) is a "mutable" kind, called as at::foo(...) like
# a functional one: at::rrelu_with_noise(...) reaches it, not rrelu_with_noise.out.
@lru_cache(maxsize=4096)
def _has_outputs(schema: str) -> bool:
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")] if ") ->" in schema else ""
    params = _split_args(inner)
    if "*" not in params:
        return False
    return any("!" in p.partition(" ")[0] for p in params[params.index("*") + 1:])


def _params(op: Operator) -> tuple[tuple[str, bool], ...]:
    """(type, has_default) of each parameter, keyword-only ones included, ``out`` ones last."""
    return _schema_params(op.schema)


@lru_cache(maxsize=4096)
def _schema_params(schema: str) -> tuple[tuple[str, bool], ...]:
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")] if ") ->" in schema else ""
    out = []
    for p in _split_args(inner):
        if p == "*":
            continue
        typ, _, rest = p.partition(" ")
        out.append((typ, "=" in rest))
    return tuple(out)


def _fits(op: Operator, args: list[str], call: OpCall) -> bool:
    params = _params(op)
    required = sum(1 for _, d in params if not d)
    if not (required <= len(args) <= len(params)):
        return False
    if call.variant == "out" and not call.outf:  # foo_out(out..., self, ...): outputs first
        params = tuple(p for p in params if "!" in p[0]) + tuple(p for p in params if "!" not in p[0])
    return all(_kind_fits(a.strip(), typ) for a, (typ, _) in zip(args, params))


_NUMBER_TYPES = ("Scalar", "int", "float", "SymInt", "complex")
_CPP_TENSORS = {"Tensor", "TensorBase", "Variable"}
_CPP_NUMBERS = {"Scalar", "int64_t", "int", "double", "float", "SymInt", "bool", "size_t", "int32_t", "uint64_t"}
_CPP_LISTS = {"IntArrayRef", "SymIntArrayRef", "OptionalIntArrayRef", "TensorList", "ITensorListRef", "vector",
              "DimVector", "SmallVector", "ArrayRef", "DimnameList"}


def _kind_fits(arg: str, typ: str) -> bool:
    """Whether argument ``arg`` (as stored: a literal, ``name:Type``, or other text) may be passed
    for a parameter of schema type ``typ``. See Note [Choosing the overload]."""
    listy = "[" in typ
    if _LITERAL.match(arg):
        if arg in ("true", "false"):
            return typ.startswith(("bool", "Scalar"))
        return typ.startswith(_NUMBER_TYPES) and not listy
    if arg.startswith('"'):
        return typ.startswith("str")
    if arg.startswith("{"):
        return listy
    name, _, cpp = arg.rpartition(":")
    if not name or not name.isidentifier() or not cpp.isidentifier():
        return True
    tensor_param = typ.startswith("Tensor") and not listy
    if cpp in _CPP_TENSORS:
        return tensor_param
    if cpp in _CPP_NUMBERS:
        return not tensor_param and not listy and not typ.startswith(("str", "ScalarType", "Layout", "Device", "Dimname"))
    if cpp in _CPP_LISTS:
        return listy
    if cpp == "TensorOptions":  # the C++ API folds dtype, layout, device, pin_memory into one argument
        return typ.startswith("ScalarType")
    return True


def _named_tensor_free(ops: list[Operator], written: list[str]) -> list[Operator]:
    """Of several fitting overloads, those without ``Dimname`` parameters when no argument is
    typed as one (the named-tensor overloads take a Dimname or DimnameList that a call spells)."""
    if any(a.endswith((":Dimname", ":DimnameList")) for a in written):
        return ops
    plain = [op for op in ops if "Dimname" not in op.schema]
    return plain or ops


def _split_args(text: str) -> list[str]:
    """Top-level comma split of an argument list (brackets and quotes respected)."""
    out, depth, cur, quote = [], 0, [], ""
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


__all__ = ["CallSite", "OpCall", "OperatorTable", "KEY_NAMESPACES", "ACCESSORS", "HELPER_OPERATORS"]
