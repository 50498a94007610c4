"""A Python function users typed (``F.cross_entropy``), before its operator's chain: where it is
defined and the operators it reaches (model_answers.PythonFunction; resolve/pylayer.py). Lines stay short
(an 80-column terminal): the Python functions passed through go on a line of their own."""
from __future__ import annotations

from atenmap.model_answers import PythonFunction
from atenmap.views.terminal import wrap_words


def python_lines(py: PythonFunction, shown: str, width: int | None = None) -> list[str]:
    """The text lines; ``shown``: the operator whose chain follows; ``width``: the terminal's (None:
    whole lines), longer lines broken at spaces."""
    out = []
    for line in _lines(py, shown):
        text = line.lstrip(" ")
        lead = " " * (len(line) - len(text))
        out += [lead + w for w in (wrap_words(text, width - len(lead) if width else None, "    ") if text else [text])]
    return out


def _lines(py: PythonFunction, shown: str) -> list[str]:
    where = f"{py.loc.file}:{py.loc.line}"
    if py.alias is not None:
        return [f"{py.name}: {where}", f"  = {py.alias}, the binding of {shown}; its chain follows", ""]
    out = [f"{py.name}: a Python function, {where}", "it calls (composite):"]
    width = max(len(f"{c.loc.file}:{c.loc.line}") for c in py.calls)
    for c in py.calls:
        out.append(f"  {f'{c.loc.file}:{c.loc.line}':<{width}}  {c.written} -> {c.operator}")
        if c.via:
            out.append(f"  {'':<{width}}    through {' -> '.join(c.via)}")
    more = len(py.calls) > 1
    out.append(f"the chain of {shown} follows" + ("; the others: atenmap OPERATOR" if more else ""))
    return out + [""]


__all__ = ["python_lines"]
