"""Python binding markers of torchgen's generated python_*.cpp files."""
from __future__ import annotations

import re

from atenmap.extract.fact import Fact


_BINDING = re.compile(rb"^[ \t]*// aten::([A-Za-z_]\w*(?:\.\w+)?)\(", re.M)


def binding_markers(src: bytes, facts: list[Fact]) -> list[Fact]:
    """Note [Python bindings]: torchgen's python_*functions*.cpp and python_variable_methods.cpp
    put ``// aten::add.Tensor(...)`` right above the ``dispatch_add`` lambda of each overload,
    inside the ``THPVariable_add`` binding. A ``binding`` fact records it, scoped to that function."""
    funcs = sorted((f.line, f.end_line, i) for i, f in enumerate(facts) if f.kind == "function")
    out = []
    for m in _BINDING.finditer(src):
        line = src.count(b"\n", 0, m.start()) + 1
        scope = -1
        for start, end, i in funcs:
            if start <= line <= end:
                scope = i
        op = m.group(1).decode()
        out.append(Fact("binding", op, op, line, line, scope=scope))
    return out
