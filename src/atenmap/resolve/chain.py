"""Chains: operator -> dispatch key -> native function -> stub -> registration -> kernel -> launch.

Everything here reads the index through ``Store`` and builds ``model.Step`` trees; nothing prints.

Note [Resolving names]
~~~~~~~~~~~~~~~~~~~~~~
A call site only names its callee (``gpu_kernel``, ``binary_internal::MulFunctor``). The same
names recur across ATen (``copy_stub``, ``normal_kernel`` on CPU and CUDA, ``invoke_impl``
overloads), so a bare-name lookup is wrong. Candidates are the definitions with that name whose
qualified name ends with what the call wrote; then only those in files that may run for the
chain's device (devices.file_allowed); then the closest by translation unit: the caller's own
file, then files it includes (transitively), then the same namespace elsewhere if that is
unambiguous. Definitions in other translation units reached only through a declaration are
found by the last rule.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from atenmap import devices
from atenmap.names import INLINE_NAMESPACES, clean_namespace as _clean_ns  # See Note [Inline namespaces] there
from atenmap.extract import jiterator
from atenmap.kinds import CallDetail, FactKind, KeyGroup
from atenmap.resolve.includegraph import IncludeGraph
from atenmap.resolve.libraries import is_setup_call, library_of
from atenmap.resolve import lookups
from atenmap.resolve.lookups import LookupObserver, LookupStep, Pick
from atenmap.resolve.memo import StoreMemo
from atenmap.resolve.natives import callable_natives
from atenmap.resolve import callbacks, conditions, devicecode, passed, rocmbuild, selectors
from atenmap.names import split_template_args, strip_templates  # not the kernel-name parser: a chain needs only these
from atenmap.resolve.opcalls import CallSite, OpCall, OperatorTable
from atenmap.resolve import strided
from atenmap.resolve.strided import returns_alias
from atenmap.model import Chain, DispatchEntry, KeyChain, Operator, OperatorName, Role, SourceInfo, Step, at
from atenmap.model import LOOP_HELPER
from atenmap.store import FactRow, Store

DEFAULT_DEPTH = 8
MAX_CANDIDATES = 3
OTHER_NATIVE = "another operator's native function, called directly"  # in a helper step's detail
MAX_OP_DEPTH = 4  # operators nested under op_call steps (Note [Re-dispatch]); conv3d.padding -> ... -> cuDNN
MAX_EXPANDED_OPS = 40  # operators expanded in one key's chain
MAX_LIBRARY_WRAPPERS = 6  # specializations of one ATen library wrapper shown

# Loop helpers worth showing even where they lead to no launch line (CPU kernels end in them).
LOOP_HELPERS = {
    "gpu_kernel", "gpu_kernel_with_scalars", "opmath_gpu_kernel_with_scalars",
    "opmath_symmetric_gpu_kernel_with_scalars", "gpu_kernel_nocast", "gpu_kernel_multiple_outputs",
    "gpu_reduce_kernel", "launch_vectorized_kernel", "launch_unrolled_kernel", "launch_legacy_kernel",
    "jitted_gpu_kernel", "gpu_kernel_impl", "gpu_kernel_impl_nocast",
    "cpu_kernel", "cpu_kernel_vec", "cpu_serial_kernel", "cpu_serial_kernel_vec", "cpu_kernel_multiple_outputs",
    "binary_kernel_reduce", "binary_kernel_reduce_vec", "binary_kernel_reduce_lastdim", "cpu_masked_fill_kernel",
    "parallel_for", "parallel_reduce", "vectorized_loop", "basic_loop", "for_each", "serial_for_each",
}
# Shown where called, never followed: they lead into threading and iteration machinery.
LEAF_HELPERS = {"parallel_for", "parallel_reduce", "for_each", "serial_for_each", "cpu_serial_kernel",
                "cpu_kernel", "cpu_kernel_vec", "cpu_serial_kernel_vec", "binary_kernel_reduce",
                "binary_kernel_reduce_vec", "vectorized_loop", "basic_loop"}
_USING_DECLARATION = re.compile(r"^\s*using\s+((?:\w+::)+)(\w+)\s*;")  # using aotriton::v2::flash::attn_fwd;
INTERESTING = {Role.STUB_CALL, Role.LAUNCH, Role.JIT, Role.LIBRARY, Role.REGISTER, Role.KERNEL, Role.OP_CALL, Role.GENERATED}

_COMPOSITE_KEYS = KeyGroup.COMPOSITE  # asked only whether a key is one


def _canonical_key(key: str) -> str:
    """``cuda`` -> ``CUDA`` for the keys atenmap knows the spelling of."""
    for k in devices.KEY_ORDER + ["MPS", "XPU", "HIP", "Meta"]:
        if k.lower() == key.lower():
            return k
    return key


@dataclass
class _Node:
    """A step while the resolver builds it (children added, details completed); ``freeze``
    gives the public, immutable ``model.Step``."""

    role: str
    symbol: str
    file: str | None
    line: int | None
    detail: str = ""
    generated: bool = False
    children: list["_Node"] = field(default_factory=list)
    leads: bool = False  # shown without children, "expanded above", where it reaches device code
    works: bool = True  # with leads: what it reaches above is more than set-up calls (_does_work)
    call: OpCall | None = None  # op_call steps: the operator call, expanded after the tree is built
    args: str | None = None
    runs_nothing: tuple[tuple[str, str], ...] = ()  # op_call steps: (operator, key) whose chain runs nothing
    # a stub kernel with operator calls of its own: read again with them, or calling a backend's kernel
    # directly (multinomial's ``at::cuda::cumsum_out``); kept where the native drops its own
    # (Note [A stub kernel that calls an operator])
    op_work: bool = False

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def freeze(self) -> Step:
        return Step(Role(self.role), self.symbol, at(self.file, self.line), self.detail, self.generated,
                    tuple(c.freeze() for c in self.children))


@dataclass
class _Ctx:
    key: str
    device: str
    composite: bool
    max_depth: int
    memo: dict = field(default_factory=dict)
    works: dict = field(default_factory=dict)  # function id -> its reach is more than set-up calls (_does_work)
    unshown: set = field(default_factory=set)  # ids explored as a launcher object's methods but not shown
    stubs: set = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    ops_shown: set = field(default_factory=set)  # operators expanded in this chain (Note [Re-dispatch])
    ops_running: set = field(default_factory=set)  # those of them whose expansion runs device code
    op_depth: int = 0
    expand: bool = True
    max_op_depth: int = MAX_OP_DEPTH
    kernel_ops: bool = False  # Note [A stub kernel that calls an operator]


@dataclass
class _Found:
    """What one function body leads to, while it is read."""

    steps: list["_Node"] = field(default_factory=list)
    by_def: dict = field(default_factory=dict)  # definition id -> (step, call lines, detail suffix)
    op_steps: dict = field(default_factory=dict)  # operator label -> (step, call lines, overloads text)
    loop_seen: set = field(default_factory=set)


class Resolver:
    """Chains of one open index. ``kept``: the open index's answers kept across resolvers (Note
    [Answers kept per open index] in memo.py); ``observer``: told what the resolver looks up (Note
    [Lookups told to an observer] in lookups.py)."""

    def __init__(self, store: Store, source: SourceInfo, operators: Callable[[str], Operator | None],
                 all_operators: Callable[[], list[Operator]], kept: dict | None = None,
                 observer: LookupObserver | None = None, platform: str = conditions.DEFAULT_PLATFORM):
        self.store = StoreMemo(store, kept, observer)  # See Note [One query per question] in memo.py
        self.platform = platform  # Note [The ROCm side of #if] in conditions.py
        self._hip = None  # hipsource.HipSources, made when a ROCm chain first asks
        self.observer = observer
        self.source = source
        self.ops = operators  # name -> Operator or None
        self.all_ops = all_operators
        self._views: frozenset[str] | None = None  # Note [A copy of a view is strided]
        self._table: OperatorTable | None = None
        self._bases: set[str] | None = None
        self._stubs: frozenset[str] | None = None
        self._incl: dict[str, list[str]] = {}  # includer -> included files, read per file as the walk needs
        self._rocm: dict[str, bool] = {"": False}  # condition -> rocm_only (few distinct ones)
        self._off: dict[str, bool] = {"": False}  # condition -> conditions.configured_off
        self._reach: dict[str, dict[str, int]] = {}
        self._texts = passed.Texts(source.root, store.quoted_lines if store.quotes() else None)  # Note [Functions passed by name]
        self._passed = self.store.kept("passed", passed.Decisions)  # Note [Functions passed by name]: kept per open index

    # ---- public -----------------------------------------------------------------------------
    def chain(self, op: Operator, keys: list[str] | None = None, depth: int = DEFAULT_DEPTH,
              expand: bool = True) -> Chain:
        """``expand``: op_call steps show the called operator's chain (Note [Re-dispatch])."""
        entries = self._entries(op)
        warnings: list[str] = []
        if keys:
            wanted = {k.lower(): k for k in keys}
            picked = [(k, e, d) for k, e, d in entries if k.lower() in wanted]
            missing = [wanted[k] for k in wanted if k not in {e[0].lower() for e in entries}]
            composite = next(((k, e, d) for k, e, d in entries if k in _COMPOSITE_KEYS), None)
            for m in missing:
                verdict = self._lack(op, _canonical_key(m), entries)
                if verdict is not None:  # Note [What a call does without a kernel] in missing.py
                    warnings.append(verdict.says)
                    continue
                if composite is not None and devices.key_device(_canonical_key(m)) not in ("any",):
                    # Note [Composite kernels serve every backend]: with no CUDA entry, a CUDA
                    # tensor runs the op's CompositeImplicit/ExplicitAutograd kernel.
                    picked.append((_canonical_key(m), composite[1], composite[2]))
                    warnings.append(f"{op.name} has no {_canonical_key(m)} kernel of its own: "
                                    f"{_canonical_key(m)} runs its {composite[0]} kernel")
                    continue
                have = ", ".join(k for k, _, _ in entries) or "none"
                warnings.append(f"{op.name} has no {m} kernel (keys with kernels: {have})")
            entries = picked
        out = []
        for key, entry, delegate in entries:
            ctx = _Ctx(key, devices.key_device(key), entry.key.startswith("Composite"), depth, expand=expand)
            ctx.ops_shown.add(str(op.name))
            root = self._key_root(op, entry, delegate, ctx)
            if expand:
                self._expand_op_calls(root, ctx)
            if self.observer is not None:
                _tell_runs_nothing(root, self.observer)
            out.append(KeyChain(key, (root.freeze(),)))
            warnings.extend(w for w in ctx.warnings if w not in warnings)
        meta = self.store.meta()
        gen_root = meta.get("codegen_dir") or None
        return Chain(op, self.source, tuple(out), tuple(warnings), generated_root=gen_root,
                     bindings=tuple(b.freeze() for b in self._bindings(op)))

    def _lack(self, op: Operator, key: str, entries) -> "Lack | None":
        """For a device key ``op`` has no entry for: what a call there does when no chain can be
        shown (a fallback registered for it, no composite, or kernels that live in another
        repository); None where the composite's chain is the answer (resolve/missing.py)."""
        if devices.key_device(key) in ("any",):
            return None
        from atenmap.kinds import Lacking
        from atenmap.resolve import missing

        keys = [k for k, _, _ in entries]
        elsewhere = missing.elsewhere(op, key, keys)
        if elsewhere is not None:
            return elsewhere
        regs = self.store.kept(f"registrations:{key}", lambda: missing.key_registrations(self.store.store, key))
        structured = any(e.structured for _, e, _ in entries)
        got = missing.lack(op, keys, key, regs, structured)
        if got is None or got.outcome == Lacking.COMPOSITE or (got.at is None and got.registered is None):
            return None  # the composite's chain; or no fallback (CPU, CUDA): the answer as before names the keys
        return got

    def formula_steps(self, key: str, helpers: list[tuple[FactRow, list[CallSite]]], calls: list[CallSite],
                      depth: int = DEFAULT_DEPTH, expand: bool = True,
                      shown: set[str] | None = None) -> tuple[list[Step], list[str]]:
        """The steps of one backward formula for ``key`` (resolve/backward.py): the operators it
        calls (``calls``) and the helpers it calls (FunctionsManual.cpp's mul_tensor_backward), each
        helper's body explored like a composite kernel's, plus the operators its text reaches
        outside call facts (``grad * other``); every operator call expanded for ``key`` (Note
        [Re-dispatch]; ``shown``: operators already expanded, shared by a key's formulas). Returns
        the steps and warnings."""
        ctx = _Ctx(key, devices.key_device(key), True, depth, expand=expand,
                   ops_shown=shown if shown is not None else set(), max_op_depth=MAX_OP_DEPTH - 1)  # the
        # formula's calls are one operator below the one asked about: its backward node
        nodes = [self._site_node(s) for s in calls]
        for fn, extra in helpers:
            node = _Node(Role.HELPER, fn.qual, fn.file, fn.line, generated=fn.generated,
                         detail="the formula's helper" + _via(fn, "; "))
            node.children = self._explore(fn, ctx, depth=0, stage="native", path=(fn.id,))
            node.children += [self._site_node(s) for s in extra]
            nodes.append(node)
        if expand:
            self._expand_op_calls(_Node(Role.YAML, "", None, None, children=nodes), ctx)
        return [n.freeze() for n in nodes], ctx.warnings

    def operator_calls(self, op: Operator, key: str) -> list[tuple[str, str, int]]:
        """``(operator, file, line)`` of each operator ``op``'s ``key`` kernel calls (each candidate
        overload where the call does not decide), in call order; for composite kernels."""
        found = self._entry_for(op, key)
        if found is None:
            return []
        entry, delegate = found
        ctx = _Ctx(key, devices.key_device(key), True, 2, expand=False)
        root = _Node(Role.YAML, str(op.name), None, None, children=self._kernel_steps(delegate or op, entry, ctx))
        out = []
        for n in root.walk():
            if n.role == Role.OP_CALL and n.call is not None:
                names, _ = self._optable().pick(n.call, n.args)
                out += [(name, n.file, n.line) for name in names]
        return out

    def operator_table(self) -> OperatorTable:
        """Names and schemas of every operator (classifies calls, picks overloads)."""
        return self._optable()

    def _site_node(self, site: CallSite) -> _Node:
        overloads = self.store.operators_by_base(site.call.base) if not site.call.exact else [site.call.exact]
        shown = ", ".join(overloads[:6]) + (", …" if len(overloads) > 6 else "")
        node = _Node(Role.OP_CALL, f"aten::{site.call.base}" + (f" ({site.written})" if site.written != site.call.base else ""),
                     site.file, site.line, detail=f"calls the operator ({shown})", generated=site.generated)
        node.call, node.args = site.call, site.args
        return node

    def _bindings(self, op: Operator) -> list[_Node]:
        """torch.add / Tensor.add: the generated Python binding and its dispatch lambda for this
        overload. See Note [Python bindings] in extract/bindings.py."""
        out = []
        for b in self.store.by_name(str(op.name), _BINDING):
            fn = self.store.by_id(b.scope) if b.scope else None
            if fn is None:
                continue
            base = b.file.rsplit("/", 1)[-1]
            pyname = fn.name.removeprefix("THPVariable_")
            if base.startswith("python_variable_methods"):
                where = f"Tensor.{pyname}"
            elif base.startswith("python_torch_functions"):
                where = f"torch.{pyname}"
            else:
                module = base.removeprefix("python_").removesuffix("_functions.cpp")
                where = f"torch.{'_C._' + module if module in ('nn', 'sparse', 'nested') else module}.{pyname}"
            step = _Node(Role.GENERATED, f"{where} -> {fn.name}", fn.file, fn.line, generated=True,
                        detail="Python binding (torchgen)")
            step.children.append(_Node(Role.GENERATED, f"dispatch_{op.name.name}", b.file, b.line + 1, generated=True,
                                      detail=f"the lambda that calls aten::{op.name} (releases the GIL, redispatches)"))
            out.append(step)
        return out

    # ---- dispatch keys ----------------------------------------------------------------------
    def _entries(self, op: Operator) -> list[tuple[str, DispatchEntry, Operator | None]]:
        """(key, entry, delegate op or None). A structured_delegate op runs its delegate's kernels
        for every key it does not name itself (mul.Tensor: CPU/CUDA from mul.out, Sparse* its own)."""
        items = [(d.key, d, None) for d in op.dispatch]
        if op.structured_delegate is not None:
            target = self.ops(str(op.structured_delegate))
            if target is not None:
                own = {d.key for d in op.dispatch}
                items += [(d.key, d, target) for d in target.dispatch if d.key not in own]
        return sorted(items, key=lambda t: devices.key_sort(t[0]))

    def _key_root(self, op: Operator, entry: DispatchEntry, delegate: Operator | None, ctx: _Ctx) -> _Node:
        owner = delegate or op
        how = "structured" if entry.structured else ("implicit default" if not entry.explicit else "")
        root = _Node(Role.YAML, str(op.name), op.loc.file, op.loc.line,
                    detail=f"{entry.key}: {entry.kernel}" + (f" ({how})" if how else ""))
        if delegate is None:
            root.children.extend(self._kernel_steps(owner, entry, ctx))
            return root
        step = _Node(Role.DELEGATE, str(delegate.name), delegate.loc.file, delegate.loc.line,
                    detail=f"structured_delegate: {op.name} runs {delegate.name}'s {entry.key} kernel")
        step.children = self._kernel_steps(owner, entry, ctx, registered=False)
        root.children = self._under_registration(op, entry, [step])
        return root

    def _kernel_steps(self, op: Operator, entry: DispatchEntry, ctx: _Ctx, registered: bool = True) -> list[_Node]:
        """Meta and native steps of ``op`` for ``entry``, under their dispatcher registration
        unless ``registered`` is false (a delegating op shows its own registration instead)."""
        steps: list[_Node] = []
        if entry.structured:
            meta = self._meta(op)
            if meta is not None:
                steps.append(_Node(Role.META, meta.qual.rsplit("::", 1)[-1] if "(" in meta.qual else meta.qual,
                                  meta.file, meta.line, detail="shape/dtype checks (structured meta)",
                                  generated=meta.generated))
            natives = self._defs(entry.kernel, _IMPL_FUNC, ctx, None)
        else:
            natives = self._natives(entry.kernel, ctx, op)
        if not natives:
            gen = self._generated_placeholder(op, entry, ctx)
            if gen is not None:
                steps.append(gen)
                return self._under_registration(op, entry, steps) if registered else steps
            else:
                what = f"TORCH_IMPL_FUNC({entry.kernel})" if entry.structured else f"at::native::{entry.kernel}"
                ctx.warnings.append(f"{entry.key}: no definition of {what} found in the indexed source")
            return steps
        if len(natives) > 1:
            kind = "variants under #if" if len({n.cond for n in natives}) > 1 else "overloads"
            ctx.warnings.append(f"{entry.key}: {len(natives)} definitions named {entry.kernel} ({kind}); showing each")
        for fn in natives:
            label = fn.qual.rsplit("::", 1)[-1] if fn.kind == _IMPL_FUNC_KIND else fn.qual
            step = _Node(Role.NATIVE, label, fn.file, fn.line, detail=_via(fn) + conditions.label(fn.cond),
                         generated=fn.generated)
            step.children = self._explore(fn, ctx, depth=0, stage="native", path=(fn.id,))
            if not ctx.composite and _reaches_device_code(step):
                _drop_op_calls(step, self._in_selected_branch)
            steps.append(step)
        return self._under_registration(op, entry, steps) if registered else steps

    def _under_registration(self, op: Operator, entry: DispatchEntry, steps: list[_Node]) -> list[_Node]:
        """yaml -> m.impl(...) -> wrapper -> [meta, native, ...] where the registration is indexed."""
        found = self._registration(op, entry.key)
        if found is None:
            return steps
        reg, wrap = found
        if wrap is None:
            reg.children = steps
        else:
            wrap.children = steps
            reg.children = [wrap]
        return [reg]

    def _meta(self, op: Operator) -> FactRow | None:
        """TORCH_META_FUNC of a structured op is named after its functional variant (mul.Tensor -> mul_Tensor)."""
        names = []
        for other in map(OperatorName.parse, self.store.delegating_to(str(op.name))):
            if not other.name.endswith("_") and "out" not in other.overload:
                names.append(other.unambiguous)
        names.append(op.name.name)
        for n in names:
            rows = self.store.by_name(n, _META_FUNC)
            if rows:
                return rows[0]
        return None

    def _natives(self, kernel: str, ctx: _Ctx, op: Operator | None = None) -> list[FactRow]:
        """Kernels named in the yaml live in at::native unless the entry names another namespace;
        only those the wrapper can call (Note [Native overload selection] in natives.py)."""
        rows = callable_natives([r for r in self.store.by_name(kernel, _NATIVE)
                                 if self._allowed(r.file, ctx.device) or ctx.device == "meta"], op)
        exact = [r for r in rows if _clean_ns(r.namespace) == "at::native" or r.kind == _IMPL_FUNC_KIND]
        native = exact or [r for r in rows if "native" in r.namespace.split("::")]
        rows = native or rows
        if ctx.device not in ("any", "meta"):
            own = [r for r in rows if devices.file_device(r.file) == ctx.device]
            rows = own or rows
        if not rows and ctx.device == "cuda":
            # ROCm builds register HIP code (miopen/, hip/) under the CUDA key.
            rows = callable_natives([r for r in self.store.by_name(kernel, _NATIVE)
                                     if devices.file_device(r.file) == "hip"], op)
        if self.platform == "rocm" and ctx.device == "cuda":  # Note [The ROCm side of #if] in conditions.py
            rows = [r for r in rows if not self._rocm_only(r.cond)] or rows
        return self._configured(rows)[:MAX_CANDIDATES]

    def _registration(self, op: Operator, key: str) -> tuple[_Node, _Node | None] | None:
        """Note [Dispatcher registration]: ``m.impl("add.out", TORCH_FN(wrapper_CUDA_add_out_out))``
        inside ``TORCH_LIBRARY_IMPL(aten, CUDA, m)`` (torchgen's Register<Key>.cpp, or hand-written
        for a few ops) is what the dispatcher calls; the wrapper then runs meta/impl or calls the
        native function. Returns the registration step and the wrapper's step (or None)."""
        for r in self.store.by_name(str(op.name), _TORCH_IMPL):
            scope = self.store.by_id(r.scope) if r.scope else None
            if scope is None or scope.name != "TORCH_LIBRARY_IMPL":
                continue
            args = [a.strip() for a in scope.arg.strip("()").split(",")]
            if len(args) < 2 or args[0] != "aten" or args[1] != key:
                continue
            reg = _Node(Role.REGISTER, f'm.impl("{op.name}", {r.arg})', r.file, r.line,
                       detail=f"dispatcher registration for {key}" + (" (torchgen)" if r.generated else ""),
                       generated=r.generated)
            fn_name = re.sub(r"^TORCH_FN\((.*)\)$", r"\1", r.arg.strip()).strip().lstrip("&")
            fn_name = fn_name.rsplit("::", 1)[-1]
            wrappers = [w for w in self.store.by_name(fn_name, _FUNCTION) if w.file == r.file]
            if not wrappers:
                return reg, None
            w = wrappers[0]
            wrap = _Node(Role.GENERATED if w.generated else Role.HELPER, w.qual, w.file, w.line, generated=w.generated,
                        detail="torchgen's wrapper: checks devices, then runs the kernel" if w.generated else "")
            return reg, wrap
        return None

    def _generated_placeholder(self, op: Operator, entry: DispatchEntry, ctx: _Ctx) -> _Node | None:
        """See Note [Generated steps]."""
        if entry.key == KeyGroup.COMPOSITE_NON_FUNCTIONAL and entry.kernel.endswith("_copy"):
            return _Node(Role.GENERATED, f"at::native::{entry.kernel}", None, None, generated=True,
                        detail="a view_copy kernel written by torchgen into CompositeViewCopyKernels.cpp")
        if not op.ufunc_inner_loop or entry.key not in ("CPU", "CUDA"):
            return None
        files = {"CPU": f"UfuncCPU_{op.name.name}.cpp / UfuncCPUKernel_{op.name.name}.cpp",
                 "CUDA": f"UfuncCUDA_{op.name.name}.cu"}[entry.key]
        step = _Node(Role.GENERATED, f"TORCH_IMPL_FUNC({entry.kernel})", None, None, generated=True,
                    detail=f"written by torchgen's ufunc codegen into {files} from ufunc_inner_loop; "
                           "its stub registration and kernel exist only there")
        for loop in op.ufunc_inner_loop:
            for r in self.store.by_name(loop.name, _FUNCTION):
                if "/ufunc/" in r.file:
                    step.children.append(_Node(Role.KERNEL, f"ufunc::{loop.name}", r.file, r.line,
                                              detail=f"hand-written inner loop ({loop.key}: {', '.join(loop.types)})"))
                    break
        stub = f"{op.name.name}_stub"
        if self.store.by_name(stub, _DECLARE):
            step.children.append(self._stub_step(stub, None, None, ctx, 0, (), f"called by the generated {entry.kernel}"))
        return step

    # ---- exploration ------------------------------------------------------------------------
    def _explore(self, fn: FactRow, ctx: _Ctx, depth: int, stage: str, path: tuple[int, ...]) -> list[_Node]:
        """Steps reached from ``fn``'s body. A function already expanded in this key's tree is
        shown again without children ("see above"); several call sites of one callee share a step."""
        ctx.memo[fn.id] = False
        acc = _Found()
        facts = self.store.in_scope(fn.id, _CALL_OR_LAUNCH)
        origin: dict[int, FactRow] = {}  # id(step) -> the fact that made it
        for f in facts:
            before = len(acc.steps)
            self._visit(f, fn, ctx, depth, stage, path, acc)
            origin.update((id(s), f) for s in acc.steps[before:])
        if stage == "native" and any(f.detail == _ARGUMENT or f.targs for f in facts):
            self._delegations(facts, origin, ctx, acc)
        if any(f.name in LOOP_HELPERS for f in facts):  # lambdas are read only where a loop is called
            self._loop_lambdas(facts + self.store.in_scope(fn.id, _LAMBDA), ctx, acc)
        for step, lines, overloads in acc.op_steps.values():
            step.detail = f"calls the operator ({overloads})" + (
                f" at lines {', '.join(map(str, lines))}" if len(lines) > 1 else "") + step.detail
        for child, lines, suffix in acc.by_def.values():
            child.detail = f"called at {fn.file}:{', '.join(map(str, lines))}{suffix}"
        ctx.memo[fn.id] = any(_interesting(s) for s in acc.steps)
        ctx.works[fn.id] = any(_does_work(s) for s in acc.steps)
        return acc.steps

    def _delegations(self, facts: list[FactRow], origin: dict[int, FactRow], ctx: _Ctx, acc: "_Found") -> None:
        """Note [Helpers a native delegates to]: the steps a call's stub argument or template
        functor made go under a step for the helper it is passed to."""
        stub_args = {(f.line, id(s)) for s in acc.steps if (f := origin.get(id(s))) is not None
                     and f.detail == _ARGUMENT}
        seen_lines: set[int] = set()
        lines = {line for line, _ in stub_args}
        for h in facts:
            if h.kind != _CALL_KIND or not (h.targs or h.line in lines) or h.detail or h.line in seen_lines \
                    or h.name in LOOP_HELPERS \
                    or h.name in self._stub_names() or library_of(h.qual) is not None or self._op_call(h):
                continue
            moved = [s for s in acc.steps if origin.get(id(s)) is h or (h.line, id(s)) in stub_args]
            if not moved or self.store.has_name(h.name, _CLASS):  # a functor or object made here
                continue
            defs = [d for d in self._defs(h.name, _FUNCTION, ctx, h, qual=h.qual)
                    if not d.file.startswith(_CORE_PREFIXES) and d.name not in LOOP_HELPERS][:1]
            if not defs:
                continue
            seen_lines.add(h.line)
            d = defs[0]
            node = acc.by_def[d.id][0] if d.id in acc.by_def else None
            moved = [s for s in moved if s is not node]
            if not moved:
                continue
            why = "; the native delegates to it: what is passed to it runs there"
            if node is None:
                node = _Node(Role.HELPER, d.qual, d.file, d.line, generated=d.generated)
                acc.by_def[d.id] = (node, [h.line], why + _via(d, "; "))
                acc.steps.insert(acc.steps.index(moved[0]), node)
            elif why not in acc.by_def[d.id][2]:
                acc.by_def[d.id] = (node, acc.by_def[d.id][1], why + acc.by_def[d.id][2])
            for s in moved:
                acc.steps.remove(s)
                node.children.append(s)

    def _loop_lambdas(self, facts: list[FactRow], ctx: _Ctx, acc: "_Found") -> None:
        """Note [Lambdas a loop runs]: the named functions called in a lambda passed to a loop
        helper (``cpu_kernel_vec(iter, [=](scalar_t a, scalar_t b) { return ufunc::add(a, b); })``)."""
        spans = [(f.line, f.end_line, f.detail) for f in facts if f.kind == _LAMBDA_KIND and f.detail in LOOP_HELPERS]
        if not spans:
            return
        loops = {strip_templates(s.symbol).rsplit("::", 1)[-1]: s for s in acc.steps if s.role in (Role.CALL, Role.HELPER)}
        for f in facts:
            loop = next((name for lo, hi, name in spans if lo <= f.line <= hi), None)
            if loop is None or f.kind != _CALL_KIND or f.detail or f.name in LOOP_HELPERS or "::" in f.qual \
                    and f.qual.split("::", 1)[0] in ("std", "c10", "at") and not f.qual.startswith("at::native"):
                continue
            for d in self._defs(f.name, _FUNCTION, ctx, f, qual=f.qual)[:1]:
                if d.id in acc.by_def or d.file.startswith(_CORE_PREFIXES) or _is_member(d):
                    continue
                step = _Node(Role.CALL, d.qual, d.file, d.line, generated=d.generated)
                acc.by_def[d.id] = (step, [f.line], f"; per-element code: called in the lambda passed to {loop}")
                parent = loops.get(loop)
                (parent.children if parent is not None else acc.steps).append(step)

    def _names_parameter(self, fn: FactRow, name: str) -> bool:
        """Whether ``name`` is one of ``fn``'s parameters (its signature declares it)."""
        key = (fn.id, name)
        got = self._passed.parameters.get(key)
        if got is None:
            got = self._passed.parameters[key] = passed.declares_parameter(
                self._texts.span(fn.file, fn.line, "{;") or "", name)
        return got

    def _visit(self, f: FactRow, fn: FactRow, ctx: _Ctx, depth: int, stage: str, path: tuple[int, ...],
               acc: "_Found") -> None:
        """One call or launch in ``fn``'s body: what step (if any) it adds."""
        if ctx.device == "cuda" and self._rocm_only(f.cond):
            return  # Note [ROCm code under the CUDA key]
        if f.kind == _LAUNCH_KIND:
            acc.steps.extend(self._launch_steps(f, ctx))
            if f.arg and f.targs and depth < ctx.max_depth:  # Note [Launches through a variable] in extract/launches.py
                self._template_functors(f, fn, ctx, depth, stage, path, acc)
            return
        lib = library_of(f.qual)
        if lib is None and self.platform == "rocm" and f.qual == f.name and f.detail != _MEMBER:
            used = self._using_declared(f, fn)  # Note [Library names a using-declaration brings in]
            if used is not None and (lib := library_of(used)) is not None:
                f = dataclasses.replace(f, qual=used)
        if lib is not None:
            if self._in_device_code(f):
                return  # Note [Library calls in device code] in devicecode.py
            if f.via_macro and any(s.role == Role.LIBRARY and s.line == f.line and s.symbol == f.qual and s.file == f.file
                                   for s in acc.steps):
                return  # one macro expansion's calls all sit on the macro's line (vml.h's vm##mkltype##mklop)
            step = self._library_step(f, lib, ctx, depth, path)
            if step is not None:
                acc.steps.append(step)
            return
        if f.detail == _MACRO_ARG or f.detail == _ARGUMENT and f.name not in self._stub_names():
            return  # a macro's function argument counts only as a library call (extract/calls.py)
        if f.name in self._stub_names() and f.detail != _MEMBER:
            if self._names_parameter(fn, f.name):
                return  # Note [A parameter named like a stub]
            if f.name in ctx.stubs:
                acc.steps.append(_Node(Role.STUB_CALL, f.name, f.file, f.line, detail="expanded above",
                                       generated=f.generated))
                return
            ctx.stubs.add(f.name)
            acc.steps.append(self._stub_step(f.name, f, fn, ctx, depth, path,
                                             "passed as an argument; " if f.detail == _ARGUMENT else ""))
            return
        call = self._op_call(f)
        if call is not None and (stage == "native" or call.key or call.exact or ctx.kernel_ops):
            self._op_call_step(f, call, acc)
            return
        if stage == "native" and f.qual.startswith(("at::native::", "native::")) and self._is_native_of_op(f.name):
            self._follow(f, fn, ctx, depth, stage, path, acc, other_native=True)
            return
        if f.targs and jiterator.is_launcher(f.name):
            acc.steps.extend(self._jit_step(f, ctx))
        if f.targs and depth < ctx.max_depth:
            self._template_functors(f, fn, ctx, depth, stage, path, acc)
        typed = f.detail == _MEMBER and "::" in f.qual  # l.launch(...) on a local KthvalueLauncher l
        if depth >= ctx.max_depth or f.detail == _MEMBER and f.name not in LOOP_HELPERS and not typed:
            return
        self._follow(f, fn, ctx, depth, stage, path, acc)

    def _hip_step(self, f: FactRow, stage: str, acc: "_Found") -> bool:
        """The ``.hip`` definition of ``f``'s callee with its vendor calls, as a step (Note [Functions a
        ROCm build defines in .hip files] in hipsource.py); False when the tree's ``.hip`` files have
        none that calls a library."""
        if self._hip is None:
            from atenmap.resolve.hipsource import HipSources

            self._hip = HipSources(self.source.root if self.source.origin != "bundled" else None)
        made = False
        for d in self._hip.definitions(f.qual):
            if not d.calls:
                continue
            key = ("hip", d.file, d.line)
            if key in acc.by_def:
                acc.by_def[key][1].append(f.line)
                made = True
                continue
            step = _Node(Role.HELPER if stage == "native" else Role.CALL, d.qual, d.file, d.line)
            step.children = [_Node(Role.LIBRARY, qual, d.file, line, detail=lib) for qual, lib, line in d.calls]
            acc.by_def[key] = (step, [f.line], "; defined in a .hip file a ROCm build compiles (read as text)")
            acc.steps.append(step)
            made = True
        return made

    def _in_selected_branch(self, step: _Node) -> bool:
        """Whether operator call ``step`` sits in a branch on a backend selector's value (Note [A
        branch on a selector's value] in selectors.py)."""
        if not step.file or not step.line:
            return False
        first = max((a for a, b in self.store.function_spans(step.file) if a <= step.line <= b), default=0)
        return selectors.call_in_selected_branch(self._texts.lines(step.file), first, step.line)

    def _in_device_code(self, f: FactRow) -> bool:
        """Whether library call ``f`` is device code of a kernel (Note [Library calls in device code]
        in devicecode.py); read from the tree's lines (the bundle leaves such calls out)."""
        if not f.file.endswith((".cu", ".cuh")):
            return False
        lines = self._texts.lines(f.file)
        first = max((a for a, b in self.store.function_spans(f.file) if a <= f.line <= b), default=0)
        return devicecode.call_in_device_code(lines, first, f.line)

    def _using_declared(self, f: FactRow, fn: FactRow) -> str | None:
        """Note [Library names a using-declaration brings in]: attention.cu's ROCm branch writes
        ``using aotriton::v2::flash::attn_fwd;`` and then calls ``attn_fwd(...)``; the index holds the
        call as written (``attn_fwd``). The qualified name of the last ``using NS::NAME;`` for the
        call's name between the start of the function and the call (read from the tree's lines; the
        bundled index does not quote them), or None. Read on ``--platform rocm`` only, where the
        AOTriton calls are (the ``USE_ROCM`` side): CUDA answers stay as they were."""
        lines = self._texts.lines(f.file)
        if not isinstance(lines, list) or fn.file != f.file or not 0 < fn.line <= f.line <= len(lines):
            return None
        found = None
        for raw in lines[fn.line - 1:f.line]:
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            m = _USING_DECLARATION.match(text)
            if m and m.group(2) == f.name:
                found = m.group(1) + m.group(2)
        return found

    def _template_functors(self, f: FactRow, fn: FactRow, ctx: _Ctx, depth: int, stage: str,
                           path: tuple[int, ...], acc: "_Found") -> None:
        """Note [Kernels chosen by template arguments]: ``normal_impl_<NormalStub, Generator>(...)``
        runs ``NormalStub::operator()`` (which calls normal_stub) inside the template; a class named
        in a call's template arguments that has an operator() is followed like a functor."""
        if f.qual.startswith("std::") or f.name in _VALUE_TEMPLATES:  # std::pair<Tensor, Tensor>: types, not code
            return
        for targ in split_template_args(f.targs):
            name = strip_templates(targ.strip()).rsplit("::", 1)[-1]
            if not name.isidentifier() or name in acc.loop_seen:
                continue
            if not self.store.has_name(name, _CLASS, _TEMPLATE_ARGUMENT):
                self._template_function(name, f, ctx, acc)
                continue
            acc.loop_seen.add(name)
            defs = self._defs("operator()", _FUNCTION, ctx, f, qual=f"{name}::operator()")[:2]
            if not defs:  # an epilogue whose operator() the index lacks: the class itself
                for c in self._defs(name, _CLASS, ctx, f)[:1]:
                    if c.id not in acc.by_def and not c.file.startswith(_CORE_PREFIXES):
                        step = _Node(Role.CALL, c.qual, c.file, c.line, generated=c.generated)
                        acc.by_def[c.id] = (step, [f.line], f"; functor passed as a template argument of {f.name}: its code runs there")
                        acc.steps.append(step)
            for d in defs:
                if d.id in path or d.id in acc.by_def:
                    continue
                child = _Node(Role.HELPER if stage == "native" else Role.CALL, d.qual, d.file, d.line, generated=d.generated)
                child.children = self._explore(d, ctx, depth + 1, stage, path + (d.id,))
                if not _interesting(child):  # per-element code (SoftMaxForwardEpilogue): what it calls
                    child.children = self._inner_calls(d, ctx)
                acc.by_def[d.id] = (child, [f.line], f"; functor passed as a template argument of {f.name}: its operator() runs there")
                acc.steps.append(child)

    def _jit_step(self, f: FactRow, ctx: _Ctx) -> list[_Node]:
        """Note [Jiterator kernels] (extract/jiterator.py): ``jitted_gpu_kernel<lgamma_name, ...>(iter,
        lgamma_string)`` compiles ``lgamma_string`` at run time and launches it as
        ``lgamma_kernel_vectorized4_kernel``: a ``jit`` step named after the function the string
        defines (``lgamma_name``'s value), at the ``jiterator_stringify`` line of the code."""
        targs = split_template_args(re.sub(r"/\*.*?\*/", "", f.targs))
        const = strip_templates(targs[0].strip()).rsplit("::", 1)[-1] if targs else ""
        names = self._defs(const, _JIT_NAME, ctx, f) if const.isidentifier() else []
        if not names:
            return []
        name = names[0]
        codes = [c for a in f.arg.split(",") if a for c in self._defs(a, _JIT_CODE, ctx, f)[:1]]
        at = codes[0] if codes else name
        code = f"{codes[0].name} ({at.file}:{at.line})" if codes else "its code string"
        detail = (f"jiterator: {code} compiled at run time (NVRTC) into __global__ {name.arg}_vectorized<N>_kernel / "
                  f"{name.arg}_kernel; named by {const} at {name.file}:{name.line}; launched by {f.name} at "
                  f"{f.file}:{f.line}{conditions.label(f.cond)}")
        return [_Node(Role.JIT, name.arg, at.file, at.line, detail=detail, generated=at.generated)]

    def _template_function(self, name: str, f: FactRow, ctx: _Ctx, acc: "_Found") -> None:
        """Note [Functions passed as template arguments]: ``upsample_nearest1d_out_cuda_template<
        nearest_neighbor_compute_source_index>(...)`` hands a device function to a template that
        calls it inside its kernel (``upsample_nearest1d_out_frame<scalar_t, nn_compute_source_index_fn>``);
        that function is the op's own code. A template argument naming a function defined in the
        index (not a type) is a call step at its definition, with what it calls. Only a free
        function can be one: a member function of the same name (``RecordFunction::num_inputs``) is
        not what ``TrivialOffsetCalculator<num_inputs>`` names (a local constant there)."""
        defs = [d for d in self._defs(name, _FUNCTION, ctx, f)
                if not d.file.startswith(_CORE_PREFIXES) and d.id not in acc.by_def and not _is_member(d)][:1]
        for d in defs:
            acc.loop_seen.add(name)
            step = _Node(Role.CALL, d.qual, d.file, d.line, generated=d.generated)
            step.children = self._inner_calls(d, ctx)
            acc.by_def[d.id] = (step, [f.line],
                                f"; function passed as a template argument of {f.name}: it is called there")
            acc.steps.append(step)

    def _follow(self, f: FactRow, fn: FactRow, ctx: _Ctx, depth: int, stage: str, path: tuple[int, ...],
                acc: "_Found", other_native: bool = False) -> None:
        """A call to a function with a definition in the index: its steps, if they lead anywhere."""
        defs, functor = [], False
        if f.detail in _MADE_AT_THE_CALL and self.store.has_name(f.name, _CLASS):
            # MulFunctor<opmath_t>() / CUDAFunctor_add<scalar_t> ufunctor(...): a functor made
            # here runs its operator() (not its constructor) inside the loop it is passed to
            defs = self._defs("operator()", _FUNCTION, ctx, f, qual=f"{f.qual}::operator()")
            functor = bool(defs)
            if not defs:
                if self._object_methods(f, fn, ctx, depth, stage, path, acc):
                    return
                ops = self._reduce_ops(f, ctx)
                if ops is not None:
                    acc.steps.append(ops)
                    return
        if f.detail == _OBJECT_ARG and not defs:
            return  # an object of a class without operator() or combine: data, not code
        if not defs:
            defs = (self._natives(f.name, ctx) if other_native else
                    self._defs(f.name, _FUNCTION_OR_GLOBAL, ctx, f, qual=f.qual))
        if not defs and self.platform == "rocm" and ctx.device == "cuda" and "::" in f.qual \
                and self._hip_step(f, stage, acc):
            return  # Note [Functions a ROCm build defines in .hip files] in hipsource.py
        if f.name in LOOP_HELPERS and not any(_may_follow(d, fn, stage, ctx.device) for d in defs):
            if f.name not in acc.loop_seen:
                acc.loop_seen.add(f.name)
                acc.steps.append(_Node(Role.CALL, f.qual, f.file, f.line, detail=LOOP_HELPER, generated=f.generated))
            return
        for d in defs:
            shared = not (other_native or _may_follow(d, fn, stage, ctx.device))
            if d.id in path or shared and not _shared_native_helper(f, d, stage, ctx.device, ctx.composite):
                continue
            if d.id in acc.by_def:
                acc.by_def[d.id][1].append(f.line)
                continue
            child = _Node(Role.HELPER if stage == "native" else Role.CALL, d.qual, d.file, d.line, generated=d.generated)
            suffix = f"; {OTHER_NATIVE}" if other_native else ""
            again = d.id in ctx.unshown  # explored but not shown (a launcher object's method): once more
            ctx.unshown.discard(d.id)
            if d.id in ctx.memo and not again:
                if not ctx.memo[d.id] and d.name not in LOOP_HELPERS:
                    continue
                suffix += "; expanded above"
                child.leads = bool(ctx.memo[d.id])  # what it reaches is shown above
                child.works = ctx.works.get(d.id, True)
            elif functor:
                # the per-element code the loop runs (CUDAFunctor_add -> ufunc::add); a function
                # object called right away (cuda_scatter_gather_base_kernel<...>()(...)) launches
                # its own kernels: then its body is followed like any function's
                deep = self._explore(d, ctx, depth + 1, stage, path + (d.id,)) if depth < ctx.max_depth else []
                if any(_runs_device_code(s) for s in deep):
                    suffix = "; function object: its operator() runs here"
                    child.children = deep
                else:
                    suffix = "; functor: its operator() runs for every element"
                    child.children = self._inner_calls(d, ctx)
            elif d.name not in LEAF_HELPERS:
                # another operator's native function starts its own depth, as a re-dispatched
                # operator's chain does (Note [Re-dispatch])
                seen = (set(ctx.memo), set(ctx.stubs), set(ctx.ops_shown)) if shared else None
                child.children = self._explore(d, ctx, 0 if other_native else depth + 1, stage, path + (d.id,))
                child.children += self._passed_functions(f, d, ctx, depth, stage, path)
                if not (_interesting(child) or d.name in LOOP_HELPERS):
                    continue
                if shared and not any(_shared_reach(s, f, ctx.device, ctx.composite) for s in child.walk()):
                    _forget(ctx, seen)  # what it expanded is not shown: later calls expand it again
                    continue  # Note [Shared native helpers]: only for the stub (or CPU library) it calls
            elif shared:
                continue
            if f.detail == _OBJECT_ARG:  # See Note [Functor objects passed by name] in extract/objects.py
                suffix += f"; passed as the object {f.arg}"
            # Note [Vendor paths under #if]: the call's condition, else the definition's
            acc.by_def[d.id] = (child, [f.line], suffix + _via(d, "; ") + conditions.label(f.cond or d.cond))
            acc.steps.append(child)

    def _passed_functions(self, f: FactRow, d: FactRow, ctx: _Ctx, depth: int, stage: str,
                          path: tuple[int, ...]) -> list[_Node]:
        """See Note [Functions passed by name] in passed.py: the functions named in the arguments
        of call ``f`` to ``d``, a helper that calls its own parameter, each followed."""
        calls_parameter = self._passed.helpers.get(d.id)
        if calls_parameter is None:
            if self._texts.quoted is not None:  # the bundle quotes the signatures of such helpers only
                calls_parameter = bool(self._texts.span(d.file, d.line, "{;"))
            else:
                called = [c.name for c in self.store.in_scope(d.id, _CALL_OR_LAUNCH)  # _explore's query: memoized
                          if c.kind == _CALL_KIND and not c.detail and c.qual == c.name and passed.may_be_parameter(c.name)
                          # the kinds _follow asked for these names already (memoized): no new query
                          and not self.store.has_name(c.name, _FUNCTION_OR_GLOBAL)
                          and not self.store.has_name(c.name, _CLASS)]
                calls_parameter = bool(called) and bool(
                    passed.called_parameters(self._texts.span(d.file, d.line, "{;"), called))
            self._passed.helpers[d.id] = calls_parameter
        if not calls_parameter or depth >= ctx.max_depth:
            return []
        site = (f.file, f.line, f.name)
        names = self._passed.passed.get(site)
        if names is None:
            names = self._passed.passed[site] = passed.argument_names(self._texts.span(f.file, f.line, ";"), f.name)
        out = []
        for name in names:
            defs = self._defs(name.rsplit("::", 1)[-1], _FUNCTION, ctx, f, qual=name)[:1]
            if not defs and (op := self._passed_operator(name, f, d)) is not None:
                out.append(op)
            for g in defs:
                if g.id in path or g.id == d.id:
                    continue
                node = _Node(Role.CALL, g.qual, g.file, g.line, generated=g.generated,
                             detail=f"passed by name to {d.name}, which calls its parameter" + _via(g, "; "))
                node.children = self._explore(g, ctx, depth + 2, stage, path + (d.id, g.id))
                if _interesting(node):
                    out.append(node)
        return out

    def _passed_operator(self, name: str, f: FactRow, d: FactRow) -> "_Node | None":
        """Note [Functions passed by name]: an operator's function passed to a helper that calls its
        parameter (``unary_op_impl_with_complex_to_float(self, at::abs_out)``, UnaryOps.cpp): the
        helper's call of its parameter is that operator's call, an op_call step at the call site."""
        if "::" not in name:  # a plain name defined nowhere is no operator's function (at:: is generated)
            return None
        call = self._optable().classify(name.rsplit("::", 1)[-1], name, False)
        if call is None:
            return None
        label = call.exact or call.base
        written = {"out": f"{label}_out", "exact": label}.get(call.variant, label)
        node = _Node(Role.OP_CALL, f"aten::{written}", f.file, f.line, generated=f.generated,
                     detail=f"; passed by name to {d.name}, which calls its parameter")
        node.call, node.args = call, None
        return node

    def _object_methods(self, f: FactRow, fn: FactRow, ctx: _Ctx, depth: int, stage: str,
                        path: tuple[int, ...], acc: "_Found") -> bool:
        """See Note [Launcher objects]. Whether a step was added (or an earlier one extended)."""
        classes = [c for c in self._defs(f.name, _CLASS, ctx, f, qual=f.qual)
                   if _may_follow(c, fn, stage, ctx.device)][:1]
        if not classes or depth >= ctx.max_depth:
            return False
        c = classes[0]
        if c.id in acc.by_def:
            acc.by_def[c.id][1].append(f.line)
            return True
        prefix = c.qual + "::"
        methods = [m for m in self.store.in_file(c.file, _FUNCTION)
                   if m.qual.startswith(prefix) and "::" not in m.qual[len(prefix):]
                   and m.name not in (c.name, "~" + c.name) and m.id not in path and m.id not in ctx.memo]
        role = Role.HELPER if stage == "native" else Role.CALL
        step = _Node(role, c.qual, c.file, c.line, generated=c.generated)
        for m in methods:
            child = _Node(role, m.qual, m.file, m.line, generated=m.generated,
                          detail=f"method of {c.name}: runs where the object is passed")
            child.children = self._explore(m, ctx, depth + 1, stage, path + (m.id,))
            if any(_runs_device_code(s) for s in child.children):
                step.children.append(child)
            else:  # not shown: a call of the method itself (KronImpl(...).kron()) expands it once more
                ctx.unshown.add(m.id)
        if not step.children:
            return False
        acc.by_def[c.id] = (step, [f.line], "; object made here and passed on: its methods below run where it is passed")
        acc.steps.append(step)
        return True

    def _reduce_ops(self, f: FactRow, ctx: _Ctx) -> _Node | None:
        """Note [Reduction functors]: ``gpu_reduce_kernel<scalar_t, out_t>(iter, NormTwoOps<...>())``
        passes an object with ``reduce``/``combine``/``project`` methods (no operator()) that
        reduce_kernel calls for every element; it is the op's own code in the kernel's name."""
        combines = [m for m in self.store.by_name("combine", _FUNCTION)
                    if ("::" + m.qual).endswith(f"::{f.name}::combine")]
        classes = [c for c in self._defs(f.name, _CLASS, ctx, f, qual=f.qual)
                   if combines or f.detail == _FUNCTOR_ARG]  # ArgMaxOps inherits its combine
        if not classes:
            return None
        c = classes[0]
        made = f"passed as the object {f.arg} at" if f.detail == _OBJECT_ARG else "made at"
        return _Node(Role.CALL, c.qual, c.file, c.line, generated=c.generated,
                     detail=f"reduction functor {made} {f.file}:{f.line}: its reduce/combine/project run inside the kernel")

    def _library_step(self, f: FactRow, lib: str, ctx: _Ctx, depth: int, path: tuple[int, ...]) -> _Node | None:
        """A vendor call, or one of ATen's own wrappers around it (at::cuda::blas::gemm<float>,
        at::cuda::cub::..., lapackLu<T>): a wrapper defined in the index is followed down to the
        vendor calls it makes (Note [Library layers]). None for ATen's own helper that only bears a
        vendor's prefix (Note [Vendor-named ATen helpers])."""
        step = _Node(Role.LIBRARY, f.qual, f.file, f.line, detail=lib + conditions.label(f.cond), generated=f.generated)
        if depth >= ctx.max_depth + 2:
            return step
        seen: set[tuple] = set()
        explored = {d.id: (d, self._explore(d, ctx, depth + 1, "kernel", path + (d.id,)))
                    for d in self._library_defs(f, ctx) if d.id not in path}
        if explored and "::" not in f.qual.lstrip(":") and all(d.file.startswith("aten/src/") for d, _ in explored.values()) \
                and not any(_interesting(s) for _, found in explored.values() for s in found):
            # Note [Vendor-named ATen helpers]: ``magma_int_cast`` (native/cuda/linalg/MagmaUtils.h)
            # reads like a MAGMA call by its prefix, but the tree defines it and it calls no library:
            # it is ATen's range check, not a vendor call
            return None
        for d, found in explored.values():
            inner = [s for s in found if s.role in (Role.LIBRARY, Role.LAUNCH, Role.CALL, Role.STUB_CALL)]
            leaves = [s for s in inner if _named(s) not in seen]
            if not leaves:
                continue
            seen.update(_named(s) for s in leaves)
            wrapper = _Node(Role.CALL, d.qual + (f" [{d.detail}]" if d.detail.startswith("specialization") else ""),
                            d.file, d.line, detail=f"ATen's wrapper of {lib}" + _via(d, "; "), generated=d.generated)
            wrapper.children = leaves
            step.children.append(wrapper)
            if len(step.children) >= MAX_LIBRARY_WRAPPERS:
                break
        return step

    def _library_defs(self, f: FactRow, ctx: _Ctx) -> list[FactRow]:
        rows = [r for r in self.store.by_name(f.name, _FUNCTION)
                if ("::" + r.qual).endswith("::" + f.qual.lstrip(":").split("<")[0]) and not r.generated
                and (ctx.device in ("any", "meta") or self._allowed(r.file, ctx.device))]
        return sorted(rows, key=lambda r: (r.file != f.file, r.file, r.line))[:MAX_LIBRARY_WRAPPERS]

    # ---- re-dispatch --------------------------------------------------------------------------
    def _op_call(self, f: FactRow) -> OpCall | None:
        if f.detail == _ARGUMENT:
            return None
        call = self._optable().classify(f.name, f.qual, f.detail == _MEMBER)
        if call is None and f.detail != _MEMBER and f.qual == f.name:
            call = self._optable().unqualified(f.name)  # Note [Unqualified calls in at::native] in opcalls.py
            if call is not None and any(not r.generated and _clean_ns(r.namespace) in _SEEN_FROM_NATIVE
                                        for r in self.store.by_name(f.name, _FUNCTION)):
                return None  # ATen's own function of that name, visible from at::native: a plain call
            return call
        if call is None or call.variant == "exact" or call.key:
            return call
        if f.detail != _MEMBER and f.qual == f.name and self.store.has_name(f.name, _FUNCTION):
            return None  # an unqualified call to a function defined in ATen: not the operator
        return call

    def _op_call_step(self, f: FactRow, call: OpCall, acc: "_Found") -> None:
        label = call.exact or call.base
        args = None
        if f.kind == _CALL_KIND and not call.exact:  # Note [Arguments of operator calls] in extract/calls.py
            args = ("self:Tensor, " + f.arg if f.arg else "self:Tensor") if f.detail == _MEMBER else f.arg
            if f.detail == _MEMBER and not self._optable().takes_count(call, args):
                return  # Note [A method call no overload takes] in opcalls.py
        names, _ = self._optable().pick(call, args)
        slot = (label, call.variant, call.key, tuple(names))  # one step per overload reached
        if slot in acc.op_steps:
            acc.op_steps[slot][1].append(f.line)
            return
        written = {"out": f"{label}_out", "exact": label}.get(call.variant, label)
        if f.detail == _MEMBER and "::operator" in f.qual:  # Note [Operators written on tensors] in extract/operators.py
            written += f" ({f.qual.rsplit('::', 1)[-1]})"
        step = _Node(Role.OP_CALL, f"aten::{written}", f.file, f.line, generated=f.generated)
        step.call, step.args = call, args
        overloads = self.store.operators_by_base(call.base) if not call.exact else [call.exact]
        shown = ", ".join(overloads[:6]) + (", …" if len(overloads) > 6 else "")
        step.detail = f"; {call.key} kernel called directly (no dispatcher)" if call.key else ""
        acc.op_steps[slot] = (step, [f.line], shown)
        acc.steps.append(step)

    def _view_copies(self, step: _Node, name: str) -> bool:
        """Whether a view operator that may copy (``contiguous``, ``reshape``, ``to``) copies at this
        call (Note [Views that copy] in strided.py): it is then expanded like any operator."""
        base = name.split(".", 1)[0]
        lines = self._texts.lines(step.file) if step.file and base in strided.MAY_COPY else None
        if not lines or not step.line:
            return False
        if self._views is None:
            self._views = strided.strided_views(self.all_ops())
        first = max((a for a, b in self.store.function_spans(step.file) if a <= step.line <= b), default=1)
        return bool(strided.copy_evidence(base, lines, step.line, first, self._views))

    def _expand_op_calls(self, node: _Node, ctx: _Ctx) -> None:
        """Note [Re-dispatch]: each op_call step gets the chain of the operator it reaches, for the
        same key; every operator once per chain, bounded in depth and size."""
        for child in node.children:
            if child.role == Role.OP_CALL and child.call is not None and not child.children:
                self._expand_one(child, ctx)
            else:
                self._expand_op_calls(child, ctx)

    def _expand_one(self, step: _Node, ctx: _Ctx) -> None:
        found, certain = self._optable().candidates(step.call, step.args)
        names = [n for n, _ in found]
        key = step.call.key or ctx.key
        if not names:
            return
        if not certain and len(names) > 1:
            step.detail += ("; overload not decided by the call, each shown: "
                            + "; ".join(f"{n} ({why})" for n, why in found))
        elif not certain:
            step.detail += f"; overload {names[0]} ({found[0][1]})"
        elif len(self._optable().overloads(step.call.base)) > 1 and not step.call.exact:
            step.detail += f"; overload {names[0]} ({found[0][1]})"
        for name in names:
            if name in ctx.ops_shown:
                step.detail += f"; {name}: already shown above"
                continue
            if ctx.op_depth >= ctx.max_op_depth or len(ctx.ops_shown) >= MAX_EXPANDED_OPS:
                step.detail += f"; {name} not expanded (the depth or size limit; --depth N follows deeper)"
                continue
            op = self.ops(name)
            if op is not None and _is_view(op) and not self._view_copies(step, name):
                step.detail += f"; {name} returns an alias of its input (a view): not expanded"
                continue
            found = self._entry_for(op, key) if op is not None else None
            if found is None:
                step.detail += f"; {name} has no {key} kernel"
                continue
            ctx.ops_shown.add(name)
            entry, delegate = found
            sub = _Ctx(key, devices.key_device(key), entry.key.startswith("Composite"), ctx.max_depth,
                       stubs=ctx.stubs, warnings=ctx.warnings, ops_shown=ctx.ops_shown, op_depth=ctx.op_depth + 1,
                       max_op_depth=ctx.max_op_depth, ops_running=ctx.ops_running)
            root = self._key_root(op, entry, delegate, sub)
            self._expand_op_calls(root, sub)
            if not _runs_device_code(root) and not _calls_shown_running(root, ctx.ops_running) \
                    and not (sub.device == "mps" and _mps_native(root)):
                # views, factories, metadata: nothing launches; the step stays a leaf (an MPS native
                # in a .mm file builds a graph: Note [MPSGraph operations by text] in mpsgraph.py)
                step.detail += f"; {name}: no kernel or library call in its {key} chain"
                step.runs_nothing += ((name, key),)  # told to the observer where the chain shows the step
                continue
            _drop_leaf_op_calls(root)  # inside an expansion, only the calls that lead to kernels
            step.children.append(root)
            ctx.ops_running.add(name)

    def _entry_for(self, op: Operator, key: str) -> tuple[DispatchEntry, Operator | None] | None:
        entries = self._entries(op)
        for k, e, d in entries:
            if k == key:
                return e, d
        if devices.key_device(key) != "any":
            for k, e, d in entries:
                if k in _COMPOSITE_KEYS:
                    return e, d
        return None

    def _is_native_of_op(self, name: str) -> bool:
        return self.store.has_kernel(name)

    def _optable(self) -> OperatorTable:
        if self._table is None:
            self._table = OperatorTable((), lambda base: [op for n in self.store.operators_by_base(base)
                                                          if (op := self.ops(n)) is not None],
                                        table=self.store.operator_table())  # Note [Answers kept per open index]
        return self._table

    def _inner_calls(self, fn: FactRow, ctx: _Ctx) -> list[_Node]:
        """Calls in a functor's operator() that resolve to ATen definitions (ufunc::add, ...)."""
        out = []
        for c in self.store.in_scope(fn.id, _CALL):
            for d in self._defs(c.name, _FUNCTION, ctx, c, qual=c.qual)[:1]:
                out.append(_Node(Role.CALL, d.qual, d.file, d.line, detail=f"called at {fn.file}:{c.line}",
                                generated=d.generated))
        return out

    def _launch_steps(self, f: FactRow, ctx: _Ctx) -> list[_Node]:
        """The launch step of ``f``; for a kernel a callback's parameter names, with a launch step
        (at the same line) for each kernel the callback is handed, as its children (Note [Kernels
        passed to a callback] in callbacks.py)."""
        step = self._launch_step(f, ctx)
        if "; __global__ " in step.detail or not f.name.isidentifier():
            return [step]
        handed = callbacks.kernels_handed(self._texts.lines, f, lambda name, near: self._defs(name, _FUNCTION, ctx, near),
                                          lambda name, near: next(iter(self._defs(name, _GLOBAL, ctx, near)), None))
        step.children = [_Node(Role.LAUNCH, f"{h.kernel.name}{f.detail}", f.file, f.line,
                               detail=callbacks.launch_detail(h) + conditions.label(f.cond), generated=f.generated)
                          for h in handed or ()]
        return [step]

    def _launch_step(self, f: FactRow, ctx: _Ctx) -> _Node:
        kernels = self._defs(f.name, _GLOBAL, ctx, f)
        where = ""
        if kernels:
            k = kernels[0]
            where = f"; __global__ {k.name} at " + (f"line {k.line}" if k.file == f.file else f"{k.file}:{k.line}")
        via = f"; in macro {f.via_macro}" if f.via_macro else ""
        if f.arg:  # Note [Launches through a variable] in extract/launches.py
            via += f"; through the variable {f.arg}"
        return _Node(Role.LAUNCH, f"{f.name}{f.detail}", f.file, f.line,
                     detail=f"kernel launch{where}{via}{conditions.label(f.cond)}", generated=f.generated)

    def _stub_step(self, stub: str, call: FactRow | None, caller: FactRow | None, ctx: _Ctx, depth: int,
                   path: tuple[int, ...], detail: str) -> _Node:
        ns = _clean_ns(caller.namespace) if caller else "at::native"
        step = _Node(Role.STUB_CALL, stub, call.file if call else None, call.line if call else None,
                    detail=detail if detail and not detail.endswith("; ") else
                    detail + "DispatchStub: picks the kernel registered for the tensor's device",
                    generated=bool(call and call.generated))
        declares = sorted(self.store.by_name(stub, _DECLARE), key=lambda r: r.generated)
        declares = _closest_ns(declares, ns)
        for d in declares[:2]:
            step.children.append(_Node(Role.STUB_DECLARE, f"DECLARE_DISPATCH({d.arg}, {stub})", d.file, d.line,
                                      generated=d.generated))
        stub_ns = _clean_ns(declares[0].namespace) if declares else ns
        for d in _closest_ns(self.store.by_name(stub, _DEFINE), stub_ns)[:2]:
            step.children.append(_Node(Role.STUB_DEFINE, f"DEFINE_DISPATCH({stub})", d.file, d.line, generated=d.generated))
        regs = [r for r in self._registrations(stub, stub_ns)
                if ctx.device == "any" or devices.registration_device(r.detail, r.file) == ctx.device]
        # Note [Lazy CUDA linalg]: with BUILD_LAZY_CUDA_LINALG the CUDA kernels of linalg stubs are
        # registered from a nested namespace (at::native::lazy_linalg, cuda/linalg/*.cpp), while
        # LinearAlgebraStubs.cpp registers a loader; a nested namespace that declares no stub of this
        # name registers the same stub, so both are shown, each with its #if condition.
        declared_ns = {_clean_ns(d.namespace) for d in self.store.by_name(stub, _DECLARE)}
        regs = [r for r in regs if _clean_ns(r.namespace) == stub_ns
                or _clean_ns(r.namespace).startswith(stub_ns + "::") and _clean_ns(r.namespace) not in declared_ns] \
            or _closest_ns(regs, stub_ns)
        if not regs and ctx.device not in ("any", "meta"):
            step.detail += f"; no {ctx.key} registration of {stub} in the indexed source"
            ctx.warnings.append(f"{ctx.key}: no registration of {stub} for {ctx.device} in the indexed source"
                                + ("" if self.store.codegen_absent() is None else
                                   f" (it may be registered in torchgen's output, which this index does not hold: "
                                   f"{self.store.codegen_absent()})"))
        seen_kernels: set[int] = set()
        for r in regs:
            kname = _kernel_name(r.arg)
            what = (f"{devices.registration_device(r.detail, r.file)} kernel" if kname else
                    f"no {devices.registration_device(r.detail, r.file)} kernel: registered as none")
            reg = _Node(Role.REGISTER, f"{r.detail}({stub}, {r.arg or '-'})", r.file, r.line,
                        detail=what + _via(r, "; ") + conditions.label(r.cond), generated=r.generated)
            step.children.append(reg)
            if not kname:
                continue
            for k in self._defs(kname, _FUNCTION_OR_GLOBAL, ctx, r, qual=re.sub(r"<.*", "", r.arg.lstrip("&")),
                                 same_file_first=True):
                if k.id in seen_kernels:
                    continue
                seen_kernels.add(k.id)
                ks = _Node(Role.KERNEL, k.qual, k.file, k.line, detail=_via(k), generated=k.generated)
                if k.id in path or k.id in ctx.memo:
                    ks.detail = (ks.detail + "; " if ks.detail else "") + "expanded above"
                else:
                    ks.children = self._stub_kernel_steps(k, ctx, depth, path)
                    ks.op_work = ctx.device != "cpu" and any(c.role == Role.OP_CALL for c in ks.walk())
                reg.children.append(ks)
                break
        return step

    def _stub_kernel_steps(self, k: FactRow, ctx: _Ctx, depth: int, path: tuple[int, ...]) -> list[_Node]:
        """The steps of a DispatchStub's kernel ``k``. Note [A stub kernel that calls an operator]: a
        kernel's operator calls are not steps (``at::empty``, ``at::zeros`` in a CPU kernel are
        allocations, not the work), except where a kernel reaches vendor set-up calls and nothing else
        (or nothing at all: its work is the operators it calls, as CUDA's ``isin_default_kernel_gpu``
        computes ``elements.unsqueeze(-1).eq(...).any(-1)``): then it is read again with them, and its
        operator calls stay where the native function above it drops its own (so do a kernel's
        direct calls of a backend's kernel, multinomial's ``at::cuda::cumsum_out``). A CPU kernel
        is read as before: its loops (``cpu_kernel``) are no step, so it would always be read again,
        bringing its allocations and copies (sort_kernel's ``fill_``, ``copy_``). RNN_miopen.cpp's ``lstm_miopen`` (registered to
        ``lstm_miopen_stub``) hands its work to ``_miopen_impl``, which calls the operator
        ``at::miopen_rnn`` (``CUDA: miopen_rnn``, whose chain reaches ``miopenRNNForwardTraining``).
        cuDNN's ``lstm_cudnn`` has the same shape (``_cudnn_impl`` -> ``at::_cudnn_rnn``, whose chain
        reaches ``cudnnRNNForwardTraining``); its helpers reach only cuDNN's descriptor and size calls
        (``cudnnSetTensorNdDescriptor``, ``cudnnGetRNNParamsSize``: Note [Set-up calls] in
        libraries.py), which compute nothing, so it is read again too."""
        seen = (set(ctx.memo), set(ctx.stubs), set(ctx.ops_shown))
        steps = self._explore(k, ctx, depth + 1, "kernel", path + (k.id,))
        # a CPU kernel's loops are no step (cpu_kernel is a helper): reading its operator calls brings
        # its allocations and copies (sort_kernel's fill_, copy_, arange) as if they were the work
        if ctx.kernel_ops or not (_setup_only(steps) or ctx.device != "cpu" and not any(_interesting(s) for s in steps)):
            return steps
        _forget(ctx, seen)  # what the first reading recorded as leading nowhere
        ctx.kernel_ops = True
        try:
            again = self._explore(k, ctx, depth + 1, "kernel", path + (k.id,))
        finally:
            ctx.kernel_ops = False
        return again

    def _registrations(self, stub: str, stub_ns: str) -> list[FactRow]:
        """REGISTER_DISPATCH facts of ``stub``. Note [Qualified stub registrations]: a stub declared
        in a nested namespace is registered from an outer one by a qualified name
        (``REGISTER_DISPATCH(cpublas::gemm_stub, &cpublas::cpublas_gemm_impl)`` in cpu/BlasKernel.cpp,
        the stub declared in at::native::cpublas), so the names ending with the declaring namespace's
        parts are asked too."""
        rows = list(self.store.by_name(stub, _REGISTER))
        parts = [p for p in stub_ns.split("::") if p]
        for i in range(len(parts) - 1, 0, -1):
            rows += self.store.by_name("::".join(parts[i:] + [stub]), _REGISTER)
        return rows

    # ---- names ------------------------------------------------------------------------------
    def _stub_names(self) -> frozenset[str]:
        """Every DispatchStub name: most end in _stub, some do not (where_kernel, softmax_lastdim_kernel)."""
        if self._stubs is None:
            self._stubs = self.store.stub_names()
        return self._stubs

    def _defs(self, name: str, kinds: tuple[str, ...], ctx: _Ctx, site: FactRow | None, qual: str = "",
              same_file_first: bool = False) -> list[FactRow]:
        """See Note [Resolving names]. The observer (the preview's check: Note [A preview never shows
        a wrong step] in preview.py; the complete answer has none) is told of every lookup: the name,
        the calling file, the rule that picked (with the include distance of a pick by files), how
        many definitions it answers and the kinds asked; it may have the lookup answer nothing."""
        got, pick = self._defs_of(name, kinds, ctx, site, qual)
        if self.observer is not None and self.observer.picked(
                name.rsplit("::", 1)[-1], site.file if site is not None else None, pick, len(got), kinds) is False:
            return []  # the preview cannot tell this pick from the files it read: a step missing
        return got

    def _defs_of(self, name: str, kinds: tuple[str, ...], ctx: _Ctx, site: FactRow | None,
                 qual: str) -> tuple[list[FactRow], Pick]:
        """The definitions ``name`` resolves to, and the rule that picked them."""
        if qual and "::" in qual:
            if qual.startswith(("std::", "c10::", "::std::", "thrust::", "cub::")):
                return [], lookups.NOT_IN_TREE  # no definition in the tree can change it
            suffix = "::" + _unnamed_dropped(qual.lstrip(":"))
            # SQLite keeps the rows that end with the suffix or may once unnamed namespaces are dropped
            rows = [r for r in self.store.by_name_qual(name, kinds, suffix, _NOT_WRITTEN_SORTED, _DEFS)
                    if ("::" + _unnamed_dropped(r.qual)).endswith(suffix)]
        else:
            rows = self.store.by_name(name, kinds, _DEFS)
        if not rows:
            return [], lookups.NOTHING
        if ctx.device not in ("any",):
            rows = [r for r in rows if self._allowed(r.file, ctx.device) or r.generated
                    and self._allowed(r.file.rsplit("/", 1)[-1], ctx.device)]
        if ctx.device == "cuda":  # Note [ROCm code under the CUDA key]
            rows = [r for r in rows if not self._rocm_only(r.cond)]
        if not rows:
            return [], lookups.NOTHING
        rows = self._configured(rows)
        if site is None:
            return rows[:MAX_CANDIDATES], lookups.NO_SITE
        if site.targs:  # gemm_internal_cublas<at::Half>(...): the specialization the call spells
            spelled = [r for r in rows if r.detail == f"specialization<{site.targs}>"]
            if spelled:
                return spelled[:MAX_CANDIDATES], lookups.SPELLED
        same = [r for r in rows if r.file == site.file]
        if same:
            return _every_dtype(same) or same[:MAX_CANDIDATES], lookups.SAME_FILE
        reach = self._reachable(site.file)
        inc = sorted(((reach[r.file], r.file, r.line, r.id, r) for r in rows if r.file in reach), key=lambda t: t[:4])
        if inc:
            best = inc[0][0]
            return [t[4] for t in inc if t[0] == best][:MAX_CANDIDATES], Pick.included(best)
        ns = _clean_ns(site.namespace) if site.namespace else ""
        same_ns = [r for r in rows if _clean_ns(r.namespace) == ns] if ns else []
        pool = same_ns or rows
        if len({r.file for r in pool}) <= 2:
            return pool[:MAX_CANDIDATES], lookups.NAMESPACE
        return _specializations(pool, site), lookups.NAMESPACE

    def _reachable(self, path: str, max_depth: int = 6) -> dict[str, int]:
        """Files included (transitively) by ``path`` -> include distance."""
        if path in self._reach:
            return self._reach[path]
        dist = IncludeGraph(self._includes_of, self._read_includes).distances([path], max_depth)
        self._reach[path] = dist
        return dist

    def _read_includes(self, paths: list[str]) -> None:
        """``_includes_of`` of the files of ``paths`` not read yet, in one query (a level of an
        include walk: 60-200 files per chain, ~7 levels)."""
        missing = [p for p in paths if p not in self._incl]
        if missing:
            for path, edges in self.store.includes_of_files(missing).items():
                self._incl[path] = self._device_includes(edges)

    def _includes_of(self, path: str) -> list[str]:
        """The indexed files ``path`` includes; for a CUDA chain, without ROCm-only includes (Note
        [ROCm code under the CUDA key]). Read per file: a chain's include walks meet 60-200 of the
        ~2,000 files, cheaper than loading all ~7,000 edges."""
        got = self._incl.get(path)
        if got is None:
            got = self._incl[path] = self._device_includes(self.store.includes_of(path))
        return got

    def _device_includes(self, edges: list[tuple[str, str]]) -> list[str]:
        return [dst for dst, cond in edges if not self._rocm_only(cond)]

    def _configured(self, rows: list[FactRow]) -> list[FactRow]:
        """``conditions.configured_first``: the definitions this platform's build compiles, where a
        name has some on both sides of ``#if AT_CUDNN_ENABLED()`` & co. (Note [Build-configuration
        macros] in conditions.py); each distinct condition read once."""
        off = self._off
        for r in rows:
            if r.cond not in off:
                off[r.cond] = conditions.configured_off(r.cond, self.platform)
        kept = [r for r in rows if not off[r.cond]]
        return kept or rows

    def _rocm_only(self, cond: str) -> bool:
        """``conditions.excluded`` for this platform (``rocm_only`` on CUDA, the default), once per
        distinct condition (a chain meets few, ~30,000 times)."""
        if (r := self._rocm.get(cond)) is None:
            r = self._rocm[cond] = conditions.excluded(cond, self.platform)
        return r

    def _allowed(self, path: str, device: str) -> bool:
        """``devices.file_allowed``; on ROCm, the CUDA key's code also includes native/miopen and
        native/hip (Note [The ROCm side of #if] in conditions.py) and leaves out ATen/cudnn/, which a
        ROCm build does not compile (Note [What a ROCm build leaves out] in rocmbuild.py)."""
        if self.platform == "rocm" and device == "cuda" and not rocmbuild.built(path):
            return False
        return devices.file_allowed(path, device) or (
            self.platform == "rocm" and device == "cuda" and devices.file_device(path) == "hip")


