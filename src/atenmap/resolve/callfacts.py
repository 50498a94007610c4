"""What the user says of one call: ``--dtype``, ``--shape`` and ``--example`` read into ``CallFacts``.

Note [One call's facts]
~~~~~~~~~~~~~~~~~~~~~~~
The static chain lists every path an operator can take; a user asks about *their* call. Three
options say what that call is:

- ``--dtype float32``: the tensors' dtype, by any name torch gives it (``float32``, ``float``,
  ``torch.float32``); kept as its c10 ScalarType name (``Float``), the name ``AT_DISPATCH`` cases
  and ``scalar_type() == kFloat`` tests use.
- ``--shape 64x64,64x64``: the tensor arguments' sizes, in order; ``x`` between sizes, ``,``
  between tensors, ``()`` (or an empty item) for a 0-dim tensor. A size may be 0.
- ``--example 'torch.mm(torch.randn(64, 64), torch.randn(64, 64))'``: one Python expression, read
  with ``ast`` and never run. The outermost torch call names the operator (``torch.mm`` -> ``mm``,
  a method call ``x.add_(y)`` -> ``add_``); tensors made by ``torch.randn/rand/zeros/ones/empty/
  full/randint/tensor`` give shapes, a ``dtype=torch.X`` gives the dtype, ``out=`` picks the out
  overload and a name passed twice (``torch.add(x, x)``) is an alias.

An example is refused (one line, exit 2) when it is not one expression, is over ``MAX_EXAMPLE``
bytes, names ``__import__`` or any dunder, has an attribute chain that does not start at ``torch``
(or ``F``, the usual name of ``torch.nn.functional``) or at a call/variable that is a tensor, or
names no torch call. What the facts decide is written by the resolver; a condition they cannot
decide is kept and labelled, never dropped.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from atenmap.errors import UsageError
from atenmap.limits import Unparsable, parse_python
from atenmap.resolve.dtypes import TORCH_NAMES

MAX_EXAMPLE = 10_000  # bytes of --example
MAX_TENSORS = 64  # tensors of --shape
MAX_DIMS = 16  # dims of one --shape tensor

# torch's dtype names (torch.float32 and its aliases) -> c10 ScalarType.
DTYPES: dict[str, str] = {
    "float32": "Float", "float": "Float", "float64": "Double", "double": "Double",
    "float16": "Half", "half": "Half", "bfloat16": "BFloat16",
    "uint8": "Byte", "int8": "Char", "int16": "Short", "short": "Short", "int32": "Int", "int": "Int",
    "int64": "Long", "long": "Long", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
    "bool": "Bool", "complex32": "ComplexHalf", "chalf": "ComplexHalf", "complex64": "ComplexFloat",
    "cfloat": "ComplexFloat", "complex128": "ComplexDouble", "cdouble": "ComplexDouble",
    "float8_e5m2": "Float8_e5m2", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2fnuz": "Float8_e5m2fnuz",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "qint8": "QInt8", "quint8": "QUInt8", "qint32": "QInt32",
}
_CANONICAL = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64",
              "bool", "complex64", "complex128")
# Python calls that make a tensor from sizes: (size arguments start at, ...)
_FACTORIES = {"randn": 0, "rand": 0, "zeros": 0, "ones": 0, "empty": 0, "full": 0, "randint": 2}
_ROOTS = ("torch", "F")


@dataclass(frozen=True)
class CallFacts:
    """One call as the user described it. ``dtype``: a ScalarType name; ``shapes``: the tensor
    arguments' sizes in order; ``call``: the Python call an example makes (``torch.mm``);
    ``operator``: the operator name it reaches, overload left to the resolver (``mm``, ``add`` with
    ``out=`` -> ``add.out``); ``aliases``: pairs of argument positions that are one tensor."""

    dtype: str | None = None
    shapes: tuple[tuple[int, ...], ...] | None = None
    call: str | None = None
    operator: str | None = None
    aliases: tuple[tuple[int, int], ...] = ()
    # The default call only (Note [A call with the defaults] in runs.py), never a user's: its tensors
    # are fresh (non-empty, contiguous, the default memory format) and torch's settings are untouched.
    default: bool = False
    # The default call's device (its dispatch key's: ``CUDA``), where all its tensors are, and whether
    # the operator converts (a required ``ScalarType`` parameter: its result's dtype is not its input's).
    device: str | None = None
    converts: bool = False
    # Below a copy of a view that changes strides (Note [A copy of a view is strided] in strided.py):
    # the copied tensors are not contiguous, whatever the call's own tensors are.
    strided: bool = False
    # The call's arguments as the Python arg parser sees them (Note [The signature a call parses]
    # in names.py): how many are positional (a method call's receiver counted: it is ``self``),
    # the keywords by name, and the positions given a number literal (no Tensor parameter takes one).
    positional: int | None = None
    keywords: tuple[str, ...] = ()
    numbers: tuple[int, ...] = ()
    # The string literals passed by keyword (``mode="reflect"``): Note [A value chosen by a string]
    # in runs.py decides the native function's branches on them.
    strings: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return any((self.dtype, self.shapes is not None, self.call, self.aliases))

    def used(self) -> tuple[str, ...]:
        """The facts in words, for the answer's "given" line."""
        out = []
        if self.call:
            out.append(f"call {self.call}")
        if self.dtype:
            out.append(f"dtype {torch_dtype(self.dtype)}")
        if self.shapes is not None:
            out.append("shapes " + ", ".join("x".join(map(str, s)) or "()" for s in self.shapes))
        for a, b in self.aliases:
            out.append(f"arguments {a} and {b} alias")
        for name, value in self.strings:
            out.append(f"{name}={value!r}")
        return tuple(out)

    def to_dict(self) -> dict:
        return {"dtype": torch_dtype(self.dtype) if self.dtype else None,
                "shapes": None if self.shapes is None else [list(s) for s in self.shapes],
                "call": self.call, "operator": self.operator, "aliases": [list(a) for a in self.aliases],
                "strings": {k: v for k, v in self.strings}}


