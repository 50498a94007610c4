"""The Python layer above the bindings: the functions of ``torch.nn.functional``, ``torch``'s
``torch/functional.py``, ``Tensor``'s ``torch/_tensor.py`` and ``torch.linalg`` / ``special`` /
``fft``, read from the tree's own files with :mod:`ast` (never imported: the tree's code does not run).

Note [Python functions above the bindings]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
What a user types is often no binding: ``F.cross_entropy`` is a ``def`` in
torch/nn/functional.py whose body calls ``torch._C._nn.cross_entropy_loss(...)`` (the binding of
``aten::cross_entropy_loss``); ``F.normalize`` calls ``input.norm(...).clamp_min(eps)`` and
``torch.div``; ``torch.norm`` and ``torch.einsum`` are ``def``s of torch/functional.py that call
``torch.linalg.vector_norm`` / ``_VF.einsum`` (``_VF`` is ``torch._C._VariableFunctions``, the
``torch.X`` bindings); ``Tensor.norm`` is a method of torch/_tensor.py calling ``torch.norm``. Others
are the binding under a new name: ``linear = _add_docstr(torch._C._nn.linear, ...)``,
``svd = _add_docstr(_linalg.linalg_svd, ...)`` -- an alias; or made of functions of the module:
``max_pool2d = boolean_dispatch(if_true=..., if_false=_max_pool2d, ...)`` calls those.

For each module-level ``def`` (``Tensor``: each method of ``class Tensor``) this module records its
place and the calls in its body, in source order, spelled as names.py reads them: ``torch.X``, the bindings
``torch._C._VariableFunctions.X`` (``_VF.X``: the ``torch.X`` binding, not torch/functional.py's
Python ``torch.X`` that calls it) and ``torch._C._nn.X``, ``torch.linalg.X`` (``_linalg.X`` too), ``Tensor.X`` for a method called on anything but a module (``input.norm``,
``x.norm(...).clamp_min``), and the bare name of another function of the same module. Which of them
are operators is decided by the resolver (api.Index.lookup), not here.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

# surface (names.UserName.surface) -> (file, the Python prefix its functions have, class or None)
MODULES: dict[str, tuple[str, str, str | None]] = {
    "nn": ("torch/nn/functional.py", "torch.nn.functional", None),
    "torch": ("torch/functional.py", "torch", None),
    "Tensor": ("torch/_tensor.py", "torch.Tensor", "Tensor"),
    "linalg": ("torch/linalg/__init__.py", "torch.linalg", None),
    "special": ("torch/special/__init__.py", "torch.special", None),
    "fft": ("torch/fft/__init__.py", "torch.fft", None),
}
# module names as these files import them -> the spelling names.py reads
_VF = "torch._C._VariableFunctions"
_MODULE_ALIASES = {"_VF": _VF, "torch._VF": _VF, _VF: _VF, "_VariableFunctions": _VF, "torch._C._nn": "torch._C._nn", "_nn": "torch._C._nn",
                   "torch": "torch", "torch.linalg": "torch.linalg", "_linalg": "torch._C._linalg",
                   "torch._C._linalg": "torch._C._linalg", "torch._C._special": "torch._C._special",
                   "_special": "torch._C._special", "torch._C._fft": "torch._C._fft", "_fft": "torch._C._fft", "torch.special": "torch.special",
                   "torch.fft": "torch.fft", "torch.nn.functional": "torch.nn.functional", "F": "torch.nn.functional"}


@dataclass(frozen=True)
class PyCall:
    name: str  # torch.X, torch._C._nn.X, torch.linalg.X, Tensor.X, or a function of the same module
    line: int  # 1-based
    returned: bool = False  # in a ``return`` statement: what the function returns (on some path)
    # The ``if`` tests around the call, outermost first, each with the side it sits on (True: the
    # body, False: the ``else``), as the source writes them (Note [The path a call's arguments take]).
    guards: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class PyFunction:
    name: str  # as defined: normalize
    qualname: str  # torch.nn.functional.normalize
    file: str  # relative to the tree's root
    line: int
    calls: tuple[PyCall, ...] = ()
    alias: str | None = None  # X = _add_docstr(torch._C._nn.X, ...): the binding it is
    # (name, default as the source writes it, or None) of each parameter, in order
    params: tuple[tuple[str, str | None], ...] = ()

    def to_dict(self) -> dict:  # what the bundle quotes (guards and params are read from a tree's file only)
        return {"name": self.name, "qualname": self.qualname, "file": self.file, "line": self.line,
                "calls": [[c.name, c.line, c.returned] for c in self.calls], "alias": self.alias}

    @classmethod
    def from_dict(cls, d: dict) -> "PyFunction":
        return cls(d["name"], d["qualname"], d["file"], d["line"], tuple(PyCall(*c[:3]) for c in d["calls"]), d["alias"])


def read_module(source: str, surface: str) -> dict[str, PyFunction]:
    """The functions of one of MODULES' files (``source``: its text). A file that does not parse
    gives none (an old or broken tree answers without its Python layer)."""
    file, prefix, cls = MODULES[surface]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    body = tree.body
    if cls is not None:
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), [])
    defined = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {n.targets[0].id for n in body if isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)}
    out: dict[str, PyFunction] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("__"):
            out[node.name] = PyFunction(node.name, f"{prefix}.{node.name}", file, node.lineno,
                                        tuple(_calls(node, defined)), params=_params(node))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = _alias(node.value)
            name = node.targets[0].id
            if target and name not in out:
                out[name] = PyFunction(name, f"{prefix}.{name}", file, node.lineno, (), target)
            elif isinstance(node.value, ast.Call) and name not in out:  # boolean_dispatch(if_true=f, if_false=g)
                made_of = [PyCall(n.id, n.lineno) for n in ast.walk(node.value)
                           if isinstance(n, ast.Name) and n.id in defined and n.id != name]
                if made_of:
                    out[name] = PyFunction(name, f"{prefix}.{name}", file, node.lineno, tuple(made_of))
    return out


def _alias(value: ast.expr) -> str | None:
    """``_add_docstr(torch._C._nn.linear, ...)`` or ``torch._C._nn.linear`` -> ``torch._C._nn.linear``."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "_add_docstr" and value.args:
        value = value.args[0]
    dotted = _dotted(value)
    if dotted is None or "." not in dotted:
        return None
    module, _, attr = dotted.rpartition(".")
    return f"{_MODULE_ALIASES[module]}.{attr}" if module in _MODULE_ALIASES else None


