"""``atenmap OP --compile``: what Inductor does with one ATen overload, from the tree's CompileFacts
(extract/inductor.py, Note [Inductor's registrations]) joined as Inductor's tables are filled.

Note [Which registration Inductor uses]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
- lowering: registrations in import order (``seq``); one naming the overload replaces the one
  before, one naming the packet only fills an overload that has none yet (``get_overloads``);
  ``make_fallback`` names every overload. A registration under an ``if`` is listed with its test
  but not taken as the one used (the test depends on the build or the config).
- fallback: the overload is in ``fallbacks`` once any ``make_fallback`` names it, even when a later
  lowering replaced it.
- decomposition: the table is built as torch/_inductor/decomposition.py builds it: the core list's
  selection of the global registry, then the CompositeImplicitAutograd ops (a Python CIA kernel,
  ``py_impl``, where one is registered, else the C++ kernel), then Inductor's own list, less
  ``decomps_to_exclude``; then Inductor's own ``register_decomposition`` functions; then the extra
  random ones (``select_decomp_table`` under the default ``fallback_random=False``).
"""
from __future__ import annotations

from dataclasses import dataclass

from atenmap.model import CompileFact

INDUCTOR_OWN = "decompositions"
RANDOM = "extra_random_decomps"


@dataclass(frozen=True)
class CompilePlan:
    """What Inductor does with one overload: every fact about it, and the ones its tables keep."""

    op: str
    decompositions: tuple[CompileFact, ...] = ()  # every registered decomposition of the overload
    table: CompileFact | None = None  # the decomposition Inductor's table holds (None: not in it)
    table_why: str = ""  # core, inductor, own, random, cia (CIA C++ kernel when ``table`` is None)
    excluded: CompileFact | None = None  # its ``decomps_to_exclude`` entry
    selected: tuple[CompileFact, ...] = ()
    lowerings: tuple[CompileFact, ...] = ()  # lowering and fallback registrations, import order
    lowering: CompileFact | None = None  # the one in ``lowerings`` (the dict)
    fallback: bool = False
    templates: tuple[CompileFact, ...] = ()
    patterns: tuple[CompileFact, ...] = ()
    implicit: CompileFact | None = None

    @property
    def in_table(self) -> bool:
        return bool(self.table_why)


def cia_decomposes(schema: str) -> bool:
    """Whether a CompositeImplicitAutograd op with this schema is in the table: torch keeps only the
    CIA ops whose arguments neither alias nor mutate (``_check_valid_to_preserve``)."""
    args = schema.partition("(")[2].rpartition(") ->")[0]
    return "Tensor(" not in args and "Tensor?(" not in args and "Tensor[](" not in args


def _names(f: CompileFact, overload: str) -> bool:
    return f.overload in ("", overload)


def plan(facts: list[CompileFact], op: str, *, cia: bool = False, preservable: bool = True,
         native: bool = True) -> CompilePlan:
    """The CompilePlan of operator ``op`` (``add.Tensor``; ``mm`` is ``mm.default``) from the facts
    of its packet (and the implicit fallback's, op ""). ``cia``: its yaml has a
    CompositeImplicitAutograd kernel; ``preservable``: ``cia_decomposes(schema)``; ``native``: it is
    in native_functions.yaml (a packet's decomposition covers only the overloads the dispatcher
    has, not TorchScript's extra ones such as ``add.float_int``)."""
    packet, _, ov = op.partition(".")
    ov = ov or "default"
    mine = sorted((f for f in facts if f.op == packet and _names(f, ov)), key=lambda f: f.seq)
    if not native:
        mine = [f for f in mine if f.overload or f.role not in ("decomposition", "select", "exclude")]
    regs = tuple(f for f in mine if f.role in ("lowering", "fallback"))
    chosen = None
    for f in regs:
        if f.cond or f.via == "fallback_handler":
            continue
        if f.overload == ov or f.role == "fallback" or chosen is None:
            chosen = f
    decomps = tuple(f for f in mine if f.role == "decomposition")
    cia = preservable and (cia or any(d.registry == "cia" for d in decomps))
    table, why, excluded, selected = _table(mine, decomps, cia)
    return CompilePlan(op, decomps, table, why, excluded, selected, regs, chosen,
                       any(f.role == "fallback" and not f.cond for f in regs),
                       tuple(f for f in mine if f.role in ("template", "extern")),
                       tuple(f for f in mine if f.role == "pattern"),
                       next((f for f in facts if f.role == "implicit"), None))


def _table(mine: list[CompileFact], decomps: tuple[CompileFact, ...], cia: bool):
    """(the decomposition in Inductor's table, why, the exclusion, the selections): see
    Note [Which registration Inductor uses]."""
    glob = next((d for d in decomps if not d.registry and not d.cond), None) or next(
        (d for d in decomps if d.registry == "maybe" and not d.cond), None)
    selected = tuple(f for f in mine if f.role == "select")
    excluded = next((f for f in mine if f.role == "exclude"), None)
    table, why = None, ""
    if glob is not None and any(s.registry == "core" for s in selected):
        table, why = glob, "core"
    if cia:
        table, why = next((d for d in decomps if d.registry == "cia"), None), "cia"
    if glob is not None and any(s.registry == "inductor" for s in selected):
        table, why = glob, "inductor"
    if excluded is not None:
        table, why = None, ""
    own = next((d for d in decomps if d.registry == INDUCTOR_OWN and not d.cond), None)
    if own is not None:
        table, why = own, "own"
    rnd = next((d for d in decomps if d.registry == RANDOM and not d.cond), None)
    if rnd is None and glob is not None and any(s.registry == "random" for s in selected):
        rnd = glob
    if rnd is not None:
        table, why = rnd, "random"
    return table, why, excluded, selected
