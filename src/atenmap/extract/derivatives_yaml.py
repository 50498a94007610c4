"""tools/autograd/derivatives.yaml -> ``DerivativeEntry`` records, one per ``- name:`` entry.

``load_derivatives(path, root)`` reads the file of a checkout; ``parse_derivatives(text, file)`` a
string (tests). As in native_yaml.py (and tools/autograd/load_derivatives.py), every key an entry
may hold is popped and modelled, and a leftover key is an error naming file and line. See
Note [derivatives.yaml entries].
"""
from __future__ import annotations

import pathlib

import yaml

from atenmap import files
from atenmap.errors import YamlError
from atenmap.extract.native_yaml import MAX_YAML_BYTES, _Loader, compose_node, construct, shown, split_schema  # one yaml reader, one error form
from atenmap.model import Location
from atenmap.model_answers import DerivativeEntry, Formula

__all__ = ["DERIVATIVES_REL", "load_derivatives", "parse_derivatives"]

DERIVATIVES_REL = "tools/autograd/derivatives.yaml"


def _is_op_name(text: str) -> bool:
    """An operator's name as derivatives.yaml writes it (``mul.Tensor``, ``_foo_``): an ASCII letter
    or ``_``, then word characters and dots."""
    return text[:1].isascii() and (text[:1].isalpha() or text[:1] == "_") and (
        text.replace(".", "_").replace("_", "a").isalnum())


def _is_result(name: str) -> bool:
    """``result``, ``result0``, ``result1``, ...: the names torchgen gives unnamed returns."""
    return name == "result" or name.startswith("result") and name[6:].isdecimal()


# Note [derivatives.yaml entries]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An entry is keyed by the operator's whole schema (``name: mul.Tensor(Tensor self, Tensor other)
# -> Tensor``), not its name. Its other keys are ``output_differentiability`` (a list of bools, or
# one condition string), and formula keys: one or several comma-separated *input* names (``self``,
# ``self, other``, ``grad_output``) give the backward formula of those inputs, written with ``grad``
# / ``grads``, the inputs and ``result``; *output* names (``result``, ``result0``.., or the schema's
# named returns such as ``values``) give the forward-mode (JVP) formula, written with ``self_p`` /
# ``self_t``. A formula may instead be ``non_differentiable``, ``not_implemented("why")``,
# ``auto_element_wise`` or ``auto_linear`` (torchgen derives those). Since 2.0 an entry may hold its
# formulas under ``dispatch:``, per autograd key (``Default``, ``AutogradNestedTensor``); the top-level
# form is what load_derivatives.py calls ``Default``. The same schema can appear once only.


