"""Recorded calls joined to the static chains of an ``Index``. No torch here.

Each call becomes one ``Entry`` per kernel it launched (or one entry when it launched none), with
the chain of its overload for the key that ran, cut to what a reader wants on one line: the native
function, the stub, the kernel step that leads to the launch (Note [The step before a launch]),
and the launch/library steps (see ``StaticChain``). Each CUDA
kernel name is placed through ``Index.kernel(name)``; see Note [Kernel sites].

Note [Keys a call's chain is taken from]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The key that ran comes from the tensors (``CPU``, ``CUDA``, ``SparseCPU`` ...). An overload without
a kernel of its own for that key is served, in this order, by its ``structured_delegate``'s kernel
for the key (``add.Tensor`` runs ``add.out``'s), then by a composite key
(CompositeExplicitAutograd, ...NonFunctional, CompositeImplicitAutograd). The entry says which
(``StaticChain.key``, ``.via``). An overload the indexed source does not know (a newer torch than
the tree) gets no chain and a note.

Note [Kernel sites]
~~~~~~~~~~~~~~~~~~~
A kernel name (``void at::native::vectorized_elementwise_kernel<4, ...>(...)``) is placed by
``Index.kernel(name)`` (once per distinct name), whose ``KernelMatch`` gives ``.definition`` (the
``__global__`` function's Step), ``.launches`` and ``.operators``; of its launches the one inside the
call's own chain is preferred (``site.via == "kernels"``). Where it finds neither definition nor
launch, the chain's own launch steps are matched by the kernel's function name (library kernels
such as cuBLAS's take the chain's library step; ``via == "chain"``), and otherwise the raw name is
all there is. Only atenmap's own error (an empty name) becomes a note; anything else is a bug and
propagates.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Iterator
from dataclasses import dataclass, field

from atenmap.devices import file_allowed, key_device
from atenmap.errors import AtenmapError
from atenmap.kinds import KeyGroup
from atenmap.model import KeyChain, Role, SourceInfo, Step
from atenmap.model_answers import AutogradNode, KernelMatch
from atenmap.inductor.outputcode import kind_of, missing_note
from atenmap.resolve.kernelname import library_of_kernel, parse_kernel_name
from atenmap.trace.inductor import InductorAnswers, answer_dict as inductor_dict
from atenmap.trace.events import Call, Kernel, Recording
from atenmap.trace.overloads import pick as pick_overload
from atenmap.trace.staticchain import StaticChain, _step

_SKIP_NAMESPACES = ("profiler::",)
COMPOSITE_KEYS = KeyGroup.COMPOSITE_EXPLICIT + KeyGroup.COMPOSITE_IMPLICIT  # this order: the chain tried first


@dataclass
class KernelSite:
    """Where a kernel the profiler named is defined and launched. ``via``: "kernels" (``Index.kernel``
    answered), "chain" (matched among the chain's launch steps by function name), or ""."""

    name: str
    function: str = ""
    definition: Step | None = None
    launch: Step | None = None
    operators: list[str] = field(default_factory=list)
    via: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "function": self.function, "definition": _step(self.definition),
                "launch": _step(self.launch), "operators": list(self.operators), "via": self.via, "note": self.note}


