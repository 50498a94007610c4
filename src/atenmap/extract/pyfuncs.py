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


@dataclass(frozen=True)
class PyFunction:
    name: str  # as defined: normalize
    qualname: str  # torch.nn.functional.normalize
    file: str  # relative to the tree's root
    line: int
    calls: tuple[PyCall, ...] = ()
    alias: str | None = None  # X = _add_docstr(torch._C._nn.X, ...): the binding it is

    def to_dict(self) -> dict:
        return {"name": self.name, "qualname": self.qualname, "file": self.file, "line": self.line,
                "calls": [[c.name, c.line, c.returned] for c in self.calls], "alias": self.alias}

    @classmethod
    def from_dict(cls, d: dict) -> "PyFunction":
        return cls(d["name"], d["qualname"], d["file"], d["line"], tuple(PyCall(*c) for c in d["calls"]), d["alias"])


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
                                        tuple(_calls(node, defined)))
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
    found: list[tuple[int, int, int, str, bool]] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func, defined)
        if name is not None:  # by where the callee's name ends: x.norm(p).clamp_min(eps) calls norm first
            found.append((node.func.end_lineno or node.lineno, node.func.end_col_offset or 0, node.lineno, name,
                          id(node) in returned))
    return [PyCall(name, line, ret) for _l, _c, line, name, ret in sorted(found)]


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
