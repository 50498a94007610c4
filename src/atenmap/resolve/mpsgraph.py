"""What an MPS chain runs: the MPSGraph operations its functions build and the graph run, read as
text from the ``.mm`` function bodies at query time (issue 36).

Note [MPSGraph operations by text]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen's MPS kernels (native/mps/operations/*.mm, Objective-C++) mostly build an MPSGraph and run it:
``[mpsGraph additionWithPrimaryTensor:a secondaryTensor:b name:nil]`` adds one operation to the
graph, ``runMPSGraph(stream, graph, feeds, results)`` (native/mps/OperationUtils.mm) runs it. The
index reads ``.mm`` files with tree-sitter-cpp, which does not know Objective-C: message sends are
ERROR regions whose calls are not facts (docs/limits.md), so the chain stops at the native function
and its C++ helpers, and the runs block found nothing. Here the body of each MPS function on the
chain (a native or helper step in a ``.mm`` file, not under another operator's call) is read as
text, with the index's function spans: each ``[mpsGraph SELECTOR:`` is an MPSGraph operation, each
``runMPSGraph(`` the graph run. The graph is often built in a lambda handed to a shared helper
(add_sub_lerp_template -> binaryOpTensor, where runMPSGraph is), so a function called by name in
such a body and defined in an MPS file is read too, ``MAX_HOPS`` deep. The sends inside a macro
(``[mpsGraph func_stub##WithPrimaryTensor:``) name no selector and are left out.

Metal kernels the same way: ``lib.getPipelineStateForFunc(EXPR)`` is the kernel's lookup (a launch
run named by the expression, ``"naive_matmul_" + scalarToMetalTypeString(output)``), the
``mtl_dispatch1DJob(`` / ``dispatchThreads:`` / ``dispatchThreadgroups:`` line its dispatch. When
the expression starts with a string literal, its name up to the dtype suffix (``naive_matmul``) is
looked for as ``kernel void NAME`` in the tree's ``native/mps/kernels/*.metal`` (not indexed: read
here), and that line is the kernel's definition. MPS library kernels (``MPSMatrixMultiplication``)
are not followed. The bundled index has no files: it quotes the lines read here (Note [MPS lines
from the bundle]).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Union

from atenmap.model import Chain, KeyChain, Location, Role, Run, Step

MPS_KEY = "MPS"
GRAPH_RUN = "runMPSGraph"
MAX_HOPS = 2  # functions called by name from a chain step's body, read for the graph they build or run
_SEND = re.compile(r"\[\s*\w*[gG]raph\s+([A-Za-z_]\w*)\s*:")  # [mpsGraph op:...], [graph op:...] (do_mm)
_INPUT = "placeholder"  # placeholderWithShape: a graph input, not an operation
_LOOKUP = re.compile(r"\bgetPipelineStateForFunc\s*\((.*)")
_DISPATCH = re.compile(r"\b(mtl_dispatch1DJob)\s*\(|\b(dispatchThreads|dispatchThreadgroups)\s*:")
_LITERAL = re.compile(r'^\s*"([A-Za-z_]\w*?)_?"')
_METAL_KERNELS = "aten/src/ATen/native/mps/kernels"
METAL_LOOKUP = "Metal kernel "
METAL_DISPATCH = "Metal dispatch"
_RUN = re.compile(r"\brunMPSGraph\s*\(")
_CALLED = re.compile(r"(?<![\w.>\]])([A-Za-z_]\w*)\s*\(")  # f(...), ns::f(...); not a.f(...), p->f(...)
_MPS_FILE = re.compile(r"(\.mm$|/mps/)")
_READ_ROLES = frozenset({Role.NATIVE, Role.HELPER, Role.KERNEL})

Spans = Callable[[str], list[tuple[int, int]]]
Definitions = Callable[[str], list[tuple[str, int]]]  # function name -> (file, line) of its definitions


# Note [MPS lines from the bundle]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# graph_runs reads lines through a provider: the tree's files (TreeLines), or what the bundled index
# quotes of them (QuotedLines; the bundle has no files, Note [What the bundle quotes] in
# source/bundle.py). The builder (quoted_rows) reads every function body of the MPS files in the
# index as _Bodies reads it. A body is live when one of its lines gives a run (a send, runMPSGraph,
# a getPipelineStateForFunc lookup, a dispatch) or calls by name a live body of an MPS file, at any
# depth. Of each live body the bundle quotes those lines, with the ``kernel void NAME`` line each
# lookup finds in the .metal files. A line it does not quote reads as blank: it gives nothing, and
# from the tree it gave nothing either, or only called bodies that are not live -- reading those
# gives nothing and marks as read only bodies that are not live, so leaving them out changes no
# answer (2.6.0: 1,778 lines of 442 live bodies; quoting every line that calls a function of an MPS
# file, getMPSDataType, getCurrentMPSStream & co, more than doubles that). A body's end is found by
# matching braces over all its lines, so the bundle keeps it (quoted_bodies: the file, the index's
# span, the end) for the live bodies; a body without one is not read, which is the same as reading
# a body that is not live. Then the bundled MPS runs equal the full index's
# (tests/test_bundle_realtree.py).
class TreeLines:
    """Lines of the tree's files at ``root``, each file read once."""

    def __init__(self, root: str):
        self.root = Path(root)
        self._lines: dict[str, list[str]] = {}

    def line(self, file: str, n: int) -> str:
        lines = self._text(file)
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def body_end(self, file: str, first: int, last: int) -> int | None:
        return _body_end(self._text(file), first, last)

    def metal_lines(self):
        """(file, line, text) of the .metal files, in path order."""
        folder = self.root / _METAL_KERNELS
        for path in sorted(folder.glob("*.metal")) if folder.is_dir() else ():
            rel = f"{_METAL_KERNELS}/{path.name}"
            for n, text in enumerate(self._text(rel), 1):
                yield rel, n, text

    def _text(self, file: str) -> list[str]:
        got = self._lines.get(file)
        if got is None:
            try:
                got = (self.root / file).read_text(errors="replace").splitlines()
            except OSError:
                got = []
            self._lines[file] = got
        return got


