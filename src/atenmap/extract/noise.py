"""Comments and string/char literals of C++ source bytes, blanked: the one regex for them, used by
the readers of a file's branches at query time (branches.py, enclosing.py). blanking.mask_code (the
extractor) still holds its own copy, CODE_NOISE: moving it here changes the extractor hash and so
the shipped bundle's bytes; it goes with the next bundle rebuild. A regex, not tree-sitter: it runs
over text that is never parsed (the bytes a query reads for --why) and must keep every offset and
newline. Small on purpose: a query imports it, and blanking.py's regexes take milliseconds to compile."""
from __future__ import annotations

import re

# a // comment, a /* */ comment, a "string" or a 'c'haracter literal (escapes kept inside)
CODE_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_BLANK = bytes.maketrans(bytes(b for b in range(256) if b != 10), b" " * 255)  # every byte but \n -> space


def _spaces(m: re.Match) -> bytes:
    return m.group(0).translate(_BLANK)


def blank_noise(src: bytes) -> bytes:
    """``src`` with its comments and literals turned into spaces (newlines kept: same offsets,
    same lines)."""
    return CODE_NOISE.sub(_spaces, src)
