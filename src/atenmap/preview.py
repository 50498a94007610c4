"""A first answer on a tree never indexed, from the few files its chain needs (Note [Query-driven preview]).

``partial_index(info, op, keys)`` finds those files with a byte scan, parses only them with the
build's own per-file parse (build._parse_one) into a temporary Store beside the index, and returns
an ``api.Index`` over it; ``None`` when there is no preview to give. The caller closes it (the
temporary store is then removed).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from atenmap.extract.scan import (class_heads, defined_in as _defined_in, defines, defines_class, defines_jit,  # noqa: F401
                                  pasted_definers as _pasted_definers)  # (defines: tests)
from atenmap.kinds import CallDetail, FactKind
from atenmap.locks import remove_dead_owners
from atenmap.resolve.includegraph import IncludeGraph
from atenmap.resolve.lookups import LookupObserver, LookupStep

# Note [Query-driven preview]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On a tree never indexed the first answer waits for the parse of all ~2,000 files (~10 s of CPU
# for 2.6.0), while one chain's steps lie in a few of them (mul.out on CUDA: 13 files, 0.2 MB).
# On a terminal, before the full build, the preview finds them with a cheap scan of the bytes:
# 1. the yaml entry's kernels for the asked keys (with CompositeImplicit/Explicit, and those of
#    its structured delegate; a ufunc's inner loops and ``<op>_stub``) and the op's base name
#    (TORCH_META_FUNC); a kernel found nowhere by step 2 is looked for where a macro pastes its
#    name (Note [Kernels a macro names]);
# 2. every tree file is read once; a name's files are those where it appears *defined*, by text
#    (extract/scan.py, its words from the pattern registry): TORCH_IMPL_FUNC/TORCH_META_FUNC(name),
#    a DECLARE/DEFINE/REGISTER_*_DISPATCH naming it (stubs; the macro's arguments may start on the
#    next line), ``#define name``, ``struct|class name ... {``, or ``name(params) ... {`` (a body
#    follows the parameter list: a call never has one); a stub also where a
#    KERNEL/DISPATCH/IMPLEMENT macro line pastes its name (scan.PASTED_STUB);
# 3. those files are parsed (build._parse_one, as the full build); the calls and launches inside
#    the definitions of the names asked, and the kernels a REGISTER_*DISPATCH of an asked stub
#    names, are the next names. In the native functions (the op's kernels and the helpers they
#    call by name: resolve/chain.py's "native" stage) a call that names an operator (``at::add``,
#    ``result.zero_()``: opcalls.classify) brings the kernels the resolver would expand: the
#    overloads its arguments fit, each one's kernel for the keys (a composite one for a device key
#    without its own), whose native functions are followed in turn, to MAX_OP_DEPTH operators deep
#    (Note [Re-dispatch]). A name defined in more than MANY_DEFINITIONS files (MANY_REGISTRATIONS
#    for a stub or the op's own kernels; a common helper or method name otherwise) is not followed:
#    the chain picks among them by includes and namespaces, which the scan does not know, and
#    following all would read half the tree; where some of a name's files are included by the
#    files read, those alone are followed (include distance ranks them first). Nor are ATen's
#    core, top-level and SIMD files followed (_infrastructure).
# 4. it stops after MAX_ROUNDS * (depth + 3) rounds (the chain's depth, the yaml -> stub ->
#    register steps, and the operators called), or before a round would pass CLOSURE_FILES files
#    or CLOSURE_BYTES bytes (``closure.stopped``: the deeper steps are missing, the checks keep the
#    room up to MAX_FILES / MAX_BYTES), or gives up when the op's own kernels pass MAX_FILES files
#    or MAX_BYTES bytes. An operator whose kernels no file defines (torchgen writes them) reads
#    no file: its preview is the yaml step.
# The files are stored with every tree path known, so includes resolve as in the full index, and the
# files between them that were not parsed give their #include lines from the bytes (Note [Includes
# by bytes]). The answer is the chain of that partial store: the same resolver, on fewer facts.
# These rules only find files; they do not make the answer right. What does is the check of Note
# [A preview never shows a wrong step]: every name the preview's chain looked up is checked against
# the scan, and the files that could change its pick are read, or the pick answers nothing, or
# there is no preview. A step whose definition was not found is missing, never replaced by another.
# On a terminal the preview is printed first, then one status line, then the complete answer
# (chain_run._preview_first). The temporary store is removed once the preview is printed.
MAX_FILES = 60
MAX_BYTES = 6_000_000
MAX_ROUNDS = 2  # times (depth + 3) rounds: an operator a native calls starts its own depth (Note [Re-dispatch])
CLOSURE_FILES = 30  # the closure stops following before a round passes these: the checks read what picks need
CLOSURE_BYTES = 3_000_000
MANY_DEFINITIONS = 3
MANY_PASTED = 2  # files registering a stub by a macro that pastes its name (extract/scan.py PASTED_STUB)
MANY_REGISTRATIONS = 8  # a stub's files (declaration, definition, a registration per device); a native's overloads
_FOLLOW = frozenset({FactKind.CALL, FactKind.LAUNCH})
_DEFINES = frozenset({FactKind.FUNCTION, FactKind.GLOBAL, FactKind.IMPL_FUNC, FactKind.META_FUNC, FactKind.CLASS,
                      FactKind.MACRO_BLOCK})
_STUBS = frozenset({FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH})
# Members compared with every fact row the closure and the checks read, bound once (an Enum member's
# attribute access costs ~140 ns on Python 3.11; See the same in resolve/chain.py)
_CALL_KIND, _LAUNCH_KIND, _REGISTER_KIND = FactKind.CALL, FactKind.LAUNCH, FactKind.REGISTER_DISPATCH
_FUNCTION_KIND, _CLASS_KIND = FactKind.FUNCTION, FactKind.CLASS
_JIT_KINDS = frozenset({FactKind.JIT_CODE, FactKind.JIT_NAME})
_MEMBER, _ARGUMENT = CallDetail.MEMBER, CallDetail.ARGUMENT
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_CLASSLIKE = re.compile(r"[A-Z][a-z]\w*\Z")


@dataclass
class Closure:
    """The files the preview parsed, and what it read to find them."""
    files: list[str] = field(default_factory=list)
    total: int = 0  # tree files scanned
    rows: dict[str, tuple[str, list[tuple]]] = field(default_factory=dict)  # rel -> (status, fact rows)
    gave_up: str = ""  # why there is no preview (too many files), or ""
    meta: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # every tree file: (language, size, mtime)
    texts: dict[str, bytes] = field(default_factory=dict, repr=False)  # every readable tree file's bytes
    allowed: list[str] = field(default_factory=list, repr=False)  # the files that may run for the asked keys
    size: int = 0  # bytes parsed
    unfollowed: set[str] = field(default_factory=set)  # names looked up, defined only in files not read
    scanned: dict[tuple, tuple] = field(default_factory=dict, repr=False)  # (name, group) -> scan
    kernels: list[str] = field(default_factory=list, repr=False)  # the allowed files but ATen's infrastructure
    natives: list[str] = field(default_factory=list, repr=False)  # the allowed files of aten/src/ATen/native/
    infra: list[str] = field(default_factory=list, repr=False)  # the allowed files of ATen's infrastructure
    _allowed_set: set[str] = field(default_factory=set, repr=False)
    _includes: dict[str, list[tuple]] = field(default_factory=dict, repr=False)
    _distances: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    seeds: set[str] = field(default_factory=set, repr=False)  # the operator's kernels (_seed_names)
    stopped: int = 0  # the round at which the closure stopped following (CLOSURE_FILES/BYTES), or 0
    blank: set[str] = field(default_factory=set)  # names whose namespace-rule picks answer nothing (Note [...])

    def parse(self, root: Path, rels: list[str]) -> None:
        """Parse ``rels`` (build._parse_one, as the full build) into ``rows``."""
        from atenmap import build

        for rel in rels:
            if rel in self.rows:
                continue
            _rel, status, rows, _put = build._parse_one((str(root), rel, self.meta[rel][0]))
            self.rows[rel] = (status, rows)
            self.files.append(rel)
            self.size += len(self.texts.get(rel, b""))

    def includes(self, rel: str) -> list[tuple]:
        """``rel``'s #include rows, from its bytes (Note [Includes by bytes]), once per file."""
        got = self._includes.get(rel)
        if got is None:
            got = self._includes[rel] = _include_rows(self.texts.get(rel, b""))
        return got

    def _graph(self) -> IncludeGraph:
        """The include graph of the tree by the files' bytes (Note [Includes by bytes])."""
        from atenmap.store import include_target

        return IncludeGraph(lambda rel: [dst for r in self.includes(rel)
                                         if (dst := include_target(rel, r[1], self.meta))])

    def reachable(self, max_depth: int = 6) -> set[str]:
        """The tree files the read files include, transitively (the resolver's include walk: chain.py's
        _reachable), by the bytes' #include lines; the read files too."""
        return set(self._graph().distances(self.files, max_depth))

    def distances(self, rel: str, max_depth: int = 6) -> dict[str, int]:
        """The tree files ``rel`` includes -> include distance, by the bytes' #include lines, every
        one (ROCm-only ones too: a distance never larger than the resolver's _reachable); once per file."""
        got = self._distances.get(rel)
        if got is None:
            got = self._distances[rel] = self._graph().distances([rel], max_depth)
        return got
    def scan(self, name: str, group: str, among: list[str]) -> tuple[list[str], list[str]]:
        """(files of ``among`` where ``name`` appears defined, files that register it by a pasting macro),
        once per name and group of files (step 2 of the Note): the scan of ~20 MB is the preview's cost."""
        got = self.scanned.get((name, group))
        if got is None:
            if group == "class":  # a class or struct: the name first, one search of each file for most
                needle, heads = name.encode(), class_heads(name)
                texts = self.texts
                got = ([rel for rel in among if needle in texts[rel] and any(h in texts[rel] for h in heads)
                        and defines_class(texts[rel], name)], [])
            elif group == "jit":  # a jiterator name or code string
                needle, texts = name.encode(), self.texts
                got = ([rel for rel in among if needle in texts[rel] and b"jit" in texts[rel]
                        and defines_jit(texts[rel], name)], [])
            else:
                got = _defined_in(name, self.texts, among)
            self.scanned[(name, group)] = got
        return got

    def defined_in(self, name: str, reach: set[str] | None = None) -> list[str]:
        """The files of the asked keys where ``name`` appears defined; with ``reach``, only among those."""
        if reach is not None:
            among = [rel for rel in reach if rel in self._allowed_set and rel not in self.rows]
            plain, pasted = _defined_in(name, self.texts, among)
            return plain + pasted
        out = []
        for group, among in (("kernels", self.kernels), ("infra", self.infra)):
            plain, pasted = self.scan(name, group, among)
            out += plain + pasted
        return out


