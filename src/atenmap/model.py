"""Frozen records shared by every layer: operators, locations, chain steps.

Coordinate rule, stated once: every ``line`` in atenmap's records and output is 1-based, and every
``file`` is a POSIX path relative to the PyTorch source root. tree-sitter's 0-based rows are
converted in ``extract/unit.py`` (``Unit.line_of``) and nowhere else.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from atenmap.errors import AtenmapError

_NAME_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\.(?P<overload>[A-Za-z_][A-Za-z0-9_]*))?$")


@dataclass(frozen=True, order=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, order=True)
class OperatorName:
    """``add.out`` -> name ``add``, overload ``out``. ``str()`` round-trips ``parse()``."""

    name: str
    overload: str = ""

    @classmethod
    def parse(cls, text: str) -> "OperatorName":
        text = text.strip()
        if text.startswith("aten::"):
            text = text[len("aten::"):]
        m = _NAME_RE.match(text)
        if not m:
            raise AtenmapError(f"not an operator name: {text!r} (expected NAME or NAME.OVERLOAD, e.g. add.out)")
        return cls(m.group("name"), m.group("overload") or "")

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def unambiguous(self) -> str:
        """torchgen's unambiguous name: ``add_out`` / ``add`` (used in generated wrapper names)."""
        return f"{self.name}_{self.overload}" if self.overload else self.name


@dataclass(frozen=True)
class DispatchEntry:
    """One dispatch key of an operator, as torchgen's BackendIndex would hold it."""

    key: str  # "CPU", "CUDA", "CompositeImplicitAutograd", ...
    kernel: str  # C++ function name (for structured ops: the TORCH_IMPL_FUNC name)
    structured: bool = False
    explicit: bool = True  # False where torchgen fills it in (no `dispatch:`, ufunc keys)


@dataclass(frozen=True)
class UfuncLoop:
    key: str  # "Generic", "ScalarOnly", "CPUScalar", "CUDAVector", ...
    name: str  # inner loop name, e.g. "add"
    types: tuple[str, ...]  # ("AllAndComplex", "BFloat16", ...)


@dataclass(frozen=True)
class Operator:
    """One entry of native_functions.yaml; a lossless-enough view of its keys."""

    name: OperatorName
    schema: str  # the whole `func:` string
    loc: Location
    dispatch: tuple[DispatchEntry, ...] = ()
    has_dispatch_key: bool = False  # the yaml entry had a `dispatch:` section
    variants: tuple[str, ...] = ("function",)
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    ufunc_inner_loop: tuple[UfuncLoop, ...] = ()
    autogen: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    python_module: str | None = None
    manual_cpp_binding: bool = False
    manual_kernel_registration: bool = False
    # Keys that carry no navigation meaning (device_check, device_guard, precomputed, ...), kept.
    other: tuple[tuple[str, Any], ...] = ()

    def kernel_for(self, key: str) -> DispatchEntry | None:
        for d in self.dispatch:
            if d.key == key:
                return d
        return None

    @property
    def kind(self) -> str:
        """A one-word summary: ufunc, structured, structured_delegate, composite_implicit, ..."""
        if self.ufunc_inner_loop:
            return "ufunc"
        if self.structured:
            return "structured"
        if self.structured_delegate is not None:
            return "structured_delegate"
        keys = {d.key for d in self.dispatch}
        if "CompositeImplicitAutograd" in keys:
            return "composite_implicit"
        if "CompositeExplicitAutograd" in keys or "CompositeExplicitAutogradNonFunctional" in keys:
            return "composite_explicit"
        return "native" if keys else "none"