# Note [Vendor paths under #if]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Which vendor library runs is often fixed at build time: ``#if AT_MAGMA_ENABLED()`` around the
# MAGMA drivers of cuda/linalg/BatchLinearAlgebra.cpp (magmaCholesky<double> -> magma_dpotrf_gpu),
# ``#if AT_MKL_ENABLED()`` around the MKL VSL/VML paths of the CPU kernels, ``USE_LINALG_SOLVER``
# around the cuSOLVER ones. Library steps and the helper steps that lead to them carry the
# preprocessor condition of their call (else of the definition) in their detail, ``[#if COND]``,
# so both branches show, each labelled; runtime choices between them are ``--why``'s (docs/why.md).


# Note [Helpers a native delegates to]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Natives often hand their stub or functor to a shared helper: ``unary_op_impl_float(self,
# angle_stub)``, ``impl_func_cum_ops(self, dim, result, cumsum_stub)``, ``minmax_out_impl(...,
# max_stub)``, ``templates::normal_impl_<NormalStub, Generator>(self, mean, std, gen)`` (a template
# in DistributionTemplates.h). The helper's own body calls ``stub(...)`` through its parameter, so it
# leads nowhere by itself; what leads somewhere is the argument, found at the call site. The steps a
# call's stub argument (or template functor) makes are shown under a ``helper`` step at the helper's
# definition, in whatever file or header it is, so the chain reads native -> helper -> stub.