def never_indexed(info) -> bool:
    """No index of this tree at all (a stale one is refreshed in about a second: no preview)."""
    from atenmap.indexstate import index_path

    return info.origin != "bundled" and not index_path(info).exists()


@contextmanager
def partial_index(info, op: str, keys: list[str] | None, depth: int = 8,
                  why: list[str] | None = None) -> Iterator["tuple | None"]:
    """``(Index over the preview's files, Closure)``, or None when there is none (an unknown
    operator, no kernel for the keys, too many files): then the complete answer says what is wrong.
    ``why``, when given, gets the reason there is none (bench/bench_preview.py shows it)."""
    from atenmap import build
    from atenmap.api import Index
    from atenmap.errors import AtenmapError
    from atenmap.source.find import index_dir

    root = Path(info.root)
    folder = index_dir(info)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"preview-{os.getpid()}.sqlite"
    remove_dead_owners(folder, "preview-")  # a killed run's
    store = None
    try:
        ops = build._operator_rows(str(root))
        store = _new_store(tmp, ops)
        ix = Index(info, store)
        try:
            found = ix.lookup(op)
        except AtenmapError:
            yield None
            return
        if keys and any(k.lower() == "all" for k in keys):
            keys = None
        elif not keys:
            from atenmap import devices

            keys = devices.common_keys(ix.operator_keys(found.operator)) or None
        closure = find_files(root, found.operator, ix, keys, depth)
        kernels = {k.rsplit("::", 1)[-1] for k in ix.store.kernel_names()}
        generated = _torchgen_names(ix.store)
        for _round in range(MAX_CHECKS + 1):
            if closure.gave_up:
                if why is not None:
                    why.append(closure.gave_up)
                yield None
                return
            store.close()
            store = _new_store(tmp, ops)
            _store_files(store, info, closure)
            recorder = _Recorder(closure.blank, generated)
            ix = Index(info, store, observer=_Blanking(closure.blank, generated))  # the preview's own chains too
            try:
                chain = ix.chain(found.operator, keys=keys, depth=depth, observer=recorder)
            except AtenmapError:
                yield None
                return
            looked = recorder.looked
            if not _read_what_was_looked_up(root, closure, looked, kernels) or _round == MAX_CHECKS:
                if not closure.gave_up and any(not chain.runs_of(kc.key) for kc in chain.keys):
                    # "no launch found" where the complete answer may find one: not whole, so the
                    # runs block is left to the complete answer (Note [What a preview leaves out])
                    closure.unfollowed |= _missed(closure, looked)
                if not closure.gave_up and not _nothing_runs_checked(ix, closure, looked):
                    # an operator called "runs nothing" where its chain may be cut short: that is in the tree
                    closure.gave_up = "an operator called says it runs nothing, and a step not followed"
                break
        if _round == MAX_CHECKS and not closure.gave_up:
            closure.gave_up = f"still finding definitions after {MAX_CHECKS} checks"
        if closure.gave_up:
            if why is not None:
                why.append(closure.gave_up)
            yield None
            return
        yield ix, closure
    finally:
        if store is not None:
            store.close()
        tmp.unlink(missing_ok=True)


