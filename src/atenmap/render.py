"""Text and JSON views of result records. Knows nothing of SQLite or typer."""
from __future__ import annotations

import json

from .model import Chain, Step

ROLE_WIDTH = 12


def chain_json(chain: Chain) -> str:
    return json.dumps(chain.to_dict(), indent=2)


GENERATED = "<torchgen>"


def _short(text: str, generated_root: str | None) -> str:
    return text.replace(generated_root.rstrip("/"), GENERATED) if generated_root else text


def _loc(step: Step, generated_root: str | None = None) -> str:
    if step.file is None:
        return "(generated)"
    return _short(f"{step.file}:{step.line}", generated_root)


def chain_lines(chain: Chain) -> list[str]:
    """Readable tree, one step a line, ``path:line`` first so terminals and editors can jump."""
    op = chain.op
    src = chain.source
    out = [f"{op.name}: {op.schema}",
           f"source: {src.root} (PyTorch {src.version}{', ' + src.commit[:12] if src.commit else ''})"]
    gen = chain.generated_root
    if gen:
        out.append(f"{GENERATED} = {gen} (the checkout's torchgen output; steps marked [generated])")
    steps = [s for kc in chain.keys for s in kc.walk()] + [s for b in chain.bindings for s in b.walk()]
    width = max((len(_loc(s, gen)) for s in steps), default=0)
    if chain.bindings:
        out.append("")
        out.append("[Python]")
        for step in chain.bindings:
            _tree(step, "", True, out, width, gen, top=True)
    for kc in chain.keys:
        out.append("")
        out.append(f"[{kc.key}]")
        for step in kc.steps:
            _tree(step, "", True, out, width, gen, top=True)
    for w in chain.warnings:
        out.append(f"warning: {w}")
    return out


def _tree(step: Step, prefix: str, last: bool, out: list[str], width: int, gen: str | None,
          top: bool = False) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    mark = " [generated]" if step.generated else ""
    detail = f"  — {_short(step.detail, gen)}" if step.detail else ""
    out.append(f"{_loc(step, gen):<{width}}  {prefix}{branch}{step.role:<{ROLE_WIDTH}} {step.symbol}{mark}{detail}")
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    for i, c in enumerate(step.children):
        _tree(c, child_prefix, i == len(step.children) - 1, out, width, gen)
