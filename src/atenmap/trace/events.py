"""What a traced run recorded, as plain data: no torch, no index.

``record.py`` fills these from PyTorch's instruments; ``join.py`` reads them. A ``Recording``
round-trips through ``to_dict``/``from_dict`` (JSON), so a run recorded on a GPU machine can be
joined with an index elsewhere.

Coordinate rule: ``Frame.line`` is 1-based (Python's own line numbers); ``Frame.file`` is the
absolute path Python reported. Times are microseconds.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

# Dispatch keys whose work is device kernels: an op under one of these that launched nothing is
# a view or metadata op, not CPU work.
DEVICE_KEYS = ("CUDA", "HIP", "XPU", "MPS")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int  # the statement's line; the function's first line where ``exact`` is False
    function: str
    exact: bool = True  # False: the recording had only the function's first line (a chrome trace)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Kernel:
    """One device activity (a kernel, a memcpy or a memset) and the op event that issued it."""

    name: str  # as the profiler names it (demangled C++ for kernels)
    duration_us: float
    device: int = 0
    kind: str = "kernel"  # kernel, memcpy, memset, other (kineto's activity type, simplified)
    correlation: int = 0  # the issuing op event's correlation id (kineto's "External id")


@dataclass
class Call:
    """One aten call seen by the dispatch mode, in the order they happened."""

    index: int
    op: str  # "aten::add.Tensor", "aten::mm" (default overloads bare, as in native_functions.yaml)
    key: str  # dispatch key that ran: "CPU", "CUDA", "SparseCPU", ... ("" when no tensor said)
    stack: tuple[Frame, ...]  # the user's frames only, outermost first
    function: str | None = None  # torch-level function around it: "torch.nn.functional.linear"
    parents: tuple[str, ...] = ()  # profiler op events enclosing it, outermost first ("aten::linear")
    cpu_us: float = 0.0
    kernels: list[Kernel] = field(default_factory=list)
    thread: int = 0
    node: str | None = None  # the autograd node running it during backward: "MulBackward0"
    types: tuple = ()  # the input types the profiler recorded ("float", "Scalar", ...), if any
    correlation: int = 0  # the profiler's External id of this call's own op event (0: none)
    extra: dict = field(default_factory=dict)  # further answers per call, by name (JSON-ready values)

    @property
    def device_work(self) -> bool:
        """True if this call is worth a line: it launched kernels, or it ran on a host key."""
        return bool(self.kernels) or self.key not in DEVICE_KEYS

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stack"] = [asdict(f) for f in self.stack]
        d["types"] = list(self.types)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Call":
        return cls(
            index=d["index"], op=d["op"], key=d["key"],
            stack=tuple(Frame(**f) for f in d["stack"]),
            function=d.get("function"), parents=tuple(d.get("parents", ())),
            cpu_us=d.get("cpu_us", 0.0), kernels=[Kernel(**k) for k in d.get("kernels", [])],
            thread=d.get("thread", 0), node=d.get("node"), types=tuple(d.get("types", ())),
            correlation=d.get("correlation", 0), extra=dict(d.get("extra", {})),
        )


@dataclass
class Recording:
    """Everything one traced region recorded, plus what is needed to place it."""

    calls: list[Call] = field(default_factory=list)
    unattributed: list[Kernel] = field(default_factory=list)  # device work under no recorded call
    op_events: dict[int, int] = field(default_factory=dict)  # profiler op correlation id -> call index
    torch_version: str = ""
    torch_git: str | None = None
    cuda_available: bool = False
    profiled: bool = False  # torch.profiler ran (kernels, parents, chrome trace available)
    notes: list[str] = field(default_factory=list)

    @property
    def kernel_count(self) -> int:
        return sum(len(c.kernels) for c in self.calls) + len(self.unattributed)

    def to_dict(self) -> dict:
        return {
            "torch_version": self.torch_version, "torch_git": self.torch_git,
            "cuda_available": self.cuda_available, "profiled": self.profiled, "notes": list(self.notes),
            "calls": [c.to_dict() for c in self.calls],
            "unattributed": [asdict(k) for k in self.unattributed],
            "op_events": {str(k): v for k, v in self.op_events.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Recording":
        return cls(
            calls=[Call.from_dict(c) for c in d.get("calls", [])],
            unattributed=[Kernel(**k) for k in d.get("unattributed", [])],
            op_events={int(k): v for k, v in d.get("op_events", {}).items()},
            torch_version=d.get("torch_version", ""), torch_git=d.get("torch_git"),
            cuda_available=d.get("cuda_available", False), profiled=d.get("profiled", False),
            notes=list(d.get("notes", [])),
        )
