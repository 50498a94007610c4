"""native_functions.yaml -> ``Operator`` records, with the per-key dispatch map torchgen computes.

``load_operators(yaml_path, root)`` reads ``aten/src/ATen/native/native_functions.yaml``;
``parse_operators(text, file)`` does the same for a string (tests). Like torchgen's
``NativeFunction.from_yaml``, every key an entry may hold is popped and modelled, and a leftover key is
an error naming file and line: a PyTorch release that adds a key fails loudly here instead of losing
data. ``find_operator(ops, text)`` resolves what a user typed (``add.out``, ``aten::linear``).

The dispatch map (``Operator.dispatch``) reproduces torchgen's ``BackendIndex`` for every operator the
yaml declares, in 1.13 and 2.x trees alike; ``tests/test_native_yaml_realtree.py`` checks it against
the checkout's own torchgen. Entries torchgen fills in (no ``dispatch:``, ufunc) have ``explicit=False``.
"""
from __future__ import annotations

import difflib
import reprlib
import pathlib
from typing import Any

import yaml

from atenmap import files
from atenmap.errors import AmbiguousOperator, AtenmapError, UnknownOperator, YamlError
from atenmap.kinds import KeyGroup
from atenmap.model import DispatchEntry, Location, Operator, OperatorName, UfuncLoop

