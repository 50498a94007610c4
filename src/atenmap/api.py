"""The library's front door: one ``Index`` object with verbs, returning public records.

    >>> from atenmap import Index
    >>> ix = Index.open("/path/to/pytorch")        # builds or refreshes the index when needed
    >>> chain = ix.chain("mul.out", keys=["CUDA"])
    >>> [s.symbol for s in chain.keys[0].walk()]
    >>> ix.kernel("void at::native::vectorized_elementwise_kernel<4, ...>(...)").definition

The CLI, ``trace``, the views and the benches come in here and nowhere else: no layer above this one
opens the store or the resolvers. Every verb returns public frozen records of model.py (Chain,
Operator, OperatorKernels, KernelMatch, Where, SearchHit). Lines are 1-based and paths relative to
the source root in every record (see model.py).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from atenmap import config, files
from atenmap import indexstate as _index  # a query's side of build.py; the build itself is loaded to build
from atenmap.errors import IndexError_, UnknownOperator, UsageError
from atenmap.kinds import FactKind, KeyGroup
from atenmap.model import Chain, Excerpt, Operator, OperatorLookup, SourceInfo
from atenmap.source.find import find_source
from atenmap.store import INDEX_NAME, Store

if TYPE_CHECKING:  # imported when first used: a chain query does not pay for the kernel-name parser
    from atenmap.resolve.callfacts import CallFacts
    from atenmap.build import Progress
    from atenmap.resolve.kernels import KernelIndex
    from atenmap.resolve.lookups import LookupObserver
    # nor for the other verbs' records (model_answers.py; Note [Start-up budget] in cli/__init__.py)
    from atenmap.model_answers import (AutogradNode, Backward, CompileAnswer, InductorKernel, IndexedFile, KernelMatch, Lack,
                                       OperatorKernels, SearchHit, Where)


def _compile_made(info: SourceInfo) -> bool:
    """Whether the index of ``info`` holds its torch.compile facts (read from its meta alone)."""
    from atenmap.store import read_meta

    return _index.compile_facts_made(read_meta(_index.index_path(info)) or {}, info.origin)


class Index:
    """``observer``: told what the resolver looks up in every chain this Index answers that is not
    given its own (Note [Lookups told to an observer] in resolve/lookups.py; the preview's Index)."""

    def __init__(self, source: SourceInfo, store: Store, observer: "LookupObserver | None" = None):
        self.source = source
        self.store = store
        self.observer = observer
        self._ops: dict[str, Operator] | None = None
        self._kernels: "KernelIndex | None" = None  # its caches serve every kernel()/where() after the first
        self._backward = None  # resolve.backward.BackwardResolver, for autograd_node()
        self._deriv: tuple | None = None  # (derivatives.yaml entries or None, warnings), read once
        self._one: dict[str, Operator | None] = {}  # _get's records, decoded once (a chain asks again)
        self._pylayer = None  # resolve.pylayer.PythonLayer, for names that are Python functions
        self._pyfuncs: dict[str, dict] = {}  # surface -> its module's Python functions
        self._kept: dict[str, object] = {}  # the resolvers' answers kept per open index (Note [Answers kept per open index])
        self._views: frozenset[str] | None = None  # Note [A copy of a view is strided]
        self._owned: dict[str, object] = {}  # what layers above keep for this open index (owned())
        self._inductor_names = None  # inductor.outputcode.OutputNames: names per output file, checked by stat
        self._codegen = None  # the CodegenDecision open() built with, for compile()'s build of its facts

    @classmethod
    def open(cls, source: str | os.PathLike | SourceInfo | None = None, *, refresh: bool = True,
             codegen: bool | str = True, progress: Progress | None = None,
             status: Callable[[str], None] | None = None, compile_facts: bool = False) -> "Index":
        """Open the index of ``source`` (found as ``sources.find_source`` says; with no tree at all,
        the bundled index), building or refreshing it first when files changed and ``refresh`` is true. ``codegen``: include the
        code the checkout's own torchgen generates (run once, cached; see codegen.py): True follows the
        settings, False never, or never|ask|always (indexstate.py, Note [Whose code runs]).
        ``compile_facts``: make the tree's torch.compile facts now if the index lacks them (a
        ``--compile`` query; else ``compile`` makes them when first asked: Note [torch.compile facts
        when asked] in build.py)."""
        info = source if isinstance(source, SourceInfo) else find_source(source, bundled=True)
        if info.origin == "bundled":  # no tree found: the bundled index answers (bundle.py)
            from atenmap.source import bundle

            man = bundle.manifest()
            first = man is not None and not (bundle.install_dir(man) / INDEX_NAME).exists()
            path = bundle.installed_index(status=status)
            if status and first:  # afterwards every output's `source:` line says it
                status(bundle.notice(info))
            return cls(info, Store.open(path))
        if refresh:  # decided once: is_fresh and the build share the answer (Note [Whose code runs])
            codegen = _index.codegen_decision(info, codegen)
        if refresh and not (_index.is_fresh(info, codegen=codegen) and (not compile_facts or _compile_made(info))):
            from atenmap.build import build

            build(info, progress=progress, codegen=codegen, status=status, compile_facts=compile_facts)
        ix = cls(info, Store.open(_index.index_path(info)))
        ix._codegen = codegen if refresh else None
        return ix

    @classmethod
    def reopen(cls, source: SourceInfo, path: str | os.PathLike) -> "Index":
        """The index file another process has open (its ``source`` and ``path``), opened again as it
        is, never built: a worker process's copy of its parent's index."""
        return cls(source, Store.open(Path(path)))

    @property
    def path(self) -> Path:
        """The index file."""
        return Path(self.store.path)

    @classmethod
    def open_existing(cls, source: str | os.PathLike | None = None) -> "Index":
        """The index of ``source`` only if it exists and is fresh (as it was built: with or without
        torchgen's output); never builds. SourceNotFound / IndexError_ otherwise. For shell completion."""
        info = find_source(source, bundled=True)
        if info.origin == "bundled":  # only when already installed: completion never unpacks it
            from atenmap.source import bundle

            man = bundle.manifest()
            path = bundle.install_dir(man) / INDEX_NAME if man else None
            if path is None or not path.exists():
                raise IndexError_("the bundled index is not installed yet: run any atenmap command once")
            return cls(info, Store.open(path))
        store = Store.open(_index.index_path(info))
        if not _index.is_fresh(info, codegen=store.meta().get("codegen") == "on"):
            store.close()
            raise IndexError_(f"the index of {info.root} is out of date: run atenmap index")
        return cls(info, store)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- verbs ------------------------------------------------------------------------------
    def operators(self) -> list[Operator]:
        return list(self._operators().values())

    def _definitions(self, name: str) -> list[tuple[str, int]]:
        """(file, first line) of each function the index defines as ``name`` (resolve/runs.py)."""
        return [(r.file, r.line) for r in self.store.by_name(name, (FactKind.FUNCTION,))]

    def _strided_views(self) -> frozenset[str]:
        """The view operators that change a fresh tensor's strides (Note [A copy of a view is strided])."""
        if self._views is None:
            from atenmap.resolve.strided import strided_views

            self._views = strided_views(self._operators().values())
        return self._views

    def operator_keys(self, op: str | Operator) -> list[str]:
        """The keys ``op`` has a kernel for, its ``structured_delegate``'s included (as ``ops``)."""
        operator = op if isinstance(op, Operator) else self.operator(op)
        keys = [d.key for d in operator.dispatch]
        target = self._get(str(operator.structured_delegate)) if operator.structured_delegate else None
        keys += [d.key for d in (target.dispatch if target else ()) if d.key not in keys]
        return keys

    def dispatch_keys(self) -> list[str]:
        """Every dispatch key some operator has a kernel for, sorted. Read from the dispatch table
        (the rows of every operator's ``dispatch``), not by decoding all ~2,600 operator records:
        ``--key`` is checked on every query (~40 ms less)."""
        return sorted(self.store.dispatch_keys())

    def ops(self, key: str | None = None) -> list[OperatorKernels]:
        """Every operator in yaml order with the keys it runs, its ``structured_delegate``'s kernels
        included (as torchgen fills them in); with ``key`` (any case) only those running it."""
        from atenmap.model_answers import KeyKernel, OperatorKernels

        ops = self.operators()
        by_name = {str(o.name): o for o in ops}
        out = []
        for o in ops:
            runs = [KeyKernel(d.key, d.kernel) for d in o.dispatch]
            target = by_name.get(str(o.structured_delegate)) if o.structured_delegate else None
            own = {d.key for d in o.dispatch}
            runs += [KeyKernel(d.key, d.kernel, str(target.name)) for d in (target.dispatch if target else ())
                     if d.key not in own]
            out.append(OperatorKernels(o, tuple(runs)))
        if key is None:
            return out
        match = self.known_key(key)
        return [ok for ok in out if any(r.key == match for r in ok.runs)]

    def missing(self, key: str) -> list[Lack]:
        """The operators CPU or CUDA run with a kernel of their own that have none for ``key`` (any
        case), in yaml order, each with what a call there does: an error, the CPU fallback, the
        key's fallback, a composite (resolve/missing.py, Note [What a call does without a kernel]).
        UsageError for a composite key (it serves every backend) and for a key whose kernels
        another repository registers (XPU: Note [Kernels that live elsewhere])."""
        from atenmap.resolve.missing import key_registrations, lacking

        match = self.known_key(key)
        if match.startswith("Composite"):
            raise UsageError(f"--missing: {match} is a composite key, which serves every backend; give a backend key "
                             "(CPU, CUDA, MPS, Meta, SparseCPU, ...)")
        if match in KeyGroup.ELSEWHERE:
            raise UsageError(f"--missing: {match} kernels live in the separate {KeyGroup.ELSEWHERE[match]} repository, "
                             f"not in this tree's native_functions.yaml, so what {match} lacks cannot be read here")
        by_name = self._operators()
        rows = []
        for o in by_name.values():
            target = by_name.get(str(o.structured_delegate)) if o.structured_delegate else None
            structured = o.structured or (target is not None and target.structured) or any(
                d.structured for d in o.dispatch)
            rows.append((o, self.operator_keys(o), structured))
        return lacking(rows, match, key_registrations(self.store, match))

    def known_key(self, key: str) -> str:
        """``key`` as the index spells it (any case given), or UsageError naming the keys there are:
        the one check of a ``--key`` that filters (ops, search; issue 34 found search taking GPU)."""
        known = self.dispatch_keys()
        match = next((k for k in known if k.lower() == key.strip().lower()), None)
        if match is None:
            raise UsageError(f"no operator has a kernel for key {key!r}; keys: {', '.join(known)}")
        return match

    def operator_names(self, prefix: str = "") -> list[str]:
        """Operator names starting with ``prefix`` (``aten::`` kept when given), sorted; for completion."""
        ns = "aten::" if prefix.startswith("aten::") else ""
        return [ns + n for n in self.store.operator_names_starting(prefix[len(ns):])]

    def operator(self, text: str) -> Operator:
        """``add.out`` / ``aten::add.out`` / ``linear`` / ``torch.softmax`` / ``F.relu`` /
        ``Tensor.add_`` / ``torch.ops.aten.add.Tensor`` -> Operator (see ``lookup``); raises
        UnknownOperator, or AmbiguousOperator with the candidates."""
        return self.lookup(text).operator

    def lookup(self, text: str) -> OperatorLookup:
        """The operator a name as PyTorch users spell it means; a bare overloaded name (``softmax``,
        ``torch.add``) gets the overload a Python call reaches, with the others listed (see Note
        [Names users type] in resolve/names.py)."""
        from atenmap.resolve.names import parse_user_name, pick_overload

        if not text.strip() or text.strip() == "aten::":
            raise UnknownOperator("empty operator name: give NAME or NAME.OVERLOAD, e.g. add.out (atenmap ops lists them)")
        if not text.isprintable() or len(text) > 300:
            raise UnknownOperator(f"unknown operator {text[:80].encode('utf-8', 'replace').decode()!r}: "
                                  "not an operator name (NAME or NAME.OVERLOAD, e.g. add.out)")
        wanted = text.strip()
        user = parse_user_name(wanted)
        if user is None:
            return OperatorLookup(text, self._find(wanted))
        python = self._python_lookup(text, user)
        if python is not None:
            return python
        if user.overload is not None:
            hit = self._get(f"{user.name}.{user.overload}" if user.overload else user.name)
            if hit is not None:
                return OperatorLookup(text, hit)
        elif not user.surface and self._get(user.name) is not None:  # `linear`: the overload-less one
            return OperatorLookup(text, self._get(user.name))
        else:
            overloads = [o for o in self.operators() if o.name.name == user.name]
            pick = pick_overload(user, overloads, self._bindings)
            if pick is not None:
                return OperatorLookup(text, pick.operator, pick.others, pick.reason)
        asked = user.name if user.overload is None else f"{user.name}.{user.overload}" if user.overload else user.name
        try:
            return OperatorLookup(text, self._find(asked))
        except UnknownOperator as exc:
            if asked == wanted:
                raise
            raise UnknownOperator(str(exc).replace(f"unknown operator '{asked}'", f"unknown operator '{wanted}'", 1)) from None

    def lookup_call(self, facts: CallFacts, key: str | None = None) -> OperatorLookup:
        """The operator the Python call ``facts`` describes (``--example``) reaches: ``lookup`` of
        the name it calls, the overload being the first signature its arguments parse (Note [The
        signature a call parses] in resolve/names.py: ``torch.where(c, x, y)`` is ``where.self``); for a
        Python function, the operator it returns on the path the call's arguments take on ``key``'s
        device (Note [The path a call's arguments take] in resolve/pylayer.py: ``torch.norm(x)`` is
        ``linalg_vector_norm``)."""
        from atenmap.resolve.names import parse_user_name, parses, pick_overload

        found = self.lookup(facts.call)
        if found.python is not None and found.python.calls and facts.positional is not None:
            return self._python_path(found, facts, key)
        if not found.picked or found.python is not None or facts.positional is None:
            return found
        user = parse_user_name(facts.call)
        overloads = [o for o in self.operators() if o.name.name == found.operator.name.name
                     and parses(o, facts.positional, facts.keywords, facts.numbers)]
        pick = pick_overload(user, overloads, self._bindings) if user is not None else None
        if pick is None or pick.operator is found.operator:
            return found
        others = tuple(n for n in (*found.others, str(found.operator.name)) if n != str(pick.operator.name))
        return OperatorLookup(found.query, pick.operator, others,
                              f"the first signature of its Python binding that the call's arguments parse")

    def output_node(self, facts: CallFacts, key: str = "CPU") -> tuple[str, ...]:
        """The autograd node (``grad_fn``'s class) the output of the Python call ``facts`` gets on
        ``key``: the node of the overload its arguments parse (``lookup_call``), or, where ``key``
        runs that operator's CompositeImplicitAutograd kernel, those of the operators it decomposes
        into (Note [Composite ops' backward]); one name when the call decides it, else the candidates
        (``output_answer`` says which)."""
        return self.output_answer(facts, key).nodes

    def output_answer(self, facts: CallFacts, key: str = "CPU"):
        """``output_node`` with whether the call decides it (``OutputAnswer.decided``): a composite
        whose return the ranks of its tensors pick (matmul's ``dim_tensor1 == 2``) is decided by an
        example's shapes (``torch.randn(3, 4)``) or ``--shape``, else its candidates come ranked as
        the default call's (Note [A branch the ranks pick] in resolve/outputnode.py)."""
        return self._operator_output(self.lookup_call(facts, key).operator, facts, key, 0)

    def _operator_output(self, op: Operator, facts: CallFacts, key: str, depth: int):
        """``output_answer`` for the operator ``op`` a call reaches; ``depth``: composites followed
        into from an outer composite's returned op call (Note [The node of a composite's output])."""
        from atenmap.resolve.callfacts import CallFacts as Facts
        from atenmap.resolve.outputnode import MAX_HELPER_DEPTH, OutputAnswer, OutputProducer, composite_native

        bwd = self.backward(op, keys=[key], expand=False)
        every = bwd.nodes()
        if key not in bwd.composite_keys:
            return OutputAnswer(every, len(every) == 1)
        chain = self.chain(op, keys=[key], expand=False, why=True, runs=False, facts=facts)
        native = composite_native(next((k.steps for k in chain.keys if k.key == key), ()))
        if native is None:
            return OutputAnswer(every, len(every) == 1)
        texts: dict[str, list[str]] = {}

        def lines(file: str) -> list[str]:
            if file not in texts:
                try:
                    texts[file] = files.read_text(Path(self.source.root, file), config.max_file_bytes(),
                                                  errors="replace").splitlines()
                except OSError:
                    texts[file] = []
            return texts[file]

        def nodes(name: str, shapes: tuple | None = None) -> tuple[tuple[str, ...], bool]:
            inner = self._get(name)
            if inner is None:
                return (), True
            if depth < MAX_HELPER_DEPTH and inner is not op:  # a composite returned: its own returned op's node
                # with the shapes its call passes, where known (Note [Optional tensors a call leaves out])
                got = self._operator_output(inner, Facts(dtype=facts.dtype, shapes=shapes), key, depth + 1)
                if got.decided or not got.ranked:
                    return (got.nodes if got.decided else ()), True
                return got.nodes[:1], False  # the ranks pick: the default call's, and the answer is not decided
            return self.backward(inner, keys=[key], expand=False).nodes(), True

        # a composite returned inside another is read strictly, unless its call's shapes are known (then
        # as a call of its own: Note [Optional tensors a call leaves out] in resolve/outputnode.py)
        got = OutputProducer(self.store, lines, nodes).answer(native, facts, key,
                                                              strict=depth > 0 and facts.shapes is None)
        if got.decided:
            return got
        if got.nodes:  # the ranked returns first, then every other node the decomposition records
            return OutputAnswer(tuple(dict.fromkeys((*got.nodes, *every))), False, got.ranked)
        return OutputAnswer(every, len(every) == 1)

    def default_call(self, found: OperatorLookup) -> tuple[str, CallFacts] | None:
        """The default call of the Python function ``found`` names, as text and as ``--example``
        would read it: its parameters without a default given, the others left at their defaults
        (``torch.nn.functional.dropout(input)``, whose ``training=True``; Note [The path a call's
        arguments take] in resolve/pylayer.py). None for an operator, an alias of a binding, or a
        function read without its parameters (the bundle quotes none)."""
        from atenmap.resolve.callfacts import parse_example
        from atenmap.resolve.names import parse_user_name, python_name

        if found.python is None or not found.python.calls or self._pylayer is None:
            return None
        user = parse_user_name(found.query)
        name = python_name(found.query, user) if user is not None else None
        fn = self._pylayer.find(user.surface, name) if name is not None else None
        if fn is None or not fn.params:
            return None
        text = f"{found.python.name}({', '.join(p for p, default in fn.params if default is None)})"
        try:
            return text, parse_example(text)
        except UsageError:  # a function no call expression of ours can name
            return None

    def _python_path(self, found: OperatorLookup, facts: CallFacts, key: str | None) -> OperatorLookup:
        from atenmap.resolve.names import parse_user_name, python_name
        from atenmap.resolve.pylayer import returned_on_path

        user = parse_user_name(facts.call)
        name = python_name(facts.call, user) if user is not None else None
        fn = self._pylayer.find(user.surface, name) if name is not None and self._pylayer is not None else None
        if fn is None:
            return found
        positional = facts.positional - (1 if user.surface == "Tensor" and fn.params and fn.params[0][0] == "self" else 0)
        given = {p for p, _d in fn.params[:max(positional, 0)]} | set(facts.keywords)
        device = {"CPU": "cpu", "CUDA": "cuda"}.get(key or "")
        call = returned_on_path(fn, given, device)
        hit = next((c for c in found.python.calls if call is not None and not c.via and c.written == call.name
                    and c.loc.line == call.line), None)
        if hit is None and call is not None and not given - {p for p, d in fn.params if d is None}:
            inner = self._passed_through(fn, call.name)  # x.norm(): Tensor.norm returns torch.norm(self, p, ...)
            op = self._default_operator(*inner) if inner is not None else None
            return dataclasses.replace(found, operator=self.operator(op)) if op is not None else found
        if hit is None:
            return found
        return dataclasses.replace(found, operator=self.operator(hit.operator))

    def _default_operator(self, fn, calls, depth: int = 0) -> str | None:
        """The operator a Python function's default call returns (its parameters without a default given,
        on a dense CPU or CUDA tensor), where its tests decide it the same on both and it is no in-place
        operator: ``torch.norm`` -> ``linalg_vector_norm``; a returned call of another Python function that
        its parameters pass through at their defaults is followed (``Tensor.norm`` -> ``torch.norm``). See
        Note [The path a call's arguments take] in resolve/pylayer.py. None when they do not decide it."""
        from atenmap.resolve.pylayer import returned_on_path

        given = {p for p, default in fn.params if default is None}
        on_cpu = returned_on_path(fn, given, "cpu", decided=True)
        if on_cpu is None or on_cpu != returned_on_path(fn, given, "cuda", decided=True):
            return None
        hit = next((c for c in calls if not c.via and c.written == on_cpu.name and c.loc.line == on_cpu.line), None)
        if hit is not None:
            return hit.operator if not hit.operator.split(".")[0].endswith("_") else None
        inner = self._passed_through(fn, on_cpu.name) if depth < 2 else None
        return self._default_operator(*inner, depth + 1) if inner is not None else None

    def _passed_through(self, fn, name: str):
        """(the Python function ``name`` calls, its calls) where every parameter of ``fn`` with a default
        that it shares has the same default there, so ``fn``'s default call passes it its defaults
        (``Tensor.norm(self, p="fro", dim=None, ...)`` returning ``torch.norm(self, p, dim, ...)``); else None."""
        from atenmap.resolve.names import parse_user_name, python_name

        user = parse_user_name(name)
        pyname = python_name(name, user) if user is not None else None
        inner = self._pylayer.find(user.surface, pyname) if pyname is not None and self._pylayer is not None else None
        if inner is None or inner.alias is not None or not inner.params:
            return None
        theirs = dict(inner.params)
        if any(d is not None and p in theirs and theirs[p] != d for p, d in fn.params):
            return None
        return inner, self._pylayer.resolve(user.surface, inner).calls

    def owned(self, name: str, make: Callable[[], object]) -> object:
        """What a layer above keeps for as long as this index is open (``trace``'s join caches),
        made by ``make()`` on first use: caches belong to the open Index, never to a module."""
        got = self._owned.get(name)
        if got is None:
            got = self._owned[name] = make()
        return got

    def chain(self, op: str | Operator, keys: list[str] | None = None, depth: int | None = None,
              expand: bool = True, why: bool = False, runs: bool = True,
              observer: "LookupObserver | None" = None, facts: CallFacts | None = None,
              platform: str = "cuda") -> Chain:
        """``expand=False``: calls to other operators stay leaves (``--no-expand``). ``why``: each
        step made at a call site gets the conditions on the way from its caller (``Step.why``:
        branches, early returns, ``#if``, AT_DISPATCH dtypes; resolve/why.py), read from the tree's files.
        ``Chain.runs``: what each key runs, main path first (resolve/runs.py); ``runs=False`` leaves
        it empty (views that draw only the tree: lines, gdb, graph). ``observer``: told what the
        resolver looks up (Note [Lookups told to an observer] in resolve/lookups.py; the preview's).
        ``facts``: one call's dtype, shapes and aliases (``--dtype``/``--shape``/``--example``,
        resolve/callfacts.py): the runs it cannot take are left out (Note [Deciding a branch]).
        ``platform``: ``cuda`` (the default) or ``rocm``, the build whose ``#if`` side the CUDA key
        takes (Note [The ROCm side of #if] in resolve/conditions.py)."""
        from atenmap.resolve.chain import DEFAULT_DEPTH, Resolver
        from atenmap.resolve.conditions import PLATFORMS

        if platform not in PLATFORMS:
            raise UsageError(f"--platform {platform}: no such platform; platforms: {', '.join(PLATFORMS)}")

        operator = op if isinstance(op, Operator) else self.operator(op)
        chain = Resolver(self.store, self.source, self._get, self.operators, self._kept,
                         self.observer if observer is None else observer, platform).chain(
            operator, keys=keys, depth=depth or DEFAULT_DEPTH, expand=expand)
        chain = dataclasses.replace(chain, warnings=(*self.codegen_warnings(), *chain.warnings))
        bundled = self.source.origin == "bundled"
        if why and bundled and not self.store.quotes():  # a bundle built before Note [What the bundle quotes]
            chain = dataclasses.replace(chain, warnings=(
                *chain.warnings, "--why reads the source files, which this bundled index does not quote: "
                                 "give a PyTorch tree (--source, or atenmap fetch)"))
        elif why:
            from atenmap.resolve.why import explain

            chain = explain(chain, self.source.root, self.store if bundled else None)
        if not runs:
            return chain
        from atenmap.resolve.runs import composite_device, runs as what_runs

        unapplied: tuple[str, ...] = ()
        if bundled:  # Note [The runs the bundle keeps] in resolve/runs.py
            found, unapplied, notes = self._bundled_runs(chain, operator, (depth or DEFAULT_DEPTH) == DEFAULT_DEPTH
                                                         and expand, why, facts, platform)
            chain = dataclasses.replace(chain, warnings=(*chain.warnings, *notes))
        else:
            found = what_runs(chain, self.source.root, self.store.function_spans, facts, platform,
                              self._strided_views(), self._definitions)
        if any(kc.key == "MPS" for kc in chain.keys):  # Note [MPSGraph operations by text]
            from atenmap.resolve.mpsgraph import definitions_of, graph_runs, lines_of

            lines = lines_of(self.source.root, self.store if bundled else None)  # Note [MPS lines from the bundle]
            found = graph_runs(chain, found, lines, self.store.function_spans, definitions_of(self.store), facts)
        device = composite_device(chain, found, lambda: self.operator_keys(operator))
        if device is not None:  # Note [A composite's runs are its operators']
            found = self.chain(operator, keys=[device], depth=depth, expand=expand, why=why, observer=observer,
                               facts=facts, platform=platform).runs
        if unapplied:
            return dataclasses.replace(chain, runs=found, unapplied=unapplied)
        return dataclasses.replace(chain, runs=found, given=facts.used() if facts else ())

    def _bundled_runs(self, chain: Chain, operator: Operator, default_chain: bool, why: bool,
                      facts: CallFacts | None, platform: str) -> tuple[tuple, tuple[str, ...], tuple[str, ...]]:
        """The bundled index's runs of ``chain`` (Note [The runs the bundle keeps] in resolve/runs.py):
        each key's kept list where ``default_chain`` (the chain they were ranked on), else ranked by
        ``#if`` alone. Also the call's facts the kept lists did not apply, and the notes to add."""
        from atenmap.resolve.runs import kept_runs, runs as what_runs

        kept = default_chain and self.store.quotes_runs()
        found: list = []
        by_if: list[str] = []
        for kc in chain.keys:
            rows = self.store.quoted_runs(str(operator.name), kc.key, platform) if kept else None
            if rows is not None:
                found += kept_runs(kc.key, rows, why)
                continue
            by_if.append(kc.key)
            found += what_runs(dataclasses.replace(chain, keys=(kc,)), None, self.store.function_spans, facts,
                               platform, self._strided_views(), self._definitions)
        notes = ()
        if by_if:
            why_not = ("it keeps the tree's ranking for the keys a default answer shows, on the cuda platform, at the "
                       "default --depth with operator calls expanded" if self.store.quotes_runs()
                       else "it keeps no ranking of the tree's")
            notes = (f"runs of {', '.join(by_if)}: ranked by each line's #if alone, without the source's branches "
                     f"(the bundled index: {why_not}; --source or atenmap fetch for a tree)",)
        unapplied = facts.used() if facts is not None and len(by_if) < len(chain.keys) else ()
        return tuple(found), unapplied, notes

    def compile(self, op: str | Operator, keys: list[str] | None = None, depth: int | None = None) -> CompileAnswer:
        """What torch.compile's default backend (Inductor) does with ``op``, from the tree's Python
        (the index's compile facts, extract/inductor.py): decompositions and whether Inductor's table
        holds them, lowerings with their templates, fallbacks with the op's ATen chain for ``keys``
        (default: CPU and CUDA or the composite key serving them), fx passes naming it. A tree
        without torch/_inductor gets a one-line note (resolve/compile.py)."""
        from atenmap import devices
        from atenmap.model_answers import CompileAnswer
        from atenmap.resolve.compile import cia_decomposes, compile_steps, plan, summary

        operator = op if isinstance(op, Operator) else self.operator(op)
        name = str(operator.name)
        if not _index.compile_facts_made(self.store.meta(), self.source.origin):
            self._make_compile_facts()
        if not self.store.compile_count():
            return CompileAnswer(name, note=f"no torch/_inductor in {self.source.root}: this PyTorch has no "
                                            "torch.compile Inductor backend to describe")
        cia = any(d.key == KeyGroup.CIA for d in operator.dispatch)
        p = plan(self.store.compile_facts(operator.name.name), name, cia=cia,
                 preservable=cia_decomposes(operator.schema))
        needs_chain = p.fallback or p.lowering is None or p.table_why == "cia"
        steps: tuple = ()
        if needs_chain:
            keys = keys or devices.common_keys(self.operator_keys(operator)) or None
            steps = tuple(s for kc in self.chain(operator, keys=keys, depth=depth).keys for s in kc.steps)
        return CompileAnswer(name, compile_steps(p, (operator.loc.file, operator.loc.line), steps), summary=summary(p))

    def _make_compile_facts(self) -> None:
        """Build the tree's torch.compile facts into this index, which lacks them, and read the
        index again, as a new open Index: what this one kept (resolvers, memos, what layers above
        keep: ``owned``) was read from the old file and goes (Note [torch.compile facts when asked]
        in build.py). With the codegen decision ``open`` made, else the index's own: torchgen's
        output already made, nothing run."""
        from atenmap.build import build

        decision = self._codegen
        if decision is None:
            import json

            meta = self.store.meta()
            said = json.loads(meta.get("codegen_warnings") or "[]") if meta.get("codegen") != "on" else []
            decision = _index.CodegenDecision(meta.get("codegen") == "on", said[0] if said else None,
                                              meta.get("codegen_off") or "", may_run=False)
        build(self.source, codegen=decision, compile_facts=True)
        old, codegen = self.store, self._codegen
        self.__init__(self.source, Store.open(_index.index_path(self.source)), self.observer)
        self._codegen = codegen
        old.close()

    def backward(self, op: str | Operator, keys: list[str] | None = None, expand: bool = True,
                 depth: int | None = None) -> Backward:
        """``op``'s tools/autograd/derivatives.yaml entry and formulas, the autograd node the
        checkout's codegen makes of it (MulBackward0: the VariableType kernel that records it, its
        struct and apply), per key (default CPU and CUDA) the chains of the operators each backward
        formula calls, and for an op with no entry the operators it decomposes into with theirs (see
        resolve/backward.py). A missing or bad derivatives.yaml, or no generated code, is a warning."""
        from atenmap.resolve.backward import BackwardResolver
        from atenmap.resolve.chain import DEFAULT_DEPTH, Resolver

        operator = op if isinstance(op, Operator) else self.operator(op)
        entries, warnings = self._derivatives()
        absent = self._autograd_absent()
        if absent:
            warnings = [*warnings, f"autograd node not shown: {absent}"]
        resolver = Resolver(self.store, self.source, self._get, self.operators, self._kept)
        result = BackwardResolver(self.store, self.source, resolver, entries, not absent, self._quoted()).backward(
            operator, list(keys or ("CPU", "CUDA")), depth or DEFAULT_DEPTH, expand)
        return dataclasses.replace(result, warnings=(*warnings, *result.warnings))

    def autograd_node(self, name: str) -> AutogradNode | None:
        """The autograd node ``name`` (MulBackward0, as the profiler and ``grad_fn`` name it) -> the
        operator whose generated Autograd kernel makes it, its derivatives.yaml entry and the node's
        ``apply``; None when the generated code is not indexed or no kernel makes it (AccumulateGrad)."""
        if self._backward is None:
            from atenmap.resolve.backward import BackwardResolver
            from atenmap.resolve.chain import Resolver

            self._backward = BackwardResolver(self.store, self.source,
                                              Resolver(self.store, self.source, self._get, self.operators, self._kept),
                                              self._derivatives()[0], not self._autograd_absent(), self._quoted())
        return self._backward.autograd_node(name)

    def kernel(self, name: str) -> KernelMatch:
        """A kernel name as a profiler prints it (demangled, mangled ``_Z...`` or plain) -> its
        ``__global__`` definition, launch lines, functors, library calls and operators (see
        resolve/kernels.py); ``.found`` is false when the index knows nothing of it. AtenmapError for
        an empty name."""
        return self._kernel_index().lookup(name)

    def kernels(self, names) -> list[KernelMatch]:
        """One match per distinct name, in first-appearance order (a trace's kernels)."""
        kx = self._kernel_index()
        return [kx.lookup(n) for n in dict.fromkeys(names)]

    def inductor_kernel(self, name: str, cache_dirs=None) -> InductorKernel | None:
        """An Inductor kernel (``triton_poi_fused_gelu_0``, ``cpp_fused_add_relu_0``,
        ``extern_kernels.mm``, ``torch.ops.aten.X.default``) in the Inductor cache's output code
        (``cache_dirs``, else $TORCHINDUCTOR_CACHE_DIR or the default): inductor/outputcode.py.
        None when the name is not an Inductor one or no output code has it (``missing_note`` says why)."""
        from atenmap.inductor.outputcode import OutputNames, find_kernel

        if self._inductor_names is None:
            self._inductor_names = OutputNames()
        return find_kernel(name, cache_dirs, known=self.store.operator_bases(), names=self._inductor_names)

    def where(self, file: str, line: int | None = None, function: str | None = None) -> Where:
        """The function at ``file:line`` (or named ``function`` in ``file``) and the operators whose
        chains pass through it. ``file``: relative to the source root (a unique suffix will do) or an
        absolute path inside the tree. AtenmapError when no such file or function is indexed."""
        root = self.source.root.rstrip("/") + "/"
        if file.startswith(root):  # an editor's absolute path inside the tree
            file = file[len(root):]
        return self._kernel_index().where(file, line=line, function=function)

    def search(self, pattern: str, key: str | None = None, kinds: tuple[str, ...] | None = None,
               tag: str | None = None) -> list[SearchHit]:
        """Operators, DispatchStubs, kernels and functions whose names hold ``pattern`` (its letters in
        order will do), best first; ``key``: only those of its device; ``kinds``: of op, stub, kernel,
        function; ``tag``: operators with this yaml tag. See Note [Search ranking]."""
        from atenmap.resolve.search import search

        return search(self.store, pattern, key=self.known_key(key) if key else None, kinds=kinds, tag=tag)

    def show(self, place: str, context: int = 5) -> Excerpt:
        """The lines around ``place`` (``PATH:LINE``; ``gen:PATH:LINE`` in torchgen's output), read
        from the tree; the bundled index raises NoSourceText saying where the text is (source/excerpt.py)."""
        from atenmap.source.excerpt import excerpt

        return excerpt(self.source, self.generated_root, place, context)

    @property
    def generated_root(self) -> str | None:
        """Where torchgen's output of this index lies (generated files' paths start with it), if any."""
        return self.store.meta().get("codegen_dir") or None

    def codegen_warnings(self) -> list[str]:
        """Why generated code is missing from this index, if it is (one line each)."""
        import json

        meta = self.store.meta()
        return json.loads(meta.get("codegen_warnings") or "[]")

    def files(self) -> list[IndexedFile]:
        """Every file the index holds, sorted by path."""
        from atenmap.model_answers import IndexedFile

        return sorted((IndexedFile(p, size, bool(gen)) for p, (_id, size, _mtime, gen) in self.store.files().items()),
                      key=lambda f: f.path)

    def stats(self) -> dict:
        return {"files": self.store.file_status_counts(), "facts": self.store.counts(),
                "operators": len(self.store.operator_names()), "meta": self.store.meta(), "path": str(self.store.path)}

    # ---- internals --------------------------------------------------------------------------
    def _python_lookup(self, text: str, user) -> OperatorLookup | None:
        """``text`` as a Python function of the tree (resolve/pylayer.py): a composite one answers
        with the first operator it reaches, an alias with its binding's; None when it is neither."""
        from atenmap.resolve.names import python_name

        name = python_name(text, user)
        if name is None:
            return None
        if self._pylayer is None:
            from atenmap.resolve.pylayer import PythonLayer

            self._pylayer = PythonLayer(self._python_functions, self.lookup)
        fn = self._pylayer.find(user.surface, name)
        if fn is None:
            return None
        py = self._pylayer.resolve(user.surface, fn)
        if py.alias is not None:
            found = self._pylayer._lookup(py.alias)
            return dataclasses.replace(found, query=text, python=py) if found is not None else None
        if not py.calls:
            return None
        lead = self._default_operator(fn, py.calls) or _lead(py.calls, fn.name).operator
        return OperatorLookup(text, self.operator(lead), python=py)

    def _python_functions(self, surface: str):
        """The Python functions of ``surface``'s module (extract/pyfuncs.py), read once: from the tree's
        file, or what the bundled index quotes of it."""
        if surface not in self._pyfuncs:
            from atenmap.extract.pyfuncs import MODULES, PyFunction, read_module

            if self.source.origin == "bundled":
                self._pyfuncs[surface] = {d["name"]: PyFunction.from_dict(d) for d in self.store.quoted_python(surface)}
            else:
                try:
                    text = Path(self.source.root, MODULES[surface][0]).read_text(encoding="utf-8")
                except (OSError, UnicodeError):
                    text = ""
                self._pyfuncs[surface] = read_module(text, surface)
        return self._pyfuncs[surface]

    def _quoted(self) -> bool:
        """The bundled index answers file reads from what it quotes (Note [What the bundle quotes])."""
        return self.source.origin == "bundled" and self.store.quotes()

    def _autograd_absent(self) -> str | None:
        """Why the generated autograd code cannot be read, in the user's terms; None when it can."""
        if self.source.origin == "bundled":
            return None if self.store.quotes() else "this bundled index does not quote torchgen's autograd files"
        absent = self.store.codegen_absent()
        return f"torchgen's output is not in this index ({absent})" if absent else None

    def _derivatives(self):
        """(the tree's derivatives.yaml entries or None, warnings); read once per Index."""
        if self._deriv is None:
            from atenmap.errors import YamlError
            from atenmap.extract.derivatives_yaml import DERIVATIVES_REL, load_derivatives

            path = Path(self.source.root, DERIVATIVES_REL)
            if self._quoted():
                from atenmap.model_answers import DerivativeEntry

                self._deriv = ([DerivativeEntry.from_dict(d) for d in self.store.quoted_derivatives()], [])
            elif self.source.origin == "bundled":
                self._deriv = (None, [f"no {DERIVATIVES_REL}: this bundled index does not quote it "
                                      "(--source PATH or atenmap fetch for the backward formulas)"])
            elif not path.is_file():
                self._deriv = (None, [f"no {DERIVATIVES_REL} in {self.source.root}: backward formulas not shown"])
            else:
                try:
                    self._deriv = (load_derivatives(path, Path(self.source.root)), [])
                except YamlError as exc:
                    self._deriv = (None, [f"{exc}; backward formulas not shown"])
        return self._deriv

    def _kernel_index(self) -> "KernelIndex":
        if self._kernels is None:
            from atenmap.resolve.kernels import KernelIndex

            self._kernels = KernelIndex(self.store, self.source.root if self.source else None)
        return self._kernels

    def _bindings(self, op_name: str):
        """(operator, binding function, file, line) of each Python binding case of ``op_name``."""
        for b in self.store.by_name(op_name, (FactKind.BINDING,)):
            fn = self.store.by_id(b.scope) if b.scope else None
            if fn is not None:
                yield b.name, fn.name, b.file, b.line

    def _find(self, text: str) -> Operator:
        from atenmap.extract.native_yaml import find_operator  # (and yaml) only for the names that need it

        return find_operator(self.operators(), text)

    def _get(self, name: str) -> Operator | None:
        if self._ops is not None:
            return self._ops.get(name)
        if name not in self._one:
            rec = self.store.operator_record(name)
            self._one[name] = _index.operator_from_dict(rec) if rec else None
        return self._one[name]

    def _operators(self) -> dict[str, Operator]:
        if self._ops is None:
            self._ops = {d["name"]: _index.operator_from_dict(d) for d in self.store.operator_records()}
        return self._ops


def open_index(source: str | os.PathLike | None = None, **kw) -> Index:
    return Index.open(source, **kw)


__all__ = ["Index", "open_index", "Path"]


def _lead(calls, name: str):
    """The operator shown for a Python function (resolve/pylayer.py), all its calls being listed: one
    it returns that bears its name (F.mse_loss's ``return torch._C._nn.mse_loss(...)``, not the
    broadcast_tensors before it or the weighted branch's torch.sum), else the first it returns, else
    the first it calls; never an in-place one when another is called (F.relu's ``if inplace:
    torch.relu_(...)``)."""
    plain = [c for c in calls if not c.operator.split(".")[0].endswith("_")] or list(calls)
    returned = [c for c in plain if c.returned]
    return next((c for c in returned if c.operator.split(".")[0] == name), (returned or plain)[0])
