"""Text and JSON views of result records. Knows nothing of SQLite or typer."""
from __future__ import annotations

import json

from .model import Chain, Step

ROLE_WIDTH = 12


def chain_json(chain: Chain) -> str:
    return json.dumps(chain.to_dict(), indent=2)


def _loc(step: Step) -> str:
    if step.file is None:
        return "(generated)"
    return f"{step.file}:{step.line}"


def chain_lines(chain: Chain) -> list[str]:
    """Readable tree, one step a line, ``path:line`` first so terminals and editors can jump."""
    op = chain.op
    src = chain.source
    out = [f"{op.name}: {op.schema}",
           f"source: {src.root} (PyTorch {src.version}{', ' + src.commit[:12] if src.commit else ''})"]
    width = max((len(_loc(s)) for kc in chain.keys for s in kc.walk()), default=0)
    for kc in chain.keys:
        out.append("")
        out.append(f"[{kc.key}]")
        for step in kc.steps:
            _tree(step, "", True, out, width, top=True)
    for w in chain.warnings:
        out.append(f"warning: {w}")
    return out


def _tree(step: Step, prefix: str, last: bool, out: list[str], width: int, top: bool = False) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    mark = " [generated]" if step.generated else ""
    detail = f"  — {step.detail}" if step.detail else ""
    out.append(f"{_loc(step):<{width}}  {prefix}{branch}{step.role:<{ROLE_WIDTH}} {step.symbol}{mark}{detail}")
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    for i, c in enumerate(step.children):
        _tree(c, child_prefix, i == len(step.children) - 1, out, width)
