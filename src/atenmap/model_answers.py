"""The records of the Index verbs other than ``chain``: an operator's keys and kernels (``ops``),
lookups and search hits, kernel and ``where`` answers, the backward (derivatives.yaml, the autograd
node) and torch.compile's facts. Frozen, and public like model.py's (import them from here, not from
model.py, which does not know them: model_answers imports model, never the other way). They live
apart so that a chain query, which never makes one, does not pay for creating their dataclasses (Note [Start-up budget] in
cli/__init__.py). The coordinate rule of model.py holds here too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atenmap.model import KeyChain, Location, Operator, PythonCall, Step

# ---- results of the Index verbs (api.py) -------------------------------------------------------
# Public, frozen, built once by the resolve layer; every layer above may read them.


@dataclass(frozen=True)
class KeyKernel:
    """One dispatch key of an operator and the kernel it runs. ``via``: the ``structured_delegate``
    whose kernel this is, when the operator does not list the key itself (torchgen fills it in)."""

    key: str
    kernel: str
    via: str | None = None

    def __str__(self) -> str:
        return f"{self.kernel} (via {self.via})" if self.via else self.kernel


@dataclass(frozen=True)
class OperatorKernels:
    """``Index.ops()``: an operator and every key it runs, its own and its delegate's."""

    op: Operator
    runs: tuple[KeyKernel, ...]

    def to_dict(self) -> dict:
        o = self.op
        return {"op": str(o.name), "schema": o.schema, "yaml": {"file": o.loc.file, "line": o.loc.line},
                "kind": o.kind, "structured_delegate": str(o.structured_delegate) if o.structured_delegate else None,
                "dispatch": {d.key: d.kernel for d in o.dispatch}, "runs": {r.key: str(r) for r in self.runs}}


@dataclass(frozen=True)
class Lack:
    """``Index.missing(key)``: an operator with no kernel of its own for ``key`` and what a call
    there does (``outcome``, a ``kinds.Lacking``), said in one line (``says``). ``at``: the function
    that raises or falls back (or None: the dispatcher's own error); ``registered``: the line that
    registers it for this operator or key; ``served_by``: the composite key, for ``composite``."""

    op: Operator
    key: str
    outcome: str
    says: str
    at: Location | None = None
    registered: Location | None = None
    served_by: str | None = None

    def to_dict(self) -> dict:
        o = self.op
        return {"op": str(o.name), "yaml": {"file": o.loc.file, "line": o.loc.line}, "key": self.key,
                "outcome": str(self.outcome), "says": self.says,
                "at": {"file": self.at.file, "line": self.at.line} if self.at else None,
                "registered": {"file": self.registered.file, "line": self.registered.line} if self.registered else None,
                "served_by": self.served_by, "dispatch": {d.key: d.kernel for d in o.dispatch}}


@dataclass(frozen=True)
class OperatorHit:
    """One operator that can launch a kernel, as ``Index.kernel`` ranks them: ``op`` is
    ``"aten::name.overload"`` (``"aten::mm"`` for a default overload), ``key`` the dispatch key whose
    kernel reaches it, ``step`` the place on its way that the kernel name points at (the functor, the
    lambda, the launch line, the library call), ``reason`` why it stands where it does."""

    op: str
    key: str
    step: Step | None
    reason: str

    def label(self) -> str:
        """``"aten::add.out [CUDA]"``."""
        return f"{self.op} [{self.key}]"

    def to_dict(self) -> dict:
        return {"op": self.op, "key": self.key, "step": self.step.to_dict() if self.step else None,
                "reason": self.reason}


