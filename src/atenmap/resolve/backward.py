"""Backward: an operator's derivatives.yaml entry, the autograd node the checkout's codegen makes
of it, and the chains of the operators its backward formulas call.

Everything here reads the index through ``Store`` (the generated VariableType/Functions files and
FunctionsManual.cpp are indexed, build.py) plus the text of those files, and builds model records.

Note [Backward formulas]
~~~~~~~~~~~~~~~~~~~~~~~~
A derivatives.yaml formula is a C++ expression that gen_autograd pastes into the node's ``apply``
(Functions.cpp), inside ``namespace torch::autograd::generated`` with ``using namespace at``. So a
bare call is either a helper of torch/csrc/autograd/FunctionsManual.cpp (``mul_tensor_backward``,
``sum_backward``: namespace ``generated::details``) or an ATen operator (``threshold_backward``,
``_softmax_backward_data``); ``at::foo`` and ``x.foo()`` are operators as anywhere in ATen (Note
[Re-dispatch]), and ``foo_symint`` is the SymInt spelling of operator ``foo``. Tensor arithmetic
(``grad * other``, ``grad / self``) is ``operator*`` etc. of TensorOperators.h, i.e. ``at::mul``,
``div``, ``add``, ``sub``; the index has no facts for operators, so they are read from the text:
an operator written with spaces around it whose left operand is a Tensor (``grad``, ``result``, an
input of Tensor type, a helper's ``Tensor`` parameter or local). Only backward formulas are followed;
forward-mode (``result:``) formulas are listed.

Note [The generated autograd node]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
gen_autograd (codegen.py, Note [What gen_autograd writes]) registers one Autograd-key kernel per
differentiable operator, ``m.impl("mul.Tensor", TORCH_FN(VariableType::mul_Tensor))`` in
``TORCH_LIBRARY_IMPL(aten, Autograd, m)`` (VariableType_<n>.cpp); its body makes the node
(``grad_fn = std::shared_ptr<MulBackward0>(new MulBackward0(), deleteNode)``), saves what the
formulas use (``grad_fn->other_ = SavedVariable(other, false)``) and redispatches below autograd
(``at::redispatch::mul``). The node is ``struct MulBackward0`` in Functions.h; its ``apply`` in
Functions.cpp runs the formulas (2.x: through ``MulBackward0_apply_functional``), one
``grad_result = ...`` line per input group. Node names are read from the wrapper, never derived.

Note [Composite ops' backward]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Which kernel the Autograd key of a backend runs is decided when the dispatcher fills its table
(c10's OperatorEntry::computeDispatchTableEntry): a kernel registered to that per-backend Autograd
key itself (AutogradCUDA) wins; else, when the op has a CompositeImplicitAutograd kernel and no
kernel of its own for the backend (CPU) nor a CompositeExplicitAutograd one, the composite kernel
runs; only then the kernel gen_autograd registers to the Autograd alias key. So ``torch.matmul`` on
dense tensors runs matmul's composite kernel, and autograd records the nodes of the operators it
calls (MmBackward0, BmmBackward0, DotBackward0, UnsafeViewBackward0...); its own derivatives.yaml
entry (MatmulBackward0) runs only for the keys with a kernel of their own (NestedTensorCPU,
NestedTensorCUDA). The same for ``linear`` (AddmmBackward0), ``norm``, ``var``, ``where``,
``dropout``. ``Backward.composite_keys`` are the asked keys that run the composite kernel (their
formulas are not expanded; ``decomposed`` lists what the kernel calls, with the path, three levels
deep), ``entry_keys`` those that reach the entry's node.
"""
from __future__ import annotations

import bisect
import re
from pathlib import Path

from atenmap import config, files
from atenmap.extract.operators import tensor_names
from atenmap.kinds import FactKind, KeyGroup
from atenmap.model import KeyChain, Location, Operator, Role, SourceInfo, Step, at
from atenmap.model_answers import AutogradNode, Backward, DecomposedOp, DerivativeEntry, Formula
from atenmap.resolve.chain import Resolver
from atenmap.resolve.opcalls import ACCESSORS, CallSite, OpCall
from atenmap.store import FactRow, Store