@dataclass
class Entry:
    call: Call | None  # None for device work that no recorded call issued
    kernel: Kernel | None
    chain: StaticChain | None = None
    site: KernelSite | None = None
    notes: list[str] = field(default_factory=list)
    node: AutogradNode | None = None  # the autograd node the call ran in, with its derivatives.yaml entry
    extra: dict = field(default_factory=dict)  # further answers for this event, by name (JSON-ready)
    inductor: object | None = None  # InductorKernel: a torch.compile kernel's output code (trace/inductor.py)

    def lead(self) -> Step | None:
        """The chain step a trace line shows before the launch (Note [The step before a launch]):
        for a CPU op (no device event) the first kernel or the native, else ``StaticChain.lead``."""
        ch = self.chain
        if ch is None:
            return None
        if self.kernel is None:
            return ch.kernel or ch.native
        return ch.lead(self.site.launch if self.site is not None else None, self.kernel.name)

    def to_dict(self, memo: dict | None = None) -> dict:
        """``memo`` (id -> JSON value): what many entries share (a chain, a stack, a step, a site) is
        made once and shared (a report's to_dict; JSON writes each copy the same). The objects whose
        ids are keys live as long as the entries."""
        c = self.call
        if memo is None:
            memo = {}
        ch = self.chain
        chain = None if ch is None else _shared_dict(memo, ch, ch.to_dict)
        lead = self.lead()
        return {
            "index": c.index if c else None, "op": c.op if c else None, "key": c.key if c else None,
            "function": c.function if c else None, "parents": list(c.parents) if c else [],
            "stack": _shared_dict(memo, c.stack, lambda: [{"file": f.file, "line": f.line, "function": f.function}
                                                          for f in c.stack]) if c else [],
            "cpu_us": c.cpu_us if c else None,
            "kernel": None if self.kernel is None else {
                "name": self.kernel.name, "kind": self.kernel.kind, "duration_us": self.kernel.duration_us,
                "device": self.kernel.device, "correlation": self.kernel.correlation},
            "autograd_node": (self.node.to_dict() if self.node else {"name": c.node, "op": None, "entry": None,
                                                                     "apply": None} if c and c.node else None),
            "chain": chain,
            "lead": None if lead is None else _shared_dict(memo, lead, lambda: _step(lead)),
            "site": None if self.site is None else _shared_dict(memo, self.site, self.site.to_dict),
            "notes": list(self.notes),
            "extra": dict(self.extra),
            **({"inductor": inductor_dict(self.inductor)} if self.inductor is not None else {}),
        }


def _shared_dict(memo: dict, obj, make):
    """``make()`` once per object (by id; ``obj`` is kept in the memo so that its id stays its own)."""
    hit = memo.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = memo[id(obj)] = (obj, make())
    return hit[1]


def index_name(op: str) -> str | None:
    """``aten::add.Tensor`` -> ``add.Tensor``; ``aten::mm`` -> ``mm``; other namespaces -> None."""
    ns, sep, rest = op.partition("::")
    if not sep or ns != "aten":
        return None
    return rest[: -len(".default")] if rest.endswith(".default") else rest


def kernel_function(name: str) -> tuple[str, str]:
    """(unqualified __global__ function, kind) of a profiler kernel name; never raises."""
    try:
        k = parse_kernel_name(name)
    except AtenmapError:  # an empty name: the parser's one error
        return name, "kernel"
    return k.function, k.kind


def _launch_function(step: Step) -> str:
    head = step.symbol.split("<<<", 1)[0]
    head = head.split("<", 1)[0]
    return head.rsplit("::", 1)[-1].strip()


def _shared(index, platform: str = "cuda") -> list:
    """The caches the Joiners of ``index`` share (the last: its ChainCache, opened on first use),
    owned by the open Index (``Index.owned``), one set per platform; fresh ones for no index."""
    make = lambda: [{}, {}, {}, {}, None, {}]  # noqa: E731  (the last: kernelplatform's #if per file)
    name = "trace.join" if platform == "cuda" else f"trace.join.{platform}"
    return index.owned(name, make) if index is not None else make()


# Note [A trace of another platform]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A ROCm build records its kernels under the CUDA key too (``--platform rocm``, docs/devices.md):
# ``kernel --from-trace T --platform rocm`` joins each call with its op's chain as a ROCm build has
# it (Index.chain(..., platform="rocm"): the USE_ROCM side of every #if, MIOpen instead of cuDNN),
# and answers each kernel name as ``kernel --platform rocm`` does (resolve/kernelplatform.py: the
# lines a ROCm build compiles, hipify's names, the ROCm libraries' own calls first). The caches the
# Joiners of one Index share are per platform; the chains kept beside the index (Note [Chains kept
# beside the index]) are the cuda platform's, so a rocm join neither reads nor writes them.
# ``cuda``, the default, joins as it always did.