# Note [A parameter named like a stub]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Shared helpers name their stub parameters after a real stub: TensorAdvancedIndexing.cpp's
# ``scatter_impl(..., ReduceStub& reduce_stub, FillStub& fill_stub, ...)`` calls ``fill_stub(...)``,
# its parameter, which each caller binds to its own stub (scatter_stub, scatter_fill_stub), never
# to the global ``fill_stub`` (Fill.cpp's, fill_ kernel). A stub name called (or passed on) where
# the enclosing function has a parameter of that name is the parameter: it makes no step there;
# what it reaches is the caller's argument (Note [Helpers a native delegates to]).


# Note [Lambdas a loop runs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``cpu_kernel_vec(iter, [=](scalar_t a, scalar_t b) { return ufunc::add(a, b, alpha); }, [=](Vec a,
# Vec b) { return ufunc::vec_add(a, b, alpha); })`` (torchgen's UfuncCPUKernel_add.cpp) and
# ``gpu_kernel(iter, []GPU_LAMBDA(scalar_t a) { return calc_digamma(a); })``: the loop helper runs the
# lambda for every element, and the arithmetic is in the functions the lambda calls. The extractor
# records which call a lambda is passed to (the lambda fact's ``detail``); each named function called
# inside a lambda passed to a loop helper, with a definition in ATen outside its core, is a ``call``
# step under the loop helper's step, even though it launches nothing itself.


