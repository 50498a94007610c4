"""Backends a selector function picks: which branch on its value a call sits in.

Note [A branch on a selector's value]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen picks a backend with a selector function and then branches on its value, in a ``switch``
(``ConvBackend backend = _select_conv_backend(...); switch (backend) { case ConvBackend::Cudnn: ...``,
Note [Backends a selector returns] in runs.py) or in an ``if`` chain: cuda/Normalization.cu's
``_batch_norm_with_update_cuda`` writes ``BatchNormBackend backend = _select_batch_norm_backend(...);
if (backend == BatchNormBackend::Cudnn) { return at::cudnn_batch_norm(...); } if (backend ==
BatchNormBackend::Miopen) {...} else { ... batch_norm_cuda(...) }``. Each branch is a backend the
kernel hands its work to, not set-up: an operator called there (``at::cudnn_batch_norm``) is kept in
the kernel's chain, though other operator calls of a kernel that reaches device code are dropped (Note
[Operator calls in kernel chains] in chain.py). The branch's place among the values the selector
returns ranks its runs, as a ``case``'s does: for each run, the values its branches allow (``if (b ==
V)`` allows V; ``else of`` it and ``after if (b == V) return`` allow every value but V), and the
first of them in the selector's order is its place. A variable that is a parameter or set from
anything but a call (``activation`` in ``case Activation::GELU``) is no selector's value, and neither
is a mode decoded from an argument: ATen names the enums of its backend choices ``...Backend``
(ConvBackend, BatchNormBackend, SDPBackend, LinalgBackend, BlasBackend), while
``get_reduction_enum(reduce)``'s ReductionType in scatter_reduce is the caller's choice, like a
parameter (its ``if (op == ReductionType::MEAN)`` keeps no ``at::ones_like``). So is a setting read
through a member call: ``auto preferred_backend = at::globalContext().linalgPreferredBackend();`` is
what the user set (``torch.backends.cuda.preferred_linalg_library``), and ``globalContext`` picks
nothing: the call must be the whole value. The selector's definition is the function whose head
names it; a caller that calls it on its first lines (cuda/linalg/BatchLinearAlgebra.cpp's
``_cholesky_solve_helper_cuda``, under an ``#if``) is not it.

Note [What a selector returns a value for]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Which value the selector returns is decided by the branches around its ``return``:
``_select_batch_norm_backend`` returns ``BatchNormBackend::Cudnn`` under ``if (input.is_cuda() &&
input.scalar_type() != at::kBFloat16 && ... )``. For one call's facts (``--dtype bfloat16``) those
branches decide the runs a branch on that value leads to, as the branches on the way do: a bfloat16
batch norm never reaches cuDNN. Read only where the selector returns the value once (several
``return``s would be an "or" of their branches), and only for a call's given facts: the default
ranking keeps the selector's order (Note [A branch on a selector's value]).
"""
from __future__ import annotations

import re

from atenmap.extract.blanking import CODE_NOISE, spaces
from atenmap.resolve.devicecode import open_braces

# ``b == E::V`` (or ``E::V == b``), as an ``if``'s whole condition
_EQUALS = re.compile(r"^\s*(?:(\w+)\s*==\s*(?:[\w:]*::)?(\w+)::(\w+)|(?:[\w:]*::)?(\w+)::(\w+)\s*==\s*(\w+))\s*$")
# what a run's reasons say of an ``if`` on the value (extract/enclosing.py's texts)
_REASON = re.compile(r"^(else of |after )?if \((.*)\)( return)?$", re.S)
# the head of a block, from the end of the previous statement to its ``{``
_IF_HEAD = re.compile(rb"(?:\belse\s+)?\bif\s*\(\s*(.*)\)\s*$", re.S)
_HEAD_CHARS = 400


def equals(condition: str) -> tuple[str, str, str] | None:
    """``(variable, enum, value)`` of a condition that is only ``variable == enum::value``."""
    m = _EQUALS.match(condition)
    if m is None:
        return None
    return (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(6), m.group(4), m.group(5))


def constraint(kind: str, text: str) -> tuple[str, str, str, bool] | None:
    """``(variable, enum, value, allowed)`` a run's reason sets: ``if (b == E::V)`` allows only V
    (True); ``else of if (b == E::V)`` and ``after if (b == E::V) return`` rule V out (False)."""
    if kind not in ("if", "else", "return"):
        return None
    m = _REASON.match(text.strip())
    got = equals(m.group(2)) if m else None
    if got is None:
        return None
    return (*got, not (m.group(1) or m.group(3)))


def earlier_in_chain(function: bytes, variable: str, enum: str, value: str) -> list[str]:
    """The values the ``if``s before ``if (variable == enum::value)`` in its ``else if`` chain test
    (``if (b == E::Cudnn) {...} else if (b == E::Miopen) {...} else {...}``: for Miopen, Cudnn): the
    ``else`` of the last of them rules every one of them out, not only its own."""
    text = CODE_NOISE.sub(spaces, function)
    tests = [(m.start(), m.group(1).decode()) for m in re.finditer(
        rb"\bif\s*\(\s*%s\s*==\s*(?:[\w:]*::)?%s::(\w+)\s*\)" % (re.escape(variable.encode()), re.escape(enum.encode())), text)]
    at = next((i for i, (_, v) in enumerate(tests) if v == value), None)
    out: list[str] = []
    while at is not None and at > 0 and _ELSE_BEFORE.search(text, 0, tests[at][0]):
        at -= 1
        out.append(tests[at][1])
    return out


_ELSE_BEFORE = re.compile(rb"\}\s*else\s*$")


