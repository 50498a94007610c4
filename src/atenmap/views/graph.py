"""Chains as a graph: Graphviz dot, Mermaid, and svg/png through Graphviz's ``dot``.

Note [Graph nodes]
~~~~~~~~~~~~~~~~~~
Nodes are chain steps merged by (role, symbol, file, line), so several chains drawn together show
where they share code (``add.out`` and ``mul.out`` both reaching ``gpu_kernel``) and a step shown
twice in one tree ("expanded above") is drawn once. ``helper`` and ``call`` count as one role
here: the same function is a helper below a native function and a call below a kernel.
Edges are the trees' parent -> child links, classed as dispatch (yaml -> native), registration
(stub -> REGISTER_DISPATCH -> kernel) or call; a chain's Python bindings come first, with a
dispatch edge to each key's yaml step. The fill colour says the role, a dashed border says
torchgen wrote the code; launches and library calls are leaves.
"""
from __future__ import annotations

import posixpath
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from atenmap.config import printable
from atenmap.errors import AtenmapError
from atenmap.model import Chain, Role, Step
from atenmap.views import UsageError

FORMATS = ("dot", "mermaid", "svg", "png")
RANKDIRS = ("TB", "LR")

# Fill colour per role; the legend lists the roles a graph uses, in this order.
ROLE_COLOURS = {
    Role.YAML: "#e6e6e6", Role.DELEGATE: "#e6e6e6", Role.META: "#fff2cc", Role.NATIVE: "#c9daf8", Role.HELPER: "#dfe9f7",
    Role.STUB_CALL: "#d9ead3", Role.STUB_DECLARE: "#f0f6ed", Role.STUB_DEFINE: "#f0f6ed", Role.REGISTER: "#b6d7a8",
    Role.KERNEL: "#f4cccc", Role.CALL: "#fce5cd", Role.OP_CALL: "#ead1dc", Role.LAUNCH: "#ea9999", Role.LIBRARY: "#b4a7d6",
    Role.JIT: "#e06666",
    Role.GENERATED: "#f3f3f3",
}
_SHAPES = {Role.LAUNCH: "cds", Role.LIBRARY: "component", Role.JIT: "cds"}
MAX_SYMBOL = 44

NodeKey = tuple[str, str, "str | None", "int | None"]


@dataclass
class Node:
    id: str
    step: Step
    ops: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


@dataclass
class Edge:
    src: str
    dst: str
    kind: str  # dispatch, registration, call
    labels: list[str] = field(default_factory=list)


@dataclass
class Graph:
    title: str
    generated_roots: set[str] = field(default_factory=set)  # torchgen output folders, shown as <torchgen>
    nodes: dict[NodeKey, Node] = field(default_factory=dict)
    edges: dict[tuple[str, str], Edge] = field(default_factory=dict)

    @property
    def shared(self) -> list[Node]:
        """Nodes reached from more than one operator."""
        return [n for n in self.nodes.values() if len(n.ops) > 1]


def build_graph(chains: list[Chain]) -> Graph:
    """One graph of every key chain of every chain, nodes merged by (role, symbol, file, line)."""
    keys = sorted({kc.key for c in chains for kc in c.keys})
    title = f"{', '.join(str(c.op.name) for c in chains)} [{', '.join(keys)}]"
    if chains:
        title += f" — PyTorch {chains[0].source.version}"
    g = Graph(title)
    for chain in chains:
        op = str(chain.op.name)
        if chain.generated_root:
            g.generated_roots.add(chain.generated_root.rstrip("/") + "/")
        for kc in chain.keys:
            for step in kc.steps:
                _add(g, step, None, op, kc.key if len(keys) > 1 else "")
        # Python entry points (torch.mul -> THPVariable_mul -> dispatch_mul) lead to the operator.
        roots = [g.nodes[node_key(s)] for kc in chain.keys for s in kc.steps]
        for b in chain.bindings:
            _add(g, b, None, op, "")
            for leaf in (s for s in b.walk() if not s.children):
                for root in roots:
                    g.edges.setdefault((g.nodes[node_key(leaf)].id, root.id),
                                       Edge(g.nodes[node_key(leaf)].id, root.id, "dispatch"))
    return g


_MERGE_ROLE = {Role.HELPER: Role.CALL}