def torch_dtype(scalar: str) -> str:
    """``Float`` -> ``float32``: torch's canonical name (``torch.float32``)."""
    for name in _CANONICAL:
        if DTYPES[name] == scalar:
            return name
    return TORCH_NAMES.get(scalar, scalar)


def parse_dtype(text: str) -> str:
    """``float32`` / ``torch.float`` / ``half`` -> the ScalarType name; UsageError otherwise."""
    name = text.strip().removeprefix("torch.")
    if name not in DTYPES:
        raise UsageError(f"--dtype {text!r}: not a torch dtype (choose from {', '.join(_CANONICAL)}, "
                         f"or another name of torch.<dtype>)")
    return DTYPES[name]


def parse_shapes(text: str) -> tuple[tuple[int, ...], ...]:
    """``64x64,64`` -> ((64, 64), (64,)); ``()`` or an empty item is a 0-dim tensor."""
    items = text.split(",")
    if len(items) > MAX_TENSORS:
        raise UsageError(f"--shape: more than {MAX_TENSORS} tensors")
    out = []
    for item in items:
        item = item.strip()
        if item in ("", "()"):
            out.append(())
            continue
        dims = item.split("x")
        if len(dims) > MAX_DIMS or not all(d.isdigit() and len(d) <= 12 for d in dims):
            raise UsageError(f"--shape {text!r}: write sizes as NxM (non-negative integers, at most {MAX_DIMS} "
                             f"dims), tensors separated by commas, () for a 0-dim tensor: --shape 64x64,64x64")
        out.append(tuple(int(d) for d in dims))
    return tuple(out)


def parse_example(text: str) -> CallFacts:
    """The facts of one Python call expression (Note [One call's facts]); never runs it."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_EXAMPLE:
        raise UsageError(f"--example: over {MAX_EXAMPLE} bytes")
    try:
        tree = parse_python(text.strip(), "--example", max_bytes=MAX_EXAMPLE, mode="eval")
    except Unparsable as exc:
        raise UsageError(f"--example: not one valid Python expression ({str(exc).removeprefix('--example: ')}); write "
                         f"the call, e.g. --example 'torch.mm(torch.randn(64, 64), torch.randn(64, 64))'") from None
    _check(tree.body)
    call = tree.body
    if not isinstance(call, ast.Call) or _callee(call) is None:
        raise UsageError("--example: names no torch call (write torch.OP(...), F.OP(...) or x.OP(...))")
    return _read_call(call)


def _check(node: ast.AST) -> None:
    """Refuse what an example has no business holding (Note [One call's facts])."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and "__" in n.id or isinstance(n, ast.Attribute) and "__" in n.attr:
            raise UsageError("--example: dunder names (__import__, __class__, ...) are refused")
        if isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.ListComp,
                          ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Starred)):
            raise UsageError(f"--example: {type(n).__name__} is refused; write one torch call")
        if isinstance(n, ast.Attribute) and _root(n) is None:
            raise UsageError("--example: attribute chains must start at torch (or F, a tensor variable, "
                             "or a torch call)")