@dataclass(frozen=True)
class KernelMatch:
    """``Index.kernel(name)``: what the index knows about one kernel name as a profiler prints it."""

    query: str  # the name as given
    kind: str  # kernel, library, memcpy, memset (resolve/kernelname)
    function: str  # the unqualified __global__ function ("" for library kernels without one)
    qualname: str
    detail: str = ""
    definition: Step | None = None  # the __global__ function
    launches: tuple[Step, ...] = ()
    functors: tuple[Step, ...] = ()  # op-specific functors and the code enclosing its lambdas
    hits: tuple[OperatorHit, ...] = ()  # operators that can launch it, most likely first
    library: str | None = None
    library_calls: tuple[Step, ...] = ()  # ATen lines that call into the library
    notes: tuple[str, ...] = ()
    nearest: tuple[str, ...] = ()  # names of __global__ functions close to it, when nothing matched
    family: str = ""  # what the kernel does, as its name says: "gemm", "conv dgrad", "radix sort", "elementwise"
    dtype: str = ""  # the element type its name encodes: "float", "bf16", "tf32", "" when it does not say
    # the one line of ``notes`` that says the tree lacks the name's code and names the tree's version
    # ("" when the tree has it): a trace's answer adds the torch version the trace records to it
    version_note: str = ""

    @property
    def operators(self) -> tuple[str, ...]:
        """``hits`` as labels, ``"aten::exp.out [CUDA]"``, same order."""
        return tuple(h.label() for h in self.hits)

    @property
    def found(self) -> bool:
        return bool(self.definition or self.functors or self.launches or self.library or self.hits)

    def to_dict(self) -> dict:
        return {
            "query": self.query[:2000], "kind": self.kind, "function": self.function, "qualname": self.qualname,
            "library": self.library, "family": self.family, "dtype": self.dtype, "detail": self.detail,
            "definition": self.definition.to_dict() if self.definition else None,
            "launches": [s.to_dict() for s in self.launches], "functors": [s.to_dict() for s in self.functors],
            "operators": [h.to_dict() for h in self.hits], "library_calls": [s.to_dict() for s in self.library_calls],
            "notes": list(self.notes), "nearest": list(self.nearest),
        }


@dataclass(frozen=True)
class Where:
    """``Index.where(file, line|function)``: the function there and the operators reaching it."""

    function: str  # qualified name
    loc: Location  # its first line
    end_line: int
    operators: tuple[str, ...]  # "aten::mul.out [CUDA]", nearest first

    def to_dict(self) -> dict:
        return {"function": self.function, "file": self.loc.file, "line": self.loc.line, "end_line": self.end_line,
                "operators": list(self.operators)}


@dataclass(frozen=True)
class SearchHit:
    """``Index.search(pattern)``: one operator, stub, kernel or function; see Note [Search ranking]
    in resolve/search.py."""

    kind: str  # op, stub, kernel, function
    name: str
    file: str
    line: int
    extra: str = ""
    rank: int = 3
    generated: bool = False  # in a file torchgen wrote (its path is absolute, in atenmap's cache)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "file": self.file, "line": self.line, "extra": self.extra,
                "rank": self.rank, "generated": self.generated}


@dataclass(frozen=True)
class IndexedFile:
    """``Index.files()``: one file the index holds."""

    path: str  # relative to the source root; absolute for torchgen's output
    size: int
    generated: bool


@dataclass(frozen=True)
class PythonFunction:
    """A name users type that is Python above the bindings (Note [Python functions above the
    bindings] in extract/pyfuncs.py): a composite ``def`` (its ``calls``: the operators it reaches)
    or an ``alias`` of a binding (``F.linear`` is ``torch._C._nn.linear``)."""

    name: str  # torch.nn.functional.cross_entropy
    loc: Location
    calls: tuple[PythonCall, ...] = ()
    alias: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "file": self.loc.file, "line": self.loc.line, "alias": self.alias,
                "calls": [c.to_dict() for c in self.calls]}


# ---- backward (Index.backward) -----------------------------------------------------------------
# tools/autograd/derivatives.yaml, the autograd node the checkout's codegen makes of it, and the
# chains of the operators its formulas call (resolve/backward.py).


@dataclass(frozen=True)
class Formula:
    """One line of a derivatives.yaml entry: the gradient of ``names`` (inputs; ``kind`` backward)
    or the forward-mode tangent of ``names`` (outputs: ``result``, ``result0``, ...; ``kind`` forward)."""

    names: tuple[str, ...]  # ("self",), ("self", "other"), ("result",)
    formula: str  # as written: mul_tensor_backward(grad, other, self.scalar_type())
    loc: Location
    kind: str  # backward | forward
    dispatch: str = "Default"  # the entry's `dispatch:` sub-section (Default, AutogradNestedTensor)

    @property
    def status(self) -> str:
        """not_implemented, non_differentiable, auto_element_wise, auto_linear, or "" (a formula)."""
        f = self.formula.strip()
        for word in ("not_implemented", "non_differentiable", "auto_element_wise", "auto_linear"):
            if f == word or f.startswith(word + "("):
                return word
        return ""

    def to_dict(self) -> dict:
        return {"names": list(self.names), "formula": self.formula, "file": self.loc.file, "line": self.loc.line,
                "kind": self.kind, "dispatch": self.dispatch, "status": self.status}


