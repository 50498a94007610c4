"""Reverse lookup: a kernel name from a profiler -> its source, launch lines and operators.

Also ``where(file, line|function)``: which operators' chains pass through a line of ATen.

Note [Walking up to operators]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Computing every operator's chain to invert it takes ~100 s on PyTorch 2.6, so the lookup walks
the call graph upwards instead, from the most specific code the kernel name points at:
  1. the function enclosing the kernel's lambda (``exp_kernel_cuda(...)::{lambda()#2}``), else
  2. the functor in its template arguments that is not loop machinery (``CUDAFunctor_add``,
     ``sum_functor``): the functions that construct or declare it, else
  3. the functions that launch the ``__global__`` kernel.
From there, each step goes to the callers of a function (by name, accepted when the caller's
translation unit can see the callee: same file or included), through ``REGISTER_DISPATCH``
(kernel -> stub -> the stub's callers), through ``m.impl`` (torchgen wrapper -> operator), and
stops at functions the yaml names as kernels (``TORCH_IMPL_FUNC(mul_out)``, ``at::native::mm_out_cuda``).
Operators are ranked by the number of steps from the anchor (fewest first); operators that reach
those through ``structured_delegate`` follow their delegate.
"""
from __future__ import annotations

import dataclasses
import re
from collections import deque

from atenmap.extract.macros import split_args
from atenmap.kinds import FactKind
from atenmap import devices
from atenmap.errors import AtenmapError
from atenmap.model import Location, Role, Step, at
from atenmap.model_answers import KernelMatch, OperatorHit, Where
from atenmap.names import ANONYMOUS, clean_namespace, strip_templates
from atenmap.resolve.kernelflags import (bool_flags, flag_idents, launch_template_args, literal_arg, read_launch_lines,
                                        template_args_of, template_params)
from atenmap.resolve.copies import COPY_CALLS, FILL_CALLS, FILL_LIBRARIES, direction_of, general_first, split_by_direction
from atenmap.resolve.directcalls import cpp_names, direct_callers
from atenmap.resolve.versions import not_in_tree, unknown_kernel
from atenmap.resolve import callbacks, conditions, hipify, passed
from atenmap.resolve.includegraph import IncludeGraph
from atenmap.resolve.kernelname import KernelName, parse_kernel_name
from atenmap.resolve.kernelname.encoding import FAMILY_CALLS, FAMILY_WORDS, call_dtype, dtype_of, family_of, guess_vendor
from atenmap.resolve.ranking import (NOISE, Candidate, call_operands, device_inputs, joining_words, loop_functor, merged,
                                     name_words, overload_words, rank_key,
                                     scalar_operand_form, schema_kinds, signature_kinds,
                                     std_words, tensor_inputs)
from atenmap.resolve.libraries import (ATEN_NAMESPACES, family_calls_like, library_of, library_of_call, runners_of,
                                      same_family)
from atenmap.store import FactRow, Store

MAX_VISITED = 4000
MAX_DISTANCE = 8  # calls walked up from the code a kernel name points at
MAX_OPERATORS = 40
MAX_TRACE_LINES = 100_000
# a jiterator kernel's name: jit_utils.cpp's `${name}_kernel` / `${name}_vectorized${vec_size}_kernel`,
# reduction_template.cuh's `reduction_${name}_kernel` (Note [Jiterator kernel names])
_JIT_NAME = re.compile(r"(\w+?)_(?:vectorized\d+_)?kernel")
_JIT_VECTORIZED = re.compile(r"\w+?_vectorized\d+_kernel")  # the shape only jit_utils.cpp makes
_BATCHED = re.compile(r"(?:^|_)batch(?:ed)?(?:_|$)", re.I)  # a library kernel for a batch of matrices
# Note [MAGMA's batched kernels]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen calls MAGMA for one matrix (magma_sgeev, magma_sgesdd: hybrid CPU/GPU drivers that run cuBLAS and
# few kernels of MAGMA's own) and for batches (magma_sgetrf_batched, magma_spotrf_batched,
# magma_sgetrs_batched: ATen's magmaLuBatched, magmaCholeskyBatched, magmaLuSolveBatched). MAGMA's own
# GPU kernels are mostly the batched routines': their names say it (``trsm_template_batched_lNL_kernel``)
# or set up the arrays of matrix pointers a batched routine takes (``magma_iset_pointer_kernel``). Such a
# kernel, even when it says no routine, is issued by MAGMA's batched calls (not cuSOLVER's, which share
# the family for chains), not by the eigen- and singular-value drivers that an unnamed solver kernel is
# guessed to come from (Note [Kernels of no name]).
_MAGMA_BATCHED = re.compile(r"batched|(?:^|_)i?set_pointer", re.I)
_NARROW = ("int8", "fp8")  # call types whose kernels always say theirs (Note [Dtypes in kernel names])
_FUNCTOR_DETAIL = "functor the kernel is instantiated with"
# Note [Functions named in template arguments]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A template argument of a kernel name is not always a class: ``distribution_elementwise_grid_stride_
# kernel<float, 4, at::native::templates::cuda::uniform_and_transform<...>(...)::{lambda...}>`` names the
# function template whose lambda it runs. When the name is cut short before that lambda (a profiler's
# or a table's limit) or no class and no lambda of the name is in the tree, the function it names is the
# most specific code left: the walk starts there (its callers: uniform_kernel, bernoulli_kernel ...),
# before the launch lines, which every kernel of the family shares.
_TRANSFORM_DETAIL = "function named in the kernel's template arguments"
# Note [A library kernel's calls before names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A library's kernel can carry ATen's own class in its template arguments (CUB's
# ``DeviceSegmentedReduceKernel<policy_hub<float, long, at::native::(anonymous namespace)::CustomMax>, ...>``,
# the reduction operator segment_reduce hands to ``cub::DeviceSegmentedReduce::Reduce``). When the walk
# from that class reaches no operator (a local ``CustomMax max_op{};`` is no call), its words still spell
# operators (``max``), but by name only: no call path leads from them to the kernel. The library's calls
# that can issue the kernel do have one (segment_reduce reaches ``cub::DeviceSegmentedReduce::Reduce``),
# so for a library's kernel the operators above those calls rank before the ones its words spell; an
# operator the walk reached keeps its place before both.
COPY_ENGINE = "CUDA runtime (copy engine)"  # libraries.py's record of cudaMemcpy*/cudaMemset*
# Note [Jiterator kernels are named as NVRTC's]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A jiterator kernel (Note [Jiterator kernel names]) is ATen's own code, but no file of the tree holds
# its name or a __global__ function of it: jit_utils.cpp and reduction_template.cuh write the CUDA
# source at run time from a string of ATen and NVRTC compiles it. A reader who looks the name up in the
# tree finds nothing, so the answer names what made it, as for a library's kernel: ``library`` is
# ``jiterator`` (what the header line, the JSON and the MCP answer print) and ``family`` what its
# template says (``elementwise`` for ``<name>[_vectorized<N>]_kernel``, ``reduction`` for
# ``reduction_<name>_kernel``), with one note saying how the name is made. The string, its
# ``jitted_gpu_*`` call (the ``jit`` step) and the ranked operators stay as they are: the jitted call
# is the ATen source of the kernel, not a library call.
JITERATOR = "jiterator"
NAMED_DIST = 99  # an operator found by name only: after every walked one (Note [Operators that share a step])

# Template arguments that are loop machinery, not the operator's own code.
_MACHINERY = re.compile(
    r"(OffsetCalculator|LoadWithCast|StoreWithCast|LoadWithoutCast|StoreWithoutCast|func_wrapper_t|ReduceOp|"
    r"ReduceConfig|TensorInfo|Array|array|detail::|memory::|IntDivider|TrivialOffsetCalculator|"
    r"OpaqueType|AccumulateType|opmath|WelfordData|c10::|GeneratorImpl|PhiloxCudaState)")


@dataclasses.dataclass
class KernelCaches:
    """What a KernelIndex has read of its index, kept for the Index's lifetime: the index does not
    change while it is open (a refresh opens a new Index), so nothing here is ever stale. Each
    entry is filled on first use; ``KernelIndex.cache`` is the one owner (api.Index keeps one
    KernelIndex, so every ``kernel``/``kernels``/``where`` after the first shares them)."""

    ops: dict[tuple, list[tuple[int, str]]] = dataclasses.field(default_factory=dict)
    kernel_ops: dict[str, list[tuple[str, str]]] | None = None
    incl: dict[str, list[str]] | None = None
    reach: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    global_names: list[str] | None = None
    regs: dict[str, list[FactRow]] | None = None
    lib: dict[str, list[FactRow]] = dataclasses.field(default_factory=dict)
    delegates: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    once: dict[str, bool] = dataclasses.field(default_factory=dict)
    classes: dict[str, bool] = dataclasses.field(default_factory=dict)  # a name -> whether a class has it
    targs: dict[str, list[int]] | None = None
    jit_names: dict[str, list[FactRow]] | None = None
    up: dict[int, list[FactRow]] = dataclasses.field(default_factory=dict)
    reg_ops: dict[int, list[tuple[str, str]]] = dataclasses.field(default_factory=dict)
    impls: dict[str, list[FactRow]] = dataclasses.field(default_factory=dict)
    bases: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    keys: dict[str, list[str]] | None = None
    delegate_of: dict[str, str] = dataclasses.field(default_factory=dict)
    direct: dict[tuple[str, str], list[FactRow]] = dataclasses.field(default_factory=dict)
    handed: dict[str, list[FactRow]] | None = None  # kernel -> launches of a callback's parameter it is handed
    stub_ns: dict[str, set[str]] | None = None  # a DispatchStub's name -> the namespaces declaring it
    api_names: frozenset[str] | None = None  # every operator's at:: function names (Note [Plain calls of a kernel])
    plain: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict)  # fn -> callers calling it native::X
    tensor_inputs: dict[str, int] = dataclasses.field(default_factory=dict)  # overload -> its tensor inputs
    schema_kinds: dict[str, tuple | None] = dataclasses.field(default_factory=dict)  # overload -> its arguments' kinds
    writes_out: dict[str, bool] = dataclasses.field(default_factory=dict)  # overload -> an out= form
    flags: dict[str, tuple] = dataclasses.field(default_factory=dict)  # kernel name -> what its flags and callers say
    call_operands: dict[str, int | None] = dataclasses.field(default_factory=dict)  # loop functor -> operator() params
    # (function, arguments) -> its callers that agree, that differ: Note [Template arguments handed down by callers]
    handed_args: dict[tuple, tuple[list[str], list[str]]] = dataclasses.field(default_factory=dict)


