"""Kernels a launch gets through a callback's parameter (Note [Kernels passed to a callback]).

Text readers over a file's lines, for resolve/chain.py: which lambda parameter a launch uses, which
calls pass that lambda on, and which kernels the callee's body hands the callback.

Note [Kernels passed to a callback]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Memory-efficient attention launches ``kernel_fn<<<...>>>(p)`` (attention.cu, attention_backward.cu)
inside a lambda, ``auto launchKernel = [&](auto _k, auto kernel_fn) {...}``, that it passes to a
dispatcher, ``dispatch_cutlassF<scalar_t>(launchKernel, computeCapability)``. The dispatcher
(mem_eff_attention/kernels/cutlassF.h, a file PyTorch generates once and keeps in the tree) picks a
table by dtype and compute capability, ``if (std::is_same_v<DT, float> && 80 <= cc && cc < 100)
dispatch_cutlassF_f32_sm80(cb, cc);``, and the table calls the callback once per kernel,
``cb(AttentionKernel<...>(), fmha_cutlassF_f32_aligned_64x64_rf_sm80);``. The lambda returns at once
after the first kernel that fits has launched. So the kernels that launch line can run are the
``__global__`` functions handed to the callback at the lambda parameter's place, through the
dispatcher's calls that pass the callback on; they are what the profiler names
(``fmha_cutlassF_f32_aligned_64x64_rf_sm80``), not ``kernel_fn``.
Their order: the table a float32 call on a current GPU takes first (the default call: Note [A call
with the defaults] in runs.py), the branch naming ``float`` with the highest compute-capability floor
(``80 <= cc``), then the other dtypes (half, then bfloat16) newest architecture first, then the
rest; within a table, the order of its ``cb(...)`` calls (the first that fits runs). Read as text:
the lambda's head, the calls that name it, the callee's ``if (...)`` lines and ``cb(...)`` calls.
One walk (:func:`kernels_handed`) serves the chain (resolve/chain.py: under the ``kernel_fn`` launch
step, a launch step per kernel at the same line; the runs block lists those), the
reverse lookup (resolve/kernels.py: the launch a handed kernel has, so ``atenmap kernel
fmha_cutlassF_...`` finds ``_efficient_attention_forward``) and the bundle builder (the lines it
reads are quoted, so the bundled index answers the same). The ``kernel_fn`` step stays, so that an
answer that cannot read the dispatcher (a preview) shows the launch line and no wrong kernel
(Note [A preview never shows a wrong step] in preview.py).
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Callable, NamedTuple

from atenmap.extract import macros
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.store import FactRow

MAX_DEPTH = 3  # dispatcher -> table -> cb(...) calls, with one level to spare
MAX_LAMBDA_LINES = 400  # how far above the launch the lambda's head may be
MAX_HEAD_LINES = 8  # a function's head (its parameter list) within its first lines

_LAMBDA_HEAD = re.compile(r"\b(\w+)\s*=\s*\[[^\]]*\]\s*\(([^()]*)\)")
_CALL = re.compile(r"\b(\w+)\s*(?:<[^<>;]*>)?\s*\(")  # a call's name, maybe with template arguments
_IF = re.compile(r"^(?:else\s+)?if\s*\(")  # `if (`, `else if (` (after any leading `}`)
_CC_FLOOR = re.compile(r"\b(\d+)\s*<=\s*\w+|\b\w+\s*>=\s*(\d+)")  # `80 <= cc` or `cc >= 80`
# the dtypes a branch may name, in the order the default call (float32) and then --dtype's common
# choices rank them
_DTYPE_WORDS = (("float", r"\bfloat\b"), ("half", r"\bhalf_t\b|\bHalf\b|\bhalf\b"),
                ("bfloat16", r"\bbfloat16_t\b|\bBFloat16\b"))


def _text(line: bytes | str) -> str:
    return line.decode("utf-8", "replace") if isinstance(line, bytes) else line


def _at(lines, n: int) -> str:
    """Line ``n`` (1-based) of a file's lines (a list) or of what the bundle quotes of it (a dict:
    a line it does not quote reads as blank)."""
    if isinstance(lines, dict):
        return lines.get(n, "")
    return _text(lines[n - 1]) if 0 < n <= len(lines) else ""


def _last(lines) -> int:
    return max(lines, default=0) if isinstance(lines, dict) else len(lines)


def parameter_names(params: str) -> list[str]:
    """``auto _k, auto kernel_fn`` -> ``["_k", "kernel_fn"]``; ``T cb, int cc = 0`` -> ``["cb", "cc"]``."""
    out = []
    for p in macros.split_args(params):
        p = p.split("=", 1)[0].strip()
        m = re.search(r"(\w+)\s*(?:\[\s*\])?$", p)
        out.append(m.group(1) if m else "")
    return out


def lambda_of(lines: list, launch_line: int, name: str) -> tuple[str, int, int] | None:
    """(the lambda's variable, ``name``'s place among its parameters, the head's line) of the
    nearest lambda around ``launch_line`` (1-based) that takes a parameter ``name``: its head (on one
    line, or split over two) at most MAX_LAMBDA_LINES above, its body still open at the launch; None
    when there is none."""
    for n in range(launch_line, max(0, launch_line - MAX_LAMBDA_LINES), -1):
        m = _LAMBDA_HEAD.search(_at(lines, n)) or _LAMBDA_HEAD.search(_at(lines, n) + " " + _at(lines, n + 1))
        if m is None:
            continue
        params = parameter_names(m.group(2))
        # a lambda nested in it (attention_backward.cu's checkBinaryArchMatches) is passed over, and so
        # is one that takes the name but closed before the launch
        if name in params and _still_open(lines, n, launch_line):
            return m.group(1), params.index(name), n
    return None


def _still_open(lines, first: int, last: int) -> bool:
    """Whether a ``{`` opened on lines ``first``..``last`` (the lambda's body) is still open at the
    start of line ``last`` (the launch)."""
    depth = 0
    for n in range(first, last):
        text = _at(lines, n)
        depth += text.count("{") - text.count("}")
    return depth > 0 or first == last


def calls_passing(lines: list, first: int, var: str) -> list[tuple[str, int, int]]:
    """(callee, the place ``var`` takes among its arguments, line) of each call from line ``first``
    to the end of the function around it (the first ``}`` at the start of a line) whose arguments
    include ``var`` itself."""
    out = []
    for n in range(first, _last(lines) + 1):
        text = _at(lines, n)
        if text.startswith("}"):
            break  # the function that defines the lambda ends: a later one's lambda of the same name is another
        if var not in text:
            continue
        for m in _CALL.finditer(text):
            end = macros.balanced_paren(text, m.end() - 1)
            if end < 0:
                continue
            args = [a.strip() for a in macros.split_args(text[m.end():end - 1])]
            if var in args:
                out.append((m.group(1), args.index(var), n))
    return out


def handed(body: list, first: int, param: str, index: int) -> list[tuple[str, int, str, str]]:
    """In a function's ``body`` lines (its first line is ``first``), whose parameter ``param`` is the
    callback: (what it is handed at ``index`` by each ``param(...)`` call, the call's line, the
    conditions of the ``if``s around it joined by ``&&``, "") and (callee, line, conditions,
    "pass:K") for each call that passes ``param`` on as its K-th argument (the callee's parameter is
    then the callback). An ``if``'s condition holds over its braced block, or over the rest of its
    line when it has none; ``else if`` replaces the condition of the ``if`` before it."""
    out = []
    blocks: list[tuple[int, str]] = []  # (brace depth inside the block, its condition)
    depth = 0
    for i in range(len(body)):
        text = _at(body, i + 1).lstrip()
        while text.startswith("}"):  # a block closes first (`} else if (...) {`, `} else {`)
            depth -= 1
            while blocks and blocks[-1][0] > depth:
                blocks.pop()
            text = text[1:].lstrip()
        own = ""  # the condition of an `if` without braces on this line
        rest = text
        if (m := _IF.match(text)) is not None:
            end = macros.balanced_paren(text, m.end() - 1)
            if end > 0:
                cond, rest = text[m.end():end - 1].strip(), text[end:]
                if rest.lstrip().startswith("{"):
                    depth += 1
                    blocks.append((depth, cond))
                    rest = rest.lstrip()[1:]
                else:
                    own = cond
        conds = [c for _d, c in blocks] + ([own] if own else [])
        where = " && ".join(f"({c})" if len(conds) > 1 else c for c in conds)
        for c in _CALL.finditer(rest):
            end = macros.balanced_paren(rest, c.end() - 1)
            if end < 0:
                continue
            args = [a.strip() for a in macros.split_args(rest[c.end():end - 1], angles=True)]  # cb(Kernel<a, b>(), fn)
            if c.group(1) == param and len(args) > index:
                out.append((args[index], first + i, where, ""))
            elif param in args:
                out.append((c.group(1), first + i, where, f"pass:{args.index(param)}"))
        depth += rest.count("{") - rest.count("}")
        while blocks and blocks[-1][0] > depth:
            blocks.pop()
    return out


class Handed(NamedTuple):
    """A kernel handed to the callback: its __global__ fact, where it is handed, the function that
    hands it, the dispatcher's branch around that."""
    kernel: "FactRow"
    file: str
    line: int
    by: str
    branch: str


def kernels_handed(lines_of: Callable, launch, functions: Callable, kernel: Callable,
                   read: Callable | None = None) -> list[Handed] | None:
    """The kernels the launch fact ``launch`` of a lambda's parameter can run, in Note [Kernels
    passed to a callback]'s order; ``[]`` when the launch is no lambda's parameter passed on; None
    when it is, but no kernel was found because a function it is passed to or a name the callback
    is handed has no definition here (a preview that has not read them: the launch's kernels are
    unknown, and ``kernel_fn`` is not one of them). ``lines_of(path)``: a file's lines
    (list) or quoted lines (dict), or None; ``functions(name, near)``: the function facts a call of
    ``name`` made in the fact ``near`` reaches; ``kernel(name, near)``: the __global__ fact of
    ``name``, or None; ``read(path, first, last)``: told each span of lines read (what the bundle
    must quote)."""
    lines = lines_of(launch.file)
    got = lambda_of(lines, launch.line, launch.name) if lines else None
    if got is None:
        return []
    var, index, head = got
    if read is not None:
        read(launch.file, head, launch.line)
    found: list[tuple[tuple, Handed]] = []
    seen: set[tuple[str, int]] = set()
    unknown = False  # a function or kernel looked up and not found

    def walk(d, place: int, rank: tuple, depth: int, branch: str) -> None:
        if (d.file, d.line) in seen or depth > MAX_DEPTH:
            return
        seen.add((d.file, d.line))
        body = lines_of(d.file)
        if not body:
            return
        if read is not None:
            read(d.file, d.line, d.end_line)
        text = [_at(body, n) for n in range(d.line, d.end_line + 1)]
        head_text = "\n".join(text[:MAX_HEAD_LINES])
        opened = head_text.find("(")
        closed = macros.balanced_paren(head_text, opened) if opened >= 0 else -1
        params = parameter_names(head_text[opened + 1:closed - 1]) if closed > 0 else []
        if place >= len(params) or not params[place]:
            return
        nonlocal unknown
        for name, line, cond, how in handed(text, d.line, params[place], index):
            here = min(rank, table_rank(cond)) if cond else rank
            if how:
                callees = functions(name, d)
                unknown = unknown or not callees
                for d2 in callees:
                    walk(d2, int(how.split(":")[1]), here, depth + 1, cond or branch)
            elif (k := kernel(name, d)) is not None:
                found.append(((here, len(found)), Handed(k, d.file, line, d.name, cond or branch)))
            else:
                unknown = True

    for callee, place, line in calls_passing(lines, head + 1, var):
        if read is not None:
            read(launch.file, line, line)
        callees = functions(callee, launch)
        unknown = unknown or not callees
        for d in callees:
            walk(d, place, (len(_DTYPE_WORDS) + 1, 0), 1, "")
    if unknown and not found:
        return None
    return [h for _rank, h in sorted(found, key=lambda v: v[0])]


def launch_detail(h: Handed) -> str:
    """The detail of the launch step of the kernel ``h`` (:func:`table_type` reads its branch)."""
    k = h.kernel
    return (f"kernel launch; __global__ {k.name} at {k.file}:{k.line}; the kernel {h.by} {_HANDS} {h.file}:{h.line}"
            + (f"; under if ({h.branch})" if h.branch else ""))


_HANDS = "hands the callback at"
_IS_SAME = re.compile(r"\bis_same(?:_v)?\s*<\s*\w+\s*,\s*((?:[^<>]|<[^<>]*>)+?)\s*>")


def table_type(detail: str) -> str | None:
    """The C++ type the dispatcher's branch names for a launch step :func:`launch_detail` wrote
    (``cutlass::half_t``), or None: the runs block ranks the table by it as by a dtype."""
    if _HANDS not in detail:
        return None
    m = _IS_SAME.search(detail.partition("; under if (")[2])
    return m.group(1).strip() if m else None


def table_rank(cond: str) -> tuple[int, int]:
    """The order a dispatcher's branch ranks in (Note [Kernels passed to a callback]): the default
    call's float first, then half and bfloat16, the highest compute-capability floor first."""
    dtype = next((i for i, (_n, pat) in enumerate(_DTYPE_WORDS) if re.search(pat, cond)), len(_DTYPE_WORDS))
    floors = [int(a or b) for a, b in _CC_FLOOR.findall(cond)]
    return dtype, -(max(floors) if floors else 0)




def quoted_rows(store, root: str) -> list[tuple[str, int, str]]:
    """(path, line, text) the bundle keeps so that its chains name the kernels handed to a callback
    as a tree's do: for each launch of a name no __global__ has, the lines :func:`kernels_handed`
    reads (the lambda's head to the launch, the calls that pass it on, the dispatchers' and
    tables' bodies). Read from the tree at ``root`` by the bundle builder."""
    files: dict[str, list[str] | None] = {}

    def lines_of(path: str):
        if path not in files:
            try:
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                    files[path] = fh.read().split("\n")
            except OSError:
                files[path] = None
        return files[path]

    rows: set[tuple[str, int]] = set()
    for launch in store.facts_of_kind(FactKind.LAUNCH):
        if not launch.name.isidentifier() or store.has_name(launch.name, (FactKind.GLOBAL,)):
            continue
        kernels_handed(lines_of, launch, lambda name, _near: store.by_name(name, (FactKind.FUNCTION,)),
                       lambda name, _near: next(iter(store.by_name(name, (FactKind.GLOBAL,))), None),
                       lambda path, first, last: rows.update((path, n) for n in range(first, last + 1)))
    return [(path, n, files[path][n - 1]) for path, n in sorted(rows)  # type: ignore[index]
            if files.get(path) and n <= len(files[path])]


__all__ = ["MAX_DEPTH", "Handed", "calls_passing", "handed", "kernels_handed", "lambda_of", "launch_detail",
           "parameter_names", "quoted_rows", "table_rank", "table_type"]
