"""Whether a copy on a chain's way copies a view whose strides are not a fresh tensor's.

Note [A copy of a view is strided]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The default call's tensors are fresh and contiguous (Note [Deciding a branch] in decide.py), but an
operator can make a view of them and copy it: torchgen's view-copy kernels
(CompositeViewCopyKernels.cpp) are ``auto output = at::_ops::expand::call(self, ...); return
output.clone(...)``, and ``diag_embed`` copies into a diagonal of its result
(``result.diagonal(...).copy_(self)``). A view that changes strides (expand's zero strides,
permute's order, diagonal's step) is not contiguous, so
the copy's TensorIterator is not either: copy_'s ``memcpy_eligible`` (which needs
``iter.is_contiguous()``) is false and gpu_kernel takes its strided ``elementwise_kernel``, not the
vectorized one. Below such a copy the default call's ``is_contiguous()`` is false.

What counts, read from the function that makes the copy:
- the copy is an operator call to clone, contiguous, copy_, _to_copy, to or reshape (the last when
  its input is not viewable: a copy);
- the tensor it copies (its receiver; for ``copy_`` the receiver or the source; for ``at::clone(x)``
  the first argument) is written at the call as a view call (``self.permute(...).clone()``) or is a
  variable set in that function from one (``auto output = at::_ops::expand::call(...)``): its one
  assignment, or its last when that one is in the function's body, not in a branch
  (repeat_interleave's ``input = input.expand_symint(...)`` after ``input = input.unsqueeze(...)``);
- the view is a view operator (its schema returns ``Tensor(a)``, an alias of an input) that does not
  keep a fresh tensor's layout (:data:`KEEPS_LAYOUT`: view, reshape, unsqueeze, flatten, ...). A
  part of a tensor (narrow, slice, select, split) is contiguous when taken along the leading
  dimension, which the call's arguments decide: it counts as keeping the layout (slice_scatter's
  OpInfo samples slice rows and run a memcpy; narrow_copy's narrow a column and run the strided loop).
"""
from __future__ import annotations

import re
from typing import Union

from atenmap.extract import macros
from atenmap.model import Step

# operators that copy the tensor they are given (base names, trailing ``_`` kept for copy_)
COPIERS = frozenset({"clone", "contiguous", "copy_", "_to_copy", "to", "reshape"})
# views that keep a fresh (contiguous) tensor contiguous: only the sizes change, or nothing does
KEEPS_LAYOUT = frozenset({
    "view", "reshape", "_reshape_alias", "_unsafe_view", "alias", "unsqueeze", "squeeze", "flatten",
    "unflatten", "view_as", "reshape_as", "detach", "lift_fresh", "view_as_real", "view_as_complex",
    "_conj", "_neg_view", "conj", "resolve_conj", "resolve_neg", "real", "ravel", "positive",
    # an alias only when nothing changes, else a fresh (contiguous) copy
    "contiguous", "to", "coalesce", "pin_memory", "_autocast_to_full_precision", "_autocast_to_reduced_precision",
    # a part of a tensor: contiguous when taken along the leading dimension (a slice of rows), which
    # the call's arguments decide and the default call does not say
    "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "tensor_split", "hsplit",
    "vsplit", "dsplit", "as_strided", "values", "indices", "_values", "_indices",
    # the same tensor under other names or autograd's views of it
    "rename", "refine_names", "align_to", "_fw_primal", "_make_dual", "_unpack_dual",
})
_OP_OF = re.compile(r"aten::(\w+)")
_OPS_CALL = re.compile(r"_ops::(\w+)::call\s*$")
_LAST_CALL = re.compile(r"(\w+)\s*(?:<[^<>()]*>)?\s*$")


def returns_alias(schema: str) -> bool:
    """A view operator's schema: it returns an alias of an input (``-> Tensor(a)``, not ``Tensor(a!)``)."""
    ret = schema.rpartition(") ->")[2]
    return "Tensor(a)" in ret or "Tensor(a -> *)" in ret


def strided_views(operators) -> frozenset[str]:
    """The base names of the view operators among ``operators`` that change a fresh tensor's strides."""
    return frozenset(op.name.name for op in operators if returns_alias(op.schema)) - KEEPS_LAYOUT


def strided_views_of_records(records) -> frozenset[str]:
    """:func:`strided_views` from the index's operator records (``Store.operator_records``)."""
    return frozenset(r["name"].split(".", 1)[0] for r in records if returns_alias(r["schema"])) - KEEPS_LAYOUT


def copied(call: Step) -> str | None:
    """The copier an op_call step calls (``copy_``, ``clone``), or None."""
    m = _OP_OF.match(call.symbol)
    return m.group(1) if m and m.group(1) in COPIERS else None