class Role(str, Enum):
    """What a step of a chain is. A ``str`` enum: ``step.role == "launch"`` holds, and JSON
    carries the value."""

    YAML = "yaml"  # the native_functions.yaml entry and the dispatch key's kernel name
    DELEGATE = "delegate"  # structured_delegate: the op whose kernels run
    REGISTER = "register"  # m.impl(...) or REGISTER_DISPATCH(...) for the chain's device
    NATIVE = "native"  # at::native function or TORCH_IMPL_FUNC
    META = "meta"  # TORCH_META_FUNC (shape/dtype checks of a structured op)
    HELPER = "helper"  # a function the native calls (same file or the device's own code)
    STUB_CALL = "stub_call"  # a DispatchStub called (or passed on)
    STUB_DECLARE = "stub_declare"
    STUB_DEFINE = "stub_define"
    KERNEL = "kernel"  # the function registered for the device
    CALL = "call"  # a function the kernel calls (loop helpers, functors)
    LAUNCH = "launch"  # a <<<...>>> line
    JIT = "jit"  # a jiterator kernel: compiled from in-tree source text at run time, then launched
    LIBRARY = "library"  # a call into a vendor library (cuBLAS, cuDNN, CUB, ...)
    OP_CALL = "op_call"  # a call back through the dispatcher (at::clamp_min(...))
    GENERATED = "generated"  # code torchgen writes (wrappers, ufunc kernels, Python bindings)
    # torch.compile (``--compile``, resolve/compile.py)
    DECOMPOSITION = "decomposition"  # a Python decomposition (register_decomposition), or a list naming it
    LOWERING = "lowering"  # an Inductor lowering (register_lowering, register_pointwise, ...)
    FALLBACK = "fallback"  # make_fallback / the implicit fallback: Inductor calls the ATen kernel
    PATTERN = "pattern"  # an fx pass of torch/_inductor/fx_passes that names the op
    TEMPLATE = "template"  # a Triton (or C++) template a lowering may choose
    EXTERN = "extern"  # an ExternKernelChoice: the ATen/library call a lowering may choose

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@dataclass(frozen=True)
class Reason:
    """Why a step runs, read from its caller's text (``atenmap --why``; resolve/why.py). ``kind``:
    ``if``, ``else``, ``switch``, ``case``, ``ternary``, ``return`` (an early return before the call),
    ``#if`` (the preprocessor condition) or ``dtypes`` (the AT_DISPATCH types); ``text`` as the source
    writes it (``if (contiguous)``, ``case 4:``), for dtypes the torch names and the macro."""

    kind: str
    text: str
    loc: Location | None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text, "file": self.loc.file if self.loc else None,
                "line": self.loc.line if self.loc else None}


@dataclass(frozen=True)
class Step:
    """One step of a chain; ``children`` are the steps it leads to. Built once, never changed:
    views add links and notes when they render."""

    role: Role
    symbol: str
    loc: Location | None
    detail: str = ""
    generated: bool = False
    children: tuple["Step", ...] = ()
    why: tuple[Reason, ...] = ()  # filled only when asked (Index.chain(why=True))

    @classmethod
    def make(cls, role: Role | str, symbol: str, file: str | None = None, line: int | None = None, detail: str = "",
             generated: bool = False, children=()) -> "Step":
        """``Step.make("launch", "k<<<g, b>>>", "Loops.cuh", 12)``: the role by name, the place as file and line."""
        return cls(Role(role), symbol, at(file, line), detail, generated, tuple(children))

    @property
    def file(self) -> str | None:
        return self.loc.file if self.loc else None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    def to_dict(self) -> dict:
        return {
            "role": self.role.value,
            "symbol": self.symbol,
            "file": self.file,
            "line": self.line,
            "detail": self.detail,
            "generated": self.generated,
            "children": [c.to_dict() for c in self.children],
            **({"why": [r.to_dict() for r in self.why]} if self.why else {}),
        }

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def at(file: str | None, line: int | None) -> Location | None:
    """``Location(file, line)``, or None where a step has no place in the source."""
    return Location(file, line) if file is not None and line is not None else None


@dataclass(frozen=True)
class KeyChain:
    key: str
    steps: tuple[Step, ...]

    def walk(self):
        for s in self.steps:
            yield from s.walk()


@dataclass(frozen=True)
class SourceInfo:
    root: str
    version: str
    commit: str | None = None
    origin: str = "cwd"  # how it was found: option, env, cwd

    def to_dict(self) -> dict:
        return {"root": self.root, "version": self.version, "commit": self.commit, "origin": self.origin}


