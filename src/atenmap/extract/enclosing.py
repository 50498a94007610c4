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

Single-statement ``if (c) call();`` is read from the call's own statement. Ternaries are not read;
``--why`` has them. Only ``atenmap --why`` is exact; this is what holds at a glance.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate

from atenmap.extract.blanking import CODE_NOISE, spaces


# a preprocessor line and its continuations, after its newline (a literal first byte: found fast)
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_DIRECTIVE = re.compile(rb"\n[ \t]*#(?:[^\n]*\\\n)*[^\n]*")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_CONTROL = re.compile(rb"^(?:else\s+)?(if|switch|for|while|catch)\b\s*(?:constexpr\s*)?\((.*)\)\s*$", re.S)
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_LABEL = re.compile(rb"^\s*((?:case\b(?:::|[^:;])*?|default)\s*:)(?!:)")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_EARLY = re.compile(rb"^if\s*\((.*)\)\s*return\b", re.S)  # a statement holds no ; { } outside parentheses
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_SINGLE_IF = re.compile(rb"^(?:else\s+)?if\s*(?:constexpr\s*)?\(")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_DISPATCH = re.compile(rb"(AT_DISPATCH_\w+)\s*$")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_FUNC_TAIL = re.compile(rb"\)\s*(?:(?:const|noexcept|override|final|volatile|&&?|->\s*[\w:<>,*&\s]+?)\s*)*$")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_SCOPE = re.compile(rb"\b(namespace|class|struct|union|enum|extern)\b")
# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_PP = re.compile(rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b([^\n]*)", re.M)  # on the unmasked text


@dataclass(frozen=True)
class Enclosing:
    kind: str  # if, else, switch, case, return, dispatch
    text: str  # as written, spaces collapsed: "if (contiguous)", "case 4:", "AT_DISPATCH_FLOATING_TYPES"
    line: int  # 1-based line of the construct
    args: tuple[str, ...] = ()  # dispatch: the macro's arguments (string literals blank, lambdas "…")
    cond: str = ""  # else: the #if under which ``text`` holds (its if closes a preprocessor region)
    other: str = ""  # else: the text when ``cond`` does not hold (the if before the region)


def _flat(text: bytes) -> str:
    return " ".join(text.decode("utf-8", "replace").split())


