"""What a dispatch key lacks: the operators with no kernel of their own for a key, and what a call
there does (``atenmap ops --key MPS --missing``; the one line ``atenmap OP --key MPS`` prints for
such an operator).

Note [What a call does without a kernel]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The dispatcher picks, for a tensor of key K, in this order (c10's OperatorEntry::computeDispatchTableEntry):
1. a kernel registered for K itself: the yaml's ``K:`` entry (its ``structured_delegate``'s for a
   delegating operator), or a hand registration ``m.impl("op", fn)`` inside
   ``TORCH_LIBRARY_IMPL(aten, K, m)``. MPSFallback.mm registers a few operators this way to
   ``mps_fallback`` (embedding_renorm_, linalg_svd, col2im, upsample_nearest3d.vec in 2.6.0): they
   always run on the CPU, even those a composite would serve (linalg_svd has no dispatch section);
2. a composite kernel: CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd or
   CompositeImplicitAutograd (the last decomposes into other operators);
3. the key's boxed fallback, ``m.fallback(...)`` inside ``TORCH_LIBRARY_IMPL(_, K, m)``. MPS has two,
   picked once at start-up: ``mps_error_fallback`` (raises NotImplementedError "... is not currently
   implemented for the MPS device") unless ``PYTORCH_ENABLE_MPS_FALLBACK=1``, then ``mps_fallback``
   (copies to the CPU, runs the CPU kernel, copies back). Meta's ``metaFallback`` raises;
4. nothing: the dispatcher raises NotImplementedError "Could not run 'aten::op' with arguments from
   the 'K' backend".
What a fallback function does is known here by its name (``_FALLBACKS``); one this table does not
know is shown as the key's fallback, by name and line. Meta: a structured operator gets a Meta
kernel from torchgen (its TORCH_META_FUNC, registered in RegisterMeta.cpp), so it lacks none;
Python meta registrations (torch/_meta_registrations.py) are not read.

Which operators count as lacking K: those that CPU or CUDA run with a kernel of their own (for a
Sparse/Quantized/NestedTensor key, that family's CPU or CUDA key). An operator served only by a
composite everywhere lacks nothing on any device; one whose kernels are all Sparse is no dense
device's gap.

Note [Kernels that live elsewhere]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Intel GPU (XPU) kernels are registered by the separate torch-xpu-ops repository, built with its own
yaml (xpu_functions.yaml) into the XPU key: native_functions.yaml names XPU for a handful of
operators only (18 with delegates in 2.6.0, their oneDNN kernels in native/mkldnn/xpu/). For any
other operator the tree cannot say what XPU runs: the answer names the repository and the yaml
entry, never an empty chain or "no kernel". A CompositeImplicitAutograd operator decomposes before
any backend is reached, so its chain stands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from atenmap.kinds import FactKind, KeyGroup, Lacking
from atenmap.model import Location, Operator
from atenmap.model_answers import Lack
from atenmap.store import FactRow, Store

# Note [What a call does without a kernel]: boxed fallback function -> what it does, and the
# environment setting that selects it (MPSFallback.mm picks between the two MPS ones at start-up).
_FALLBACKS = {
    "mps_error_fallback": (Lacking.ERROR, ""),
    "mps_fallback": (Lacking.CPU_FALLBACK, "PYTORCH_ENABLE_MPS_FALLBACK=1"),
    "metaFallback": (Lacking.ERROR, ""),
}
_DEVICES = ("CPU", "CUDA", "MPS", "XPU", "HIP", "Meta")
_LIBRARY_IMPL = "TORCH_LIBRARY_IMPL"
_FALLBACK_CALL = "fallback"
_FUNCTION_REF = re.compile(r"&\s*([A-Za-z_][\w:]*)")


@dataclass(frozen=True)
class Fallback:
    """One ``m.fallback(...)`` of a key: the function it registers, what it does, where."""

    function: str
    does: str  # a Lacking
    setting: str  # the environment setting that selects it ('' when it is the default)
    registered: Location
    at: Location | None  # the function's definition


@dataclass
class KeyRegistrations:
    """A key's boxed fallbacks and its hand registrations (``m.impl`` in TORCH_LIBRARY_IMPL(aten, K, m))."""

    key: str
    fallbacks: list[Fallback] = field(default_factory=list)
    hand: dict[str, FactRow] = field(default_factory=dict)  # operator name -> torch_impl fact


def key_registrations(store: Store, key: str) -> KeyRegistrations:
    """Read from the index: the TORCH_LIBRARY_IMPL blocks of ``key`` (macro_block facts) and the
    ``m.fallback`` / ``m.impl`` facts in them."""
    out = KeyRegistrations(key)
    # by name, in path and line order: a question the first answer can ask (exactfirst.py, Note [A
    # complete answer from the candidates]); the registrations are the same as in the index's order
    for block in store.by_name(_LIBRARY_IMPL, (FactKind.MACRO_BLOCK,)):
        args = [a.strip() for a in block.arg.strip("() ").split(",")]
        if len(args) < 2 or args[1] != key:
            continue
        if args[0] == "_":
            calls = store.in_scope(block.id, (FactKind.CALL,))
            for call in calls:
                if call.name != _FALLBACK_CALL:
                    continue
                # makeFromBoxedFunction<&mps_fallback>() on the same line names the function in its
                # template arguments (a call fact's argument text is cut short)
                named = [c.targs for c in calls if c.line == call.line and c is not call and "&" in c.targs]
                fn = _function_named(named[0] if named else call.arg)
                does, setting = _FALLBACKS.get(fn, (Lacking.FALLBACK, ""))
                out.fallbacks.append(Fallback(fn, does, setting, Location(call.file, call.line),
                                              _definition(store, fn, call.file)))
        elif args[0] == "aten":
            for impl in store.in_scope(block.id, (FactKind.TORCH_IMPL,)):
                out.hand.setdefault(impl.name, impl)
    return out


