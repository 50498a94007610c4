"""What a resolver looked up, told to an observer as it looks (Note [Lookups told to an observer]).

``Index.chain(op, observer=...)`` hands a :class:`LookupObserver` to the ``Resolver`` and its
``StoreMemo``; the complete answer passes none. The preview (preview.py, Note [A preview never shows
a wrong step]) is the one observer: it checks every name a chain looked up against the files it did
not read.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from atenmap.store import FactRow

# Note [Lookups told to an observer]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A chain looks names up in the index in two ways. ``Resolver._defs`` resolves a name called at a
# site (Note [Resolving names] in chain.py): it asks for every definition of the name and picks
# among them by the calling file, the include distance, then the namespace; the observer is told
# each such resolution (``picked``: the name, the calling file, the rule that picked and how many
# definitions it answers), every time, and may make it answer nothing. Other steps ask for a name's
# facts directly (an operator's native functions, a stub's declaration and registrations, the meta
# function, a library wrapper). Either way the question goes to the index through the resolver's
# memo (Note [One query per question] in memo.py), which tells the observer each question the first
# time the resolver asks it (``found``, ``asked``) with the resolver step that asked it; repeats
# are answered by the memo and not told again. Last, each operator called whose own chain runs
# nothing for the key (``zeros_like: no kernel or library call in its CPU chain``, a step's detail)
# is told once the chain is built (``runs_nothing``), for the steps the chain shows.


class LookupStep(Enum):
    """Which resolver step asked the index a question (the observer's view of the resolver)."""

    DEFS = "defs"  # Resolver._defs: a name called at a site, resolved by Note [Resolving names]
    TEMPLATE_ARGUMENT = "template argument"  # _template_functors: whether a template argument names a class
    DIRECT = "direct"  # any other step: natives, stubs, the meta function, combine, a library step's calls, ...


class PickRule(Enum):
    """How ``Resolver._defs`` picked among a name's definitions (Note [Resolving names] in chain.py)."""

    NOT_IN_TREE = "not in the tree"  # a std::, c10::, thrust:: or cub:: name: answers nothing, nothing can change it
    NOTHING = "nothing"  # no definition of the kinds asked, or none that may run for the chain's device
    NO_SITE = "no site"  # no calling site to pick by: the first definitions
    SPELLED = "spelled"  # the specialization the call's template arguments spell
    SAME_FILE = "same file"  # defined in the calling file
    INCLUDED = "included"  # in a file the calling file includes, the closest by include distance
    NAMESPACE = "namespace"  # the calling namespace's definitions, or all where they are few (the last rule)


@dataclass(frozen=True)
class Pick:
    """A rule and, for the rules that go by files, the include distance from the calling file (0: the
    calling file's own, or a name no definition in the tree can change); None for the other rules."""

    rule: PickRule
    distance: int | None = None

    @staticmethod
    def included(distance: int) -> "Pick":
        """The pick by include distance (made once per distance of the include walk's six levels: a
        chain resolves ~3,700 names)."""
        return _INCLUDED[distance] if distance < len(_INCLUDED) else Pick(PickRule.INCLUDED, distance)


_INCLUDED = tuple(Pick(PickRule.INCLUDED, d) for d in range(8))
NOT_IN_TREE = Pick(PickRule.NOT_IN_TREE, 0)
NOTHING = Pick(PickRule.NOTHING)
NO_SITE = Pick(PickRule.NO_SITE)
SPELLED = Pick(PickRule.SPELLED)
SAME_FILE = Pick(PickRule.SAME_FILE, 0)
NAMESPACE = Pick(PickRule.NAMESPACE)


class LookupObserver:
    """Told what a resolver looks up (Note [Lookups told to an observer]). Each method does nothing
    here; an observer overrides those it needs."""

    def found(self, name: str, kinds: tuple[str, ...], rows: Sequence[FactRow], step: LookupStep,
              suffix: str = "") -> None:
        """The facts of ``kinds`` named ``name`` were asked of the index by ``step``: ``rows`` answered.
        ``suffix``: the qualified name's end the rows must have (``::MulFunctor::operator()``), or ""
        for every row of the name. Once per question and resolver."""

    def asked(self, name: str, kinds: tuple[str, ...], answer: bool, step: LookupStep) -> None:
        """Whether a fact of ``kinds`` is named ``name`` was asked by ``step``: ``answer``. Once per
        question and resolver, and only where the rows were not asked for before."""

    def picked(self, name: str, site_file: str | None, pick: Pick, count: int, kinds: tuple[str, ...]) -> bool:
        """``Resolver._defs`` resolved ``name`` (the last part of a qualified name) called in
        ``site_file`` (None: no site) by ``pick`` to ``count`` definitions of ``kinds``. Every
        resolution is told. Returns whether it keeps its answer: False makes it answer nothing (the
        step is then missing from the chain)."""
        return True

    def runs_nothing(self, operator: str, key: str) -> None:
        """The chain shows a call of ``operator`` whose own ``key`` chain runs nothing (no kernel or
        library call). Told once the chain is built, for each such step it shows."""