GEN_PREFIX = "gen:"  # a place in torchgen's output folder, as text views print it and `atenmap show` reads it


@dataclass(frozen=True)
class Excerpt:
    """``Index.show(place)``: the lines around one place of the tree or of torchgen's output."""

    place: str  # as asked: aten/src/ATen/native/BinaryOps.cpp:440, gen:aten/RegisterCUDA.cpp:43955
    path: str  # the file on this machine (absolute)
    line: int
    first: int  # the number of lines[0]
    lines: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"place": self.place, "path": self.path, "line": self.line, "first": self.first,
                "lines": list(self.lines)}


@dataclass(frozen=True)
class Run:
    """One thing a key's chain runs (resolve/runs.py): a kernel launch (``name``: the kernel, as
    before ``<<<``), a jiterator kernel or a library call; for a key that launches nothing, its
    registered kernels. ``when``: the conditions that pick it, innermost first; ``via``: the
    operators the way to it passes through (``aten::copy_``), outermost first; ``setup``: a
    library's set-up call (``cublasSetStream``) or a one-thread launch, ranked after the rest."""

    key: str
    role: Role
    name: str
    loc: Location | None
    when: tuple[Reason, ...] = ()
    via: tuple[str, ...] = ()
    setup: bool = False
    generated: bool = False

    @property
    def file(self) -> str | None:
        return self.loc.file if self.loc else None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    def to_dict(self) -> dict:
        return {"key": self.key, "role": self.role.value, "name": self.name, "file": self.file, "line": self.line,
                "generated": self.generated, "when": [r.to_dict() for r in self.when], "via": list(self.via),
                "setup": self.setup}


@dataclass(frozen=True)
class Chain:
    op: Operator
    source: SourceInfo
    keys: tuple[KeyChain, ...]
    warnings: tuple[str, ...] = ()
    generated_root: str | None = None  # where torchgen's output lies (generated steps' files are in it)
    bindings: tuple[Step, ...] = ()  # Python entry points (torch.add, Tensor.add)
    runs: tuple[Run, ...] = ()  # what each key runs, main path first (resolve/runs.py)

    def to_dict(self) -> dict:
        return {
            "op": str(self.op.name),
            "schema": self.op.schema,
            "yaml": {"file": self.op.loc.file, "line": self.op.loc.line},
            "source": self.source.to_dict(),
            "python": [s.to_dict() for s in self.bindings],
            "keys": [{"key": k.key, "steps": [s.to_dict() for s in k.steps]} for k in self.keys],
            "generated_root": self.generated_root,
            "warnings": list(self.warnings),
            "runs": [r.to_dict() for r in self.runs],
        }

    def runs_of(self, key: str) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.key == key)


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
class PythonCall:
    """An operator a Python function reaches: where it calls it (``written`` as the source spells
    the call), the operator, and the Python functions passed through on the way (``via``)."""

    written: str  # torch._C._nn.cross_entropy_loss, Tensor.norm, torch.div
    loc: Location
    operator: str  # cross_entropy_loss, norm.ScalarOpt_dim
    via: tuple[str, ...] = ()  # torch.norm (a Python function Tensor.norm calls), ...
    returned: bool = False  # what the function returns (a call in a return of its own body, all the way down)

    def to_dict(self) -> dict:
        return {"written": self.written, "file": self.loc.file, "line": self.loc.line, "operator": self.operator,
                "via": list(self.via), "returned": self.returned}


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


@dataclass(frozen=True)
class OperatorLookup:
    """``Index.lookup(text)``: the operator a name as users type it (``torch.softmax``, ``F.relu``,
    ``softmax``) means; when a bare name picked one of several overloads, the others and why (see
    Note [Names users type] in resolve/names.py)."""

    query: str
    operator: Operator
    others: tuple[str, ...] = ()
    reason: str = ""
    python: PythonFunction | None = None  # the name is a Python function; ``operator`` is the first it reaches

    @property
    def picked(self) -> bool:
        """True when ``query`` named several overloads and one was chosen."""
        return bool(self.others)


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