class QuotedLines:
    """The lines and body ends the bundled index quotes (Note [MPS lines from the bundle])."""

    def __init__(self, store):
        self.store = store
        self._lines: dict[str, dict[int, str]] = {}
        self._ends: dict[str, dict[tuple[int, int], int]] = {}

    def line(self, file: str, n: int) -> str:
        if file not in self._lines:
            self._lines[file] = self.store.quoted_lines(file)
        return self._lines[file].get(n, "")

    def body_end(self, file: str, first: int, last: int) -> int | None:
        if file not in self._ends:
            self._ends[file] = self.store.quoted_body_ends(file)
        return self._ends[file].get((first, last))

    def metal_lines(self):
        for file, n, text in self.store.quoted_lines_under(_METAL_KERNELS + "/"):
            if file.endswith(".metal") and "/" not in file[len(_METAL_KERNELS) + 1:]:
                yield file, n, text


Lines = Union[TreeLines, QuotedLines]


def lines_of(root: str | None, store=None) -> Lines | None:
    """The lines graph_runs reads: the bundled index's quotes when ``store`` is given (None when it
    has none: a bundle built before Note [MPS lines from the bundle]), else the tree at ``root``."""
    if store is not None:
        return QuotedLines(store) if store.quotes_bodies() else None
    return TreeLines(root) if root is not None and Path(root).is_dir() else None


def graph_runs(chain: Chain, found: tuple[Run, ...], lines: Lines | None, spans: Spans,
               definitions: Definitions) -> tuple[Run, ...]:
    """``found`` with, first among each MPS key's runs, the MPSGraph operations and graph runs its
    functions hold (Note [MPSGraph operations by text]); as it was without lines to read."""
    if lines is None:
        return found
    out: list[Run] = []
    for kc in chain.keys:
        own = [r for r in found if r.key == kc.key]
        if kc.key == MPS_KEY:
            reader = _Bodies(lines, spans, definitions)
            graph = reader.runs(kc)
            seen = {(r.name, r.loc) for r in graph}
            own = graph + [r for r in own if (r.name, r.loc) not in seen]
        out += own
    out += [r for r in found if r.key not in {kc.key for kc in chain.keys}]
    return tuple(out)


