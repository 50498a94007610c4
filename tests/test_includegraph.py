"""resolve/includegraph.py: the one include-graph walk (chain.py, kernels.py and the preview use it)."""
from atenmap.resolve.includegraph import IncludeGraph

EDGES = {"a.cpp": ["a.h", "b.h"], "a.h": ["c.h"], "b.h": ["c.h", "a.h"], "c.h": ["d.h"], "d.h": ["e.h"]}


def test_distances_breadth_first_within_the_depth():
    g = IncludeGraph(lambda p: EDGES.get(p, ()))
    assert g.distances(["a.cpp"]) == {"a.cpp": 0, "a.h": 1, "b.h": 1, "c.h": 2, "d.h": 3, "e.h": 4}
    assert list(g.distances(["a.cpp"], max_depth=2)) == ["a.cpp", "a.h", "b.h", "c.h"]
    assert g.distances(["c.h", "a.h"], max_depth=1) == {"c.h": 0, "a.h": 0, "d.h": 1}


def test_each_level_is_read_before_it_is_walked():
    levels = []
    g = IncludeGraph(lambda p: EDGES.get(p, ()), levels.append)
    g.distances(["a.cpp"], max_depth=3)
    assert levels == [["a.cpp"], ["a.h", "b.h"], ["c.h"]]