# Note [Library layers]
# ~~~~~~~~~~~~~~~~~~~~~
# ATen wraps its vendor libraries: at::cuda::blas::gemm<float> (CUDABlas.cpp, one explicit
# specialization per dtype) calls cublasSgemm / cublasGemmEx, gemm_and_bias calls cublasLtMatmul,
# at::cuda::cub::* calls cub::Device*, lapack*/magma* templates call LAPACK and MAGMA. A call the
# library table classifies whose callee is also defined in the index is followed into those
# definitions, and the vendor calls they make become the library step's children (at most
# MAX_LIBRARY_WRAPPERS specializations; the vendor functions named once, a vendor call by its name
# and line: cuSOLVER's 64-bit ``cusolverDnXsyevd`` is one function that each dtype's specialization
# calls on its own line, kept under each, so that --dtype float64 keeps xsyevd<double>'s).


# Note [Launcher objects]
# ~~~~~~~~~~~~~~~~~~~~~~~
# ``run_launcher<scalar_t, index_t>(values, indices, self, dim, KthValueLauncher(k))`` (cuda/Sorting.cu)
# and ``sortCommon(SmallBitonicSort{}, key, value, dim, descending)`` (cuda/Sort.cu) pass an object
# whose class has no operator() to a template that calls a method on it (``l.template
# launch<...>(...)`` in SortingCommon.cuh, ``sorter.template sort<A>(...)``). Inside the template the
# receiver's type is a template parameter, so the method cannot be named there; at the call site
# the class is known. The methods of the class made there that lead to device code (a launch, a
# library call, a stub) are shown under the class, and the template that receives it, which leads
# nowhere by itself, is left out. Classes whose methods lead nowhere (reduction functors such as
# ArgMaxOps: reduce/combine run inside reduce_kernel) are Note [Reduction functors].