def _root(node: ast.Attribute) -> str | None:
    """The start of an attribute chain when it is allowed: torch, F, a variable, or a call."""
    value, depth = node.value, 1
    while isinstance(value, ast.Attribute):
        value, depth = value.value, depth + 1
    if isinstance(value, ast.Call):
        return "call"
    if isinstance(value, ast.Name) and (value.id in _ROOTS or depth == 1):
        return value.id  # torch.X.Y, or x.method: a tensor variable's method (one level, checked as an operator later)
    return None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _callee(call: ast.Call) -> str | None:
    """``torch.mm`` / ``F.relu`` / ``torch.nn.functional.relu``, or ``Tensor.add_`` for a method
    call on a tensor (a variable or a torch call)."""
    name = _dotted(call.func)
    if name is not None and name.split(".", 1)[0] in _ROOTS and "." in name:
        return name
    if isinstance(call.func, ast.Attribute) and (
            isinstance(call.func.value, (ast.Name, ast.Call)) or _dotted(call.func.value)):
        return f"Tensor.{call.func.attr}"
    return None


def _read_call(call: ast.Call) -> CallFacts:
    callee = _callee(call)
    args = list(call.args)
    if callee.startswith("Tensor.") and isinstance(call.func, ast.Attribute):
        args.insert(0, call.func.value)  # self
    shapes, dtype = [], None
    names: dict[str, int] = {}
    aliases = []
    for i, arg in enumerate(args):
        made = _made_tensor(arg)
        if made is not None:
            shape, made_dtype = made
            shapes.append(shape)
            dtype = dtype or made_dtype
        elif isinstance(arg, ast.Name):
            if arg.id in names:
                aliases.append((names[arg.id], i))
            names.setdefault(arg.id, i)
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}
    if "dtype" in kwargs:
        dtype = _dtype_of(kwargs["dtype"]) or dtype
    operator = callee.rsplit(".", 1)[-1]
    if "out" in kwargs:
        operator += ".out"
    complete = len(shapes) == len(args) and not names
    numbers = tuple(i for i, a in enumerate(args) if _number(a))
    return CallFacts(dtype=dtype, shapes=tuple(shapes) if complete and shapes else None, call=callee,
                     operator=operator, aliases=tuple(aliases), positional=len(args),
                     keywords=tuple(k.arg for k in call.keywords if k.arg), numbers=numbers,
                     strings=tuple((k, v.value) for k, v in kwargs.items()
                                   if isinstance(v, ast.Constant) and isinstance(v.value, str)))


def _number(node: ast.AST) -> bool:
    """``2``, ``-0.5``, ``1e-3``: a Python number (never a bool) written in the call."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)


def _made_tensor(node: ast.AST) -> tuple[tuple[int, ...], str | None] | None:
    """``torch.randn(64, 64, dtype=torch.half)`` -> ((64, 64), "Half"); None for anything else."""
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    if name is None or not name.startswith("torch.") or name.count(".") != 1:
        return None
    factory = name.split(".", 1)[1]
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    dtype = _dtype_of(kwargs["dtype"]) if "dtype" in kwargs else None
    if factory == "tensor":
        return (_literal_shape(node.args[0]) if node.args else None) or (), dtype
    if factory not in _FACTORIES:
        return None
    sizes = node.args[_FACTORIES[factory]:]
    if factory == "full":
        sizes = node.args[:1]
    if "size" in kwargs:
        sizes = [kwargs["size"]]
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    if not all(isinstance(s, ast.Constant) and type(s.value) is int and s.value >= 0 for s in sizes):
        return None
    return tuple(s.value for s in sizes), dtype


def _literal_shape(node: ast.AST) -> tuple[int, ...] | None:
    """The shape of a nested list literal (``[[1, 2], [3, 4]]`` -> (2, 2)), () for a number."""
    if isinstance(node, ast.Constant):
        return ()
    if isinstance(node, (ast.List, ast.Tuple)):
        inner = [_literal_shape(e) for e in node.elts]
        if inner and all(s is not None and s == inner[0] for s in inner):
            return (len(node.elts), *inner[0])
        return (0,) if not inner else None
    return None


def _dtype_of(node: ast.AST) -> str | None:
    name = _dotted(node)
    if name and name.startswith("torch."):
        return DTYPES.get(name[len("torch."):])
    return None


def facts_from_options(dtype: str | None = None, shape: str | None = None,
                       example: str | None = None) -> CallFacts | None:
    """``--dtype``, ``--shape`` and ``--example`` together (None when none is given): the example's
    facts, with ``--dtype`` and ``--shape`` in place of what it says."""
    if dtype is None and shape is None and example is None:
        return None
    facts = parse_example(example) if example is not None else CallFacts()
    if dtype is not None:
        facts = replace(facts, dtype=parse_dtype(dtype))
    if shape is not None:
        facts = replace(facts, shapes=parse_shapes(shape))
    return facts


__all__ = ["CallFacts", "facts_from_options", "DTYPES", "MAX_EXAMPLE", "parse_dtype", "parse_example", "parse_shapes", "torch_dtype"]
