"""What torch.compile's default backend (Inductor) does with each ATen operator, read from a tree's
Python with the standard ``ast`` module: nothing of the tree is imported or run.

See Note [Inductor's registrations] for the PyTorch patterns followed; the facts are stored in the
index (``compile`` table) and joined per operator by resolve/compile.py.
"""
from __future__ import annotations

import ast
import gc
from dataclasses import dataclass
from pathlib import Path

from atenmap.extract.inductor_stamp import input_stamp, inputs_unchanged  # noqa: F401  (re-exported)
from atenmap.model_answers import CompileFact

INDUCTOR_REL = "torch/_inductor"
GRAPH_REL = "torch/_inductor/graph.py"
CORE_DECOMP_REL = "torch/_decomp/__init__.py"
INDUCTOR_DECOMP_REL = "torch/_inductor/decomposition.py"

# Note [Inductor's registrations]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Inductor answers an ATen overload in one of three ways, each kept in a table filled at import:
# - ``lowerings`` (torch/_inductor/lowering.py): ``register_lowering(aten.X)`` as a decorator or
#   called on a function, and helpers that call it with their own argument (``register_pointwise``,
#   ``register_inplace``, ``register_foreach_pointwise``...). A packet's registration fills only
#   the overloads not lowered yet (``get_overloads``), an overload's replaces; the last one wins.
# - ``fallbacks``: ``make_fallback(aten.X)`` registers, for each overload, a lowering that calls the
#   ATen kernel; a later ``register_lowering`` of the same overload replaces the lowering but not
#   the membership. An op with neither is made a fallback when the graph meets it
#   (graph.py's ``call_function`` under ``config.implicit_fallbacks``).
# - the decomposition table (torch/_inductor/decomposition.py): the core ATen list
#   (``get_decompositions([...])`` in torch/_decomp/__init__.py) plus the CompositeImplicitAutograd
#   ops, plus Inductor's own ``get_decompositions([...])`` list, less ``remove_decompositions(...,
#   decomps_to_exclude)``; then Inductor's own ``register_decomposition`` functions and the extra
#   random ones (``extra_random_decomps``). ``get_decompositions`` selects from the global registry
#   that ``register_decomposition(aten.X)`` fills (torch/_decomp/decompositions.py, torch/_refs),
#   a packet meaning all of its overloads.
# A helper is a registrar when its body calls a registrar with one of its own parameters as the
# op (found to a fixed point, so helpers of helpers count). A registrar whose op parameter has a
# default (torch/_refs' ``aten_op=infer_aten_op``) used without it registers the aten op named as
# the decorated function. Ops are ``aten.X``, ``aten.X.overload``, ``torch.ops.aten...``, lists and
# tuples of them, module names bound to such lists, and loop variables over them (the loop unrolled).

BASE_REGISTRARS = {"register_lowering": "lowering", "make_fallback": "fallback",
                   "register_decomposition": "decomposition"}
_OP_PARAMS = ("aten_fn", "op", "ops", "aten_op", "op_overload", "fn")


_MARKERS = ("register_lowering", "make_fallback", "register_decomposition", "get_decompositions",
            "remove_decompositions", "TritonTemplate", "ExternKernelChoice", "py_impl", "register_")


def compile_files(root: Path) -> list[str]:
    """The tree's files the extractor reads (relative, sorted as the imports run them: lowering.py
    first), or [] for a tree without ``torch/_inductor``."""
    ind = root / INDUCTOR_REL
    if not (ind / "lowering.py").is_file():
        return []
    found = [p for d in (ind, ind / "kernel", ind / "fx_passes") for p in sorted(d.glob("*.py"))]
    for d in (root / "torch/_decomp", root / "torch/_refs"):
        found += sorted(d.rglob("*.py"))
    rels = [p.relative_to(root).as_posix() for p in found if p.is_file()]
    rels.sort(key=lambda r: (r != f"{INDUCTOR_REL}/lowering.py", r))
    return rels


def extract(root: Path) -> list[CompileFact]:
    """Every CompileFact of the tree at ``root`` (see Note [Inductor's registrations])."""
    return extract_with_inputs(root)[0]