# Note [Generated steps]
# ~~~~~~~~~~~~~~~~~~~~~~
# Operators with `ufunc_inner_loop` (add.out, sub's add_stub, ...) get their CPU and CUDA
# TORCH_IMPL_FUNC, their stub registrations and their CUDA functors from torchgen's ufunc
# codegen (UfuncCPU_<op>.cpp, UfuncCPUKernel_<op>.cpp, UfuncCUDA_<op>.cu). When those files are
# not indexed, the chain shows one `generated` step naming them, with the hand-written inner loop
# in native/ufunc/<op>.h and whatever the stub has in the hand-written tree.


def call_may_lead_somewhere(name: str, qual: str, detail: str, defined: set[str], ops: set[str],
                            stubs: set[str]) -> bool:
    """Whether ``Resolver._explore`` can make a step of a call fact (``name``, ``qual`` and ``detail`` as
    the index stores them), given the names with a definition (function, ``__global__``, class), the
    operators' base names and the DispatchStub names: a call into a vendor library, a stub (also passed
    as an argument), an operator, a loop helper, or a call with a definition to follow. Member calls
    (``a.b()``) lead somewhere only as operators and loop helpers. A superset of what ``_explore`` shows
    (it checks definitions per device and file); the bundle keeps exactly these calls."""
    if library_of(qual) is not None:
        return True
    if detail == _ARGUMENT:
        return name in stubs
    if detail == _MACRO_ARG:
        return False  # Note [Functions handed to a macro] in extract/calls.py: library calls only
    if name in ops or name in LOOP_HELPERS:
        return True
    if "_ops::" in qual or any(name.endswith(s) and name[: -len(s)] in ops for s in ("_out", "_outf", "_symint")):
        return True  # Note [Re-dispatch]: at::_ops::foo::call, at::foo_out / foo_outf, at::foo_symint
    if detail == _MEMBER:
        return "::" in qual and name in defined  # l.launch(...) on a local of a known class
    return name in defined or name in stubs