def _new_store(tmp: Path, ops):
    from atenmap.store import Store

    tmp.unlink(missing_ok=True)
    store = Store.create(tmp)
    store.begin()
    store.replace_operators(*ops)
    return store


# Note [A preview never shows a wrong step]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A preview may miss steps, never show one the complete answer lacks. The resolver picks among the
# definitions of a name it looks up (same file, then by include distance, then by namespace: Note
# [Resolving names] in resolve/chain.py); with one of them left out it can pick another one that is
# there (relu on CUDA once showed at::native::max of TensorCompare.cpp for a lambda's ``max``). So
# the preview's chain is computed with a lookup observer (_Recorder: Note [Lookups told to an
# observer] in resolve/lookups.py), every name it looked up as a definition recorded with the files
# it was found in, and checked against the byte scan, for the asked keys:
# - picked, at every lookup of the name, in the calling file or by include distance from it
#   (resolve/chain.py's _defs tells the observer's ``picked`` the calling file and the pick's rule
#   and distance): only an unread file the calling file includes at that distance or closer (bytes, six
#   levels, ROCm-only includes too: never farther than the resolver's walk) can add a definition
#   or take the pick, so those are read; none for a same-file pick. ATen's SIMD headers (~40
#   copies of clamp_min, ceil, ...) lie farther than a kernel's own helpers. A name the resolver
#   also looks up outside _defs (the seeds, stubs, natives, ``combine``, a library step's calls:
#   _looked_directly, whose lookups its memo hides) takes the rules below. A lookup that answered
#   nothing (``vec::clamp_min`` from a CPU kernel: only SIMD headers define it) is a step missing,
#   as for a name found nowhere, and does not count, but for a launch's ``__global__`` and a loop
#   helper (their lines change without it); a name whose every _defs lookup answered nothing (the
#   rows read were all another device's, ROCm-only or of another scope: ``size`` from a CPU
#   kernel, read only in SparseMatMul.cu) and that the resolver looked up nowhere else (a step
#   other than LookupStep.DEFS)
#   is taken as not found (below), not as found in those files; a TORCH_META_FUNC(name) lookup
#   (the meta step) is checked against the files with a TORCH_META_FUNC(name) only, not every
#   ``name`` (``exp``);
# - found in a read file that a read file includes: a file not read can only change the pick if the
#   include walk reaches it (a closer or equal include distance), so the unread files that define it
#   among those the read files include (bytes, six levels) are read;
# - found only in translation units of their own (a .cpp/.cu no read file includes): the pick may
#   fall to the namespace rule, over every definition, so every unread file defining it is read.
#   Where more than BLANK_OVER unread files define it (``max``, ``min`` from a lambda: ATen's SIMD
#   headers) and every such lookup is a function's with a call site, those lookups answer nothing
#   in the next chain (``closure.blank``: the observer's ``picked`` answers False and _defs returns
#   no row; _Blanking, which the preview's Index answers every chain with): a step missing. The complete answer's namespace rule picks none among more than two
#   files of the caller's namespace, so most often it has no step there either;
# - a DispatchStub found: each of its registrations is a step (one per device), so every unread
#   file declaring, defining or registering it is read;
# - a jiterator kernel's name or code string (``entr_name``, ``entr_string``: resolve/chain.py's
#   _jit_step), found or not: every unread file that defines it is read (the jit line names both);
# - a template argument the resolver asked about and found no class for (has_name, from
#   _template_functors): where at most MANY_DEFINITIONS unread files define a class or struct of
#   that name (``maximum`` in ForeachMinMaxFunctors.cuh), they are read: its operator() is a step,
#   and its absence changes the line of the helper it is passed to ("the native delegates to it");
# - a function torchgen also writes (an operator's name, or with _out, _outf, _symint: ``at::complex``
#   in Functions.h) picked outside the calling file: the complete answer's index has torchgen's
#   output, which the preview does not, and may pick that one (mm once showed at::native::complex
#   of TensorFactories.cpp), so the lookup answers nothing (_torchgen_names);
# - not found, and it is an operator's kernel, a DispatchStub, a launch's ``__global__``, a loop
#   helper (cpu_kernel) or a library call's name: the chain would say "no kernel", show the
#   operator unexpanded, a launch without its "at line", a bare "loop helper" where the complete
#   answer has the definition, or a vendor call where the tree defines ATen's own helper of that
#   name (``magma_int_cast``: Note [Vendor-named ATen helpers] in resolve/chain.py), so its files
#   are read (an operator's kernel among the native files, at::native);
# - not found otherwise: a step the preview cannot show; counted in its status line where the
#   closure's scan knows files defining it that were not read (the names rule 3 did not follow).
# Then the chain again, on a new partial store, until a check reads nothing (at most MAX_CHECKS).
# A chain that found no launch, jit kernel or library call for a key would say so where the
# complete answer may find one: when a name it looked up and did not find is defined in a file
# not read that the chain could follow into (_missed: ATen's core and top-level files hold no
# steps past the native function), those names count as not followed, so the preview is not
# whole and prints its tree without the runs block (Note [What a preview leaves out] in
# cli/chain_run.py). An operator called that the chain says runs nothing (``zeros_like: no kernel
# or library call in its CPU chain``, a line of the tree, told to the observer's ``runs_nothing``)
# is checked by its own chain on the same files (_nothing_runs_checked): if that chain looked up a
# name _missed, there is no preview.
# Where the files to read pass MAX_FILES or MAX_BYTES there is no preview (the complete answer
# alone). What this cannot see: a definition the byte scan misses (a macro of another file that
# writes a function's name), and yes/no questions (has_name) whose answer is yes in the complete
# index only (but the template arguments' classes above).
MAX_CHECKS = 6
_STUB_LOOKUPS = "<stubs>"
_NATIVE_LOOKUPS = "<natives>"
_GLOBAL_LOOKUPS = "<globals>"
_PICKS = "<picks>"  # name -> [(calling file, include distance of the pick)]: resolve/chain.py's _defs
_UNPICKED = "<unpicked>"  # names with a lookup the resolver did not pick by file or include distance
_META_LOOKUPS = "<meta>"  # names looked up as TORCH_META_FUNC(name) (resolve/chain.py's meta step)
_ANSWERED = "<answered>"  # names with a _defs lookup that answered a definition
_EMPTY = "<empty>"  # names with a _defs lookup that answered nothing (its rows all another device's, ...)
_OUTSIDE = "<outside>"  # names the resolver also looked up outside _defs (no pick reported)
_FIXED = "<fixed>"  # names with an unpicked lookup that cannot answer nothing (no site, a class, a launch's __global__)
_NOT_FOUND = "<not found>"  # names every lookup of which answered nothing (set by the check)
_JIT = "<jit>"  # names looked up as a jiterator kernel's name or code string (resolve/chain.py's _jit_step)
_NO_CLASS = "<no class>"  # template arguments the resolver asked has_name(..., class) of and found no class
_MEMBER_OF = "<member of>"  # classes whose ``operator()`` was looked up by_name_qual, outside a same-file pick
_MEMBER_PICKS = "<member picks>"  # such a class -> the include distances of its picks (0: the calling file's own)
_MEMBER_EMPTY = "<member empty>"  # such classes whose lookup found no operator() in the files read
_RUNS_NOTHING = "<runs nothing>"  # (operator, key) of each operator called whose own chain runs nothing
_KEYS = (_STUB_LOOKUPS, _NATIVE_LOOKUPS, _GLOBAL_LOOKUPS, _PICKS, _UNPICKED, _META_LOOKUPS, _ANSWERED, _EMPTY, _OUTSIDE,
         _FIXED, _JIT, _NO_CLASS, _MEMBER_OF, _MEMBER_PICKS, _MEMBER_EMPTY, _RUNS_NOTHING)  # what _Recorder records