def node_key(step: Step) -> NodeKey:
    return (_MERGE_ROLE.get(step.role, step.role), step.symbol, step.file, step.line)


def _add(g: Graph, step: Step, parent: Node | None, op: str, key: str) -> None:
    k = node_key(step)
    node = g.nodes.get(k)
    if node is None:
        node = g.nodes[k] = Node(f"n{len(g.nodes)}", step)
    if op not in node.ops:
        node.ops.append(op)
    if step.detail and step.detail not in node.details:
        node.details.append(step.detail)
    if parent is not None:
        edge = g.edges.setdefault((parent.id, node.id), Edge(parent.id, node.id, edge_kind(parent.step, step)))
        if key and edge.kind == "dispatch" and key not in edge.labels:
            edge.labels.append(key)
    if step.role.runs_on_device:  # a leaf
        return
    for child in step.children:
        _add(g, child, node, op, key)


def edge_kind(parent: Step, child: Step) -> str:
    if parent.role in (Role.YAML, Role.DELEGATE):
        return "dispatch"
    if parent.role == Role.REGISTER or child.role in (Role.STUB_DECLARE, Role.STUB_DEFINE, Role.REGISTER):
        return "registration"
    return "call"


# ---- labels ---------------------------------------------------------------------------------
def short_symbol(step: Step) -> str:
    s = step.symbol
    s = re.sub(r"^(?:at::native::|at::)", "", s).replace("(anonymous namespace)::", "")
    s = re.sub(r"<<<.*>>>$", "<<<…>>>", s)
    s = re.sub(r"TORCH_FN\((\w+)\)", r"\1", s)
    s = re.sub(r"^DECLARE_DISPATCH\([^,]*,\s*(\w+)\)$", r"DECLARE_DISPATCH(\1)", s)
    return s if len(s) <= MAX_SYMBOL else s[:MAX_SYMBOL - 1] + "…"


def where(step: Step) -> str:
    if step.file:
        return f"{posixpath.basename(step.file)}:{step.line}"
    return "(generated)" if step.generated else "(no source line)"


def _tooltip(g: Graph, node: Node) -> str:
    """Full path, role, symbol and details; torchgen's output folder written ``<torchgen>/``."""
    s = node.step
    parts = [f"{s.file}:{s.line}" if s.file else "generated by torchgen", f"{s.role} {s.symbol}", *node.details]
    if len(node.ops) > 1:
        parts.append("shared by " + ", ".join(node.ops))
    text = "\n".join(parts)
    for root in g.generated_roots:
        text = text.replace(root, "<torchgen>/")
    return text


def roles_used(g: Graph) -> list[str]:
    used = {n.step.role for n in g.nodes.values()} | ({"generated"} if any_generated(g) else set())
    return [r for r in ROLE_COLOURS if r in used]


def any_generated(g: Graph) -> bool:
    return any(n.step.generated for n in g.nodes.values())


# ---- dot ------------------------------------------------------------------------------------
def _lines(text: str) -> list[str]:
    """``text``'s lines with control characters escaped (a file name or yaml string cannot put
    ESC or BEL on a terminal that shows the graph's source)."""
    return [printable(line) for line in text.split("\n")]


def _q(text: str) -> str:
    return '"' + "\\n".join(t.replace("\\", "\\\\").replace('"', '\\"') for t in _lines(text)) + '"'


_EDGE_DOT = {"dispatch": 'style=bold, color="#333333"', "registration": 'style=dashed, color="#6a8f5a"',
             "call": 'color="#666666"'}


