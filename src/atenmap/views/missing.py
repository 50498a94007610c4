"""``atenmap ops --key K --missing``: the operators with no kernel of their own for a key, grouped
by what a call there does (resolve/missing.py), as text and as JSON."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from atenmap import devices
from atenmap.kinds import KeyGroup, Lacking
from atenmap.views.terminal import Span, Terminal

if TYPE_CHECKING:
    from atenmap.model_answers import Lack

# The groups in the order shown, each with its heading when its members say nothing more in common.
GROUPS = (Lacking.ERROR, Lacking.FALLBACK, Lacking.CPU_FALLBACK, Lacking.COMPOSITE)
_HEADINGS = {
    Lacking.ERROR: "error",
    Lacking.FALLBACK: "the key's fallback",
    Lacking.CPU_FALLBACK: "CPU fallback",
    Lacking.COMPOSITE: "composite",
}
_WHY = {  # said by the heading when the members' lines say more than their group has in common
    Lacking.CPU_FALLBACK: "registered to a fallback that copies the tensors to the CPU, runs the CPU kernel and copies back",
    Lacking.COMPOSITE: "served by a composite kernel (CompositeImplicitAutograd decomposes into other operators; "
                       "the CompositeExplicitAutograd ones run as written) while CPU or CUDA have their own",
}


def grouped(lacks: list["Lack"]) -> list[tuple[str, list["Lack"]]]:
    """(outcome, its operators in yaml order) for each outcome some operator has, in GROUPS order."""
    return [(g, [x for x in lacks if x.outcome == g]) for g in GROUPS if any(x.outcome == g for x in lacks)]


def _common(members: list["Lack"]) -> str:
    """What every member's line says once its operator's name is taken off (the group's why)."""
    rests = {m.says.split(": ", 1)[1] if ": " in m.says else m.says for m in members}
    return rests.pop() if len(rests) == 1 else ""


def missing_lines(lacks: list["Lack"], key: str, total: int, term: Terminal | None = None,
                  counts: dict[str, int] | None = None) -> list[str]:
    """A count line, then per group a heading (count and what a call does) and one line per operator:
    yaml line, name, and its kernels elsewhere (or where it is registered to the fallback).
    ``counts``: each group's size before --limit cut ``lacks``."""
    counts = counts or {}
    term = term or Terminal()
    out = [(Span(f"{key}: {total} operator{'s' if total != 1 else ''} with no {key} kernel of their own", "heading"),)]
    for outcome, members in grouped(lacks):
        why = _common(members)
        said = why or _WHY.get(outcome, "")
        out.append((Span(f"{_HEADINGS[outcome]} ({counts.get(outcome, len(members))})", "heading"),
                    Span(f": {said}" if said else "", "dim")))
        for m in members:
            line = [Span("  "), Span(str(m.op.loc)), Span("  "), Span(str(m.op.name), "heading"), Span("  ")]
            if outcome == Lacking.COMPOSITE:
                entry = m.op.kernel_for(m.served_by) if m.served_by else None
                line.append(Span(f"{m.served_by}: {entry.kernel if entry else ''}".rstrip(": ")))
            elif outcome == Lacking.CPU_FALLBACK or not why:
                line.append(Span(m.says.split(": ", 1)[-1], "dim"))
            else:
                keys = sorted((d for d in m.op.dispatch if d.key not in KeyGroup.COMPOSITE),
                              key=lambda d: devices.key_sort(d.key))
                line.append(Span(", ".join(f"{d.key}: {d.kernel}" for d in keys) or
                                 (f"via {m.op.structured_delegate}" if m.op.structured_delegate else ""), "dim"))
            out.append(tuple(line))
    return term.lines(out)


def group_counts(lacks: list["Lack"]) -> dict[str, int]:
    """{outcome: how many}, in GROUPS order."""
    return {str(outcome): len(members) for outcome, members in grouped(lacks)}


def missing_json(lacks: list["Lack"], key: str, total: int, counts: dict[str, int]) -> str:
    """``{"key", "total", "counts": {outcome: n}, "operators": [...]}`` (``operators`` cut by --limit,
    ``counts`` of them all)."""
    return json.dumps({"key": key, "total": total, "counts": counts, "operators": [x.to_dict() for x in lacks]},
                      indent=1)