BLANK_OVER = MANY_DEFINITIONS  # unread files defining a namespace-rule pick past which it answers nothing
# how resolve/chain.py asks for a native (the yaml's kernel, a structured one), a meta function, a launch's __global__
_NATIVE_KINDS = ((FactKind.FUNCTION, FactKind.IMPL_FUNC), (FactKind.IMPL_FUNC,))
_META_KINDS = (FactKind.META_FUNC,)
_GLOBAL_KINDS = (FactKind.GLOBAL,)
_LOOKUP_KINDS = _DEFINES | _STUBS | {FactKind.IMPL_FUNC, FactKind.META_FUNC}


class _Blanking(LookupObserver):
    """Has a lookup the preview cannot tell from the files it read answer nothing (a step missing,
    never another one; Note [A preview never shows a wrong step]): a function of ``blank`` picked by
    the namespace rule, or of ``generated`` picked outside the calling file. The preview's Index
    answers every chain with it (the one shown too), as the chains its checks recorded."""

    def __init__(self, blank: set[str] = frozenset(), generated: set[str] = frozenset()):
        self.blank, self.generated = blank, generated

    def answers_nothing(self, name: str, site_file: str | None, distance: int | None, count: int, kinds) -> bool:
        from atenmap.resolve.chain import LOOP_HELPERS

        function = _FUNCTION_KIND in kinds and name not in LOOP_HELPERS
        return bool(count and site_file is not None and function
                    and (distance is None and name in self.blank or distance != 0 and name in self.generated))

    def picked(self, name, site_file, pick, count, kinds):
        return not self.answers_nothing(name, site_file, pick.distance, count, kinds)


class _Recorder(_Blanking):
    """The preview's lookup observer (Note [Lookups told to an observer] in resolve/lookups.py):
    ``looked`` maps each name looked up as a definition -> the files it was found in; a stub's
    lookups (its declaration, definition, registrations) are also in ``looked[_STUB_LOOKUPS]``, an
    operator's native function's in ``looked[_NATIVE_LOOKUPS]``, and so on for each key of ``_KEYS``.
    What it has answer nothing is _Blanking's."""

    def __init__(self, blank: set[str] = frozenset(), generated: set[str] = frozenset()):
        super().__init__(blank, generated)
        self.looked: dict = {key: {} if key in (_PICKS, _MEMBER_PICKS) else set() for key in _KEYS}
        self.member = ""  # the class of the operator() lookup _defs is making (its pick is told next)

    def found(self, name, kinds, rows, step, suffix=""):
        looked = self.looked
        if tuple(kinds) == _META_KINDS:  # TORCH_META_FUNC(name): only a file with one can answer it
            looked[_META_LOOKUPS].add(name.rsplit("::", 1)[-1])
            return
        if not _LOOKUP_KINDS.intersection(kinds):
            return
        bare = name.rsplit("::", 1)[-1]
        looked.setdefault(bare, set()).update(r.file for r in rows)
        in_defs = step is LookupStep.DEFS
        if suffix and not _IDENT.match(bare):  # _defs's lookup of X::operator()
            owner = _owner_class(suffix)
            if owner and in_defs:
                if self.member and self.member != owner:  # a lookup whose pick was not told: checked
                    looked[_MEMBER_OF].add(self.member)
                self.member = owner  # its pick decides whether other files matter (picked, below)
            elif owner:
                looked[_MEMBER_OF].add(owner)
        if not in_defs:
            looked[_OUTSIDE].add(bare)
        if _STUBS.issuperset(kinds):
            looked[_STUB_LOOKUPS].add(bare)
        elif tuple(kinds) in _NATIVE_KINDS:  # an operator's native function (chain.py: natives)
            looked[_NATIVE_LOOKUPS].add(bare)
        elif tuple(kinds) == _GLOBAL_KINDS:  # a launch's __global__ (its "at line" note)
            looked[_GLOBAL_LOOKUPS].add(bare)

    def asked(self, name, kinds, answer, step):
        if not answer and _CLASS_KIND in kinds and _IDENT.match(name) and step is LookupStep.TEMPLATE_ARGUMENT:
            self.looked[_NO_CLASS].add(name)  # a functor named in template arguments, or a function (resolve/chain.py)

    def picked(self, name, site_file, pick, count, kinds):  # resolve/chain.py's _defs, every lookup
        from atenmap.resolve.chain import LOOP_HELPERS

        looked, distance = self.looked, pick.distance
        if self.member and not _IDENT.match(name):
            if count:
                looked[_MEMBER_PICKS].setdefault(self.member, set()).add(distance if site_file is not None else None)
            else:  # nothing found: a step missing, never another one (counted where files not read define it)
                looked[_MEMBER_EMPTY].add(self.member)
            self.member = ""
        if not _JIT_KINDS.isdisjoint(kinds):
            looked[_JIT].add(name)
        if self.answers_nothing(name, site_file, distance, count, kinds):
            looked[_EMPTY].add(name)
            return False  # _defs answers nothing: a step missing, never another one
        blankable = count and distance is None and site_file is not None and _FUNCTION_KIND in kinds \
            and name not in LOOP_HELPERS
        looked[_ANSWERED if count else _EMPTY].add(name)
        if not count and name not in looked[_GLOBAL_LOOKUPS] and name not in LOOP_HELPERS:
            return True  # found nowhere read: a missing step, as a name found nowhere (below), not another one
        if distance is None or site_file is None and distance:
            looked[_UNPICKED].add(name)
            if not blankable:
                looked[_FIXED].add(name)
        elif site_file is not None:
            looked[_PICKS].setdefault(name, set()).add((site_file, distance))
        return True

    def runs_nothing(self, operator, key):
        self.looked[_RUNS_NOTHING].add((operator, key))


