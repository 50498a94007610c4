"""The operator whose autograd node a composite operator's output gets: the op call that produces
the value its kernel returns (``Index.output_node``, issue 38).

Note [The node of a composite's output]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Where a key runs an operator's CompositeImplicitAutograd kernel (Note [Composite ops' backward] in
backward.py), autograd records a node for every differentiable op the kernel calls, and the output's
``grad_fn`` is the node of the innermost differentiable op that produces the returned value: the
rest (dropout's ``noise.bernoulli_``, ``noise.div_``) make tensors the result is computed from. So
the kernel's ``return`` statements are read, in source order: an op call inside one (``return
std::get<0>(at::native_dropout(input, p, train))``, ``return input.mul(noise)``) is the producer; a
helper called inside one (``return _dropout<false>(input, p, train)``, ``return
multiply<inplace>(input, noise)``) is followed into, the same rule in its body. A return that the
key cannot take is skipped: its conditions (``--why``'s reasons) are decided with the call's facts
and the key's device (Note [Deciding a branch]: a CPU key's tensors are dense CPU tensors, so
``input.is_cuda()`` and ``input.is_nested()`` are false), a helper that is one ``return EXPR;``
(``is_fused_kernel_acceptable(input, p)``) standing for its expression. So ``F.dropout(x, 0.5,
training=True)`` on CPU is ``_dropout_impl``'s ``multiply<false>(input, noise)``: ``input.mul(noise)``,
MulBackward0 (on CUDA, ``native_dropout``: NativeDropoutBackward0). An in-place op makes its
functional's node (``mul_`` records MulBackward0), so an overloaded helper whose two bodies call
``mul_`` and ``mul`` still names one node. Nothing decided (every return ruled out, no op found):
no answer, and the caller lists the candidates.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable

from atenmap.kinds import FactKind
from atenmap.model import Role, Step
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.decide import decide_all
from atenmap.store import FactRow, Store

MAX_HELPER_DEPTH = 4
_CALLED_AT = re.compile(r"called at ([^\s:]+):([\d, ]+)")
_OVERLOADS = re.compile(r"calls the operator \(([^)]*)\)")
_BARE_CALL = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(([^()]*)\)")
_MADE_BY = re.compile(r"made by macro (\w+)")
_ONE_RETURN = re.compile(r"\{\s*return\s+(.+?);\s*\}\s*$", re.S)


class OutputProducer:
    def __init__(self, store: Store, lines: Callable[[str], list[str]], nodes: Callable[[str], tuple[str, ...]]):
        self.store = store
        self.lines = lines  # file -> its lines
        self.nodes = nodes  # operator name -> the nodes it records on the key asked

    def node(self, native: Step, facts: CallFacts, key: str) -> tuple[str, ...]:
        """The node(s) of what ``native`` (the composite kernel's step, with ``why`` reasons) returns
        on ``key``: See Note [The node of a composite's output]. () when not decided."""
        facts = dataclasses.replace(facts, device=key)
        return self._returned(native, facts, 0)

    def _returned(self, fn_step: Step, facts: CallFacts, depth: int) -> tuple[str, ...]:
        fn = self._function(fn_step)
        if fn is None:
            return ()
        returns = self._return_lines(fn)
        macro = _MADE_BY.search(fn_step.detail)
        returned_text = self._macro_returns(fn.file, macro.group(1)) if macro else ""
        for child, lines in sorted(((c, self._call_lines(c, fn)) for c in fn_step.children),
                                   key=lambda t: min(t[1], default=0)):
            if macro:  # its calls sit at the macro's use: read the #define's return statements
                name = child.symbol.split("::")[-1].split()[0]
                if not re.search(rf"\b{re.escape(name)}\b", returned_text):
                    continue
            elif not returns.intersection(lines):
                continue
            if child.why and decide_all(child.why, facts, lambda r: (self._flags(r.text, fn), {})) is False:
                continue
            if child.role == Role.OP_CALL:
                got = self._op_nodes(child)
            elif child.role == Role.HELPER and depth < MAX_HELPER_DEPTH:
                got = self._returned(child, facts, depth + 1)
            else:
                got = ()
            if got:
                return got
        return ()

    def _op_nodes(self, step: Step) -> tuple[str, ...]:
        """The node an op call records: one name when its overloads (out= ones aside) agree, the
        call's own overload being unknown here; helpers overloaded on in-place-ness are followed as
        the chain shows them (Note [The node of a composite's output])."""
        m = _OVERLOADS.search(step.detail)
        names = [n.strip() for n in m.group(1).split(",")] if m else [step.symbol.split("::")[-1].split()[0]]
        names = [n for n in names if n and not n.partition(".")[2].endswith("out")]  # mul.out, where.self_out
        found = {n: self.nodes(n) for n in names}
        plain = [n for n in names if "." not in n or n.split(".", 1)[1] in ("Tensor", "default")] or names
        nodes = tuple(dict.fromkeys(x for n in plain for x in found[n]))
        return nodes if len(nodes) == 1 else ()

    # ---- the kernel's text --------------------------------------------------------------------
    def _function(self, step: Step) -> FactRow | None:
        if step.file is None:
            return None
        return next((f for f in self.store.in_file(step.file, (FactKind.FUNCTION,)) if f.line == step.line), None)

    def _return_lines(self, fn: FactRow) -> set[int]:
        """The lines a ``return`` statement of ``fn``'s body spans (to its ``;``)."""
        out, inside = set(), False
        for n in range(fn.line, (fn.end_line or fn.line) + 1):
            text = self._line(fn.file, n).split("//")[0]
            if re.search(r"\breturn\b", text):
                inside = True
            if inside:
                out.add(n)
                if ";" in text:
                    inside = False
        return out

    def _macro_returns(self, file: str, macro: str) -> str:
        """The ``return`` statements of ``#define macro``'s body in ``file`` (a function a macro makes:
        ``ALIAS_SPECIALIZATION(_dropout, false, false)`` in Dropout.cpp), as one text."""
        lines = self.lines(file)
        start = next((i for i, t in enumerate(lines) if re.match(rf"\s*#\s*define\s+{re.escape(macro)}\b", t)), None)
        if start is None:
            return ""
        body = []
        for t in lines[start:]:
            body.append(t.rstrip().rstrip("\\"))
            if not t.rstrip().endswith("\\"):
                break
        return " ".join(re.findall(r"\breturn\b[^;]*;", " ".join(body)))

    def _call_lines(self, step: Step, fn: FactRow) -> list[int]:
        if step.role != Role.HELPER:
            return [step.line] if step.line else []
        m = _CALLED_AT.search(step.detail)
        if not m or not fn.file.endswith(m.group(1)):
            return []
        return [int(x) for x in m.group(2).replace(" ", "").split(",") if x.isdigit()]

    def _flags(self, condition: str, fn: FactRow) -> dict[str, str]:
        """``name(args)`` atoms of ``condition`` that call a function of ``fn``'s file whose body is one
        ``return EXPR;`` -> EXPR with its parameters renamed to the arguments (Note [The node of a
        composite's output])."""
        out = {}
        for m in _BARE_CALL.finditer(condition):
            name, args = m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()]
            for f in self.store.by_name(name, (FactKind.FUNCTION,)):
                if f.file != fn.file or f.generated:
                    continue
                text = "\n".join(self._line(f.file, n) for n in range(f.line, (f.end_line or f.line) + 1))
                body = _ONE_RETURN.search(text)
                params = re.findall(r"(\w+)\s*(?:,|\))", text[text.find("(") + 1: text.find(")") + 1])
                if body is None or len(params) != len(args):
                    continue
                expr = body.group(1)
                for p, a in zip(params, args):
                    expr = re.sub(rf"\b{re.escape(p)}\b", a, expr)
                out[m.group(0).replace(" ", "")] = " ".join(expr.split())
                break
        return out

    def _line(self, file: str, n: int) -> str:
        lines = self.lines(file)
        return lines[n - 1] if 0 < n <= len(lines) else ""


def composite_native(chain_steps: tuple[Step, ...]) -> Step | None:
    """The first native step of a key's chain (the composite kernel: yaml -> register -> wrapper -> native)."""
    stack = list(chain_steps)
    while stack:
        s = stack.pop(0)
        if s.role == Role.NATIVE:
            return s
        stack = list(s.children) + stack
    return None


__all__ = ["OutputProducer", "composite_native"]