class Joiner:
    """Joins recordings with one index (or none: entries then carry no chains). Caches per overload."""

    def __init__(self, index=None, platform: str = "cuda"):
        self.index = index
        self.platform = platform  # Note [A trace of another platform]
        # What an index answers does not change: the Joiners of one Index share these (a second
        # report of a trace, or entries() then report(), resolves no chain again).
        shared = self._shared = _shared(index, platform)
        self._chains: dict[tuple[str, str], tuple[StaticChain | None, list[str]]] = shared[0]
        self._lookups: dict[str, tuple[KernelMatch | None, str]] = shared[1]
        self._nodes: dict[str, AutogradNode | None] = shared[2]
        self._overloads: dict[str, list[tuple[str, str]]] | None = None
        self._picked: dict[tuple, str] = shared[3]
        self._sites: dict[tuple, KernelSite] = {}
        self._inductor = InductorAnswers()  # this join's: the Inductor cache may change between joins

    # ---- overloads ------------------------------------------------------------------------
    def overload(self, op: str, types: tuple) -> str:
        """``aten::add`` as a profiler names it, with the input types it recorded -> ``aten::add.Tensor``
        from the index's schemas (Note [Overloads from recorded input types]); the name as it came
        when it already names an overload, has no types, or nothing fits."""
        ns, _, rest = op.partition("::")
        if self.index is None or ns != "aten" or "." in rest:
            return op
        hit = self._picked.get((op, types))
        if hit is None and not types:  # no input types: the overload a Python call of that name reaches
            try:
                hit = self._picked[(op, types)] = "aten::" + str(self.index.lookup(rest).operator.name)
            except AtenmapError:
                hit = self._picked[(op, types)] = op
        if hit is None:
            hit = self._picked[(op, types)] = pick_overload(self._candidates(rest), types) or op
        return hit

    def _candidates(self, name: str) -> list[tuple[str, str]]:
        """(``aten::name.overload``, schema) of every overload of ``name``, in the index's order."""
        if self._overloads is None:
            self._overloads = {}
        hit = self._overloads.get(name)
        if hit is None:
            hit = []
            for n in [name] + [n for n in self.index.operator_names(name + ".") if n.startswith(name + ".")]:
                try:
                    o = self.index.operator(n)
                except AtenmapError:
                    continue
                if str(o.name) == n:
                    hit.append((f"aten::{o.name}", o.schema))
            self._overloads[name] = hit
        return hit

    # ---- chains ---------------------------------------------------------------------------
    def chain(self, op: str, key: str) -> tuple[StaticChain | None, list[str]]:
        """(chain or None, notes). See Note [Keys a call's chain is taken from]."""
        hit = self._chains.get((op, key))
        if hit is None:
            kept = self.kept()
            hit = kept.get(op, key) if kept is not None else None
            if hit is None:
                hit = self._chain(op, key)
                if kept is not None:
                    kept.put(op, key, hit)
            self._chains[(op, key)] = hit
        return hit

    def kept(self):
        """The index's ChainCache (Note [Chains kept beside the index]), None without an index
        file or on another platform than cuda (Note [A trace of another platform]); opened once per Index."""
        if self.index is None or not hasattr(getattr(self.index, "store", None), "meta") or self.platform != "cuda":
            return None
        if self._shared[4] is None:
            from atenmap.trace.chaincache import ChainCache

            self._shared[4] = ChainCache.open(self.index)
        return self._shared[4]

    def _chain(self, op: str, key: str) -> tuple[StaticChain | None, list[str]]:
        if self.index is None:
            return None, []
        name = index_name(op)
        if name is None:
            return None, [f"{op} is not an ATen operator: no static chain"]
        try:
            operator = self.index.operator(name)
        except AtenmapError:
            return None, [f"{op} is not in the indexed source (PyTorch {self.index.source.version})"]
        keys = ([key] if key else []) + [k for k in COMPOSITE_KEYS if k != key]
        for k in keys:
            kc, via, notes = self._key_chain(operator, k)
            if kc is not None:
                return _summarize(name, kc, via, notes, device=key_device(key) if k != key else "any"), []
        return None, [f"{name} has no kernel for {key or 'any key'} in the indexed source"]

    def _key_chain(self, operator, key: str) -> tuple[KeyChain | None, str | None, list[str]]:
        try:
            ch = self.index.chain(operator, keys=[key], runs=False, **self._on())  # a trace shows no runs block
        except AtenmapError as exc:
            return None, None, [str(exc)]
        kc = _the_key(ch.keys, key)
        if kc is not None and key not in COMPOSITE_KEYS and kc.steps and kc.steps[0].detail.startswith(COMPOSITE_KEYS):
            kc = None  # the resolver's composite fallback: entries() names the composite key itself
        if kc is not None:
            return kc, None, ch.warnings
        delegate = operator.structured_delegate
        if delegate is not None and key not in COMPOSITE_KEYS:
            try:
                ch = self.index.chain(str(delegate), keys=[key], runs=False, **self._on())
            except AtenmapError:
                return None, None, []
            kc = _the_key(ch.keys, key)
            if kc is not None:
                return kc, str(delegate), ch.warnings
        return None, None, []

    def _on(self) -> dict:
        """Index.chain's platform argument, none for the default (Note [A trace of another platform])."""
        return {} if self.platform == "cuda" else {"platform": self.platform}

    # ---- kernels --------------------------------------------------------------------------
    def site(self, kernel: Kernel, chain: StaticChain | None) -> KernelSite:
        """See Note [Kernel sites]. One KernelSite per (kernel name, kind, chain), shared by the
        entries it answers (the chains live in ``_chains``, so their ids stay theirs)."""
        k = (kernel.name, kernel.kind, id(chain))
        hit = self._sites.get(k)
        if hit is None:
            hit = self._sites[k] = self._site(kernel, chain)
        return hit

    def _site(self, kernel: Kernel, chain: StaticChain | None) -> KernelSite:
        function, kind = kernel_function(kernel.name)
        site = KernelSite(kernel.name, function)
        if kernel.kind not in ("kernel", "other") or kind in ("memcpy", "memset", "unknown"):
            return site  # "other": a recorder that could not read the activity type; the name tells
        res, note = self._lookup(kernel.name)
        if res is not None:
            site.definition = res.definition
            site.operators = list(res.operators)
            site.launch = _pick_launch(res.launches, chain)
            site.via = "kernels" if (site.definition or site.launch) else ""
        site.note = note
        if site.launch is None and chain is not None:
            for s in chain.launches:
                if s.role == Role.LAUNCH and _launch_function(s) == function:
                    site.launch, site.via = s, site.via or "chain"
                    break
            else:
                if kind == "library":
                    lib = _library_step(kernel.name, chain)
                    if lib is not None:
                        site.launch, site.via = lib, site.via or "chain"
        return site

    def _lookup(self, name: str) -> tuple[KernelMatch | None, str]:
        """``Index.kernel(name)``, once per name (and once per index: Note [Chains kept beside the
        index]); see Note [Kernel sites]."""
        if self.index is None:
            return None, ""
        hit = self._lookups.get(name)
        if hit is None:
            kept = self.kept()
            match = kept.get_kernel(name) if kept is not None else None
            if match is not None:
                hit = (match, "")
            else:
                try:
                    hit = (self.index.kernel(name), "")
                except AtenmapError as exc:
                    hit = (None, f"kernel lookup: {exc}")
                if self.platform != "cuda" and hit[0] is not None:  # Note [A trace of another platform]
                    from atenmap.resolve.kernelplatform import for_platform

                    hit = (for_platform(self.index.store, hit[0], self.platform, self._shared[5]), "")
                if kept is not None and hit[0] is not None:
                    kept.put_kernel(name, hit[0])
            self._lookups[name] = hit
        return hit

    def kernel_match(self, name: str) -> KernelMatch | None:
        """``Index.kernel(name)``, looked up once per name (None without an index or for an empty name)."""
        return self._lookup(name)[0]

    def node(self, name: str) -> AutogradNode | None:
        """The autograd node ``name`` with its derivatives.yaml entry (Note [Autograd nodes in a trace])."""
        if name not in self._nodes:
            kept = self.kept()
            found, node = kept.get_node(name) if kept is not None else (False, None)
            if not found:
                node = self.index.autograd_node(name) if self.index is not None else None
                if kept is not None:
                    kept.put_node(name, node)
            self._nodes[name] = node
        return self._nodes[name]

    # ---- entries --------------------------------------------------------------------------
    def entries(self, rec: Recording) -> list[Entry]:
        return list(self.iter_entries(rec))

    def iter_entries(self, rec: Recording) -> Iterator[Entry]:
        """``entries`` one at a time: ``--from-trace`` counts them as they come instead of holding
        one Entry per device event of the file."""
        for c in rec.calls:
            if c.op.startswith(_SKIP_NAMESPACES):
                continue  # record_function's own ops: the profiler's bookkeeping, not the user's work
            if kind_of(c.op) in ("triton", "cpp"):
                yield from self._inductor_entries(c)  # See Note [Compiled code under a trace]
                continue
            if c.extra.get("overload") != "picked":  # the live recorder's torch picked it already
                c.op = self.overload(c.op, c.types)
            chain, notes = self.chain(c.op, c.key)
            node = self.node(c.node) if c.node else None
            if c.kernels:
                for k in c.kernels:
                    yield Entry(c, k, chain, self.site(k, chain), list(notes), node)
            else:
                yield Entry(c, None, chain, None, list(notes), node)
        for k in rec.unattributed:
            yield Entry(None, k, None, self.site(k, None), inductor=self._inductor(k.name))

    def _inductor_entries(self, c: Call) -> list[Entry]:
        """A torch.compile kernel's range (Triton's launcher, or a C++ kernel's profile range, named
        as the kernel): each of its kernels with the kernel's output code, no ATen chain."""
        if not c.kernels:
            k = self._inductor(c.op)
            note = [] if k is not None else [missing_note(c.op)]
            return [Entry(c, None, None, None, note, inductor=k)]
        out = []
        for kern in c.kernels:
            k = self._inductor(kern.name) or self._inductor(c.op)
            out.append(Entry(c, kern, None, None, [] if k is not None else [missing_note(kern.name)], inductor=k))
        return out