class _Bodies:
    """Function bodies, read once each, through ``lines``."""

    def __init__(self, lines: Lines, spans: Spans, definitions: Definitions):
        self.lines = lines
        self.spans = spans
        self.definitions = definitions
        self._done: set[tuple[str, int]] = set()
        self._metal: dict[str, tuple[str, str, int] | None] = {}

    def runs(self, kc: KeyChain) -> list[Run]:
        out: list[Run] = []
        steps = sorted(_mps_steps(kc.steps), key=lambda sv: len(sv[1]) > 0)  # its own functions read first
        for step, via in steps:
            if step.file and step.line and _MPS_FILE.search(step.file):
                self._read(step.file, step.line, MAX_HOPS, out, via)
        # the operator's own graph first (its operations, then its run), then its operators'
        return sorted(out, key=lambda r: (len(r.via) > 0, r.via, r.name == GRAPH_RUN))

    def _read(self, file: str, line: int, hops: int, out: list[Run], via: tuple[str, ...] = ()) -> None:
        span = self._span(file, line)
        if span is None or (file, span[0]) in self._done:
            return
        self._done.add((file, span[0]))
        called: list[str] = []
        for n in range(span[0], span[1] + 1):
            text = _code(self.lines.line(file, n))
            for role, name, expr in _line_runs(text):
                out.append(Run(MPS_KEY, role, name, Location(file, n), via=via))
                defined = self.metal_definition(expr) if expr else None
                if defined is not None:
                    out.append(Run(MPS_KEY, Role.KERNEL, f"kernel void {defined[0]}",
                                   Location(defined[1], defined[2]), via=via))
            called += _called(text)
        if hops <= 0:
            return
        for name in dict.fromkeys(called):
            for def_file, def_line in self.definitions(name):
                if _MPS_FILE.search(def_file) and (def_file, def_line) != (file, span[0]):
                    self._read(def_file, def_line, hops - 1, out, via)

    def metal_definition(self, expr: str) -> tuple[str, str, int] | None:
        """(kernel name, .metal file, line) of ``kernel void NAME`` for an expression that starts with a
        literal ``"NAME_"``, or None (Note [MPSGraph operations by text])."""
        m = _LITERAL.match(expr)
        if m is None:
            return None
        name = m.group(1)
        if name not in self._metal:
            pattern = re.compile(rf"\bkernel\s+void\s+{re.escape(name)}\s*[(<]")
            self._metal[name] = next(((name, file, n) for file, n, text in self.lines.metal_lines()
                                      if pattern.search(text)), None)
        return self._metal[name]

    def _span(self, file: str, line: int) -> tuple[int, int] | None:
        """The function that starts at (or holds) ``line``, its end found by matching braces: the
        index's end of a function whose body has message sends may stop short (ERROR regions)."""
        spans = [(a, b) for a, b in self.spans(file) if a == line] or [(a, b) for a, b in self.spans(file) if a <= line <= b]
        if not spans:
            return None
        first, last = max(spans)
        end = self.lines.body_end(file, first, last)
        return (first, end) if end else None


def _line_runs(text: str) -> list[tuple[Role, str, str]]:
    """(role, run name, looked-up expression or "") of the runs one line's code holds."""
    out: list[tuple[Role, str, str]] = []
    for m in _SEND.finditer(text):
        if not m.group(1).startswith(_INPUT):
            out.append((Role.LIBRARY, f"MPSGraph {m.group(1)}", ""))
    if _RUN.search(text):
        out.append((Role.LIBRARY, GRAPH_RUN, ""))
    lookup = _LOOKUP.search(text)
    if lookup and "::getPipelineStateForFunc" not in text:  # a call, not MetalShaderLibrary's definition
        expr = _argument(lookup.group(1))
        if expr and expr != "name":  # OperationUtils.mm's own wrapper passes its parameter on
            out.append((Role.LAUNCH, METAL_LOOKUP + expr, expr))
    if _DISPATCH.search(text):
        out.append((Role.LAUNCH, METAL_DISPATCH, ""))
    return out


def _called(text: str) -> list[str]:
    """The names one line's code calls (``f(...)``), but runMPSGraph."""
    return [m.group(1) for m in _CALLED.finditer(text) if m.group(1) != GRAPH_RUN]


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


def _body_end(lines: list[str], first: int, last: int) -> int | None:
    """The line of the ``}`` that closes the body opened between lines ``first`` and ``last`` (the
    index's span; strings and ``//`` comments skipped), or None: a function a macro makes
    (``CREATE_MPS_..._FUNC(neg_out_mps, negative)``) has no body here to read."""
    depth, opened = 0, False
    for n in range(first, len(lines) + 1):
        if not opened and n > last:
            return None
        text = _STRING.sub('""', _code(lines[n - 1]))
        for ch in text:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}" and opened:
                depth -= 1
                if depth == 0:
                    return n
        if not opened and text.rstrip().endswith(";"):
            return None  # a declaration
    return None


def _argument(rest: str) -> str:
    """The first argument of a call whose text after ``(`` is ``rest`` (to its closing parenthesis or
    the end of the line), spaces squeezed."""
    depth, out = 0, []
    for ch in rest:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        out.append(ch)
    return " ".join("".join(out).split())


