"""Where a chain step was called from: its own place for steps made at a call site, else the
call sites resolve/chain.py writes into its detail. Shared by ``--why`` (why.py) and the runs
block (runs.py)."""
from __future__ import annotations

import re

from atenmap.model import LOOP_HELPER, Location, Role, Step

# Steps whose own place is the call site; call/helper steps sit at the callee's definition and
# name their call sites in the detail resolve/chain.py writes ("called at FILE:L1, L2; ...",
# reduction functors "made at FILE:L").
AT_SITE = {Role.LAUNCH, Role.LIBRARY, Role.STUB_CALL, Role.OP_CALL}
AT_DEFINITION = {Role.CALL, Role.HELPER}
_LAUNCHED_AT = re.compile(r"; launched by \S+ at (\S+?):(\d+)")
_AT_LINES = re.compile(r"\) at lines (\d+(?:, \d+)*)")
_CALLED_AT = re.compile(r"\b(?:called|made) at (\S+?):(\d+(?:, \d+)*)")


def call_sites(step: Step) -> list[Location]:
    """The places ``step`` is called from (one for a launch, several for a helper called twice)."""
    if step.loc is None:
        return []
    if step.role == Role.OP_CALL:  # one step for an operator called on several lines ("at lines 446, 449")
        m = _AT_LINES.search(step.detail)
        return [Location(step.loc.file, int(n)) for n in m.group(1).split(", ")] if m else [step.loc]
    if step.role in AT_SITE or step.role == Role.CALL and step.detail.startswith(LOOP_HELPER):
        return [step.loc]
    if step.role == Role.JIT:  # at its code string; launched where resolve/chain.py's _jit_step says
        m = _LAUNCHED_AT.search(step.detail)
        return [Location(m.group(1), int(m.group(2)))] if m else []
    if step.role in AT_DEFINITION:
        m = _CALLED_AT.search(step.detail)
        if m:
            return [Location(m.group(1), int(n)) for n in m.group(2).split(", ")]
    return []


__all__ = ["AT_SITE", "AT_DEFINITION", "call_sites"]
