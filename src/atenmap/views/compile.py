"""``CompileAnswer`` (Index.compile, ``--compile``) as text: the ``[compile]`` section after a
chain, and its JSON (a list of STEPs under the chain's ``"compile"`` key)."""
from __future__ import annotations

from atenmap.model import Step
from atenmap.model_answers import CompileAnswer
from atenmap.views.terminal import Line, Span, Terminal
from atenmap.views.text import Link, _Ctx, _loc, _tree

__all__ = ["compile_lines", "compile_spans", "compile_list"]


def compile_lines(c: CompileAnswer, link: Link = None, term: Terminal | None = None, urls: Link = None) -> list[str]:
    term = term or Terminal()
    return term.lines(compile_spans(c, link=link, width=term.width, urls=urls))


def compile_spans(c: CompileAnswer, link: Link = None, width: int | None = None, urls: Link = None) -> list[Line]:
    """``[compile]``, the one-line summary, then Inductor's choice first and the other steps."""
    out: list[Line] = [(), (Span("[compile]", "heading"), Span(f"  {c.summary}", "dim") if c.summary else Span(""))]
    if c.note:
        out.append((Span(c.note, "dim"),))
        return out
    steps = [s for top in c.steps for s in top.walk()]
    loc_width = max([len(_loc(s, None, link)) for s in steps] + [0])
    if width is not None:
        loc_width = min(loc_width, max(24, width * 2 // 5))
    ctx = _Ctx(loc_width, link, urls, width)
    for s in c.steps:
        _tree(s, "", True, out, ctx, top=True)
    return out


def compile_list(c: CompileAnswer, link: Link = None) -> list[dict]:
    """``c.to_list()``; with ``link`` each step also gets ``"link"``."""
    d = c.to_list()
    if link is not None:
        pairs: list[tuple[Step, dict]] = list(zip(c.steps, d))
        while pairs:
            step, sd = pairs.pop()
            sd["link"] = link(step)
            pairs += list(zip(step.children, sd["children"]))
    return d
