"""The include graph walked breadth first: from some files, every file their ``#include``s reach
within a number of levels, with its distance. One walk for every reader of the graph: the
resolver (chain.py's ``_reachable``, edges read a level at a time from the index), the reverse
lookup (kernels.py's ``_visible``, over the whole graph read once) and the preview (its files'
bytes), each passing its own edges."""
from __future__ import annotations

from typing import Callable, Iterable


class IncludeGraph:
    """``targets(path)``: the files ``path`` includes, in order. ``read_level(paths)``, when given,
    is called with each level before its files are asked (a source that reads a level in one
    query)."""

    def __init__(self, targets: Callable[[str], Iterable[str]],
                 read_level: Callable[[list[str]], None] | None = None):
        self._targets = targets
        self._read_level = read_level

    def distances(self, starts: Iterable[str], max_depth: int = 6) -> dict[str, int]:
        """Each file reached from ``starts`` (distance 0) within ``max_depth`` levels -> its
        include distance, in the order the walk meets them."""
        dist = dict.fromkeys(starts, 0)
        frontier = list(dist)
        for d in range(1, max_depth + 1):
            if self._read_level is not None:
                self._read_level(frontier)
            nxt = []
            for path in frontier:
                for target in self._targets(path):
                    if target not in dist:
                        dist[target] = d
                        nxt.append(target)
            frontier = nxt
        return dist
