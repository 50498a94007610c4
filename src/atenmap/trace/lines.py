"""The statement line of an op a user's frame ran with no call in between (``a + b``, ``x[i]``,
``a @ w``): a C slot runs it, so the profiler records no call event, and the frame's current line is
not recorded. No torch.

Note [Lines of operators without a call]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
What is recorded: the frame's function (file, first line), the lines of the calls it made before
and after the op (each call event's caller line), and the op's name. The function's own bytecode
says which lines in that window hold an instruction that can run such an op: ``BINARY_OP`` with
``+`` for ``aten::add``, ``@`` for ``aten::matmul``, ``BINARY_SUBSCR`` for ``aten::select`` /
``aten::slice`` / ``aten::unsqueeze`` / ``aten::index``, ``STORE_SUBSCR`` for ``aten::copy_``,
``COMPARE_OP`` for ``aten::eq`` .... When exactly one line in the window fits, that is the
statement (``Frame.exact``); otherwise the frame keeps its function's first line. The source is
the file as it is now: a file changed since the run can only make the answer "not exact", since a
line is taken only where the window and the instruction agree.
"""
from __future__ import annotations

import dis
import os
from functools import lru_cache

from atenmap import files
from atenmap.limits import Unparsable, parse_python

_BINARY = {"add": "+", "sub": "-", "rsub": "-", "mul": "*", "div": "/", "true_divide": "/", "floor_divide": "//",
           "remainder": "%", "fmod": "%", "pow": "**", "matmul": "@", "mm": "@", "bmm": "@", "mv": "@", "dot": "@",
           "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "__and__": "&", "__or__": "|", "__xor__": "^",
           "bitwise_left_shift": "<<", "bitwise_right_shift": ">>", "__lshift__": "<<", "__rshift__": ">>"}
_SUBSCR = {"select", "slice", "index", "unsqueeze", "alias", "view", "expand", "narrow", "as_strided"}
_STORE = {"copy_", "fill_", "index_put_", "masked_fill_", "index_fill_", "masked_scatter_"}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_UNARY = {"neg": "UNARY_NEGATIVE", "bitwise_not": "UNARY_INVERT", "logical_not": "UNARY_NOT"}


def fits(op: str, ins: dis.Instruction) -> bool:
    """Can instruction ``ins`` run an aten op named ``op`` (``aten::add_``, ``aten::select``)?"""
    name = op.rsplit("::", 1)[-1].split(".", 1)[0]
    base = name.rstrip("_") if not name.startswith("_") else name
    o = ins.opname
    if o == "BINARY_OP":
        sym = _BINARY.get(base)
        rep = ins.argrepr.rstrip("=")
        return sym == rep or (base in ("add", "sub") and rep in ("+", "-"))
    if o in ("BINARY_SUBSCR", "BINARY_SLICE"):
        return base in _SUBSCR
    if o in ("STORE_SUBSCR", "STORE_SLICE"):
        return name in _STORE or base in _SUBSCR
    if o == "COMPARE_OP":
        return base in _COMPARE
    return _UNARY.get(base) == o


MAX_SCRIPT_BYTES = 4 << 20  # a user's file compiled to read its bytecode


def _code(file: str, function: str, first: int):
    """The code object of ``function`` defined at line ``first`` of ``file`` (None if not found),
    from the file as it is now: kept per version of the file (inode, size, mtime, ctime), since a
    server answers many traces while the user edits (issue 34, item 9)."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return None
    return _compiled(file, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), function, first)


@lru_cache(maxsize=256)
def _compiled(file: str, _version: tuple, function: str, first: int):
    try:  # a trace names the file: only a regular one, bounded (files.py), parsed with a bound (limits.py)
        top = parse_python(files.read_bytes(file, MAX_SCRIPT_BYTES), file, max_bytes=MAX_SCRIPT_BYTES, code=True)
    except (Unparsable, OSError):
        return None
    todo = [top]
    while todo:
        c = todo.pop()
        if c.co_name == function and (c.co_firstlineno == first or (function == "<module>" and first <= 1)):
            return c
        todo.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return None


def statement_line(file: str, function: str, first: int, op: str, after: int | None, before: int | None) -> int | None:
    """The one line of ``function`` between the lines of the calls made just before (``after``) and
    just after (``before``) the op that can run ``op``; None when not exactly one."""
    code = _code(file, function, first)
    if code is None:
        return None
    lines = set()
    for ins in dis.get_instructions(code):
        line = ins.positions.lineno if ins.positions is not None else None
        if line is None or not fits(op, ins):
            continue
        lo, hi = after if after is not None else 0, before if before is not None else 1 << 30
        inside = lo <= line <= hi if lo <= hi else (line >= lo or line <= hi)  # a loop wrapped around
        if inside:
            lines.add(line)
    return lines.pop() if len(lines) == 1 else None