def _the_key(keys: list[KeyChain], key: str) -> KeyChain | None:
    return next((kc for kc in keys if kc.key == key), None)


def _library_step(name: str, chain: StaticChain) -> Step | None:
    """The chain's library step that can have launched library kernel ``name``: one of the kernel's
    own library family first (or of a library that runs that family's kernels: cuSOLVER runs cuBLAS),
    then any other, never a call that launches no kernel (the CUDA runtime's copies: Note [Copies
    without a kernel]). Chain order breaks ties."""
    from atenmap.resolve import libraries

    kernel_lib = library_of_kernel(name)
    best, best_rank = None, 3
    for s in chain.launches:
        if s.role != Role.LIBRARY:
            continue
        lib = libraries.library_of_call(s.symbol)
        if lib is not None and lib.family == libraries.COPY_FAMILY:
            continue
        rank = 0 if libraries.same_family(lib, kernel_lib) else 1 if libraries.runs_kernels_of(lib, kernel_lib) else 2
        if rank < best_rank:
            best, best_rank = s, rank
    return best


def _pick_launch(launches: tuple[Step, ...], chain: StaticChain | None) -> Step | None:
    if not launches:
        return None
    if chain is not None:
        mine = {(s.file, s.line) for s in chain.launches}
        for s in launches:
            if (s.file, s.line) in mine:
                return s
    return launches[0]


