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

import re
from collections import deque

from atenmap import devices
from atenmap.errors import AtenmapError
from atenmap.model import KernelMatch, Location, Role, Step, Where, at
from atenmap.names import clean_namespace, strip_templates
from atenmap.resolve.kernelname import KernelName, parse_kernel_name
from atenmap.resolve.libraries import family_calls_like, library_of, library_of_call, same_family
from atenmap.store import FactRow, Store

MAX_VISITED = 4000
MAX_OPERATORS = 40
MAX_TRACE_LINES = 100_000

# Template arguments that are loop machinery, not the operator's own code.
_MACHINERY = re.compile(
    r"(OffsetCalculator|LoadWithCast|StoreWithCast|LoadWithoutCast|StoreWithoutCast|func_wrapper_t|ReduceOp|"
    r"ReduceConfig|TensorInfo|Array|array|detail::|memory::|IntDivider|TrivialOffsetCalculator|"
    r"OpaqueType|AccumulateType|opmath|WelfordData|c10::)")


class KernelIndex:
    """Reverse lookups over one index. Results are cached per anchor, so a trace with many
    launches of few kernels costs little."""

    def __init__(self, store: Store):
        self.store = store
        self._ops_cache: dict[tuple, list[tuple[int, str]]] = {}
        self._kernel_ops: dict[str, list[tuple[str, str]]] | None = None
        self._incl: dict[str, list[str]] | None = None
        self._reach: dict[str, set[str]] = {}
        self._globals: list[str] | None = None
        self._regs: dict[str, list[FactRow]] | None = None
        self._lib_cache: dict[str, list[FactRow]] = {}

    # ---- kernel names -----------------------------------------------------------------------
    def lookup(self, text: str) -> KernelMatch:
        """The match of one kernel name (demangled, mangled or plain); AtenmapError for an empty one."""
        name = parse_kernel_name(text)
        base = dict(query=name.raw, kind=name.kind, function=name.function, qualname=name.qualname, detail=name.detail)
        if name.kind in ("memcpy", "memset"):
            rows = self._calls_named(("cudaMemcpyAsync", "cudaMemcpy2DAsync", "memcpy_and_sync",
                                      "cudaMemsetAsync", "cudaMemset"))
            operators = [o for o in self._operators_from(self._scopes(rows), limit=200) if _cuda_key(o)]
            return KernelMatch(**base, library_calls=tuple(_call_step(r) for r in rows[:20]),
                               operators=tuple(operators[:MAX_OPERATORS]), notes=(name.detail, *name.notes))
        library, library_calls, lib_operators, lib_notes = None, (), (), ()
        if name.kind == "library":
            library, lib_notes = name.library, (name.detail,)
            calls = self._library_calls(name.library or "")
            shape = next((w for w in ("gemv", "gemm", "matmul", "conv", "fprop", "dgrad", "wgrad", "fft", "sort")
                          if w in name.raw.lower()), None)
            if shape in ("gemm", "gemv"):
                # a GEMM kernel comes from a GEMM-shaped call; dot/gemv/... would only add noise
                narrowed = [c for c in calls if shape in c.qual.lower() or "matmul" in c.qual.lower()]
                calls = narrowed or calls
            library_calls = tuple(_call_step(r, library_of(r.qual)) for r in calls[:30])
            lib_operators = tuple(self._operators_from(self._scopes(calls), limit=MAX_OPERATORS))
            if not name.function or name.library not in ("CUB", "flash-attention", "mem-efficient-attention"):
                return KernelMatch(**base, library=library, library_calls=library_calls, operators=lib_operators,
                                   notes=(*lib_notes, *name.notes))
        definition, launches, functors, operators, notes = self._kernel(name)
        found = bool(definition or functors or launches or library or operators)
        return KernelMatch(**base, definition=definition, launches=launches, functors=functors, operators=operators,
                           library=library, library_calls=library_calls, notes=(*lib_notes, *notes, *name.notes),
                           nearest=() if found else tuple(self.nearest(name.function or name.raw)))

    def _kernel(self, n: KernelName) -> tuple[Step | None, tuple[Step, ...], tuple[Step, ...], tuple[str, ...],
                                              tuple[str, ...]]:
        """(definition, launches, functors, operators, notes) of a kernel ATen defines; see
        Note [Walking up to operators]."""
        notes: list[str] = []
        definition = None
        globals_ = self._by_qual(n.function, n.qualname, ("global",))
        if globals_:
            g = globals_[0]
            definition = Step(Role.KERNEL, g.qual, at(g.file, g.line), detail="__global__ function",
                              generated=g.generated)
            if len(globals_) > 1:
                notes.append(f"{len(globals_)} __global__ functions named {n.function}; showing the best match")
        launches = []
        for launch in self.store.by_name(n.function, ("launch",)):
            if definition is None or self._visible(launch.file, definition.file):
                fn = self.store.by_id(launch.scope) if launch.scope else None
                launches.append(Step(Role.LAUNCH, launch.name + launch.detail, at(launch.file, launch.line),
                                     detail=f"in {fn.qual}" if fn else "", generated=launch.generated))
        functors: list[Step] = []
        anchors: list[FactRow] = []
        for lam in n.lambdas:
            encl = _clean_qual(lam.enclosing)
            last = encl.rsplit("::", 1)[-1] if "operator()" not in encl else "operator()"
            fns = self._by_qual(last, encl, ("function", "impl_func", "global"), strict=True)
            for fn in fns[:2]:
                line, approx = self._lambda_line(fn, lam)
                functors.append(Step(Role.CALL, f"{fn.qual}::{{lambda #{lam.ordinal}}}", at(fn.file, line or fn.line),
                                     detail=f"lambda in {fn.qual} ({fn.file}:{fn.line})"
                                     + ("; position approximate" if approx else ""), generated=fn.generated))
                anchors.append(fn)
        for functor in n.functors:
            short = functor.rsplit("::", 1)[-1]
            if _MACHINERY.search(functor) or not short:
                continue
            classes = self._by_qual(short, functor, ("class",))
            for c in classes[:2]:
                functors.append(Step(Role.CALL, c.qual, at(c.file, c.line), detail="functor the kernel is instantiated with",
                                     generated=c.generated))
                anchors.extend(self._users_of_class(c))
                anchors.extend(self._operator_methods(c))
        device_ok = _cuda_key if definition is not None or n.kind == "kernel" else (lambda _k: True)
        hints = _name_tokens([f.rsplit("::", 1)[-1] for f in n.functors] + [lam.enclosing_name for lam in n.lambdas])
        operators = [o for o in self._operators_from([a for a in anchors if a is not None], limit=200)
                     if device_ok(o)][:MAX_OPERATORS]
        operators.sort(key=lambda o: 0 if _op_base(o) in hints else 1)  # stable: distance order kept
        if not operators and definition is not None:
            launchers = [self.store.by_id(s.scope) for s in self.store.by_name(n.function, ("launch",)) if s.scope]
            operators = [o for o in self._operators_from([a for a in launchers if a is not None], limit=200)
                         if device_ok(o)][:MAX_OPERATORS]
            if operators and anchors:
                notes.append("operators found from the kernel's launch sites (its functor/lambda led nowhere)")
        return definition, tuple(launches), tuple(functors), tuple(operators), tuple(notes)

    # ---- where ------------------------------------------------------------------------------
    def where(self, file: str, line: int | None = None, function: str | None = None) -> Where:
        """The function at ``file:line`` (or named ``function`` in ``file``) and the operators
        whose chains pass through it; AtenmapError when there is none."""
        rows = self.store.in_file_like(file, ("function", "impl_func", "global", "meta_func"))
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
        """See Note [Walking up to operators]."""
        key = tuple(sorted({a.id for a in anchors if a is not None}))
        if not key:
            return []
        if key not in self._ops_cache:
            self._ops_cache[key] = self._walk([a for a in anchors if a is not None])
        found = self._ops_cache[key]
        out, seen = [], set()
        for _dist, label in sorted(found):
            if label not in seen:
                seen.add(label)
                out.append(label)
        return out[:limit]

    def _walk(self, anchors: list[FactRow]) -> list[tuple[int, str]]:
        kernel_ops = self._kernel_table()
        found: list[tuple[int, str]] = []
        queue = deque((a, 0) for a in anchors)
        visited = {a.id for a in anchors}
        while queue and len(visited) < MAX_VISITED:
            fn, dist = queue.popleft()
            for op, key in kernel_ops.get(fn.name, ()):
                if self._kernel_matches(fn, key):
                    found.append((dist, f"aten::{op} [{key}]"))
            for op in self._registered_ops(fn):
                found.append((dist, op))
            for nxt in self._up(fn):
                if nxt.id not in visited:
                    visited.add(nxt.id)
                    queue.append((nxt, dist + 1))
        # operators that run these through structured_delegate
        extra = []
        for dist, label in found:
            op = label.split(" ")[0].removeprefix("aten::")
            key = label.split("[")[-1].rstrip("]")
            for d in self.store.delegating_to(op):
                extra.append((dist + 1, f"aten::{d} [{key}]"))
        return found + extra

    def _up(self, fn: FactRow) -> list[FactRow]:
        """Functions one step up from ``fn``: its callers, and the callers of stubs it is registered for."""
        out = []
        names = [fn.name]
        if fn.kind == "function" and fn.name == "operator()":
            return self._users_of_class_of(fn)
        for reg in self._registrations().get(fn.name, ()):
            if reg.file == fn.file or self._visible(reg.file, fn.file):
                names.append(reg.name)  # the stub
        for name in names:
            for call, caller in self.store.callers(name):
                if caller is None:
                    continue
                if name == fn.name and call.file != fn.file and not self._visible(call.file, fn.file):
                    continue
                out.append(caller)
        if not out and fn.kind == "function":
            # a method called only through a template parameter (l.template launch<...>() in
            # run_launcher): up to where its object is made. See Note [Launcher objects] in chain.py.
            out = self._users_of_class_of(fn)
        return out

    def _registered_ops(self, fn: FactRow) -> list[str]:
        """Operators whose generated wrapper is ``fn`` (m.impl("op", TORCH_FN(fn)))."""
        if not fn.generated or not fn.name.startswith("wrapper_"):
            return []
        out = []
        for r in self.store.torch_impls_of(fn.name, fn.file):
            scope = self.store.by_id(r.scope) if r.scope else None
            key = scope.arg.strip("()").split(",")[1].strip() if scope and "," in scope.arg else "?"
            out.append(f"aten::{r.name} [{key}]")
        return out

    def _kernel_matches(self, fn: FactRow, key: str) -> bool:
        if fn.kind == "impl_func":
            return True
        if fn.kind != "function" or "native" not in fn.namespace.split("::"):
            return False
        return devices.file_allowed(fn.file, devices.key_device(key)) or fn.generated

    def _kernel_table(self) -> dict[str, list[tuple[str, str]]]:
        if self._kernel_ops is None:
            table: dict[str, list[tuple[str, str]]] = {}
            for op, key, kernel in self.store.conn.execute("SELECT operator, key, kernel FROM dispatch"):
                table.setdefault(kernel, []).append((op, key))
            self._kernel_ops = table
        return self._kernel_ops

    def _users_of_class(self, cls: FactRow) -> list[FactRow]:
        """Functions that construct or declare the functor ``cls`` (in files that can see it)."""
        out = []
        for call, caller in self.store.callers(cls.name):
            if caller is not None and (call.file == cls.file or self._visible(call.file, cls.file)):
                out.append(caller)
        for call, caller in self.store.callers(f"{cls.name}::operator()", by_qual=True):
            if caller is not None:
                out.append(caller)
        return out

    def _users_of_class_of(self, method: FactRow) -> list[FactRow]:
        cls_name = method.qual.rsplit("::", 2)[-2] if method.qual.count("::") >= 1 else ""
        out = []
        for c in self.store.by_name(cls_name, ("class",)):
            if c.file == method.file:
                out.extend(self._users_of_class(c))
        return out

    def _operator_methods(self, cls: FactRow) -> list[FactRow]:
        return [f for f in self.store.in_file(cls.file, ("function",))
                if f.name == "operator()" and f.qual.startswith(cls.qual + "::")]

    def _registrations(self) -> dict[str, list[FactRow]]:
        """kernel name -> REGISTER_*DISPATCH facts naming it (read once: there are ~1000)."""
        if self._regs is None:
            regs: dict[str, list[FactRow]] = {}
            for r in self.store.facts_of_kind("register_dispatch"):
                kernel = re.sub(r"<.*", "", r.arg).rsplit("::", 1)[-1].strip()
                regs.setdefault(kernel, []).append(r)
            self._regs = regs
        return self._regs

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
        lambdas = [f for f in self.store.in_scope(fn.id, ("lambda",)) if f.arg == str(arity)]
        if not lambdas:
            return None, True
        if 1 <= lam.ordinal <= len(lambdas):
            return lambdas[lam.ordinal - 1].line, True
        return lambdas[0].line, True

    def _library_calls(self, library: str) -> list[FactRow]:
        """Calls of ATen into ``library``'s family (cached per library): a cuBLASLt or CUTLASS kernel
        comes from cublasGemmEx, cublasLtMatmul or at::cuda::blas::gemm alike. See Note [Library
        families] in libraries.py."""
        if library in self._lib_cache:
            return self._lib_cache[library]
        out = [r for r in self.store.calls_matching(family_calls_like(library))
               if same_family(library_of_call(r.qual), library)]
        self._lib_cache[library] = out
        return out

    def _calls_named(self, names: tuple[str, ...]) -> list[FactRow]:
        return [r for n in names for r in self.store.by_name(n, ("call",))]

    def _scopes(self, calls: list[FactRow]) -> list[FactRow]:
        ids = sorted({c.scope for c in calls if c.scope})
        return [f for f in (self.store.by_id(i) for i in ids) if f is not None]

    def _visible(self, from_file: str, to_file: str) -> bool:
        if from_file == to_file:
            return True
        if from_file not in self._reach:
            if self._incl is None:
                self._incl = self.store.include_graph()
            seen = {from_file}
            frontier = [from_file]
            for _ in range(6):
                nxt = []
                for p in frontier:
                    for t in self._incl.get(p, ()):
                        if t not in seen:
                            seen.add(t)
                            nxt.append(t)
                frontier = nxt
            self._reach[from_file] = seen
        reach = self._reach[from_file]
        if to_file in reach:
            return True
        # Note [Definitions behind a header]: a .cpp/.cu defines what its own header declares
        # (CUDABlas.cpp / CUDABlas.h): a caller that includes the header reaches the definition.
        stem, dot, ext = to_file.rpartition(".")
        return bool(dot) and ext in ("cpp", "cu", "cc") and any(f"{stem}.{h}" in reach for h in ("h", "cuh", "hpp"))

    def nearest(self, text: str, n: int = 5) -> list[str]:
        import difflib

        if self._globals is None:
            self._globals = sorted(set(self.store.names_like(("global",))))
        key = text.strip()[:200]
        return difflib.get_close_matches(key, self._globals, n=n, cutoff=0.5)


