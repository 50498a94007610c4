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

from atenmap.model import Role, Step
from atenmap.model_answers import CompileFact

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
        mine = [f for f in mine if f.overload or f.role not in (Role.DECOMPOSITION, "select", "exclude")]
    regs = tuple(f for f in mine if f.role in (Role.LOWERING, Role.FALLBACK))
    chosen = None
    for f in regs:
        if f.cond or f.via == "fallback_handler":
            continue
        if f.overload == ov or f.role == Role.FALLBACK or chosen is None:
            chosen = f
    decomps = tuple(f for f in mine if f.role == Role.DECOMPOSITION)
    cia = preservable and (cia or any(d.registry == "cia" for d in decomps))
    table, why, excluded, selected = _table(mine, decomps, cia)
    return CompilePlan(op, decomps, table, why, excluded, selected, regs, chosen,
                       any(f.role == Role.FALLBACK and not f.cond for f in regs),
                       tuple(f for f in mine if f.role in (Role.TEMPLATE, Role.EXTERN)),
                       tuple(f for f in mine if f.role == Role.PATTERN),
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


# ---- steps -------------------------------------------------------------------------------------
_WHY = {"core": "core ATen decompositions", "inductor": "Inductor's decomposition list",
        "own": "Inductor's own decomposition", "random": "Inductor's extra random decompositions",
        "cia": "CompositeImplicitAutograd op"}
_LISTS = {"core": "core ATen list", "inductor": "Inductor's list", "random": "extra random list"}


def summary(p: CompilePlan) -> str:
    """One line: what Inductor does with the op under the default config."""
    if p.in_table:
        first = f"decomposed ({_WHY[p.table_why]})"
        return first + (f"; {_lowering_word(p)} if the decomposition declines" if p.lowering else "")
    if p.lowering is not None:
        return _lowering_word(p)
    return "no lowering or decomposition: an implicit fallback to the ATen kernel" if p.implicit else "nothing found"


def _lowering_word(p: CompilePlan) -> str:
    f = p.lowering
    if f.role == Role.FALLBACK:
        return "fallback to the ATen kernel (make_fallback)"
    return f"lowered ({f.symbol if f.via == 'register_lowering' else f.via})"


def compile_steps(p: CompilePlan, yaml_loc: tuple[str, int] | None, chain: tuple[Step, ...]) -> tuple[Step, ...]:
    """The plan as steps, Inductor's choice first: decompositions (with the list entries that put
    them in or out of the table), lowerings (with their templates and extern choices), fallbacks
    (with the op's ATen ``chain``), fx patterns."""
    out = list(_decomposition_steps(p, yaml_loc, chain))
    low = [_registration_step(p, f, chain) for f in p.lowerings]
    if p.lowering is None and not p.in_table and p.implicit is not None:
        f = p.implicit
        low.append(Step.make("fallback", "implicit fallback", f.file, f.line,
                             "no lowering or decomposition: the graph makes a fallback when it meets the op "
                             "(config.implicit_fallbacks)", children=chain))
    out += low
    out += [Step.make("pattern", f.symbol, f.file, f.line, "a pattern-matcher pattern (CallFunction) matches the op"
                      if f.via else "an fx pass names the op")
            for f in sorted(p.patterns, key=lambda f: (not f.via, f.file, f.line))]
    if p.in_table:
        out.sort(key=lambda s: 0 if s.role == Role.DECOMPOSITION and s.detail.startswith("in Inductor's table") else 1)
    elif p.lowering is not None:
        out.sort(key=lambda s: 0 if s.role in (Role.LOWERING, Role.FALLBACK) and s.detail.startswith("used") else 1)
    return tuple(out)


def _decomposition_steps(p: CompilePlan, yaml_loc, chain: tuple[Step, ...]) -> list[Step]:
    lists = [Step.make("decomposition", f"{_LISTS.get(s.registry, s.registry)} ({s.symbol})", s.file, s.line,
                       "selects it from the registry") for s in p.selected]
    if p.excluded is not None:
        e = p.excluded
        lists.append(Step.make("decomposition", f"decomps_to_exclude ({e.symbol})", e.file, e.line,
                               "takes it out of Inductor's table"))
    out = []
    for d in p.decompositions:
        if d is p.table:
            detail = f"in Inductor's table: {_WHY[p.table_why]}"
        elif d.registry in ("", "maybe"):
            detail = ("excluded from Inductor's table" if p.excluded is not None
                      else f"selected, but Inductor's table holds the {_WHY[p.table_why]} instead"
                      if p.selected and p.in_table else "registered (torch._decomp), not in Inductor's table")
        elif d.registry == "cia":
            detail = "Python CompositeImplicitAutograd kernel" + ("" if p.in_table else ", not in Inductor's table")
        else:
            detail = f"registered into {d.registry}, not Inductor's table"
        if d.cond:
            detail += f"; only if {d.cond}"
        out.append(Step.make("decomposition", d.symbol, d.file, d.line, detail,
                             children=lists if d.registry in ("", "maybe") else ()))
    if p.table_why == "cia" and p.table is None and yaml_loc:
        cia = tuple(s for s in chain if "CompositeImplicitAutograd" in s.detail) or chain
        out.append(Step.make("decomposition", "CompositeImplicitAutograd kernel", yaml_loc[0], yaml_loc[1],
                             "in Inductor's table: the op decomposes through its C++ kernel", children=cia))
    return out


def _registration_step(p: CompilePlan, f: CompileFact, chain: tuple[Step, ...]) -> Step:
    if f is p.lowering:
        detail = "used" + (": overridden by a decomposition in Inductor's table unless it declines" if p.in_table else "")
    elif f.cond:
        detail = f"only if {f.cond}"
    elif f.via == "fallback_handler":
        detail = "puts the op into Inductor's fallbacks"
    else:
        detail = "replaced by a later registration"
    detail += f" ({f.via})" if f.via and f.via not in f.symbol else ""
    kids: tuple[Step, ...] = ()
    if f.role == Role.FALLBACK and f.via != "fallback_handler":
        kids = chain
    elif f.role == Role.LOWERING:
        kids = tuple(Step.make(t.role, t.symbol, t.file, t.line,
                               "Triton/C++ template it may choose" if t.role == Role.TEMPLATE else "extern kernel it may choose")
                     for t in p.templates if t.via == f.symbol)
    return Step.make(f.role, f.symbol, f.file, f.line, detail, children=kids)
