"""``Backward`` (Index.backward) as text: the ``[backward]`` section after a chain, and its JSON."""
from __future__ import annotations

from atenmap.model import Step
from atenmap.model_answers import Backward
from atenmap.views.terminal import Line, Span, Terminal
from atenmap.views.text import Link, _Ctx, _loc, _tree

__all__ = ["backward_lines", "backward_spans"]


def backward_lines(b: Backward, link: Link = None, term: Terminal | None = None, urls: Link = None,
                   generated_root: str | None = None) -> list[str]:
    """The ``[backward]`` section: entry, formulas, the generated node, one block per key with
    the chains of the operators each backward formula calls, or what the op decomposes into.
    ``generated_root``: torchgen's folder, printed ``gen:`` as the chain's header says."""
    term = term or Terminal()
    return term.lines(backward_spans(b, link=link, width=term.width, urls=urls, generated_root=generated_root))


def backward_spans(b: Backward, link: Link = None, width: int | None = None, urls: Link = None,
                   generated_root: str | None = None) -> list[Line]:
    out: list[Line] = [(), (Span("[backward]", "heading"),)]
    steps = [s for s in b.node_steps for s in s.walk()] + [s for kc in b.keys for s in kc.walk()]
    loc_width = max([len(_loc(s, generated_root, link)) for s in steps] + [len(f"{f.loc}") for f in b.formulas] + [0])
    if width is not None:
        loc_width = min(loc_width, max(24, width * 2 // 5))
    ctx = _Ctx(loc_width, link, urls, width, generated_root)
    for key, nodes in b.outputs:  # --example: the node of the call's output
        what = nodes[0] if len(nodes) == 1 else ("one of " + ", ".join(nodes) if nodes else "not found")
        if key in b.undecided and nodes:  # Note [A branch the ranks pick] in resolve/outputnode.py
            what = ("not decided by the given arguments (the ranks of its tensors pick the return: give shapes); "
                    "ranked as the default call, 2-D tensors: " + ", ".join(nodes))
        out.append((Span(f"output of {b.output_call or 'the example'} on {key}: "), Span(what, "role.yaml" if len(nodes) == 1 else "dim")))
    e = b.entry
    if e is not None:
        out.append((Span(f"{e.loc}".ljust(loc_width)), Span("  "), Span(f"{'yaml':<12}", "role.yaml"),
                    Span(f" {e.schema}"), Span(f"  — derivatives.yaml entry{' (autograd node ' + b.node + ')' if b.node else ''}"
                                               + (f"; only for {', '.join(b.entry_keys) or 'no key asked'}: {', '.join(b.composite_keys)}"
                                                  " run the composite kernel (below)" if b.composite_keys else ""), "dim")))
        for f in b.formulas:
            what = f"{f.kind}" + (f", {f.dispatch}" if f.dispatch != "Default" else "") + (f", {f.status}" if f.status else "")
            out.append((Span(f"{f.loc}".ljust(loc_width)), Span("  └─ " if f is b.formulas[-1] else "  ├─ "),
                        Span(f"{', '.join(f.names)}: {f.formula}"), Span(f"  — {what}", "dim")))
    for d in b.decomposed:
        where = f"{d.call}" if d.call else ""
        if d.entry is not None:
            forms = "; ".join(f"{', '.join(f.names)}: {f.formula}" for f in d.entry.formulas if f.kind == "backward")
            text = f"{d.op}: {d.entry.loc}" + (f" ({d.node})" if d.node else "") + f"  {forms}"
        else:
            text = f"{d.op}: no derivatives.yaml entry"
        path = f"{d.via} " if d.via and d.via != b.op else ""
        more = " (decomposes further)" if d.composite else ""
        out.append((Span(where.ljust(loc_width)), Span("  "), Span(f"{'op_call':<12}", "role.op_call"),
                    Span(f" {path}decomposes into {text}{more}")))
    if b.node_steps:
        out.append(())
        only = f", only for {', '.join(b.entry_keys)}" if b.composite_keys else ""
        out.append((Span(f"[backward: autograd node {b.node or ''}{only}]".replace(" ]", "]"), "heading"),))
        for s in b.node_steps:
            _tree(s, "", True, out, ctx, top=True)
    for kc in b.keys:
        out.append(())
        out.append((Span(f"[backward {kc.key}]", "heading"),))
        for s in kc.steps:
            _tree(s, "", True, out, ctx, top=True)
    return out


def backward_dict(b: Backward, link: Link = None) -> dict:
    """``b.to_dict()``; with ``link`` each step also gets ``"link"``."""
    d = b.to_dict()
    if link is not None:
        pairs: list[tuple[Step, dict]] = list(zip(b.node_steps, d["node_steps"]))
        pairs += [(s, sd) for kc, kd in zip(b.keys, d["keys"]) for s, sd in zip(kc.steps, kd["steps"])]
        while pairs:
            step, sd = pairs.pop()
            sd["link"] = link(step)
            pairs += list(zip(step.children, sd["children"]))
    return d