# not a query: no parse for the runs block (Note [Enclosing branches without a parse])
_TOKEN = re.compile(rb"[;{}()]")
_NOT_TOKEN = bytes(b for b in range(256) if b not in b";{}()")


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
        self._acc = list(accumulate(map(len, _TOKEN.split(self.masked))))

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

    def around(self, line: int) -> list[Enclosing]:
        """The branches holding at ``line``, innermost first. See Note [Enclosing branches
        without a parse]."""
        line -= self.offset
        if not 1 <= line <= len(self._ends):
            return []
        t = self.masked
        pos = self.line_start(line)
        out: list[Enclosing] = []
        k = self._statement_start(self._token_at(pos))
        own = self._after(k)
        m = _LABEL.match(t[own:])
        label = Enclosing("case", _flat(m.group(1)), self.line_of(own + m.start(1))) if m else None
        body = own + m.end() if m else own  # the statement after its label
        head = t[body:pos].strip()
        end = t.find(b";", pos)
        stmt = t[body:end if end >= 0 else len(t)].strip()
        if _SINGLE_IF.match(stmt) and not head.endswith(b")"):
            close = _close_paren(stmt, stmt.index(b"("))
            if close > 0 and stmt.find(b"{", 0, close) < 0:
                out.append(Enclosing("if", _flat(stmt[stmt.index(b"if"):close + 1]), self.line_of(t.find(b"if", body))))
        self._walk(k, out, label)
        return out

    def _after(self, k: int) -> int:
        """The byte after token ``k`` (0 for -1: the file's start)."""
        return self._pos(k) + 1 if k >= 0 else 0

    def _walk(self, k: int, out: list[Enclosing], label: Enclosing | None) -> None:
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
                go_on, label = self._opened(self._after(start), self._pos(k), out, label)
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
        m = _LABEL.match(text)
        if m and label is None:
            label = Enclosing("case", _flat(m.group(1)), self.line_of(start + m.start(1)))
            text = text[m.end():]
        early = _EARLY.match(text.strip())
        if early:
            cond = _flat(early.group(1))
            out.append(Enclosing("return", f"after if ({cond}) return", self.line_of(start + len(text) - len(text.lstrip()))))
        return label

    def _closed_block(self, start: int, open_: int, close: int, out: list[Enclosing],
                      label: Enclosing | None) -> Enclosing | None:
        """A ``{…}`` block before the call in the same block: an ``if`` that returns, or a label."""
        head = self.masked[start:open_].strip()
        m = _LABEL.match(self.masked[start:open_])
        if m and label is None:
            label = Enclosing("case", _flat(m.group(1)), self.line_of(start + m.start(1)))
            head = self.masked[start + m.end():open_].strip()
        ctl = _CONTROL.match(head)
        body = self.masked[open_:close]
        after = self.masked[close + 1:close + 40].lstrip()
        if ctl and ctl.group(1) == b"if" and _returns_directly(body) and not after.startswith(b"else"):
            out.append(Enclosing("return", f"after if ({_flat(ctl.group(2))}) return", self.line_of(open_)))
        return label

    def _opened(self, start: int, brace: int, out: list[Enclosing],
                label: Enclosing | None) -> tuple[bool, Enclosing | None]:
        """The block the call is in, opened at ``brace``: whether to go on (not at a function, class
        or namespace), and the label of the block around it (``case 1: {``)."""
        text = self.masked[start:brace]
        m = _LABEL.match(text)
        outer = Enclosing("case", _flat(m.group(1)), self.line_of(start + m.start(1))) if m else None
        if m:
            text = text[m.end():]
        head = text.strip()
        ctl = _CONTROL.match(head)
        line = self.line_of(start + len(text) - len(text.lstrip()))
        if ctl:
            kind = ctl.group(1).decode()
            if kind == "switch" and label is not None:
                out.append(label)
            if kind in ("if", "switch"):
                out.append(Enclosing(kind, f"{kind} ({_flat(ctl.group(2))})", line))
            return True, outer
        if head[:4] == b"else" and not head[4:].strip():  # ``else`` alone
            text, cond, other = self._if_before(start)
            out.append(Enclosing("else", f"else of {text}", line, cond=cond,
                                 other=f"else of {other}" if cond else ""))
            return True, outer
        if not head or head in (b"do", b"try") or _lambda_head(head):
            return True, outer  # a plain block, a loop body, or a lambda (its call is read at the "(")
        return not (_SCOPE.search(head) or _FUNC_TAIL.search(head)), outer  # a function, class, namespace: stop

    def _if_before(self, else_start: int, nested: bool = False) -> tuple[str, str, str]:
        """``if (c)`` of the block closed just before an ``else``; when that block ends a
        preprocessor region (an ``#endif`` between its ``}`` and the ``else``): the region's
        condition and the ``if (c)`` before the region (See Note [Enclosing branches without a parse])."""
        k = self._token_at(else_start) - 1
        open_ = self._open_brace(k) if k >= 0 and self._ch[k] == 0x7D else -1
        head = self.masked[self._after(self._statement_start(open_)):self._pos(open_)].strip() if open_ >= 0 else b""
        ctl = _CONTROL.match(head)
        text = f"if ({_flat(ctl.group(2))})" if ctl else "if"
        at_else = self.masked.find(b"else", else_start)  # else_start: just after the block's }
        region = self._region(self._pos(k), at_else) if open_ >= 0 and at_else >= 0 and not nested else None
        if region is None:
            return text, "", ""
        cond, at = region
        return text, cond, self._if_before(at, nested=True)[0]

    def _region(self, close: int, else_start: int) -> tuple[str, int] | None:
        """(condition, start) of the preprocessor region that an ``#endif`` between ``close`` (a
        block's ``}``) and ``else_start`` (the ``else``) ends; None when no ``#endif`` sits there."""
        if b"#" not in self.src[close:else_start] or not any(
                m.group(1) == b"endif" for m in _PP.finditer(self.src, close, else_start)):
            return None
        depth, branch = 0, ""
        for m in reversed(list(_PP.finditer(self.src, 0, close))):
            kind, rest = m.group(1), _flat(m.group(2).split(b"//")[0])
            if kind == b"endif":
                depth += 1
            elif depth and kind in (b"if", b"ifdef", b"ifndef"):
                depth -= 1
            elif not depth and kind in (b"elif", b"else"):
                branch = branch or ("else" if kind == b"else" else rest)
            elif not depth:
                opened = {b"ifdef": f"defined({rest})", b"ifndef": f"!defined({rest})"}.get(kind, rest)
                cond = opened if not branch else (f"!({opened})" if branch == "else" else branch)
                return cond, m.start()
        return None

    def _call(self, k: int, out: list[Enclosing]) -> int:
        """The call whose argument list the walk is in (its ``(`` is token ``k``): an
        ``AT_DISPATCH_*`` macro is kept; the walk goes on before the call's statement."""
        paren = self._pos(k)
        name = _DISPATCH.search(self.masked[max(0, paren - 80):paren])
        if name:
            out.append(Enclosing("dispatch", name.group(1).decode(), self.line_of(paren), self._args(k)))
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


def _close_paren(text: bytes, open_: int) -> int:
    depth = 0
    for i in range(open_, len(text)):
        depth += {40: 1, 41: -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


__all__ = ["Enclosing", "TextBranches"]