class KernelIndex:
    """Reverse lookups over one index. Results are cached per anchor, so a trace with many
    launches of few kernels costs little."""

    def __init__(self, store: Store, root: str | None = None):
        self.store = store
        self.root = root  # the source tree, for the launch lines' template flags (None: not read)
        self.cache = KernelCaches()  # everything read of the index, kept while it is open
        self._together: set[int] = set()  # the last name's anchors that make all its functors
        self._missing: list[str] = []  # the last name's own code that this tree does not have
        self._version_note = ""  # the last name's line naming the tree's version (Note [Code of another version])

    # ---- kernel names -----------------------------------------------------------------------
    def lookup(self, text: str) -> KernelMatch:
        """The match of one kernel name (demangled, mangled or plain); AtenmapError for an empty one."""
        name = parse_kernel_name(text)
        self._version_note = ""
        base = dict(query=name.raw, kind=name.kind, function=name.function, qualname=name.qualname,
                    detail=name.detail, family=family_of(name), dtype=dtype_of(name))
        if name.kind in ("memcpy", "memset"):
            rows, hits = self._copy_hits(name)
            return KernelMatch(**base, library=COPY_ENGINE, library_calls=tuple(_call_step(r) for r in rows[:20]),
                               hits=hits, notes=(name.detail, *name.notes))
        library, library_calls, lib_hits, lib_notes = None, (), (), ()
        if name.kind == "library":
            library, lib_notes = name.library, (name.detail,)
            library_calls, lib_hits = self._library_hits(name.library or "", base["family"], base["dtype"], name)
            if not name.function or name.library not in ("CUB", "flash-attention", "mem-efficient-attention"):
                return KernelMatch(**base, library=library, library_calls=library_calls, hits=lib_hits,
                                   notes=(*lib_notes, *name.notes))
        definition, launches, functors, hits, notes = self._kernel(name)
        if not (definition or functors or launches or hits) and name.kind == "kernel":
            guess = _unplaced(name)
            if guess is not None:  # a vendor's internal kernel: see Note [Kernels of no name]
                library, base["family"], sure = guess
                library_calls, lib_hits = self._library_hits(library, base["family"], base["dtype"], name)
                notes = ((f"no kernel of that name in ATen: by its name, a {library} {base['family']} kernel "
                          "(a library's internal kernel); the operators below call that routine",) if sure else
                         (f"no kernel of that name in ATen and the name does not say its library: a guess, "
                          f"{library} (kernels over floating-point data that no library names recognisably "
                          "are most often a solver's); the operators below call it",))
        if library is not None:  # Note [A library kernel's calls before names]
            hits = _merge(_merge(tuple(h for h in hits if h.step is not None), lib_hits),
                          tuple(h for h in hits if h.step is None))
        else:
            hits = _merge(hits, lib_hits)
        if library is None and definition is None and not launches:  # Note [Jiterator kernels are named as NVRTC's]
            jit_notes = self._jit_notes(name, functors)
            if jit_notes:
                library, base["family"], notes = JITERATOR, _jit_family(name.function), (*jit_notes, *notes)
        found = bool(definition or functors or launches or library or hits)
        nearest = () if found else tuple(self.nearest(name.function or name.raw))
        if not found:  # one line naming the tree's version (Note [Code of another version])
            notes = (unknown_kernel(name.function or name.raw, self.store.meta().get("pytorch_version", ""),
                                    nearest),)
            self._version_note = notes[0]
        return KernelMatch(**base, definition=definition, launches=launches, functors=functors, hits=hits,
                           library=library, library_calls=library_calls, notes=(*lib_notes, *notes, *name.notes),
                           version_note=self._version_note,
                           nearest=nearest)

    def _copy_hits(self, name: KernelName) -> tuple[list[FactRow], tuple[OperatorHit, ...]]:
        """(the calls that can issue a copy or fill, the operators above them): Note [Copies by direction]."""
        if name.kind == "memcpy":
            direction = direction_of(name.detail)
            said, unsaid = split_by_direction(self._calls_named(COPY_CALLS), direction)
            # Note [Pageable copies are the general copy's] in copies.py
            groups = [unsaid, said] if general_first(name.raw, direction) and unsaid else [said, unsaid]
            words = [{"copy": 0}] * 2  # a Memcpy is a copy: copy_ before bmm's staging copy
        else:
            groups = [self._calls_named(FILL_CALLS)]
            groups += [self._issuing_calls(lib, fam, "") for lib, fam in FILL_LIBRARIES]
            # each library's group ranked as that library's kernels are, by its family's words (a radix
            # sort's workspace: sort before embedding_dense_backward's sort of indices)
            words = [{}] + [{w: i for i, w in enumerate(FAMILY_WORDS.get(fam, "").split())} if fam else {}
                            for _lib, fam in FILL_LIBRARIES]
        ranked = [self._hits(self._candidates(self._scopes(g)), self._call_steps(g), w, {}, _cuda_key, library=True)
                  for g, w in zip(groups, words)]
        hits = _round_robin(ranked) if name.kind == "memset" else _merge(*ranked)
        return [r for g in groups for r in g], hits

    def _library_hits(self, library: str, family: str, dtype: str, name: KernelName
                      ) -> tuple[tuple[Step, ...], tuple[OperatorHit, ...]]:
        """(the ATen calls that can issue a kernel of ``library``'s ``family`` in ``dtype``, the
        operators above them, ranked). See Note [Issuing calls]."""
        inside = _inside_runner(library, family, name)
        if inside is not None:  # Note [Routines ATen never calls]
            library, family = inside
        batched = bool(family and _BATCHED.search(name.function)) or (library == "MAGMA" and bool(
            _MAGMA_BATCHED.search(name.function)))  # Note [MAGMA's batched kernels]
        calls = self._issuing_calls(library, family, dtype, batched=batched)
        if not family and name.kind == "library":  # Note [A library kernel's words in its calls]
            calls = _sharing_a_word(calls, name.function) or calls
        steps = tuple(_call_step(r, library_of(r.qual)) for r in calls[:30])
        words = name_words([name.function])
        ours = [f.rsplit("::", 1)[-1] for f in name.functors  # ATen's functors in a library's template (CUB's SumOp)
                if f.split("::", 1)[0] in ATEN_NAMESPACES and not _MACHINERY.search(f.replace("cub::", ""))]
        hint = FAMILY_WORDS.get(family, "") if family or (library in ("cuSOLVER", "MAGMA") and not batched) else ""
        if family == "scan" and std_words(name.demangled):
            # a scan of std::multiplies is a cumulative product: the operator is cum<what it computes>
            # (cumsum, cumprod), not the family's default word (cumsum)
            hint = " ".join(f"cum{w}" for w in std_words(name.demangled))
        own = merged(name_words(ours), std_words(name.demangled), {w: 20_000 + i for i, w in enumerate(hint.split())},
                     {"backward": 30_000} if _BACKWARD.search(name.function) else {})
        return steps, self._hits(self._candidates(self._scopes(calls)), self._call_steps(calls), own, words,
                                 _cuda_key, library=True)

    def _issuing_calls(self, library: str, family: str, dtype: str, batched: bool = False) -> list[FactRow]:
        """The calls of ``library``'s family that can issue a kernel of ``family`` in ``dtype``.

        Note [Issuing calls]
        ~~~~~~~~~~~~~~~~~~~~
        A library kernel is issued by one of ATen's calls into that library, and its name says which
        kind: a GEMM kernel comes from a GEMM call (``cublasSgemm``, ``cublasGemmEx``, ``cublasLtMatmul``,
        ``at::cuda::blas::gemm``), not from ``cublasLtMatmulDescCreate`` or ``cublasSdot``; a cuDNN
        ``dgrad`` kernel from the code computing a convolution's input gradient
        (``raw_cudnn_convolution_backward_input_out``); a cuSOLVER ``potrf`` kernel from a ``potrf`` call.
        So the calls kept are those whose callee holds the family's words, else those whose enclosing
        function does
        (``FAMILY_CALLS`` in kernelname/encoding.py), and of those, the ones whose name is for another
        type are dropped (``cublasDgemm`` for a float kernel; ``int8_gemm`` for anything but int8; see
        ``call_dtype``). tf32 kernels run float data, so float calls stay for them; a name that says no
        type of data (a solver's ``int`` helper kernel) drops only the calls for the types that name
        their kernels (``int8_gemm``, ``scaled_gemm``: ``i8``, ``e4m3``). A kernel whose name says it
        works on a batch and says its routine (``batch_trsm_left_kernel``) keeps the batched calls of
        that routine (``trsmBatched``) when there are some; a solver's helper that says no routine
        (``batch_eye_kernel``) keeps them all: a driver that is not batched runs it too. When nothing is
        left, every call of the family stays: a narrower answer that is wrong helps nobody."""
        calls = self._library_calls(library)
        words = FAMILY_CALLS.get(family)
        if words:
            rx = re.compile(words)

            calls = ([r for r in calls if rx.search(r.qual.rsplit("::", 1)[-1].lower())]
                     or [r for r in calls if rx.search(self._scope_qual(r).rsplit("::", 1)[-1].lower())] or calls)
        if library == "MAGMA":  # its own calls, not cuSOLVER's of the same family (Note [MAGMA's batched kernels])
            calls = [r for r in calls if library_of(r.qual) == library] or calls
        if batched:
            calls = [r for r in calls if "batched" in r.qual.rsplit("::", 1)[-1].lower()] or calls
        if not dtype:  # a name that says no type (cusolverDnXfill_kernel<int>: an int helper)
            return [r for r in calls if call_dtype(r.qual) not in _NARROW] or calls
        want = "float" if dtype == "tf32" else dtype
        typed = [r for r in calls if call_dtype(r.qual) in ("", want)
                 and not (call_dtype(self._scope_qual(r)) not in ("", want))]
        return typed or calls

    def _scope_qual(self, r: FactRow) -> str:
        scope = self.store.by_id(r.scope) if r.scope else None
        return scope.qual if scope is not None else ""

    def _hits(self, cands: list[Candidate], steps: dict[int, Step], own: dict[str, int], function: dict[str, int],
              keep=lambda _k: True, library: bool = False, denied: frozenset = frozenset(), affirmed: frozenset = frozenset(),
              reach: dict[str, int] | None = None, scalar: bool | None = None,
              inputs: int | None = None, said: dict[str, float] | None = None,
              signatures: frozenset = frozenset()) -> tuple[OperatorHit, ...]:
        """Candidates ranked (Note [Ranking operators for a kernel] in ranking.py), one hit per
        (operator, key), at most MAX_OPERATORS; ``reach``: how many operators each functor step reaches
        (Note [Specific steps first])."""
        reach = reach or {}
        keyed = [(rank_key(c, own, function, denied, reach.get(_step_of(steps, c), 0), scalar, affirmed,
                           few=inputs is not None and self._tensor_inputs(c.op) < inputs,
                           said=None if self._writes_out(c.op) else said,
                           mirrors=bool(signatures) and self._schema_kinds(c.op) in signatures), c)
                 for c in cands if keep(c.key)]
        # Note [Operators that share a step] in ranking.py: any walked operator comes before one found by
        # its name only
        walked = any(c.dist < NAMED_DIST for _k, c in keyed)
        best: dict[tuple[str, str], tuple[tuple, Candidate]] = {}
        for k, c in keyed:
            k = (k[0] or (walked and c.dist >= NAMED_DIST), *k[1:])
            if (c.op, c.key) not in best or k < best[(c.op, c.key)][0]:
                best[(c.op, c.key)] = (k, c)
        ranked = sorted(best.values(), key=lambda kc: kc[0])
        out = []
        top = ranked[0][1] if ranked else None
        for k, c in _distinct_first(ranked)[:MAX_OPERATORS]:
            step = steps.get(c.origin)
            tie = ""  # Note [Operators that share a step] in ranking.py
            if (top is not None and _base(c.op) != _base(top.op) and c.dist == top.dist < NAMED_DIST
                    and _step_of(steps, c) == _step_of(steps, top) != "" and not c.through and not top.through):
                tie = (f"; reaches the same step as aten::{top.op} in as many calls: the kernel's name cannot tell "
                       "them apart" + (f" (it spells {_base(top.op)})" if k[1] > ranked[0][0][1] else " (a tie)"))
            said = _SAID[library][k[1]]
            where = f"{step.symbol}" if step else "the kernel's code"
            if c.dist >= NAMED_DIST:
                how = "found by its name only (no call path from the kernel's code)"
            elif c.dist or c.direct:  # (a plain call's caller is as close as its callee: Note [Plain calls of a kernel])
                how = f"reaches {where} in {c.dist} call{'s' if c.dist != 1 else ''}"
            else:
                how = f"its kernel holds {where}"
            out.append(OperatorHit(f"aten::{c.op}", c.key, step,
                                   said + how + (f" (through structured_delegate {c.via})" if c.via else "")
                                   + (f"; calls aten::{c.through} on the way, which a profiler records as the "
                                      "launching operator" if c.through else "")
                                   + (f"; calls {c.direct} on the way, which skips the dispatcher: a profiler "
                                      "records this operator" if c.direct else "") + tie))
        return tuple(out)

    def _handed_launches(self) -> dict[str, list[FactRow]]:
        """kernel name -> the launches of a callback's parameter that the kernel is handed to (Note
        [Kernels passed to a callback] in callbacks.py: mem-efficient attention's ``kernel_fn``)."""
        if self.cache.handed is None:
            texts = passed.Texts(self.root, self.store.quoted_lines if self.store.quotes() else None)
            out: dict[str, list[FactRow]] = {}
            for launch in self.store.facts_of_kind(FactKind.LAUNCH):
                if not launch.name.isidentifier() or self.store.has_name(launch.name, (FactKind.GLOBAL,)):
                    continue
                for h in callbacks.kernels_handed(
                        texts.lines, launch, lambda name, _near: self.store.by_name(name, (FactKind.FUNCTION,)),
                        lambda name, _near: next(iter(self.store.by_name(name, (FactKind.GLOBAL,))), None)) or ():
                    if launch not in out.setdefault(h.kernel.name, []):
                        out[h.kernel.name].append(launch)
            self.cache.handed = out
        return self.cache.handed

    def _call_steps(self, calls: list[FactRow]) -> dict[int, Step]:
        """scope id -> the Step of its first call among ``calls``."""
        out: dict[int, Step] = {}
        for r in calls:
            if r.scope and r.scope not in out:
                out[r.scope] = _call_step(r, library_of(r.qual))
        return out

    def _kernel(self, n: KernelName) -> tuple[Step | None, tuple[Step, ...], tuple[Step, ...],
                                              tuple[OperatorHit, ...], tuple[str, ...]]:
        """(definition, launches, functors, ranked operators, notes) of a kernel ATen defines; see
        Note [Walking up to operators]."""
        notes: list[str] = []
        definition = None
        globals_ = _by_arity(self._by_qual(n.function, n.qualname, (FactKind.GLOBAL,)), n.params)
        if globals_:
            g = globals_[0]
            definition = Step(Role.KERNEL, g.qual, at(g.file, g.line), detail="__global__ function",
                              generated=g.generated)
            if len(globals_) > 1:
                notes.append(f"{len(globals_)} __global__ functions named {n.function}; showing the best match")
        launches, launch_steps = [], {}
        own_launches = self.store.by_name(n.function, (FactKind.LAUNCH,))
        handed = self._handed_launches().get(n.function, []) if definition is not None and not own_launches else []
        for launch in own_launches or handed:
            if definition is None or self._visible(launch.file, definition.file) or handed:
                fn = self.store.by_id(launch.scope) if launch.scope else None
                via = f"; {launch.name} is this kernel, handed to a callback" if handed else ""
                step = Step(Role.LAUNCH, (n.function if handed else launch.name) + launch.detail,
                            at(launch.file, launch.line), detail=(f"in {fn.qual}" if fn else "") + via,
                            generated=launch.generated)
                launches.append(step)
                if fn is not None:
                    launch_steps.setdefault(fn.id, step)
        functors, anchors, steps = self._anchors(n)
        if definition is None and not launches and n.namespaces[:1] and n.namespaces[0] in ATEN_NAMESPACES:
            self._missing.insert(0, _clean_qual(n.qualname))  # an ATen kernel this tree does not define
        if self._missing:  # Note [Code of another version]
            meta = self.store.meta()
            self._version_note = not_in_tree(self._missing, meta.get("pytorch_version", ""), meta.get("codegen") == "on")
            notes.append(self._version_note)
        if definition is None and not n.namespaces:
            jit_steps, jit_anchors, jit_map = self._jiterator(n.function)
            functors, anchors = functors + jit_steps, anchors + jit_anchors
            steps.update(jit_map)
        device_ok = _cuda_key if definition is not None or n.kind == "kernel" else (lambda _k: True)
        own_names = [lam.enclosing_name for lam in n.lambdas if not lam.wraps] + \
            [f.rsplit("::", 1)[-1] for f in _functors(n) if not _MACHINERY.search(f)] + \
            [s.symbol for s in functors if s.role == Role.JIT]
        words = name_words([n.function])
        yes, no, f_yes, f_no = self._all_flags(n, definition)
        own = merged(name_words(own_names), std_words(n.demangled), {w: -1 for w in name_words(yes)},
                     joining_words(own_names))  # Note [Joining words that name an operator] in ranking.py
        denied = frozenset(name_words(no)) - set(own) - set(words)
        yes, denied = yes + f_yes, denied | (frozenset(name_words(f_no)) - set(name_words(f_yes)))
        cands = self._candidates(anchors)
        # a functor the tree has whose users lead to no operator (cdist's dists<float>::zero, a tag type
        # handed to the kernel as a template argument): the launch sites are the specific code left
        found_functor = any(_is_functor(s) for s in functors)
        if not [c for c in cands if device_ok(c.key)] and launch_steps and (not own_names or found_functor):
            launchers = [f for f in (self.store.by_id(i) for i in launch_steps) if f is not None]
            cands, steps = self._candidates(launchers), launch_steps
            if cands and anchors:
                notes.append("operators found from the kernel's launch sites (its functor/lambda led nowhere)")
        # not a vendor kernel by its name (a CUB kernel's words are CUB's: SingleTile is no aten::tile)
        ours = definition is not None or (_unplaced(n) is None and n.kind != "library")
        cands = cands + self._named(own_names if own_names else [n.function] if not cands and ours else [])
        if self._together:  # Note [Functors made together]
            cands = [c if c.origin in self._together else dataclasses.replace(c, partial=True) for c in cands]
        hits = self._hits(cands, steps, own, words, device_ok, denied=denied, affirmed=frozenset(name_words(yes)),
                          reach=self._step_reach(anchors, steps, device_ok),
                          scalar=scalar_operand_form(n.functors),  # Note [Scalar operands of a binary kernel]
                          inputs=self._loop_inputs(n),  # Note [Operands a loop kernel was given]
                          said=overload_words([*own_names, n.function]),  # Note [Overloads a kernel's name says]
                          # Note [A kernel function's parameters mirror its overload] in ranking.py
                          signatures=frozenset(k for lam in n.lambdas if not lam.wraps
                                               for k in [signature_kinds(lam.signature)] if k))
        return definition, tuple(launches), tuple(functors), hits, tuple(notes)

    def _step_reach(self, anchors: list[FactRow], steps: dict[int, Step], device_ok) -> dict[str, int]:
        """functor step -> how many operators (base names) its own walk reaches, for a name of two
        functor steps or more (the shared walk gives each function to the first step that meets it).
        See Note [Specific steps first] in ranking.py."""
        by_step: dict[str, list[FactRow]] = {}
        for a in anchors:
            step = steps.get(a.id)
            if _is_functor(step):
                by_step.setdefault(step.symbol, []).append(a)
        if len(by_step) < 2:
            return {}
        return {sym: len({_base(c.op) for c in self._candidates(fns) if device_ok(c.key)})
                for sym, fns in by_step.items()}

    def _flags(self, n: KernelName, launches: list[FactRow]) -> tuple[list[str], list[str], list[str], list[str]]:
        """(identifiers at the name's ``true`` template arguments, at its ``false`` ones, the callers that
        hand the launching template the name's template arguments, those that hand it others), from the
        first launch line that gives as many template arguments. See Note [Template flags of a kernel]
        and Note [Template arguments handed down by callers] in kernelflags.py."""
        if self.root is None or not n.template_args:
            return [], [], [], []
        for r in launches[:4]:
            if r.generated:
                continue
            args = launch_template_args(read_launch_lines(self.root, r.file, r.line), n.function)
            if args is not None and len(args) == len(n.template_args):
                yes, no = flag_idents(n.template_args, args)
                fn = self.store.by_id(r.scope) if r.scope else None
                given = {ident.strip(): value for value, ident in zip(n.template_args, args)}
                return (yes, no, *self._handed(fn, given))
        return [], [], [], []

    def _handed(self, fn: FactRow | None, given: dict[str, str], depth: int = 0) -> tuple[list[str], list[str]]:
        """(the callers of template ``fn`` that hand it the template arguments ``given`` (parameter ->
        the value the kernel's name shows), of those that hand it others), followed up through a caller
        that passes its own template parameter on (three levels at most). See Note [Template arguments
        handed down by callers] in kernelflags.py."""
        if fn is None or fn.generated or depth > 2:
            return [], []
        params = template_params(read_launch_lines(self.root, fn.file, fn.line, before=3, after=0)) or []
        wanted = {i: literal_arg(given[p]) for i, p in enumerate(params) if p in given and literal_arg(given[p])}
        if not wanted:
            return [], []
        key = (fn.id, tuple(sorted(wanted.items())), depth)  # a deeper ask is cut off sooner: its own entry
        if key in self.cache.handed_args:
            return self.cache.handed_args[key]
        agree: list[str] = []
        differ: list[str] = []
        for call, caller in self.store.callers(fn.name)[:20]:
            if caller is None or call.generated:
                continue
            args = launch_template_args(read_launch_lines(self.root, call.file, call.line, before=0, after=1), fn.name)
            said = {i: literal_arg(args[i]) for i in wanted if args and i < len(args)}
            if any(v and v != wanted[i] for i, v in said.items()):
                differ.append(caller.name)
                continue
            # the caller's own template parameters, handed on: ask its callers
            up = {args[i].strip(): wanted[i] for i in said if not said[i]}
            a, d = self._handed(caller, up, depth + 1) if up else ([], [])
            if a or d:
                agree, differ = agree + a, differ + d
            elif any(said.values()):
                agree.append(caller.name)
        self.cache.handed_args[key] = (agree, [d for d in differ if d not in agree])
        return self.cache.handed_args[key]

    def _all_flags(self, n: KernelName, definition: FactRow | None) -> tuple[list[str], list[str], list[str], list[str]]:
        """(the launch's ``true`` flags, its ``false`` ones, the other names that say what the kernel is,
        those that say what it is not: a functor's flags and the callers that hand its templates their
        arguments), read from the source once per name and Index. See Note [Template flags of a kernel],
        Note [Template flags of a functor] and Note [Template arguments handed down by callers] in
        kernelflags.py."""
        if n.raw not in self.cache.flags:
            yes, no, handed, withheld = self._flags(n, [r for r in self.store.by_name(n.function, (FactKind.LAUNCH,))
                                                        if definition is None or self._visible(r.file, definition.file)])
            f_yes, f_no = self._functor_flags(n)
            l_yes, l_no = self._lambda_handed(n)
            self.cache.flags[n.raw] = (yes, no, f_yes + handed + l_yes, f_no + withheld + l_no)
        return self.cache.flags[n.raw]

    def _loop_inputs(self, n: KernelName) -> int | None:
        """The device inputs a loop kernel was given: its ``std::array<char*, N>`` (N - 1), else the
        parameters of its loop functor's ``operator()`` (Note [Operands a loop functor takes] in
        ranking.py); None when neither says."""
        inputs = device_inputs(n.demangled)
        short = loop_functor(n.demangled) if inputs is None and self.root is not None else ""
        if short and short not in self.cache.call_operands:
            self.cache.call_operands[short] = None
            for c in self._by_qual(short, short, (FactKind.CLASS,))[:1]:
                if c.end_line and not c.generated:
                    self.cache.call_operands[short] = call_operands(read_launch_lines(
                        self.root, c.file, c.line, before=0, after=min(c.end_line - c.line, 60)))
        return self.cache.call_operands[short] if short else inputs

    def _lambda_handed(self, n: KernelName) -> tuple[list[str], list[str]]:
        """(callers that hand a lambda's enclosing template the arguments the name shows, those that hand
        it others). See Note [Template arguments handed down by callers] in kernelflags.py."""
        agree: list[str] = []
        differ: list[str] = []
        if self.root is None:
            return agree, differ
        for lam in n.lambdas:
            args = template_args_of(n.demangled, lam.enclosing_name) if not lam.wraps and lam.enclosing_name else None
            if not args or not any(literal_arg(a) for a in args):
                continue
            for fn in self.store.by_name(lam.enclosing_name, (FactKind.FUNCTION,))[:2]:
                params = template_params(read_launch_lines(self.root, fn.file, fn.line, before=3, after=0)) or []
                if len(params) == len(args):
                    a, d = self._handed(fn, dict(zip(params, args)))
                    agree, differ = agree + a, differ + d
        return agree, differ

    def _functor_flags(self, n: KernelName) -> tuple[list[str], list[str]]:
        """(parameters at a functor's ``true`` template arguments, at its ``false`` ones), paired with the
        ``template <...>`` line above the functor's definition. See Note [Template flags of a functor]
        in kernelflags.py."""
        yes: list[str] = []
        no: list[str] = []
        if self.root is None:
            return yes, no
        for functor in _functors(n):
            short = functor.rsplit("::", 1)[-1]
            if _MACHINERY.search(functor) or not short:
                continue
            args = template_args_of(n.demangled, short)
            if not args or not any(a in ("true", "false") for a in args):
                continue
            for c in self._by_qual(short, functor, (FactKind.CLASS,))[:1]:
                params = template_params(read_launch_lines(self.root, c.file, c.line, before=3, after=0))
                if params is not None:
                    y, f = bool_flags(args, params)
                    yes, no = yes + y, no + f
        return yes, no

    def _jiterator(self, function: str) -> tuple[list[Step], list[FactRow], dict[int, Step]]:
        """The jitted launches of a jiterator kernel (``lgamma_kernel_vectorized4_kernel``).

        Note [Jiterator kernel names]
        ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
        A jiterator kernel is compiled by NVRTC at run time and named after the string the launching
        code hands it: ``jitted_gpu_kernel</*name=*/lgamma_name, ...>(iter, lgamma_string)`` with
        ``char lgamma_name[] = "lgamma_kernel"`` runs as ``lgamma_kernel_kernel`` or, vectorized,
        ``lgamma_kernel_vectorized4_kernel`` (aten/src/ATen/native/cuda/jit_utils.cpp builds the name
        from the string, ``_vectorized<N>`` and ``_kernel``). So the kernel name gives the string, the
        string its ``jit_name`` fact (extract/jiterator.py), and the variable the ``jitted_gpu*`` calls
        that name it in their template arguments: their functions are where the walk up starts."""
        steps, anchors, by_anchor = [], [], {}
        reduction = function.startswith("reduction_")  # reduction_template.cuh's `reduction_${name}_kernel`
        for text, var in self._jit_strings(function):
            for call in self._targ_calls(var.name):
                fn = self.store.by_id(call.scope) if call.scope else None
                if fn is None or "jitted_gpu" not in call.name or not self._visible(call.file, var.file):
                    continue
                if reduction and not function.startswith(text) and "reduce" not in call.name:
                    continue  # the name of a jitted reduction is made only by jitted_gpu_reduce_kernel
                step = Step(Role.JIT, f'{var.name} = "{text}"', at(call.file, call.line),
                            detail=f"jiterator: compiled at run time from the string named at {var.file}:{var.line}, "
                                   f"launched by {call.name} in {fn.qual}", generated=call.generated)
                steps.append(step)
                anchors.append(fn)
                by_anchor.setdefault(fn.id, step)
        return steps, anchors, by_anchor

    def _jit_strings(self, function: str) -> list[tuple[str, FactRow]]:
        """(string, its ``jit_name`` fact) for each string of the tree a jiterator kernel of this name
        can be compiled from (Note [Jiterator kernel names]); [] for a name of another shape."""
        m = _JIT_NAME.fullmatch(function)
        if not m:
            return []
        if self.cache.jit_names is None:
            self.cache.jit_names = {}
            for f in self.store.facts_of_kind(FactKind.JIT_NAME):
                self.cache.jit_names.setdefault(f.arg, []).append(f)
        texts = {m.group(1), function.removesuffix("_kernel")}
        if m.group(1).startswith("reduction_"):
            texts.add(m.group(1).removeprefix("reduction_"))
        return [(text, var) for text in sorted(texts) for var in self.cache.jit_names.get(text, ())]

    def _jit_notes(self, n: KernelName, functors: tuple[Step, ...]) -> tuple[str, ...]:
        """The notes of a jiterator kernel (Note [Jiterator kernels are named as NVRTC's]), () for a name
        that is none: one whose jitted call was found (a ``jit`` step), or whose string the tree names
        though the call was not read, or, with no string in this tree, a name of the vectorized shape
        only jit_utils.cpp makes (``<name>_vectorized<N>_kernel``, no namespace, no parameter list: then
        also the line naming the tree's version, Note [Code of another version])."""
        if n.kind != "kernel" or n.namespaces or n.params is not None:
            return ()
        family = _jit_family(n.function)
        maker = "reduction_template.cuh" if family == "reduction" else "jit_utils.cpp"
        head = f"jiterator kernel ({family}): ATen's code, compiled by NVRTC at run time"
        tail = f"; no source file holds this name ({maker} makes it)"
        if any(s.role == Role.JIT for s in functors):
            return (f"{head} from the string its jit line names{tail}",)
        strings = self._jit_strings(n.function)
        if strings:
            text, var = strings[0]
            return (f'{head} from the string "{text}" named at {var.file}:{var.line} (its jitted_gpu_* call was '
                    f"not read){tail}",)
        if not _JIT_VECTORIZED.fullmatch(n.function):
            return ()
        meta = self.store.meta()
        self._version_note = not_in_tree([f'the jiterator string "{_JIT_NAME.fullmatch(n.function).group(1)}"'],
                                         meta.get("pytorch_version", ""), meta.get("codegen") == "on")
        return (f"{head}, by its name's shape{tail}", self._version_note)

    def _named(self, names: list[str]) -> list[Candidate]:
        """Operators whose base name a kernel's own names spell (``MaxOps`` -> ``max``,
        ``GroupNormKernelImplInternal`` -> ``native_group_norm``), for when the call graph does not
        lead to them; ranked after every walked one (Note [Operators that share a step] in ranking.py)."""
        out: list[Candidate] = []
        for base in _bases(names):
            for op in self._by_base(base):
                for key in self._op_keys(op):
                    out.append(Candidate(op, key, NAMED_DIST, 0))
        return out

    def _by_base(self, base: str) -> list[str]:
        if base not in self.cache.bases:
            self.cache.bases[base] = self.store.operators_by_base(base)
        return self.cache.bases[base]

    def _op_keys(self, op: str) -> list[str]:
        """The dispatch keys of ``op`` (its delegate's for a structured one)."""
        if self.cache.keys is None:
            keys: dict[str, list[str]] = {}
            for o, key, _k in self.store.dispatch_rows():
                keys.setdefault(o, []).append(key)
            self.cache.keys = keys
            self.cache.delegate_of = self.store.delegates()
        # a structured_delegate's keys and its own (cat: CUDA through cat.out, SparseCUDA of its own)
        own = self.cache.keys.get(op, [])
        return own + [k for k in self.cache.keys.get(self.cache.delegate_of.get(op, ""), []) if k not in own]

    def _anchors(self, n: KernelName) -> tuple[list[Step], list[FactRow], dict[int, Step]]:
        """(functor/lambda steps, the functions to walk up from, anchor id -> its step): the most
        specific code the name points at, the loop machinery's lambdas left out (``LambdaRef.wraps``),
        the functions of CUDA files first. See Note [Walking up to operators]."""
        functors: list[Step] = []
        anchors: list[FactRow] = []
        steps: dict[int, Step] = {}
        self._missing = []
        for lam in n.lambdas:
            if lam.wraps:
                continue
            encl = _clean_qual(lam.enclosing)
            last = encl.rsplit("::", 1)[-1] if "operator()" not in encl else "operator()"
            fns = self._by_qual(last, encl, (FactKind.FUNCTION, FactKind.IMPL_FUNC, FactKind.GLOBAL), strict=True)
            fns.sort(key=lambda f: devices.file_device(f.file) != "cuda")  # stable: the best match first
            owner = encl.rsplit("::", 1)[0] if last == "operator()" else encl  # a method's lambda: its class
            if not fns and not self.store.by_name(owner.rsplit("::", 1)[-1], (FactKind.CLASS, FactKind.FUNCTION)):
                self._missing.append(owner)  # Note [Code of another version]
            for fn in fns[:2]:
                line, approx = self._lambda_line(fn, lam)
                step = Step(Role.CALL, f"{fn.qual}::{{lambda #{lam.ordinal}}}", at(fn.file, line or fn.line),
                            detail=f"lambda in {fn.qual} ({fn.file}:{fn.line})"
                            + ("; position approximate" if approx else ""), generated=fn.generated)
                functors.append(step)
                anchors.append(fn)
                steps.setdefault(fn.id, step)
        users: dict[int, set[str]] = {}
        named: list[str] = []  # template arguments that name no class of the tree
        shorts = {f.rsplit("::", 1)[-1] for f in _functors(n) if not _MACHINERY.search(f)} - {""}
        for functor in _functors(n):
            short = functor.rsplit("::", 1)[-1]
            if _MACHINERY.search(functor) or not short:
                continue
            classes = self._by_qual(short, functor, (FactKind.CLASS,))[:2]
            for c in classes:
                step = Step(Role.CALL, c.qual, at(c.file, c.line), detail=_FUNCTOR_DETAIL,
                            generated=c.generated)
                functors.append(step)
                for a in self._users_of_class(c) + self._operator_methods(c):
                    anchors.append(a)
                    steps.setdefault(a.id, step)
                    users.setdefault(a.id, set()).add(short)
            if not classes:
                named.append(functor)
        # Note [Functors made together]: the code that makes every functor of the name at once
        self._together = {a for a, used in users.items() if len(shorts) >= 2 and used >= shorts}
        if not anchors:  # Note [Functions named in template arguments]
            for functor in named:
                fns = self._by_qual(functor.rsplit("::", 1)[-1], functor, (FactKind.FUNCTION,), strict=True)[:2]
                for fn in fns:
                    step = Step(Role.CALL, fn.qual, at(fn.file, fn.line), detail=_TRANSFORM_DETAIL,
                                generated=fn.generated)
                    functors.append(step)
                    anchors.append(fn)
                    steps.setdefault(fn.id, step)
                if not fns and functor.split("::", 1)[0] in ATEN_NAMESPACES:
                    self._missing.append(functor)
        return functors, anchors, steps

    # ---- where ------------------------------------------------------------------------------
    def where(self, file: str, line: int | None = None, function: str | None = None) -> Where:
        """The function at ``file:line`` (or named ``function`` in ``file``) and the operators
        whose chains pass through it; AtenmapError when there is none."""
        rows = self.store.in_file_like(file, (FactKind.FUNCTION, FactKind.IMPL_FUNC, FactKind.GLOBAL, FactKind.META_FUNC))
        if not rows:
            raise AtenmapError(f"no indexed file matches {file!r} (give a path relative to the source root, "
                               "e.g. aten/src/ATen/native/cuda/Loops.cuh)")
        files = sorted({r.file for r in rows})
        if len(files) > 1:
            exact = [f for f in files if f == file or f.endswith("/" + file)]
            if len(exact) != 1:
                raise AtenmapError(f"{file!r} matches {len(files)} files: {', '.join(files[:5])}")
            rows = [r for r in rows if r.file == exact[0]]
        if function is not None:
            fns = [r for r in rows if r.name == function or r.qual.endswith("::" + function)]
            if not fns:
                raise AtenmapError(f"no function {function!r} in {rows[0].file}")
        else:
            fns = [r for r in rows if r.line <= (line or 0) <= r.end_line]
            if not fns:
                raise AtenmapError(f"{file}:{line}: not inside a function the index knows")
            fns = [min(fns, key=lambda r: r.end_line - r.line)]
        dev = devices.file_device(fns[0].file)
        ops = self._operators_from(fns, limit=100_000)
        if dev in ("cuda", "cpu", "mps"):
            ops = [o for o in ops if devices.key_device(o.rsplit("[", 1)[-1].rstrip("]")) in (dev, "any")]
        fn = fns[0]
        return Where(fn.qual, Location(fn.file, fn.line), fn.end_line, tuple(ops))

    # ---- the upward walk ----------------------------------------------------------------------
    def _operators_from(self, anchors: list[FactRow], limit: int) -> list[str]:
        """Labels (``aten::op [KEY]``) of the operators above ``anchors``, nearest first. See Note
        [Walking up to operators]."""
        out = list(dict.fromkeys(f"aten::{c.op} [{c.key}]" for c in sorted(
            self._candidates(anchors), key=lambda c: c.dist + bool(c.via))))  # stable: the walk's order
        return out[:limit]

    def _candidates(self, anchors: list[FactRow]) -> list[Candidate]:
        """Every operator above ``anchors`` with its distance and the anchor it came from (cached per
        set of anchors). See Note [Walking up to operators]."""
        key = tuple(sorted({a.id for a in anchors if a is not None}))
        if not key:
            return []
        if key not in self.cache.ops:
            self.cache.ops[key] = self._walk([a for a in anchors if a is not None])
        return self.cache.ops[key]

    def _walk(self, anchors: list[FactRow]) -> list[Candidate]:
        kernel_ops = self._kernel_table()
        found: list[Candidate] = []
        queue = deque((a, 0, a.id, "", "", None) for a in anchors)
        visited = {a.id for a in anchors}
        while queue and len(visited) < MAX_VISITED:
            fn, dist, origin, through, direct, plain = queue.popleft()
            mine = [(op, key) for op, key in kernel_ops.get(fn.name, ()) if self._kernel_matches(fn, key)]
            wrapped = self._registered_ops(fn)
            mine += wrapped
            found.extend(Candidate(op, key, plain[1] if plain and _base(op) in plain[0] else dist, origin,
                                   through=through, direct=direct) for op, key in mine)
            if wrapped or dist >= MAX_DISTANCE:  # a generated wrapper's callers are generated code
                continue
            # Note [Operators that call operators]: what is above an operator's own kernel runs it
            own = next((op for op, key in mine if devices.key_device(key) in ("cuda", "any")), "")
            # Note [Plain calls of a kernel]: a kernel function named like no at:: function, or called
            # as at::native::X, is run by its caller with no record of its own operator
            bare = own and not through and fn.name not in self._api_names()
            plain_callers = self._plain_callers(fn) if own and not through else frozenset()
            for nxt in self._up(fn):
                if nxt.id not in visited:
                    visited.add(nxt.id)
                    if bare or nxt.id in plain_callers:
                        queue.append((nxt, dist + 1, origin, through, direct or
                                      f"{clean_namespace(fn.qual.rpartition('::')[0]) or 'at::native'}::{fn.name}",
                                      (frozenset(_base(op) for op, _k in mine), dist)))
                    else:
                        queue.append((nxt, dist + 1, origin, through or own, direct, plain))
            # Note [Direct backend calls]: at::cuda::eq(...) runs eq's kernel with no record of aten::eq
            for op, key in [(o, k) for op, k in mine for o in (op, *self._delegating(op))]:
                for nxt in direct_callers(self.store, self.cache.direct, op, key):
                    if nxt.id not in visited:
                        visited.add(nxt.id)
                        queue.append((nxt, dist + 1, origin, through,
                                      direct or f"at::{key.lower()}::{cpp_names(op)[0]}", plain))
        # operators that run these through structured_delegate: as close as their delegate
        extra = [Candidate(d, c.key, c.dist, c.origin, via=c.op, through=c.through, direct=c.direct)
                 for c in found for d in self._delegating(c.op)]
        return found + extra

    def _plain_callers(self, fn: FactRow) -> frozenset[int]:
        """The ids of the functions that call ``fn`` spelled ``native::NAME`` (``at::native::take_out(...)``):
        a plain C++ call, whatever ``at::`` function shares the name (Note [Plain calls of a kernel])."""
        if fn.id not in self.cache.plain:
            self.cache.plain[fn.id] = frozenset(
                caller.id for call, caller in self.store.callers(fn.name)
                if caller is not None and re.search(r"(?:\A|::)native::\w+\Z", strip_templates(call.qual)))
        return self.cache.plain[fn.id]

    def _tensor_inputs(self, op: str) -> int:
        """How many tensors overload ``op`` takes as inputs (its ``out=`` tensors left out; a large number
        when its schema is not read): Note [Operands a loop kernel was given] in ranking.py."""
        if op not in self.cache.tensor_inputs:
            rec = self.store.operator_record(op)
            self.cache.tensor_inputs[op] = tensor_inputs(rec["schema"]) if rec and rec.get("schema") else 99
        return self.cache.tensor_inputs[op]

    def _writes_out(self, op: str) -> bool:
        """Whether overload ``op`` is an ``out=`` form (a mutable tensor after ``*``): its overload name is
        its output argument's (``avg_pool3d_backward.grad_input``), which says what a kernel writes, not
        which overload ran (Note [Overloads a kernel's name says] in ranking.py)."""
        if op not in self.cache.writes_out:
            rec = self.store.operator_record(op)
            args = (rec.get("schema") or "").split(") ->")[0] if rec else ""
            self.cache.writes_out[op] = bool(re.search(r"\*.*Tensor\([a-z]!\)", args))
        return self.cache.writes_out[op]

    def _schema_kinds(self, op: str) -> tuple[str, ...] | None:
        """The kinds of overload ``op``'s arguments (Note [A kernel function's parameters mirror its
        overload] in ranking.py); None when its schema is not read."""
        if op not in self.cache.schema_kinds:
            rec = self.store.operator_record(op)
            self.cache.schema_kinds[op] = schema_kinds(rec["schema"]) if rec and rec.get("schema") else None
        return self.cache.schema_kinds[op]

    def _api_names(self) -> frozenset[str]:
        """Every operator's possible ``at::`` function names (``where``, ``where_out``, ``where_outf``): a call of a
        kernel function by another name is a plain C++ call (Note [Plain calls of a kernel])."""
        if self.cache.api_names is None:
            # every base with _out/_outf: an out= overload's C++ name is not its overload's (grad_input)
            bases = {op.split(".")[0] for op in self.store.operator_names()}
            self.cache.api_names = frozenset(n for b in bases for n in (b, b + "_out", b + "_outf"))
        return self.cache.api_names

    def _delegating(self, op: str) -> list[str]:
        if op not in self.cache.delegates:
            self.cache.delegates[op] = self.store.delegating_to(op)
        return self.cache.delegates[op]

    def _up(self, fn: FactRow) -> list[FactRow]:
        """Functions one step up from ``fn``: its callers, and the callers of stubs it is registered for
        (cached: the walks of different kernels meet in the same functions)."""
        if fn.id not in self.cache.up:
            self.cache.up[fn.id] = self._up_uncached(fn)
        return self.cache.up[fn.id]

    def _up_uncached(self, fn: FactRow) -> list[FactRow]:
        out = []
        names = [fn.name]
        if fn.kind == FactKind.FUNCTION and fn.name == "operator()":
            return self._users_of_class_of(fn)
        stubs: dict[str, str] = {}  # a stub's name -> the namespace of the stub registered (Note [Stubs of one name])
        for reg in self._registrations().get(fn.name, ()):
            if reg.file == fn.file or self._visible(reg.file, fn.file):
                names.append(reg.name)  # the stub
                stubs[reg.name] = self._stub_namespace(reg.name, reg.namespace or "", "")
        # C++: a function of an anonymous namespace in a .cpp/.cu is its translation unit's alone (UniqueCub.cu's
        # compute_unique is not Unique.cu's, whatever headers the two share): callers in its own file only
        local = ANONYMOUS in fn.qual and fn.file.rpartition(".")[2] in ("cpp", "cu", "cc")
        for name in names:
            for call, caller in self.store.callers(name):
                if caller is None:
                    continue
                if name == fn.name and call.file != fn.file and (local or (
                        not self._visible(call.file, fn.file) and not self._defined_once(fn))):
                    continue
                if name == fn.name and not self._may_call(call, caller, fn):
                    continue
                if name != fn.name and stubs.get(name) and self._stub_namespace(
                        name, strip_templates(caller.qual).rpartition("::")[0], call.qual.rpartition("::")[0]) != stubs[name]:
                    continue  # another namespace's stub of that name (Note [Stubs of one name])
                out.append(caller)
        if not out and fn.kind == FactKind.FUNCTION:
            # a method called only through a template parameter (l.template launch<...>() in
            # run_launcher): up to where its object is made. See Note [Launcher objects] in chain.py.
            out = self._users_of_class_of(fn)
        return out

    # Note [Stubs of one name]
    # ~~~~~~~~~~~~~~~~~~~~~~~~
    # Two DispatchStubs may share a name in different namespaces: Copy.h declares at::native::copy_stub
    # (the tensor copy, which cuda/Copy.cu's copy_kernel_cuda is registered for) and CPUBlas.h
    # at::native::cpublas::copy_stub (a BLAS-style strided copy). A bare ``copy_stub(...)`` inside
    # namespace at::native::cpublas is the second (C++ looks a name up from the innermost enclosing
    # namespace out), so the walk up from a registered kernel crosses only the calls that name the
    # stub it is registered for; otherwise cpublas::copy, whose name is an operator's kernel (``copy``),
    # is taken for a caller of the CUDA copy kernel and ranks above ``copy_``. A stub declared in one
    # namespace only is every call's.
    def _stub_namespace(self, name: str, scope: str, qualifier: str) -> str:
        """The namespace of the DispatchStub ``name`` that a use inside namespace ``scope``, qualified by
        ``qualifier`` (``cpublas`` for ``cpublas::copy_stub``; empty when bare), refers to: C++'s lookup,
        from the innermost enclosing namespace out. Empty when no declaration is found. See Note
        [Stubs of one name]."""
        if self.cache.stub_ns is None:
            declared: dict[str, set[str]] = {}
            for r in self.store.facts_of_kind(FactKind.DECLARE_DISPATCH):
                declared.setdefault(r.name, set()).add(clean_namespace(r.namespace or ""))
            self.cache.stub_ns = declared
        spaces = self.cache.stub_ns.get(name, set())
        if len(spaces) < 2:  # one declaration: every use is of it
            return next(iter(spaces), "")
        parts = [p for p in clean_namespace(scope).split("::") if p]
        qualifier = clean_namespace(qualifier.removeprefix("::"))
        for i in range(len(parts), -1, -1):
            ns = "::".join([*parts[:i], *([qualifier] if qualifier else [])])
            if ns in spaces:
                return ns
        return ""

    def _may_call(self, call: FactRow, caller: FactRow, fn: FactRow) -> bool:
        """Whether ``call`` (of ``fn``'s name, in ``caller``) can be a call of ``fn``: See Note [Member
        calls by name]."""
        own = _class_of(fn)
        if not own:  # a free function: `x.sum()` (Tensor::sum) reaches at::native::sum through the dispatcher
            return True
        called = call.qual.rpartition("::")[0].rpartition("::")[2]  # TensorDescriptor of TensorDescriptor::set
        if called and called != own and self._is_class(called):
            return False
        if "::" not in call.qual and call.detail != "member":  # set(...) in a method: its own class's first
            theirs = _class_of(caller)
            return not theirs or theirs == own or not any(
                _class_of(f) == theirs for f in self.store.by_name(fn.name, (FactKind.FUNCTION,)) if f.file == caller.file
                or f.qual.endswith(f"::{theirs}::{fn.name}"))
        if call.detail != "member" or any(call.arg.count(a) != call.arg.count(b) for a, b in ("()", "[]", "{}")):
            return True  # a call fact keeps each argument's first characters: a cut one cannot be counted
        m = _PARAMS.search(fn.arg)
        if m is None:
            return True
        args = [a.strip() for a in split_args(call.arg) if a.strip()]
        most = int(m.group(1))
        least = most - int(d.group(1)) if (d := _DEFAULTS.search(fn.arg)) else most
        if len(args) > most or (len(args) < least and self._in_class_body(fn, own)):
            return False
        kinds = t.group(1) if (t := _TYPES.search(fn.arg)) else ""
        return not any(_misfit(k, a) for k, a in zip(kinds, args))

    def _in_class_body(self, fn: FactRow, own: str) -> bool:
        """Whether method ``fn`` is defined inside its class's body, where its defaults are written
        (out of it, a definition does not repeat the declaration's: Note [Member calls by name])."""
        return any(c.file == fn.file and c.line <= fn.line <= (c.end_line or c.line)
                   for c in self.store.by_name(own, (FactKind.CLASS,)))

    def _is_class(self, name: str) -> bool:
        if name not in self.cache.classes:
            self.cache.classes[name] = bool(self.store.by_name(name, (FactKind.CLASS,)))
        return self.cache.classes[name]

    def _defined_once(self, fn: FactRow) -> bool:
        """Whether ``fn`` is the only function of its name in the index: a call of that name from a file
        that sees only a declaration of it (``ScanKernels.h`` declares, ``CumsumKernel.cu`` defines
        ``launch_cumsum_cuda_kernel``) can mean no other definition."""
        if fn.generated:
            return False
        if fn.name not in self.cache.once:
            self.cache.once[fn.name] = len(self.store.by_name(fn.name, (FactKind.FUNCTION, FactKind.IMPL_FUNC))) == 1
        return self.cache.once[fn.name]

    def _registered_ops(self, fn: FactRow) -> list[tuple[str, str]]:
        """(operator, key) whose generated wrapper is ``fn`` (m.impl("op", TORCH_FN(fn)))."""
        if not fn.generated or not fn.name.startswith("wrapper_"):
            return []
        if fn.id in self.cache.reg_ops:
            return self.cache.reg_ops[fn.id]
        out = self.cache.reg_ops[fn.id] = []
        if fn.file not in self.cache.impls:  # the m.impl lines of one generated file, read once
            self.cache.impls[fn.file] = self.store.torch_impls_of("", fn.file)
        for r in (r for r in self.cache.impls[fn.file] if fn.name in r.arg):
            scope = self.store.by_id(r.scope) if r.scope else None
            key = scope.arg.strip("()").split(",")[1].strip() if scope and "," in scope.arg else "?"
            out.append((r.name, key))
        return out

    def _kernel_matches(self, fn: FactRow, key: str) -> bool:
        if fn.kind == FactKind.IMPL_FUNC:
            return True
        if fn.kind != FactKind.FUNCTION or "native" not in fn.namespace.split("::"):
            return False
        if _clean_qual(fn.qual) != f"{clean_namespace(fn.namespace)}::{fn.name}" and not fn.generated:
            # a method (SmallBitonicSort::sort in cuda/Sort.cu) is no operator's kernel: the yaml names
            # free functions of at::native, whatever their name
            return False
        return devices.file_allowed(fn.file, devices.key_device(key)) or fn.generated

    def _kernel_table(self) -> dict[str, list[tuple[str, str]]]:
        if self.cache.kernel_ops is None:
            table: dict[str, list[tuple[str, str]]] = {}
            for op, key, kernel in self.store.dispatch_rows():
                table.setdefault(kernel, []).append((op, key))
            self.cache.kernel_ops = table
        return self.cache.kernel_ops

    def _users_of_class(self, cls: FactRow) -> list[FactRow]:
        """Functions that construct or declare the functor ``cls`` (in files that can see it)."""
        out = []
        for call, caller in self.store.callers(cls.name):
            if caller is not None and (call.file == cls.file or self._visible(call.file, cls.file)):
                out.append(caller)
        for call, caller in self.store.callers(f"{cls.name}::operator()", by_qual=True):
            if caller is not None:
                out.append(caller)
        # a class handed to a template as an argument (uniform_impl_<UniformStub, Generator>(...)):
        # looked for only when nothing else uses it (reading the template arguments costs ~0.2 s, once)
        for call in self._targ_calls(cls.name) if not out else ():
            caller = self.store.by_id(call.scope) if call.scope else None
            if caller is not None and (call.file == cls.file or self._visible(call.file, cls.file)):
                out.append(caller)
        return out

    def _targ_calls(self, name: str) -> list[FactRow]:
        """The calls naming identifier ``name`` in their explicit template arguments (the table of
        words is read once, the calls on demand)."""
        if self.cache.targs is None:
            table: dict[str, list[int]] = {}
            for fid, targs in self.store.call_targs():
                for word in set(re.findall(r"[A-Za-z_]\w*", targs)):
                    table.setdefault(word, []).append(fid)
            self.cache.targs = table
        return [c for c in (self.store.by_id(i) for i in self.cache.targs.get(name, ())) if c is not None]

    def _users_of_class_of(self, method: FactRow) -> list[FactRow]:
        cls_name = method.qual.rsplit("::", 2)[-2] if method.qual.count("::") >= 1 else ""
        out = []
        for c in self.store.by_name(cls_name, (FactKind.CLASS,)):
            if c.file == method.file:
                out.extend(self._users_of_class(c))
        return out

    def _operator_methods(self, cls: FactRow) -> list[FactRow]:
        return [f for f in self.store.in_file(cls.file, (FactKind.FUNCTION,))
                if f.name == "operator()" and f.qual.startswith(cls.qual + "::")]

    def _registrations(self) -> dict[str, list[FactRow]]:
        """kernel name -> REGISTER_*DISPATCH facts naming it (read once: there are ~1000)."""
        if self.cache.regs is None:
            regs: dict[str, list[FactRow]] = {}
            for r in self.store.facts_of_kind(FactKind.REGISTER_DISPATCH):
                kernel = re.sub(r"<.*", "", r.arg).rsplit("::", 1)[-1].strip()
                regs.setdefault(kernel, []).append(r)
            self.cache.regs = regs
        return self.cache.regs

    # ---- names and places -------------------------------------------------------------------
    def _by_qual(self, name: str, qual: str, kinds: tuple[str, ...], strict: bool = False) -> list[FactRow]:
        """Definitions named ``name``, best match of ``qual`` (templates and anonymous namespaces
        tolerated) first. ``strict``: a method must belong to the class ``qual`` names."""
        if not name:
            return []
        rows = self.store.by_name(name, kinds)
        want = [p for p in _clean_qual(qual).split("::") if p]
        if (strict or name == "operator()") and len(want) >= 2:
            rows = [r for r in rows if _clean_qual(r.qual).split("::")[-2:] == want[-2:]]

        def score(r: FactRow) -> tuple:
            have = [p for p in _clean_qual(r.qual).split("::") if p]
            common = 0
            for a, b in zip(reversed(want), reversed(have)):
                if a != b:
                    break
                common += 1
            return (-common, r.generated, r.file, r.line)
        return sorted(rows, key=score)

    def _lambda_line(self, fn: FactRow, lam) -> tuple[int | None, bool]:
        """Line of the ``ordinal``-th lambda in ``fn`` with the same number of parameters."""
        arity = 0 if lam.signature in ("", "()") else lam.signature.count(",") + 1
        lambdas = [f for f in self.store.in_scope(fn.id, (FactKind.LAMBDA,)) if f.arg == str(arity)]
        if not lambdas:
            return None, True
        if 1 <= lam.ordinal <= len(lambdas):
            return lambdas[lam.ordinal - 1].line, True
        return lambdas[0].line, True

    def _library_calls(self, library: str) -> list[FactRow]:
        """Calls of ATen into ``library``'s family (cached per library): a cuBLASLt or CUTLASS kernel
        comes from cublasGemmEx, cublasLtMatmul or at::cuda::blas::gemm alike. See Note [Library
        families] in libraries.py."""
        if library in self.cache.lib:
            return self.cache.lib[library]
        out = [r for r in self.store.calls_matching(family_calls_like(library))
               if same_family(library_of_call(r.qual), library) and not self._defined_here(r)]
        # a ROCm library's calls also spelled as CUDA ones that hipify renames (cublasSgemm is hipblasSgemm
        # there: Note [hipify names] in hipify.py), where a ROCm build compiles them
        renamed = [] if not same_family(library, "hipBLAS") else [r for r in self.store.calls_matching(hipify.CUDA_LIKE)
                   if (rocm := hipify.rocm_name(r.qual)) and same_family(library_of_call(rocm), library)
                   and not same_family(library_of_call(r.qual), library) and not conditions.cuda_only(r.cond)]
        if renamed:
            out = sorted(out + renamed, key=lambda r: (r.file, r.line))
        self.cache.lib[library] = out
        return out

    def _defined_here(self, call: FactRow) -> bool:
        """Whether a call whose bare name is in a library's style goes to a function the tree itself
        defines (ATen's ``magma_int_cast`` helper, beside MAGMA's ``magma_sgetrf_gpu``): not a call into
        the library. ATen's wrappers named by namespace (``at::cuda::blas::gemm``) stay library calls."""
        key = "def:" + call.name  # (the vendor's own functions are declared in its headers, outside the tree)
        if key not in self.cache.once:
            self.cache.once[key] = library_of_call(call.name) is not None and any(
                not f.generated for f in self.store.by_name(call.name, (FactKind.FUNCTION,)))
        return self.cache.once[key]

    def _calls_named(self, names: tuple[str, ...]) -> list[FactRow]:
        return [r for n in names for r in self.store.by_name(n, (FactKind.CALL,))]

    def _scopes(self, calls: list[FactRow]) -> list[FactRow]:
        ids = sorted({c.scope for c in calls if c.scope})
        return [f for f in (self.store.by_id(i) for i in ids) if f is not None]

    def _visible(self, from_file: str, to_file: str) -> bool:
        if from_file == to_file:
            return True
        if from_file not in self.cache.reach:
            if self.cache.incl is None:
                self.cache.incl = self.store.include_graph()
            incl = self.cache.incl
            self.cache.reach[from_file] = set(IncludeGraph(lambda p: incl.get(p, ())).distances([from_file]))
        reach = self.cache.reach[from_file]
        if to_file in reach:
            return True
        # Note [Definitions behind a header]: a .cpp/.cu defines what its own header declares
        # (CUDABlas.cpp / CUDABlas.h), or a header of its own folder that it includes: a caller that
        # includes that header reaches the definition.
        stem, dot, ext = to_file.rpartition(".")
        if not (dot and ext in ("cpp", "cu", "cc")):
            return False
        if any(f"{stem}.{h}" in reach for h in ("h", "cuh", "hpp")):
            return True
        # ... or a header beside it that both include (ConvShared.h declares what Conv_v8.cpp defines
        # and ConvShared.cpp calls)
        folder = to_file.rpartition("/")[0] + "/"
        return any(h in reach for h in self.cache.incl.get(to_file, ()) if h.startswith(folder) and "/" not in h[len(folder):])

    def nearest(self, text: str, n: int = 5) -> list[str]:
        import difflib

        if self.cache.global_names is None:
            self.cache.global_names = sorted(set(self.store.names_like((FactKind.GLOBAL,))))
        key = text.strip()[:200]
        return difflib.get_close_matches(key, self.cache.global_names, n=n, cutoff=0.5)