__all__ = ["load_operators", "parse_operators", "find_operator"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CIA = KeyGroup.CIA

# Note [Structured flag per dispatch key]
# torchgen's BackendMetadata.structured is ``structured and key in STRUCTURED_DISPATCH_KEYS``: an
# entry with ``structured: True`` is structured only on the keys whose kernels are generated from
# the out= meta/impl pair (TORCH_IMPL_FUNC); e.g. its SparseCPU or CompositeExplicitAutograd kernel is
# an ordinary function. The set is {CPU, CUDA, MPS} in 1.13 and {CPU, CUDA, MPS, XPU} in 2.x; 1.13's
# yaml has no XPU key, so the union is right for both.
_STRUCTURED_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU"})

# Note [ufunc implicit kernels]
# An entry with ``ufunc_inner_loop`` (in practice only ``add.out``) must be structured, an out=
# schema, and must not name CPU or CUDA in ``dispatch:``: torchgen generates those two kernels itself
# and names them ``ufunc_{base name}_{key}`` (torchgen/api/ufunc.py ``schema_kernel_name``), e.g.
# ``ufunc_add_CPU``. They are structured (they are the impl of a structured op).
_UFUNC_KEYS = ("CPU", "CUDA")

# Keys with no navigation meaning: kept in ``Operator.other`` with the type torchgen requires.
_OTHER_KEYS: dict[str, type] = {
    "category_override": str,
    "cpp_no_default_args": list,
    "device_check": str,
    "device_guard": bool,
    "precomputed": list,
    "use_const_ref_for_mutable_tensors": bool,
}


def split_schema(schema: str) -> tuple[str, str, str] | None:
    """``name(args) -> returns`` -> ``(name, args, returns)``, or None when ``schema`` is not of that
    shape: the name is what comes before the first ``(`` (not empty), the arguments run to the last
    ``) -> `` after it, the returns are the rest."""
    open_ = schema.find("(")
    arrow = schema.rfind(") -> ", open_ + 1) if open_ > 0 else -1
    if arrow < 0:
        return None
    return schema[:open_], schema[open_ + 1:arrow], schema[arrow + 5:]


def _is_key(text: str) -> bool:
    """A dispatch key's spelling: an ASCII identifier (``CPU``, ``CompositeImplicitAutograd``)."""
    return text.isascii() and text.isidentifier()


def _writes(arg: str) -> bool:
    """An argument whose type is a Tensor with a writing alias annotation: ``Tensor(a!) out``,
    ``Tensor(a! -> a|b)`` (a ``!`` before the annotation's closing parenthesis)."""
    return arg.startswith("Tensor(") and "!" in arg[7:].partition(")")[0]


def _ufunc_loop(value: str) -> tuple[str, str] | None:
    """``add (AllAndComplex, BFloat16)`` -> ``("add", "AllAndComplex, BFloat16")``, or None: a name
    without whitespace, one space, the types in parentheses (no parenthesis among them), then the
    end (one newline after it allowed, as a block scalar's)."""
    name, sep, rest = value.partition(" (")
    rest = rest[:-1] if rest.endswith("\n") else rest
    if not sep or name.split() != [name] or not rest.endswith(")"):
        return None
    types = rest[:-1]
    return None if "(" in types or ")" in types else (name, types)


def load_operators(yaml_path: pathlib.Path, root: pathlib.Path) -> list[Operator]:
    """Parse a native_functions.yaml; ``Location.file`` is its path relative to ``root``."""
    yaml_path, root = pathlib.Path(yaml_path), pathlib.Path(root)
    try:
        file = yaml_path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        file = yaml_path.as_posix()
    try:
        data = files.read_bytes(yaml_path, MAX_YAML_BYTES)
    except OSError as exc:
        raise YamlError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlError(f"{file}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    return parse_operators(text, file)


# Note [Bounded yaml]
# A yaml alias (``*a``) names a node again: composing shares it, but everything that walks the
# data (construction's merge keys ``<<: *a``, ``_freeze``, an error's ``repr``) meets it once per
# reference. Nine aliases of nine aliases ... are 9**n nodes in n short lines (a 1.2 kB entry took
# 416 MB), and ``&a [*a]`` is a cycle (a RecursionError). So before anything walks it, the
# composed graph is measured as if every alias were expanded: the count and the depth of the
# expanded nodes (computed once per distinct node, linear in the text), and a node that contains
# itself is refused. PyTorch's own yaml files use no alias at all (2.6.0's native_functions.yaml:
# 0.6 MB, 27,877 nodes, depth 5), so the bounds below only ever refuse crafted input. The file's
# size is bounded before it is composed: libyaml's nodes cost ~370 bytes each, and 4 MiB of
# ``[x,x,...]`` are 2 million of them (~750 MB). An error shows a yaml value through ``shown``
# (at most ~200 characters, however large the value).
MAX_YAML_BYTES = 4 << 20
MAX_YAML_NODES = 1_000_000
MAX_YAML_DEPTH = 64


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 160
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict = 3, 8, 8


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, cut short for a long or deep value."""
    if isinstance(value, str) and len(value) <= 160:
        return repr(value)
    return _SHOWN.repr(value)


def _children(node) -> list:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return []


def check_graph(top, file: str) -> None:
    """YamlError when ``top`` expanded holds more than MAX_YAML_NODES nodes, is deeper than
    MAX_YAML_DEPTH or contains itself (see Note [Bounded yaml]). A tree (no collection reached
    twice: PyTorch's files) is walked once; a graph with aliases is measured by ``_check_shared``."""
    seen: set[int] = set()
    stack = [(top, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            return _check_shared(top, file)
        seen.add(id(node))
        if depth > MAX_YAML_DEPTH:
            raise YamlError(f"{file}:{node.start_mark.line + 1}: malformed yaml: deeper than {MAX_YAML_DEPTH} levels")
        stack.extend((k, depth + 1) for k in _children(node) if not isinstance(k, yaml.ScalarNode))
    if len(seen) > MAX_YAML_NODES:  # unreachable below MAX_YAML_BYTES, kept for a larger bound
        raise YamlError(f"{file}: malformed yaml: more than {MAX_YAML_NODES} nodes")


def _check_shared(top, file: str) -> None:
    """check_graph for a graph with aliases: each distinct node's expanded size and depth once."""
    done: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, expanded depth)
    open_: set[int] = set()
    stack = [(top, None)]
    while stack:
        node, kids = stack.pop()
        key = id(node)
        if kids is None:
            if key in done:
                continue
            if key in open_:
                raise YamlError(f"{file}:{node.start_mark.line + 1}: malformed yaml: an alias refers to a node that contains it")
            kids = _children(node)
            open_.add(key)
            stack.append((node, kids))
            stack.extend((k, None) for k in kids if id(k) not in done)
            continue
        open_.discard(key)
        size = 1 + sum(done[id(k)][0] for k in kids)
        depth = 1 + max((done[id(k)][1] for k in kids), default=0)
        if size > MAX_YAML_NODES or depth > MAX_YAML_DEPTH:
            what = f"more than {MAX_YAML_NODES} nodes" if size > MAX_YAML_NODES else f"deeper than {MAX_YAML_DEPTH} levels"
            raise YamlError(f"{file}:{node.start_mark.line + 1}: malformed yaml: {what} once its aliases are expanded")
        done[key] = (size, depth)


def compose_node(loader, text: str, file: str):
    """The document's top node (None for an empty file), every yaml fault one YamlError naming
    ``file:line`` (native_functions.yaml and derivatives.yaml alike); bounded as Note [Bounded
    yaml] says."""
    try:
        top = loader.get_single_node()
        if top is not None:
            check_graph(top, file)
        return top
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        context = ""
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            context = f" ({exc.context} at line {exc.context_mark.line + 1})"
        raise YamlError(f"{file}{line}: malformed yaml: {exc.problem or exc.context}{context}") from None
    except yaml.reader.ReaderError as exc:  # a character yaml refuses (control characters, ...)
        line = text.count("\n", 0, exc.position) + 1
        raise YamlError(f"{file}:{line}: malformed yaml: unacceptable character #x{exc.character:04x}: "
                        f"{exc.reason}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{file}: malformed yaml: {' '.join(str(exc).split())}") from None


def construct(loader, node, loc: Location, deep: bool = False) -> Any:
    """The Python value of a composed ``node`` (a whole entry, or one value with ``deep``); a tag
    that cannot make its value (``!0``, ``!!int abc``, ``!!int`` alone) is one YamlError line."""
    try:
        return loader.construct_object(node, deep=True) if deep else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        why = " ".join(f"{exc.context or ''} {exc.problem or ''}".split())
        raise YamlError(f"{loc}: malformed yaml: {why}") from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors raise whatever Python raises on a
        # tagged value they cannot convert (``!!int`` alone: IndexError, ``!!timestamp x``:
        # AttributeError, ``!!bool maybe``: KeyError); nothing of ours runs inside
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        raise YamlError(f"{loc}: malformed yaml: a value its tag cannot make ({why})") from None


def parse_operators(text: str, file: str = "native_functions.yaml") -> list[Operator]:
    """Parse native_functions.yaml text; ``file`` is what locations and errors name."""
    # The document is composed once (in C where available); each top-level entry is then constructed
    # from its own node, whose start mark is the entry's "- func:" line. Unlike torchgen's LineLoader,
    # no "__line__" key is injected into the data, and a non-mapping entry still has a line.
    loader = _Loader(text)
    try:
        root = compose_node(loader, text, file)
        if root is None:
            return []
        if not isinstance(root, yaml.SequenceNode):
            raise YamlError(f"{file}:{root.start_mark.line + 1}: expected a list of operator entries")
        ops = []
        first: dict[str, int] = {}  # operator name -> its line: torchgen refuses a name twice too
        for node in root.value:
            loc = Location(file, node.start_mark.line + 1)
            if not isinstance(node, yaml.MappingNode):
                raise YamlError(f"{loc}: expected a mapping with a 'func' key")
            entry = construct(loader, node, loc)
            op = _parse_entry(entry, loc)
            if str(op.name) in first:
                raise YamlError(f"{loc}: duplicate operator '{op.name}' (first at line {first[str(op.name)]})")
            first[str(op.name)] = loc.line
            ops.append(op)
        return ops
    finally:
        loader.dispose()


def _parse_entry(e: dict[Any, Any], loc: Location) -> Operator:
    e = dict(e)
    if "func" not in e:
        raise YamlError(f"{loc}: native_functions.yaml entry has no 'func' key")
    schema = e.pop("func")
    if not isinstance(schema, str):
        raise YamlError(f"{loc}: 'func' must be a string, got {shown(schema)}")
    name, is_out = _parse_schema(schema, loc)
    where = f"{loc}: native_functions.yaml entry '{name}'"

    def pop(key: str, typ: type | tuple[type, ...], default: Any) -> Any:
        value = e.pop(key, default)
        if value is not default and not isinstance(value, typ):
            raise YamlError(f"{where}: '{key}' has the wrong type: {shown(value)}")
        return value

    variants = tuple(pop("variants", str, "function").split(", "))
    for v in variants:
        if v not in ("function", "method"):
            raise YamlError(f"{where}: illegal variant {shown(v)} (expected function, method)")
    structured = pop("structured", bool, False)
    delegate_s = pop("structured_delegate", str, None)
    structured_delegate = _op_name(delegate_s, where) if delegate_s is not None else None
    structured_inherits = pop("structured_inherits", str, None)
    python_module = pop("python_module", str, None)
    manual_cpp_binding = pop("manual_cpp_binding", bool, False)
    manual_kernel_registration = pop("manual_kernel_registration", bool, False)
    # 1.13: "tags: a, b"; 2.x: "tags: a" or "tags: [a, b]".
    tags = pop("tags", (str, list), [])
    tags = tuple(tags.split(", ")) if isinstance(tags, str) else tuple(tags)
    autogen = pop("autogen", str, "")
    autogen = tuple(autogen.split(", ")) if autogen else ()
    ufunc = _ufunc_loops(pop("ufunc_inner_loop", (str, dict), None), where)
    raw_dispatch = pop("dispatch", dict, None)
    other = tuple((k, _freeze(pop(k, t, None))) for k, t in sorted(_OTHER_KEYS.items()) if k in e)

    if e:
        keys = ", ".join(repr(str(k)) for k in sorted(e, key=str))
        plural = "s" if len(e) > 1 else ""
        raise YamlError(f"{loc}: unknown key{plural} {keys} in native_functions.yaml entry '{name}'")
    if raw_dispatch is not None and manual_kernel_registration:
        raise YamlError(f"{where}: has both 'dispatch' and 'manual_kernel_registration'")

    return Operator(
        name=name,
        schema=schema,
        loc=loc,
        dispatch=_dispatch_table(name, is_out, raw_dispatch, structured, structured_delegate, ufunc, where),
        has_dispatch_key=raw_dispatch is not None,
        variants=variants,
        structured=structured,
        structured_delegate=structured_delegate,
        structured_inherits=structured_inherits,
        ufunc_inner_loop=ufunc,
        autogen=autogen,
        tags=tags,
        python_module=python_module,
        manual_cpp_binding=manual_cpp_binding,
        manual_kernel_registration=manual_kernel_registration,
        other=other,
    )


def _parse_schema(schema: str, loc: Location) -> tuple[OperatorName, bool]:
    """The operator name, and whether the schema is an out= function."""
    parts = split_schema(schema.strip())
    if parts is None:
        raise YamlError(f"{loc}: not a function schema: {shown(schema)}")
    name = _op_name(parts[0].split("::")[-1], f"{loc}: native_functions.yaml entry")
    # Note [Out functions]
    # torchgen's FunctionSchema.is_out_fn(): a schema is an out= function iff it has a keyword-only
    # argument (after ``*``) whose alias annotation writes, e.g. ``*, Tensor(a!) out``. Inplace ops
    # mutate a positional ``self`` and are not out functions. Arguments are split on ", " as torchgen
    # does (no argument type contains ", ").
    kwarg_only = False
    is_out = False
    for arg in parts[1].split(", "):
        if arg == "*":
            kwarg_only = True
        elif kwarg_only and _writes(arg):
            is_out = True
    return name, is_out


def _op_name(text: str, where: str) -> OperatorName:
    try:
        return OperatorName.parse(text)
    except AtenmapError as exc:
        raise YamlError(f"{where}: {exc}") from None


def _ufunc_loops(raw: str | dict | None, where: str) -> tuple[UfuncLoop, ...]:
    if raw is None:
        return ()
    items = [("Generic", raw)] if isinstance(raw, str) else list(raw.items())
    loops = []
    for key, value in items:
        loop = _ufunc_loop(value) if isinstance(value, str) else None
        if not isinstance(key, str) or loop is None:
            raise YamlError(f"{where}: bad ufunc_inner_loop entry {shown(key)}: {shown(value)} "
                            "(expected e.g. 'Generic: add (AllAndComplex, BFloat16)')")
        loops.append(UfuncLoop(key, loop[0], tuple(loop[1].split(", "))))
    return tuple(loops)


def _dispatch_table(
    name: OperatorName,
    is_out: bool,
    raw: dict | None,
    structured: bool,
    structured_delegate: OperatorName | None,
    ufunc: tuple[UfuncLoop, ...],
    where: str,
) -> tuple[DispatchEntry, ...]:
    table: dict[str, DispatchEntry] = {}
    if raw is not None:
        for keys, value in raw.items():
            if not isinstance(keys, str) or not isinstance(value, str):
                raise YamlError(f"{where}: bad dispatch entry {shown(keys)}: {shown(value)}")
            # "CPU, CUDA: ns::foo" -> one entry per key; the kernel is named without its namespace.
            kernel = value.split("::")[-1]
            for key in keys.split(","):
                key = key.strip()
                if not _is_key(key):
                    raise YamlError(f"{where}: bad dispatch key {shown(key)}")
                # A key named twice: the later one wins, as in torchgen's dict.
                table[key] = DispatchEntry(key, kernel, structured and key in _STRUCTURED_KEYS)
    elif not structured and structured_delegate is None:
        # Note [Implicit CompositeImplicitAutograd kernel]
        # An entry without ``dispatch:`` that is neither structured nor a structured_delegate gets a
        # CompositeImplicitAutograd kernel named like torchgen's cpp.name(func): the base name as
        # written (``add_``, ``__iand__``), plus ``_out`` for an out= function (See Note [Out
        # functions]). A structured op without ``dispatch:`` (add.out: see Note [ufunc implicit
        # kernels]) and a structured_delegate without it (kernels come from the delegate's out=
        # op) get nothing. manual_kernel_registration does not prevent it, as in torchgen.
        table[CIA] = DispatchEntry(CIA, name.name + ("_out" if is_out else ""), False, explicit=False)
    if ufunc:
        if not structured:
            raise YamlError(f"{where}: ufunc_inner_loop requires 'structured: True'")
        if not is_out:
            raise YamlError(f"{where}: ufunc_inner_loop requires an out= schema")
        for key in _UFUNC_KEYS:  # See Note [ufunc implicit kernels]
            if key in table:
                raise YamlError(f"{where}: ufunc_inner_loop and an explicit {key} dispatch entry")
            table[key] = DispatchEntry(key, f"ufunc_{name.name}_{key}", True, explicit=False)
    return tuple(sorted(table.values(), key=lambda d: d.key))


def _freeze(value: Any) -> Any:
    """Lists and dicts as tuples, so that Operator stays hashable."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    return value


def find_operator(ops: list[Operator], text: str) -> Operator:
    """Resolve ``add.out`` / ``aten::add.out`` / ``linear`` to one operator.

    A bare name resolves to the overload-less operator of that name (``linear``, ``exp``), else to
    its only overload; a bare name with several overloads and no overload-less one raises
    ``AmbiguousOperator`` listing them all. ``NAME.default`` (profiler and trace spelling) means
    the overload-less ``NAME``. Anything else raises ``UnknownOperator`` with close names.
    """
    by_name = {str(op.name): op for op in ops}
    wanted = text.strip()
    try:
        name = OperatorName.parse(wanted)
    except AtenmapError:
        name = None
    if name is not None:
        if str(name) in by_name:
            return by_name[str(name)]
        if name.overload == "default" and name.name in by_name:
            return by_name[name.name]
        if not name.overload:
            overloads = [op for op in ops if op.name.name == name.name]
            if len(overloads) == 1:
                return overloads[0]
            if overloads:
                listed = sorted(str(op.name) for op in overloads)
                raise AmbiguousOperator(
                    f"operator '{wanted}' is ambiguous; give one of its overloads: {', '.join(listed)}", listed
                )
    close = difflib.get_close_matches(wanted.removeprefix("aten::"), list(by_name), n=5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownOperator(f"unknown operator '{wanted}'{hint}")