def _torchgen_names(store) -> set[str]:
    """The functions torchgen writes for every operator (``at::complex``, ``at::mm_out``,
    ``at::mm_outf``, ``at::mm_symint`` in Functions.h; Tensor methods): a call the preview resolves
    to a hand-written definition in another file may be resolved to one of those by the complete
    answer, whose index has torchgen's output (Note [A preview never shows a wrong step])."""
    return {base + suffix for base in store.operator_bases() for suffix in ("", "_out", "_outf", "_symint")}


def _read_what_was_looked_up(root: Path, closure: Closure, looked: dict, kernels: set[str]) -> bool:
    """Read the files not read yet that define a name the chain looked up (Note [A preview never
    shows a wrong step]); whether any was read. Sets ``closure.gave_up`` when the files of a name
    found among those read do not fit."""
    from atenmap.resolve.chain import LOOP_HELPERS

    needed: list[str] = []
    closure.unfollowed = set()
    picks = looked[_PICKS]
    unpicked = looked[_UNPICKED] | looked[_STUB_LOOKUPS] | looked[_NATIVE_LOOKUPS] | _looked_directly(closure)
    reach = closure.reachable()
    units = {rel for rel in closure.files if _unit(rel, closure)}
    stubs, natives = looked[_STUB_LOOKUPS] | looked[_GLOBAL_LOOKUPS], looked[_NATIVE_LOOKUPS] & kernels
    library = _library_calls(closure)
    for name in sorted(looked[_JIT]):  # a jiterator name or code string: every unread file that defines it
        if _IDENT.match(name):
            needed += [rel for rel in closure.scan(name, "jit", closure.allowed)[0]
                       if rel not in closure.rows and rel not in needed]
    for name in sorted(looked[_NO_CLASS]):  # a class no read file defines: a functor (operator()) if one does,
        # whose step may change its caller's line (a helper "the native delegates to"); among few files only
        where = [rel for rel in closure.scan(name, "class", closure.allowed)[0] if rel not in closure.rows]
        if len(where) <= MANY_DEFINITIONS:
            needed += [rel for rel in where if rel not in needed]
    same_file = {c for c, ds in looked[_MEMBER_PICKS].items() if ds == {0}}  # no other file can change those
    for name in sorted(looked[_MEMBER_OF] | set(looked[_MEMBER_PICKS]) - same_file):  # Note [Members no name scan sees]
        where = [rel for rel in _member_definers(name, closure) if rel not in closure.rows]
        if len(where) > MANY_DEFINITIONS:
            closure.gave_up = f"{name}::operator() may be defined in {len(where)} files not read"
            return False
        needed += [rel for rel in where if rel not in needed]
    for name in sorted(looked[_MEMBER_EMPTY] - looked[_MEMBER_OF] - set(looked[_MEMBER_PICKS])):
        if any(rel not in closure.rows for rel in _member_definers(name, closure)):
            closure.unfollowed.add(f"{name}::operator()")  # a step the preview cannot show: not whole
    for name in sorted(looked[_META_LOOKUPS]):  # a TORCH_META_FUNC(name) not read could be picked
        if _IDENT.match(name):
            needed += [rel for rel in _defined_in(name, closure.texts, closure.allowed, meta_only=True)[0]
                       if rel not in closure.rows and rel not in needed]
    # every lookup of the name answered nothing from the files read (their definitions all another
    # device's, ROCm-only, or of another scope): a step missing, as for a name found nowhere
    empty = looked[_NOT_FOUND] = looked[_EMPTY] - looked[_ANSWERED] - looked[_OUTSIDE] - unpicked - stubs - natives \
        - set(picks)
    blanked = False
    for name, found in sorted(looked.items()):
        if name.startswith("<") or not _IDENT.match(name):
            continue
        if name in empty and name not in LOOP_HELPERS:
            found = set()
        if not found and name in LOOP_HELPERS:  # the complete answer's line names its definition, past ATen's core
            needed += [rel for rel in closure.scan(name, "kernels", closure.kernels)[0]
                       if rel not in closure.rows and rel not in needed]
            continue
        if not found and (name in stubs or name in natives or name in library):
            # an operator's kernel or a stub not found: the chain would say "no kernel" where the complete
            # answer has one, so its files are read (or no preview); a kernel is an at::native function. A
            # library call's name (``magma_int_cast``) defined in the tree is ATen's wrapper or helper,
            # shown otherwise or not at all (Note [Vendor-named ATen helpers] in resolve/chain.py)
            where = closure.scan(name, "natives", closure.natives)[0] if name in natives else closure.defined_in(name)
            needed += [rel for rel in where if rel not in closure.rows and rel not in needed]
            continue
        if not found:  # a step the preview cannot show (Note [A preview never shows a wrong step]): counted
            known = closure.scanned.get((name, "kernels"))  # where the closure's own scan knows its files; no new scan
            if known and any(rel not in closure.rows for rel in known[0]):
                closure.unfollowed.add(name)
            continue
        if name in looked[_STUB_LOOKUPS]:  # a stub found: each of its registrations is a step (one per device)
            needed += [rel for rel in closure.defined_in(name) if rel not in closure.rows and rel not in needed]
            continue
        # a read definition in an included file wins by include distance over any file no read file
        # includes (another translation unit): then only the included files not read can change the pick
        if name in picks and name not in unpicked:
            # every lookup picked in the calling file or by include distance from it: only unread files
            # the calling file includes at that distance or closer can change a pick
            unread = [rel for rel in closure.defined_in(name, reach) if rel not in closure.rows
                      and any(closure.distances(site).get(rel, best + 1) <= best for site, best in picks[name])]
        else:
            included = any(rel not in units for rel in found)
            unread = [rel for rel in closure.defined_in(name, reach if included else None) if rel not in closure.rows]
            if len(unread) > BLANK_OVER and name in looked[_UNPICKED] and name not in closure.blank \
                    and name not in unpicked - looked[_UNPICKED] | looked[_FIXED]:
                # every pick not by file or include distance is a free function's, by the namespace rule:
                # too many files to read, so those lookups answer nothing in the next chain
                closure.blank.add(name)
                blanked = True
                continue
        if not unread:
            continue
        needed += [rel for rel in unread if rel not in needed]
    if not _fits(closure, needed):
        closure.gave_up = f"a name looked up is defined in more than {MAX_FILES} files or {MAX_BYTES} bytes"
        return False
    closure.parse(root, needed)
    return bool(needed) or blanked