# Why an operator ranks where it does, by tier (Note [Ranking operators for a kernel]); a library's
# kernel has no code of ATen's: its "own" words are ATen's functors in its template, the std:: function
# objects and the routine its name says (potrf, gemm), which the operator's name holds.
_SAID = {False: ("the kernel's own code says its name; ", "the kernel function's name says it; ",
                 "part of its name is in the kernel's code; ", ""),
         True: ("its name says what the library kernel computes; ", "the library kernel's name says it; ",
                "part of its name is what the library kernel computes; ", "")}


def _functors(n: KernelName) -> tuple[str, ...]:
    """The functors of a name, less the functions handed to its template by address
    (``upsample_nearest1d_out_frame<float, &at::native::nearest_neighbor_compute_source_index>``): such a
    function is a helper the kernel calls, shared by every kernel of its kind (``index`` is no operator
    of it), not the operator's own code. Those kernels are found from their launch lines."""
    by_address = {a.strip().lstrip("&").strip() for a in n.template_args if a.strip().startswith("&")}
    return tuple(f for f in n.functors if f not in by_address)


def _inside_runner(library: str, family: str, n: KernelName) -> tuple[str, str] | None:
    """(the library whose call launched it, the routine its name says in that library's terms) for a
    kernel of a routine ATen never calls itself; None for the others.

    Note [Routines ATen never calls]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    ATen calls cuBLAS for GEMM, GEMV, dot and TRSM only (``FAMILY_CALLS``). A cuBLAS kernel of another
    BLAS routine (``trmv_kernel``, ``ger_kernel``, ``unblocked_LDinv_UDinv_kernel``) has no call of
    ATen's that issues it: it runs inside a library built on cuBLAS (cuSOLVER, MAGMA: Note [Libraries
    that run other libraries] in libraries.py), so the calls looked for are that library's, for the
    LAPACK routine the name says if it says one (``LDinv``: an LDL factorization's, sytrf), else those
    of the drivers that run the most internal kernels (Note [Kernels of no name]). A plain GEMM kernel
    keeps cuBLAS's own calls: ``mm``, ``addmm``, ``bmm`` come before the linalg operators that reach
    GEMM inside a solver."""
    if family:
        return None
    runners = runners_of(library)
    if not runners:
        return None
    runner = runners[0]
    return runner, family_of(dataclasses.replace(n, library=runner))