# The kinds of facts the resolver asks for (kinds.FactKind), each tuple once, of the members' plain
# text: SQLite binds a str subclass through its adapter lookup, ~3 us a parameter (~1,400 queries a
# chain), and a tuple of plain strings hashes as the memo's keys do (Note [One query per question]).
def _kinds(*members: FactKind) -> tuple[str, ...]:
    return tuple(m.value for m in members)


_FUNCTION = _kinds(FactKind.FUNCTION)
_CLASS = _kinds(FactKind.CLASS)
_GLOBAL = _kinds(FactKind.GLOBAL)
_FUNCTION_OR_GLOBAL = _kinds(FactKind.FUNCTION, FactKind.GLOBAL)
_NATIVE = _kinds(FactKind.FUNCTION, FactKind.IMPL_FUNC)  # an operator's native function
_IMPL_FUNC = _kinds(FactKind.IMPL_FUNC)
_META_FUNC = _kinds(FactKind.META_FUNC)
_BINDING = _kinds(FactKind.BINDING)
_TORCH_IMPL = _kinds(FactKind.TORCH_IMPL)
_DECLARE = _kinds(FactKind.DECLARE_DISPATCH)
_DEFINE = _kinds(FactKind.DEFINE_DISPATCH)
_REGISTER = _kinds(FactKind.REGISTER_DISPATCH)
_CALL = _kinds(FactKind.CALL)
_CALL_OR_LAUNCH = _kinds(FactKind.CALL, FactKind.LAUNCH)
_LAMBDA = _kinds(FactKind.LAMBDA)
_JIT_NAME = _kinds(FactKind.JIT_NAME)
_JIT_CODE = _kinds(FactKind.JIT_CODE)
# The members compared with every call fact a chain reads (~29,000 times in relu's), bound once: an
# Enum member's attribute access (CallDetail.MEMBER) costs ~140 ns on Python 3.11, ~4 ms a chain.
_ARGUMENT, _MEMBER, _MACRO_ARG = CallDetail.ARGUMENT, CallDetail.MEMBER, CallDetail.MACRO_ARG
_OBJECT_ARG, _FUNCTOR_ARG = CallDetail.OBJECT_ARG, CallDetail.FUNCTOR_ARG
_CALL_KIND, _LAUNCH_KIND, _LAMBDA_KIND, _IMPL_FUNC_KIND = FactKind.CALL, FactKind.LAUNCH, FactKind.LAMBDA, FactKind.IMPL_FUNC
_DEFS, _TEMPLATE_ARGUMENT = LookupStep.DEFS, LookupStep.TEMPLATE_ARGUMENT  # the steps told to the observer
# Calls that may make an object whose class has an operator() (a functor) or methods (_follow).
_MADE_AT_THE_CALL = frozenset({CallDetail.PLAIN, CallDetail.FUNCTOR, CallDetail.FUNCTOR_ARG, CallDetail.OBJECT_ARG})
_CORE_PREFIXES = ("aten/src/ATen/core/", "aten/src/ATen/detail/", "aten/src/ATen/functorch/", "aten/src/ATen/templates/")
# Templates whose arguments are value types, never code that runs (std::make_tuple<Tensor, Tensor>(...)).
_VALUE_TEMPLATES = frozenset({"pair", "make_pair", "tuple", "make_tuple", "tie", "vector", "array", "optional",
                              "get", "move", "forward", "static_cast", "reinterpret_cast", "const_cast"})