def set_from_call(function: bytes, variable: str, enum: str) -> str | None:
    """The function whose call sets ``variable`` in ``function``'s text (``E variable = f(...)``
    or ``auto variable = f(...)``), unqualified; None when none does, or when ``enum`` names no
    backend (Note [A branch on a selector's value])."""
    if not enum.endswith("Backend"):
        return None
    function = CODE_NOISE.sub(spaces, function)  # a ``)`` in a comment or string is no call's end
    m = re.search(rb"\b(?:%s|auto)\s+%s\s*=\s*([\w:]+)\s*\(" % (re.escape(enum.encode()), re.escape(variable.encode())),
                  function)
    if m is None or not _whole_value(function, m.end() - 1):
        return None
    return m.group(1).decode().rsplit("::", 1)[-1]


def _whole_value(text: bytes, paren: int) -> bool:
    """Whether the call whose ``(`` is at ``paren`` is the whole value (``;`` after its ``)``), not
    the object of a member call: ``auto b = at::globalContext().linalgPreferredBackend();`` is a
    setting the user chose (``linalgPreferredBackend``), not ``globalContext``'s pick."""
    depth = 0
    for i in range(paren, len(text)):
        ch = text[i]
        if ch == 0x28:  # (
            depth += 1
        elif ch == 0x29:  # )
            depth -= 1
            if depth == 0:
                return text[i + 1:].lstrip().startswith(b";")
    return False


def defines(lines, first: int, name: str) -> bool:
    """Whether the function whose text starts at line ``first`` of ``lines`` (bytes, 1-based) is
    ``name``: its head, the text before its body's ``{`` in its first three lines, names it. A
    caller's body that calls it on its first lines (``auto b = name(...)`` under an ``#if``) does not."""
    head = b" ".join(lines[first - 1:first + 2]).split(b"{", 1)[0]
    return bool(re.search(rb"\b%s\s*\(" % re.escape(name.encode()), head))


def returned(body: bytes, enum: str) -> list[str]:
    """The values of ``enum`` in the order a selector's ``body`` first names them."""
    order: list[str] = []
    for v in re.finditer(rb"\b%s::(\w+)" % re.escape(enum.encode()), body):
        if v.group(1).decode() not in order:
            order.append(v.group(1).decode())
    return order


def return_lines(body: bytes, enum: str, value: str) -> list[int]:
    """The 0-based lines of ``body`` (a selector's text) that ``return enum::value;``."""
    text = CODE_NOISE.sub(spaces, body)
    return [text.count(b"\n", 0, m.start()) for m in re.finditer(
        rb"\breturn\s+(?:[\w:]*::)?%s::%s\s*;" % (re.escape(enum.encode()), re.escape(value.encode())), text)]


def place(allowed: dict[str, bool], order: list[str]) -> int:
    """The first value of ``order`` that ``allowed`` (value -> True: only it; False: not it) lets
    through; ``len(order)`` where none is."""
    only = {v for v, ok in allowed.items() if ok}
    for i, v in enumerate(order):
        if (not only or v in only) and allowed.get(v) is not False:
            return i
    return len(order)


def call_in_selected_branch(lines, first: int, line: int) -> bool:
    """Whether a call at ``line`` of a file's ``lines`` (bytes or str, 1-based), in the function that
    starts at ``first``, sits in an ``if (b == E::V)`` block (or its ``else if``) whose ``b`` the
    function sets from a call. See Note [A branch on a selector's value]. False where the lines are
    not all there."""
    if isinstance(lines, dict):
        if not all(n in lines for n in range(first, line + 1)):
            return False
        rows = [lines[n] for n in range(first, line + 1)]
    elif isinstance(lines, list) and 0 < first <= line <= len(lines):
        rows = lines[first - 1:line]
    else:
        return False
    text = CODE_NOISE.sub(spaces, b"\n".join(t if isinstance(t, bytes) else t.encode() for t in rows))
    for i in open_braces(text):
        head = text[max(0, i - _HEAD_CHARS):i]
        head = head[max(head.rfind(b";"), head.rfind(b"{"), head.rfind(b"}")) + 1:]
        m = _IF_HEAD.search(head)
        got = equals(m.group(1).decode("utf-8", "replace")) if m else None
        if got is not None and set_from_call(text, got[0], got[1]) is not None:
            return True
    return False


def quoted_rows(store, root: str) -> list[tuple[str, int, str]]:
    """(path, line, text) the bundle keeps so that its chains keep the operator calls in a
    selector's branches as a tree's do: for each function whose text sets a variable from a call and
    tests it with ``if (b == E::V)``, the lines from its first to each call that
    :func:`call_in_selected_branch` finds there. Read from the tree at ``root`` by the bundle builder."""
    import os

    from atenmap.kinds import FactKind

    out: set[tuple[str, int]] = set()
    texts: dict[str, list[bytes]] = {}
    for path in sorted({r.file for r in store.facts_of_kind(FactKind.FUNCTION) if not os.path.isabs(r.file)}):
        try:
            with open(os.path.join(root, path), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if not _TESTS_A_VALUE.search(data):
            continue
        texts[path] = data.split(b"\n")
    for path, lines in texts.items():
        spans = store.function_spans(path)
        for call in store.in_file(path, (FactKind.CALL,)):
            first = max((a for a, b in spans if a <= call.line <= b), default=0)  # as the chain reads it
            if first and call_in_selected_branch(lines, first, call.line):
                out.update((path, n) for n in range(first, call.line + 1))
    return [(path, n, texts[path][n - 1].decode("utf-8", "replace")) for path, n in sorted(out)]


# a cheap first filter: text that sets an enum-typed variable from a call and tests it for a value
_TESTS_A_VALUE = re.compile(rb"\bif\s*\(\s*\w+\s*==\s*(?:[\w:]*::)?\w+::\w+\s*\)")
