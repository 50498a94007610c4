"""Text and JSON views of result records. Knows nothing of SQLite or typer."""
from __future__ import annotations

import json
from typing import Callable, Optional

from atenmap.config import printable
from atenmap.model import Chain, Step
from atenmap.views.links import detail as _detail

ROLE_WIDTH = 12

# A step's location text (a permalink, an absolute path), or None for the default; see links.py.
Link = Optional[Callable[[Step], Optional[str]]]


def chain_json(chain: Chain, link: Link = None) -> str:
    """``link``: each step also gets ``"link"`` (its URL or absolute path, or null)."""
    d = chain.to_dict()
    if link is not None:
        pairs = list(zip(chain.bindings, d["python"]))
        pairs += [(s, sd) for kc, kd in zip(chain.keys, d["keys"]) for s, sd in zip(kc.steps, kd["steps"])]
        while pairs:
            step, sd = pairs.pop()
            sd["link"] = link(step)
            sd["detail"] = _detail(step, link)
            pairs += list(zip(step.children, sd["children"]))
    return json.dumps(d, indent=2)


GENERATED = "<torchgen>"


def short_generated(text: str, generated_root: str | None) -> str:
    """``text`` with torchgen's output directory written as ``<torchgen>``."""
    return text.replace(generated_root.rstrip("/"), GENERATED) if generated_root else text


def _loc(step: Step, generated_root: str | None = None, link: Link = None) -> str:
    if step.file is None:
        return "(generated)"
    return (link and link(step)) or short_generated(f"{step.file}:{step.line}", generated_root)


def chain_lines(chain: Chain, link: Link = None) -> list[str]:
    """Readable tree, one step a line, ``path:line`` first so terminals and editors can jump."""
    op = chain.op
    src = chain.source
    out = [f"{op.name}: {op.schema}",
           f"source: {src.root} (PyTorch {src.version}{', ' + src.commit[:12] if src.commit else ''})"]
    gen = chain.generated_root
    if gen == GENERATED:  # the bundled index: no torchgen output on this machine
        out.append(f"{GENERATED} = files torchgen writes at build time, not in the repository (steps marked [generated])")
    elif gen:
        out.append(f"{GENERATED} = {gen} (the checkout's torchgen output; steps marked [generated])")
    steps = [s for kc in chain.keys for s in kc.walk()] + [s for b in chain.bindings for s in b.walk()]
    width = max((len(_loc(s, gen, link)) for s in steps), default=0)
    if chain.bindings:
        out.append("")
        out.append("[Python]")
        for step in chain.bindings:
            _tree(step, "", True, out, width, gen, top=True, link=link)
    for kc in chain.keys:
        out.append("")
        out.append(f"[{kc.key}]")
        for step in kc.steps:
            _tree(step, "", True, out, width, gen, top=True, link=link)
    for w in chain.warnings:
        out.append(f"warning: {w}")
    return [printable(line) for line in out]  # a file name or yaml string cannot forge lines


def _tree(step: Step, prefix: str, last: bool, out: list[str], width: int, gen: str | None,
          top: bool = False, link: Link = None) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    mark = " [generated]" if step.generated else ""
    text = _detail(step, link)
    detail = f"  — {short_generated(text, gen)}" if text else ""
    out.append(f"{_loc(step, gen, link):<{width}}  {prefix}{branch}{step.role:<{ROLE_WIDTH}} {step.symbol}{mark}{detail}")
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    for i, c in enumerate(step.children):
        _tree(c, child_prefix, i == len(step.children) - 1, out, width, gen, link=link)
