"""``--why``: the conditions on the way from a caller to each step of a finished chain.

Computed at query time and only when asked: for each step made at a call site (launch, library,
call, helper, stub_call, op_call) the caller's file is parsed once (extract/branches.py) and the
branches around each call line become ``model.Reason`` records: ``if``/``else``/``switch``/
``case``/ternary conditions and early returns inside the calling function (Note [Branches on the
way]), the ``#if`` in force (Note [Preprocessor conditions]) and the dtypes of the AT_DISPATCH_*
macro around it (Note [Dispatch type groups]). The steps are rebuilt with ``dataclasses.replace``.

Note [Reasons of several call sites]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
One step can stand for several call sites (gpu_kernel called in each of the 13 AT_DISPATCH_CASEs
of UfuncCUDA_add.cu, in three branches each). A branch is shown only when it holds at every site
(same kind and text; the first site's place): what is true whichever site runs. The dtypes are
the union over the sites. A launch or library call with no AT_DISPATCH of its own is compiled for
the dtypes of the nearest step above it that has one (CUDALoops.cuh's launches run for each dtype
add_kernel dispatches), shown with that step's place; an operator reached by re-dispatch (a yaml
step) starts afresh.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace

from atenmap import config, files
from atenmap.extract.branches import Branch, FileBranches
from atenmap.extract.parse import language_of
from atenmap.model import Chain, KeyChain, Location, Reason, Role, Step
from atenmap.resolve import choices, dtypes
from atenmap.resolve.sites import call_sites
from atenmap.store import Store

_INHERITS = {Role.LAUNCH, Role.LIBRARY}


class StoredBranches:
    """The branches the bundle keeps for one file's call sites (Note [What the bundle quotes] in
    source/bundle.py): ``around`` and ``condition`` as FileBranches answers them from the file."""

    def __init__(self, store: Store, path: str):
        branches, sites = store.quoted_branches(path)
        self.lines: dict[int, dict[str, list[Branch]]] = {}
        self.conds: dict[int, tuple[str, int]] = {}
        for line, name, ids in sites:
            found = [Branch(k, t, at, 0, 0, tuple(args)) for k, t, at, args in (branches[i] for i in ids)]
            self.lines.setdefault(line, {})[name] = [b for b in found if b.kind != "#if"]
            self.conds.update({line: (b.text, b.line) for b in found if b.kind == "#if"})

    def around(self, line: int, name: str = "") -> list[Branch]:
        by_name = self.lines.get(line, {})
        if name in by_name:
            return by_name[name]
        # a name spelled otherwise than the call fact's: the line's answer when all its calls agree
        distinct = {tuple(v) for v in by_name.values()}
        return list(distinct.pop()) if len(distinct) == 1 else []

    def condition(self, line: int) -> tuple[str, int]:
        return self.conds.get(line, ("", 0))


def site_rows(fb: FileBranches, sites: set[tuple[int, str]]) -> tuple[list, list]:
    """What the bundle keeps for the call sites (line, callee name) of one file (store/quoted.sql):
    the distinct branches [kind, text, line, args] around them, each site's ``#if`` as kind ``#if``
    (line: the directive's), and [line, name, [indexes]] per site that has any -- or that shares
    its line with one that has (StoredBranches then tells the names apart)."""
    branches: dict[tuple, int] = {}
    per_line: dict[int, list] = {}
    for line, name in sorted(sites):
        rows = [(b.kind, b.text, b.line, b.args) for b in fb.around(line, name)]
        cond, opened = fb.condition(line)
        rows += [("#if", cond, opened, ())] if cond else []
        per_line.setdefault(line, []).append([line, name, [branches.setdefault(r, len(branches)) for r in rows]])
    kept = [s for named in per_line.values() if any(s[2] for s in named) for s in named]
    return [[k, t, at, list(args)] for k, t, at, args in branches], kept


def quote_file(job: tuple[str, str, set[tuple[int, str]]]) -> tuple[list, list]:
    """``site_rows`` of one file, ``job`` being (its path for the language, the path to read, its
    sites): the bundle builder runs it in a process pool (scripts/build_bundle.py)."""
    path, full, sites = job
    with open(full, "rb") as fh:
        return site_rows(FileBranches(fh.read(), language_of(path)), sites)


def site_name(kind: str, name: str) -> str:
    """The name ``_callee`` looks for at a call fact's site: ``<<<`` for a launch."""
    return "<<<" if kind == "launch" else name


class _Explainer:
    def __init__(self, root: str, store: Store | None = None):
        self.root = root
        self.store = store  # the bundled index: its quoted branches instead of the files
        self.files: dict[str, FileBranches | StoredBranches | None] = {}  # one parse per file and query
        self.unreadable: list[str] = []
        self.names: dict[str, dict[str, str]] = {}

    def step(self, step: Step, above: Reason | None) -> Step:
        if step.role == Role.YAML:
            above = None
        why = self.reasons(step)
        own = next((r for r in why if r.kind == "dtypes"), None)
        if own is None and above is not None and step.role in _INHERITS:
            why = (*why, above)
        children = tuple(self.step(c, own or above) for c in step.children)
        return replace(step, children=children, why=why)

    def reasons(self, step: Step) -> tuple[Reason, ...]:
        sites = call_sites(step)
        if not sites:
            return ()
        fb = self._file(sites[0].file)
        if fb is None:
            return ()
        name = _callee(step)
        per_site = [fb.around(s.line, name) for s in sites]
        out: list[Reason] = []
        cond, opened = _common_condition(fb, sites)
        if cond:
            out.append(Reason("#if", cond, Location(sites[0].file, opened)))
        common = set.intersection(*({(b.kind, b.text) for b in bs if b.kind != "dispatch"} for bs in per_site))
        seen: set[tuple[str, str]] = set()
        for b in per_site[0]:
            if (b.kind, b.text) in common and (b.kind, b.text) not in seen:
                seen.add((b.kind, b.text))
                out.append(Reason(b.kind, b.text, Location(sites[0].file, b.line)))
        typed = _dtypes(per_site, sites[0].file)
        if typed is not None:
            out.append(typed)
        out += choices.runtime_reasons([[(b.kind, b.text, b.line) for b in bs] for bs in per_site],
                                       sites[0].file, self._names(sites[0].file, fb))
        return tuple(out)

    def _names(self, path: str, fb: FileBranches | StoredBranches) -> dict[str, str]:
        """Variables of the file set from a runtime setting (Note [Runtime backend choices]); the
        bundle quotes no text: none there."""
        if path not in self.names:
            src = getattr(fb, "src", None)
            self.names[path] = choices.aliases(src.decode("utf-8", "replace")) if src else {}
        return self.names[path]

    def _file(self, path: str) -> FileBranches | StoredBranches | None:
        if path not in self.files and self.store is not None:
            self.files[path] = StoredBranches(self.store, path)
        if path not in self.files:
            full = path if os.path.isabs(path) else os.path.join(self.root, path)
            lang = language_of(path)
            try:
                src = files.read_bytes(full, config.max_file_bytes())
            except OSError:
                self.unreadable.append(path)
                src = None
            self.files[path] = FileBranches(src, lang) if src is not None and lang else None
        return self.files[path]


def _callee(step: Step) -> str:
    """The name to find on the call line: ``<<<`` for a launch, else the callee's last name
    (``X::operator()`` -> ``X``, the class made there)."""
    if step.role == Role.LAUNCH:
        return "<<<"
    sym = step.symbol.split(" ", 1)[0]
    sym = re.sub(r"<[^<>]*(?:<[^<>]*>[^<>]*)*>", "", sym).removesuffix("::operator()")
    return sym.rsplit("::", 1)[-1]


def _common_condition(fb: FileBranches, sites: list[Location]) -> tuple[str, int]:
    found = [fb.condition(s.line) for s in sites]
    return found[0] if all(c == found[0][0] for c, _ in found) else ("", 0)


def _dtypes(per_site, file: str) -> Reason | None:
    """The innermost AT_DISPATCH macro that names types, at each site; their union. See Note
    [Reasons of several call sites]."""
    types: list[str] = []
    macros: list[str] = []
    first = None
    for bs in per_site:
        for b in reversed(bs):
            if b.kind != "dispatch":
                continue
            got = dtypes.dispatch_types(b.text, b.args)
            if got is None:
                continue
            types += got
            macros.append(b.text)
            first = first or b.line
            break
    if first is None:
        return None
    names = ", ".join(dtypes.torch_name(t) for t in dtypes.ordered(types))
    return Reason("dtypes", f"{names} ({', '.join(dict.fromkeys(macros))})", Location(file, first))


def explain(chain: Chain, root: str, store: Store | None = None) -> Chain:
    """``chain`` with every step's ``why`` filled, read from the files under ``root`` (generated
    files by their absolute paths), or with ``store`` from what the bundled index quotes."""
    ex = _Explainer(root, store)
    keys = tuple(KeyChain(kc.key, tuple(ex.step(s, None) for s in kc.steps)) for kc in chain.keys)
    warnings = [f"--why: cannot read {p}" for p in dict.fromkeys(ex.unreadable)]
    return replace(chain, keys=keys, warnings=(*chain.warnings, *warnings))


__all__ = ["StoredBranches", "explain", "quote_file", "site_name", "site_rows"]
