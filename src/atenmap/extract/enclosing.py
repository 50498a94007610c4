"""The branches around one line of C++/CUDA, read from the text alone: the cheap reading behind
the "runs" block that opens ``atenmap OP`` (resolve/runs.py).

Note [Enclosing branches without a parse]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``--why`` (resolve/why.py) parses the caller's whole file with tree-sitter; that costs a grammar
load and a parse per file (~0.2-0.3 s on mm's CUDA chain), too much for every ``atenmap OP``. The
runs block needs only the few constructs that pick a launch or a library call, all of which sit
on the way from the call back to its function's opening brace, so they are read by walking back
through the masked text (comments, string and char literals, preprocessor lines blanked):

* each ``{`` that is not closed before the call opens a block; the text before it (its head, back
  to the previous ``;``, ``{`` or ``}`` outside parentheses) says what the block is: ``if (c)``,
  ``else`` (the ``if`` it belongs to is read too), ``switch (c)``; a lambda inside an
  ``AT_DISPATCH_*(…)`` call gives that macro (the dtypes); loops and plain blocks are passed;
  anything else that ends in ``)`` is a function, and the walk stops there;
* in the block of a ``switch``, the nearest ``case X:`` / ``default:`` label before the call;
* ``if (c) return …;`` and ``if (c) { …; return …; }`` (no ``else``) before the call in the same
  block: the call runs only when ``c`` is false (``after if (c) return``).

An ``else`` whose ``if`` block is the last of a preprocessor region (``} #endif else {``, CUDABlas's
``#ifdef USE_ROCM else if (… == BlasBackend::Ck) {…} #endif else {…}``) follows that ``if`` only
in the builds of the region's ``#if``; in the others it follows the ``if`` before the region. Both
are kept (``Enclosing.cond``, ``Enclosing.other``); resolve/runs.py picks the one of the build it
describes (Note [ROCm code under the CUDA key] in resolve/conditions.py).

Note [An else-if chain's earlier tests]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A block of ``if (a) {…} else if (b) {…} else {…}`` runs only when the tests before it failed: a call
in ``else if (b) {`` holds under ``if (b)`` and ``else of if (a)``, one in the last ``else {`` under
``else of if (b)`` and ``else of if (a)``. The walk reads every test of the chain, each ``else of``
at the line of the ``else`` that follows its block, as branches.scm's nested ``else_clause``s give
them to ``--why``. It matters for the runtime settings (resolve/choices.py): CUDABlas.cpp's
``gemm_internal<float>`` is ``if (… == BlasBackend::Cublaslt) {…} #ifdef USE_ROCM else if (… ==
BlasBackend::Ck) {…} #endif else { gemm_internal_cublas }``, so on ROCm (whose default is Cublaslt)
the rocBLAS/hipBLAS path runs for ``not Cublaslt and not Ck``, a setting left off its default, where
reading the last ``else`` alone said ``not Ck``, which the default satisfies. When the block before
an ``else`` ends a preprocessor region, that ``else`` keeps the region's ``if`` and the ``if``
before the region (``cond``, ``other`` below); the chain goes on from the region's ``else if`` to
the ``if`` before the region, which the builds without the region have as ``other`` already, so
that step carries the region's condition and no ``other``, and is read in the region's builds only. An
``else`` that follows an ``#else`` or ``#elif`` (``#ifdef X else if (b) {…} #else else if (c) {…}``)
chains to the ``if`` before the region, not to the block of the other side, which its build lacks.

Single-statement ``if (c) call();`` is read from the call's own statement. Ternaries are not read;
``--why`` has them. Only ``atenmap --why`` is exact; this is what holds at a glance.

Note [A local lambda runs where it is used]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen's linear algebra names its backends as local lambdas and picks one later
(BatchLinearAlgebra.cpp's ``lu_factor``: ``const auto lu_factor_magma = [batch_size](...) {...};``
at the top, ``if (preferred_backend == at::LinalgBackend::Magma) { lu_factor_magma(...); }`` below;
``lu_solve_kernel``'s ``lu_solve_triangular`` under the ``n == k`` heuristic). A lambda's body runs
where the lambda is used, not where it is written: the branches around the definition are not
the body's. ``around_ways(line)`` reads a line in the body of a local lambda (``auto NAME = [..]``,
``const`` or not) that the function uses after its closing brace, in the block that declares it
(called, or handed to a call), as one way per use: the lambda's own branches, the ``#if`` regions of
the function around the use (kind ``#if``: resolve/runs.py drops a way whose build is not the
platform's), then the branches around the use, read from the use itself, so one handed to a call
is inside that call (UnaryComplexKernels.cu's ``AT_DISPATCH_CASE(kComplexHalf, conj_chalf)``: its
dtypes); a lambda used inside another follows that one's uses the same way, up to _MAX_NESTED
levels. A lambda never used by name afterwards reads as before, from its definition, and so does
one called where it is written (``auto result = [&]() {…}();``, 50 in 2.6.0's ATen: ``result`` is
what it returned, its body ran there). ``around`` itself is unchanged: it is what
``--why``'s tree-sitter reading is checked against (tests/test_branches_differential_realtree.py).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate

from atenmap.extract.blanking import CODE_NOISE, spaces


# a preprocessor line and its continuations, after its newline (a literal first byte: found fast)
# not a query, and a regex: preprocessor text (a directive and its continuation lines)
_DIRECTIVE = re.compile(rb"\n[ \t]*#(?:[^\n]*\\\n)*[^\n]*")
# not a query, and a regex: preprocessor text (the #if/#else/#endif lines of the unmasked text)
_PP = re.compile(rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b([^\n]*)", re.M)  # on the unmasked text


# Note [The runs block's shapes as string code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The heads, labels and statements read here are short slices of the masked text (comments,
# literals and preprocessor lines blanked), and each shape is a fixed run of words and punctuation:
# plain string code reads them. They replaced regexes of the same shapes, with the same answers on
# every slice of both test trees' files and fuzz (bench/regex_equal.py). Only the preprocessor
# lines (_DIRECTIVE, _PP) stay regexes: a directive's continuations are preprocessor text.
_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")  # ``\w`` in bytes
_CONTROL_WORDS = (b"if", b"switch", b"for", b"while", b"catch")
_SCOPE_WORDS = frozenset((b"namespace", b"class", b"struct", b"union", b"enum", b"extern"))
_TAIL_WORDS = (b"const", b"noexcept", b"override", b"final", b"volatile", b"&")
_ARROW_TYPE = frozenset(_WORD | set(b":<>,*&") | set(_WS))  # what a trailing return type is made of
_NOT_WORD = bytes(b if b in _WORD else 0x20 for b in range(256))


def _is_word(text: bytes, at: int) -> bool:
    return at < len(text) and text[at] in _WORD


def _after_else(text: bytes) -> bytes:
    """``text`` less a leading ``else`` and its blanks (``else\\s+``), or ``text`` itself."""
    if text[:4] == b"else" and text[4:5] and text[4] in _WS:
        return text[4:].lstrip(_WS)
    return text


def _open_after(text: bytes, at: int) -> int:
    """The ``(`` of ``\\s*(?:constexpr\\s*)?\\(`` at ``at``, or -1."""
    rest = text[at:].lstrip(_WS)
    at = len(text) - len(rest)
    if rest[:9] == b"constexpr":
        rest = rest[9:].lstrip(_WS)
        at = len(text) - len(rest)
    return at if rest[:1] == b"(" else -1


def control(head: bytes) -> tuple[bytes, bytes] | None:
    """``(keyword, condition)`` of ``[else] if|switch|for|while|catch [constexpr] (condition)``
    filling ``head`` (trailing blanks allowed); None otherwise."""
    text = _after_else(head)
    for word in _CONTROL_WORDS:
        if text[:len(word)] == word and not _is_word(text, len(word)):
            open_ = _open_after(text, len(word))
            end = len(text.rstrip(_WS)) - 1
            if open_ < 0 or end <= open_ or text[end] != 0x29:
                return None
            return word, text[open_ + 1:end]
    return None


def single_if(stmt: bytes) -> bool:
    """Whether ``stmt`` starts ``[else] if [constexpr] (``."""
    text = _after_else(stmt)
    return text[:2] == b"if" and _open_after(text, 2) >= 0


def early_return(stmt: bytes) -> bytes | None:
    """The condition of ``if (c) return…`` at ``stmt``'s start (the last ``)`` followed by the
    word ``return``); None otherwise."""
    if stmt[:2] != b"if":
        return None
    rest = stmt[2:].lstrip(_WS)
    if rest[:1] != b"(":
        return None
    open_ = len(stmt) - len(rest)
    close = stmt.rfind(b")")
    while close > open_:
        after = stmt[close + 1:].lstrip(_WS)
        if after[:6] == b"return" and not _is_word(after, 6):
            return stmt[open_ + 1:close]
        close = stmt.rfind(b")", 0, close)
    return None


def case_label(text: bytes) -> tuple[int, int] | None:
    """``(start, end)`` of a ``case …:`` or ``default:`` label at ``text``'s start (after blanks),
    its ``:`` the first one alone (``::`` is a qualifier's) and no ``;`` before it; None otherwise."""
    start = len(text) - len(text.lstrip(_WS))
    if text[start:start + 4] == b"case" and not _is_word(text, start + 4):
        at = start + 4
        while True:
            colon, semi = text.find(b":", at), text.find(b";", at)
            if colon < 0 or 0 <= semi < colon:
                return None
            if text[colon + 1:colon + 2] != b":":
                return start, colon + 1
            at = colon + 2
    if text[start:start + 7] == b"default":
        rest = text[start + 7:].lstrip(_WS)
        colon = len(text) - len(rest)
        if rest[:1] == b":" and rest[1:2] != b":":
            return start, colon + 1
    return None


def dispatch_before(text: bytes) -> bytes | None:
    """The ``AT_DISPATCH_…`` name that ends ``text`` (trailing blanks allowed; the first such
    start in the last word), None otherwise."""
    text = text.rstrip(_WS)
    word = len(text)
    while word > 0 and text[word - 1] in _WORD:
        word -= 1
    at = text.find(b"AT_DISPATCH_", word)
    return text[at:] if 0 <= at and len(text) - at > 12 else None


def names_scope(head: bytes) -> bool:
    """Whether ``head`` has one of the words namespace, class, struct, union, enum, extern."""
    return not _SCOPE_WORDS.isdisjoint(head.translate(_NOT_WORD).split())


def function_tail(head: bytes) -> bool:
    """Whether ``head`` ends as a function's head: its last ``)`` followed only by blanks,
    ``const``, ``noexcept``, ``override``, ``final``, ``volatile``, ``&``, ``&&`` and ``-> type``."""
    close = head.rfind(b")")
    if close < 0:
        return False
    at, n = close + 1, len(head)
    while True:
        while at < n and head[at] in _WS:
            at += 1
        if at == n:
            return True
        if head[at:at + 2] == b"->":
            end = at + 2
            while end < n and head[end] in _ARROW_TYPE:
                end += 1
            if end == at + 2:
                return False
            at = end
            continue
        word = next((w for w in _TAIL_WORDS if head[at:at + len(w)] == w), None)
        if word is None:
            return False
        at += len(word)


@dataclass(frozen=True)
class Enclosing:
    kind: str  # if, else, switch, case, return, dispatch
    text: str  # as written, spaces collapsed: "if (contiguous)", "case 4:", "AT_DISPATCH_FLOATING_TYPES"
    line: int  # 1-based line of the construct
    args: tuple[str, ...] = ()  # dispatch: the macro's arguments (string literals blank, lambdas "…")
    cond: str = ""  # else: the #if under which ``text`` holds (its if closes a preprocessor region)
    other: str = ""  # else: the text when ``cond`` does not hold (the if before the region); none
    # with a ``cond``: an else-if chain's test before such a region, which the builds without it have
    # as the region's ``other`` already (Note [An else-if chain's earlier tests])


def _flat(text: bytes) -> str:
    return " ".join(text.decode("utf-8", "replace").split())


_NOT_TOKEN = bytes(b for b in range(256) if b not in b";{}()")
_MAX_NESTED = 3  # lambdas used inside lambdas followed (Note [A local lambda runs where it is used])
_MAX_USES = 8
_TOKEN_AS_SEMI = bytes(0x3B if b in b";{}()" else b for b in range(256))  # each token byte as ``;``


class TextBranches:
    """One file's masked text and the places of its ``; { } ( )``; ``around(line)`` for each call
    line. The walks step from token to token (a Python loop over characters cost ~10 ms a site).
    ``first_line``: ``src`` is a part of a file that starts there (one function's lines: masking
    and tokens cost by the byte, and a function never starts inside a comment or literal)."""

    def __init__(self, src: bytes, first_line: int = 1):
        self.offset = first_line - 1
        self.src = src  # the directives, for an else after #endif (masking keeps every byte's place)
        # two passes: one regex of both is 2x slower
        self.masked = _DIRECTIVE.sub(spaces, b"\n" + CODE_NOISE.sub(spaces, src))[1:]
        self._ends = list(accumulate(map(len, src.split(b"\n"))))  # line i (0-based) ends at _ends[i] + i
        self._ch = self.masked.translate(None, _NOT_TOKEN)
        # token i sits at _acc[i] + i: the lengths of the text between tokens, summed (no Match objects)
        self._acc = list(accumulate(map(len, self.masked.translate(_TOKEN_AS_SEMI).split(b";"))))

    def line_of(self, pos: int) -> int:
        """The 1-based line (of the file) of byte ``pos``."""
        return bisect.bisect_left(range(len(self._ends)), pos, key=lambda i: self._ends[i] + i) + 1 + self.offset

    def line_start(self, line: int) -> int:
        return self._ends[line - 2] + line - 1 if line > 1 else 0

    def _pos(self, k: int) -> int:
        return self._acc[k] + k

    def _token_at(self, pos: int) -> int:
        """The first token at or after byte ``pos``."""
        return bisect.bisect_left(range(len(self._ch)), pos, key=self._pos)

    def around_ways(self, line: int, depth: int = 0) -> list[list[Enclosing]]:
        """The branches holding at ``line`` for each way it is reached, innermost first: ``[around(line)]``
        but in the body of a local lambda used after it, one list per use (Note [A local lambda runs
        where it is used])."""
        return [branches for _line, branches in self.ways(line, depth)]

    def ways(self, line: int, depth: int = 0, at: int | None = None) -> list[tuple[int, list[Enclosing]]]:
        """``around_ways``' lists, each with the line where that way enters the function (``line``
        itself, or the lambda's use); ``at``: the use's byte, read from there (``around``)."""
        stop: list[tuple[bytes, int]] = []
        inner = self.around(line, stop, at)
        uses = self._uses(*stop[0]) if stop and depth < _MAX_NESTED else []
        if not uses:
            return [(line, self.around(line, at=at) if stop else inner)]
        out = []
        for use in uses:  # the use's own #if (a lambda used once per build: lu_factor's ``#else // !USE_LINALG_SOLVER``)
            pp = [Enclosing("#if", c, self.line_of(use)) for c, _start in self._regions(use)] \
                if b"#" in self.src[:use] else []
            out += [(n, inner + pp + outer) for n, outer in self.ways(self.line_of(use), depth + 1, use)]
        return out

    def first_use(self, line: int) -> int | None:
        """The line where the local lambda whose body holds ``line`` is first used, or None (not in
        one, or one never used by name: Note [A local lambda runs where it is used])."""
        stop: list[tuple[bytes, int]] = []
        self.around(line, stop)
        uses = self._uses(*stop[0]) if stop else []
        return self.line_of(uses[0]) if uses else None

    def _uses(self, name: bytes, brace: int) -> list[int]:
        """Where the lambda ``name`` whose body opens at byte ``brace`` is used after its closing
        brace, up to the end of the block that declares it: each whole-word ``name`` that is no
        member (``.name``, ``->name``, ``::name``), at most _MAX_USES. None for a lambda called
        where it is written (``auto r = [&]() {…}();``: ``r`` is its result, the body ran there)."""
        ch, depth = self._ch, 0
        for i in range(self._token_at(brace), len(ch)):
            depth += {0x7B: 1, 0x7D: -1}.get(ch[i], 0)
            if depth == 0:
                break
        else:
            return []
        t, out = self.masked, []
        if t[self._pos(i) + 1:].lstrip(_WS)[:1] == b"(":
            return []
        end_scope = len(t)
        for j in range(i + 1, len(ch)):  # the declaring block's ``}``: a name past it is another's
            depth += {0x7B: 1, 0x7D: -1}.get(ch[j], 0)
            if depth < 0:
                end_scope = self._pos(j)
                break
        at = t.find(name, self._pos(i), end_scope)
        while at >= 0 and len(out) < _MAX_USES:
            end = at + len(name)
            j = at
            while j > 0 and t[j - 1] in _WS:
                j -= 1
            before = t[max(0, j - 2):j]  # a member's ``.``, ``->``, ``::``; not ``case X:``'s ``:`` or ``a > f``
            if not _is_word(t, end) and not (at and t[at - 1] in _WORD) and before[-1:] != b"." \
                    and before not in (b"->", b"::"):
                out.append(at)
            at = t.find(name, end, end_scope)
        return out

    def around(self, line: int, stop: list | None = None, at: int | None = None) -> list[Enclosing]:
        """The branches holding at ``line``, innermost first. See Note [Enclosing branches
        without a parse]. ``stop``: a list that takes (name, brace) of a local lambda the walk
        reaches, where it stops; ``at``: a lambda's use on ``line``, read from its own statement (a
        block opened before it on the line, the call it is an argument of: ``AT_DISPATCH_CASE(kComplexHalf,
        conj_chalf)``; Note [A local lambda runs where it is used])."""
        line -= self.offset
        if not 1 <= line <= len(self._ends):
            return []
        t = self.masked
        pos = self.line_start(line)
        out: list[Enclosing] = []
        k = self._statement_start(self._token_at(pos if at is None else at))
        own = self._after(k)
        m = case_label(t[own:])
        label = Enclosing("case", _flat(t[own + m[0]:own + m[1]]), self.line_of(own + m[0])) if m else None
        body = own + m[1] if m else own  # the statement after its label
        head = t[body:pos].strip()
        end = t.find(b";", pos)
        stmt = t[body:end if end >= 0 else len(t)].strip()
        if single_if(stmt) and not head.endswith(b")"):
            close = _close_paren(stmt, stmt.index(b"("))
            if close > 0 and stmt.find(b"{", 0, close) < 0:
                out.append(Enclosing("if", _flat(stmt[stmt.index(b"if"):close + 1]), self.line_of(t.find(b"if", body))))
        self._walk(k, out, label, stop)
        return out

    def _after(self, k: int) -> int:
        """The byte after token ``k`` (0 for -1: the file's start)."""
        return self._pos(k) + 1 if k >= 0 else 0

    def _walk(self, k: int, out: list[Enclosing], label: Enclosing | None, stop: list | None = None) -> None:
        """From token ``k`` (the boundary before the call's statement) back to the function's head."""
        ch = self._ch
        while k >= 0:
            c = ch[k]
            if c == 0x3B:  # ;
                start = self._statement_start(k)
                label = self._statement(self._after(start), self._pos(k), out, label)
            elif c == 0x7D:  # }
                open_ = self._open_brace(k)
                if open_ < 0:
                    return
                start = self._statement_start(open_)
                label = self._closed_block(self._after(start), self._pos(open_), self._pos(k), out, label)
            elif c == 0x7B:  # {
                start = self._statement_start(k)
                go_on, label = self._opened(self._after(start), self._pos(k), out, label, stop)
                if not go_on:
                    return
            elif c == 0x28:  # (: inside a call's arguments, a lambda passed to it
                start = self._call(k, out)
            else:
                start = k - 1
            k = start

    def _statement_start(self, k: int) -> int:
        """The token before token ``k``'s statement: the ``;``, ``{`` or ``}`` outside parentheses,
        or an unmatched ``(`` (the statement is an argument of a call); -1 at the file's start."""
        ch, depth, i = self._ch, 0, k - 1
        while i >= 0:
            c = ch[i]
            if c == 0x29:
                depth += 1
            elif c == 0x28:
                if depth == 0:
                    return i
                depth -= 1
            elif depth == 0 and c in (0x3B, 0x7B, 0x7D):
                return i
            i -= 1
        return -1

    def _open_brace(self, k: int) -> int:
        """The token of the ``{`` matching the ``}`` at token ``k``; -1 when none."""
        ch, depth, i = self._ch, 0, k
        while i >= 0:
            c = ch[i]
            if c == 0x7D:
                depth += 1
            elif c == 0x7B:
                depth -= 1
                if depth == 0:
                    return i
            i -= 1
        return -1

    def _statement(self, start: int, semi: int, out: list[Enclosing], label: Enclosing | None) -> Enclosing | None:
        text = self.masked[start:semi]
        m = case_label(text)
        if m and label is None:
            label = Enclosing("case", _flat(text[m[0]:m[1]]), self.line_of(start + m[0]))
            text = text[m[1]:]
        early = early_return(text.strip())
        if early is not None:
            cond = _flat(early)
            out.append(Enclosing("return", f"after if ({cond}) return", self.line_of(start + len(text) - len(text.lstrip()))))
        return label

    def _closed_block(self, start: int, open_: int, close: int, out: list[Enclosing],
                      label: Enclosing | None) -> Enclosing | None:
        """A ``{…}`` block before the call in the same block: an ``if`` that returns, or a label."""
        lead = start  # where the head starts: the ``if`` (its line, not the ``{``'s, for a condition of many lines)
        m = case_label(self.masked[start:open_])
        if m and label is None:
            label = Enclosing("case", _flat(self.masked[start + m[0]:start + m[1]]), self.line_of(start + m[0]))
            lead = start + m[1]
        text = self.masked[lead:open_]
        head = text.strip()
        ctl = control(head)
        body = self.masked[open_:close]
        after = self.masked[close + 1:close + 40].lstrip()
        if ctl and ctl[0] == b"if" and _returns_directly(body) and not after.startswith(b"else"):
            out.append(Enclosing("return", f"after if ({_flat(ctl[1])}) return", self.line_of(lead + len(text) - len(text.lstrip()))))
        return label

    def _opened(self, start: int, brace: int, out: list[Enclosing],
                label: Enclosing | None, stop: list | None = None) -> tuple[bool, Enclosing | None]:
        """The block the call is in, opened at ``brace``: whether to go on (not at a function, class
        or namespace), and the label of the block around it (``case 1: {``)."""
        text = self.masked[start:brace]
        m = case_label(text)
        outer = Enclosing("case", _flat(text[m[0]:m[1]]), self.line_of(start + m[0])) if m else None
        if m:
            text = text[m[1]:]
        head = text.strip()
        ctl = control(head)
        line = self.line_of(start + len(text) - len(text.lstrip()))
        if ctl:
            kind = ctl[0].decode()
            if kind == "switch" and label is not None:
                out.append(label)
            if kind in ("if", "switch"):
                out.append(Enclosing(kind, f"{kind} ({_flat(ctl[1])})", line))
            if kind == "if" and _after_else(head) is not head:  # ``else if (c) {``: the chain's tests before it
                self._elses(start, line, out)
            return True, outer
        if head[:4] == b"else" and not head[4:].strip():  # ``else`` alone
            self._elses(start, line, out)
            return True, outer
        if stop is not None and _lambda_head(head) and _local_lambda(head):
            stop.append((_local_lambda(head), brace))  # Note [A local lambda runs where it is used]
            return False, outer
        if not head or head in (b"do", b"try") or _lambda_head(head):
            return True, outer  # a plain block, a loop body, or a lambda (its call is read at the "(")
        return not (names_scope(head) or function_tail(head)), outer  # a function, class, namespace: stop

    def _elses(self, else_start: int, line: int, out: list[Enclosing]) -> None:
        """``else of if (c)`` for the ``if`` of the block closed just before an ``else`` at
        ``else_start``, then for each test of the ``else if`` chain before it: a call under ``if (a)
        {…} else if (b) {…} else {…}``'s last block runs when neither ``a`` nor ``b`` holds (Note
        [An else-if chain's earlier tests]). The ``else``s a preprocessor region holds are kept with
        its condition (:meth:`_if_before`)."""
        text, cond, other, chain = self._if_before(else_start)
        out.append(Enclosing("else", f"else of {text}", line, cond=cond, other=f"else of {other}" if cond else ""))
        only = cond  # the region's else if chains to the if before the region: in the builds without
        for _ in range(64):  # the region that if is ``other`` already. 64: a bound, never reached in ATen
            if chain < 0:
                break
            line = self.line_of(chain)
            text, cond, other, chain = self._if_before(chain)
            if only:  # read in the region's builds only (an empty ``other``): the others have it already
                out.append(Enclosing("else", f"else of {text}", line, cond=only))
            else:
                out.append(Enclosing("else", f"else of {text}", line, cond=cond, other=f"else of {other}" if cond else ""))
            only = cond

    def _if_before(self, else_start: int, nested: bool = False) -> tuple[str, str, str, int]:
        """``if (c)`` of the block closed just before an ``else``; when that block ends a
        preprocessor region (an ``#endif`` between its ``}`` and the ``else``): the region's
        condition and the ``if (c)`` before the region (See Note [Enclosing branches without a parse]);
        last, where that ``if`` is itself an ``else if`` whose chain holds in every build, the start
        of its ``else`` (-1 otherwise)."""
        k = self._token_at(else_start) - 1
        at_else = self.masked.find(b"else", else_start)  # else_start: just after the block's }
        if k >= 0 and at_else >= 0 and b"#" in self.src[self._pos(k):at_else]:
            sides = list(_PP.finditer(self.src, self._pos(k), at_else))
            region = next(self._regions(at_else), None) if sides and sides[-1].group(1) in (b"else", b"elif") else None
            if region is not None:  # the block before is another side's (``#ifdef X else if (b) {…} #else``)
                return self._if_before(region[1], nested)
        open_ = self._open_brace(k) if k >= 0 and self._ch[k] == 0x7D else -1
        lead = self._after(self._statement_start(open_)) if open_ >= 0 else -1
        raw = self.masked[lead:self._pos(open_)] if open_ >= 0 else b""
        head = raw.strip()
        ctl = control(head)
        text = f"if ({_flat(ctl[1])})" if ctl else "if"
        chain = lead + len(raw) - len(raw.lstrip()) if ctl and ctl[0] == b"if" and _after_else(head) is not head else -1
        region = self._region(self._pos(k), at_else) if open_ >= 0 and at_else >= 0 and not nested else None
        if region is None:
            return text, "", "", chain
        cond, at = region
        # a region whose if opens a chain of its own (no else if) chains on in the builds without it
        # only: not followed
        return text, cond, self._if_before(at, nested=True)[0], chain

    def _region(self, close: int, else_start: int) -> tuple[str, int] | None:
        """(condition, start) of the preprocessor region that an ``#endif`` between ``close`` (a
        block's ``}``) and ``else_start`` (the ``else``) ends; None when no ``#endif`` sits there."""
        if b"#" not in self.src[close:else_start] or not any(
                m.group(1) == b"endif" for m in _PP.finditer(self.src, close, else_start)):
            return None
        return next(self._regions(close), None)

    def _regions(self, pos: int):
        """(condition, start) of each preprocessor region of the text open at byte ``pos``, innermost
        first (an ``#else`` side reads ``!(c)``, an ``#elif`` side its own condition)."""
        depth, branch = 0, ""
        for m in reversed(list(_PP.finditer(self.src, 0, pos))):
            kind, rest = m.group(1), _flat(m.group(2).split(b"//")[0])
            if kind == b"endif":
                depth += 1
            elif depth and kind in (b"if", b"ifdef", b"ifndef"):
                depth -= 1
            elif not depth and kind in (b"elif", b"else"):
                branch = branch or ("else" if kind == b"else" else rest)
            elif not depth:
                opened = {b"ifdef": f"defined({rest})", b"ifndef": f"!defined({rest})"}.get(kind, rest)
                yield (opened if not branch else (f"!({opened})" if branch == "else" else branch)), m.start()
                branch = ""

    def _call(self, k: int, out: list[Enclosing]) -> int:
        """The call whose argument list the walk is in (its ``(`` is token ``k``): an
        ``AT_DISPATCH_*`` macro is kept; the walk goes on before the call's statement."""
        paren = self._pos(k)
        name = dispatch_before(self.masked[max(0, paren - 80):paren])
        if name:
            out.append(Enclosing("dispatch", name.decode(), self.line_of(paren), self._args(k)))
        return self._statement_start(k)

    def _args(self, k: int) -> tuple[str, ...]:
        """The arguments of the call whose ``(`` is token ``k``, each ``{…}`` block (a lambda's
        body) left out: a lambda argument reads ``…``."""
        ch, at, t = self._ch, self._pos, self.masked
        parens = braces = 0
        skip: list[tuple[int, int]] = []
        for i in range(k, len(ch)):
            c = ch[i]
            if c == 0x28:
                parens += 1
            elif c == 0x29:
                parens -= 1
                if parens == 0:
                    close = at(i)
                    break
            elif c == 0x7B:
                braces += 1
                if braces == 1:
                    opened = at(i)
            elif c == 0x7D:
                braces -= 1
                if braces == 0:
                    skip.append((opened, at(i) + 1))
        else:
            return ()
        pieces, cur = [], at(k) + 1
        for a, b in skip:
            pieces += [t[cur:a], b"{}"]
            cur = b
        pieces.append(t[cur:close])
        inner = b"".join(pieces).decode("utf-8", "replace")
        from atenmap.extract import macros  # only where an AT_DISPATCH holds the call: not on every query

        return tuple("…" if "{" in a else " ".join(a.split()) for a in macros.split_args(inner))


def _returns_directly(body: bytes) -> bool:
    """Whether the block ``body`` (from its ``{``) holds a ``return`` statement of its own, as
    branches.scm's ``(compound_statement (return_statement))``: not one nested in an inner ``if``,
    loop or lambda (``if (!accumulate) { ...; if (ok) { return ...; } }`` does not return early).
    Preprocessor lines are blanked before this, so a ``return`` under an ``#ifdef`` in the block counts."""
    at = body.find(b"return")
    while at >= 0:
        before = body[:at]
        word = (at == 0 or not (body[at - 1:at].isalnum() or body[at - 1:at] == b"_")) and \
            not (body[at + 6:at + 7].isalnum() or body[at + 6:at + 7] == b"_")
        if word and before.count(b"{") - before.count(b"}") == 1 and before.rstrip()[-1:] in (b";", b"{", b"}"):
            return True
        at = body.find(b"return", at + 6)
    return False


def _lambda_head(head: bytes) -> bool:
    """Whether a block's head ends a lambda's introducer: ``[&]``, ``[&](int i)``, ``[=]() mutable
    -> T``."""
    if b"]" not in head:
        return False
    arrow = head.rfind(b"->")
    if arrow >= 0 and b")" not in head[arrow:] and b"]" not in head[arrow:]:
        head = head[:arrow].rstrip()
    for word in (b"mutable", b"noexcept"):
        head = head.removesuffix(word).rstrip()
    if head.endswith(b")"):
        depth, i = 0, len(head) - 1
        while i >= 0:
            depth += {0x29: 1, 0x28: -1}.get(head[i], 0)
            if depth == 0:
                break
            i -= 1
        head = head[:i].rstrip()
    return head.endswith(b"]")


def _local_lambda(head: bytes) -> bytes | None:
    """The name a lambda's head declares, ``auto NAME = [..](..)`` (``const``, ``&`` allowed), or
    None (Note [A local lambda runs where it is used])."""
    at = head.find(b"[")
    before = head[:at].rstrip(_WS) if at > 0 else b""
    if not before.endswith(b"=") or before[-2:-1] in (b"=", b"!", b"<", b">"):
        return None
    words = before[:-1].replace(b"&", b" ").split()
    if len(words) < 2 or b"auto" not in words[:-1] or not all(c in _WORD for c in words[-1]):
        return None
    return words[-1]


def _close_paren(text: bytes, open_: int) -> int:
    depth = 0
    for i in range(open_, len(text)):
        depth += {40: 1, 41: -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


__all__ = ["Enclosing", "TextBranches"]
