"""Views of chains and of the index for people and tools: each module turns result records into
one output format and knows nothing of typer.

graph.py    chains as a graph: dot, mermaid, and svg/png through Graphviz
editor.py   quickfix lines, the editor command that opens a step, OSC-8 hyperlinks
gdb.py      a gdb/cuda-gdb command file with a breakpoint on each function of a chain
search.py   search hits as aligned lines
kernel.py   kernel matches (atenmap kernel) as text
complete.py operator names for shell completion, read from an existing fresh index only
"""
from __future__ import annotations

from atenmap.errors import UsageError

__all__ = ["UsageError"]
