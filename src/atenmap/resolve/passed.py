"""Functions passed by name to a helper that calls its parameter.

Note [Functions passed by name]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
cuDNN's v7 convolution path splits a large batch before calling cuDNN, with the work passed as a
function: ``split_batch_dim_to_32bit_out(output, input, weight, ..., 1024 * 1024 * 256,
raw_cudnn_convolution_forward_out_32bit)`` (cudnn/Conv_v7.cpp), whose body calls its parameter
``func_32bit(...)`` (cudnn/ConvShared.cpp); ``raw_cudnn_convolution_forward_out_32bit`` is what calls
``cudnnConvolutionForward``. The index has a call fact for the helper, none for the function named
in its arguments, and none resolvable for ``func_32bit``. So when a helper the chain explored
is followed and its body calls one of its own parameters (a plain name that is in its
signature's text and names no function), the call's argument text is read from the source and
each argument that is a function's name is followed as if the helper called it. Text is read only
for helpers that call a plain name no definition has (a helper that calls none costs nothing). The
bundled index holds no source text: its builder quotes the signatures of such helpers and their
call sites (:func:`quoted_rows`, in ``quoted_lines``), so it follows the same functions.

What a helper calls and what a call site passes depend only on the index and the tree it was built
from, so both answers are kept per open index (:class:`Decisions`; Note [Answers kept per open
index] in memo.py): the second chain through a helper asks nothing and reads no file.
"""
from __future__ import annotations

import os
import re

from atenmap.extract.macros import split_args

__all__ = ["NOT_PARAMETERS", "Decisions", "Texts", "decisions", "may_be_parameter", "argument_names", "called_parameters", "quoted_rows", "span_lines"]

_IDENT = re.compile(r"&?\s*((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*$")
# ``static_cast<OutFunc>(at::logical_and_out)``: a name passed through a cast (BinaryOps.cpp picks one
# overload of an operator's out function so)
_CAST = re.compile(r"static_cast\s*<[^<>()]*(?:<[^<>()]*>[^<>()]*)*>\s*\((.*)\)", re.S)
# plain names called everywhere that are never a parameter (casts, std functions used unqualified)
NOT_PARAMETERS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "max", "min", "abs",
                            "move", "forward", "get", "swap", "sizeof", "decltype", "make_tuple", "make_pair",
                            "tie", "begin", "end", "size", "data", "ceil_div", "div_up"})
MAX_LINES = 40  # a signature or a call spread over more lines is not read


class Decisions:
    """One open index's answers for Note [Functions passed by name]: ``helpers`` (a function's id ->
    whether it calls one of its parameters) and ``passed`` ((file, line, callee) of a call site -> the
    names in its arguments); ``parameters`` (Note [A parameter named like a stub] in chain.py)."""

    def __init__(self) -> None:
        self.helpers: dict[int, bool] = {}
        self.passed: dict[tuple[str, int, str], list[str]] = {}
        self.parameters: dict[tuple[int, str], bool] = {}  # (function id, name): whether it is a parameter


class Texts:
    """Lines of the tree's files, each file read once (None: unreadable or no tree). With
    ``quoted`` (the bundled index's ``Store.quoted_lines``) only the lines the bundle quotes."""

    def __init__(self, root: str | None, quoted=None):
        self.root = root if root and os.path.isdir(root) else None
        self.quoted = quoted
        self.files: dict[str, list[bytes] | dict[int, str] | None] = {}

    def lines(self, path: str) -> list[bytes] | dict[int, str] | None:
        if path not in self.files:
            if self.quoted is not None:
                self.files[path] = self.quoted(path) or None
                return self.files[path]
            full = path if os.path.isabs(path) else (os.path.join(self.root, path) if self.root else None)
            try:
                with open(full, "rb") as fh:  # type: ignore[arg-type]
                    self.files[path] = fh.read().split(b"\n")  # decoded line by line where read
            except (OSError, TypeError):
                self.files[path] = None
        return self.files[path]

    def span(self, path: str, line: int, stop: str) -> str:
        """The text from ``line`` up to the first ``stop`` character at parenthesis depth 0 after
        the first ``(`` (a signature's ``{``, a call's ``;``), at most MAX_LINES lines."""
        lines = self.lines(path)
        return _span(lines, line, stop) if lines else ""


