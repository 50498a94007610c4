"""The package's layers (docs/architecture.md): every import, at module level or inside a function,
points to the same layer or one below. A lower layer that imports a higher one fails here, so does an
import cycle (function-level imports included) and an SQL string outside store/."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"

# Lowest first. A module belongs to the longest prefix listed.
LAYERS: list[tuple[str, ...]] = [
    ("atenmap.model", "atenmap.kinds", "atenmap.model_answers", "atenmap.errors", "atenmap.devices", "atenmap.locks", "atenmap.names", "atenmap.config", "atenmap.files",
     "atenmap.limits", "atenmap.tempdirs"),
    ("atenmap.store",),
    ("atenmap.extract",),
    ("atenmap.source", "atenmap.inductor"),
    ("atenmap.build", "atenmap.freshness", "atenmap.fullcheck", "atenmap.indexstate", "atenmap.defscan",
     "atenmap.sameindex"),
    ("atenmap.resolve",),
    ("atenmap.api", "atenmap.preview", "atenmap.exactfirst"),
    ("atenmap.trace",),
    ("atenmap.views",),  # renders the records of every layer below; trace/ never imports it
    ("atenmap.cli",),
]
ENTRY = {"atenmap", "atenmap.__main__"}  # the package's own door: may import anything, lazily


def _rank(module: str) -> int | None:
    best = None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if module == p or module.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    return None if best is None else best[0]


def _modules():
    for f in sorted((SRC / "atenmap").rglob("*.py")):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), is_pkg, f


MODULES = {m for m, _, _ in _modules()}


def _imports(module: str, is_pkg: bool, path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            yield node.lineno, target, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []


def test_every_module_has_a_layer():
    missing = [m for m, _, _ in _modules() if m not in ENTRY and _rank(m) is None]
    assert not missing, f"modules in no layer of LAYERS: {missing}"


@pytest.mark.parametrize("module,is_pkg,path", [m for m in _modules() if m[0] not in ENTRY], ids=lambda v: str(v))
def test_imports_point_down(module, is_pkg, path):
    mine = _rank(module)
    up = []
    for line, target, names in _imports(module, is_pkg, path):
        if not target.startswith("atenmap"):
            continue
        # `from atenmap.x import y` where y is a module of its own: y's layer counts
        targets = [n for n in names if n in MODULES] or [target]
        for t in targets:
            rk = _rank(t)
            if rk is not None and rk > mine:
                up.append(f"{path.relative_to(SRC)}:{line} imports {t} (layer {rk} > {mine})")
    assert not up, "\n".join(up)


MAX_FUNCTION_LINES = 85  # "no function over ~80 lines in resolve/ and extract/" (docs/architecture.md)


@pytest.mark.parametrize("package", ["resolve", "extract"])
def test_no_long_functions_in_the_resolver_and_extractor(package):
    long = []
    for f in sorted((SRC / "atenmap" / package).rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{f.relative_to(SRC)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "split these:\n" + "\n".join(long)


# views/ turns records into text: it opens no Index, speaks no SQL and runs no resolver (the command
# that called it did; docs/architecture.md, "Layers").
NOT_FOR_VIEWS = ("atenmap.api", "atenmap.preview", "atenmap.store", "atenmap.build", "atenmap.indexstate",
                 "atenmap.resolve", "atenmap.extract")


def test_views_open_no_index():
    bad = [f"{m} -> {t}  ({where})" for m, edges in _graph().items() if m.startswith("atenmap.views")
           for t, where in edges.items() if any(t == p or t.startswith(p + ".") for p in NOT_FOR_VIEWS)]
    assert not bad, "\n".join(bad)


def _owner(name: str) -> str | None:
    """The module a dotted import names: itself, or the module holding the attribute."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, dict[str, str]]:
    """module -> {module it imports: where}: every import of atenmap's own, at module level or in a
    function, at module granularity (``from atenmap.x import y``: y if it is a module, else x)."""
    graph: dict[str, dict[str, str]] = {}
    for module, is_pkg, path in _modules():
        if module in ENTRY:
            continue
        edges = graph.setdefault(module, {})
        for line, target, names in _imports(module, is_pkg, path):
            if not target.startswith("atenmap"):
                continue
            for t in [n for n in names if n in MODULES] or [target]:
                t = _owner(t)
                if t is not None and t != module and t not in ENTRY:
                    edges.setdefault(t, f"{path.relative_to(SRC)}:{line}")
    return graph


