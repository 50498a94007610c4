"""Matches of a line-start pattern, found from a search for what follows the indentation.

Note [Line-start patterns]
A pattern such as ``^[ \t]*#[ \t]*define ...`` (re.M) is tried by the regex engine at every line
start of the file: a step per line in Python's engine, 5x slower than a search for a literal
``#``. ``line_matches`` searches for the ``hint`` (what every match holds right after its
indentation) and matches the pattern from the start of a candidate's line, where that line holds
only indentation before the hint and was not inside the previous match: the matches
``finditer`` gives, in order.
"""
from __future__ import annotations

import re
from typing import AnyStr, Iterator


def line_matches(pattern: re.Pattern, hint: re.Pattern | AnyStr, text: AnyStr, indent: str = " \t"
                 ) -> Iterator[re.Match]:
    """``pattern.finditer(text)`` for a MULTILINE ``pattern`` that is ``^``, characters of
    ``indent``, then what ``hint`` matches (a pattern, or a literal: searched with ``find``). See
    Note [Line-start patterns]."""
    nl, ind = ("\n", indent) if isinstance(text, str) else (b"\n", indent.encode())
    literal = isinstance(hint, (str, bytes))
    pos = last_end = 0
    while True:
        if literal:
            at = text.find(hint, pos)
            if at < 0:
                return
        else:
            h = hint.search(text, pos)
            if h is None:
                return
            at = h.start()
        line = text.rfind(nl, 0, at) + 1
        pos = at + 1
        if line < last_end or text[line:at].strip(ind):
            continue
        m = pattern.match(text, line)
        if m is not None:
            yield m
            last_end = m.end()
            pos = max(pos, last_end)