def copies_view(copier: str, statement: str, function: str, views: frozenset[str]) -> bool:
    """Whether ``statement`` (the text from the copy's line on) copies one of ``views``, directly or
    through a variable set in ``function`` (the text of the function before that line)."""
    for source in _copied_expressions(copier, statement):
        name = _outer_call(source)
        if name is None and re.fullmatch(r"\w+", source):
            name = _set_from(source, function)
        if name is not None and name.removesuffix("_symint") in views:
            return True
    return False


def _copied_expressions(copier: str, statement: str) -> list[str]:
    """The expressions ``statement``'s call of ``copier`` copies: its receiver, and for ``copy_`` its
    first argument, or for ``at::copier(x, ...)`` ``x``."""
    out = []
    m = re.search(r"\.\s*%s\s*\(" % re.escape(copier), statement)
    if m is not None:
        out.append(_receiver(statement[:m.start()]))
        if copier == "copy_":
            args = _first_argument(statement, m.end() - 1)
            if args:
                out.append(args)
        return [e for e in out if e]
    m = re.search(r"\bat::(?:_ops::%s::call|%s)\s*\(" % (re.escape(copier), re.escape(copier)), statement)
    if m is not None:
        first = _first_argument(statement, m.end() - 1)
        if first:
            out.append(first)
    return out