# Note [The step before a launch]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A trace line reads "op [key] -> STEP -> launch kernel": STEP must be the chain step that leads
# to the launch that ran, not the chain's first kernel. addmm.out on CUDA first copies `self` into
# `out` (Copy.cu's copy_kernel_cuda), then calls cuBLAS at Blas.cpp: the cuBLAS kernel's line
# shows the native addmm_out_cuda, not the copy kernel. And a call that ran on CUDA through a
# composite key's chain (aten::_to_copy [CUDA via CompositeExplicitAutograd]) walks code for
# every device: its steps in CPU-only or other devices' files (cpu/CopyKernel.cpp) are not what
# ran, so they are left out of the summary (devices.file_allowed). A device event the chain does
# not place (addmm's memset, cuBLAS's sgemm_largek_lds64, whose name says no vendor) shows the
# native when the chain's launches come from more than one step; so does a launch line that
# several of the chain's kernels share (CUDALoops.cuh's), unless the profiler's kernel name
# names one of them (its functor). A CPU op with no device event shows the first kernel, as
# before, but never a kernel under a library call: that is the library's own fallback (mm's
# cpublas::gemm reaches cpublas_gemm_impl through cpublas::gemm_stub when no BLAS is linked), so
# mm on CPU shows mm_out_cpu and its library calls. A library kernel event takes a library step
# of its own family first, never one of the CUDA runtime's copies (they launch no kernel).
# Checked on the H200 trace.
def _summarize(name: str, kc: KeyChain, via: str | None, warnings: list[str], device: str = "any") -> StaticChain:
    sc = StaticChain(name, kc.key, via)
    seen: set[tuple] = set()
    generated = None
    todo = [(s, None, False) for s in reversed(kc.steps)]
    while todo:  # depth first, in chain order, with the nearest kernel (or native) above each step
        s, above, in_library = todo.pop()
        if s.file and not file_allowed(posixpath.basename(s.file) if s.generated else s.file, device):
            continue  # a generated file by its name: its folder is the cache's
        if s.role == Role.NATIVE and sc.native is None:
            sc.native = s
        elif s.role == Role.GENERATED and generated is None:
            generated = s
        elif s.role == Role.STUB_CALL and sc.stub is None:
            sc.stub = s
        elif s.role == Role.KERNEL and sc.kernel is None and not in_library:
            sc.kernel = s  # a kernel under a library call is that library's (cpublas::gemm's gemm_stub)
        elif s.role in (Role.LAUNCH, Role.LIBRARY):
            at = sc.leads.setdefault((s.file, s.line), [])
            if above is not None and all(a is not above for a in at):
                at.append(above)
            if (s.file, s.line, s.symbol) not in seen:
                seen.add((s.file, s.line, s.symbol))
                sc.launches.append(s)
        if s.role in (Role.KERNEL, Role.NATIVE) and (s.role == Role.KERNEL or above is None or above.role != Role.KERNEL):
            above = s
        in_library = in_library or s.role == Role.LIBRARY
        todo.extend((c, above, in_library) for c in reversed(s.children))
    sc.native = sc.native or generated
    sc.notes = [w for w in warnings if w.startswith(kc.key + ":")]
    return sc


