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
from atenmap.kinds import KeyGroup

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
        if any(k in keys for k in KeyGroup.COMPOSITE_IMPLICIT):
            return "composite_implicit"
        if any(k in keys for k in KeyGroup.COMPOSITE_EXPLICIT):
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

    @property
    def runs_on_device(self) -> bool:
        """A step that puts work on the device: a launch, a jit kernel or a library call."""
        return self in _RUNS_ON_DEVICE


_RUNS_ON_DEVICE = frozenset({Role.LAUNCH, Role.JIT, Role.LIBRARY})


@dataclass(frozen=True)
class Reason:
    """Why a step runs, read from its caller's text (``atenmap --why``; resolve/why.py). ``kind``:
    ``if``, ``else``, ``switch``, ``case``, ``ternary``, ``return`` (an early return before the call),
    ``#if`` (the preprocessor condition), ``dtypes`` (the AT_DISPATCH types) or ``check`` (an MPS run's
    dtype or macOS ``TORCH_CHECK`` before it: ``after TORCH_CHECK(cond)``, resolve/mpsgraph.py);
    ``text`` as the source writes it (``if (contiguous)``, ``case 4:``), for dtypes the torch names
    and the macro."""

    kind: str
    text: str
    loc: Location | None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text, "file": self.loc.file if self.loc else None,
                "line": self.loc.line if self.loc else None}


# A call step's detail where the call is a loop helper of resolve/chain.py's LOOP_HELPERS that leads to
# no launch (gpu_kernel, cpu_kernel_vec: shown, not followed); such a step sits at its call site.
LOOP_HELPER = "loop helper"


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
    decided: str = ""  # with a call's facts (--dtype, --shape, --example): "yes" or "undecided"

    @property
    def file(self) -> str | None:
        return self.loc.file if self.loc else None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    def to_dict(self) -> dict:
        out = {"key": self.key, "role": self.role.value, "name": self.name, "file": self.file, "line": self.line,
               "generated": self.generated, "when": [r.to_dict() for r in self.when], "via": list(self.via),
               "setup": self.setup}
        if self.decided:
            out["decided"] = self.decided
        return out


@dataclass(frozen=True)
class Chain:
    op: Operator
    source: SourceInfo
    keys: tuple[KeyChain, ...]
    warnings: tuple[str, ...] = ()
    generated_root: str | None = None  # where torchgen's output lies (generated steps' files are in it)
    bindings: tuple[Step, ...] = ()  # Python entry points (torch.add, Tensor.add)
    runs: tuple[Run, ...] = ()  # what each key runs, main path first (resolve/runs.py)
    given: tuple[str, ...] = ()  # the call's facts the runs were decided with (--dtype/--shape/--example)
    # the call's facts the runs were not decided with: the bundled index's kept ranking is the default
    # call's (Note [The runs the bundle keeps] in resolve/runs.py)
    unapplied: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = {
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
        if self.given:
            out["given"] = list(self.given)
        if self.unapplied:
            out["unapplied"] = list(self.unapplied)
        return out

    def runs_of(self, key: str) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.key == key)


# ---- results of the Index verbs (api.py) -------------------------------------------------------
# Public, frozen, built once by the resolve layer; every layer above may read them.


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