# Note [Members no name scan sees]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The checks above go by names a byte scan can find (``_IDENT``), so a functor's ``operator()``
# (resolve/chain.py asks ``by_name_qual("operator()", ..., "MulFunctor::operator()")``: 417
# definitions in 2.6.0) was never checked: a class defined again in a file not read, in another
# namespace or for another device, could hold the definition the complete answer picks. The class
# asked is recorded (``_MEMBER_OF``; with the include distance of each pick, ``_MEMBER_PICKS``:
# where every pick was the calling file's own, no other file can change it), and the files that
# define it (``struct|class [EXPORT_MACRO] Name [<...>] [final] [: bases] {``, not a forward
# declaration) or define one of its members out of the class (``Name::operator``,
# ``Name<...>::operator``) are read when they are few (MANY_DEFINITIONS); past that there is no
# preview. A lookup that found no
# ``operator()`` in the files read is a step missing, as for a name found nowhere: where files not
# read define the class, the preview is not whole.
_MEMBER_HEAD = (r"(?:struct|class)\s+(?:[A-Z_][A-Z0-9_]*(?:\([^)]*\))?\s+)*%s\s*(?:<[^;{}]*>)?\s*(?:final\s*)?"
                r"(?::[^;{}]*)?\{|\b%s\s*(?:<[^;{}]*>)?\s*::\s*operator\b")  # a body, not a declaration


def _owner_class(suffix: str) -> str:
    """The class of a qualified member lookup's suffix (``MulFunctor`` of ``at::native::MulFunctor<T>::operator()``)."""
    parts = [p for p in suffix.split("::") if p]
    if len(parts) < 2:
        return ""
    owner = parts[-2].split("<", 1)[0].strip()
    return owner if _IDENT.match(owner) else ""


def _member_definers(name: str, closure: Closure) -> list[str]:
    """The allowed files that define class ``name`` or one of its members out of the class (Note [Members
    no name scan sees]), once per name."""
    got = closure.scanned.get((name, "member"))
    if got is None:
        needle = name.encode()
        head = re.compile((_MEMBER_HEAD % (re.escape(name), re.escape(name))).encode())
        got = closure.scanned[(name, "member")] = (
            [rel for rel in closure.allowed if needle in closure.texts[rel] and head.search(closure.texts[rel])], [])
    return got[0]


def _looked_directly(closure: Closure) -> set[str]:
    """Names resolve/chain.py also looks up outside _defs, where no pick is reported and its memo
    hides the lookup from the observer (told once per question): the operator's kernels and ufunc loops (the seeds), a reduction
    functor's ``combine``, and the calls of a library step (_library_defs)."""
    return closure.seeds | {"combine"} | _library_calls(closure)


def _library_calls(closure: Closure) -> set[str]:
    """The names of the read files' library calls (resolve/chain.py's _library_defs looks each up)."""
    from atenmap.resolve.libraries import library_of

    return {r[1] for rel in closure.files for r in closure.rows[rel][1] if r[0] == _CALL_KIND and library_of(r[2]) is not None}


def _unit(rel: str, closure: Closure) -> bool:
    """Whether ``rel`` is a read file that no other read file includes (a translation unit of its own)."""
    from atenmap.store import include_target

    return not any(include_target(src, r[1], closure.meta) == rel for src in closure.files if src != rel
                   for r in closure.includes(src))


def _nothing_runs_checked(ix, closure: Closure, looked: dict) -> bool:
    """Whether each operator called that the chain says runs nothing (``zeros_like: no kernel or library
    call in its CPU chain``: ``looked[_RUNS_NOTHING]``) says so from whole facts: its own chain, on the
    same files, looked up no name that is defined in a file not read (_missed)."""
    generated = _torchgen_names(ix.store)
    for name, key in sorted(looked[_RUNS_NOTHING]):
        recorder = _Recorder(closure.blank, generated)
        ix.chain(ix.lookup(name).operator, keys=[key], observer=recorder)
        called = recorder.looked
        called[_NOT_FOUND] = called[_EMPTY] - called[_ANSWERED]  # every lookup answered nothing
        if _missed(closure, called):
            return False
    return True


_NEVER_RESOLVED = ("std::", "c10::", "thrust::", "cub::")  # resolve/chain.py's _defs answers none for these


def _missed(closure: Closure, looked: dict) -> set[str]:
    """The names looked up and found in no read file (or every lookup of which answered nothing), and
    called in a read file as the chain follows calls (not a member call, a macro, or std::/c10::
    names: resolve/chain.py's _defs), that are defined in a file not read that the chain could
    follow into (not ATen's core or top-level files: _may_follow); a scan per name, only for a chain
    without runs or an operator called that runs nothing (Note [A preview never shows a wrong step])."""
    called = {r[1] for rel in closure.files for r in closure.rows[rel][1]
              if r[0] in _FOLLOW and r[8] != _MEMBER and not r[1].isupper()
              and not r[2].lstrip(":").startswith(_NEVER_RESOLVED)}
    return {name for name, found in sorted(looked.items())
            if (not found or name in looked.get(_NOT_FOUND, ())) and name in called and _IDENT.match(name)
            and any(rel not in closure.rows for rel in closure.scan(name, "kernels", closure.kernels)[0])}


def _fits(closure: Closure, more: list[str]) -> bool:
    more = [rel for rel in more if rel not in closure.rows]
    return len(closure.files) + len(more) <= MAX_FILES \
        and closure.size + sum(len(closure.texts.get(rel, b"")) for rel in more) <= MAX_BYTES


# Note [Includes by bytes]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The resolver picks among a name's definitions by include distance from the call (chain.py's
# _reachable, six levels). The preview parses few files, so the headers between a caller and a
# definition are mostly not parsed; their ``#include`` lines are read from the bytes instead (every
# file is read once already) and stored as the only facts of those files, so the walk reaches what
# it reaches in the full index. A line's preprocessor condition is kept only as far as the resolver
# reads it (ROCm-only includes are left out of a CUDA chain: conditions.rocm_only): the ``#if``
# lines around it, an ``#else`` as ``!(cond)``.
_DIRECTIVE = re.compile(rb"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|include)\b[ \t]*([^\n]*)")
_INCLUDED = re.compile(rb"[<\"]([^>\"]+)[>\"]")