def to_dot(g: Graph, rankdir: str = "TB", legend: bool = True) -> str:
    out = ["digraph atenmap {",
           f'  graph [rankdir={rankdir}, fontname="Helvetica", fontsize=12, labelloc=t, label={_q(g.title)}, '
           'nodesep=0.25, ranksep=0.3, tooltip=" "];',
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.1,0.04", '
           'height=0.3, color="#444444"];',
           '  edge [arrowsize=0.6, fontname="Helvetica", fontsize=9];']
    for n in g.nodes.values():
        s = n.step
        attrs = [f"label={_q(where(s) + chr(10) + short_symbol(s))}", f'fillcolor="{ROLE_COLOURS.get(s.role, "#ffffff")}"',
                 f"tooltip={_q(_tooltip(g, n))}"]
        if s.role in _SHAPES:
            attrs += [f"shape={_SHAPES[s.role]}", 'margin="0.2,0.06"']
        if s.generated:
            attrs.append('style="rounded,filled,dashed"')
        if len(n.ops) > 1:
            attrs.append("penwidth=2.5")
        out.append(f"  {n.id} [{', '.join(attrs)}];")
    for e in g.edges.values():
        label = f", label={_q(', '.join(e.labels))}" if e.labels else ""
        out.append(f"  {e.src} -> {e.dst} [{_EDGE_DOT[e.kind]}{label}];")
    if legend:
        out.append(_legend(g))
    out.append("}")
    return "\n".join(out) + "\n"


def _legend(g: Graph) -> str:
    """One row of role colours under the graph."""
    cells = "".join(f'<td bgcolor="{ROLE_COLOURS[r]}">{r}</td>' for r in roles_used(g) if r != Role.GENERATED)
    if any_generated(g):
        cells += '<td style="dashed">generated</td>'
    if g.shared:
        cells += '<td border="3">shared</td>'
    return ('  { rank=sink; legend [shape=plaintext, style="", fontsize=9, label=<<table border="0" cellborder="1" '
            f'cellspacing="3" cellpadding="3"><tr>{cells}</tr></table>>]; }}')


# ---- mermaid --------------------------------------------------------------------------------
_EDGE_MERMAID = {"dispatch": "==>", "registration": "-.->", "call": "-->"}


def _m(text: str) -> str:
    text = "\n".join(_lines(text))
    text = text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;").replace("|", "#124;")
    return text.replace("\n", "<br/>")


def to_mermaid(g: Graph, rankdir: str = "TB") -> str:
    out = [f"flowchart {rankdir}"]
    classes: dict[str, list[str]] = {}
    for n in g.nodes.values():
        s = n.step
        out.append(f'  {n.id}["{_m(where(s) + chr(10) + short_symbol(s))}"]')
        classes.setdefault(s.role, []).append(n.id)
    for e in g.edges.values():
        label = f"|{_m(', '.join(e.labels))}|" if e.labels else ""
        out.append(f"  {e.src} {_EDGE_MERMAID[e.kind]}{label} {e.dst}")
    for role in ROLE_COLOURS:
        if role in classes:
            out.append(f"  classDef {role} fill:{ROLE_COLOURS[role]},stroke:#444")
            out.append(f"  class {','.join(classes[role])} {role}")
    if any_generated(g):  # after the role classes, so its dashes win
        out.append("  classDef gen stroke-dasharray:4 3")
        out.append(f"  class {','.join(n.id for n in g.nodes.values() if n.step.generated)} gen")
    if g.shared:
        out.append("  classDef shared stroke-width:3px")
        out.append(f"  class {','.join(n.id for n in g.shared)} shared")
    return "\n".join(out) + "\n"


# ---- images ---------------------------------------------------------------------------------
def render_image(dot_text: str, fmt: str) -> bytes:
    """svg or png bytes from Graphviz's ``dot``; UsageError when it is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError(f"--format {fmt} needs Graphviz's `dot` on PATH (e.g. apt-get install graphviz); "
                         "--format dot and mermaid need nothing")
    try:
        r = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise AtenmapError("Graphviz `dot` took over 120 s; try --format dot") from None
    if r.returncode != 0:
        msg = (r.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise AtenmapError(f"Graphviz `dot` failed: {msg}")
    return r.stdout


def render(chains: list[Chain], fmt: str, rankdir: str = "TB", legend: bool = True) -> bytes:
    """The graph of ``chains`` in ``fmt`` (one of FORMATS), as bytes ready to write."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown graph format {fmt!r} (choose from {', '.join(FORMATS)})")
    if rankdir not in RANKDIRS:
        raise UsageError(f"unknown rank direction {rankdir!r} (choose from {', '.join(RANKDIRS)})")
    g = build_graph(chains)
    if fmt == "mermaid":
        return to_mermaid(g, rankdir).encode()
    dot = to_dot(g, rankdir, legend)
    return dot.encode() if fmt == "dot" else render_image(dot, fmt)
