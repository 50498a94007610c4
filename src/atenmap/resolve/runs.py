"""What a chain runs, main path first: the "runs" block that opens ``atenmap OP`` (``Chain.runs``).

Note [What runs, first]
~~~~~~~~~~~~~~~~~~~~~~~
A chain's tree answers "how does the call get there"; most readers first want "what runs": the
kernels launched (``<<<…>>>``), the jiterator kernels and the library calls, each once, with the
place and the condition that picks it. For a key that launches nothing (CPU), its registered
kernels stand in. They are ranked so that the operator's own work leads:

1. set-up calls last: a library's configuration calls (Note [Set-up calls] in libraries.py) and
   one-thread launches (``<<<1, 1, …>>>``, bookkeeping such as cuDNN's seed unpacking);
2. fewer operator boundaries first: each ``op_call`` step, and each helper that is another
   operator's native function called directly (``at::native::copy_`` from mm's Blas.cpp), on the
   way from the key to the step counts one. mm's cuBLAS/cuBLASLt calls (none) come before the copy
   kernels of its conj/transposed inputs (one: copy_); SDPA's flash kernels (its op_call to the
   flash operator, then to _flash_attention_forward) before the pad/fill kernels reached through
   pad → constant_pad_nd → fill_;
3. then the tree's order (the source's order of the alternatives).

The same launch line reached along several ways is one entry, with its best rank. No operator
name decides anything here.

The condition ("when") comes from ``--why``'s reasons when the chain has them (shown only: Note
[--why does not rank]), else from the cheap text reading of extract/enclosing.py (Note [Enclosing branches without a parse]) at the
step's own call site; when that site has no branch, from the nearest call site above it on the
way (a launch in launch_unrolled_kernel is picked by ``if (contiguous)`` in its caller), up to the
operator's native function or kernel. The ``#if`` the index recorded for the line comes first.
Only the lines of the function around each call site are read (the index knows where each
function starts and ends: ``Store.function_spans``), so a call in CUDABlas.cpp costs its function,
not the file's 71 KB.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Callable

from atenmap.extract.enclosing import Enclosing, TextBranches
from atenmap.model import Chain, KeyChain, Location, Reason, Role, Run, Step
from atenmap.extract import macros
from atenmap.resolve import callbacks, choices, conditions, dtypes, hipify, natives, rocmbuild, selectors, strided
from atenmap.kinds import KeyGroup
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.decide import decide_all
from atenmap.resolve.chain import OTHER_NATIVE
from atenmap.resolve.libraries import is_setup_call
from atenmap.resolve.opcalls import HELPER_OPERATORS
from atenmap.resolve.sites import call_sites

# Calls on the way that may be given a TensorIterator (Note [An iterator built on broadcast inputs])
_ITERATOR_TAKERS = frozenset({Role.STUB_CALL, Role.CALL, Role.HELPER})
# Steps the search for a condition climbs through; it stops at the rest (native, kernel, yaml, ...).
_CLIMB = frozenset({Role.LAUNCH, Role.JIT, Role.LIBRARY, Role.CALL, Role.HELPER, Role.OP_CALL, Role.STUB_CALL})
_ONE_THREAD = re.compile(r"<<<\s*1\s*,\s*1\s*[,>]")
MAX_WHEN = 3  # conditions kept per run, innermost first
MAX_RUNTIME = 2  # runtime settings kept per run (Note [Runtime backend choices]), before them


def run_name(step: Step) -> str:
    """The name a run is known by: a launch's kernel (before ``<<<``), else the step's symbol."""
    if step.role == Role.LAUNCH:
        return step.symbol.split("<<<", 1)[0].strip()
    return step.symbol


Spans = Callable[[str], list[tuple[int, int]]]  # file -> (first, last line) of each function defined in it
Definitions = Callable[[str], list[tuple[str, int]]]  # name -> (file, first line) of each function of that name


def runs(chain: Chain, root: str | None, functions: Spans | None = None,
         facts: CallFacts | None = None, platform: str = conditions.DEFAULT_PLATFORM,
         views: frozenset[str] = frozenset(), definitions: Definitions | None = None) -> tuple[Run, ...]:
    """Every key's runs, main path first (Note [What runs, first]); ``root``: the tree whose files
    give the conditions (None or a missing folder: only the ``#if`` of each line); ``functions``:
    where the index says each function of a file is, so that only the function around a call is
    read (else the whole file); ``facts``: one call's dtype, shapes and aliases (Note [One call's
    facts]): runs it cannot take are left out, the rest say whether the facts decided them; ``views``:
    the view operators that change strides (strided.strided_views: Note [A copy of a view is strided]);
    ``definitions``: where the index defines a function (a backend selector in another file: Note [A
    branch on a selector's value] in selectors.py)."""
    reader = _Reader(root, functions, schema_defaults(chain.op.schema), aliased(chain.op.schema, facts), platform,
                     views, definitions)
    reader.params = schema_arguments(chain.op.schema)
    own = chain.op.name.name.removesuffix("_")
    converts = bool(_CONVERTS.search(chain.op.schema))
    found = tuple(r for kc in chain.keys for r in _key_runs(kc, reader, facts or None, own in HELPER_OPERATORS,
                                                            default_call(kc.key, converts)))
    if platform == "rocm":  # the library calls hipify renames (Note [hipify names] in hipify.py)
        found = tuple(replace(r, name=hipify.shown(r.name)) if r.role == Role.LIBRARY else r for r in found)
    return found


# Note [The runs the bundle keeps]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The ranking reads the text of the functions around each call (their branches, flags, the
# arguments a caller binds, a selector's order, a specialization's dtype), and the bundled index
# quotes no function bodies: ranked by each line's ``#if`` alone, ``mm --key CUDA`` led there with
# gemm_and_bias, which mm never reaches (a tree: cuBLAS's gemm). So scripts/build_bundle.py ranks
# them once, with the tree's files: for every operator, the bundle's own chain of each key the
# operator has a kernel for (and CPU and CUDA where only a composite kernel serves them), on each
# platform (cuda, rocm), and keeps each key's list (quoted_runs in store/quoted.sql): the runs in
# order, each with its "when" as the runs block prints it without and with ``--why`` (the
# conditions' text, as printed, never a function body). A bundled answer takes a key's kept list
# where its chain is the one they were ranked on (the default ``--depth``, operator calls
# expanded); any other chain's runs are ranked by ``#if`` alone and the answer says so. A call's
# facts (``--dtype``, ``--shape``, ``--example``) would be decided against the branches' text,
# which is not kept: the answer shows the default call's ranking and its "for your call" line says
# that the facts were not applied (``Chain.unapplied``), never a silently different answer.
def kept_row(run: Run, why: Run | None = None) -> list:
    """One run of quoted_runs (Note [The runs the bundle keeps]); ``why``: the same run as ``--why``
    shows it (its "when" kept only where it differs)."""
    def when(r: Run) -> list:
        return [[c.kind, c.text, c.loc.file if c.loc else None, c.loc.line if c.loc else None] for c in r.when]

    plain = when(run)
    shown = when(why) if why is not None else plain
    return [run.role.value, run.name, run.file, run.line, run.generated, run.setup, list(run.via), plain,
            None if shown == plain else shown]


def kept_runs(key: str, rows: list, why: bool = False) -> tuple[Run, ...]:
    """The runs of ``key`` from its quoted_runs ``rows`` (kept_row's), with ``--why``'s "when" when ``why``."""
    out = []
    for role, name, file, line, generated, setup, via, plain, shown in rows:
        when = tuple(Reason(k, t, Location(f, n) if f is not None else None)
                     for k, t, f, n in (shown if why and shown is not None else plain))
        out.append(Run(key, Role(role), name, Location(file, line) if file is not None else None, when, tuple(via),
                       setup, generated))
    return tuple(out)


# a local lambda's head as extract/enclosing.py's _local_lambda reads it (``auto const f = [`` too): a
# cheap look before its walk (Note [A local lambda runs where it is used])
_LOCAL_LAMBDA = re.compile(rb"\bauto\b[\w\s&]*=\s*\[")
_CONVERTS = re.compile(r"[(,]\s*ScalarType\s+\w+")  # a required dtype parameter: not ``ScalarType? dtype``
_DEVICE_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU"})


def default_call(key: str, converts: bool = False) -> CallFacts:
    """The call that ranks ``key``'s runs when the user describes none (Note [A call with the
    defaults]): ``DEFAULT_FACTS`` on the key's device, converting when the operator does."""
    return replace(DEFAULT_FACTS, device=key if key in _DEVICE_KEYS else None, converts=converts)


# Note [A composite's runs are its operators']
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An operator that only has a composite kernel (linear, conv2d, cross_entropy_loss: one
# CompositeImplicitAutograd function calling other operators) launches nothing itself, and at its
# composite key the calls to other operators are not followed to a device (the key has none). Its
# default answer would say "no launch found". Its runs are its operators' on the device people
# ask about: the chain for CUDA (where the composite kernel serves CUDA, the calls are followed
# to their CUDA kernels), each run labelled with the operator it goes through (``via``). Only when
# every key shown is composite and none of them runs anything; the runs then carry key "CUDA".
COMPOSITE_DEVICE = "CUDA"


def composite_device(chain: Chain, found: tuple[Run, ...], keys: Callable[[], list[str]]) -> str | None:
    """The device whose runs stand in for a composite-only answer's, or None (Note [A composite's
    runs are its operators']); ``keys()``: the operator's dispatch keys, asked only then."""
    if found or not chain.keys or any(kc.key not in KeyGroup.COMPOSITE for kc in chain.keys):
        return None
    return COMPOSITE_DEVICE if COMPOSITE_DEVICE not in keys() else None


def _crosses(step: Step) -> bool:
    return step.role == Role.OP_CALL or OTHER_NATIVE in step.detail


def _key_runs(kc: KeyChain, reader: "_Reader", facts: CallFacts | None, helper_itself: bool = False,
              default: CallFacts | None = None) -> list[Run]:
    found: dict[tuple, list[tuple[tuple, Step, tuple]]] = {}
    # (step, its parent's entry, operator boundaries above it): the way up is rebuilt only for runs
    stack: list[tuple[Step, tuple | None, int]] = [(s, None, 0) for s in reversed(kc.steps)]
    expanded = _expansions(kc.steps)
    order = walked = 0
    while stack:
        entry = stack.pop()
        step, _up, crossed = entry
        walked += 1
        if (step.role.runs_on_device or step.role == Role.KERNEL) and not _stands_for_children(step):
            ident = (step.role, run_name(step), step.file, step.line)
            rank = (_setup(step), crossed, order)
            order += 1
            found.setdefault(ident, []).append((rank, step, entry))
        below = crossed + _crosses(step)
        children = reader.evaluation_order(step.children, _path(entry) + (step,))
        if not children and walked < MAX_WALK:
            children = _shown_above(step, entry, expanded)  # Note [Every way to a run]
        stack += [(c, entry, below) for c in reversed(children)]
    if any(role in (Role.LAUNCH, Role.JIT) for role, *_ in found):  # a key that launches: its kernels are host code
        found = {k: v for k, v in found.items() if k[0] != Role.KERNEL}
    ranked = []
    for ways in found.values():
        got = _best_way(ways, reader, facts, helper_itself, default or DEFAULT_FACTS)
        if got is not None:
            ranked.append(got)
    out = []
    for _rank, setup, step, path, when, decided in _distinct_first(sorted(ranked, key=lambda v: v[0])):
        via = tuple(_op_of(p) for p in path if _crosses(p))
        out.append(Run(kc.key, step.role, run_name(step), step.loc, when, via, setup, step.generated, decided))
    return out


# Note [Each thing that runs once, first]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# One kernel is often launched from several lines: gpu_kernel's vectorized_elementwise_kernel
# from one line per vector width, the unrolled and the strided elementwise_kernel from others; a
# copy reaches a memcpy through CUDACachingAllocator::memcpyAsync, cudaMemcpyAsync and
# memcpy_and_sync. Which of those lines runs depends on sizes, strides and alignment, which no
# static reading decides. So that the first lines of the block name the different things that can
# run, a run whose kernel (or library function; every memcpy is one, every memset one) an earlier
# run already names comes after the runs that name something new, within the same tier (runs the
# default call can take, then set-up and edge cases, then those only another value of a runtime
# setting takes (Note [A setting left at its default] in choices.py), then runs it cannot take);
# their order among themselves is kept.
_TEMPLATE = re.compile(r"[<(\s]")


def _stands_for_children(step: Step) -> bool:
    """A launch of a callback's parameter whose children are the kernels it is handed, launched at
    its line (Note [Kernels passed to a callback] in callbacks.py): they run, not ``kernel_fn``."""
    return step.role == Role.LAUNCH and any(c.role == Role.LAUNCH and c.loc == step.loc for c in step.children)


def _thing(step: Step) -> str:
    name = run_name(step).lower()
    for word in ("memcpy", "memset"):
        if word in name:
            return word
    return _TEMPLATE.split(run_name(step).strip(), maxsplit=1)[0].rsplit("::", 1)[-1]


def _distinct_first(ranked: list) -> list:
    """Note [Each thing that runs once, first]: ``ranked`` (rank, setup, step, ...) reordered. A way
    ruled out only by the guessed strides (tier 1) names a new thing after the call's own ways that
    do (a helper operator's after the helpers'), and before those that repeat one (Note [Strides are
    the kernel's operands'])."""
    seen: set[tuple] = set()
    keyed = []
    for i, item in enumerate(ranked):
        # (taken False, under a setting's other value, set-up or edge case)
        tier = (item[0][0] == 2, item[0][1], item[0][2])
        thing = (tier, _thing(item[2]))
        # (launches nothing the index sees, reached through a helper operator): rank's own order
        keyed.append(((tier, thing in seen, item[0][3], item[0][4], item[0][0] == 1, i), item))
        seen.add(thing)
    return [item for _key, item in sorted(keyed, key=lambda k: k[0])]


# Note [The first way the defaults take]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The runs block keeps the order a function's calls run in when nothing else ranks them apart. A
# helper called on several lines sits at its first; but lu_solve_kernel calls
# ``lu_solve_looped_cusolver`` first under ``preferred_backend == at::LinalgBackend::Cusolver`` and
# again in the default heuristic below, and a local lambda's calls sit where it is written, not used
# (Note [A local lambda runs where it is used] in extract/enclosing.py). So a function's calls are
# ordered by the first line where a way the default call takes reaches them (its runtime settings
# at their defaults, Note [A setting left at its default] in choices.py, and no branch on the way
# decided false by its defaults and what the callers bind: ldl_factor_kernel's default branch calls
# MAGMA only `if (LD.is_complex() && hermitian)`): the lambda's use, a later call site, or the first
# site where no way is default (a stable sort, only where the calls were in their lines' order).


# Note [Strides are the kernel's operands']
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The default call's tensors are fresh and contiguous (Note [A call with the defaults]), and that
# decides ``iter.is_contiguous()`` in gpu_kernel's loops (CUDALoops.cuh: the vectorized kernel, not
# the strided ``elementwise_kernel`` of launch_legacy_kernel). But the tensors a kernel's iterator
# sees are often not the user's: an operator broadcasts its arguments (prelu's weight, a normalize's
# ``keepdim`` norm), works on views it makes (kron's strided views, pad's slices, a narrow copy), or
# writes into a slice. Measured on the GPU oracle (bench/bench_first.py), such operators ran only
# the strided kernel. So a way that only the guessed strides rule out (with ``strided`` set, as
# below a copy of a view, it would not be ruled out) is not ranked with the ways the call cannot
# take: it names its kernel right after the kernels of the ways the call takes (the operator's own
# before the work of helper operators: a strided way of its own before a ``copy_``), before those
# that repeat one (the narrower vector widths), and before set-up and edge cases; where the operator
# has no way of its own that the call takes, it can come first. Its ``when`` shows first the branch
# the guessed strides decide (``after if (contiguous) return``). The same holds for ``--shape`` and
# ``--example``: their tensors are the user's, not the iterator's, so the way is kept, ranked so, and
# "not decided by the given arguments" (``torch.mul(x, y)`` with ``y`` broadcast runs the strided
# loop, which the shapes alone do not say).


def _guessed(facts: CallFacts | None, default: CallFacts, filled: bool = True) -> CallFacts:
    """The facts a guess is made with: the default call's, or the user's with the rest at the
    default call's (Note [What the user did not say]); with ``filled`` False, the user's alone."""
    if facts is None:
        return default
    return replace(facts, default=True, device=default.device, converts=default.converts) if filled else facts


def _strides_decided(reasons, facts: CallFacts | None, default: CallFacts, path, reader: "_Reader",
                     filled: bool = True) -> bool:
    """Whether a way the call is guessed not to take stays ruled out when its tensors are strided
    (Note [Strides are the kernel's operands'])."""
    strided = replace(_guessed(facts, default, filled), strided=True)
    return decide_all(reasons, strided, reader.context(reasons, path, defaults=filled,
                                                       aliases=not filled and facts is not None)) is False


def _strided_branch(reasons, facts: CallFacts | None, default: CallFacts, path, reader: "_Reader") -> tuple[Reason, ...]:
    """The branch that rules a strided-only way out for fresh tensors (gpu_kernel's ``after if
    (contiguous) return``), to show with it; () where no one branch does."""
    guessed = _guessed(facts, default)
    context = reader.context(reasons, path, defaults=True)
    return next(((r,) for r in reasons if decide_all([r], guessed, context) is False
                 and decide_all([r], replace(guessed, strided=True), context) is not False), ())


# Note [Every way to a run]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# The chain's tree expands a function once; a later call of it reads "expanded above" and has no
# children. copy_'s direct_copy_kernel_cuda reaches gpu_kernel after conj_kernel_cuda has expanded
# it, so the tree alone gives the copy's launches one way, through the complex-only conjugation,
# and that way's conditions decide them. Every later call is a way too: the walk goes on into the
# expansion's steps from each such call (not from one already on its own way up: recursion), up to
# MAX_WALK steps per key.
# The same holds for a DispatchStub called again ("expanded above") and for an operator called again
# ("NAME: already shown above", Note [Re-dispatch]): the walk goes on into that operator's steps.
EXPANDED_ABOVE = "expanded above"
_SHOWN_ABOVE = re.compile(r"; ([\w.]+): already shown above")
MAX_WALK = 50_000


def _expansion_key(step: Step) -> tuple:
    """What a step expands: a function (by its definition), a stub (by name), an operator (its yaml step)."""
    if step.role == Role.STUB_CALL:
        return (step.role, step.symbol)
    if step.role == Role.YAML:
        return (step.role, step.symbol.split(" ", 1)[0])
    return (step.role, step.symbol, step.loc)


def _expansions(steps) -> dict[tuple, Step]:
    """Each expanded step of a key's tree (one with children) by what it expands (_expansion_key)."""
    out: dict[tuple, Step] = {}
    todo = list(steps)
    while todo:
        s = todo.pop()
        if s.children:
            out.setdefault(_expansion_key(s), s)
            todo += s.children
    return out


def _shown_above(step: Step, entry: tuple, expanded: dict[tuple, Step]) -> tuple[Step, ...]:
    """The steps below ``step`` where the tree shows them elsewhere (Note [Every way to a run]); none
    where that expansion is already on ``step``'s own way up (recursion)."""
    if step.role == Role.OP_CALL:
        keys = [(Role.YAML, name) for name in _SHOWN_ABOVE.findall(step.detail)]
        got = [expanded[k] for k in keys if k in expanded and not _on_path(entry, k)]
        return tuple(got)
    if EXPANDED_ABOVE not in step.detail:
        return ()
    key = _expansion_key(step)
    same = expanded.get(key)
    if same is None or _on_path(entry, key):
        return ()
    return same.children


def _on_path(entry: tuple, key: tuple) -> bool:
    up = entry[1]
    while up is not None:
        if _expansion_key(up[0]) == key:
            return True
        up = up[1]
    return False


def _best_way(ways, reader: "_Reader", facts: CallFacts | None, helper_itself: bool = False,
              default: CallFacts | None = None):
    """The best-ranked way to one run that its callers can take: a way whose conditions are false
    whatever the call (a branch on an argument its caller binds, Note [Arguments a caller binds]) is
    not a way; with a call's ``facts``, neither is one that call cannot take. None: no way left."""
    best, given, fallback = None, facts, default or DEFAULT_FACTS
    for (setup, crossed, order), step, entry in sorted(ways, key=lambda w: w[0]):
        facts, default = given, fallback
        path = _path(entry)
        runtime, reasons = _when(step, path, reader)
        place = reader.selected(step, path)
        if place is None or reader.never_taken(step, path):
            continue  # not in this platform's build (Note [What a ROCm build leaves out] in rocmbuild.py)
        above = tuple(reader.bound_branches(step, path))  # what the callers' arguments may decide higher up
        if decide_all(reasons + above, ANY_CALL, reader.context(reasons + above, path)) is False:
            continue  # dead for this caller
        deciding = reasons + _outer_branches(step, path, reader)  # Note [Every branch on the way decides]
        if facts is not None:  # Note [What a selector returns a value for] in selectors.py
            deciding = deciding + tuple(reader.selector_conditions(step, path))
        copied_strided, converted = reader.copies(path)
        if copied_strided:  # Note [A copy of a view is strided]
            facts = replace(facts, strided=True) if facts is not None else None
            default = replace(default, strided=True)
        if converted:  # Note [Views that copy]: ``self.to(kComplexHalf)`` on the way converts
            default = replace(default, converts=True)
        taken = decide_all(deciding, facts or default, reader.context(deciding, path, defaults=facts is None)
                           if facts is None or not reader.aliases else reader.context(deciding, path, aliases=True))
        if facts is None and taken is not False and above:  # the call with the defaults (Note [A call with the defaults])
            if decide_all(above, default, reader.context(above, path, defaults=True)) is False:
                taken = False
        strided_only = False
        if facts is not None and taken is False:
            if _strides_decided(deciding, facts, default, path, reader, filled=False):
                continue  # the call cannot take it (Note [Deciding a branch])
            strided_only = True  # its tensors are not the iterator's (Note [Strides are the kernel's operands'])
        decided = "" if facts is None else ("yes" if taken else "undecided")
        guess = taken if facts is None or taken is not None or facts.call else _unsaid(facts, default, deciding, above,
                                                                                      path, reader)
        if facts is not None and not facts.call and guess is not False and above \
                and decide_all(above, default, reader.context(above, path, defaults=True)) is False:
            guess = False  # an argument the facts leave unsaid, at its default (Note [A call with the defaults])
        helper = not helper_itself and any(_crosses(p) and (_op_name(p) in HELPER_OPERATORS or reader.for_a_scalar(p))
                                           for p in path)  # Note [An operator called for a host scalar]
        special = _special_case(deciding + above, facts or default, reader.context(deciding + above, path, defaults=True),
                                reader.params)
        # 0: a way the call takes (or may); 1: one only its guessed strides rule out
        # (Note [Strides are the kernel's operands']); 2: one it cannot take
        tier = 1 if strided_only else 0 if guess is not False else \
            1 + _strides_decided(deciding + above, facts, default, path, reader)
        # a kernel that launches nothing the index sees (a lazy wrapper, host code) after what does run
        edge = setup or _edge(step, reasons) or reader.other_machine(step, path, fallback.device)
        off = choices.off_default(runtime, reader.platform)  # Note [A setting left at its default] in choices.py
        rank = (tier, off, edge, step.role == Role.KERNEL, helper, special, place, crossed, order)
        if best is None or rank < best[0]:
            if _asked_why(step, path):  # what --why shows, not what ranked (Note [--why does not rank])
                runtime, reasons = _when(step, path, reader, why=True)
            if tier == 1:  # the branch the guessed strides decide, shown first
                reasons = _strided_branch(deciding + above, facts, default, path, reader) + reasons
            best = (rank, setup, step, path, runtime[:MAX_RUNTIME] + _first(reasons), decided)
        if guess is not False and not special and not off:
            break  # the ways come in rank order: no later one ranks better (a later one may be no special case,
            # or under a setting's default)
    return best


# Note [--why does not rank]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``--why`` fills each step's reasons from the tree-sitter reader (extract/branches.py: outermost
# first, every call site of a step that stands for several); the runs block's own reader is
# extract/enclosing.py's (innermost first, the first call site). Ranking by whichever was there made
# the first run depend on the flag: ``conv2d --why`` led with the bias ``add_`` and plain ``conv2d``
# with cuDNN, because the add_ step's --why reasons lack the backend's ``case`` that the selector
# ranks by. The ranks (what is dead, what the call decides, the selector's place) now always come
# from the runs block's reader, and --why only changes the "when" shown for each run: the same runs,
# in the same order, with or without it.
def _asked_why(step: Step, path: tuple[Step, ...]) -> bool:
    return bool(step.why) or any(s.why for s in path)


# Note [Every branch on the way decides]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A run's "when" shows the branches of the nearest call site that has any; whether a call takes the
# run depends on every call site on the way. gpu_kernel's strided ``elementwise_kernel`` sits in
# launch_legacy_kernel after ``if (N == 0) return``, and its caller reaches launch_legacy_kernel
# only after ``if (contiguous) return launch_vectorized_kernel(...)``: for a call whose iterator
# is contiguous, that caller's branch is what rules it out. So the branches of every call site up
# to the operator's native function (or kernel) decide; only the nearest ones are shown.
def _outer_branches(step: Step, path: tuple[Step, ...], reader: "_Reader") -> tuple[Reason, ...]:
    """The branches of the call sites on the way above the nearest one that has any."""
    out: list[Reason] = []
    nearest = False
    climbing = True
    for s in (step, *reversed(path)):
        if s.role not in _CLIMB:
            climbing = False  # a kernel, registration or native step: above it only operator calls count
            continue
        if not climbing and s.role != Role.OP_CALL:
            continue
        found = [r for r in reader.reasons(s) if r.kind in _BRANCH]
        if nearest:
            out += found
        nearest = nearest or bool(found)
    return tuple(out)


# Note [What the user did not say]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``--dtype float32`` (or ``--shape``) says one thing of the call; a way it leaves undecided is
# ranked as the default call ranks it, the user's facts kept (fresh tensors on the key's device,
# schema defaults: Note [A call with the defaults]), so that naming the dtype never puts a worse run
# first. Only the rank: such a run stays "undecided" and in the answer. An --example names its
# arguments, so its undecided ways are not guessed.
def _unsaid(facts: CallFacts, default: CallFacts, reasons, above, path, reader: "_Reader") -> bool | None:
    filled = replace(facts, default=True, device=default.device, converts=default.converts)
    guess = decide_all(reasons, filled, reader.context(reasons, path, defaults=True))
    if guess is not False and above and decide_all(above, filled, reader.context(above, path, defaults=True)) is False:
        return False
    return guess


# Note [Edge cases last]
# ~~~~~~~~~~~~~~~~~~~~~~
# Some runs are real but rarely what a call is about: a cudaMemsetAsync (the semaphores of a global
# reduction, zeroing an output before an atomic kernel), a launch inside
# ``if (x.numel() == 0)`` (an empty input's fast path) or under an ``#if`` for an older CUDA/cuDNN
# version. A memcpy is not one of them: a copy between tensors of one dtype and layout is a
# memcpy (copy_'s memcpy_eligible path), the main work of every view-copying operator. They rank after the operator's own kernels and after the work of helper operators, with
# the set-up calls (Note [What runs, first]). Runs the default call (float32 tensors, torch's default
# dtype) cannot take, by Note [Deciding a branch], come after everything else.
_EMPTY = re.compile(r"numel\(\)\s*(?:==|<=)\s*0\b|is_empty\(\)|\bsize\(\)\s*==\s*0\b")
_EMPTY_SIZE = re.compile(r"\bsize(?:<\w+>)?\([^()]*\)\s*==\s*0\b|" + _EMPTY.pattern)  # size<T>(input, 0) == 0
_NOT_EMPTY = re.compile(r"numel\(\)\s*(?:!=|>)\s*0\b")
_OLD_VERSION = re.compile(r"VERSION\w*\s*<")
# what ranks runs when no call is described: torch's default dtype, fresh tensors, default settings
DEFAULT_FACTS = CallFacts(dtype="Float", default=True)
ANY_CALL = CallFacts()  # nothing known of the call: only what its callers bind decides


# Note [Special cases after the general one]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``if (output_size[0] == 1 && output_size[1] == 1) return input.mean(...)`` (adaptive_avg_pool2d),
# ``if (n == 0) digamma; else if (n == 1) trigamma; else polygamma`` (polygamma_kernel_cuda): a
# branch taken only when an argument the user gives (a name of the operator's schema) equals one
# number is a special case of the code after it, which handles every other value. When the call
# does not decide it (a parameter without a default), the way through the general case ranks first.
# Sizes the code derives are not arguments: softmax's ``inner_size == 1`` is its main path. Names
# are compared, not bindings: a helper's own parameter that shares a schema argument's name (``dim``,
# ``n``) counts as that argument. A value at its schema default is decided
# by Note [A call with the defaults] instead (``groups == 1``), so it is no special case here; nor
# is a tensor's rank (``input.dim() == 2`` picks linear's addmm, ``dim() == 4`` grid_sample's 2-D
# kernel): each rank has its own code. One value may also be named by the rank: ``dim == ndim - 1``
# (the scans' ``scan_dim``: the innermost dimension's kernel, else the outer dimensions' one) picks
# one dimension of the ndim a ``dim`` argument can name, and the code after it serves the others.
# A judgement, measured on the GPU oracle (bench/bench_first.py: the OpInfo samples scan every
# dimension): code that mostly scans its last dimension (``x.cumsum(-1)``) runs the innermost kernel,
# which stays in the answer, second.
# So does an enumerator: ``mode == EmbeddingBagMode::MAX`` (embedding_bag's max kernel; sum and mean
# share the other). The rank itself is never the argument tested.
# So is a branch taken only when two of the operator's tensor arguments have the same sizes: a
# coincidence of shapes the code after it does not need. cross_entropy_loss reads ``if
# (self.sym_sizes() == target.sym_sizes())`` as class probabilities, and its general case (class
# indices: log_softmax then nll_loss) comes after it in the text.
_RANK = re.compile(r"\bdim\(\)|\bndim|\bn_?dims?\b|\bndimension\(\)")  # a tensor's rank: a layout's code, not a special value
# a value (a name, or one element of it: ``output_size[0]``) against a number or the rank plus or minus
# a number (``ndim - 1``, ``self.dim() - 1``); not ``self.numel() == 1``
_EQUALS_ONE_VALUE = re.compile(
    r"\(*([A-Za-z_]\w*)(?:\[\d+\])?\s*==\s*(-?\d+|[\w.]+(?:\(\))?\s*[-+]\s*\d+|(?:\w+::)+\w+)\)*")  # 1: the variable, 2: the value


def _one_value(term: str, params: frozenset[str]) -> bool:
    """``n == 0``, ``output_size[0] == 1``, ``dim == ndim - 1``, ``mode == Mode::MAX`` for an argument
    (Note [Special cases after the general one]); not a rank against a number (``input.dim() == 2``)."""
    m = _EQUALS_ONE_VALUE.fullmatch(term)
    if not m or m.group(1) not in params or _RANK.search(m.group(1)):
        return False
    value = m.group(2)
    return value.lstrip("-").isdigit() or "::" in value or bool(_RANK.search(value))  # a number, an enumerator, the rank ± k


_SAME_SIZES = re.compile(r"\(*(\w+)\.(?:sym_)?sizes\(\)\s*==\s*(\w+)\.(?:sym_)?sizes\(\)\)*")


def _same_sizes(term: str, params: frozenset[str]) -> bool:
    """``self.sym_sizes() == target.sym_sizes()`` for two different arguments (Note [Special cases
    after the general one])."""
    m = _SAME_SIZES.fullmatch(term)
    return bool(m) and m.group(1) != m.group(2) and m.group(1) in params and m.group(2) in params


def _special_case(reasons, facts: CallFacts, context, params: frozenset[str]) -> bool:
    """Whether a way takes an undecided ``if (... && x == N && ...)`` branch (Note [Special cases
    after the general one]): one of its ``&&`` terms tests an argument of the operator (``params``)
    against a number, none is ``||``."""
    for r in reasons:
        if r.kind != "if":
            continue
        cond = _PP_LABEL.sub("", r.text).removeprefix("if (").removesuffix(")")
        if "||" in cond:
            continue
        if not any(_one_value(t.strip(), params) or _same_sizes(t.strip(), params) for t in cond.split("&&")):
            continue
        if decide_all([r], facts, context) is None:
            return True
    return False


def _fixed_context(flags: dict[str, str], bound: dict[str, str]):
    """A decide_all context that gives every reason the same flags and bindings."""
    return lambda _reason: (flags, bound)


def _edge(step: Step, reasons: tuple[Reason, ...]) -> bool:
    if step.role == Role.LIBRARY and "memset" in step.symbol.lower():
        return True
    for r in reasons:
        if r.kind in ("if", "case", "ternary") and _EMPTY.search(r.text) and "?" not in r.text.split(" ? ")[-1]:
            return True
        if r.kind == "else" and _NOT_EMPTY.search(r.text):
            return True
        if r.kind == "#if" and _OLD_VERSION.search(r.text):
            return True
    return False


def _path(entry: tuple) -> tuple[Step, ...]:
    """The steps above an entry of _key_runs' walk, outermost first."""
    up, out = entry[1], []
    while up is not None:
        out.append(up[0])
        up = up[1]
    return tuple(reversed(out))


def _setup(step: Step) -> bool:
    if step.role == Role.LIBRARY:
        return is_setup_call(step.symbol)
    return step.role == Role.LAUNCH and bool(_ONE_THREAD.search(step.symbol))




def _op_name(step: Step) -> str:
    """A crossing step's operator base name, without a trailing ``_`` (``aten::fill_.Scalar`` -> ``fill``)."""
    name = _op_of(step).removeprefix("aten::").split(".", 1)[0]
    return name.removesuffix("_") if name not in ("_copy_from",) else name


def _op_of(step: Step) -> str:
    """``aten::copy_`` for an op_call step (its symbol), the function's name for a helper."""
    return step.symbol.split(" ", 1)[0] if step.role == Role.OP_CALL else step.symbol.rsplit("::", 1)[-1]


# Which conditions a reader wants first: what picks the call, then what stops before it, then dtypes.
_FIRST = {"#if": 0, "case": 1, "if": 1, "else": 1, "ternary": 1, "switch": 2, "return": 3, "dtypes": 4}


_BRANCH = {"if", "else", "case", "switch", "ternary", "return"}


def _when(step: Step, path: tuple[Step, ...], reader: "_Reader",
          why: bool = False) -> tuple[tuple[Reason, ...], tuple[Reason, ...]]:
    """The runtime settings on the way, and the ``#if`` of the step's line, the branches of the
    nearest call site on the way up that has any, and the dtypes of the nearest that names them
    (extract/enclosing.py's reading; with ``why``, ``--why``'s reasons where a step has them: what
    is shown, never what ranks, Note [--why does not rank])."""
    out: list[Reason] = [r for r in step.why if r.kind == "#if"] if why else []
    cond = conditions.from_label(step.detail)
    if cond and step.loc and not out:
        out.append(Reason("#if", cond, step.loc))
    branches: list[Reason] = []
    typed: list[Reason] = []
    runtime: dict[str, Reason] = {}  # Note [Runtime backend choices]: every level of the way counts
    for s in (step, *reversed(path)):
        if s.role not in _CLIMB:
            break
        special = reader.specialization(s)
        if special is not None and not typed:
            typed = [special]
        if branches:  # above the nearest branches only the runtime settings are wanted (a cheap look first)
            found = [r for r in s.why if r.kind == "runtime"] if why and s.why else reader.runtime(s)
        else:
            found = [r for r in ((why and s.why) or reader.reasons(s)) if r.kind != "#if"]
        if why and s.why and reader.in_used_lambda(s):  # --why's parse reads a lambda's body alone: its
            # uses' settings come from the text (Note [A local lambda runs where it is used] in extract/enclosing.py)
            found += [r for r in reader.runtime(s) if r.kind == "runtime" and r not in found]
        for r in found:
            if r.kind == "runtime":
                runtime.setdefault(r.text.split(":", 1)[0], r)
        if branches:
            continue
        # innermost first, whichever reader gave them (--why's lists outermost first): the branch that
        # separates two runs is the innermost, and MAX_WHEN cuts the outer guards (numel() > 0)
        branches = [r for r in found if r.kind in _BRANCH]
        if why and s.why:  # the text reader's come innermost first already (a lambda's body before its use's)
            branches.sort(key=lambda r: -(r.loc.line if r.loc else 0))
        typed = typed or [r for r in found if r.kind == "dtypes"]
    return tuple(runtime.values()), tuple(out + branches + typed)


def _first(reasons) -> tuple[Reason, ...]:
    """At most MAX_WHEN reasons, by _FIRST (stable: innermost first within a kind)."""
    return tuple(sorted(reasons, key=lambda r: _FIRST.get(r.kind, 5))[:MAX_WHEN])


class _Reader:
    """Each file read once per chain (extract/enclosing.py); unreadable files give nothing."""

    def __init__(self, root: str | None, functions: Spans | None = None, defaults: dict[str, str] | None = None,
                 aliases: dict[str, str] | None = None, platform: str = conditions.DEFAULT_PLATFORM,
                 views: frozenset[str] = frozenset(), definitions: Definitions | None = None):
        self.root, self.functions = root, functions
        self.definitions = definitions  # name -> (file, first line) of its definitions (selectors.py)
        self.views = views  # Note [A copy of a view is strided]
        self.platform = platform  # Note [The ROCm side of #if] in conditions.py
        self.aliases = aliases or {}  # the call's arguments passed twice, by schema name (aliased())
        self.defaults = defaults or {}  # the operator's schema defaults (Note [A call with the defaults])
        self.params: frozenset[str] = frozenset()  # the operator's argument names (Note [Special cases after the general one])
        self.files: dict[str, list[bytes] | None] = {}  # each file's lines
        self.parts: dict[tuple[str, int, int], TextBranches] = {}
        self.names: dict[tuple[str, int, int], dict[str, str]] = {}  # variables set from a runtime setting
        self.mention: dict[tuple[str, int, int], bool] = {}  # whether a function's text names a runtime setting
        self.file_mention: dict[str, bool] = {}
        self.keys: dict[Location, tuple[str, int, int]] = {}  # call site -> its function's (file, first, last)
        self.spans: dict[str, list[tuple[int, int]]] = {}
        self.seen: dict[tuple, list[Reason]] = {}
        self.bools: dict[tuple[str, int, int], dict[str, str]] = {}  # a function's flags (bool X = ...;)
        self.selectors: dict[tuple, list[str]] = {}  # Note [Backends a selector returns]
        self.selector_of: dict[tuple, tuple] = {}  # the selector's span and its mentions, per switch

    def reasons(self, step: Step) -> list[Reason]:
        """The branches common to every call site of ``step`` (the first site's places); asked
        once per place and detail (runs below one helper climb to the same sites)."""
        key = (step.role, step.loc, step.detail)
        if key not in self.seen:
            self.seen[key] = self._reasons(step)
        return self.seen[key]

    def first_site(self, step: Step) -> list[Reason]:
        """The branches around ``step``'s first call site alone (an operator called in two ``case``s
        ranks by the first: Note [Backends a selector returns])."""
        sites = call_sites(step)
        if len(sites) < 2:
            return self.reasons(step)
        key = ("first", step.role, step.loc, step.detail)
        if key not in self.seen:
            self.seen[key] = [_reason(e, sites[0].file) for e in self._around(sites[0], ways=True)[0]]
        return self.seen[key]

    def context(self, reasons, path: tuple[Step, ...], defaults: bool = False, aliases: bool = False):
        """What decides ``reasons`` besides the call: per function they sit in, its flags (Note [Flags
        a condition names]) and the arguments its caller on ``path`` binds (Note [Arguments a caller
        binds]); with ``defaults``, also the operator's own parameters at their schema defaults (Note
        [A call with the defaults]). A function ``reason -> (flags, bound)`` for decide.decide_all."""
        bound = self.bindings(path, self.defaults if defaults else self.aliases if aliases else None)
        keys = {r.loc: self._key(r.loc) for r in reasons if r.loc is not None and r.kind not in ("#if", "runtime")}
        per_key = {key: (self._outer_flags(key) | self._flags(key, bound.get(key, {})),
                         self.with_values(key, bound.get(key, {})))
                   for key in set(keys.values())}
        return lambda r: per_key.get(keys.get(r.loc), ({}, {}))

    def _outer_flags(self, key: tuple[str, int, int]) -> dict[str, str]:
        """The flags set once in the functions around a lambda's body (``const auto memory_format =
        input_.suggest_memory_format();`` before the ``AT_DISPATCH`` whose lambda switches on it)."""
        spans = self.spans.get(key[0]) or []
        out: dict[str, str] = {}
        for first, last in sorted(sp for sp in spans if sp[0] < key[1] and key[2] <= sp[1]):
            outer = self._flags((key[0], first, last), {})
            out.update((k, v) for k, v in outer.items() if k not in out)
        return out

    def other_machine(self, step: Step, path: tuple[Step, ...], key: str | None) -> bool:
        """Whether a call site on the way to ``step`` is compiled only for another operating system or
        processor than ``key``'s build (Note [The machine a platform's build is for] in
        conditions.py): an edge case."""
        return any(conditions.other_machine(conditions.from_label(s.detail), key) for s in (step, *path) if s.detail)

    def never_taken(self, step: Step, path: tuple[Step, ...]) -> bool:
        """On ROCm, whether a branch on the way to ``step`` is one a ROCm build never takes (a cuDNN
        predicate's call: Note [What a ROCm build leaves out] in rocmbuild.py); False elsewhere."""
        if self.platform != "rocm":
            return False
        for s in (step, *reversed(path)):
            if s.role not in _CLIMB:
                continue
            if any(r.kind == "if" and rocmbuild.never_taken(_PP_LABEL.sub("", r.text))
                   for r in self.reasons(s)):
                return True
        return False

    def selected(self, step: Step, path: tuple[Step, ...]) -> int | None:
        """Note [Backends a selector returns]: the place, among the values its selector returns first,
        of the ``case`` that leads to ``step`` (innermost on the way); 0 where no case is selected so;
        None where this platform's selector never returns the case's value (a ROCm build's
        ``ConvBackend::Cudnn``, Note [What a ROCm build leaves out] in rocmbuild.py)."""
        for s in (step, *reversed(path)):
            if s.role not in _CLIMB and s.role != Role.OP_CALL:
                continue  # the operator's own yaml, registration and native steps: no call site
            reasons = [r for r in self.first_site(s) if r.kind in ("case", "switch")]
            for i, r in enumerate(reasons):
                m = _ENUM_CASE.fullmatch(r.text.strip())
                # the switch around the case: after it (enclosing.py's reasons come innermost first)
                switch = next((w for w in reasons[i + 1:] if w.kind == "switch"), None)
                if m is None or switch is None or switch.loc is None:
                    continue
                order = self._returned(switch, m.group(1))
                if order and self.platform == "rocm":
                    mentioned, order = order, self._platform_order(switch, m.group(1), order)
                    if m.group(2) in mentioned and m.group(2) not in order:
                        return None
                if order and self._never_returned(switch, m.group(1), m.group(2), path):
                    return len(order) + 1  # Note [A selector's branch on a field the caller binds]
                if order:
                    return order.index(m.group(2)) if m.group(2) in order else len(order)
            got = self._if_selected(self.first_site(s))
            if got is not None:
                return got
        return 0

    def _if_selected(self, reasons: list[Reason]) -> int | None:
        """Note [A branch on a selector's value] in selectors.py: the place of the first value the
        ``if (b == E::V)`` branches in ``reasons`` allow, in the order ``b``'s selector returns them;
        None where no such branch is."""
        allowed: dict[tuple, dict[str, bool]] = {}
        for r in reasons:
            got = selectors.constraint(r.kind, r.text) if r.loc is not None else None
            if got is not None:
                variable, enum, value, ok = got
                key = self._key(r.loc)
                values = allowed.setdefault((key, variable, enum), {})
                values[value] = values.get(value, False) or ok
                if r.kind == "else":  # the else of an else-if chain rules out every test of the chain
                    if key[0] not in self.files:
                        self.files[key[0]] = self._read(key[0])
                    for earlier in selectors.earlier_in_chain(self._text(key), variable, enum, value):
                        values.setdefault(earlier, False)
        for (key, variable, enum), values in allowed.items():
            order = self._selector_order(key, variable, enum)
            if order:
                return selectors.place(values, order)
        return None

    def _selector_order(self, key: tuple[str, int, int], variable: str, enum: str) -> list[str]:
        """The values of ``enum`` in the order the selector that sets ``variable`` in function ``key``
        names them; the selector is found in the same file first, else where the index defines it."""
        memo = ("selector", key, variable, enum)
        if memo in self.seen:
            return self.seen[memo]
        if key[0] not in self.files:
            self.files[key[0]] = self._read(key[0])
        name = selectors.set_from_call(self._text(key), variable, enum)
        order: list[str] = []
        if name is not None:
            places = [(key[0], first) for first, _ in self.spans.get(key[0]) or []
                      if self._names_function(key[0], first, name)]
            if not places and self.definitions is not None:
                places = sorted(self.definitions(name))
            for path, first in places:
                if path not in self.files:
                    self.files[path] = self._read(path)
                if path not in self.spans:
                    self.spans[path] = self.functions(path) if self.functions else []
                last = next((b for a, b in self.spans[path] if a == first), 0)
                if last and (path, first, last) != key:
                    order = selectors.returned(self._text((path, first, last)), enum)
                    self.seen[("selector-at", key, variable, enum)] = (path, first, last)
                    break
        self.seen[memo] = order
        return order

    def selector_conditions(self, step: Step, path: tuple[Step, ...]) -> list[Reason]:
        """Note [What a selector returns a value for] in selectors.py: the branches around the one
        ``return E::V;`` of the selector whose value V the way to ``step`` needs (innermost
        first); none where the way needs no such value or the selector returns it more than once."""
        for s in (step, *reversed(path)):
            if s.role not in _CLIMB and s.role != Role.OP_CALL:
                continue
            reasons = self.first_site(s)
            for i, r in enumerate(reasons):
                got = selectors.constraint(r.kind, r.text) if r.loc is not None else None
                where = None
                if got is not None and got[3]:
                    variable, enum, value = got[:3]
                    key = self._key(r.loc)
                    if self._selector_order(key, variable, enum):
                        where = self.seen.get(("selector-at", key, variable, enum))
                else:
                    m = _ENUM_CASE.fullmatch(r.text.strip()) if r.kind == "case" else None
                    switch = next((w for w in reasons[i + 1:] if w.kind == "switch"), None) if m else None
                    subject = _SWITCH_ON.fullmatch(switch.text.strip()) if switch is not None and switch.loc else None
                    if subject is not None and self._returned(switch, m.group(1)):
                        enum, value = m.group(1), m.group(2)
                        where = self.selector_of.get((self._key(switch.loc), subject.group(1), enum), (None,))[0]
                if where is not None:
                    return self._returned_when(where, enum, value)
        return []

    def _never_returned(self, switch: Reason, enum: str, value: str, path: tuple[Step, ...]) -> bool:
        """Note [A selector's branch on a field the caller binds]: whether the selector that sets
        ``switch``'s variable returns ``value`` only under a branch that a field of its argument,
        set in the switch's function from a parameter the callers on ``path`` bind, makes false."""
        subject = _SWITCH_ON.fullmatch(switch.text.strip())
        key = self._key(switch.loc)
        where = self.selector_of.get((key, subject.group(1), enum), (None,))[0] if subject else None
        if where is None:
            return False
        arounds = self._each_return_when(where, enum, value)
        if not arounds:
            return False
        bound = self.bindings(path).get(key, {})
        fields = {f"{m.group(1).decode()}.{m.group(2).decode()}": bound.get(m.group(3).decode(), m.group(3).decode())
                  for m in _FIELD_SET.finditer(self._text(key))}
        fields = {k: v for k, v in fields.items() if v in ("true", "false")}
        return bool(fields) and all(decide_all(around, ANY_CALL, lambda _r: ({}, fields)) is False
                                    for around in arounds)

    def _each_return_when(self, where: tuple[str, int, int], enum: str, value: str) -> list[list[Reason]]:
        """The branches around each ``return E::V;`` of a selector (innermost first)."""
        memo = ("each-return-when", where, enum, value)
        if memo not in self.seen:
            text = self._text(where)
            if where not in self.parts:
                self.parts[where] = TextBranches(text, where[1])
            self.seen[memo] = [[_reason(e, where[0]) for e in self.parts[where].around(where[1] + at)
                                if e.kind in ("if", "else", "return") and not e.cond]
                               for at in selectors.return_lines(text, enum, value)]
        return self.seen[memo]

    def _returned_when(self, where: tuple[str, int, int], enum: str, value: str) -> list[Reason]:
        """The branches around the selector's one ``return E::V;``; none where it returns V more than once."""
        arounds = self._each_return_when(where, enum, value)
        return arounds[0] if len(arounds) == 1 else []

    def _names_function(self, path: str, first: int, name: str) -> bool:
        return selectors.defines(self.files.get(path) or [], first, name)

    def _returned(self, switch: Reason, enum: str) -> list[str]:
        """The enumerators of ``enum`` in the order the selector that sets ``switch``'s variable
        returns them first (``ConvBackend backend = _select_conv_backend(...); switch (backend)``)."""
        subject = _SWITCH_ON.fullmatch(switch.text.strip())
        if subject is None:
            return []
        key = self._key(switch.loc)
        cached = self.selectors.get((key, subject.group(1), enum))
        if cached is not None:
            return cached
        order: list[str] = []
        mentions: list[tuple[str, int]] = []  # (enumerator, line) of each mention, for _platform_order
        set_by = re.search(rb"\b%s\s+%s\s*=\s*([\w:]+)\s*\(" % (re.escape(enum.encode()), re.escape(subject.group(1).encode())),
                           self._text(key))
        if set_by is not None:
            name = set_by.group(1).decode().rsplit("::", 1)[-1]
            lines = self.files.get(switch.loc.file) or []
            for first, last in self.spans.get(switch.loc.file) or []:
                if selectors.defines(lines, first, name) and (first, last) != key[1:]:
                    body = self._text((switch.loc.file, first, last))
                    for v in re.finditer(rb"\b%s::(\w+)" % re.escape(enum.encode()), body):
                        mentions.append((v.group(1).decode(), first + body.count(b"\n", 0, v.start())))
                        if v.group(1).decode() not in order:
                            order.append(v.group(1).decode())
                    self.selector_of[(key, subject.group(1), enum)] = ((switch.loc.file, first, last), mentions)
                    break
        self.selectors[(key, subject.group(1), enum)] = order
        return order

    def copies(self, path: tuple[Step, ...]) -> tuple[bool, bool]:
        """Whether ``path`` goes through a copy of a view that changes strides (Note [A copy of a
        view is strided]) or an operator written on a broadcast operand (Note [Broadcast operands are
        strided]), and through a ``to`` given a constant dtype (Note [Views that copy])."""
        out = (False, False)
        for s in path:
            if s.role in _ITERATOR_TAKERS and not out[0] and self._iterator_broadcasts(s):
                out = (True, out[1])  # Note [An iterator built on broadcast inputs] in strided.py
                continue
            if s.role != Role.OP_CALL or s.loc is None:
                continue
            if strided.copied(s) is None:
                if " (operator" in s.symbol and self._broadcasts(s):  # Note [Broadcast operands are strided]
                    out = (True, out[1])
                continue
            key = ("copies", s.loc, s.symbol)
            if key not in self.seen:
                self.seen[key] = [self._copies(s)]
            got = self.seen[key][0]
            out = (out[0] or got[0], out[1] or got[1])
        return out

    def _iterator_broadcasts(self, step: Step) -> bool:
        sites = call_sites(step)
        if not sites:
            return False
        site = sites[0]
        key = ("iterator", site)
        if key not in self.seen:
            if site.file not in self.files:
                self.files[site.file] = self._read(site.file)
            lines = self.files[site.file]
            found = False
            if lines and site.line <= len(lines):
                first = self._key(site)[1] or 1
                function = b"\n".join(lines[first - 1:site.line - 1]).decode("utf-8", "replace")
                found = strided.iterator_broadcasts(strided.statement_at(lines, site.line), function,
                                                    lambda name: self._same_file_body(site.file, name))
            self.seen[key] = found
        return self.seen[key]

    def _same_file_body(self, path: str, name: str) -> str | None:
        """The text of the first function of ``path`` named ``name`` (``name(`` in its head: its first
        three lines, before its body's ``{``); None when there is none."""
        lines = self.files.get(path) or []
        head = re.compile(rb"\b%s\s*\(" % re.escape(name.encode()))
        for first, last in self.spans.get(path) or []:
            if head.search(b" ".join(lines[first - 1:first + 2]).split(b"{", 1)[0]):
                return b"\n".join(lines[first - 1:last]).decode("utf-8", "replace")
        return None

    def _broadcasts(self, call: Step) -> bool:
        key = ("broadcasts", call.loc, call.symbol)
        if key not in self.seen:
            if call.loc.file not in self.files:
                self.files[call.loc.file] = self._read(call.loc.file)
            lines = self.files[call.loc.file]
            self.seen[key] = bool(lines) and call.loc.line <= len(lines) and strided.broadcasts(
                strided.statement_at(lines, call.loc.line))
        return self.seen[key]

    def _copies(self, call: Step) -> tuple[bool, bool]:
        if call.loc.file not in self.files:
            self.files[call.loc.file] = self._read(call.loc.file)
        lines = self.files[call.loc.file]
        if not lines or call.loc.line > len(lines):
            return False, False
        first = self._key(call.loc)[1] or 1
        copier = strided.copied(call)
        statement = strided.statement_at(lines, call.loc.line)
        function = b"\n".join(lines[first - 1:call.loc.line - 1]).decode("utf-8", "replace")
        return (bool(self.views) and strided.copies_view(copier, statement, function, self.views),
                strided.converts(copier, statement))

    def _platform_order(self, switch: Reason, enum: str, order: list[str]) -> list[str]:
        """The selector's values in ``order`` as a ROCm build returns them: a mention under a branch
        the build never takes (``if (params.use_cudnn(...))``) is no return, and its place goes to
        the value's MIOpen counterpart (Note [What a ROCm build leaves out] in rocmbuild.py); the values
        returned for an empty input come last (Note [Edge cases last]). The CUDA order stays the
        selector's first mentions, as it was."""
        subject = _SWITCH_ON.fullmatch(switch.text.strip())
        where, mentions = self.selector_of.get((self._key(switch.loc), subject.group(1), enum), (None, []))
        if where is None:
            return order
        if where not in self.parts:
            self.parts[where] = TextBranches(self._text(where), where[1])
        kept = [(v, not any(e.kind == "if" and rocmbuild.never_taken(e.text) for e in self.parts[where].around(line)))
                for v, line in mentions]
        returned = {v for v, ok in kept if ok}
        out: list[str] = []
        for v, ok in kept:
            got = v if ok else rocmbuild.counterpart(v)
            if got in returned and got not in out:
                out.append(got)
        # the empty input's values (``if (size(input, 0) == 0 || ...) return ConvBackend::Empty``) after
        # the backends: Note [Edge cases last]
        empty = {v for v, line in mentions
                 if any(e.kind == "if" and _EMPTY_SIZE.search(e.text) for e in self.parts[where].around(line))}
        return [v for v in out if v not in empty] + [v for v in out if v in empty]

    def bound_branches(self, step: Step, path: tuple[Step, ...]) -> list[Reason]:
        """The branches at the call sites on ``path`` that sit in a function whose parameters the
        defaults bind (the operator's native function and the helpers it passes them to)."""
        bound = self.bindings(path, self.defaults)
        out: list[Reason] = []
        for s in path[1:]:
            if s.role not in _CLIMB:
                continue
            sites = call_sites(s)
            if sites and self._key(sites[0]) in bound:
                out += [r for r in self.reasons(s) if r.kind in _BRANCH]
        return out

    def specialization(self, step: Step) -> Reason | None:
        """The dtype of an explicit specialization ``step`` sits at (``template <> void
        gemm_internal_cublas<c10::complex<double>>(...)``): a ``dtypes`` reason naming the one
        dtype whose kernels call it (Note [Specializations by dtype])."""
        if step.role == Role.LAUNCH:  # a kernel a dispatcher's table hands (Note [Kernels passed to a callback])
            cpp = callbacks.table_type(step.detail)
            scalar = dtypes.cpp_scalar_type(cpp) if cpp else None
            return Reason("dtypes", f"{dtypes.torch_name(scalar)} (is_same<DT, {cpp}>)", step.loc) if scalar else None
        if step.role not in (Role.CALL, Role.HELPER) or step.loc is None:
            return None
        key = ("special", step.loc)
        if key not in self.seen:
            self.seen[key] = [self._specialization(step)]
        return self.seen[key][0]

    def _overload_by_element(self, step: Step, lines: list[bytes]) -> Reason | None:
        """Note [Overloads by element type]: the dtype of a function whose pointer parameters all
        point to one floating element type; None otherwise."""
        name = _bare_name(step.symbol)
        head = b" ".join(lines[step.loc.line - 1:step.loc.line + 11]).decode("utf-8", "replace")
        m = re.search(r"\b%s\s*\(" % re.escape(name), head)
        if m is None:
            return None
        params, depth = [], 0
        for i in range(m.end() - 1, len(head)):
            depth += {"(": 1, ")": -1}.get(head[i], 0)
            if depth == 0:
                params = head[m.end():i].split(",")
                break
        pointers = [p for p in map(_POINTER_PARAM.search, params) if p]
        pointed = {dtypes.cpp_scalar_type(p.group(1)) for p in pointers}
        if len(pointers) < 2 or len(pointed) != 1 or not pointed <= _FLOATING_ELEMENTS:
            return None
        scalar = pointed.pop()
        return Reason("dtypes", f"{dtypes.torch_name(scalar)} ({name}'s pointer parameters)", step.loc)

    def _specialization(self, step: Step) -> Reason | None:
        if step.loc.file not in self.files:
            self.files[step.loc.file] = self._read(step.loc.file)
        lines = self.files[step.loc.file]
        if not lines or step.loc.line > len(lines):
            return None
        text = b" ".join(lines[max(0, step.loc.line - 2):step.loc.line]).decode("utf-8", "replace")
        name = _bare_name(step.symbol)
        if "template <>" not in text and "template<>" not in text:
            # a primary template's parameters are written once for every type it is made for
            return None if _TEMPLATE_HEAD.search(text) else self._overload_by_element(step, lines)
        m = re.search(r"\b%s\s*<\s*((?:[^<>]|<[^<>]*>)+?)\s*>\s*\(" % re.escape(name), text)
        if m is None:  # ``template <> void MatAdd(..., const float* X, float* Y)``: its arguments deduced
            return self._overload_by_element(step, lines)
        scalar = _specialized_scalar(m.group(1))
        if scalar is None:
            return None
        return Reason("dtypes", f"{dtypes.torch_name(scalar)} ({name}<{m.group(1)}>)", step.loc)

    def _text(self, key: tuple[str, int, int]) -> bytes:
        lines = self.files.get(key[0]) or []
        return b"\n".join(lines[key[1] - 1:key[2] or len(lines)])

    def with_values(self, key: tuple[str, int, int], bound: dict[str, str]) -> dict[str, str]:
        """``bound`` and the values of the function's locals that follow from it (Note [A value
        chosen by a string])."""
        if not bound:
            return bound
        memo = ("values", key, tuple(sorted(bound.items())))
        if memo not in self.seen:
            if key[0] not in self.files:
                self.files[key[0]] = self._read(key[0])
            self.seen[memo] = _local_values(self._text(key).decode("utf-8", "replace"), bound)
        return self.seen[memo]

    def _flags(self, key: tuple[str, int, int], bound: dict[str, str]) -> dict[str, str]:
        """The flags of one function: those set once, and those whose every later assignment sits in a
        branch its caller's arguments make dead (``useLtInterface`` stays false for mm)."""
        if key not in self.bools:
            self.bools[key] = _bool_flags(self._text(key))
        once, later = self.bools[key]
        if not later or not bound:
            return once
        memo = ("flags", key, tuple(sorted(bound.items())))
        if memo not in self.seen:
            self.seen[memo] = self._bound_flags(key, once, later, bound)
        return self.seen[memo]

    def _bound_flags(self, key: tuple[str, int, int], once: dict[str, str], later: dict, bound: dict[str, str]
                     ) -> dict[str, str]:
        out = dict(once)
        if key not in self.parts:
            self.parts[key] = TextBranches(self._text(key), key[1])
        for name, (init, lines) in later.items():
            dead = _fixed_context(out, bound)
            if all(decide_all([_reason(e, key[0]) for e in _built(self.parts[key].around(key[1] + line), self.platform)],
                              ANY_CALL, dead) is False for line in lines):
                out[name] = init
        return out

    def bindings(self, path: tuple[Step, ...], defaults: dict[str, str] | None = None
                 ) -> dict[tuple[str, int, int], dict[str, str]]:
        """Per function on ``path`` called from a known site: its parameters bound to the arguments
        every call site passes alike, an argument that names a parameter bound in the caller taking
        that binding (Note [Arguments a caller binds]); ``defaults``: the operator's native function's
        parameters first bound to them (Note [A call with the defaults]). Kept per way (the steps
        of a chain live as long as its reader)."""
        key = ("bindings", tuple(map(id, path)), id(defaults) if defaults else None)
        if key not in self.seen:
            self.seen[key] = self._bindings(path, defaults)
        return self.seen[key]

    def _bindings(self, path: tuple[Step, ...], defaults: dict[str, str] | None
                  ) -> dict[tuple[str, int, int], dict[str, str]]:
        out: dict[tuple[str, int, int], dict[str, str]] = {}
        if defaults:
            native = next((s for s in path if s.role == Role.NATIVE and s.loc is not None), None)
            if native is not None:
                out[self._key(native.loc)] = dict(defaults)
        for i, step in enumerate(path):
            if step.role == Role.OP_CALL:  # Note [Arguments an operator call binds]
                native = _callee_native(path, i)
                if native is None:
                    continue
                key = ("bind-op", step.loc, step.detail, native.loc)
                if key not in self.seen:
                    self.seen[key] = self._bind_op(step, native)
                bound = self.seen[key]
                if bound:
                    site = self._key(call_sites(step)[0])
                    outer = self.with_values(site, out.get(site, {}))
                    out[self._key(native.loc)] = {p: outer.get(a, a) for p, a in bound.items()}
                continue
            if step.role not in (Role.HELPER, Role.CALL) or step.loc is None or "called at" not in step.detail:
                continue
            key = ("bind", step.loc, step.detail)
            if key not in self.seen:
                self.seen[key] = self._bind(step)
            bound = self.seen[key]
            if not bound:
                continue
            sites = call_sites(step)
            outer = self.with_values(self._key(sites[0]), out.get(self._key(sites[0]), {})) if sites else {}
            out[self._key(step.loc)] = {p: outer.get(a, a) for p, a in bound.items()} if outer else bound
        return out

    def _bind(self, step: Step) -> dict[str, str]:
        """Note [Arguments a caller binds]; a parameter the call leaves out is bound to its C++
        default argument (``addmm_out_cuda_impl(..., Activation activation = Activation::None)``,
        which mm calls with six arguments: its ``switch (activation)`` cases for GELU and RELU are
        not mm's)."""
        name = _bare_name(step.symbol)
        defaults: list[str | None] = []
        params = self._call_text(step.loc, name, definition=True, defaults=defaults)
        if not params:
            return {}
        common: dict[str, str] | None = None
        for site in call_sites(step):
            args = self._call_text(site, name)
            if args is None or len(args) > len(params):
                return {}
            got = {p: a for p, a in zip(params, args) if p}
            if len(defaults) == len(params):
                got.update((p, d) for p, d in zip(params[len(args):], defaults[len(args):]) if p and d is not None)
            common = got if common is None else {p: a for p, a in common.items() if got.get(p) == a}
        return common or {}

    def evaluation_order(self, steps: list[Step], path: tuple[Step, ...] = ()) -> list[Step]:
        """``steps`` with the operator calls of one line in the order C++ runs them (Note [Calls
        run when they finish]), each placed where the default call first reaches it (Note [The first
        way the defaults take]: a local lambda's use, a later call site); the list itself where
        neither applies. ``path``: the steps above ``steps``, outermost first (what their callers bind)."""
        steps = self._at_first_use(steps, path)
        lines: dict[tuple[str, int], int] = {}
        for s in steps:
            if s.role == Role.OP_CALL and s.loc is not None:
                lines[(s.loc.file, s.loc.line)] = lines.get((s.loc.file, s.loc.line), 0) + 1
        if all(n < 2 for n in lines.values()):
            return steps
        out = list(steps)
        for (file, line), n in lines.items():
            if n < 2:
                continue
            at = [i for i, s in enumerate(out) if s.role == Role.OP_CALL and s.loc == Location(file, line)]
            ends = [self._call_end(out[i]) for i in at]
            if None in ends:
                continue
            order = sorted(range(len(at)), key=lambda k: ends[k])
            picked = [out[at[k]] for k in order]
            for i, s in zip(at, picked):
                out[i] = s
        return out

    def _at_first_use(self, steps: list[Step], path: tuple[Step, ...] = ()) -> list[Step]:
        """``steps`` (one function's calls, by their first call site) with each moved to the line
        where the default call first reaches it (Note [The first way the defaults take]); the list
        itself where that is every step's first site."""
        if len(steps) < 2:
            return steps
        sites = [call_sites(s) for s in steps]
        if any(not got or got[0].file != sites[0][0].file for got in sites):
            return steps  # not one function's calls
        at = [self._default_line(got, path) for got in sites]
        moved = [i for i, got in enumerate(sites) if at[i] != got[0].line]
        if not moved:
            return steps
        first = [got[0].line for got in sites]
        if first != sorted(first):
            return steps  # not in the order of their lines: nothing to place them among
        return [steps[i] for i in sorted(range(len(steps)), key=lambda i: at[i])]

    def _default_line(self, sites: list[Location], path: tuple[Step, ...] = ()) -> int:
        """The line where the first way to these call sites that the default call takes (its runtime
        settings at their defaults, its branches not decided false with the defaults and what the
        callers on ``path`` bind) enters the function (a local lambda's use, Note [A local lambda
        runs where it is used] in extract/enclosing.py); the first site's line where none is."""
        if len(sites) < 2 and self._first_use(sites[0]) is None:
            return sites[0].line
        lines = []
        for site in sites:
            settings = self._mentions(site)
            if not settings and self._first_use(site) is None:  # one way, the site's own, no setting
                lines.append((False, site.line))
                continue
            names = self.names.get(self._key(site), {}) if settings else {}
            for line, way in self._ways(site):
                off = settings and choices.off_default(choices.runtime_reasons(
                    [[(e.kind, self._stacked(site.file, e), e.line) for e in way]], site.file, names), self.platform)
                if not off and way:  # ldl_factor's `if (LD.is_complex() && hermitian)` around its MAGMA call
                    reasons = [_reason(e, site.file) for e in way]
                    off = decide_all(reasons, DEFAULT_FACTS, self.context(reasons, path, defaults=True)) is False
                lines.append((off, line))
        return min(lines)[1] if lines else sites[0].line

    def in_used_lambda(self, step: Step) -> bool:
        """Whether a call site of ``step`` is in the body of a local lambda used after it."""
        return any(self._first_use(site) is not None for site in call_sites(step))

    def _first_use(self, site: Location) -> int | None:
        key = ("use", site)
        if key not in self.seen:
            part = self._part(site)
            self.seen[key] = [part.first_use(site.line) if part is not None and _LOCAL_LAMBDA.search(part.masked) else None]
        return self.seen[key][0]

    def _call_end(self, call: Step) -> int | None:
        """Where the call ``call`` names ends (its closing parenthesis) in the text from its line."""
        key = ("end", call.loc, call.symbol)
        if key not in self.seen:
            lines = self._read(call.loc.file) if call.loc.file not in self.files else self.files[call.loc.file]
            self.files[call.loc.file] = lines
            end = None
            if lines and call.loc.line <= len(lines):
                text = b"\n".join(lines[call.loc.line - 1:call.loc.line + 11]).decode("utf-8", "replace")
                name = _op_of(call).removeprefix("aten::").split(".", 1)[0]
                m = re.search(r"\b%s(?:_symint)?\s*(?:<[^;{}()]*>)?\s*\(" % re.escape(name), text)
                if m is not None and "\n" in text[:m.start()]:
                    m = None  # not on the call's line: another call of that name
                got = macros.balanced_paren(text, m.end() - 1) if m else -1
                end = got if got >= 0 else None
            self.seen[key] = end
        return self.seen[key]

    def _bind_op(self, call: Step, native: Step) -> dict[str, str]:
        """The native function's parameters bound to what every site of the operator call passes
        alike (Note [Arguments an operator call binds]); {} where the sites cannot be read."""
        overloads = call.detail.removeprefix("calls the operator (").split(")", 1)[0]
        if "," in overloads and "; overload " not in call.detail:
            return {}  # which overload each site calls is not known: its parameters could be another's
        structured = native.symbol.startswith("TORCH_IMPL_FUNC(")
        name = native.symbol[len("TORCH_IMPL_FUNC("):].split(")", 1)[0] if structured else native.symbol.rsplit("::", 1)[-1]
        params = self._call_text(native.loc, name + ")" if structured else name, definition=True)
        op = _op_of(call).removeprefix("aten::").split(".", 1)[0]
        if not params or not op:
            return {}
        common: dict[str, str] | None = None
        for site in call_sites(call):
            args = None
            for called in (op, op + "_symint"):
                args = self._call_text(site, called, method=True)
                if args is not None:
                    break
            if args is None or len(args) > len(params):
                return {}
            if args and _METHOD_BEFORE.search(self._site_text(site, called) or "") is not None:
                if "self" not in params:
                    return {}  # a method's object is the schema's self: no such parameter, no binding
                order = ["self"] + [p for p in params if p != "self"]  # polygamma(int n, Tensor self): self.polygamma(n)
                got = {p: a for p, a in zip(order, args) if p and a}
            else:
                got = {p: a for p, a in zip(params, args) if p and a}
            common = got if common is None else {p: a for p, a in common.items() if got.get(p) == a}
        if not common:
            return {}
        # a parameter left unbound must not read as a caller's variable of its name (``r.copy_(self)``
        # binds copy_'s src to the caller's ``self``, not to copy_'s own)
        return {p: common.get(p, f"__parameter_{p}") for p in params if p}

    def _site_text(self, at: Location, name: str) -> str | None:
        """The text of ``at``'s line up to the call of ``name`` on it (None: not on that line)."""
        lines = self.files.get(at.file)
        if not lines or at.line > len(lines):
            return None
        line = lines[at.line - 1].decode("utf-8", "replace")
        m = re.search(r"\b%s\s*(?:<[^;{}()]*>)?\s*\(" % re.escape(name), line)
        return line[:m.start()] if m else None

    def _call_text(self, at: Location, name: str, definition: bool = False,
                   method: bool = False, defaults: list | None = None) -> list[str] | None:
        """The arguments of the call of ``name`` at ``at`` (or, ``definition``, its parameters' names;
        their default arguments appended to ``defaults``)."""
        if at.file not in self.files:
            self.files[at.file] = self._read(at.file)
        lines = self.files[at.file]
        if not lines or at.line > len(lines):
            return None
        got = None
        for window in _ARGUMENT_WINDOWS:  # Note [Arguments one per line]
            text = b"\n".join(lines[at.line - 1:at.line - 1 + window]).decode("utf-8", "replace")
            got = call_arguments(text, name, definition, method, on_first_line=not definition, defaults=defaults)
            if got is not None or at.line - 1 + window >= len(lines):
                break
            if defaults is not None:
                defaults.clear()
        return got

    def runtime(self, step: Step) -> list[Reason]:
        """The ``runtime`` reasons of ``step`` (Note [Runtime backend choices]); the branches are read
        only where the text of a calling function names a runtime setting at all."""
        key = ("runtime", step.role, step.loc, step.detail)
        if key not in self.seen:
            sites = call_sites(step)
            self.seen[key] = [r for r in self.reasons(step) if r.kind == "runtime"] \
                if any(self._mentions(s) for s in sites) else []
        return self.seen[key]

    def _mentions(self, site: Location) -> bool:
        if site.file not in self.files:
            self.files[site.file] = self._read(site.file)
        lines = self.files[site.file]
        if lines is None:
            return False
        if site.file not in self.file_mention:  # most files name no setting: no function spans asked
            self.file_mention[site.file] = choices.mentions(b"\n".join(lines))
        if not self.file_mention[site.file]:
            return False
        key = self._key(site)
        if key not in self.mention:
            self.mention[key] = choices.mentions(b"\n".join(lines[key[1] - 1:key[2] or len(lines)]))
        return self.mention[key]

    def _reasons(self, step: Step) -> list[Reason]:
        sites = call_sites(step)
        if not sites:
            return []
        # a site in a local lambda's body counts once per use of the lambda (Note [A local lambda
        # runs where it is used] in extract/enclosing.py)
        ways = [(s, got) for s in sites for got in self._around(s, ways=True)]
        common = set.intersection(*({(e.kind, e.text) for e in got} for _s, got in ways))
        out = [_reason(e, sites[0].file) for e in ways[0][1] if (e.kind, e.text) in common]
        names = {}
        for s in sites:
            names.update(self.names.get(self._key(s), {}))
        return out + choices.runtime_reasons([[(e.kind, self._stacked(site.file, e), e.line) for e in got]
                                              for site, got in ways], sites[0].file, names)

    def _stacked(self, file: str, e: Enclosing) -> str:
        """A ``case`` label's text, `` default:`` added where ``default:`` labels the same statement
        (``case at::LinalgBackend::Cusolver: default: linalg_eigh_cusolver(...)``): the value and
        the default both reach it (Note [A setting left at its default] in choices.py)."""
        lines = self.files.get(file)
        if e.kind != "case" or not lines or not e.line or e.line > len(lines):
            return e.text
        return e.text + " default:" if _stacked_on_default(lines, e.line) else e.text

    def _around(self, site: Location, ways: bool = False):
        """The branches around ``site`` (extract/enclosing.py); with ``ways``, a list of them per way
        the site's line is reached (``around_ways``)."""
        if ways:
            return [w for _line, w in self._ways(site)]
        part = self._part(site)
        return _built(part.around(site.line), self.platform) if part is not None else []

    def _part(self, site: Location) -> TextBranches | None:
        """The text of the function around ``site`` (the file read once, each function's text once),
        or None where the file cannot be read."""
        if site.file not in self.files:
            self.files[site.file] = self._read(site.file)
        lines = self.files[site.file]
        if lines is None:
            return None
        key = self._key(site)
        if key not in self.parts:
            text = b"\n".join(lines[key[1] - 1:key[2] or len(lines)])
            self.parts[key] = TextBranches(text, key[1])
            self.names[key] = choices.aliases(text.decode("utf-8", "replace")) if choices.mentions(text) else {}
        return self.parts[key]

    def _ways(self, site: Location) -> list[tuple[int, list[Enclosing]]]:
        """(line, branches) of each way ``site``'s line is reached (extract/enclosing.py's ``ways``;
        the file and its function read by ``_part``); a way under an ``#if`` this platform's build
        leaves out is none, unless all are."""
        key = ("ways", site)
        if key not in self.seen:
            part = self._part(site)
            got = part.ways(site.line) if part is not None else [(site.line, [])]
            kept = [(n, w) for n, w in got if not any(e.kind == "#if" and conditions.not_built(e.text, self.platform)
                                                      for e in w)] or got
            self.seen[key] = [(n, _built([e for e in w if e.kind != "#if"], self.platform)) for n, w in kept]
        return self.seen[key]

    def _key(self, site: Location) -> tuple[str, int, int]:
        if site not in self.keys:
            first, last = self._function(site)
            self.keys[site] = (site.file, first, last)
        return self.keys[site]

    def _function(self, site: Location) -> tuple[int, int]:
        """The lines of the innermost function the index puts around ``site``; (1, 0): the file."""
        if site.file not in self.spans:
            self.spans[site.file] = self.functions(site.file) if self.functions else []
        spans = self.spans[site.file]
        inside = [(a, b) for a, b in spans if a <= site.line <= b]
        return max(inside) if inside else (1, 0)

    def for_a_scalar(self, step: Step) -> bool:
        """Whether an operator call's result is read back to the host on its line (``.random_(gen)
        .item<int64_t>()``): Note [An operator called for a host scalar]."""
        if step.role != Role.OP_CALL or step.loc is None or step.generated:
            return False
        key = ("scalar", step.loc, step.symbol)
        if key not in self.seen:
            if step.loc.file not in self.files:
                self.files[step.loc.file] = self._read(step.loc.file)
            lines = self.files[step.loc.file] or []
            text = b" ".join(lines[step.loc.line - 1:step.loc.line + 1])
            name = _op_name(step).encode()
            self.seen[key] = [any(_read_back(text, m.end()) for m in re.finditer(rb"\b%s_?\s*\(" % re.escape(name), text))]
        return self.seen[key][0]

    def _read(self, path: str) -> list[bytes] | None:
        if self.root is None and not os.path.isabs(path):
            return None
        full = path if os.path.isabs(path) else os.path.join(self.root, path)
        try:
            with open(full, "rb") as fh:
                return fh.read().split(b"\n")
        except OSError:
            return None


# Note [An operator called for a host scalar]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An operator whose result the calling code reads straight back to the host (``.item()`` on it,
# on the call's line or the next) makes a number for the host code, not the operator's work:
# cuDNN's RNNs seed their dropout state with ``at::empty({}, options.dtype(at::kLong)).random_(gen)
# .item<int64_t>()`` (cudnn/RNN.cpp get_dropout_state, only ``if (train && dropout_p > 0)``, once
# per device), so lstm's and gru's first run was random_'s distribution kernel, before cuDNN's
# cudnnRNNForwardTraining. Such a way ranks as the helper operators' (copy_, fill_: Note [What runs,
# first]), after the operator's own work and the other operators it calls; it stays in the answer.
def _read_back(text: bytes, after_open: int) -> bool:
    """Whether the call whose ``(`` ends just before ``after_open`` is followed by ``.item``."""
    depth = 1
    for i in range(after_open, len(text)):
        ch = text[i:i + 1]
        if ch == b"(":
            depth += 1
        elif ch == b")":
            depth -= 1
            if depth == 0:
                return re.match(rb"\s*\.\s*item\b", text[i + 1:]) is not None
    return False

# Note [Backends a selector returns]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``_convolution`` (Convolution.cpp) computes ``ConvBackend backend = _select_conv_backend(...)`` and
# then ``switch (backend)``: each ``case ConvBackend::X:`` calls one backend's operator. Which case a
# call takes is the selector's decision, and the selector tests the special cases around the common
# one (an empty input, depthwise weights) but returns its values in the order it prefers them:
# cuDNN before the in-tree depthwise kernels. A run reached through such a case ranks by the place of
# its enumerator among the selector's ``return``s (the first mention of each in the selector's body),
# after the rules above; a case whose switch is not set from a selector in the same file ranks as 0.
# An ``if`` chain on a selector's value ranks the same way: Note [A branch on a selector's value] in
# selectors.py.
_PP_LABEL = re.compile(r" \[#if .*\]$")  # conditions.label's, after a branch's text
_ENUM_CASE = re.compile(r"case\s+(?:[\w:]*::)?(\w+)::(\w+)\s*:")
_SWITCH_ON = re.compile(r"switch\s*\(\s*(\w+)\s*\)")


# Note [Flags a condition names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen names its conditions: copy_'s ``if (memcpy_eligible)`` tests ``bool memcpy_eligible = same_type
# && same_conj && same_neg && iter.is_contiguous();`` and ``bool same_conj = iter.tensor(0).is_conj() ==
# iter.tensor(1).is_conj();``. A flag defined once in the function (``bool``/``const bool``/``auto``
# with an initializer, never assigned again) stands for its expression when a condition is decided
# (resolve/decide.py); a flag assigned anywhere else in the function stays undecided.
_FLAG = re.compile(rb"\b(?:const\s+)?(?:bool|auto)\s+(\w+)\s*=\s*([^;{}]+);")


def _bool_flags(text: bytes) -> tuple[dict[str, str], dict[str, tuple[str, list[int]]]]:
    """The flags defined once and never assigned again (name -> expression), and those assigned
    again with ``NAME = ...;`` only (name -> (initial expression, the 0-based lines of the
    assignments, counted from the text's first line))."""
    found: dict[str, str] = {}
    for m in _FLAG.finditer(text):
        name = m.group(1).decode()
        found[name] = "" if name in found else " ".join(m.group(2).decode("utf-8", "replace").split())
    once, later = {}, {}
    for name, expr in found.items():
        if not expr:
            continue  # defined twice
        assigns = list(re.finditer(rb"\b%s\s*[-+*/|&^]?=(?!=)" % name.encode(), text))
        if len(assigns) == 1:
            once[name] = expr
        elif all(text[a.end() - 2:a.end() - 1] not in b"-+*/|&^" for a in assigns[1:]):
            later[name] = (expr, [text.count(b"\n", 0, a.start()) for a in assigns[1:]])
    return once, later


# Note [A value chosen by a string]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen turns a string argument into an enum before it branches: pad's native function maps ``str
# mode="constant"`` in an immediately-invoked lambda (``const auto mode_enum = [&] { if (mode ==
# "reflect") { return at::padding_mode::reflect; } else if (mode == "constant") { ... } }();``), passes
# ``static_cast<int64_t>(mode_enum)`` on, and the callee casts it back (``auto mode =
# static_cast<at::padding_mode>(mode_int);``) before ``if (mode == at::padding_mode::constant)``.
# A local defined once from a parameter bound to a constant, casts dropped, takes that constant, and one
# defined by such a lambda the value its ``return`` gives for the bound string (no branch matching:
# unknown). Not taken: a local changed after it is set (``+=``, ``++``, its address taken), a number
# through a cast, a lambda with a return no string decides or one nested in another branch. An
# enumerator compares with an enumerator of the same enum (decide.py): in an ``if`` both ways, in a
# ``switch`` only as "taken" (the reader keeps a statement's first ``case`` label, and a case may fall
# through); constants named in a namespace (``at::kCPU``) are equal by name only. So the default call of pad (mode "constant") ranks constant_pad_nd's fill and copy
# before the reflection and replication kernels. The same comparison reads a C++ default argument
# (Note [Arguments a caller binds]): ``scalar_to_tensor(const Scalar& s, const Device device =
# at::kCPU)`` takes ``if (device == at::kCPU)``'s fast track (``scalar_tensor_static``, which writes
# the value, no kernel) for every caller that leaves the device out (``wrapped_scalar_tensor(other)``
# in a Scalar overload), so its ``at::scalar_tensor`` and the fill kernels below it are no run of
# theirs.
_LOCAL = re.compile(r"\b(?:const\s+)?auto\s+(\w+)\s*=\s*")
_LAMBDA_HEAD = re.compile(r"\[[&=]?\]\s*(?:\(\s*\))?\s*\{")
_STRING_RETURN = re.compile(r'\bif\s*\(\s*(\w+)\s*==\s*("[\w ]*")\s*\)\s*\{?\s*return\s+([\w:]+)\s*;')
# a value a local copies: a literal or an enumerator, never a variable (``auto out = self;`` is another
# object: ``&out != &self`` holds)
_CONSTANT_VALUE = re.compile(r'"[\w ]*"|-?\d+(?:\.\d*)?(?:e-?\d+)?|true|false|(?:\w+::)+\w+')
_ENUM_OR_STRING = re.compile(r'"[\w ]*"|(?:\w+::)+\w+')
_AFTER_CAST = re.compile(r"^(?:static_cast<[\w:\s]+>\((\w+)\)|(\w+))\s*;")


def _local_values(text: str, bound: dict[str, str]) -> dict[str, str]:
    """``bound`` with the locals of the function ``text`` whose value follows from it (Note [A value
    chosen by a string])."""
    out = dict(bound)
    for m in _LOCAL.finditer(text):
        name = m.group(1)
        if name in out or len(re.findall(r"\b%s\s*(?:[-+*/%%&|^]|<<|>>)?=(?!=)" % name, text)) != 1 \
                or re.search(r"(?:\+\+|--)\s*%s\b|\b%s\s*(?:\+\+|--)|(?<![&\w])&\s*%s\b|swap\(" % (name, name, name), text):
            continue  # changed after it is set (or maybe: its address taken)
        rest = text[m.end():m.end() + 4000]
        head = _LAMBDA_HEAD.match(rest)
        if head is None:
            cast = _AFTER_CAST.match(rest)
            source = cast and (cast.group(1) or cast.group(2))
            value = out.get(source or "", "")
            # through a cast only a string or an enumerator (a number cast to an integer changes)
            if _CONSTANT_VALUE.fullmatch(value) and (cast.group(2) or _ENUM_OR_STRING.fullmatch(value)):
                out[name] = value
            continue
        end = _brace_end(rest, head.end() - 1)
        if end < 0 or not re.match(r"\s*\(\s*\)\s*;", rest[end:]):
            continue  # a lambda kept, not called where it is made
        body = rest[head.end():end - 1]
        returns = list(_STRING_RETURN.finditer(body))
        if len(returns) != len(re.findall(r"\breturn\b", body)) \
                or any(body.count("{", 0, r.start()) != body.count("}", 0, r.start()) for r in returns):
            continue  # a return no string decides, or one nested in another branch
        for ret in returns:
            if out.get(ret.group(1)) == ret.group(2):
                out[name] = ret.group(3)
                break
    return out


_CASE_LABEL = re.compile(rb"case\s+[\w:]+\s*:(?!:)")


def _stacked_on_default(lines: list[bytes], line: int) -> bool:
    """Whether ``default:`` labels the statement of the ``case`` label on ``line`` (1-based): past
    the label, other ``case`` labels stacked with it (``case A: case B: default:``), blank lines
    and ``//`` comments, the next text is ``default:``."""
    for text in lines[line - 1:line + 8]:
        text = text.strip()
        while True:
            m = _CASE_LABEL.match(text)
            if m is None:
                break
            text = text[m.end():].strip()
        if not text or text.startswith(b"//"):
            continue
        return re.match(rb"default\s*:", text) is not None
    return False


def _specialized_scalar(targs: str) -> str | None:
    """The ScalarType an explicit specialization's template arguments ``targs`` are made for: the
    element type, its first argument where value types follow (CUDASolver.cpp's ``syevj<c10::
    complex<float>, float>``: a complex float call's, not a float call's); None for another type,
    or where another argument is no element type (flash's ``run_mha_fwd_<cutlass::bfloat16_t, 128>``
    stays unread, as it was)."""
    scalar = dtypes.cpp_scalar_type(targs)
    if scalar is not None:
        return scalar
    args, depth, start = [], 0, 0
    for i, ch in enumerate(targs + ","):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            args.append(dtypes.cpp_scalar_type(targs[start:i]))
            start = i + 1
    return args[0] if len(args) > 1 and all(args) else None


def _bare_name(symbol: str) -> str:
    """``at::cuda::solver::gesvd_buffersize [specialization<float>]`` -> ``gesvd_buffersize``: a
    step of an explicit specialization carries its template arguments after the name (chain.py)."""
    return symbol.split(" [", 1)[0].rsplit("::", 1)[-1]


def _brace_end(text: str, at: int) -> int:
    """The index after the ``}`` closing the ``{`` at ``at`` (-1: not closed)."""
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return -1


# Note [A call with the defaults]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Without --example, runs are ranked for the call that leaves every optional argument at its
# schema default (native_functions.yaml: ``float label_smoothing=0.0``, ``bool upper=False``,
# ``Tensor? prepend=None``, whose ``prepend.has_value()`` / ``.defined()`` is then false): a
# branch of the operator's own native function on such a parameter (cross_entropy's ``if
# (label_smoothing > 0.0)``, which gathers) ranks after the rest. Only numbers, True/False and strings are
# bound, in the native function (its C++ parameters carry the schema's names) and, through the
# arguments it passes on unchanged, in the helpers it calls (index_put_'s ``accumulate``); only for
# ranking: a run on a non-default path stays in the answer.
_SCHEMA_DEFAULT = re.compile(r"(\w+)=(-?\d+(?:\.\d*)?(?:e-?\d+)?|True|False|None|Mean|Sum|\"[\w ]*\"|'[\w ]*')$")
# ``int reduction=Mean``: torchgen's at::Reduction::Mean, whose value (ATen/core/Reduction.h) decides
# ``reduction == Reduction::None`` as a number does (decide.py reads the enumerators so too)
_REDUCTION = {"Mean": "1", "Sum": "2"}


def aliased(schema: str, facts: CallFacts | None) -> dict[str, str]:
    """The call's arguments passed twice (``torch.add(x, x)``: CallFacts.aliases), bound by their
    schema names to one name each, so that ``&self != &other`` / ``self.is_same(other)`` in the
    native function are decided (Note [Arguments a caller binds]), and the strings it passes by
    keyword to ``str`` parameters (``mode="reflect"``: Note [A value chosen by a string])."""
    if not facts or not (facts.aliases or facts.strings):
        return {}
    out = {}
    for arg in natives.schema_args(schema):  # a string the call passes by keyword to a ``str`` parameter
        kind, _, name = arg.split("=", 1)[0].rpartition(" ")
        got = dict(facts.strings).get(name)
        if kind.strip() in ("str", "str?") and got is not None and re.fullmatch(r"[\w ]*", got):
            out[name] = f'"{got}"'
    args = schema.split("(", 1)[-1].rsplit(") ->", 1)[0].split("*", 1)[0]
    names = [a.strip().split("=", 1)[0].split()[-1] for a in args.split(",") if a.strip()]
    for i, j in facts.aliases:
        if i < len(names) and j < len(names):
            out[names[i]] = out[names[j]] = f"__argument_{i}"
    return out


def schema_arguments(schema: str) -> frozenset[str]:
    """``f(Tensor self, int[2] output_size, *, bool keepdim=False)`` -> {"self", "output_size", "keepdim"}."""
    return frozenset(a.split("=", 1)[0].split()[-1] for a in natives.schema_args(schema) if a.split("=", 1)[0].split())


def schema_defaults(schema: str) -> dict[str, str]:
    """``f(Tensor self, float eps=1e-05, bool upper=False)`` -> {"eps": "1e-05", "upper": "false"}."""
    args = schema.split("(", 1)[-1].rsplit(") ->", 1)[0]
    out = {}
    for arg in args.split(","):
        m = _SCHEMA_DEFAULT.search(arg.strip())
        if m:
            value = m.group(2)
            if value[0] in "\"'":  # ``str mode="constant"``, ``str approximate='none'``: a C++ string literal
                value = '"' + value[1:-1] + '"'
            out[m.group(1)] = value.lower() if value in ("True", "False") else _REDUCTION.get(value, value)  # None kept
    return out


# Note [Specializations by dtype]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# CUDABlas.cpp's gemm, gemm_internal and gemm_internal_cublas are templates over scalar_t with one
# explicit specialization per dtype (``template <> void gemm_internal_cublas<float>(...)`` calls
# cublasSgemm, ``<c10::complex<double>>`` cublasZgemm). A call reached through a specialization
# runs for that dtype only: the specialization is a ``dtypes`` reason of the runs below it, decided
# as an AT_DISPATCH's are (resolve/decide.py).

# Note [A selector's branch on a field the caller binds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``_convolution`` fills a struct from its parameters (``params.transposed = transposed_;``) and
# hands it to its selector, whose returns branch on the field: ``if (params.transposed) return
# ConvBackend::MkldnnTranspose; else return ConvBackend::Mkldnn;``. conv2d calls ``at::convolution``
# with ``transposed`` false, so for conv2d the selector never returns a transposed backend, while
# the text order (Note [Backends a selector returns]) would put it first. A field assigned in the
# switch's function from a parameter its callers bind to ``true``/``false`` (or from that literal)
# decides the branches around each of the selector's returns of a value; a value they rule out at
# every return ranks after every value the selector can return (conv_transpose2d's ``Cudnn``,
# returned for depthwise inputs and in the ``else`` of ``params.transposed``, stays: a depthwise
# input takes it). It is ranked, not dropped: the call site's binding is read from text.
_FIELD_SET = re.compile(rb"\b(\w+)\.(\w+)\s*=\s*(\w+)\s*;")

# Note [Overloads by element type]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# CPUBlas.cpp's gemm is not a template but one overload per element type: ``void gemm(..., const
# double *a, int64_t lda, const double *b, ..., double *c, int64_t ldc)`` calls dgemm_, the ``float``
# one sgemm_, the ``c10::complex<float>`` one cgemm_. The caller's ``a.const_data_ptr<scalar_t>()``
# picks one per dtype of its AT_DISPATCH. So a function whose pointer parameters all point to one
# floating or complex element type (two of them at least: the operands, not a scale) runs for that
# dtype only, as a specialization does, and so does an explicit specialization whose template
# arguments are deduced from them (``template <> void MatAdd(..., const float* X, float* Y)``). A
# primary template is not one (``adam_math``'s ``const float*`` scales serve every dtype it is made
# for). Integer pointers are left alone: ``const int64_t *sizes`` is a shape, not data.
_POINTER_PARAM = re.compile(r"(?:const\s+)?((?:(?:c10|at|std)::)?(?:complex\s*<\s*\w+\s*>|\w+))\s*\*\s*(?:__restrict__\s+)?\w+")
_TEMPLATE_HEAD = re.compile(r"\btemplate\s*<\s*[^\s>]")
_FLOATING_ELEMENTS = frozenset({"Double", "Float", "Half", "BFloat16", "ComplexDouble", "ComplexFloat", "ComplexHalf"})

# Note [Arguments a caller binds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A helper shared by several operators often branches on its arguments: mm's ``TORCH_IMPL_FUNC(
# mm_out_cuda)`` calls ``addmm_out_cuda_impl(const_cast<Tensor&>(result), result, self, mat2, 0, 1)``
# and addmm_out_cuda_impl(Tensor& result, const Tensor& self, ...) takes the cuBLASLt epilogue only
# ``if (&result != &self)``. A helper step sits at the callee's definition with its call sites in
# its detail ("called at Blas.cpp:601"), so the callee's parameters (read from its definition) are
# bound to the arguments every site passes alike (read at the sites; casts dropped). Two parameters
# bound to one variable alias (``&result != &self`` is false, ``result.is_same(self)`` true), and
# one bound to a number or true/false is that constant (``beta.toComplexDouble() != 0.0`` with 0).
# A flag assigned only in branches the binding makes dead keeps its initial value
# (``bool useLtInterface = false;``), so mm's runs lose gemm_and_bias and addmm's keep it. A run
# whose every way is dead this way is no run of the operator; the answer's tree still shows it.
#
# Note [Calls run when they finish]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Two operator calls on one line run in the order their calls end, not the order their names are
# read: in ``at::mul(at::add(a, b), c)`` add runs first, and ``x.sum().exp()`` runs sum, then exp.
# The index keeps a line's calls in the order the parse met them, which for a call given another as
# an argument is the outer call first, so the runs block reorders the operator calls of one line by
# where each call's parentheses close, read from the text (evaluation_order); a call not written
# ``name(`` on its line (an operator expression such as ``a * b``) leaves that line's order as parsed.
# This orders ways of equal rank only: a run fewer operators deep still comes first (allclose's
# ``at::isclose(...).all()``: all's reduction, one operator deep, before isclose's eq kernel, two deep).
#
# Note [Arguments an operator call binds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The same holds across an operator call: index_put's native function calls
# ``self.clone(...).index_put_(indices, value, accumulate)``, index_put_'s calls
# ``at::_index_put_impl_(self, indices, value, accumulate, /*unsafe=*/false)``, and
# _index_put_impl_ sorts (thrust, index_put_with_sort_stub) only ``if (... && (accumulate ||
# globalContext().deterministicAlgorithms()))``. The callee's native function's parameters (read
# from its definition) are bound to the arguments every site of the call passes alike; a method
# call's object stands for ``self`` and stays unbound. Bindings compose down the way, so the
# schema default ``accumulate=False`` of index_put reaches _index_put_impl_ and the default call
# ranks index_put's own kernel before the sort. A method call's object is the schema's ``self``,
# wherever the callee has it (``self.polygamma(n)`` calls ``polygamma(int64_t n, const Tensor& self)``).
# A structured kernel's TORCH_IMPL_FUNC takes the schema's arguments in order, then its outputs:
# nll_loss's ``at::nll_loss_forward_symint(self, target, weight, reduction, ignore_index)`` binds
# nll_loss_forward_out_cuda's first five, so the default ``reduction=Mean`` reaches
# ``if (reduction == Reduction::None && n_dims == 2)`` (decide.py reads at::Reduction's values).
# Not bound: an operator call naming several overloads, none picked (which one a site calls is not
# known), a structured kernel whose meta function precomputes some of its parameters
# (TORCH_PRECOMPUTE_META_FUNC), and the trailing arguments a site leaves out (each such parameter
# stays its own unknown name, not the schema default).
_CAST = re.compile(r"^(?:(?:const|static|reinterpret)_cast<[^<>]*(?:<[^<>]*>[^<>]*)*>|std::move|c10::MaybeOwned<\w+>::borrowed)\((.*)\)$", re.S)


def call_arguments(text: str, name: str, definition: bool = False, method: bool = False,
                   on_first_line: bool = False, defaults: list | None = None) -> list[str] | None:
    """``name(a, b)`` in ``text``: the arguments as written (casts dropped, spaces removed); with
    ``definition``, the parameters' names (None when not found or not closed), and each one's C++
    default argument (spaces removed; None for none) appended to ``defaults`` when given; with
    ``method``, a method call ``x.name(b)`` gives ``["x", "b"]`` (its object stands for ``self``;
    ``__object`` where the object is no plain variable)."""
    m = re.search(r"\b%s\s*(?:<[^;{}()]*>)?\s*\(" % re.escape(name), text)  # TORCH_IMPL_FUNC(x)(: name "x)"
    if m is not None and on_first_line and "\n" in text[:m.start()]:
        m = None  # a call of that name on a later line is another call (a site's call starts on its line)
    end = macros.balanced_paren(text, m.end() - 1) if m else -1
    if end < 0:
        return None
    inner = re.sub(r"/\*.*?\*/|//[^\n]*", "", text[m.end():end - 1])
    out = []
    if method and (obj := _METHOD_BEFORE.search(text, 0, m.start())) is not None:
        out.append(obj.group(1) or "__object")  # a temporary (``x.clone().index_put_(``) aliases nothing named
    for part in macros.split_args(inner, angles=definition):  # a declaration's types nest <>; an argument's < compares
        part = part.strip()
        if definition:
            decl, eq, default = part.partition("=")
            decl = decl.strip()
            if defaults is not None:
                defaults.append("".join(default.split()) if eq else None)
            word = re.search(r"(\w+)\s*(?:\[\s*\d*\s*\])?$", decl)
            out.append(word.group(1) if word and " " in decl.replace("&", " ").replace("*", " ") else "")
        else:
            while (c := _CAST.match(part)) is not None:
                part = c.group(1).strip()
            out.append("".join(part.split()))
    return [] if out in ([""], []) else out


# ``x.name(`` / ``p->name(``: a method's object before the name (group 1: a plain variable's name)
_METHOD_BEFORE = re.compile(r"(?:(?<![\w.>)\]:])([A-Za-z_]\w*)\s*)?(?:\.|->)\s*\Z")


def _callee_native(path: tuple[Step, ...], i: int) -> Step | None:
    """The native function the operator call ``path[i]`` enters: the first native step below it,
    before any other call; None where the way leaves it otherwise, or where it is a structured
    kernel whose meta function precomputes some of its parameters (TORCH_PRECOMPUTE_META_FUNC)."""
    precomputed = False
    for s in path[i + 1:]:
        if s.role == Role.META:
            precomputed = "PRECOMPUTE" in s.symbol
        if s.role == Role.NATIVE:
            if s.loc is None or s.symbol.startswith("TORCH_") and (precomputed or "(" not in s.symbol):
                return None
            return s
        if s.role in (Role.OP_CALL, Role.HELPER, Role.CALL):
            return None
    return None


def _this_build(e: Enclosing, platform: str = conditions.DEFAULT_PLATFORM) -> Enclosing:
    """An ``else`` whose ``if`` ends a preprocessor region (extract/enclosing.py): the reading of the
    build a chain describes. A ROCm-only region (CUDABlas's ``#ifdef USE_ROCM else if (… ==
    BlasBackend::Ck)``) is not in it (Note [ROCm code under the CUDA key]), so the ``else`` follows
    the ``if`` before the region; any other region's ``if`` is kept with its ``#if``."""
    if conditions.excluded(e.cond, platform):
        return Enclosing(e.kind, e.other, e.line)
    if not e.other:  # an earlier test of the chain, which holds in every build (Note [An else-if chain's earlier tests])
        return Enclosing(e.kind, e.text, e.line)
    return Enclosing(e.kind, e.text + conditions.label(e.cond), e.line)


def _built(found: list[Enclosing], platform: str) -> list[Enclosing]:
    """``found`` as the build ``platform`` reads it (:func:`_this_build`); an ``else if`` chain's
    earlier test that a build without the region has as the region's ``other`` already (no ``other``
    of its own) is dropped there (Note [An else-if chain's earlier tests])."""
    out = [_this_build(e, platform) if e.cond else e for e in found]
    return [e for e in out if e.text]


# Note [Arguments one per line]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# clang-format puts each argument of a long call, and each parameter of a long signature, on a line
# of its own: attention.cu's ``_flash_attention_forward`` definition spans 18 lines (15 parameters),
# SDPA's call of it 14. The arguments a caller binds (Note [Arguments a caller binds]) are read from
# the lines that start at the call or the definition: 12 first (most calls), then 48 where the
# parentheses did not close in 12, so that ``std::nullopt`` passed for ``cumulative_sequence_length_q``
# decides ``if (cumulative_sequence_length_q.has_value())`` in the callee (the varlen path is dead).
_ARGUMENT_WINDOWS = (12, 48)


def _reason(e: Enclosing, file: str) -> Reason:
    if e.kind != "dispatch":
        return Reason(e.kind, e.text, Location(file, e.line))
    types = dtypes.dispatch_types(e.text, e.args)
    names = ", ".join(dtypes.torch_name(t) for t in types) if types else ""
    return Reason("dtypes", f"{names} ({e.text})" if names else e.text, Location(file, e.line))


# what resolve/mpsgraph.py reads the same way (Note [The branches of an MPS run] there)
reason_of = _reason
bool_flags = _bool_flags

__all__ = ["DEFAULT_FACTS", "MAX_WHEN", "bool_flags", "kept_row", "kept_runs", "reason_of", "run_name", "runs"]
