"""Just enough of the C preprocessor to see kernels and registrations that macros create.

Note [Macro-made kernels]
~~~~~~~~~~~~~~~~~~~~~~~~~
ATen stamps out whole families of functions and registrations with function-like macros and
token pasting, e.g. in ``native/cpu/UnaryOpsKernel.cpp``::

    #define STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512(op)  ... static void op##_kernel(...) {...}
                                                                ALSO_REGISTER_AVX512_DISPATCH(op##_stub, ...)
    STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512(exp)

and ``CREATE_UNARY_TORCH_IMPL_FUNC(exp_out, exp_stub)`` in ``native/UnaryOps.cpp``. Neither
``exp_kernel`` nor ``TORCH_IMPL_FUNC(exp_out)`` appears in the text. For each namespace-level use
of a macro defined in the same file whose body defines something we index (a function body, a
dispatch macro, a TORCH_IMPL_FUNC), we substitute the arguments (``#x`` and ``a##b`` included),
expand nested uses of same-file macros, and parse the result; every fact found is placed on the
line of the use and marked ``via_macro``. Macros from other files are not expanded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from atenmap.extract.linestart import line_matches

# not a query: macro bodies (preprocessor text): tree-sitter sees no body
_INTERESTING = re.compile(
    r"REGISTER_\w*DISPATCH|DEFINE_DISPATCH|DECLARE_DISPATCH|TORCH_IMPL_FUNC|TORCH_META_FUNC|__global__|\)\s*(?:const\s*)?\{"
)
# not a query: macro bodies (preprocessor text); a Python scan of the bodies for their words is 2x slower
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_DEPTH = 4
MAX_EXPANSION = 200_000


@dataclass(frozen=True)
class MacroDef:
    name: str
    params: tuple[str, ...]
    variadic: bool
    body: str
    line: int

    @classmethod
    def from_parts(cls, name: str, params: str, body: str, line: int) -> "MacroDef":
        ps = [p.strip() for p in params.strip()[1:-1].split(",") if p.strip()]
        variadic = bool(ps) and ps[-1].endswith("...")
        if variadic:
            ps[-1] = ps[-1][:-3].strip() or "__VA_ARGS__"
        body = re.sub(r"/\*.*?\*/", " ", body, flags=re.S)
        body = " ".join(_strip_line_comment(ln) for ln in re.split(r"\\\r?\n", body))
        return cls(name, tuple(ps), variadic, body, line)

    @property
    def interesting(self) -> bool:
        return bool(_INTERESTING.search(self.body))


@dataclass(frozen=True)
class MacroUse:
    name: str
    args: tuple[str, ...]
    line: int  # 1-based
    offset: int  # byte offset of the use in the file
    line_start: bool = False  # only spaces and tabs before it on its line (where definitions are made)


# not a query: preprocessor text (#define lines)
_DEFINE_FN = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)


class Defines(dict):
    """name -> MacroDef (the last definition), with every definition kept for ``at(name, line)``:
    ATen redefines the same launch macro several times in one file (#undef between)."""

    def __init__(self):
        super().__init__()
        self.all: dict[str, list[MacroDef]] = {}

    def add(self, d: MacroDef) -> None:
        self[d.name] = d
        self.all.setdefault(d.name, []).append(d)

    def at(self, name: str, line: int) -> MacroDef:
        best = self[name]
        for d in self.all.get(name, ()):
            if d.line <= line:
                best = d
        return best


def read_defines(text: str) -> Defines:
    """Function-like ``#define``s of one file (see Note [Defines are read as text] in blanking.py)."""
    out = Defines()
    line, last = 1, 0
    for m in line_matches(_DEFINE_FN, "#", text):
        line += text.count("\n", last, m.start())  # counted from the last define: linear in the file
        last = m.start()
        params = re.sub(r"\\\r?\n", " ", m.group(2))
        out.add(MacroDef.from_parts(m.group(1), "(" + params + ")", m.group(3), line))
    return out


def define_end(src: bytes, start: int) -> int:
    """Byte offset of the end of the ``#define`` starting at ``start`` (its last continued line)."""
    pos = start
    while True:
        nl = src.find(b"\n", pos)
        if nl < 0:
            return len(src)
        if not src[pos:nl].rstrip(b" \t\r").endswith(b"\\"):
            return nl
        pos = nl + 1


def _strip_line_comment(line: str) -> str:
    """Drop a ``//`` comment, ignoring ``//`` inside string literals."""
    if "//" not in line:
        return line
    in_str = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_str = not in_str
        elif not in_str and line.startswith("//", i):
            return line[:i]
    return line


def _parens(text: str | bytes, start: int, end: int):
    """``(index, is_open)`` of each parenthesis of ``text[start:end]``, in order: two ``find``s step
    from parenthesis to parenthesis (scans in C, not a Python loop over every character)."""
    opening, closing = (b"(", b")") if isinstance(text, (bytes, bytearray)) else ("(", ")")
    open_, close = text.find(opening, start, end), text.find(closing, start, end)
    while open_ >= 0 or close >= 0:
        if open_ >= 0 and (close < 0 or open_ < close):
            yield open_, True
            open_ = text.find(opening, open_ + 1, end)
        else:
            yield close, False
            close = text.find(closing, close + 1, end)


def balanced_paren(text: str | bytes, start: int, limit: int | None = None) -> int:
    """Index just past the ``)`` matching ``text[start] == '('``, or -1 (also when it is not within
    ``limit`` characters). Text or bytes: macro bodies, source files, masked source."""
    end = len(text) if limit is None else min(len(text), start + limit)
    if start < 0:  # no "(" found by the caller: counted from text[-1] as the loop always did
        return _balanced_slow(text, start, end)
    depth = 0
    for at, is_open in _parens(text, start, end):
        if is_open:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at + 1
    return -1


def _balanced_slow(text: str | bytes, start: int, end: int) -> int:
    opening, closing = (0x28, 0x29) if isinstance(text, (bytes, bytearray)) else ("(", ")")
    depth = 0
    for i in range(start, end):
        ch = text[i]
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _balanced(text: str, start: int) -> int:
    return balanced_paren(text, start, MAX_EXPANSION)


class _Closers:
    """``close(start)``: ``_balanced(text, start)`` for the uses of one text. The first uses scan
    from their ``(``; past SCANS of them, every parenthesis of the text is matched once, with a
    stack, and each later use is a lookup (500,000 unclosed ``K(`` on one line: linear, not 10^11
    steps). The matching ``)`` of a ``(`` is the same whether counted from it or from the text's
    start, so both ways answer alike."""

    SCANS = 64

    def __init__(self, text: str):
        self.text = text
        self.scans = 0
        self.table: dict[int, int] | None = None

    def close(self, start: int) -> int:
        if self.table is None:
            if self.scans < self.SCANS:
                self.scans += 1
                return _balanced(self.text, start)
            self.table = {}
            stack: list[int] = []
            for at, is_open in _parens(self.text, 0, len(self.text)):
                if is_open:
                    stack.append(at)
                elif stack:
                    self.table[stack.pop()] = at + 1
        end = self.table.get(start, -1)
        return end if end >= 0 and end - 1 < start + MAX_EXPANSION else -1


def split_args(inner: str, angles: bool = False) -> list[str]:
    """Split at depth-0 commas (``angles``: ``<>`` nest too, as in C++ argument lists of types;
    not for macro arguments, where ``a < b`` is an expression)."""
    opening, closing = ("(<[{", ")>]}") if angles else ("([{", ")]}")
    out, depth, cur = [], 0, []
    for ch in inner:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out if out != [""] else []


def interesting_names(defs: dict[str, MacroDef]) -> set[str]:
    """Macros whose expansion defines something we index, directly or through other macros of
    the file (CREATE_UNARY_UFUNC(abs) -> CREATE_UNARY_UFUNC_OUT(abs) -> Tensor& abs_sparse_csr_out(...) {...})."""
    found = {n for n, d in defs.items() if d.interesting}
    called = {n: set(_CALLED.findall(d.body)) for n, d in defs.items()}  # each body read once
    changed = True
    while changed:
        changed = False
        for n in defs:
            if n not in found and not called[n].isdisjoint(found):
                found.add(n)
                changed = True
    return found


# not a query: macro bodies (preprocessor text)
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")  # a name followed by an argument list


def find_uses(text: str, defs: dict[str, MacroDef], anywhere: bool = False) -> list[MacroUse]:
    """Uses of ``defs`` outside any ``#define``: at the start of a line, for those that define
    something we index (``interesting``); or, with ``anywhere``, every use of any of them. One
    scan, in time linear in the text (lines and byte offsets counted on from the previous use)."""
    names = list(defs) if anywhere else sorted(interesting_names(defs))
    if not names:
        return []
    alt = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    # not a query: macro uses, found before any expansion is parsed
    pat = re.compile(r"\b(" + alt + r")[ \t]*\(" if anywhere else r"^[ \t]*(" + alt + r")[ \t]*\(", re.M)
    uses = []
    ascii_text = text.isascii()
    line, offset, last = 1, 0, 0
    line_start, scanned = 0, 0
    directive_line = (-1, False)  # (line start, whether that line is a directive)
    first_on_line = -1  # the line start of the last use seen: a later use on that line is not first
    closers = _Closers(text)
    for m in pat.finditer(text):
        # Skip uses within a #define (this or an earlier line of it ends in a backslash).
        nl = text.rfind("\n", scanned, m.start())
        line_start, scanned = (nl + 1 if nl >= 0 else line_start), m.start()
        if directive_line[0] != line_start:
            directive_line = (line_start, text[line_start:m.start()].lstrip().startswith("#"))
        if directive_line[1]:
            continue
        prev_end = line_start - 1
        if prev_end > 0 and _ends_in_backslash(text, prev_end):
            continue
        open_paren = m.end() - 1
        close = closers.close(open_paren)
        if close < 0:
            continue
        args = split_args(text[open_paren + 1:close - 1])
        line += text.count("\n", last, m.start(1))
        offset += m.start(1) - last if ascii_text else len(text[last:m.start(1)].encode("utf-8", "replace"))
        last = m.start(1)
        at_start = first_on_line != line_start and not text[line_start:m.start(1)].strip(" \t")
        first_on_line = line_start
        uses.append(MacroUse(m.group(1), tuple(args), line, offset, at_start))
    return uses


def _ends_in_backslash(text: str, end: int) -> bool:
    """Does ``text[:end]`` end in a backslash, spaces, tabs and CRs after it ignored? (Read back
    from ``end``, not by copying the text before it.)"""
    i = end
    while i > 0 and text[i - 1] in " \t\r":
        i -= 1
    return i > 0 and text[i - 1] == "\\"


def substitute(d: MacroDef, args: tuple[str, ...]) -> str:
    values = dict(zip(d.params, args))
    if d.variadic:
        values[d.params[-1]] = ", ".join(args[len(d.params) - 1:])
    body = _stringize(d.body, values)
    body = _IDENT.sub(lambda m: values.get(m.group(0), m.group(0)), body)
    return _paste(body)


def _paste(body: str) -> str:
    """``a ## b`` -> ``ab``: each ``##`` and the blanks around it removed (string code, as the regex
    ``\\s*##\\s*`` it replaced: the same bodies on every macro of both test trees and fuzz,
    bench/regex_equal.py)."""
    if "##" not in body:
        return body
    parts = body.split("##")
    return parts[0].rstrip() + "".join(p.strip() for p in parts[1:-1]) + parts[-1].lstrip()


# Note [The # and ## operators as string code]
# ``#param`` (a ``#`` not after another, blanks, a name) and ``a ## b`` are read by str.find and
# str.split over the macro's body: they replaced regexes of those shapes, with the same bodies on
# every #define of both test trees and fuzz (bench/regex_equal.py).
_NAME_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST = _NAME_FIRST | frozenset("0123456789")


def _stringize(body: str, values: dict[str, str]) -> str:
    """``#param`` -> the argument of ``param`` as a string literal; any other ``#name`` kept."""
    if "#" not in body:
        return body
    pieces, last = [], 0
    at = body.find("#")
    while at >= 0:
        if at > 0 and body[at - 1] == "#":
            at = body.find("#", at + 1)
            continue
        name = at + 1
        while name < len(body) and body[name].isspace():
            name += 1
        end = name
        if end < len(body) and body[end] in _NAME_FIRST:
            end += 1
            while end < len(body) and body[end] in _NAME_REST:
                end += 1
        if end == name:
            at = body.find("#", at + 1)
            continue
        v = values.get(body[name:end])
        if v is not None:
            pieces += [body[last:at], '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"']
            last = end
        at = body.find("#", end)
    return "".join(pieces) + body[last:]


def expand(use: MacroUse, defs: dict[str, MacroDef], depth: int = 0) -> str:
    d = defs.at(use.name, use.line) if isinstance(defs, Defines) else defs[use.name]
    out = substitute(d, use.args)
    if depth >= MAX_DEPTH:
        return out
    # Expand nested uses of same-file macros anywhere in the result.
    pieces, pos = [], 0
    for m in _IDENT.finditer(out):
        if m.start() < pos or m.group(0) not in defs:
            continue
        j = m.end()
        while j < len(out) and out[j] in " \t":
            j += 1
        if j >= len(out) or out[j] != "(":
            continue
        close = _balanced(out, j)
        if close < 0:
            continue
        inner = MacroUse(m.group(0), tuple(split_args(out[j + 1:close - 1])), use.line, use.offset)
        pieces.append(out[pos:m.start()])
        pieces.append(" " + expand(inner, defs, depth + 1) + " ")
        pos = close
    pieces.append(out[pos:])
    result = "".join(pieces)
    return result[:MAX_EXPANSION]
