"""What the join keeps of one static chain (``StaticChain``): its native, stub, kernel and launch
steps and, per launch, the steps a trace line shows before it. Below join.py and chaincache.py,
which both use it (chaincache stores it beside the index)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from atenmap.model import Role, Step


@dataclass
class StaticChain:
    op: str  # the overload as the index names it: "add.Tensor", "mm"
    key: str  # the key whose chain this is
    via: str | None = None  # "add.out" when reached through structured_delegate
    native: Step | None = None
    stub: Step | None = None
    kernel: Step | None = None
    launches: list[Step] = field(default_factory=list)  # launch and library steps, in chain order
    notes: list[str] = field(default_factory=list)
    # (file, line) of a launch/library step -> the nearest kernel steps above it (else the native):
    # what a trace line shows before that launch. See Note [The step before a launch].
    leads: dict[tuple, list[Step]] = field(default_factory=dict)

    def lead(self, launch: Step | None, kernel: str = "") -> Step | None:
        """The step to show before a device event launched at ``launch`` (the profiler named it
        ``kernel``). Several kernels launching at one line (CUDALoops.cuh's) are told apart by
        the kernel's name, else the native is shown. A launch the chain does not place (a
        memset, a vendor kernel with no vendor prefix) gets the one step all of the chain's
        launches come from, if there is one, else the native: "somewhere under here", never a
        wrong kernel. See Note [The step before a launch]."""
        if launch is not None:
            hits = self.leads.get((launch.file, launch.line), [])
            if len(hits) == 1:
                return hits[0]
            named = [h for h in hits if _short_symbol(h.symbol) and _short_symbol(h.symbol) in kernel]
            if len(named) == 1:
                return named[0]
            if hits:
                return self.native or hits[0]
        heads = {(s.file, s.line, s.symbol): s for steps in self.leads.values() for s in steps}
        if len(heads) == 1:
            return next(iter(heads.values()))
        if heads:
            return self.native or self.kernel
        return self.kernel or self.native

    def host_work(self, lead: Step | None = None) -> list[Step]:
        """The library calls that do an op's work on a host key (CPU ops launch nothing): the chain's
        library steps less capability queries, those the file of ``lead`` (the kernel function) makes
        first. See Note [The step that ran on the host]."""
        work = [s for s in self.launches if s.role == Role.LIBRARY and not is_capability_query(s.symbol)]
        if lead is not None and lead.file:
            work.sort(key=lambda s: s.file != lead.file)  # stable: chain order within each group
        return work

    def to_dict(self) -> dict:
        return {"op": self.op, "key": self.key, "via": self.via, "native": _step(self.native),
                "stub": _step(self.stub), "kernel": _step(self.kernel),
                "launches": [_step(s) for s in self.launches], "notes": list(self.notes)}


def _step(s: Step | None) -> dict | None:
    if s is None:
        return None
    return {"role": s.role, "symbol": s.symbol, "file": s.file, "line": s.line, "detail": s.detail,
            "generated": s.generated}


# Note [The step that ran on the host]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A CPU op launches nothing, so its line shows the kernel function (the chain's kernel, else its
# native) and the library calls that do its work. The chain also holds the library calls a kernel
# makes to decide how to work: mm_out_cpu's mkldnn_matmul asks ideep::has_bf16_type_support()
# before cpublas::gemm runs. Those are questions, not work: a call whose last name asks (has_*,
# is_*, use_*, can_*, *_support(ed), *_available, *_enabled) is never what a line shows. And the
# calls the kernel function's own file makes come before those deeper in a library's wrapper
# (Matmul.cpp's ideep::attr_t set-up under mkldnn_matmul): mm shows mkldnn_matmul, cpublas::gemm.
_QUERY = re.compile(r"^(?:has|is|use|can|should)_\w*$|^\w*_(?:supported|support|available|enabled)$")


def is_capability_query(symbol: str) -> bool:
    """``ideep::has_bf16_type_support`` -> True; ``cpublas::gemm`` -> False."""
    name = symbol.split("(", 1)[0].split("<", 1)[0].rsplit("::", 1)[-1].strip()
    return bool(_QUERY.match(name))


def _short_symbol(symbol: str) -> str:
    """``at::native::(anonymous)::mul_kernel_cuda`` -> ``mul_kernel_cuda``; TORCH_IMPL_FUNC(x) -> x."""
    m = re.match(r"\w+\((\w+)\)$", symbol)
    return m[1] if m else symbol.rsplit("::", 1)[-1].split("<", 1)[0]