def _calls(fn: ast.FunctionDef | ast.AsyncFunctionDef, defined: set[str]) -> list[PyCall]:
    returned = {id(n) for stmt in ast.walk(fn) if isinstance(stmt, ast.Return) for n in ast.walk(stmt)}
    guards = _guards(fn)
    found: list[tuple[int, int, int, str, bool, tuple]] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func, defined)
        if name is not None:  # by where the callee's name ends: x.norm(p).clamp_min(eps) calls norm first
            found.append((node.func.end_lineno or node.lineno, node.func.end_col_offset or 0, node.lineno, name,
                          id(node) in returned, guards.get(id(node), ())))
    return [PyCall(name, line, ret, g) for _l, _c, line, name, ret, g in sorted(found)]


def _guards(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[int, tuple[tuple[str, bool], ...]]:
    """id(node) -> the ``if`` tests around it (Note [The path a call's arguments take])."""
    out: dict[int, tuple[tuple[str, bool], ...]] = {}

    def visit(stmts: list[ast.stmt], around: tuple[tuple[str, bool], ...]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                for n in ast.walk(stmt.test):
                    out[id(n)] = around
                visit(stmt.body, (*around, (test, True)))
                visit(stmt.orelse, (*around, (test, False)))
                if _returns(stmt.body) and not stmt.orelse:  # what follows is the test's else
                    around = (*around, (test, False))
                continue
            for n in ast.walk(stmt):
                out.setdefault(id(n), around)
            for n in ast.walk(stmt):  # `a(...) if inplace else b(...)`: outer tests first (walk order)
                if isinstance(n, ast.IfExp) and not isinstance(stmt, ast.If):
                    test = ast.unparse(n.test)
                    for side, branch in ((True, n.body), (False, n.orelse)):
                        for m in ast.walk(branch):
                            if id(m) in out:
                                out[id(m)] = (*out[id(m)], (test, side))
            for field in ("body", "orelse", "finalbody"):  # for/while/with/try: their statements keep the tests
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    for n in inner:
                        for m in ast.walk(n):
                            out.pop(id(m), None)
                    visit(inner, around)

    visit(fn.body, ())
    return out


def _returns(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` ends in a ``return`` (or a ``raise``)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    return isinstance(last, ast.If) and _returns(last.body) and _returns(last.orelse)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str, str | None], ...]:
    """``def norm(input, p="fro", dim=None)`` -> (("input", None), ("p", "'fro'"), ("dim", "None"))."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    out = list(zip((p.arg for p in positional), defaults))
    out += [(p.arg, ast.unparse(d) if d is not None else None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return tuple(out)


def _call_name(func: ast.expr, defined: set[str]) -> str | None:
    if isinstance(func, ast.Name):
        return func.id if func.id in defined else None
    if not isinstance(func, ast.Attribute) or isinstance(func.value, ast.Constant):
        return None  # " ".join(...)
    receiver = _dotted(func.value)
    if receiver in _MODULE_ALIASES:
        return f"{_MODULE_ALIASES[receiver]}.{func.attr}"
    if receiver is not None and receiver.split(".", 1)[0] in ("torch", "math", "warnings", "_Reduction", "functools",
                                                              "builtins", "os", "sys", "typing", "_VF", "F"):
        return None  # torch.jit.is_scripting(), math.sqrt(): not a Tensor method
    return f"Tensor.{func.attr}"


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


__all__ = ["MODULES", "PyCall", "PyFunction", "read_module"]