def load_derivatives(path: pathlib.Path, root: pathlib.Path) -> list[DerivativeEntry]:
    """Parse a derivatives.yaml; ``Location.file`` is its path relative to ``root``. YamlError if it
    cannot be read or is malformed (the message names file and line)."""
    path, root = pathlib.Path(path), pathlib.Path(root)
    try:
        file = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        file = path.as_posix()
    try:
        text = files.read_text(path, MAX_YAML_BYTES)
    except (OSError, UnicodeError) as exc:
        raise YamlError(f"{file}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_derivatives(text, file)


def parse_derivatives(text: str, file: str = DERIVATIVES_REL) -> list[DerivativeEntry]:
    """Parse derivatives.yaml text; ``file`` is what locations and errors name."""
    loader = _Loader(text)
    try:
        top = compose_node(loader, text, file)
        if top is None:
            return []
        if not isinstance(top, yaml.SequenceNode):
            raise YamlError(f"{file}:{top.start_mark.line + 1}: expected a list of derivative entries")
        out, first = [], {}
        for node in top.value:
            entry = _entry(loader, node, file)
            if entry.schema in first:
                raise YamlError(f"{entry.loc}: duplicate entry '{entry.op}' (first at line {first[entry.schema]})")
            first[entry.schema] = entry.loc.line
            out.append(entry)
        return out
    finally:
        loader.dispose()


def _entry(loader, node, file: str) -> DerivativeEntry:
    loc = Location(file, node.start_mark.line + 1)
    if not isinstance(node, yaml.MappingNode):
        raise YamlError(f"{loc}: expected a mapping with a 'name' key")
    items = {_scalar(loader, k, file): (k, v) for k, v in node.value}
    if "name" not in items:
        raise YamlError(f"{loc}: derivatives.yaml entry has no 'name' key")
    schema = _scalar(loader, items.pop("name")[1], file)
    parts = split_schema(schema.strip())
    if parts is None or not _is_op_name(parts[0]):
        raise YamlError(f"{loc}: 'name' is not a function schema: {shown(schema)}")
    op, args, returns = parts
    inputs, outputs = _arg_names(args), _return_names(returns)
    diff: tuple = ()
    if "output_differentiability" in items:
        raw = _construct(loader, items.pop("output_differentiability")[1], file)
        if not isinstance(raw, list) or not all(isinstance(x, (bool, str)) for x in raw):
            raise YamlError(f"{loc}: '{op}': output_differentiability must be a list of bools or one condition")
        diff = tuple(raw)
    sections: list[tuple[str, list]] = []
    if "dispatch" in items:
        dnode = items.pop("dispatch")[1]
        if not isinstance(dnode, yaml.MappingNode):
            raise YamlError(f"{Location(file, dnode.start_mark.line + 1)}: '{op}': dispatch must map keys to formulas")
        for k, v in dnode.value:
            if not isinstance(v, yaml.MappingNode):
                raise YamlError(f"{Location(file, v.start_mark.line + 1)}: '{op}': dispatch key "
                                f"{shown(_scalar(loader, k, file))} must hold formulas")
            sections.append((_scalar(loader, k, file), v.value))
    if items:
        sections.insert(0, ("Default", [kv for kv in items.values()]))
    formulas = []
    for dispatch, pairs in sections:
        for k, v in pairs:
            formulas.append(_formula(loader, k, v, file, op, inputs, outputs, dispatch))
    return DerivativeEntry(op, schema, loc, tuple(formulas), diff)


def _formula(loader, knode, vnode, file: str, op: str, inputs: set[str], outputs: set[str],
             dispatch: str) -> Formula:
    key = _scalar(loader, knode, file)
    loc = Location(file, knode.start_mark.line + 1)
    names = tuple(n.strip() for n in key.split(","))
    if all(n in outputs or _is_result(n) for n in names) and not all(n in inputs for n in names):
        kind = "forward"
    elif all(n in inputs for n in names):
        kind = "backward"
    else:
        unknown = ", ".join(repr(n) for n in names if n not in inputs and n not in outputs)
        raise YamlError(f"{loc}: unknown key {unknown} in derivatives.yaml entry '{op}' "
                        "(neither an input nor an output of its schema)")
    value = _construct(loader, vnode, file)
    if not isinstance(value, str):
        raise YamlError(f"{loc}: '{op}': the formula of {shown(key)} must be a string, got {shown(value)}")
    return Formula(names, " ".join(value.split()), loc, kind, dispatch)


def _scalar(loader, node, file: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise YamlError(f"{Location(file, node.start_mark.line + 1)}: expected a string")
    return str(_construct(loader, node, file))


def _construct(loader, node, file: str):
    return construct(loader, node, Location(file, node.start_mark.line + 1), deep=True)


def _arg_names(args: str) -> set[str]:
    """``Tensor self, int[1] dim, *, bool keepdim=False`` -> {self, dim, keepdim}."""
    out = set()
    for a in args.split(", "):
        a = a.split("=", 1)[0].strip()
        if a and a != "*":
            out.add(a.rsplit(" ", 1)[-1])
    return out


def _return_names(returns: str) -> set[str]:
    """``(Tensor values, Tensor indices)`` -> {values, indices}; unnamed returns have none."""
    r = returns.strip()
    if r.startswith("(") and r.endswith(")"):
        r = r[1:-1]
    return {p.strip().rsplit(" ", 1)[-1] for p in r.split(", ") if " " in p.strip()}