def _include_rows(data: bytes) -> list[tuple]:
    rows: list[tuple] = []
    stack: list[str] = []
    if b"include" not in data:
        return rows
    for m in _DIRECTIVE.finditer(data):
        word, rest = m.group(1), m.group(2).split(b"//")[0].strip().decode("utf-8", "replace")
        if word == b"include":
            inc = _INCLUDED.match(m.group(2).strip())
            if inc:
                line = data.count(b"\n", 0, m.start()) + 1
                name = inc.group(1).decode("utf-8", "replace")
                rows.append((FactKind.INCLUDE, name, name, line, line, "", -1, "", "", "", " && ".join(stack), ""))
        elif word == b"if":
            stack.append(rest)
        elif word == b"ifdef":
            stack.append(f"defined({rest})")
        elif word == b"ifndef":
            stack.append(f"!defined({rest})")
        elif word in (b"else", b"elif") and stack:
            stack[-1] = f"!({stack[-1]})" if word == b"else" else rest
        elif word == b"endif" and stack:
            stack.pop()
    return rows


def _store_files(store, info, closure: Closure) -> None:
    from atenmap import build
    from atenmap.build import BuildReport, _Intake

    report = BuildReport(store.path)
    intake = _Intake(store, report, None)
    intake.paths = set(closure.meta)  # includes resolve against the whole tree, as in the full index
    intake.all_known = True
    for rel in closure.files:
        status, rows = closure.rows[rel]
        intake.meta_of[rel] = closure.meta[rel]
        intake.take((rel, status, rows, None))
    for rel in sorted(closure.reachable() - set(closure.files)):  # Note [Includes by bytes]
        lang, size, mtime = closure.meta[rel]
        store.add_file(rel, lang, size, mtime, "ok", False, closure.includes(rel), include_paths=intake.paths)
    gen = build._codegen(info, build.codegen_decision(info, False), None, report)
    store.set_meta(**build._expected_meta(info), **gen.meta, pytorch_version=info.version,
                   pytorch_commit=info.commit or "", yaml_stat="", preview="1")
    store.commit()
    store.finish()
    store.set_meta(complete="1")


def _seed_names(ix, operator, keys: list[str] | None, called: bool = False) -> set[str]:
    """The kernels of ``operator`` (and of its structured delegate) for ``keys`` (composite keys
    included; every key when None). For an operator ``called`` by a kernel, its composite kernels
    only where a device key of ``keys`` has no kernel of its own (resolve/chain.py's _entry_for)."""
    from atenmap import devices

    names = set()
    for op in (operator, ix._get(str(operator.structured_delegate)) if operator.structured_delegate else None):
        if op is None:
            continue
        own = {d.key for d in op.dispatch}
        composite = keys is None or not called or any(devices.key_device(k) != "any" and k not in own for k in keys)
        for d in op.dispatch:
            if keys is None or d.key in keys or d.key.startswith("Composite") and composite:
                names.add(d.kernel.rsplit("::", 1)[-1])
        if op.ufunc_inner_loop:  # the ufunc's inner loops (ufunc/<name>.h) and the stub its generated kernel calls
            names.update(u.name for u in op.ufunc_inner_loop)
            names.add(f"{op.name.name}_stub")
    return {n for n in names if _IDENT.match(n)}


def find_files(root: Path, operator, ix, keys: list[str] | None, depth: int = 8) -> Closure:
    """The closure of Note [Query-driven preview] for ``operator``, each file parsed once."""
    from atenmap import build, config, devices

    closure = Closure()
    texts = closure.texts
    limit = config.max_file_bytes()
    for rel, lang, size, mtime in build.walk_sources(root):
        closure.meta[rel] = (lang, size, mtime)
        data, _why = build.read_source(os.path.join(root, rel), limit)
        if data is not None:
            texts[rel] = data
    closure.total = len(closure.meta)
    wanted = {devices.key_device(k) for k in keys} if keys else {"any"}
    if "any" in wanted:
        wanted = {"any"}
    allowed = closure.allowed = [rel for rel in texts if any(devices.file_allowed(rel, d) for d in wanted)]
    kernels = closure.kernels = [rel for rel in allowed if not _infrastructure(rel)]
    closure.infra = [rel for rel in allowed if _infrastructure(rel)]
    closure._allowed_set = set(allowed)
    natives = closure.natives = [rel for rel in allowed if rel.startswith("aten/src/ATen/native/")]  # at::native:: kernels
    seeds = closure.seeds = _seed_names(ix, operator, keys)
    table = _operator_table(ix)
    asked: set[str] = set()
    frontier = set(seeds)
    # the native functions: the kernels of the op (level 0) and of the operators they call (1, 2, ...: Note
    # [Re-dispatch]), and the functions they call (resolve/chain.py's "native" stage), name -> level
    natives_at = dict.fromkeys(seeds, 0)
    stubs: set[str] = set()  # a stub has its declaration, definition and registrations in different files
    for round_ in range(MAX_ROUNDS * (depth + 3)):
        frontier -= asked
        if not frontier:
            break
        asked |= frontier
        new_files: list[str] = []
        found = {name: _capped(*(_defined_in(name, texts, natives) if round_ == 0 else closure.scan(name, "kernels", kernels)))
                 for name in sorted(frontier)}
        if round_ == 0:  # TORCH_META_FUNC(base) of the op and its delegate
            for name in [n for n, where in found.items() if not where]:  # Note [Kernels a macro names]
                found[name] = _pasted_definers(name, texts, natives)
            for op in (operator, ix._get(str(operator.structured_delegate)) if operator.structured_delegate else None):
                if op is not None and op.name.name not in found:
                    found[op.name.name] = _defined_in(op.name.name, texts, allowed, meta_only=True)[0]
        reach = closure.reachable() if closure.files else set()
        for name, where in found.items():
            if name not in stubs and any(rel in closure.rows for rel in where):  # defined in a file the chain is already in: that one (the resolver's includes rank it first)
                continue
            near = [rel for rel in where if rel in reach]
            if near and name not in stubs and round_:  # the read files include some: those (include distance ranks them first)
                where = near
            if len(where) <= (MANY_REGISTRATIONS if name in stubs or round_ == 0 else MANY_DEFINITIONS):
                new_files += [rel for rel in where if rel not in closure.rows and rel not in new_files]
        if round_ and (len(closure.files) + len(new_files) > CLOSURE_FILES
                       or closure.size + sum(len(texts[rel]) for rel in new_files) > CLOSURE_BYTES):
            closure.stopped = round_  # deeper steps are missing (the check sees them as names not found)
            return closure
        if len(closure.files) + len(new_files) > MAX_FILES:
            closure.gave_up = f"more than {MAX_FILES} files"
            return closure
        if closure.size + sum(len(texts[rel]) for rel in new_files) > MAX_BYTES:
            closure.gave_up = f"more than {MAX_BYTES} bytes"
            return closure
        closure.parse(root, new_files)
        frontier = set()
        stubs = {r[1] for rel in closure.files for r in closure.rows[rel][1] if r[0] in _STUBS}
        # the files defining an operator's kernel (the op's, or one a native calls: Note [Re-dispatch]),
        # where an operator called is followed, as the resolver expands it
        for rel in closure.files:
            frontier |= _next_names(closure.rows[rel][1], asked, table, ix, keys, natives_at)
    else:
        if frontier - asked:
            closure.stopped = round_ + 1  # names left to follow: deeper steps are missing
    return closure