def _function_named(arg: str) -> str:
    """``torch::CppFunction::makeFromBoxedFunction<&mps_fallback>()`` -> ``mps_fallback``; a
    plain function name as it is."""
    m = _FUNCTION_REF.search(arg)
    name = m.group(1) if m else arg.strip()
    return name.rsplit("::", 1)[-1]


def _definition(store: Store, name: str, near: str) -> Location | None:
    if not name.isidentifier():
        return None
    rows = store.by_name(name, (FactKind.FUNCTION,))
    rows = sorted(rows, key=lambda r: (r.file != near, r.file, r.line))
    return Location(rows[0].file, rows[0].line) if rows else None


def peer_keys(key: str) -> tuple[str, ...]:
    """The keys whose kernels make an operator count as lacking ``key`` (Note [What a call does
    without a kernel]): CPU and CUDA of ``key``'s family, less ``key``."""
    prefix = next((key[: -len(d)] for d in _DEVICES if key.endswith(d)), "")
    return tuple(k for k in (prefix + c for c in KeyGroup.COMMON) if k != key)


def lack(op: Operator, own_keys: list[str], key: str, regs: KeyRegistrations,
         structured: bool = False) -> Lack | None:
    """What a call of ``op`` does on ``key`` when it has no kernel of its own there, or None when it
    has one (``own_keys``: its keys, its delegate's included; ``structured``: it or its delegate is
    structured, which gives Meta a kernel). Note [What a call does without a kernel]."""
    if key in own_keys or (key == "Meta" and structured):
        return None
    name = str(op.name)
    hand = regs.hand.get(name)
    if hand is not None:
        fn = _function_named(hand.arg)
        known = next((f for f in regs.fallbacks if f.function == fn), None)
        does = _FALLBACKS.get(fn, (None, ""))[0]
        if does is None:
            return None  # a hand-written kernel of its own (MPSFallback.mm's slow_conv2d_forward_mps)
        place = Location(hand.file, hand.line)
        at = known.at if known is not None else None
        if does == Lacking.CPU_FALLBACK:
            says = (f"{name} has no {key} kernel: {key} registers it to {fn} (at {place}), which runs its CPU "
                    f"kernel (copies in, runs on the CPU, copies back)")
        else:
            says = f"{name} has no {key} kernel: {key} registers it to {fn} (at {place}), which raises NotImplementedError"
        return Lack(op, key, does, says, at, place)
    composite = next((k for k in KeyGroup.COMPOSITE if k in own_keys), None)
    if composite is not None:
        how = "decomposes into other operators" if composite == KeyGroup.CIA else f"runs its {composite} kernel"
        return Lack(op, key, Lacking.COMPOSITE, f"{name} has no {key} kernel of its own: a call on {key} {how}",
                    served_by=composite)
    default = next((f for f in regs.fallbacks if not f.setting), None)
    if default is None and regs.fallbacks:
        default = regs.fallbacks[0]
    if default is None:
        return Lack(op, key, Lacking.ERROR,
                    f"{name} has no {key} kernel, no composite and {key} has no fallback: the dispatcher raises "
                    f"NotImplementedError (\"Could not run 'aten::{name}' with arguments from the '{key}' backend\")")
    if default.does == Lacking.ERROR:
        says = (f"{name} has no {key} kernel and no composite: a call on {key} raises NotImplementedError "
                f"({default.function}, {default.at or default.registered})")
    elif default.does == Lacking.CPU_FALLBACK:
        says = f"{name} has no {key} kernel and no composite: a call on {key} runs on the CPU ({default.function}, {default.at or default.registered})"
    else:
        says = f"{name} has no {key} kernel and no composite: a call on {key} runs {key}'s fallback {default.function} ({default.at or default.registered})"
    for other in regs.fallbacks:
        if other is not default and other.setting:
            verb = "runs on the CPU" if other.does == Lacking.CPU_FALLBACK else f"runs {other.function}"
            says += f"; with {other.setting} it {verb} ({other.function}, {other.at or other.registered})"
    return Lack(op, key, default.does, says, default.at, default.registered)


def elsewhere(op: Operator, key: str, own_keys: list[str]) -> Lack | None:
    """Note [Kernels that live elsewhere]: ``op`` on a key whose kernels another repository
    registers, when this tree has no entry for it (and no CompositeImplicitAutograd decomposition)."""
    repo = KeyGroup.ELSEWHERE.get(key)
    if repo is None or key in own_keys or KeyGroup.CIA in own_keys:
        return None
    return Lack(op, key, Lacking.ELSEWHERE,
                f"{op.name} has no {key} kernel in this tree: {key} kernels live in the separate {repo} repository "
                f"(its own yaml registers them); this tree's entry: {op.loc}")


def lacking(ops: list[tuple[Operator, list[str], bool]], key: str, regs: KeyRegistrations) -> list[Lack]:
    """Of ``ops`` ((operator, its keys with its delegate's, structured)), those that lack ``key``
    and that a peer key runs with a kernel of its own (``peer_keys``), each with what a call does."""
    peers = peer_keys(key)
    out = []
    for op, keys, structured in ops:
        if not any(k in keys for k in peers) and str(op.name) not in regs.hand:
            continue
        got = lack(op, keys, key, regs, structured)
        if got is not None:
            out.append(got)
    return out


__all__ = ["Fallback", "KeyRegistrations", "elsewhere", "key_registrations", "lack", "lacking", "peer_keys"]