def _receiver(before: str) -> str:
    """The expression just before a ``.method(`` call: a name, or a chain of calls ending there."""
    text = before.rstrip()
    start = len(text)
    while start > 0:
        ch = text[start - 1]
        if ch == ")":
            depth, j = 0, start - 1
            while j >= 0:
                depth += {")": 1, "(": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j -= 1
            if j < 0:
                return ""
            start = j
        elif ch.isalnum() or ch in "_:.":
            start -= 1
        else:
            break
    return text[start:].strip()


def _first_argument(text: str, open_paren: int) -> str:
    end = macros.balanced_paren(text, open_paren)
    if end < 0:
        return ""
    args = macros.split_args(text[open_paren + 1:end - 1])
    return "".join(args[0].split()) if args and args[0].strip() else ""


def _outer_call(expression: str) -> str | None:
    """The name of the call that gives ``expression`` its value: ``self.narrow(0, a, b)`` ->
    ``narrow``, ``at::_ops::expand::call(self, s)`` -> ``expand``; None for a plain name."""
    flat = _flatten(expression)
    if not flat.endswith("()"):
        return None
    head = flat[:-2]
    m = _OPS_CALL.search(head)
    if m:
        return m.group(1)
    m = _LAST_CALL.search(head)
    return m.group(1) if m else None


def _flatten(expression: str) -> str:
    """``expression`` with every parenthesised argument list emptied."""
    out, depth = [], 0
    for ch in expression:
        if ch == "(":
            if depth == 0:
                out.append("(")
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                out.append(")")
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


def _assignments(name: str, function: str) -> list[re.Match]:
    return list(re.finditer(r"(?<![\w.>])%s\s*=(?!=)\s*([^;]+);" % re.escape(name), function))


def _last_set(name: str, function: str) -> re.Match | None:
    """The assignment that gives a variable its value at the end of ``function`` (the text of a
    function up to a call): its one assignment, or the last one when that one sits in the body
    itself, not in a branch (``input = input.unsqueeze(d); input = input.expand(s);``, repeat_interleave)."""
    sets = _assignments(name, function)
    if len(sets) == 1:
        return sets[0]
    if not sets:
        return None
    before = _LITERALS.sub('""', function[:sets[-1].start()])  # a "{" in a message is no block
    if before.count("{") - before.count("}") != 1:
        return None
    head = before.rstrip()
    if head.endswith(")") or re.search(r"\b(?:else|do)$", head):
        return None  # the body of an unbraced if, loop or else: not every path assigns it
    return sets[-1]


_LITERALS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


def _set_from(name: str, function: str) -> str | None:
    """The call a variable is set from (:func:`_last_set`)."""
    last = _last_set(name, function)
    return _outer_call(last.group(1).strip()) if last is not None else None


# Note [Broadcast operands are strided]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``outer`` is ``self.reshape({self.size(0), 1}) * vec2``: a column times a row. An operand of an
# arithmetic or comparison operator written on tensors (Note [Operators written on tensors] in
# extract/operators.py: elementwise, so its operands broadcast) that is given a dimension of size 1
# in the statement (``reshape``/``view`` to a shape with a literal 1, ``unsqueeze``) is broadcast
# against the other, and a broadcast operand has a zero stride, so the operator's TensorIterator is
# not contiguous: gpu_kernel takes its strided ``elementwise_kernel``, as below a copy of a strided
# view. Other operator calls (``at::bmm(a.unsqueeze(0), b)``, ``at::cat``) do not broadcast so, and
# are not read. A broadcast made where the iterator is built (addr's ``build_addr_iter``) or by the
# shapes of the user's tensors is not seen (``--shape`` describes the latter).
_SIZE_ONE = re.compile(r"\.(?:unsqueeze(?:_symint)?\s*\(|(?:reshape|view)(?:_symint)?\s*\(\s*\{(?:[^{}]*,\s*)?1\s*[,}])")


def broadcasts(statement: str) -> bool:
    """Whether ``statement`` gives an operand a dimension of size 1 (Note [Broadcast operands are strided])."""
    return bool(_SIZE_ONE.search(statement))


# Note [An iterator built on broadcast inputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The same holds where the TensorIterator itself is built from operands given a size-1 dimension:
# group_norm's GroupNorm1dForward adds ``mean.view({N, G, 1})`` and ``gamma.view({1, G, D})`` as
# inputs of the iterator its gpu_kernel runs, and addr's native function passes its stub an iterator
# that ``build_addr_iter`` (a helper of the same file) builds with ``vec1.reshape({vec1_size0, 1})``.
# Those inputs broadcast (zero strides), so the iterator is not contiguous and gpu_kernel runs its
# strided ``elementwise_kernel`` (the GPU oracle: addr and group_norm ran only that one). Read at a
# call on the way (a stub call, gpu_kernel's call): a variable the call's statement names was last
# set in the function before it by a statement that builds an iterator
# (``TensorIteratorConfig()...build()``) with such an input (``.add_input``, ``.add_const_input``,
# ``.add_owned_input``, ``.add_owned_const_input``), or by a call of a function of the same file whose
# body builds one.
_ITERATOR_INPUT = re.compile(r"\.add_(?:owned_)?(?:const_)?input\s*\(")
_SET_FROM = re.compile(r"(?:^|[;{}\s])(?:auto|TensorIterator|at::TensorIterator)?\s*&?\s*(\w+)\s*=(?!=)\s*([^;]*);", re.S)
_CALLEE = re.compile(r"^\s*(?:[\w:]+::)?(\w+)\s*(?:<[^<>()]*>)?\s*\(")


def builds_broadcast_iterator(text: str) -> bool:
    """Whether ``text`` adds an input given a size-1 dimension to a TensorIterator."""
    for m in _ITERATOR_INPUT.finditer(text):
        end = macros.balanced_paren(text, m.end() - 1)
        if end > 0 and broadcasts(text[m.end() - 1:end]):
            return True
    return False


def iterator_broadcasts(statement: str, function: str, helper_text) -> bool:
    """Whether the call in ``statement`` is given an iterator built on broadcast inputs (Note [An
    iterator built on broadcast inputs]); ``function``: the function's text before the call;
    ``helper_text(name)``: the body of the same file's function ``name``, or None."""
    names = set(re.findall(r"\b([A-Za-z_]\w*)\b", statement.split(";", 1)[0]))  # the call's statement only
    last: dict[str, str] = {}
    for m in _SET_FROM.finditer(function):
        if m.group(1) in names:
            last[m.group(1)] = m.group(2)
    for value in last.values():
        if "TensorIteratorConfig" in value:
            if builds_broadcast_iterator(value):
                return True
            continue
        callee = _CALLEE.match(value)
        if callee is not None:
            body = helper_text(callee.group(1))
            if body and "TensorIteratorConfig" in body and builds_broadcast_iterator(body):
                return True
    return False


# Note [Views that copy]
# ~~~~~~~~~~~~~~~~~~~~~~
# ``contiguous``, ``reshape`` and ``to`` return their input itself when nothing needs to change and
# a copy otherwise; the chain does not expand views (they launch nothing), so a composite whose work
# is such a copy (``channel_shuffle``'s ``input.view(...).permute(...).contiguous()``, ``chalf``'s
# ``self.to(kComplexHalf)``) showed no run. Where the call's text says it copies, the operator is
# expanded as any other: a copy of a view that changes strides (Note [A copy of a view is strided]),
# or a ``to`` given a constant dtype (``kComplexHalf``, ``at::ScalarType::Float``), a conversion
# unless the input already has it.
MAY_COPY = frozenset({"contiguous", "reshape", "to", "reshape_as", "flatten", "ravel"})
_DTYPE_CONSTANT = re.compile(r"^(?:(?:at|c10|torch)::)?(?:ScalarType::\w+|k(?:Float|Double|Half|BFloat16|ComplexHalf|"
                             r"ComplexFloat|ComplexDouble|Byte|Char|Short|Int|Long|Bool)\b)")


Lines = Union[list, dict]  # a file's lines (bytes), or the lines a bundle quotes (line -> text)


def _line(lines: Lines, n: int) -> str | None:
    """Line ``n`` (1-based); in a quoted file, a line it does not quote reads as blank."""
    if isinstance(lines, dict):
        return lines.get(n, "") if n > 0 else None
    if 0 < n <= len(lines):
        t = lines[n - 1]
        return t.decode("utf-8", "replace") if isinstance(t, bytes) else t
    return None


def statement_lines(line: int) -> range:
    """The lines :func:`statement_at` may read for a call at ``line`` (what a bundle quotes for it)."""
    return range(max(1, line - 3), line + 3)


def statement_at(lines: Lines, line: int) -> str:
    """The statement around 1-based ``line`` of ``lines``: from the end of the one before it (a
    call chain written over several lines, ``x.permute(...)\\n  .contiguous()``) to two lines on."""
    head: list[str] = []
    for n in range(line - 1, max(0, line - 4), -1):
        text = _line(lines, n)
        if text is None or text.rstrip().endswith((";", "{", "}")) or text.lstrip().startswith("#"):
            break  # the line ends the statement before, or is a preprocessor line
        head.insert(0, text)
    rest = [t for n in range(line, line + 3) if (t := _line(lines, n)) is not None]
    return "\n".join(head + rest)


def converts(base: str, statement: str) -> bool:
    """Whether ``statement``'s call of ``to`` is given a constant dtype (Note [Views that copy])."""
    if base != "to":
        return False
    m = re.search(r"\.\s*to\s*\(|\bat::to\s*\(", statement)
    return m is not None and bool(_DTYPE_CONSTANT.match(_first_argument(statement, m.end() - 1)))


def view_copies(base: str, statement: str, function: str, views) -> bool:
    """Whether the call of the view operator ``base`` (one of :data:`MAY_COPY`) in ``statement``
    copies (Note [Views that copy]); ``function``: the text of the function before it."""
    return _view_copies(base, statement, function, views) is not None


def _view_copies(base: str, statement: str, function: str, views) -> re.Match | bool | None:
    """None: no copy; True: the statement shows it; a match: the variable's one assignment in ``function``."""
    if base not in MAY_COPY:
        return None
    if converts(base, statement):
        return True
    m = re.search(r"\.\s*%s\s*\(" % re.escape(base), statement)
    source = _receiver(statement[:m.start()]) if m is not None else ""
    if not source:
        return None
    name = _outer_call(source)
    if name is not None:
        return True if name.removesuffix("_symint") in views else None
    if re.fullmatch(r"\w+", source):
        last = _last_set(source, function)
        if last is not None and (name := _outer_call(last.group(1).strip())) is not None \
                and name.removesuffix("_symint") in views:
            return last
    return None


def copy_evidence(base: str, lines: Lines, line: int, first: int, views) -> list[int]:
    """The lines that show that the call of the view operator ``base`` at ``line`` copies (its
    statement, and the assignment of the variable it is called on), in a function starting at
    ``first``; [] when it does not copy. What the bundle quotes for a call site (Note [Views that copy])."""
    statement = statement_at(lines, line)
    function = "\n".join(_line(lines, n) or "" for n in range(first, line))
    got = _view_copies(base, statement, function, views)
    if got is None:
        return []
    out = list(statement_lines(line))
    if got is not True:
        start = first + function.count("\n", 0, got.start())
        out += range(start, start + got.group(0).count("\n") + 1)
    return sorted(set(out))


def quoted_rows(store, root: str) -> list[tuple[str, int, str]]:
    """(path, line, text) the bundle keeps for Note [Views that copy]: for each call of a view that
    may copy, the lines that show it copies (:func:`copy_evidence`), read from the tree at ``root``
    by the bundle builder, so that the bundled index expands the same views as the full one."""
    import os

    views = strided_views_of_records(store.operator_records())
    files: dict[str, list | None] = {}
    rows: set[tuple[str, int]] = set()
    for name, path, line in store.call_places():
        if name not in MAY_COPY:
            continue
        if path not in files:
            full = path if os.path.isabs(path) else os.path.join(root, path)
            try:
                with open(full, "rb") as fh:
                    files[path] = fh.read().split(b"\n")
            except OSError:
                files[path] = None
        lines = files[path]
        if lines is None:
            continue
        first = max((a for a, b in store.function_spans(path) if a <= line <= b), default=1)
        rows.update((path, n) for n in copy_evidence(name, lines, line, first, views) if n <= len(lines))
    return [(path, n, files[path][n - 1].decode("utf-8", "replace")) for path, n in sorted(rows)]  # type: ignore[index]


__all__ = ["COPIERS", "KEEPS_LAYOUT", "MAY_COPY", "copied", "copies_view", "converts", "copy_evidence", "returns_alias", "statement_at",
           "quoted_rows", "statement_lines", "strided_views", "strided_views_of_records", "view_copies"]