def _name_tokens(names: list[str]) -> set[str]:
    """``sum_functor`` -> {sum, functor}; ``CUDAFunctor_add`` -> {cuda, functor, add}."""
    out = set()
    for n in names:
        for part in re.split(r"[_\W]+", n or ""):
            out.update(t.lower() for t in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", part))
    return out - {"kernel", "cuda", "functor", "impl", "cpu", "op", "native", "at"}


def _op_base(label: str) -> str:
    return label.split(" ")[0].removeprefix("aten::").split(".")[0].strip("_")


def _call_step(r: FactRow, detail: str | None = None) -> Step:
    return Step(Role.LIBRARY if detail else Role.CALL, r.qual, at(r.file, r.line), detail=detail or "",
                generated=r.generated)


def _cuda_key(label: str) -> bool:
    """Is ``"aten::op [KEY]"`` an operator key that can run a CUDA kernel?"""
    key = label.rsplit("[", 1)[-1].rstrip("]")
    return devices.key_device(key) in ("cuda", "any")


def _clean_qual(qual: str) -> str:
    """Templates, parameters and inline namespaces removed; ``operator()`` kept."""
    q = strip_templates(qual.split("(")[0] if "operator()" not in qual else qual.replace("operator()", "operator@"))
    return clean_namespace(q.replace("operator@", "operator()"))
