"""Caps on the shape of a source file before it is parsed: its longest line, its #if depth; and
the one bounded way to parse Python nobody vouched for (``parse_python``).

build._parse_one asks ``too_odd`` after reading a file (its size is capped before that, by
``max_file_bytes``: files.read_bytes refuses a larger file from its stat, unread). A file over a cap
is skipped and counted, as a file over the size cap is (``atenmap index``: "skipped 1 long-line").
"""
from __future__ import annotations

import ast
import re
import warnings

from atenmap.errors import AtenmapError

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


# Note [Parsing Python nobody vouched for]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Inductor's output code in a cache, a script a trace names, ``--example``: Python's own parser is
# recursive and builds a node per token, so ``a.`` x 200,000 or ``1 + `` x 2,000,000 end in a
# RecursionError or MemoryError (issue 34), and a 600 MB file in gigabytes. ``parse_python`` bounds
# the text (``max_bytes``, and no line over MAX_LINE: Inductor's longest lines are graph comments
# of a few KB) and turns the parser's own depth limits into one line (``Unparsable``). The parser's
# warnings (``invalid escape sequence '\e'``: a DeprecationWarning, a SyntaxWarning printed on
# stderr with its source line from Python 3.12) are about text nobody here wrote: they are dropped.


class Unparsable(AtenmapError):
    """Python text that is too large, too deep or not valid: one line saying which."""


def parse_python(text: str | bytes, what: str, *, max_bytes: int, mode: str = "exec", code: bool = False):
    """``ast.parse`` of ``text`` (or, with ``code``, ``compile``: a code object), bounded: see Note
    [Parsing Python nobody vouched for]. ``what`` names the text in the message."""
    if len(text) > max_bytes:
        raise Unparsable(f"{what}: over {max_bytes} bytes, not parsed")
    nl = b"\n" if isinstance(text, bytes) else "\n"
    if len(text) > MAX_LINE and max(map(len, text.split(nl))) > MAX_LINE:
        raise Unparsable(f"{what}: a line over {MAX_LINE} bytes, not parsed")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(text, what, mode, dont_inherit=True) if code else ast.parse(text, what, mode)
    except SyntaxError as exc:
        raise Unparsable(f"{what}: not valid Python ({exc.msg}, line {exc.lineno})") from None
    except (RecursionError, MemoryError):
        raise Unparsable(f"{what}: nested too deeply to parse") from None
    except ValueError as exc:  # NUL bytes
        raise Unparsable(f"{what}: not Python text ({exc})") from None