def _may_follow(d: FactRow, caller: FactRow, stage: str, device: str = "any") -> bool:
    """Native stage: helpers in the native function's own file, or in code of the chain's own
    device (cuda/, cudnn/, mkldnn/ ...); common helpers elsewhere are left to the stubs. Kernel
    stage: ATen's native and device code, not its core infrastructure (Parallel.h,
    TensorIterator.cpp, core/)."""
    if stage == "native":
        return d.file == caller.file or (
            device not in ("any", "meta") and devices.file_device(d.file) == device
            and not d.file.startswith(_CORE_PREFIXES))
    if d.file.startswith(_CORE_PREFIXES):
        return False
    if d.file.startswith("aten/src/ATen/") and d.file.count("/") == 3 and not d.generated:
        return False  # top-level ATen/*.cpp|h: TensorIterator, Parallel, Dispatch, ...
    return True


# Note [Specializations in other files]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# flash_api.cpp calls ``run_mha_fwd_<elem_type, kHeadDim>(params, stream)``, a template declared in
# flash.h whose only definitions are explicit specializations, one per head size and dtype, each in
# its own generated file (flash_attn/kernels/flash_fwd_hdim128_fp16_sm80.cu: ``template<> void
# run_mha_fwd_<cutlass::half_t, 128>(...)``). None is in a file the caller includes, and there are more
# than two files, which otherwise means an ambiguous name; but all are the one template the call
# names. The specialization the call's template arguments spell is taken when there is one, else the
# first MAX_CANDIDATES (the others run the same code, shown once).


def _specializations(pool: list[FactRow], site: FactRow) -> list[FactRow]:
    """See Note [Specializations in other files]."""
    if len({r.qual for r in pool}) != 1 or not all(r.detail.startswith("specialization<") for r in pool):
        return []
    spelled = [r for r in pool if site.targs and r.detail == f"specialization<{site.targs}>"]
    return (spelled or sorted(pool, key=lambda r: (r.file, r.line)))[:MAX_CANDIDATES]