@dataclass(frozen=True)
class DerivativeEntry:
    """One ``- name:`` entry of derivatives.yaml (keyed by the full schema)."""

    op: str  # mul.Tensor
    schema: str  # mul.Tensor(Tensor self, Tensor other) -> Tensor
    loc: Location
    formulas: tuple[Formula, ...]
    output_differentiability: tuple[Any, ...] = ()  # bools, or one condition string

    def to_dict(self) -> dict:
        return {"op": self.op, "schema": self.schema, "file": self.loc.file, "line": self.loc.line,
                "formulas": [f.to_dict() for f in self.formulas],
                "output_differentiability": list(self.output_differentiability)}

    @classmethod
    def from_dict(cls, d: dict) -> "DerivativeEntry":
        """The record ``to_dict`` wrote (the bundled index keeps derivatives.yaml so)."""
        formulas = tuple(Formula(tuple(f["names"]), f["formula"], Location(f["file"], f["line"]), f["kind"], f["dispatch"])
                         for f in d["formulas"])
        return cls(d["op"], d["schema"], Location(d["file"], d["line"]), formulas, tuple(d["output_differentiability"]))


@dataclass(frozen=True)
class DecomposedOp:
    """``Index.backward`` of an op without a derivatives.yaml entry (CompositeImplicitAutograd): an
    operator its kernel calls, and that operator's own entry (None: none either)."""

    op: str
    call: Location | None  # where the composite kernel calls it
    entry: DerivativeEntry | None
    node: str | None = None  # its autograd node (AddmmBackward0), when generated code is indexed
    via: str | None = None  # the operator whose kernel calls it (the decomposition path)
    composite: bool = False  # it decomposes further itself (its own entry's node does not run)

    def to_dict(self) -> dict:
        return {"op": self.op, "call": {"file": self.call.file, "line": self.call.line} if self.call else None,
                "entry": self.entry.to_dict() if self.entry else None, "node": self.node, "via": self.via,
                "composite": self.composite}


@dataclass(frozen=True)
class Backward:
    """``Index.backward(op)``: the derivatives.yaml entry of ``op``, its formulas, the autograd node
    the checkout's codegen makes (``node_steps``: the VariableType wrapper that records it, the node's
    struct and ``apply``), per dispatch key the chains of the operators the backward formulas call
    (``keys``: one step per formula), and for an op with no entry the operators it decomposes into."""

    op: str
    entry: DerivativeEntry | None
    formulas: tuple[Formula, ...]
    node_steps: tuple[Step, ...]
    keys: tuple[KeyChain, ...]
    decomposed: tuple[DecomposedOp, ...] = ()
    warnings: tuple[str, ...] = ()
    node: str | None = None  # MulBackward0
    # Note [Composite ops' backward] in resolve/backward.py: the asked keys whose Autograd kernel is the
    # CompositeImplicitAutograd kernel (their backward is ``decomposed``'s nodes), and the keys that
    # reach the entry's own node instead (NestedTensorCPU for matmul; all asked keys for mm).
    composite_keys: tuple[str, ...] = ()
    entry_keys: tuple[str, ...] = ()
    # with an --example: per device key, the node the call's output gets (one name where the call
    # decides it, else the candidates: Index.output_node)
    outputs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the keys of ``outputs`` whose node the ranks of the call's tensors pick and the call does not
    # give: ranked, the default call's first (Note [A branch the ranks pick] in resolve/outputnode.py)
    undecided: tuple[str, ...] = ()
    # with no --example, for a Python function asked by name: the default call ``outputs`` answer for
    # (``F.dropout(input)``: Note [The path a call's arguments take] in resolve/pylayer.py)
    output_call: str = ""

    def nodes(self) -> tuple[str, ...]:
        """The autograd nodes the asked keys record: the entry's node where it runs, else those of
        the operators the op decomposes into (MmBackward0, BmmBackward0... for torch.matmul)."""
        out = [self.node] if self.node and not self.composite_keys else []
        out += [d.node for d in self.decomposed if d.node and not d.composite]
        return tuple(dict.fromkeys(out))

    def to_dict(self) -> dict:
        return {"op": self.op, "entry": self.entry.to_dict() if self.entry else None,
                "formulas": [f.to_dict() for f in self.formulas], "node": self.node,
                "composite_keys": list(self.composite_keys), "entry_keys": list(self.entry_keys),
                "nodes": list(self.nodes()),
                **({"output_nodes": {k: list(v) for k, v in self.outputs},
                    "output_nodes_decided": {k: len(v) == 1 and k not in self.undecided for k, v in self.outputs},
                    **({"output_call": self.output_call} if self.output_call else {})}
                   if self.outputs else {}),
                "node_steps": [s.to_dict() for s in self.node_steps],
                "keys": [{"key": k.key, "steps": [s.to_dict() for s in k.steps]} for k in self.keys],
                "decomposed": [d.to_dict() for d in self.decomposed], "warnings": list(self.warnings)}