CIA = KeyGroup.CIA
MAX_DECOMPOSED_DEPTH = 3

_BINOPS = {"*": "mul", "/": "div", "+": "add", "-": "sub"}
_NODE_RE = re.compile(r"std::shared_ptr<(\w+)>\(new \1\(")
_SAVED_RE = re.compile(r"grad_fn->(\w+) = SavedVariable\(")
_REDISPATCH_RE = re.compile(r"at::redispatch::(\w+)\(")
_GRAD_RESULT_RE = re.compile(r"grad_result = any_grad_defined \? \((.*)\) : Tensor\(\);|grad_result = (.*);")
_WHICH_RE = re.compile(r"/\*(\w+)\*/|\{ (\w+)_ix")
_CALL_RE = re.compile(r"(?<![\w.>:])((?:at::)?)([A-Za-z_]\w*)\s*\(")
_MEMBER_RE = re.compile(r"(?:\.|->)([A-Za-z_]\w*)\s*\(")
_BINOP_RE = re.compile(r"\b([A-Za-z_]\w*) ([*/+-]) (?=([\w.(]+|[-+]?\d[\w.]*))")
_FORMULA_TENSORS = {"grad", "grads", "result", "self"}


class BackwardResolver:
    def __init__(self, store: Store, source: SourceInfo, resolver: Resolver,
                 entries: list[DerivativeEntry] | None, codegen: bool, quoted: bool = False):
        self.store = store
        self.source = source
        self.resolver = resolver
        self.by_op = {e.op: e for e in entries or ()}
        self.loaded = entries is not None  # else derivatives.yaml was missing or bad (a warning says so)
        self.codegen = codegen
        self.quoted = quoted  # the bundled index: its quoted lines instead of the files (Note [What the bundle quotes])
        self._texts: dict[str, list[str]] = {}
        self._nodes: dict[str, list[str]] | None = None  # node name -> operators making it (autograd_node)

    def backward(self, op: Operator, keys: list[str], depth: int, expand: bool = True) -> Backward:
        entry = self.by_op.get(str(op.name))
        warnings: list[str] = []
        node, node_steps = self._node(op) if self.codegen else (None, [])
        if entry is not None and self.codegen and not node_steps:
            warnings.append(f"{op.name}: no generated autograd kernel (VariableType) found for it in the index")
        composite = self._composite_keys(op, keys)
        entry_keys = tuple(k for k in keys if k not in composite) + tuple(
            d.key for d in op.dispatch if d.key != CIA and d.key not in keys) if composite else tuple(keys)
        formulas = entry.formulas if entry else ()
        chains = []
        for key in (k for k in keys if k not in composite):
            steps: list[Step] = []
            shown: set[str] = set()  # operators expanded for this key: once each
            for f in formulas:
                if f.kind == "backward" and f.dispatch in ("Default", f"Autograd{key}"):
                    step, more = self._formula_step(op, f, key, depth, expand, shown)
                    steps.append(step)
                    warnings += [w for w in more if w not in warnings]
            if steps:
                chains.append(KeyChain(key, tuple(steps)))
        decomposed: list[DecomposedOp] = []
        if entry is None or composite:
            self._decompose(op, 1, {str(op.name)}, decomposed, keys)
            if not decomposed and self.loaded and entry is None:
                warnings.append(f"{op.name} has no derivatives.yaml entry"
                                + ("" if op.kernel_for(CIA) else " and no CompositeImplicitAutograd kernel to decompose"))
        if entry is not None and composite:
            warnings.append(f"{op.name}: {', '.join(composite)} run{'s' if len(composite) == 1 else ''} its "
                            f"CompositeImplicitAutograd kernel, so autograd "
                            f"records the nodes of the operators it decomposes into; its own derivatives.yaml entry"
                            + (f" ({node})" if node else "") + " is reached only through "
                            + (", ".join(entry_keys) or "no key asked"))
        return Backward(str(op.name), entry, formulas, tuple(node_steps), tuple(chains), tuple(decomposed),
                        tuple(warnings), node, composite, entry_keys if entry is not None else ())

    def _composite_keys(self, op: Operator, keys: list[str]) -> tuple[str, ...]:
        """See Note [Composite ops' backward]."""
        if op.kernel_for(CIA) is None:
            return ()
        direct = {d.key for d in op.dispatch}
        if direct & set(KeyGroup.COMPOSITE_EXPLICIT):
            return ()
        own_autograd = self._autograd_keys(op)
        return tuple(k for k in keys if k not in direct and f"Autograd{k}" not in own_autograd)

    # ---- formulas (Note [Backward formulas]) --------------------------------------------------
    def _formula_step(self, op: Operator, f: Formula, key: str, depth: int, expand: bool,
                      shown: set[str]) -> tuple[Step, list[str]]:
        label = f"{', '.join(f.names)}: {f.formula}"
        detail = (f"backward of {', '.join(f.names)}" + (f" ({f.dispatch})" if f.dispatch != "Default" else ""))
        if f.status:
            return Step(Role.YAML, label, f.loc, detail + f"; {f.status}: no formula to follow"), []
        tensors = _FORMULA_TENSORS | _tensor_args(op.schema)
        helpers, calls = [], []
        for site_kind, item in self._calls_in(f.formula, f.loc, tensors):
            if site_kind == "helper":
                helpers.append((item, self._text_ops(item)))
            else:
                calls.append(item)
        steps, warnings = self.resolver.formula_steps(key, helpers, calls, depth=depth, expand=expand, shown=shown)
        return Step(Role.YAML, label, f.loc, detail, children=tuple(steps)), warnings

    def _calls_in(self, text: str, loc: Location, tensors: set[str]):
        """("helper", FactRow) and ("op", CallSite) for what a formula's text calls, in text order."""
        table = self.resolver.operator_table()
        seen: set[str] = set()
        found: list[tuple[int, str, object]] = []
        for m in _CALL_RE.finditer(text):
            name = m.group(2)
            if name in seen or name in ("Tensor", "static_cast", "std") or _after_member(text, m.start(2)):
                continue
            seen.add(name)
            helper = self._helper(name)
            if helper is not None and not m.group(1):
                found.append((m.start(), "helper", helper))
                continue
            call = table.classify(_unsym(name), f"at::{_unsym(name)}", False)
            if call is not None:
                found.append((m.start(), "op", CallSite(call, name, loc.file, loc.line, _args_at(text, m.end()))))
            elif helper is not None:
                found.append((m.start(), "helper", helper))
        for m in _MEMBER_RE.finditer(text):
            name = _unsym(m.group(1))
            if name in seen or name in ACCESSORS:
                continue
            call = table.classify(name, name, True)
            if call is not None:
                seen.add(name)
                found.append((m.start(), "op", CallSite(call, f".{m.group(1)}", loc.file, loc.line)))
        for pos, site in _binops(text, tensors, loc):
            if site.written not in seen:
                seen.add(site.written)
                found.append((pos, "op", site))
        return [(kind, item) for _pos, kind, item in sorted(found, key=lambda t: t[0])]

    def _helper(self, name: str) -> FactRow | None:
        """A formula helper of FunctionsManual (or an ATen function such as at::sum_to) named ``name``."""
        rows = self.store.by_name(name, (FactKind.FUNCTION,))
        manual = [r for r in rows if "/autograd/FunctionsManual" in r.file]
        if manual:
            return sorted(manual, key=lambda r: (not r.file.endswith(".cpp"), r.line))[0]
        plain = [r for r in rows if not r.generated and r.qual in (f"at::{name}", name)]
        return plain[0] if plain else None

    def _text_ops(self, fn: FactRow) -> list[CallSite]:
        if self.quoted:
            return [CallSite(OpCall(base, "functional"), written, fn.file, line, args, fn.generated)
                    for line, base, written, args in self.store.quoted_text_ops(fn.file, fn.line)]
        return text_ops(self._lines(fn.file), fn)

    # ---- the generated node (Note [The generated autograd node]) --------------------------------
    def _autograd_regs(self, op: Operator) -> list[tuple[bool, FactRow, list[str]]]:
        """gen_autograd's registrations of ``op`` (``TORCH_LIBRARY_IMPL(aten, Autograd*, m)``), the
        plain Autograd key's first."""
        regs = []
        for r in self.store.by_name(str(op.name), (FactKind.TORCH_IMPL,)):
            scope = self.store.by_id(r.scope) if r.scope else None
            args = [a.strip() for a in scope.arg.strip("()").split(",")] if scope else []
            if r.generated and len(args) >= 2 and args[0] == "aten" and args[1].startswith("Autograd"):
                regs.append((args[1] != "Autograd", r, args))
        return sorted(regs, key=lambda t: (t[0], t[1].file, t[1].line))

    def _autograd_keys(self, op: Operator) -> set[str]:
        """The per-backend Autograd keys (AutogradCUDA) gen_autograd registers ``op``'s kernel to directly."""
        return {args[1] for other, r, args in self._autograd_regs(op) if other and "Fallback" not in r.arg}

    def _node(self, op: Operator) -> tuple[str | None, list[Step]]:
        steps, node = [], None
        for _other, r, args in self._autograd_regs(op):
            fn_name = re.sub(r"^TORCH_FN\((.*)\)$", r"\1", r.arg.strip()).rsplit("::", 1)[-1]
            wrappers = [w for w in self.store.by_name(fn_name, (FactKind.FUNCTION,)) if w.file == r.file]
            reg = Step(Role.REGISTER, f'm.impl("{op.name}", {r.arg})', at(r.file, r.line),
                       f"dispatcher registration for {args[1]} (gen_autograd)", True,
                       tuple(self._wrapper(w) for w in wrappers[:1]))
            steps.append(reg)
            if node is None and wrappers:
                node = next((m.group(1) for m in map(_NODE_RE.search, self._body(wrappers[0])) if m), None)
        if node is not None:
            steps += self._node_defs(node)
        return node, steps

    def _wrapper(self, w: FactRow) -> Step:
        children = []
        for i, line in enumerate(self._body(w)):
            text = line.strip()
            if _NODE_RE.search(line):
                children.append(Step(Role.GENERATED, text.rstrip(";"), at(w.file, w.line + i),
                                     "makes the autograd node", True))
            elif _SAVED_RE.search(line):
                children.append(Step(Role.GENERATED, text.rstrip(";"), at(w.file, w.line + i),
                                     "saves an input for the backward formulas", True))
            elif _REDISPATCH_RE.search(line):
                children.append(Step(Role.GENERATED, text.rstrip(";"), at(w.file, w.line + i),
                                     "the forward: redispatches below autograd", True))
        return Step(Role.GENERATED, w.qual, at(w.file, w.line),
                    "the Autograd kernel: records the node, saves inputs, runs the forward", True, tuple(children))

    def _node_defs(self, node: str) -> list[Step]:
        out = []
        for c in self.store.by_name(node, (FactKind.CLASS,)):
            if c.generated:
                out.append(Step(Role.GENERATED, f"struct {c.qual}", at(c.file, c.line),
                                "the autograd node (saved variables are its members)", True))
                break
        for fn in self.store.by_name("apply", (FactKind.FUNCTION,)):
            if fn.generated and fn.qual.endswith(f"::{node}::apply"):
                inner = [f for f in self.store.by_name(f"{node}_apply_functional", (FactKind.FUNCTION,)) if f.generated]
                where = inner[0] if inner else fn
                kids = [Step(Role.GENERATED, f"{node}_apply_functional", at(where.file, where.line),
                             "the formulas, as apply runs them", True, tuple(self._grad_lines(where)))] if inner \
                    else self._grad_lines(fn)
                out.append(Step(Role.GENERATED, fn.qual, at(fn.file, fn.line),
                                "runs during loss.backward(): the derivatives.yaml formulas", True, tuple(kids)))
                break
        return out

    def _grad_lines(self, fn: FactRow) -> list[Step]:
        out, which = [], ""
        for i, line in enumerate(self._body(fn)):
            m = _WHICH_RE.search(line)
            if m:
                which = m.group(1) or m.group(2)
            g = _GRAD_RESULT_RE.search(line)
            if g:
                out.append(Step(Role.GENERATED, g.group(1) or g.group(2), at(fn.file, fn.line + i),
                                f"gradient of {which}" if which else "a gradient", True))
        return out

    # ---- node names -> operators (atenmap trace) ------------------------------------------------
    def autograd_node(self, name: str) -> AutogradNode | None:
        """The operator whose VariableType kernel makes node ``name``: See Note [The generated
        autograd node]. The generated files are read once, on the first call."""
        if self._nodes is None:
            self._nodes = self._node_map()
        ops = self._nodes.get(name)
        if not ops:
            return None
        # relu_ makes relu's ReluBackward0 too (an in-place variant shares its functional's entry)
        op = next((o for o in ops if o in self.by_op), ops[0])
        entry = self.by_op.get(op)
        apply = next((f for f in self.store.by_name("apply", (FactKind.FUNCTION,))
                      if f.generated and f.qual.endswith(f"::{name}::apply")), None)
        return AutogradNode(name, op, entry.loc if entry else None, at(apply.file, apply.line) if apply else None)

    def _node_map(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for path, (_id, _size, _mtime, generated) in sorted(self.store.files().items()):
            if not generated or not re.search(r"/VariableType_\d+\.cpp$", path):
                continue
            impls = {re.sub(r"^TORCH_FN\((.*)\)$", r"\1", r.arg.strip()).rsplit("::", 1)[-1]: r.name
                     for r in self.store.in_file(path, (FactKind.TORCH_IMPL,))}
            fns = sorted((f.line, f.end_line, f.name) for f in self.store.in_file(path, (FactKind.FUNCTION,)))
            starts = [f[0] for f in fns]
            for i, line in enumerate(self._lines(path), 1):
                m = _NODE_RE.search(line) if "(new " in line else None
                if m is None:
                    continue
                k = bisect.bisect_right(starts, i) - 1
                if k >= 0 and fns[k][1] >= i and fns[k][2] in impls:
                    ops = out.setdefault(m.group(1), [])
                    if impls[fns[k][2]] not in ops:
                        ops.append(impls[fns[k][2]])
        return out

    # ---- ops without an entry ---------------------------------------------------------------
    def _decompose(self, op: Operator, level: int, seen: set[str], out: list[DecomposedOp],
                   keys: list[str]) -> None:
        """The operators ``op``'s CompositeImplicitAutograd kernel calls, each with its entry and
        node, and, for those that decompose themselves, what they call (Note [Composite ops' backward])."""
        if op.kernel_for(CIA) is None:
            return
        for name, file, line in self.resolver.operator_calls(op, CIA) + self._kernel_arithmetic(op):
            if name in seen:
                continue
            seen.add(name)
            entry = self.by_op.get(name)
            callee = self.resolver.ops(name)
            composite = bool(callee is not None and self._composite_keys(callee, keys))
            node = self._node(callee)[0] if callee is not None and self.codegen and entry and not composite else None
            out.append(DecomposedOp(name, at(file, line), entry, node, str(op.name), composite))
            if (entry is None or composite) and callee is not None and level < MAX_DECOMPOSED_DEPTH:
                self._decompose(callee, level + 1, seen, out, keys)

    def _kernel_arithmetic(self, op: Operator) -> list[tuple[str, str, int]]:
        """``(operator, file, line)`` of the Tensor arithmetic written in ``op``'s composite kernel
        (``dx / 2`` in trapezoid is ``div.Scalar``): Note [Backward formulas]'s text rule, each
        overload the operands allow."""
        kernel = op.kernel_for(CIA).kernel
        table = self.resolver.operator_table()
        out = []
        for fn in [r for r in self.store.by_name(kernel, (FactKind.FUNCTION,))
                   if r.qual == f"at::native::{kernel}" and not r.generated][:2]:
            for site in self._text_ops(fn):
                left, _, right = (site.args or "").partition(", ")
                names, _ = table.pick(site.call, f"{left}:Tensor, {right.strip()}")  # Note [Choosing the overload]
                out += [(name, site.file, site.line) for name in names]
        return out

    # ---- text --------------------------------------------------------------------------------
    def _lines(self, file: str) -> list[str]:
        if file not in self._texts and self.quoted:
            kept = self.store.quoted_lines(file)
            self._texts[file] = [kept.get(n, "") for n in range(1, max(kept, default=0) + 1)]
        if file not in self._texts:
            path = Path(file) if file.startswith("/") else Path(self.source.root, file)
            try:
                self._texts[file] = files.read_text(path, config.max_file_bytes(), errors="replace").splitlines()
            except OSError:
                self._texts[file] = []
        return self._texts[file]

    def _body(self, fn: FactRow) -> list[str]:
        return self._lines(fn.file)[fn.line - 1: fn.end_line]


def text_ops(lines: list[str], fn: FactRow) -> list[CallSite]:
    """Tensor arithmetic in a helper's body (``grad * other.conj()``), ``lines`` being its file's:
    See Note [Backward formulas]."""
    body_lines = lines[fn.line - 1: fn.end_line]
    tensors = tensor_names("\n".join(body_lines).encode()) | {"grad"}
    out, seen = [], set()
    for i, line in enumerate(body_lines):
        for _pos, site in _binops(line.split("//")[0], tensors, Location(fn.file, fn.line + i), fn.generated):
            if site.call.base not in seen:
                seen.add(site.call.base)
                out.append(site)
    return out


AUTOGRAD_FILES = re.compile(r"/(?:VariableType_\d+|Functions)\.cpp$")  # torchgen's files the lines come from


def quoted_line(path: str, text: str) -> bool:
    """Whether backward reads this line of a generated autograd file (AUTOGRAD_FILES): what the
    bundle keeps of them (Note [What the bundle quotes] in source/bundle.py). VariableType: the
    node made, the inputs saved, the redispatch; Functions.cpp: the gradient lines and their inputs."""
    if path.endswith("/Functions.cpp"):
        return bool(_GRAD_RESULT_RE.search(text) or _WHICH_RE.search(text))
    return bool(_NODE_RE.search(text) or _SAVED_RE.search(text) or _REDISPATCH_RE.search(text))


def _binops(text: str, tensors: set[str], loc: Location, generated: bool = False):
    """``(position, CallSite)`` of Tensor arithmetic in ``text``: See Note [Backward formulas]."""
    for m in _BINOP_RE.finditer(text):
        if m.group(1) not in tensors:
            continue
        base = _BINOPS[m.group(2)]
        yield m.start(), CallSite(OpCall(base, "functional"), f"operator{m.group(2)}", loc.file, loc.line,
                                  f"{m.group(1)}, {m.group(3)}", generated)


def _tensor_args(schema: str) -> set[str]:
    inner = schema[schema.find("(") + 1: schema.rfind(") ->")]
    return {a.split("=")[0].split()[-1] for a in inner.split(", ") if a.startswith("Tensor") and len(a.split()) > 1}


def _unsym(name: str) -> str:
    return name[: -len("_symint")] if name.endswith("_symint") else name


def _after_member(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return before.endswith((".", "->"))


def _args_at(text: str, start: int) -> str | None:
    """The argument text of a call whose ``(`` ends at ``start``."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


__all__ = ["AUTOGRAD_FILES", "BackwardResolver", "quoted_line", "text_ops"]
