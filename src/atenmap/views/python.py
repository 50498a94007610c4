"""A Python function users typed (``F.cross_entropy``), before its operator's chain: where it is
defined and the operators it reaches (model.PythonFunction; resolve/pylayer.py)."""
from __future__ import annotations

from atenmap.model import PythonFunction


def python_lines(py: PythonFunction, shown: str) -> list[str]:
    """The text lines; ``shown``: the operator whose chain follows."""
    where = f"{py.loc.file}:{py.loc.line}"
    if py.alias is not None:
        return [f"{py.name}: {where}  = {py.alias} (its binding; the chain of {shown} follows)", ""]
    out = [f"{py.name}: a Python function (composite), {where}; the operators it calls:"]
    width = max(len(f"{c.loc.file}:{c.loc.line}") for c in py.calls)
    for c in py.calls:
        via = f"  (through {' -> '.join(c.via)})" if c.via else ""
        out.append(f"  {f'{c.loc.file}:{c.loc.line}':<{width}}  {c.written} -> {c.operator}{via}")
    others = [c.operator for c in py.calls if c.operator != shown]
    out.append(f"the chain of {shown} follows" + (f" (the others: atenmap {' | '.join(others[:4])}"
                                                   + (" ..." if len(others) > 4 else "") + ")" if others else ""))
    return out + [""]


__all__ = ["python_lines"]