def join(rec: Recording, index=None) -> list[Entry]:
    return Joiner(index).entries(rec)


_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?")


def version_warnings(source: SourceInfo, torch_version: str, torch_git: str | None) -> list[str]:
    """A warning when the indexed tree is not the source of the installed torch."""
    if torch_git and source.commit and (source.commit.startswith(torch_git) or torch_git.startswith(source.commit)):
        return []
    sv, tv = _VERSION_RE.match(source.version or ""), _VERSION_RE.match(torch_version or "")
    same = sv is not None and tv is not None and sv.group(0) == tv.group(0)
    if same and not (torch_git and source.commit):
        return []
    msg = (f"the indexed source is PyTorch {source.version}"
           f"{' (' + source.commit[:12] + ')' if source.commit else ''} but the installed torch is "
           f"{torch_version}: file:line may not match what ran")
    git = source.origin != "bundled" and os.path.exists(os.path.join(source.root, ".git"))
    if torch_git and git:
        msg += f"; the matching source is commit {torch_git} (git -C {source.root} checkout {torch_git[:12]})"
    elif torch_git:
        msg += f"; the matching source is commit {torch_git} (atenmap fetch gets the installed torch's source)"
    else:
        msg += "; atenmap fetch gets the installed torch's source"
    return [msg]


def short_path(step: Step | None) -> str:
    if step is None or step.file is None:
        return "(generated)"
    return f"{posixpath.basename(step.file)}:{step.line}"