def _code(line: str) -> str:
    """A line without its ``//`` comment (a send in a comment runs nothing)."""
    return line.split("//", 1)[0]


def _mps_steps(steps: tuple[Step, ...]):
    """(step, the operators called on the way to it) for the native and helper steps of a key's tree;
    the operator's own steps come first in the runs, those of operators it calls (a composite's, or
    copy_ for an out= result) after, labelled ``via`` them like the other runs."""
    stack = [(s, ()) for s in reversed(steps)]
    while stack:
        s, via = stack.pop()
        if s.role in _READ_ROLES:
            yield s, via
        below = via + (f"aten::{s.symbol.removeprefix('aten::')}",) if s.role == Role.OP_CALL else via
        stack += [(c, below) for c in reversed(s.children)]


def definitions_of(store) -> Definitions:
    """(file, line) of the functions an index defines under a name: where _Bodies follows a call."""
    from atenmap.kinds import FactKind

    return lambda name: [(r.file, r.line) for r in store.by_name(name, (FactKind.FUNCTION,))]


def quoted_rows(store, root: str) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, int, int]]]:
    """What the bundle keeps for Note [MPS lines from the bundle], read from the tree at ``root`` by
    the bundle builder: (path, line, text) of the lines of the MPS files' function bodies that give a
    run or call a live function, and of the ``kernel void`` lines their lookups find; and (path,
    first, last, end) of each live body (the index's span, the line closing it). A body is live when
    it, or a body it calls by name (at any depth), gives a run; reading the others gives nothing and
    marks only bodies that give nothing as read, so the bundle leaves them out."""
    tree = TreeLines(root)
    definitions = definitions_of(store)
    bodies = _Bodies(tree, store.function_spans, definitions)
    spans: dict[tuple[str, int], tuple[int, int]] = {}  # (path, first) -> (the index's last, the body's end)
    runs: dict[tuple[str, int], list[int]] = {}  # body -> its lines that give a run
    calls: dict[tuple[str, int], list[tuple[int, list[str]]]] = {}  # body -> (line, names it calls)
    for path in sorted(p for p in store.files() if _MPS_FILE.search(p)):
        for first in sorted({a for a, _b in store.function_spans(path)}):
            span = bodies._span(path, first)
            if span is None or span[0] != first:
                continue
            body = (path, first)
            spans[body] = (max(b for a, b in store.function_spans(path) if a == first), span[1])
            for n in range(first, span[1] + 1):
                text = _code(tree.line(path, n))
                if _line_runs(text):
                    runs.setdefault(body, []).append(n)
                if names := _called(text):
                    calls.setdefault(body, []).append((n, names))
    called: dict[str, list[tuple[tuple[str, int], tuple[str, int]]]] = {}  # name -> (definition, its body) in MPS files

    def leads(name: str, body: tuple[str, int]) -> bool:
        """Whether _Bodies, reading ``body``, reads a live body for a call of ``name``."""
        if name not in called:
            called[name] = [((f, n), (f, span[0])) for f, n in definitions(name)
                            if _MPS_FILE.search(f) and (span := bodies._span(f, n)) is not None]
        return any(to in live for at, to in called[name] if at != body)  # not its own definition (_read)

    live = set(runs)
    grew = True
    while grew:  # live: gives a run, or calls a live body
        grew = False
        for body, lines in calls.items():
            if body not in live and any(leads(name, body) for _n, names in lines for name in names):
                live.add(body)
                grew = True
    rows: set[tuple[str, int]] = set()
    for body in live:
        path = body[0]
        rows.update((path, n) for n in runs.get(body, ()))
        rows.update((path, n) for n, names in calls.get(body, ()) if any(leads(name, body) for name in names))
        for n in runs.get(body, ()):
            for _role, _name, expr in _line_runs(_code(tree.line(path, n))):
                defined = bodies.metal_definition(expr) if expr else None
                if defined is not None:
                    rows.add((defined[1], defined[2]))
    ends = [(path, first, *spans[(path, first)]) for path, first in sorted(live)]
    return [(path, n, tree.line(path, n)) for path, n in sorted(rows)], ends


__all__ = ["GRAPH_RUN", "METAL_DISPATCH", "METAL_LOOKUP", "MPS_KEY", "QuotedLines", "TreeLines", "definitions_of",
           "graph_runs", "lines_of", "quoted_rows"]
