"""Comments and string/char literals of C++ source bytes, blanked: the one regex for them, used by
the extractor (blanking.mask_code) and by the readers of a file's branches at query time
(branches.py, enclosing.py). A regex, not tree-sitter: it runs over text that is never parsed
(a macro body, the bytes a query reads for --why) and must keep every offset and newline."""
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
