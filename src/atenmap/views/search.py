"""Search hits (``Index.search``) as aligned lines. The query and its ranking: resolve/search.py."""
from __future__ import annotations

from atenmap.config import printable
from atenmap.model import SearchHit

MAX_PATH_COLUMN = 64


def render_hits(hits: list[SearchHit]) -> list[str]:
    """``path:line  kind      name  [extra]`` per hit, columns aligned (long generated paths
    overflow the column rather than widen it)."""
    width = min(MAX_PATH_COLUMN, max((len(f"{h.file}:{h.line}") for h in hits), default=0))
    return [printable(f"{h.file}:{h.line}".ljust(width) + f"  {h.kind:<8}  {h.name}" + (f"  [{h.extra}]" if h.extra else ""))
            for h in hits]