def extract_with_inputs(root: Path) -> tuple[list[CompileFact], str]:
    """``extract(root)`` and the stamp of what it read (``inputs_unchanged`` checks it)."""
    read: list[str] = []
    collecting = gc.isenabled()
    gc.disable()  # Note [No garbage collection while reading ASTs]
    try:
        facts = _extract(root, read)
    finally:
        if collecting:
            gc.enable()
    return facts, input_stamp(root, read)


# Note [No garbage collection while reading ASTs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The ~60 modules read hold about two million AST nodes, all alive until the facts are made; the
# cyclic collector, triggered by every 700 allocations, would walk them again and again (a third
# of this extractor's time) and free nothing: an AST has no cycles. It is off while they are read.


def _extract(root: Path, read: list[str]) -> list[CompileFact]:
    mods = {}
    for rel in compile_files(root):
        read.append(rel)
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "/fx_passes/" not in rel and not any(m in text for m in _MARKERS):
            continue
        try:
            mods[rel] = ast.parse(text)
        except SyntaxError:
            continue
    registrars = _find_registrars(mods)
    facts: list[CompileFact] = []
    for rel, tree in mods.items():
        if "/fx_passes/" in rel:
            facts += _patterns(rel, tree)
        facts += _Registrations(rel, tree, registrars, root, read).run()
        facts += _templates(rel, tree, facts)
    implicit = implicit_fallback(root)
    facts += [implicit] if implicit else []
    return [CompileFact(*f.to_row()[:9], seq=i) for i, f in enumerate(facts)]


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, the same nodes in the same order (breadth first), made without
    ast's generators: most of this extractor's time is walking."""
    out = [node]
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            f = getattr(n, name, None)
            if isinstance(f, ast.AST):
                out.append(f)
            elif isinstance(f, list):
                out.extend([x for x in f if isinstance(x, ast.AST)])
    return out


# ---- ops as written ----------------------------------------------------------------------------
def dotted(node: ast.AST) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def aten_ref(node: ast.AST) -> tuple[str, str] | None:
    """``(packet, overload)`` of ``aten.X`` / ``aten.X.ov`` / ``torch.ops.aten.X...``, else None."""
    parts = dotted(node)
    if "aten" not in parts:
        return None
    i = parts.index("aten")
    if (i > 0 and parts[i - 1] != "ops") or i + 1 >= len(parts):
        return None
    rest = parts[i + 1:]
    if len(rest) > 2:
        return None
    return rest[0], rest[1] if len(rest) == 2 else ""


Env = dict[str, ast.AST]


def ops_of(node: ast.AST | None, env: Env, depth: int = 0) -> list[tuple[str, str, int]]:
    """The aten ops an expression names, each with the line it is written on."""
    if node is None or depth > 8:
        return []
    ref = aten_ref(node)
    if ref is not None:
        return [(*ref, node.lineno)]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [o for e in node.elts for o in ops_of(e, env, depth + 1)]
    if isinstance(node, ast.Starred):
        return ops_of(node.value, env, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return ops_of(node.left, env, depth + 1) + ops_of(node.right, env, depth + 1)
    if isinstance(node, ast.Name) and node.id in env:
        return ops_of(env[node.id], env, depth + 1)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) == 2 and dotted(node.args[0])[-1:] == ["aten"]
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return [(node.args[1].value, "", node.lineno)]
    return []


def _elements(node: ast.AST | None, env: Env, depth: int = 0) -> list[ast.AST] | None:
    """The elements of a literal list/tuple (through names), for unrolling a loop; else None."""
    if isinstance(node, ast.Name) and node.id in env and depth < 8:
        return _elements(env[node.id], env, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return list(node.elts)
    return None


def callee(call: ast.Call) -> str:
    """The last name of what is called (``decomp.register_decomposition`` -> register_decomposition)."""
    parts = dotted(call.func)
    return parts[-1] if parts else ""


# ---- registrars --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Registrar:
    """A function that registers the op passed as its parameter ``param`` (position ``index``)."""

    name: str
    role: str
    index: int
    param: str
    has_default: bool = False
    registry: str = ""
    file: str = ""
    by_binding: bool = False  # registers ``getattr(aten, <made from a parameter>)``: see _binding_op


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _op_arg(call: ast.Call, reg: Registrar) -> ast.AST | None:
    if reg.index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:reg.index + 1]):
        return call.args[reg.index]
    for kw in call.keywords:
        if kw.arg == reg.param:
            return kw.value
    return None


def _registry(call: ast.Call) -> str:
    """The registry a ``register_decomposition`` call names (its 2nd argument or ``registry=``),
    with a ``type=`` other than post_autograd; "" for the global one."""
    reg = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "registry"), None)
    name = ".".join(dotted(reg)) if reg is not None else ""
    kind = next((k.value.value for k in call.keywords if k.arg == "type" and isinstance(k.value, ast.Constant)), "")
    return name + (f"/{kind}" if kind and kind != "post_autograd" else "")


class Registrars:
    """Every registrar of the read files: the base ones and those found to a fixed point."""

    def __init__(self):
        self.by_file: dict[tuple[str, str], Registrar] = {}
        self.by_name: dict[str, Registrar] = {}

    def lookup(self, name: str, file: str) -> Registrar | None:
        reg = self.by_file.get((file, name)) or self.by_name.get(name)
        if reg is None and name in BASE_REGISTRARS:
            reg = Registrar(name, BASE_REGISTRARS[name], 0, "aten_fn" if name == "register_lowering" else "op")
        return reg

    def add(self, reg: Registrar) -> bool:
        if self.by_file.get((reg.file, reg.name)) == reg:
            return False
        self.by_file[(reg.file, reg.name)] = reg
        if reg.name not in BASE_REGISTRARS:
            self.by_name.setdefault(reg.name, reg)
        return True


def _taint(nodes: list[ast.AST], params: list[str]) -> dict[str, str]:
    """name -> the parameter it is made from (the parameters themselves, and locals assigned from
    them); ``nodes``: ``walk(fn)``."""
    taint = {p: p for p in params}
    assigns = [(_names(a.value), a.targets) for a in nodes if isinstance(a, ast.Assign)]
    for _ in range(2):
        for names, targets in assigns:
            src = next((taint[n] for n in names if n in taint), None)
            if src is not None:
                taint.update({t.id: src for t in targets if isinstance(t, ast.Name) and t.id not in taint})
    return taint


def _names(node: ast.AST) -> list[str]:
    """The ``ast.Name`` ids under ``node``, in ``walk`` order."""
    return [n.id for n in walk(node) if isinstance(n, ast.Name)]


def _getattr_aten(arg: ast.AST | None) -> bool:
    """``getattr(aten, name)`` with a computed name."""
    return (isinstance(arg, ast.Call) and callee(arg) == "getattr" and len(arg.args) >= 2
            and dotted(arg.args[0])[-1:] == ["aten"] and not isinstance(arg.args[1], ast.Constant))


def _in_try(nodes: list[ast.AST]) -> set[int]:
    """ids of the nodes in a ``try:`` body; ``nodes``: ``walk(fn)``."""
    return {id(n) for t in nodes if isinstance(t, ast.Try) for s in t.body for n in walk(s)}


@dataclass
class _Body:
    """What ``_derive`` reads of a function, the same on every round of ``_find_registrars``: read
    once (one ``walk``)."""

    positional: list[str]
    defaults: dict
    taint: dict[str, str]
    tried: set[int]
    calls: list[ast.Call]
    names: dict[int, list[str]]  # id(op argument) -> _names of it, filled as asked


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> _Body:
    nodes = walk(fn)
    positional = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)]
    defaults = dict(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults))
    defaults.update({p.arg: d for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
    return _Body(positional, defaults, _taint(nodes, _params(fn)), _in_try(nodes),
                 [n for n in nodes if isinstance(n, ast.Call)], {})


def _derive(rel: str, fn: ast.FunctionDef, regs: Registrars, body: _Body | None = None) -> Registrar | None:
    """``fn`` as a registrar, when a registrar call in its body takes one of its parameters as the
    op (or writes ``lowerings`` with it). ``body``: ``_body(fn)``, when kept from an earlier round."""
    body = body or _body(fn)
    positional, defaults, taint, tried = body.positional, body.defaults, body.taint, body.tried
    for call in body.calls:
        if dotted(call.func) == ["lowerings", "update"]:
            inner, arg = Registrar("lowerings", "lowering", 0, ""), call
        else:
            inner = regs.lookup(callee(call), rel)
            if inner is None or (inner.name == fn.name and inner.file == rel):
                continue
            arg = _op_arg(call, inner)
        if arg is None:
            continue
        names = body.names.get(id(arg))
        if names is None:
            names = body.names[id(arg)] = _names(arg)
        hit = next((taint[n] for n in names if n in taint), None)
        if hit is None:
            continue
        if _getattr_aten(arg):
            return Registrar(fn.name, inner.role, -1, hit, False, inner.registry, rel, by_binding=True)
        role = BASE_REGISTRARS.get(fn.name, inner.role)
        registry = _registry(call) if inner.role == "decomposition" and inner.name in BASE_REGISTRARS else inner.registry
        if inner.role == "decomposition" and id(call) in tried:
            registry = registry or "maybe"
        index = positional.index(hit) if hit in positional else 99
        return Registrar(fn.name, role, index, hit, hit in defaults, registry, rel)
    return None


def _partial_registrar(rel: str, node: ast.Assign, regs: Registrars) -> Registrar | None:
    """``name = functools.partial(register_decomposition, registry=R)``."""
    v = node.value
    if not (isinstance(v, ast.Call) and callee(v) == "partial" and v.args and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)):
        return None
    inner = regs.lookup(dotted(v.args[0])[-1] if dotted(v.args[0]) else "", rel)
    if inner is None:
        return None
    fake = ast.Call(func=v.args[0], args=[ast.Constant(None)] + list(v.args[1:]), keywords=v.keywords)
    return Registrar(node.targets[0].id, inner.role, 0, inner.param, False, _registry(fake), rel)


def _find_registrars(mods: dict[str, ast.Module]) -> Registrars:
    regs = Registrars()
    called: dict[int, set[str]] = {}  # a function's callee names, read once
    bodies: dict[int, _Body] = {}  # what _derive reads of a function, read once
    for _ in range(6):
        changed = False
        names = set(BASE_REGISTRARS) | {r for _f, r in regs.by_file} | {"update"}
        for rel, tree in mods.items():
            for node in tree.body:
                reg = None
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if id(node) not in called:
                        called[id(node)] = {callee(n) for n in walk(node) if isinstance(n, ast.Call)}
                    if called[id(node)] & names:
                        if id(node) not in bodies:
                            bodies[id(node)] = _body(node)
                        reg = _derive(rel, node, regs, bodies[id(node)])
                elif isinstance(node, ast.Assign):
                    reg = _partial_registrar(rel, node, regs)
                if reg is not None:
                    changed |= regs.add(reg)
        if not changed:
            break
    return regs


# ---- registrations -----------------------------------------------------------------------------
_SELECT_FILES = {CORE_DECOMP_REL: "core", INDUCTOR_DECOMP_REL: "inductor",
                 "torch/_decomp/decompositions_for_rng.py": "random"}
_CIA = "CompositeImplicitAutograd"


class _Registrations:
    """Walks one module's statements in order, with the names bound to op lists, and records every
    registrar call whose op it can name (loops over literal lists unrolled)."""

    def __init__(self, rel: str, tree: ast.Module, regs: Registrars, root: Path | None = None,
                 read: list[str] | None = None):
        self.rel, self.tree, self.regs, self.root = rel, tree, regs, root
        self.read = read if read is not None else []
        self.defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.out: list[CompileFact] = []
        self.seen: set[int] = set()
        self.conds: list[str] = []
        self.depth = 0  # how many function bodies the walk is in
        self.bound = {id(n.value): n.targets[0].id for n in tree.body if isinstance(n, ast.Assign)
                      and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}

    def run(self) -> list[CompileFact]:
        self._stmts(self.tree.body, {})
        return self.out

    def _stmts(self, stmts: list[ast.stmt], env: Env) -> None:
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in s.decorator_list:
                    self._decorator(dec, s, env)
                params = set(_params(s))
                self.depth += 1
                self._stmts(s.body, {k: v for k, v in env.items() if k not in params})
                self.depth -= 1
                continue
            if isinstance(s, ast.ClassDef):
                self._stmts(s.body, env)
                continue
            if isinstance(s, (ast.For, ast.AsyncFor)):
                self._loop(s, env)
                continue
            self._exprs(s, env)
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                env[s.targets[0].id] = s.value
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
                env[s.target.id] = s.value
            if isinstance(s, ast.If):
                self._branch(s, env)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    self._stmts(sub, env)
            for h in getattr(s, "handlers", []) or []:
                self._stmts(h.body, env)

    def _branch(self, s: ast.If, env: Env) -> None:
        test = _segment(s.test)
        if _op_exists(s.test):  # ``if hasattr(aten, "lift_fresh"):`` only asks whether the op exists
            self._stmts(s.body, env)
            self._stmts(s.orelse, env)
            return
        for sub, cond in ((s.body, test), (s.orelse, f"not ({test})")):
            self.conds.append(cond)
            self._stmts(sub, env)
            self.conds.pop()

    def _loop(self, s: ast.For, env: Env) -> None:
        elts = _elements(s.iter, env)
        if elts is None:
            if not self._overrides(s):
                self._stmts(s.body, env)
            return
        for e in elts:
            inner = dict(env)
            if isinstance(s.target, ast.Name):
                inner[s.target.id] = e
            elif isinstance(s.target, ast.Tuple) and isinstance(e, ast.Tuple) and len(e.elts) == len(s.target.elts):
                inner.update({t.id: v for t, v in zip(s.target.elts, e.elts) if isinstance(t, ast.Name)})
            self._stmts(s.body, inner)

    def _exprs(self, s: ast.stmt, env: Env) -> None:
        """The calls of statement ``s`` itself (not of the statements nested in it)."""
        todo = [c for f, c in ast.iter_fields(s) if f not in ("body", "orelse", "finalbody", "handlers")]
        nodes: list[ast.AST] = []
        for c in todo:
            nodes += [x for x in (c if isinstance(c, list) else [c]) if isinstance(x, ast.AST)]
        for node in nodes:
            for call in (n for n in walk(node) if isinstance(n, ast.Call)):
                if id(call) not in self.seen:
                    self._call(call, env)

    def _add(self, ops, role: str, symbol: str, line: int | None, via: str, registry: str = "") -> None:
        for packet, overload, at in ops:
            self.out.append(CompileFact(packet, overload, role, symbol, self.rel, line or at, via, registry,
                                        " and ".join(self.conds)))

    def _call(self, call: ast.Call, env: Env) -> None:
        name = callee(call)
        if name == "get_decompositions" and self.rel in _SELECT_FILES and call.args:
            self._add(ops_of(call.args[0], env), "select", name, None, "", _SELECT_FILES[self.rel])
            return
        if name == "remove_decompositions" and self.rel == INDUCTOR_DECOMP_REL and len(call.args) > 1:
            self._add(ops_of(call.args[1], env), "exclude", "remove_decompositions", None, "", "inductor")
            return
        if name == "fallback_handler" and not self.depth and call.args:
            if not any(k.arg == "add_to_fallback_set" for k in call.keywords):
                self._add(ops_of(call.args[0], env), "fallback", _segment(call), call.lineno, name)
            return
        target, fn = (call.func, call.args[0] if call.args else None) if isinstance(call.func, ast.Call) else (call, None)
        if target is not call:
            self.seen.add(id(target))
        if self._py_impl(target, fn, env, call.lineno):
            return
        reg = self.regs.lookup(callee(target), self.rel)
        if reg is None:
            return
        ops = ops_of(_op_arg(target, reg), env) if not reg.by_binding else self._binding_op(call)
        if not ops:
            return
        symbol, line = _segment(target), target.lineno
        if reg.by_binding and target.args:
            fn = target.args[0]
        if isinstance(fn, ast.Name) and fn.id in self.defs:
            symbol, line = fn.id, self.defs[fn.id].lineno
        self._add(ops, reg.role, symbol, line, reg.name, self._registry(reg, target))

    def _overrides(self, s: ast.For) -> bool:
        """See Note [Pointwise overrides table]; False when ``s`` is not such a loop."""
        table = _imported_table(self.root, self.rel, self.tree, s.iter, self.read) if self.depth == 0 else None
        if not table:
            return False
        defs = self.defs
        for inner in (n for n in walk(s) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)):
            gen = defs.get(callee(inner.iter))
            if gen is None or not any(dotted(a) == ["aten"] for a in inner.iter.args):
                continue
            regs = [c for c in walk(inner) if isinstance(c, ast.Call) and self.regs.lookup(callee(c), self.rel)]
            missing = _fallback_when_missing(gen)
            for key, entry in table:
                name = next((k.value.value for k in entry.keywords if k.arg == "name"
                             and isinstance(k.value, ast.Constant)), key)
                for c in regs[:1]:
                    reg = self.regs.lookup(callee(c), self.rel)
                    self._add([(name, "", c.lineno)], reg.role, _segment(c), c.lineno, reg.name)
                if missing and not any(k.arg == missing[0] for k in entry.keywords):
                    self._add([(name, "", missing[1])], "fallback", "fallback_handler", missing[1], "fallback_handler")
        return True

    def _binding_op(self, call: ast.Call) -> list[tuple[str, str, int]]:
        """A by-binding registrar (torch/_refs' ``abs_ = _make_inplace(abs)``, which registers
        ``getattr(aten, f"{fn.__name__}_")``) registers the op named as the name it is bound to."""
        name = self.bound.get(id(call))
        return [(name, "", call.lineno)] if name else []

    def _registry(self, reg: Registrar, call: ast.Call) -> str:
        if reg.role != "decomposition":
            return ""
        return _registry(call) if reg.name in BASE_REGISTRARS and not reg.file else reg.registry

    def _py_impl(self, target: ast.Call, fn, env: Env, line: int) -> bool:
        """``aten.X.default.py_impl(DispatchKey.CompositeImplicitAutograd)``: a Python CIA kernel."""
        if not (isinstance(target.func, ast.Attribute) and target.func.attr == "py_impl"):
            return False
        if not any(_CIA in dotted(a) for a in target.args):
            return True
        ref = aten_ref(target.func.value)
        if isinstance(fn, ast.Name) and fn.id in self.defs:
            fn = self.defs[fn.id]
        if ref is not None and fn is not None:
            symbol, at = (fn.name, fn.lineno) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else (
                _segment(target), line)
            self._add([(*ref, at)], "decomposition", symbol, at, "py_impl", "cia")
        return True

    def _decorator(self, dec: ast.AST, fn: ast.FunctionDef, env: Env) -> None:
        if not isinstance(dec, ast.Call):
            return
        self.seen.add(id(dec))
        if self._py_impl(dec, fn, env, fn.lineno):
            return
        reg = self.regs.lookup(callee(dec), self.rel)
        if reg is None:
            return
        arg = _op_arg(dec, reg)
        ops = ops_of(arg, env)
        if arg is None and reg.has_default and reg.role == "decomposition":
            ops = [(fn.name, "", fn.lineno)]
        self._add(ops, reg.role, fn.name, fn.lineno, reg.name, self._registry(reg, dec))


# Note [Pointwise overrides table]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# lowering.py registers the special functions (digamma, bessel_j0, ...) from a table kept in
# another module (codegen/common.py's ``pointwise_overrides_data = dict(key=OverridesData(...,
# name="special_bessel_j0"), ...)``): ``for name in TABLE: for op, ... in GEN(aten, name):
# register_pointwise(op, ...)``, GEN being a generator of lowering.py that looks the op up by the
# entry's ``name=`` (else its key) and, where the entry has no ``triton=``, makes a
# ``fallback_handler(op)`` under ``if data.triton is None`` (which puts the op into ``fallbacks``).
# A module-level loop over such an imported table is read that way: each entry's op gets the loop's
# registrar call, and a fallback when the entry lacks the keyword GEN's ``if X.kw is None`` tests.


def _imported_table(root: Path | None, rel: str, tree: ast.Module, it: ast.AST,
                    read: list[str]) -> list[tuple[str, ast.Call]] | None:
    """``(key, entry call)`` of a dict of calls that ``it`` (a name imported from a module of the
    tree) is bound to there, or None."""
    if root is None or not isinstance(it, ast.Name):
        return None
    imp = next((n for n in tree.body if isinstance(n, ast.ImportFrom) and any(a.name == it.id and not a.asname
                                                                                for a in n.names)), None)
    if imp is None or not imp.module:
        return None
    base = Path(rel).parent
    for _ in range(max(imp.level - 1, 0)):
        base = base.parent
    path = base / (imp.module.replace(".", "/") + ".py") if imp.level else Path(imp.module.replace(".", "/") + ".py")
    read.append(path.as_posix())
    path = root / path
    try:
        other = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None
    for node in other.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == it.id and isinstance(value, ast.Call) and callee(value) == "dict":
            return [(k.arg, k.value) for k in value.keywords if k.arg and isinstance(k.value, ast.Call)]
    return None


def _fallback_when_missing(gen: ast.FunctionDef) -> tuple[str, int] | None:
    """``(kw, line)`` of a ``fallback_handler`` call in ``gen`` under ``if X.kw is None``."""
    for node in walk(gen):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Attribute)
                and isinstance(node.test.ops[0], ast.Is) and isinstance(node.test.comparators[0], ast.Constant)
                and node.test.comparators[0].value is None):
            for c in (n for st in node.body for n in walk(st) if isinstance(n, ast.Call)):
                if callee(c) == "fallback_handler":
                    return node.test.left.attr, c.lineno
    return None


def _op_exists(test: ast.AST) -> bool:
    return (isinstance(test, ast.Call) and callee(test) == "hasattr" and len(test.args) == 2
            and dotted(test.args[0])[-1:] == ["aten"])


def _segment(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 90 else text[:89] + "…"


# ---- templates, patterns, the implicit fallback ------------------------------------------------
def _template_kind(value: ast.AST) -> str:
    if isinstance(value, ast.Call):
        name = callee(value)
        if name == "ExternKernelChoice":
            return "extern"
        if name.endswith("Template"):
            return "template"
    return ""


def _templates(rel: str, tree: ast.Module, facts: list[CompileFact]) -> list[CompileFact]:
    """The Triton templates and extern kernel choices a lowering of this file uses (named in its
    body, or in the body of a function of the file it calls)."""
    made = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            kind = _template_kind(node.value)
            if kind:
                made[node.targets[0].id] = (kind, node.lineno)
    if not made:
        return []
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def names(fn) -> list[str]:
        return list(dict.fromkeys(n.id for n in walk(fn) if isinstance(n, ast.Name)))

    out = []
    for f in [f for f in facts if f.file == rel and f.role == "lowering" and f.symbol in defs]:
        used = names(defs[f.symbol])
        for helper in [u for u in used if u in defs and u != f.symbol]:
            used += names(defs[helper])
        for name in dict.fromkeys(u for u in used if u in made):
            kind, line = made[name]
            out.append(CompileFact(f.op, f.overload, kind, name, rel, line, f.symbol))
    return out


def _top_name(node: ast.stmt) -> str:
    return getattr(node, "name", "<module>")


def _patterns(rel: str, tree: ast.Module) -> list[CompileFact]:
    """Each aten op an fx pass names, once per top-level function (or class) that names it; ``via``
    is ``CallFunction`` where a pattern-matcher pattern (``CallFunction(aten.mm, ...)``) names it."""
    out: dict[tuple, CompileFact] = {}
    for top in tree.body:
        inner = {id(n.value) for n in walk(top) if isinstance(n, ast.Attribute)}
        in_pattern = {id(a) for c in walk(top) if isinstance(c, ast.Call) and callee(c).startswith("CallFunction")
                      for a in c.args[:1]}
        for node in walk(top):
            if not isinstance(node, ast.Attribute) or id(node) in inner:
                continue
            ref = aten_ref(node) or (aten_ref(node.value) if isinstance(node.value, ast.Attribute) else None)
            if ref is None:
                continue
            key = (ref[0], _top_name(top))
            via = "CallFunction" if id(node) in in_pattern else ""
            old = out.get(key)
            if old is None or (via and not old.via):
                out[key] = CompileFact(ref[0], "", "pattern", _top_name(top), rel, node.lineno, via)
    return sorted(out.values(), key=lambda f: (f.line, f.op))


def implicit_fallback(root: Path) -> CompileFact | None:
    """graph.py's ``make_fallback(target, ...)`` under ``config.implicit_fallbacks``: what an op
    without a lowering or decomposition becomes."""
    try:
        tree = ast.parse((root / GRAPH_REL).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None
    for node in walk(tree):
        if isinstance(node, ast.If) and "implicit_fallbacks" in ast.unparse(node.test):
            for call in (n for s in node.body for n in walk(s) if isinstance(n, ast.Call)):
                if callee(call) == "make_fallback":
                    return CompileFact("", "", "implicit", _segment(call), GRAPH_REL, call.lineno, "make_fallback")
    return None