def _cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """One import cycle (modules in import order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph.get(m, {})):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    """No module reaches itself through imports (function-level ones included): each arrow of the
    house points down or sideways, never around."""
    graph = _graph()
    cycle = _cycle(graph)
    assert cycle is None, "import cycle:\n" + "\n".join(
        f"  {a} -> {b}  ({graph[a][b]})" for a, b in zip(cycle, cycle[1:]))


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2"}, "c": {"a": "c.py:3"}, "d": {"a": "d.py:1"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": ""}, "b": {}}) is None


# What an SQL statement looks like in a string literal: a statement word, then what it acts on.
_SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE)\b.*\b(FROM|INTO|TABLE|SET|INDEX)\b", re.S)


def _sql_strings(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        else:
            continue
        if _SQL.search(text):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {text[:70]!r}")
    return found


def test_no_sql_outside_the_store():
    """store/ is the one place that speaks SQL (docs/architecture.md, "Layers")."""
    store = SRC / "atenmap" / "store"
    found = [s for f in sorted((SRC / "atenmap").rglob("*.py")) if store not in f.parents for s in _sql_strings(f)]
    assert not found, "SQL outside store/ (make it a named Store method):\n" + "\n".join(found)


def test_the_sql_finder_finds_sql():
    inside = [s for f in sorted((SRC / "atenmap" / "store").rglob("*.py")) for s in _sql_strings(f)]
    assert any("SELECT key, value FROM meta" in s for s in inside)


def _string_compares(attr: str, values: set[str], skip=()):
    """``x.<attr> == "value"`` / ``x.<attr> in ("a", "b")`` with a value of ``values``, in src/."""
    found = []
    for module, _is_pkg, path in _modules():
        if any(module.startswith(s) for s in skip):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == attr:
                for comp in node.comparators:
                    elts = [comp] if isinstance(comp, ast.Constant) else getattr(comp, "elts", [])
                    found += [f"{module}:{node.lineno} {c.value!r}" for c in elts
                              if isinstance(c, ast.Constant) and c.value in values]
    return found


def test_fact_kinds_and_roles_are_named_by_their_members():
    """kinds.FactKind / model.Role members, not their strings (issue 32). The kernel-name parser's
    component kinds and Inductor's registration kinds are other kinds that share some words."""
    from atenmap.kinds import FactKind
    from atenmap.model import Role

    kinds = _string_compares("kind", {k.value for k in FactKind},
                             skip=("atenmap.resolve.kernelname", "atenmap.resolve.compile", "atenmap.extract.inductor",
                                   "atenmap.inductor"))
    assert not kinds, kinds
    roles = _string_compares("role", {r.value for r in Role}, skip=("atenmap.extract.inductor",))  # Registrar.role
    assert not roles, roles


def _kind_literals(module: str, path: pathlib.Path, values: set[str]) -> list[str]:
    """Where ``path`` spells a set of kinds as strings: a set/tuple/list of two or more strings, all of
    ``values``; a dict keyed by such strings; a step made with its role as a string (``_Node("call", ...)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        words = []
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 2:
            words = node.elts
        elif isinstance(node, ast.Dict):
            words = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("_Node", "Step") and node.args:
            words = node.args[:1]
        if words and all(isinstance(w, ast.Constant) and w.value in values for w in words):
            found.append(f"{module}:{node.lineno} {[w.value for w in words]}")
    return found


# Modules whose string sets name other kinds that share words with roles and fact kinds: Inductor's
# kernel kinds (``extern``, ``fallback``), the profiler's device-event kinds and the kernel-name
# parser's component kinds (``kernel``, ``library``).
_OTHER_KINDS = ("atenmap.inductor", "atenmap.trace.profrec", "atenmap.trace.report")

# The Store's methods that take fact kinds (store/__init__.py): a kind passed to one is a member.
_KIND_TAKERS = {"by_name", "by_name_qual", "has_name", "in_scope", "in_file", "facts_of_kind", "in_file_like",
                "names_like", "search_facts"}


def _kind_arguments(module: str, path: pathlib.Path, values: set[str]) -> list[str]:
    """Where ``path`` passes a fact kind's string to a Store method (``facts_of_kind("call")``,
    ``by_name(n, ("launch",))``): one-element tuples escape _kind_literals."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KIND_TAKERS:
            for a in [*node.args, *(k.value for k in node.keywords)]:  # a kind alone is facts_of_kind's; the others take a tuple
                words = a.elts if isinstance(a, (ast.Tuple, ast.List, ast.Set)) else [a] if node.func.attr == "facts_of_kind" else []
                for w in words:
                    if isinstance(w, ast.Constant) and w.value in values:
                        found.append(f"{module}:{node.lineno} {w.value!r}")
    return found


def test_kinds_and_roles_are_not_listed_as_strings():
    """A set of roles or fact kinds names its members (``{Role.LAUNCH, Role.LIBRARY}``), never their
    strings: one spelling of each kind, in kinds.py / model.py (issue 32)."""
    from atenmap.kinds import FactKind
    from atenmap.model import Role

    found = []
    for module, _is_pkg, path in _modules():
        if module in ("atenmap.kinds", "atenmap.model"):
            continue
        found += _kind_arguments(module, path, {k.value for k in FactKind})
        if module.startswith(_OTHER_KINDS):
            continue
        found += _kind_literals(module, path, {r.value for r in Role})
        found += _kind_literals(module, path, {k.value for k in FactKind})
    assert not found, "name the members:\n" + "\n".join(found)


def test_the_kind_literal_finder_finds_them(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('A = {"launch", "jit"}\nB = ("function", "global")\nC = {"helper": 1}\nD = _Node("call", "x")\n'
                 'E = {"launch", "other"}\nF = {**x}\n')
    found = _kind_literals("m", f, {"launch", "jit", "helper", "call", "function", "global"})
    assert [s.split()[0] for s in found] == ["m:1", "m:2", "m:3", "m:4"]
    g = tmp_path / "g.py"
    g.write_text('a = s.facts_of_kind("jit_name")\nb = s.by_name(n, ("launch",))\nc = s.by_name(n, (FactKind.LAUNCH,))\n'
                 'd = s.by_name("launch", ())\ne = s.in_file(p, kinds=("jit_name",))\n')
    found = _kind_arguments("g", g, {"launch", "jit_name"})
    assert [s.split()[0] for s in found] == ["g:1", "g:2", "g:5"]  # d: a name, not a kind
