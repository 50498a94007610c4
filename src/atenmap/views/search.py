"""Search hits (``Index.search``) as aligned lines. The query and its ranking: resolve/search.py."""
from __future__ import annotations

from atenmap.model_answers import SearchHit
from atenmap.views.terminal import Span, Terminal, shorten_middle

MAX_PATH_COLUMN = 64


def render_hits(hits: list[SearchHit], term: Terminal | None = None) -> list[str]:
    """``path:line  kind      name  [extra]`` per hit, columns aligned; long paths are shortened in
    the middle to the column (generated paths are absolute, in the cache) when ``term`` has a width,
    else they overflow the column rather than widen it."""
    term = term or Terminal()
    width = min(MAX_PATH_COLUMN, max((len(f"{h.file}:{h.line}") for h in hits), default=0))
    out = []
    for h in hits:
        loc = f"{h.file}:{h.line}"
        loc = shorten_middle(loc, width) if term.width is not None else loc
        out.append((Span(loc.ljust(width)), Span(f"  {h.kind:<8}  ", "dim"), Span(h.name, "heading"),
                    Span(f"  [{h.extra}]" if h.extra else "", "dim")))
    return term.lines(out)