def _every_dtype(rows: list[FactRow]) -> list[FactRow]:
    """Note [Explicit specializations per dtype]: a generic call (``gemm_internal<Dtype>(...)``
    inside a template) into a template whose explicit specializations are in the same file reaches
    each of them: all are shown (up to MAX_LIBRARY_WRAPPERS), without the primary template."""
    specs = [r for r in rows if r.detail.startswith("specialization<")]
    if len(specs) <= MAX_CANDIDATES or len({r.qual for r in rows}) != 1:
        return []
    return specs[:MAX_LIBRARY_WRAPPERS]


# Note [Explicit specializations per dtype]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# CUDABlas.cpp defines ``gemm_internal<double>``, ``<float>``, ``<c10::complex<double>>``,
# ``<c10::complex<float>>``, ``<at::Half>``, ``<at::BFloat16>`` as explicit specializations; the Half
# and BFloat16 ones call ``gemm_internal_cublas<at::Half>``, whose specialization calls
# ``cublasGemmEx`` where the float one calls ``cublasSgemm``. A call that spells its template
# argument reaches that specialization only; a generic one (``gemm_internal<Dtype>`` in
# ``gemm<Dtype>``) reaches each, so the dtype-specific vendor calls all appear.


_NOT_WRITTEN = INLINE_NAMESPACES - {"detail"}
_NOT_WRITTEN_SORTED = sorted(_NOT_WRITTEN)


def _is_member(d: FactRow) -> bool:
    """A function defined in a class (or out of line as ``Class::name``): its qualified name's
    scope is more than the namespace it is defined in."""
    scope = d.qual.rsplit("::", 1)[0] if "::" in d.qual else ""
    return _clean_ns(scope) != _clean_ns(d.namespace or "")


@lru_cache(maxsize=16384)
def _unnamed_dropped(qual: str) -> str:
    """``at::native::(anonymous namespace)::mexp`` -> ``at::native::mexp``: what a call may write for
    it (a member of an unnamed or inline namespace is named through the enclosing one; See Note
    [Inline namespaces]). ``detail`` is a real namespace a call writes, so it stays."""
    return "::".join(p for p in qual.split("::") if p not in _NOT_WRITTEN)


# Note [Shared native helpers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A native function calls helpers in other files of native/ by their full name:
# ``at::native::_fft_fill_with_conjugate_symmetry_(output, dim)`` in cuda/SpectralOps.cpp is defined in
# SpectralOps.cpp and calls ``fft_fill_with_conjugate_symmetry_stub``, whose CUDA kernel launches
# ``_fft_conjugate_copy_kernel``. Such device-neutral helpers are not followed in general (they are
# many and mostly checks, see _may_follow); one called as ``at::native::X`` / ``native::X`` from the
# native stage is followed, and kept only when it reaches a DispatchStub. On the CPU key the CPU
# BLAS helpers are such helpers too, called unqualified: addmv_out_cpu (Blas.cpp) calls
# ``gemv<scalar_t>(...)`` of BlasKernel.cpp, whose ``blas_impl::gemv_fast_path<float>`` calls
# ``sgemv_``; so on CPU a helper of native/ instantiated per dtype (a call with template
# arguments, inside the AT_DISPATCH) is followed too, and kept when it reaches a vendor library call.
# A composite kernel does its work by calling operators, often through ATen's shared helpers:
# sum_to_size is ``return sum_to(self, size);`` and at::sum_to (ExpandUtils.h) calls
# ``tensor.sum(reduce_dims, true)``. In a composite kernel's chain a helper in one of ATen's own
# headers (aten/src/ATen/*.h: ExpandUtils.h, WrapDimUtils.h) is followed, and kept when it calls an
# operator.


def _shared_native_helper(call: FactRow, d: FactRow, stage: str, device: str = "any", composite: bool = False) -> bool:
    """See Note [Shared native helpers]."""
    if stage == "native" and composite and d.file.startswith("aten/src/ATen/") and d.file.count("/") == 3 \
            and d.file.endswith(".h") and not d.generated:
        return True  # a composite's helper in ATen's own headers (ExpandUtils.h): kept when it calls an operator
    return stage == "native" and (device == "cpu" and bool(call.targs) or call.qual.startswith(("at::native::", "native::"))) \
        and d.file.startswith("aten/src/ATen/native/") and not d.generated


def _forget(ctx: _Ctx, seen: tuple[set, set, set]) -> None:
    """Undo what a dropped helper's exploration recorded as shown (functions, stubs, operators)."""
    memo, stubs, ops = seen
    for key in set(ctx.memo) - memo:
        del ctx.memo[key]
        ctx.works.pop(key, None)
    ctx.stubs.intersection_update(stubs)
    ctx.ops_shown.intersection_update(ops)
    ctx.ops_running.intersection_update(ops)


def _shared_reach(step: "_Node", call: FactRow, device: str, composite: bool = False) -> bool:
    """What keeps a shared native helper (Note [Shared native helpers]): a DispatchStub it calls
    (when called as at::native::X), on CPU a vendor library call it makes (gemv -> sgemv_), and in
    a composite kernel an operator it calls."""
    if composite and step.role == Role.OP_CALL:
        return True
    if step.role == Role.STUB_CALL:
        return call.qual.startswith(("at::native::", "native::"))
    return device == "cpu" and step.role == Role.LIBRARY


def _kernel_name(arg: str) -> str:
    a = arg.strip().lstrip("&").strip()
    if not a or a in ("nullptr", "NULL", "0"):
        return ""
    a = re.sub(r"<.*", "", a)
    return a.rsplit("::", 1)[-1].strip()


def _closest_ns(rows: list[FactRow], ns: str) -> list[FactRow]:
    if not rows:
        return rows
    exact = [r for r in rows if _clean_ns(r.namespace) == ns]
    return exact or rows


_SHOWN = ": already shown above"


def _via(f: FactRow, sep: str = "") -> str:
    return f"{sep}made by macro {f.via_macro}" if f.via_macro else ""


def _is_view(op: Operator) -> bool:
    return returns_alias(op.schema)


def _tell_runs_nothing(root: _Node, observer: LookupObserver) -> None:
    """Each operator that an op_call step of the finished tree says runs nothing (Note [Lookups told
    to an observer] in lookups.py)."""
    for step in root.walk():
        for name, key in step.runs_nothing:
            observer.runs_nothing(name, key)


def _drop_leaf_op_calls(step: _Node) -> None:
    # an operator shown elsewhere in the chain is kept: it is another way to that operator's runs
    # (Note [Every way to a run] in runs.py)
    step.children = [c for c in step.children if c.role != Role.OP_CALL or c.children or _SHOWN in c.detail]
    for c in step.children:
        _drop_leaf_op_calls(c)


# Note [An operator whose work is shown above]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every operator is expanded once per chain (Note [Re-dispatch]); a later call of it is a leaf that
# reads "already shown above". An operator whose own chain reaches device code only through such a
# leaf still runs it: pad's ``_pad_circular`` copies with ``copy_``, which constant_pad_nd's chain
# expanded first, and ``masked_fill`` clones (``clone`` -> ``copy_``). Its expansion is kept, the
# leaf in it being another way to the shown operator's runs (Note [Every way to a run] in runs.py);
# dropped as "no kernel", the runs it leads to had one way only, which a call's arguments could rule
# out (``mode="circular"`` left pad no run at all).
def _calls_shown_running(step: _Node, running: set) -> bool:
    """An operator call in ``step``'s tree that reads "already shown above" for an operator whose
    shown expansion runs device code (Note [An operator whose work is shown above])."""
    if not running:
        return False
    for s in step.walk():
        if s.role == Role.OP_CALL and not s.children and _SHOWN in s.detail:
            if any(part.strip().removesuffix(_SHOWN).strip() in running
                   for part in s.detail.split(";") if part.endswith(_SHOWN)):
                return True
    return False


def _runs_device_code(step: _Node) -> bool:
    """A launch, a library call, or a stub with a kernel registered for the device."""
    return any(s.role.runs_on_device or s.role == Role.KERNEL or s.role == Role.CALL and s.detail == LOOP_HELPER
               for s in step.walk())


def _mps_native(step: _Node) -> bool:
    """A native function in an Objective-C++ file: MPS code whose graph operations the index's facts
    do not hold (Note [MPSGraph operations by text] in mpsgraph.py)."""
    return any(s.role == Role.NATIVE and (s.file or "").endswith(".mm") for s in step.walk())


def _named(step: _Node) -> tuple:
    """What names a wrapper's step once among its specializations (Note [Library layers]): a call by
    its name, a vendor call by its name and line. cuSOLVER's 64-bit API is one function for every
    dtype: ``xsyevd<float>`` and ``xsyevd<double>`` each call ``cusolverDnXsyevd`` on their own line,
    and a float64 call runs the second (Note [Specializations by dtype] narrows by the wrapper)."""
    return (step.symbol, step.file, step.line) if step.role == Role.LIBRARY else (step.symbol,)


def _reaches_device_code(step: _Node) -> bool:
    return any(s.role in (Role.STUB_CALL, Role.LAUNCH, Role.JIT, Role.LIBRARY, Role.KERNEL, Role.GENERATED) for s in step.walk())


# the namespaces whose functions an unqualified call in at::native can name (not at::native::vulkan::ops's
# _local_scalar_dense: item's `return _local_scalar_dense(self);` is the operator)
_SEEN_FROM_NATIVE = frozenset({"at::native", "at", ""})


# Note [Operator calls in kernel chains]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A backend kernel that reaches its own device code also calls at::empty, views, contiguous, fill_,
# copy_...; those redispatches are noise there, and every operator call of such a kernel is dropped.
# They are kept for composite kernels and for thin wrappers (relu -> clamp_min), where they are the
# chain. Tried and not kept (session 16): keeping the calls of operators other than the helper
# operators (Note [Helper operators after the operator's work] in opcalls.py) where their chain
# reaches device code. It found ``_batch_norm_with_update_cuda``'s ``at::cudnn_batch_norm`` and
# isin's ``at::_unique``, but one step stands for all the call sites of an operator in a function,
# and only the branches common to them are read: ``mm`` then listed, among its first runs, the
# ``at::gelu_`` that ``addmm_out_cuda_impl`` runs only for a GELU epilogue (two sites, under
# ``case Activation::GELU`` and under ``if (useLtInterface && activation == Activation::GELU)``).
# Kept since: a call in a branch on a backend selector's value (``if (backend ==
# BatchNormBackend::Cudnn) return at::cudnn_batch_norm(...)``: Note [A branch on a selector's value]
# in selectors.py); ``activation`` is a parameter, set by no selector.
def _drop_op_calls(step: _Node, kept: Callable[[_Node], bool]) -> None:
    """Note [Operator calls in kernel chains]; ``kept``: the calls a backend selector's branch
    holds (Note [A branch on a selector's value] in selectors.py)."""
    if step.op_work:
        return  # its operator calls are its work (Note [A stub kernel that calls an operator])
    step.children = [c for c in step.children if c.role != Role.OP_CALL or kept(c)]
    for c in step.children:
        _drop_op_calls(c, kept)
    step.children = [c for c in step.children if c.role != Role.HELPER or _interesting(c) or "functor" in c.detail]


def _does_work(step: _Node) -> bool:
    """Whether ``step`` reaches more than vendor set-up calls (a launch, a jit kernel, a library call
    that computes, a stub, an operator call): Note [A stub kernel that calls an operator]."""
    if step.role == Role.LIBRARY:
        return not is_setup_call(step.symbol)
    if step.role in INTERESTING:
        return True
    if step.leads:
        return step.works
    return any(_does_work(c) for c in step.children)


def _setup_only(steps: list[_Node]) -> bool:
    """Whether ``steps`` reach vendor library calls and all of them are set-up calls (Note [Set-up
    calls] in libraries.py): Note [A stub kernel that calls an operator]."""
    return not any(_does_work(s) for s in steps) and any(_reaches_library(s) for s in steps)


def _reaches_library(step: _Node) -> bool:
    """A library step below ``step``, or one shown above (``leads``: its reach has a library, launch or
    stub step; when it does no work, that is a set-up call)."""
    if step.role == Role.LIBRARY or step.leads:
        return True
    return any(_reaches_library(c) for c in step.children)


def _interesting(step: _Node) -> bool:
    if step.role in INTERESTING or step.leads:
        return True
    return any(_interesting(c) for c in step.children)


__all__ = ["Resolver", "call_may_lead_somewhere"]