def _span(lines: list[str] | list[bytes] | dict[int, str], line: int, stop: str) -> str:
    out, depth, opened = [], 0, False
    for n in range(line, line + MAX_LINES):
        text = lines.get(n) if isinstance(lines, dict) else (lines[n - 1] if 0 < n <= len(lines) else None)
        if text is None:
            return ""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for i, ch in enumerate(text):
            if ch == "(":
                depth, opened = depth + 1, True
            elif ch == ")":
                depth -= 1
            elif ch in stop and depth == 0 and opened:
                out.append(text[:i])
                return "\n".join(out)
        out.append(text)
    return ""


def span_lines(lines: list[str], line: int, stop: str) -> list[int]:
    """The line numbers :meth:`Texts.span` reads from ``line`` (what the bundle quotes for it)."""
    got = _span(lines, line, stop)
    return list(range(line, line + got.count("\n") + 1)) if got else []


def quoted_rows(store, root: str) -> list[tuple[str, int, str]]:
    """(path, line, text) the bundle keeps for Note [Functions passed by name]: the signature of each
    function that calls a plain name no definition has and that its parameters hold, and the call
    sites of each such function. Read from the tree at ``root`` by the bundle builder."""
    defined = store.function_and_class_names()
    called: dict[int, list[str]] = {}
    for scope, name in store.plain_calls_in_scopes():
        if may_be_parameter(name) and name not in defined:
            called.setdefault(scope, []).append(name)
    files: dict[str, list[str] | None] = {}

    def read(path: str) -> list[str] | None:
        if path not in files:
            full = path if os.path.isabs(path) else os.path.join(root, path)
            try:
                with open(full, encoding="utf-8", errors="replace") as fh:
                    files[path] = fh.read().split("\n")
            except OSError:
                files[path] = None
        return files[path]

    rows: set[tuple[str, int]] = set()
    helpers: set[str] = set()
    for fid, name, path, line in store.function_places():
        if fid not in called or (lines := read(path)) is None:
            continue
        sig = span_lines(lines, line, "{;")
        if sig and called_parameters("\n".join(lines[n - 1] for n in sig), called[fid]):
            rows.update((path, n) for n in sig)
            helpers.add(name)
    for name, path, line in store.call_places():
        if name in helpers and (lines := read(path)) is not None:
            rows.update((path, n) for n in span_lines(lines, line, ";"))
    return [(path, n, files[path][n - 1]) for path, n in sorted(rows)]  # type: ignore[index]


def may_be_parameter(name: str) -> bool:
    """Whether a plain called name can be a parameter: lower case, with digits and underscores
    (``func_32bit``, ``fn``), not a macro (``TORCH_CHECK``), a vendor API (``cudaMemcpyAsync``) or a
    name of :data:`NOT_PARAMETERS`."""
    return name.isidentifier() and name.islower() and name not in NOT_PARAMETERS


def called_parameters(signature: str, called: list[str]) -> list[str]:
    """The names of ``called`` (plain names the function calls, none a known function) that its
    signature's parameter list holds."""
    params = signature.partition("(")[2]
    return [n for n in called if re.search(rf"\b{re.escape(n)}\b", params)]


def declares_parameter(signature: str, name: str) -> bool:
    """Whether ``signature`` (a definition's text up to its body) declares a parameter ``name``
    after a type (``FillStub& fill_stub``, ``Stub stub = x``), not merely names it: a macro-made
    definition's line (``CREATE_UNARY_TORCH_IMPL_FUNC(sqrt_out, sqrt_stub)``) passes the stub."""
    params = signature.partition("(")[2]
    n = re.escape(name)
    return re.search(rf"[\w>]\s*[&*]+\s*{n}\s*[,)=\[]|[\w>]\s+{n}\s*[,)=\[]", params) is not None


def argument_names(call_text: str, callee: str) -> list[str]:
    """The arguments of the call to ``callee`` in ``call_text`` that are plain (maybe qualified,
    maybe ``&``-taken) names: the candidates for functions passed by name."""
    m = re.search(rf"\b{re.escape(callee)}\s*(?:<[^;(]*>)?\s*\(", call_text)
    if m is None:
        return []
    inner, depth = [], 1
    for ch in call_text[m.end():]:
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            break
        inner.append(ch)
    out = []
    for a in split_args("".join(inner)):
        cast = _CAST.fullmatch(a.strip())
        got = _IDENT.fullmatch((cast.group(1) if cast else a).strip())
        if got and not got.group(1)[:1].isdigit():
            out.append(got.group(1))
    return out