@dataclass(frozen=True)
class AutogradNode:
    """``Index.autograd_node(name)``: the operator whose generated Autograd kernel makes the node
    ``name`` (MulBackward0), its derivatives.yaml entry and the node's ``apply``."""

    name: str
    op: str
    entry: Location | None  # the derivatives.yaml entry (None: missing or unreadable)
    apply: Location | None  # Functions.cpp (absolute path in the codegen cache)

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op,
                "entry": {"file": self.entry.file, "line": self.entry.line} if self.entry else None,
                "apply": {"file": self.apply.file, "line": self.apply.line} if self.apply else None}


# ---- torch.compile (extract/inductor.py, resolve/compile.py) ----------------------------------------


@dataclass(frozen=True)
class CompileFact:
    """One thing a tree's Python says Inductor does with an op. ``role``: lowering, fallback,
    decomposition, pattern, template, extern, select (in a ``get_decompositions`` list; ``registry``
    core, inductor or random), exclude (in ``remove_decompositions``' list), implicit (graph.py's
    implicit fallback, ``op`` empty). ``overload`` is empty for a packet. ``seq`` orders the
    registrations as the imports run them."""

    op: str
    overload: str
    role: str
    symbol: str
    file: str
    line: int
    via: str = ""
    registry: str = ""
    cond: str = ""  # the ``if`` tests around a registration (module level or in a function), joined by " and "
    seq: int = 0

    def to_row(self) -> tuple:
        return (self.op, self.overload, self.role, self.symbol, self.file, self.line, self.via, self.registry,
                self.cond, self.seq)


@dataclass(frozen=True)
class CompileAnswer:
    """``Index.compile``: what torch.compile's Inductor does with an op, as steps (roles
    decomposition, lowering, fallback, pattern, template, extern), Inductor's choice first;
    ``note`` says why there are none (a tree without torch/_inductor)."""

    op: str
    steps: tuple[Step, ...] = ()
    note: str = ""
    summary: str = ""  # one line: decomposed / lowered / fallback

    def to_list(self) -> list[dict]:
        return [s.to_dict() for s in self.steps]


@dataclass(frozen=True)
class InductorKernel:
    """A kernel of torch.compile's Inductor found in its output code (inductor/outputcode.py): the
    file in the Inductor cache, the line defining it (None for an extern or fallback call), its
    call line in ``call()``, the ATen ops it fused (``aten.add`` as the output code writes them),
    the FX source nodes (named after the user's variables), the user's lines ``(file, line, code)``
    where known, the overloads of its graph fragment, ``kind`` (triton, cpp, extern, fallback) and a
    one-line ``note`` (where the facts came from, or why some are missing)."""

    name: str
    file: str
    line: int | None
    call_line: int | None
    aten: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    user: tuple[tuple[str, int, str], ...] = ()
    overloads: tuple[str, ...] = ()
    kind: str = ""
    note: str = ""
    device: str = ""  # cuda or cpu, from the buffers its output code allocates ("" unknown)

    def to_dict(self) -> dict:
        return {"kernel": self.name, "kind": self.kind, "device": self.device, "file": self.file, "line": self.line,
                "call_line": self.call_line, "aten": list(self.aten), "nodes": list(self.nodes),
                "overloads": list(self.overloads),
                "user": [{"file": f, "line": ln, "code": c} for f, ln, c in self.user], "note": self.note}
