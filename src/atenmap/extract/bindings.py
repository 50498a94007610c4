"""Python binding markers of torchgen's generated python_*.cpp files."""
from __future__ import annotations

import bisect
import re
from itertools import accumulate

from atenmap.extract.fact import Fact
from atenmap.kinds import FactKind


# Note: the marker is the text of a comment, which tree-sitter gives as one node without structure.
# not a query: a comment's text (tree-sitter gives a comment as one node without structure)
_BINDING = re.compile(rb"^[ \t]*// aten::([A-Za-z_]\w*(?:\.\w+)?)\(", re.M)


def binding_markers(src: bytes, facts: list[Fact]) -> list[Fact]:
    """Note [Python bindings]: torchgen's python_*functions*.cpp and python_variable_methods.cpp
    put ``// aten::add.Tensor(...)`` right above the ``dispatch_add`` lambda of each overload,
    inside the ``THPVariable_add`` binding. A ``binding`` fact records it, scoped to that function."""
    function = FactKind.FUNCTION
    funcs = sorted((f.line, f.end_line, i) for i, f in enumerate(facts) if f.kind == function)
    starts = [f[0] for f in funcs]
    reach = list(accumulate((f[1] for f in funcs), max))  # the furthest end among funcs[:k + 1]
    out = []
    line, last = 1, 0  # counted on from the previous marker: linear in the file
    for m in _BINDING.finditer(src):
        line, last = line + src.count(b"\n", last, m.start()), m.start()
        scope = -1
        k = bisect.bisect_right(starts, line) - 1  # the last function starting at or before the line ...
        while k >= 0 and reach[k] >= line:  # ... back to the innermost one holding it
            if funcs[k][1] >= line:
                scope = funcs[k][2]
                break
            k -= 1
        op = m.group(1).decode()
        out.append(Fact(FactKind.BINDING.value, op, op, line, line, scope=scope))
    return out