def _unplaced(n: KernelName) -> tuple[str, str, bool] | None:
    """(library, family) of a kernel ATen does not define and whose name has no PyTorch namespace."""
    if n.namespaces[:1] and n.namespaces[0] in ATEN_NAMESPACES | {"at_cuda_detail", "caffe2"}:
        return None
    return guess_vendor(n)


def _bases(names: list[str]) -> list[str]:
    """Operator base names a list of C++ names may spell: runs of one to three of their words
    (``GroupNormKernelImplInternal`` -> group, norm, group_norm, ...), bare, with a leading ``_``
    and with ``native_`` before them."""
    out: dict[str, None] = {}
    for n in names:
        words = [w.lower() for part in re.split(r"[_\W]+", n or "")
                 for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", part)]
        words = [w for w in words if w not in ("kernel", "cuda", "impl", "internal", "functor", "op", "ops", "at")]
        for i in range(len(words)):
            for j in range(i + 1, min(i + 3, len(words)) + 1):
                b = "_".join(words[i:j])
                if len(b) >= 2:
                    out.update({b: None, "_" + b: None, "native_" + b: None})
    return list(out)[:60]


def _step_of(steps: dict[int, Step], c: Candidate) -> str:
    step = steps.get(c.origin)
    return step.symbol if step is not None and c.dist < NAMED_DIST else ""


def _jit_family(function: str) -> str:
    """What a jiterator kernel's template makes: a reduction (``reduction_<name>_kernel``) or an
    elementwise loop (Note [Jiterator kernels are named as NVRTC's])."""
    return "reduction" if function.startswith("reduction_") else "elementwise"


def _is_functor(step: Step | None) -> bool:
    """Whether a step is a functor of the name (not a launch line, a lambda or a library call)."""
    return step is not None and step.detail == _FUNCTOR_DETAIL


def _base(op: str) -> str:
    return op.split(".")[0].strip("_")


def _distinct_first(ranked: list, n: int = 3) -> list:
    """The ranked (key, candidate) pairs with the first ``n`` of distinct operators (``add``, ``sub``,
    ``subtract``), then the rest in their order: three overloads of one operator would hide the
    second operator a person should look at. Only among the operators the walk reached when it
    reached any: one found by its name only never moves before a walked one (Note [Operators that
    share a step] in ranking.py)."""
    walked = [kc for kc in ranked if kc[1].dist < NAMED_DIST]
    if walked and len(walked) < len(ranked):
        return _distinct_first(walked, n) + [kc for kc in ranked if kc[1].dist >= NAMED_DIST]
    head, seen, rest = [], set(), []
    for kc in ranked:
        base = kc[1].op.split(".")[0].strip("_")
        if len(head) < n and base not in seen:
            head.append(kc)
            seen.add(base)
        else:
            rest.append(kc)
    return head + rest


def _round_robin(groups: list[tuple[OperatorHit, ...]]) -> tuple[OperatorHit, ...]:
    """The first operator of each group, then the second of each... (each once): groups of calls no
    one of which is likelier than the others (Note [Copies by direction])."""
    out: dict[tuple[str, str], OperatorHit] = {}
    for i in range(max((len(g) for g in groups), default=0)):
        for g in groups:
            if i < len(g):
                out.setdefault((g[i].op, g[i].key), g[i])
    return tuple(out.values())[:MAX_OPERATORS]


# Note [A library kernel's words in its calls]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A library kernel whose name says no family of work (no GEMM, no convolution direction, no LAPACK
# routine) can still say what it computes in words its library's API shares: cuDNN's
# ``cudnn::bilinear_sampler_bw_4d`` is run by ``cudnnSpatialTfSamplerBackward`` (``sampler``), not by
# ``cudnnGetVersion`` or ``cudnnCTCLoss``. So of the library's calls, those whose callee's name holds a
# word of the kernel's function name (a camel-case or ``_`` piece of four letters or more, the library's
# prefix and the words of its set-up calls left out: descriptor, handle, workspace, init, info...) are
# the issuing calls; when none does, every call of the library stays (Note [Issuing calls]). Only for a
# name whose library the name itself says: a kernel guessed to be a solver's (Note [Kernels of no name])
# shares words with the solver's API by chance (``init_scales_blocks_list`` is no ``magma_init``).
_API_NOISE = frozenset("""cudnn cublas cublaslt cusolver cusolverdn cufft magma nccl descriptor descriptors create
    destroy handle handles workspace size version stream math type data status params param init info query
    attribute attributes""".split())
# Libraries shorten "backward" in their kernels' names (cuDNN's bilinear_sampler_bw_4d, bn_bw_1C11_kernel):
# the operator computing a gradient (cudnn_grid_sampler_backward) before the forward one behind the same API
_BACKWARD = re.compile(r"(?:^|_)(?:bw|bwd|backprop)(?:_|$|\d)|[a-z](?:Bw|Bwd)(?:[A-Z_]|$)")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _pieces(name: str) -> set[str]:
    """The lower-case words of one C++ name, four letters or more: its ``_`` parts and their camel-case
    pieces (``SpatialTfSamplerBackward`` -> spatial, sampler, backward), noise left out (ranking's and
    the API's)."""
    out = set()
    for part in re.split(r"[_\W]+", name):
        out.update(t.lower() for t in (part, *_CAMEL.findall(part)))
    return {w for w in out if len(w) >= 4 and not w.isdigit() and w not in _API_NOISE and w not in NOISE}


def _sharing_a_word(calls: list[FactRow], function: str) -> list[FactRow]:
    """The calls whose callee shares a word with a library kernel's function name: Note [A library
    kernel's words in its calls]."""
    said = _pieces(function)
    return [r for r in calls if said & _pieces(r.qual.rsplit("::", 1)[-1])] if said else []


# Note [Kernels of one name told apart by their parameters]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Files of one family often define a ``__global__`` of the same name in their own anonymous namespace
# (``adaptivemaxpool`` in AdaptiveMaxPooling2d.cu with 10 parameters and in AdaptiveMaxPooling3d.cu with
# 14). A profiler prints the parameter list of the one that ran, and the index records each definition's
# parameter count (``params=N``), so the definitions whose count is the name's come first; qualified
# names alone cannot tell them apart. A name whose list is not shown (or cut short) keeps every one.
_PARAMS = re.compile(r"\bparams=(\d+)\b")
_DEFAULTS = re.compile(r"\bdefaults=(\d+)\b")
_TYPES = re.compile(r"\btypes=(\S+)")
_TYPED_ARG = re.compile(r"[A-Za-z_]\w*:(\w+)")  # a call fact's argument with its local's type: weight:Tensor

# Note [Member calls by name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Callers are found by the called name, and a method's name is often a common word (``set``,
# ``get``, ``run``): ``DropoutDescriptor::set`` (Descriptors.h), which issues cuDNN's dropout
# kernels, shares its name with ``TensorDescriptor::set``, ``FilterDescriptor::set``,
# ``gen.set(...)``... A call is not a caller of a method when the index names the class it calls
# (``idesc.set(...)`` read as ``TensorDescriptor::set`` where the object's type is known) and that is
# another class of the index; an unqualified ``set(...)`` inside a method of another class that has a
# method of that name is that class's own (C++ looks in the class before the namespace:
# TensorDescriptor::set's overloads call each other); and a member call whose object's type is
# unknown is not one when it
# passes more arguments than the method has parameters, fewer than it needs where it is defined in its
# class's body (out of it, a definition does not repeat the declaration's defaults: ``Tensor::sum`` in
# TensorBody.h), or a number (or a local of a non-tensor type) where it takes a tensor, read only where
# the call fact's arguments are whole (it keeps each argument's first characters: ``strides[collapseK``).
# Unknown classes (a ``using Vec = ...`` alias) and free functions keep every call (``self.sum(...)``,
# read as ``Tensor::sum``, reaches ``at::native::sum`` through the dispatcher).


def _misfit(kind: str, arg: str) -> bool:
    """Whether an argument as the call facts write it (``weight:Tensor``, ``0``) cannot bind a parameter of
    ``kind`` (Note [Parameter kinds] in extract/definitions.py): a number or a typed non-tensor local for a
    tensor, a tensor for a number, bool or enum. Unknown types fit."""
    typed = m.group(1) if (m := _TYPED_ARG.fullmatch(arg)) else ""
    number = arg.replace(".", "", 1).lstrip("-").isdigit()
    if kind == "T":
        return number or typed in ("MemoryFormat", "ScalarType", "bool", "double", "float", "int64_t", "int")
    if kind in ("I", "F", "B", "E"):
        return typed in ("Tensor", "TensorBase")
    return False


def _class_of(fn: FactRow) -> str:
    """The class a method is defined in (``DropoutDescriptor`` of ``at::native::DropoutDescriptor::set``),
    or "" for a free function."""
    qual = _clean_qual(fn.qual)
    ns = clean_namespace(fn.namespace)
    rest = qual[len(ns) + 2:] if ns and qual.startswith(ns + "::") else qual
    return rest.rpartition("::")[0].rpartition("::")[2]


def _by_arity(rows: list[FactRow], params: int | None) -> list[FactRow]:
    """``rows`` (``__global__`` definitions of one name), those with ``params`` parameters first:
    Note [Kernels of one name told apart by their parameters]."""
    if params is None or len(rows) < 2:
        return rows

    def misfit(r: FactRow) -> bool:
        m = _PARAMS.search(r.arg)
        return m is None or int(m.group(1)) != params
    return sorted(rows, key=misfit)


def _merge(first: tuple[OperatorHit, ...], then: tuple[OperatorHit, ...]) -> tuple[OperatorHit, ...]:
    seen = {(h.op, h.key) for h in first}
    return (*first, *(h for h in then if (h.op, h.key) not in seen))[:MAX_OPERATORS]


def _call_step(r: FactRow, detail: str | None = None) -> Step:
    return Step(Role.LIBRARY if detail else Role.CALL, r.qual, at(r.file, r.line), detail=detail or "",
                generated=r.generated)


def _cuda_key(label: str) -> bool:
    """Is ``"aten::op [KEY]"`` an operator key that can run a CUDA kernel?"""
    key = label.rsplit("[", 1)[-1].rstrip("]")
    return devices.key_device(key) in ("cuda", "any")


# Note [nvcc's internal namespaces]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# nvcc (CUDA 11.5 and later) gives the anonymous namespace of each .cu file a name of its own so that
# device code links: a profiler prints ``_INTERNAL_5cd812b1_7_Loss_cu_5b0651e1::(anonymous namespace)::
# binary_cross_entropy_backward_out_kernel`` (sometimes before ``at::native::``) for what the source
# writes ``namespace { void binary_cross_entropy_backward_out_kernel(...) }`` in cuda/Loss.cu. The
# wrapper is no namespace of the source: it is dropped before a name is compared with the tree's.
_NVCC_INTERNAL = re.compile(r"(?:^|(?<=::))_INTERNAL_[0-9a-f]+_\d+_\w+?_[0-9a-f]+::")


def _clean_qual(qual: str) -> str:
    """Templates, parameters, inline namespaces and nvcc's internal ones removed (Note [nvcc's
    internal namespaces]); ``operator()`` kept."""
    qual = _NVCC_INTERNAL.sub("", qual)
    qual = qual.replace(ANONYMOUS, "@anon@")  # its "(" is no parameter list
    q = strip_templates(qual.split("(")[0] if "operator()" not in qual else qual.replace("operator()", "operator@"))
    q = q.replace("@anon@", ANONYMOUS)
    return clean_namespace(q.replace("operator@", "operator()"))
