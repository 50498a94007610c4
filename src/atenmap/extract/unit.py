"""One parse of a source text and the state the extraction steps share."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from atenmap.extract.blanking import mask_code
from atenmap.extract.fact import Fact
from atenmap.extract.nodes import scope_names
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node, Tree


@dataclass
class Unit:
    """One parse of a source text and the state its extraction steps share. Facts point at their
    enclosing function by index (``scope``); ``funcs`` are ``(start_byte, end_byte, fact index)``."""

    src: bytes
    text: bytes
    lang: str
    tree: Tree
    line_offset: int = 0
    fixed_line: int | None = None
    via_macro: str = ""
    base_namespace: str = ""
    text_ns: Callable[[int], str] | None = None
    text_fns: list[tuple[int, int, int, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    funcs: list[tuple[int, int, int]] = field(default_factory=list)
    refs: list[tuple[Node, dict[str, Node], str]] = field(default_factory=list)
    receivers: dict[tuple[int, str], tuple[int, str]] = field(default_factory=dict)  # see _receiver_type
    declared: dict[int, frozenset[str]] = field(default_factory=dict)  # see operators._tensors
    operators: set[tuple[int, int]] = field(default_factory=set)  # see operators.tensor_operator
    template_params: set[str] | None = None
    objects: dict[str, str] = field(default_factory=dict)  # namespace-scope object -> class (objects.py)
    macro_defs: dict = field(default_factory=dict)  # the file's function-like #defines (macros.Defines)
    classes: set[str] = field(default_factory=set)  # names of the classes defined in the text
    _masked: bytes | None = None
    _masked_blocks: bytes | None = None
    cut_ends: dict[int, int] = field(default_factory=dict)  # a broken function's start byte -> its body's end

    def masked(self) -> bytes:
        """``text`` with preprocessor lines, #else branches, comments and literals blanked, made
        once (the brace matching of broken files and the functor-object reader both read it)."""
        if self._masked is None:
            self._masked = mask_code(self.text)
        return self._masked

    def masked_blocks(self) -> bytes:
        """``masked`` for the brace matching of namespaces and functions (textblocks.py): the
        #else branches of conditionals whose branches each balance their braces are kept (Note
        [Balanced #else branches] in blanking.py)."""
        if self._masked_blocks is None:
            self._masked_blocks = mask_code(self.text, balanced_branches=True)
        return self._masked_blocks

    def line_of(self, node: Node, end: bool = False) -> int:
        if self.fixed_line is not None:
            return self.fixed_line
        return (node.end_point if end else node.start_point)[0] + 1 + self.line_offset

    def ns_of(self, node: Node) -> tuple[str, str]:
        ns, cls = scope_names(node, self.tree.root_node)
        if self.text_ns is not None:
            ns = [p for p in self.text_ns(node.start_byte).split("::") if p]
        if self.base_namespace:
            ns = [self.base_namespace] + ns
        return "::".join(ns), "::".join(cls)

    def fact(self, kind: FactKind, name: str, qual: str, line: int, end_line: int = 0, namespace: str = "",
             scope: int = -1, arg: str = "", detail: str = "", targs: str = "") -> Fact:
        """A fact of this text; its kind and detail kept as their text (rows stay plain text: the
        fact cache marshals them), read off the member (``_value_``: a plain attribute, cheaper than
        ``str()`` once per fact)."""
        return Fact(kind if type(kind) is str else kind._value_, name, qual, line, end_line or line, namespace,
                    scope, arg, detail if type(detail) is str else detail._value_, self.via_macro, "", targs)


class Scopes:
    """byte -> index of the innermost enclosing function fact. A macro-shaped block
    (NAME(args) {...}) only scopes references when it is TORCH_LIBRARY*."""

    def __init__(self, unit: Unit):
        block = FactKind.MACRO_BLOCK  # once: an enum member's lookup costs ~150 ns
        self.funcs = sorted(f for f in unit.funcs if unit.facts[f[2]].kind != block
                            or unit.facts[f[2]].name.startswith("TORCH_LIBRARY"))
        self.starts = [f[0] for f in self.funcs]
        self._spans = {i: (s, e) for s, e, i in self.funcs}
        # up[j]: the last k < j whose function ends after funcs[j]'s (-1: none). ``at`` steps from
        # j to up[j]: the functions between end no later than funcs[j], so none of them can hold
        # what funcs[j] does not (a byte at namespace level in a file of 5,000 functions is one
        # step, not 5,000).
        self.up: list[int] = []
        stack: list[int] = []
        for j, (_s, e, _i) in enumerate(self.funcs):
            while stack and self.funcs[stack[-1]][1] <= e:
                stack.pop()
            self.up.append(stack[-1] if stack else -1)
            stack.append(j)

    def outside(self, size: int) -> list[tuple[int, int]]:
        """The byte ranges ``[a, b)`` of a text of ``size`` bytes where ``at`` is -1 (no function
        holds them), in order."""
        out, pos = [], 0
        for s, e, _i in self.funcs:
            if s > pos:
                out.append((pos, s))
            pos = max(pos, e + 1)
        if pos < size:
            out.append((pos, size))
        return out

    def span(self, idx: int) -> tuple[int, int]:
        """Byte range of the function fact ``idx``."""
        return self._spans.get(idx, (0, 0))

    def at(self, start: int, end: int | None = None) -> int:
        end = start if end is None else end
        i = bisect.bisect_right(self.starts, start) - 1  # every function up to i starts at or before ``start``
        funcs, up = self.funcs, self.up
        while i >= 0:
            _s, e, idx = funcs[i]
            if end <= e:
                return idx
            i = up[i]
        return -1
