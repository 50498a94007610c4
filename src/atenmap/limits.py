"""Caps on the shape of a source file before it is parsed: its longest line, its #if depth.

build._parse_one asks ``too_odd`` after reading a file (its size is capped before that, by
``max_file_bytes``: files.read_bytes refuses a larger file from its stat, unread). A file over a cap
is skipped and counted, as a file over the size cap is (``atenmap index``: "skipped 1 long-line").
"""
from __future__ import annotations

import re

# Note [Pathological sources]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# tree-sitter's parse and the extractor's queries are fast on code people write, but not linear on
# every input: one 6 MB line (a generated table, a minified blob) took ~29 s against ~1.5 s for
# 1 MB, 20,000 nested ``#if``s ~6 s for 0.35 MB (each level a node the queries walk again). The
# caps below are far above what PyTorch holds -- in 2.6.0 and 1.13.1, ATen's files and torchgen's
# output alike, the longest line is 1,800 bytes (Dispatch_v2.h) and the deepest #if nesting 4 --
# so no real file is skipped and no fact changes, while each check is one pass over the bytes:
#
#   long-line     a line longer than MAX_LINE bytes
#   deep-nesting  #if/#ifdef/#ifndef nested deeper than MAX_IF_DEPTH
#
# Both are counted in the build report's ``skipped`` and the file's status, as ``too-large`` is.
MAX_LINE = 64 << 10
MAX_IF_DEPTH = 256

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|endif)", re.M)


def too_odd(data: bytes) -> str:
    """``"long-line"`` or ``"deep-nesting"`` when ``data`` is over a cap (Note [Pathological
    sources]), else ``""``. Linear in ``len(data)``."""
    if len(data) > MAX_LINE and max(map(len, data.split(b"\n"))) > MAX_LINE:
        return "long-line"
    if data.count(b"#") > MAX_IF_DEPTH:
        depth = 0
        for m in _DIRECTIVE.finditer(data):
            depth = depth + 1 if m.group(1) == b"if" else max(depth - 1, 0)
            if depth > MAX_IF_DEPTH:
                return "deep-nesting"
    return ""
