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


class OperatorTable:
    """Names and schemas of every operator, for classifying calls and picking overloads. Built from
    the names alone; an operator's overloads are read (``overloads_of``, in yaml order) only when a
    call needs them, so a chain does not decode all ~2,600 operator records."""

    def __init__(self, names: Iterable[str], overloads_of: Callable[[str], list[Operator]]):
        self._overloads_of = overloads_of
        self._by_base: dict[str, list[Operator]] = {}
        self.by_unambiguous: dict[str, str] = {}
        bases = set()
        for name in names:  # yaml order: a later unambiguous name wins, as torchgen's table
            base, _, overload = name.partition(".")
            bases.add(base)
            self.by_unambiguous[f"{base}_{overload}" if overload else base] = name
        self.bases = bases - NOT_OPS

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

    def _by_written(self, name: str) -> OpCall | None:
        if name.endswith("_symint") and name not in self.bases:  # at::foo_symint: foo's SymInt C++ API
            name = name[: -len("_symint")]
        for suffix in ("_outf", "_out"):
            if name.endswith(suffix) and name[: -len(suffix)] in self.bases and name not in self.bases:
                return OpCall(name[: -len(suffix)], "out")
        if name in self.bases:
            return OpCall(name, "inplace" if name.endswith("_") and not name.endswith("__") else "functional")
        return None

    def pick(self, call: OpCall, args: str | None = None, member: bool = False) -> tuple[list[str], bool]:
        """Overload names ``call`` may reach, and whether the choice is certain. ``args``: the
        call's argument text when the index has it; ``member``: ``self.foo(...)`` (self is the
        first argument)."""
        if call.exact:
            return [call.exact], True
        ops = [op for op in self.overloads(call.base) if _variant(op) == call.variant]
        if not ops:
            return [], False
        if len(ops) == 1:
            return [str(ops[0].name)], True
        if args is not None:
            written = (["self"] if member else []) + _split_args(args)
            fitting = [op for op in ops if _fits(op, written, call.variant)]
            if len(fitting) == 1:
                return [str(fitting[0].name)], True
            ops = fitting or ops
        default = [op for op in ops if not op.name.overload or op.name.overload == "out"]
        if default:
            return [str(default[0].name)], False
        return [str(op.name) for op in ops[:3]], False


def _variant(op: Operator) -> str:
    if op.name.name.endswith("_") and not op.name.name.endswith("__"):
        return "inplace"
    return "out" if "!)" in op.schema else "functional"


def _params(op: Operator) -> list[tuple[str, bool]]:
    """(type, has_default) of each parameter, keyword-only ones included, ``out`` ones last."""
    inner = op.schema[op.schema.index("(") + 1: op.schema.rindex(") ->")] if ") ->" in op.schema else ""
    out = []
    for p in _split_args(inner):
        if p == "*":
            continue
        typ, _, rest = p.partition(" ")
        out.append((typ, "=" in rest))
    return out


def _fits(op: Operator, args: list[str], variant: str) -> bool:
    params = _params(op)
    required = sum(1 for _, d in params if not d)
    if not (required <= len(args) <= len(params)):
        return False
    if variant == "out":
        return True  # at::foo_out(out, self, ...) puts outputs first: positions differ from the schema
    for a, (typ, _) in zip(args, params):
        if _LITERAL.match(a.strip()) and typ.startswith("Tensor"):
            return False
    return True


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


__all__ = ["CallSite", "OpCall", "OperatorTable", "KEY_NAMESPACES", "ACCESSORS"]