# ATen's SIMD types, one copy per instruction set (vec256/vsx, zarch, neon, ...): what a CPU kernel's
# lambda computes with, not steps of its chain; following their names would read them all.
_SIMD = "aten/src/ATen/cpu/vec/"
_CORE = ("aten/src/ATen/core/", "aten/src/ATen/detail/", "aten/src/ATen/functorch/", "aten/src/ATen/templates/")


def _infrastructure(rel: str) -> bool:
    """Files the chain does not follow a call into past the native function (resolve/chain.py's
    _may_follow): ATen's core and its top-level files (TensorIterator, Parallel, Dispatch); and
    the preview does not look into ATen's SIMD types (_SIMD)."""
    return rel.startswith(_CORE) or rel.startswith("aten/src/ATen/") and rel.count("/") == 3 \
        or rel.startswith(_SIMD)


def _capped(found: list[str], pasted: list[str]) -> list[str]:
    """The closure follows a pasting macro's files only where they are few (MANY_PASTED)."""
    return found + pasted if len(pasted) <= MANY_PASTED else found


def _operator_table(ix):
    """The resolver's OperatorTable (resolve/chain.py's _optable) over the preview's operators."""
    from atenmap.resolve.opcalls import OperatorTable, name_table

    return OperatorTable((), lambda base: [op for n in ix.store.operators_by_base(base) if (op := ix._get(n)) is not None],
                         table=name_table(ix.store.operator_names()))


def _called_operator_kernels(r: tuple, table, ix, keys, natives_at: dict[str, int], level: int) -> set[str]:
    """The kernels of the operator a call ``r`` in a native of re-dispatch ``level`` reaches
    (``at::add_out``, ``self.zero_()``), as resolve/chain.py expands it (_op_call, _expand_one,
    _entry_for): the overloads its arguments fit, each one's kernel for ``keys`` (a composite one
    for a device key without its own), to MAX_OP_DEPTH; added to ``natives_at`` at ``level + 1``."""
    from atenmap import devices
    from atenmap.resolve.chain import MAX_OP_DEPTH

    if level >= MAX_OP_DEPTH or r[0] != _CALL_KIND or r[8] == _ARGUMENT:
        return set()
    member = r[8] == _MEMBER
    call = table.classify(r[1], r[2], member)
    if call is None:
        return set()
    args = None
    if not call.exact:  # Note [Arguments of operator calls] in extract/calls.py
        args = ("self:Tensor, " + r[7] if r[7] else "self:Tensor") if member else r[7]
    names: set[str] = set()
    for overload, _why in table.candidates(call, args)[0]:
        op = ix._get(overload)
        delegate = ix._get(str(op.structured_delegate)) if op is not None and op.structured_delegate else None
        if op is None:
            continue
        entries = list(op.dispatch) + [d for d in (delegate.dispatch if delegate else ())
                                       if d.key not in {e.key for e in op.dispatch}]
        for key in keys or [d.key for d in entries]:
            own = [d for d in entries if d.key == key]
            if not own and devices.key_device(key) != "any":
                own = [d for d in entries if d.key.startswith("Composite")]
            names.update(d.kernel.rsplit("::", 1)[-1] for d in own)
        for o in (op, delegate):
            if o is not None and o.ufunc_inner_loop:
                names.update(u.name for u in o.ufunc_inner_loop)
                names.add(f"{o.name.name}_stub")
    names = {n for n in names if _IDENT.match(n)}
    for n in names:
        natives_at.setdefault(n, level + 1)
    return names


def _next_names(rows: list[tuple], asked: set[str], table, ix, keys, natives_at: dict[str, int]) -> set[str]:
    """Names the chain may follow from the definitions of ``asked``: calls (not to std/c10, nor
    member calls but the loop helpers and typed ones, as resolve/chain.py's _visit), launches, names
    in template arguments (functors), the kernels registered for an asked stub, and the kernels of
    the operators called by name in a native's own file (Note [Re-dispatch])."""
    from atenmap.resolve.chain import LOOP_HELPERS
    from atenmap.resolve.opcalls import NOT_OPS

    spans = [(r[3], r[4], natives_at.get(r[1])) for r in rows if r[0] in _DEFINES and r[1] in asked]
    names: set[str] = set()
    for r in rows:
        kind, name, qual, line, detail, targs = r[0], r[1], r[2], r[3], r[8], r[11]
        if kind == _REGISTER_KIND and name in asked and r[7]:
            names.add(r[7].lstrip("&").rsplit("::", 1)[-1])
            continue
        if kind not in _FOLLOW:
            continue
        inside = [native for a, b, native in spans if a <= line <= b]
        level = min((n for n in inside if n is not None), default=None)  # in a native: the operator's level
        if not inside:
            continue
        if kind == _LAUNCH_KIND:
            names.add(name)
            continue
        if targs:  # functors: classes named in template arguments, CamelCase in ATen
            names.update(t for t in re.findall(r"[A-Za-z_]\w*", targs) if _CLASSLIKE.match(t))
        if qual.startswith(("std::", "c10::")) or name.isupper():
            continue
        if detail == _MEMBER and name not in LOOP_HELPERS:
            if "::" in qual:  # a method of a local of a named class: that class's file
                names.add(qual.rsplit("::", 2)[-2])
            if level is not None:  # ``result.zero_()`` in a native: an operator (opcalls.classify)
                names |= _called_operator_kernels(r, table, ix, keys, natives_at, level)
            continue
        if qual.startswith("at::") and qual.split("::")[1] not in NOT_OPS:  # at::cuda::blas::gemm is a call
            if level is not None:
                names |= _called_operator_kernels(r, table, ix, keys, natives_at, level)
            continue
        names.add(name)
        if level is not None and natives_at.get(name, level + 1) > level:  # a native's helper: the native stage
            natives_at[name] = level
    return {n for n in names - asked if _IDENT.match(n)}
