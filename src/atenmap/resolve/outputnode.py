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
``mul_`` and ``mul`` still names one node. An op call found in a return that is itself a composite on
the key records no node of its own: its kernel's returns are read the same way (api.Index's
``_operator_output``), none of the outer call's arguments known, so only what the key and the tree
decide holds there, and a return left open by anything but a rank gives no answer (``strict``);
one the ranks leave open gives the default call's node, and the outer answer is not decided.
``F.cross_entropy(x, t)`` returns ``at::nll_loss_nd_symint(at::log_softmax(...), ...)``: nll_loss_nd's
node (``nll_loss`` for a 2-D input, ``nll_loss2d`` for 4-D), never log_softmax's, which is its
argument. A local declared as a copy of a tensor (``Tensor input_ = self;``) has its rank. Nothing
decided (every return ruled out, no op found): no answer, and the caller lists the candidates.

Note [A branch the ranks pick]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Some composites pick their return by the ranks of their tensors: ``_matmul_impl``'s ``if
(dim_tensor1 == 1 && dim_tensor2 == 1) return ... tensor1.dot(tensor2); else if (dim_tensor1 == 2 &&
dim_tensor2 == 1) ... mv ... else if (dim_tensor1 == 2 && dim_tensor2 == 2) ... mm``, linear's ``if
(input_dim == 2 && bias->defined()) return at::addmm(...)``. The ranks are the call's to give: an
example's factories (``torch.randn(3, 4)``) or ``--shape`` give one shape per tensor argument, in the
order of the composite's Tensor parameters, and they are carried into helpers by the arguments passed
(``_matmul_impl(unused, tensor1, tensor2)``); a local set once from a rank (``const auto dim_tensor1 =
tensor1.dim();``) or from ranks (``transpose = dim_tensor2 > dim_tensor1``) stands for its value. Then
the return is decided as any other. The branches are read from the function's text (``if`` / ``else
if`` / ``else`` around the return, and the sides of a returned ``c ? a : b``), since a call made on
several lines (``mm`` at three returns of _matmul_impl) carries the chain's reasons of its first; a
returned local (``return result;``, ``: output;``) is the value of its nearest assignment above; of a
return's calls the outermost gives the value (``a.unsqueeze(0).mm(b).squeeze_(0)``: ``squeeze_``) and
an out= call none. A helper the condition calls (``should_fold(tensor1, tensor2, has_out)``), a local
the ranks choose (the fold's ``t2``), a batch size and the composite's own call are read as Note [A
helper a condition calls] in helpercall.py says. Where a rank the call does not give still decides
(``torch.matmul(a, b)``), nothing is dropped: the answer is "not decided by the
given arguments" (``OutputAnswer.decided`` false), every node a return can give in source order,
the default call's first: its tensors matrices (``DEFAULT_RANK``: the default call's tensors have
more than one dimension, Note [Deciding a branch], and 2-D is the common case of matmul and linear),
the ranks given kept; then the rest of the decomposition's nodes. Other undecided conditions keep
the rule above (the first return not ruled out).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable

from atenmap.extract import macros
from atenmap.kinds import FactKind
from atenmap.model import Reason, Role, Step
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.decide import decide_all
from atenmap.resolve.helpercall import Known, helper_value, read_locals
from atenmap.store import FactRow, Store

MAX_HELPER_DEPTH = 4
DEFAULT_RANK = 2  # the default call's tensors, for ranking the nodes of a return the ranks pick: matrices
_TENSOR_PARAM = re.compile(r"\bTensor\b")
_TENSOR_LIST = re.compile(r"TensorList|ITensorListRef|\bvector\s*<|ArrayRef|\[\]")
_RANK_LOCAL = re.compile(r"\b(?:const\s+)?(?:auto|int64_t|int|size_t|long|unsigned)\s+(\w+)\s*=\s*(\w+)\s*(?:\.|->)\s*(?:dim|ndimension)\(\)\s*;")
_TENSOR_COPY = re.compile(r"^\s*(?:const\s+)?(?:at::)?(?:Tensor|auto)\s*&?\s+(\w+)\s*=\s*(\w+)\s*;")
_DIM_CALL = re.compile(r"\b(\w+)\s*(?:\.|->)\s*(?:dim|ndimension)\(\)")
_LOCAL = re.compile(r"\b(?:const\s+)?(?:auto|bool)\s+(\w+)\s*=\s*([^;?]+);")
_IF_HEAD = re.compile(r"(else\s+)?if\s*(?:constexpr\s*)?\(")
_ELSE_HEAD = re.compile(r"else\b(?!\s+if\b)")
_AT_LINES = re.compile(r"\bat lines ([\d, ]+)")
_CALLED_AT = re.compile(r"called at ([^\s:]+):([\d, ]+)")
_OVERLOADS = re.compile(r"calls the operator \(([^)]*)\)")
_BARE_CALL = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(([^()]*)\)")
_MADE_BY = re.compile(r"made by macro (\w+)")
_SYMINT = "_symint"  # the C++ API's SymInt variant of an op: at::nll_loss_nd_symint is aten::nll_loss_nd
_OPTIONAL_TENSOR = re.compile(r"optional\s*<\s*(?:at::)?Tensor\s*>")
_DECLARED = re.compile(r"(?:\bauto|\bTensor|>)\s*&?\s+(\w+)\s*=\s*([^;]*);")
_ONE_RETURN = re.compile(r"\{\s*return\s+(.+?);\s*\}\s*$", re.S)


class OutputProducer:
    def __init__(self, store: Store, lines: Callable[[str], list[str]],
                 nodes: Callable[[str, tuple | None], tuple[tuple[str, ...], bool]]):
        self.store = store
        self.lines = lines  # file -> its lines
        # (operator name, the shapes its call passes or None) -> the nodes it records on the key asked, and
        # whether the call decides them (a composite's returned op whose ranks pick: False, the default
        # call's node given)
        self.nodes = nodes
        self.strict = False
        self.absent: dict[str, str] = {}  # the answer's optional tensors left out (Note [Optional tensors a call leaves out])
        self.shapes: dict[str, tuple[int, ...]] = {}  # the answer's tensor parameters -> the shapes given

    def node(self, native: Step, facts: CallFacts, key: str) -> tuple[str, ...]:
        """The node(s) of what ``native`` (the composite kernel's step, with ``why`` reasons) returns
        on ``key``: See Note [The node of a composite's output]. () when not decided."""
        got = self.answer(native, facts, key)
        return got.nodes if got.decided else ()

    def answer(self, native: Step, facts: CallFacts, key: str, strict: bool = False) -> "OutputAnswer":
        """The node the call's output gets, or, where the ranks of its tensors pick the return and the
        call does not give them, every node a return can give, the default call's first (Note [A
        branch the ranks pick]). ``strict`` (a composite returned inside another's return, read without
        the call's arguments): a return left undecided by anything but a rank gives no answer."""
        facts = dataclasses.replace(facts, device=key)
        self.strict = strict
        fn = self._function(native)
        ranks = self._ranks(fn, facts.shapes) if fn is not None else {}
        # Note [Optional tensors a call leaves out]
        self.absent = self._absent(fn, facts.shapes) if fn is not None else {}
        self.shapes = self._shapes(fn, facts.shapes) if fn is not None else {}
        found = self._returned(native, facts, 0, ranks)
        if not found:
            return OutputAnswer((), False)
        if found[0][1]:
            return OutputAnswer(found[0][0], True)
        default = self._returned(native, facts, 0, {**self._ranks(fn, None, DEFAULT_RANK), **ranks})
        first = default[0][0] if default else ()  # the default call's first return not ruled out
        return OutputAnswer(tuple(dict.fromkeys((*first, *(x for n, _ in found for x in n)))), False, True)

    def _returned(self, fn_step: Step, facts: CallFacts, depth: int, ranks: dict[str, int],
                  targs: dict[str, str] | None = None, sizes: dict | None = None) -> list[tuple[tuple[str, ...], bool]]:
        """The nodes the returns of ``fn_step`` can give, in source order, each with whether the call
        surely takes it; up to the first it surely takes. ``targs``: its template parameters the call
        binds to ``true``/``false`` (Note [Template arguments a helper is called with]) and its
        parameters passed an undefined tensor (``None``); ``sizes``: its tensors' shapes."""
        targs = targs or {}
        fn = self._function(fn_step)
        if fn is None:
            return []
        rank_names = self._rank_names(fn)
        ranks = {**ranks, **{n: ranks[t] for n, t in rank_names.items() if t in ranks},
                 **{x: ranks[t] for x, t in self._tensor_copies(fn).items() if t in ranks and x not in ranks}}
        # Note [A helper a condition calls]: the locals chosen by ranks, flags, leading sizes
        known = self._known(fn, facts, ranks, rank_names, self.shapes if depth == 0 else (sizes or {}), targs)
        ranks = {**{n: r for n, r in known.ranks.items() if n not in ranks}, **ranks}
        macro = _MADE_BY.search(fn_step.detail)
        returned_text = self._macro_returns(fn.file, macro.group(1)) if macro else ""
        sites = [(c, self._call_lines(c, fn)) for c in fn_step.children]
        # (first line of the statement, its extra reasons, its calls, the value's own first): one per
        # return statement, or per side of a ``c ? a : b`` it returns
        groups: list[tuple[int, list[Reason], list[Step], str]] = []
        if macro:  # its calls sit at the macro's use: read the #define's return statements
            for c, lines in sorted(sites, key=lambda t: min(t[1], default=0)):
                name = c.symbol.split("::")[-1].split()[0]
                if re.search(rf"\b{re.escape(name)}\b", returned_text):
                    groups.append((min(lines, default=0), [], [c], ""))
        else:
            for start, end in self._statements(fn):
                text = " ".join(self._code(fn.file, n) for n in range(start, end + 1))
                for extra, value in _sides(text[re.search(r"\breturn\b", text).end():] if "return" in text else text):
                    # a local returned as is, or moved out (``return b ? std::move(output) : output.squeeze(0)``)
                    var = re.fullmatch(r"\s*(?:std::(?:move|forward(?:<[^<>]*>)?))?\s*\(?\s*(\w+)\s*\)?\s*;?\s*", value)
                    spans = self._assignments(fn, var.group(1), start) if var else [(start, end, value)]
                    for s0, e0, t0 in spans:
                        inside = [c for c, lines in sites if any(s0 <= n <= e0 for n in lines)]
                        calls = self._outermost(inside, t0)
                        if calls:
                            groups.append((s0, extra, calls, t0))
        out: list[tuple[tuple[str, ...], bool]] = []
        for start, extra, children, value_text in groups:
            for child in children:
                first = self._first_site(child, fn)
                if macro:
                    reasons = list(child.why)
                else:  # the branches read here (the chain's are its first line's), its other reasons kept
                    own = first == start
                    reasons = [*self._branches(fn, start), *extra,
                               *(r for r in child.why if own and r.kind not in ("if", "else", "ternary"))]
                if reasons:
                    reasons = [self._ranked(_rewritten(r, known), ranks, rank_names, fn) for r in reasons]
                    absent = self.absent if depth == 0 else {}
                    if absent:  # a left-out optional's MaybeOwned local: `bias->defined()` is `bias.defined()`
                        reasons = [_through_arrow(r, absent) for r in reasons]
                    taken = decide_all(reasons, facts, lambda r: (
                        {**self._flags(r.text, fn), **self._helper_flags(r.text, fn, known)},
                        {**self._rank_bound(ranks, rank_names), **targs, **absent}))
                else:
                    taken = True
                if taken is False or (taken is None and not self.strict and _one_value(reasons, self._params(fn))):
                    break  # the statement is not reached (or only for one value: Note [One value's return])
                by_rank = any(_mentions_rank(r.text, rank_names, ranks) for r in reasons)
                if self.strict and taken is not True and not by_rank:
                    return []  # Note [The node of a composite's output]: not read without the call's arguments
                sure = taken is True or not by_rank
                recur = self._self_call(fn_step, fn, value_text, known, facts, depth)
                if recur is not None or (child.role == Role.HELPER and depth < MAX_HELPER_DEPTH):
                    got = recur if recur is not None else self._helper_returns(child, fn, facts, depth, ranks, targs, known)
                    if not got:  # the value is the helper's (or the function's own call's), not decided
                        return out  # never its arguments'
                elif child.role == Role.OP_CALL:
                    op_nodes, op_sure = self._op_nodes(child, value_text, self.shapes if depth == 0 else {})
                    got = [(op_nodes, op_sure)] if op_nodes else []
                else:
                    got = []
                if not got:
                    continue
                out += [(n, s and sure) for n, s in got]
                if out[-1][1]:
                    return out
                break  # this statement's value: its other calls are its arguments
        return out

    def _known(self, fn: FactRow, facts: CallFacts, ranks: dict[str, int], rank_names: dict[str, str],
               sizes: dict, bound: dict[str, str]) -> Known:
        """What ``fn``'s locals hold for the call (Note [A helper a condition calls])."""
        known = Known(facts, ranks={n: r for n, r in ranks.items() if n not in rank_names},
                      sizes={n: s for n, s in sizes.items() if n in ranks},
                      values={**{n: str(ranks[n]) for n in rank_names if n in ranks},
                              **{n: v for n, v in bound.items() if v in ("true", "false", "None")}})
        text = "\n".join(self._line(fn.file, n) for n in range(fn.line, (fn.end_line or fn.line) + 1))
        return read_locals(known, text[text.find("{"):] if "{" in text else "")

    def _helper_returns(self, child: Step, fn: FactRow, facts: CallFacts, depth: int, ranks: dict[str, int],
                        targs: dict[str, str], known: Known) -> list[tuple[tuple[str, ...], bool]]:
        """The returns of a helper ``fn`` calls, read with the ranks, shapes, template arguments and
        undefined tensors its call passes (Note [A helper a condition calls])."""
        shapes = self._passed(child, fn, known.sizes, known.shape_of)
        return self._returned(child, facts, depth + 1,
                              {**{p: len(x) for p, x in shapes.items()}, **self._passed(child, fn, ranks)},
                              {**self._template_binding(child, fn, targs),
                               **self._passed(child, fn, {n: v for n, v in known.values.items() if v == "None"})},
                              shapes)

    def _self_call(self, fn_step: Step, fn: FactRow, value: str, known: Known, facts: CallFacts,
                   depth: int) -> list | None:
        """A value that is the function's own call (``return _matmul_impl(out, tensor1.squeeze(0),
        tensor2);``): its returns, read with the shapes of the arguments passed (Note [A helper a
        condition calls]); None when ``value`` is no such call."""
        m = re.match(rf"\s*(?:[\w:]*::)?{re.escape(fn.name.split('::')[-1])}\s*\(", value)
        if m is None:
            return None
        params = self._params(fn)
        args = _top_level_args(value[m.end():])
        if len(args) != len(params) or depth >= MAX_HELPER_DEPTH:
            return []
        shapes = {p: s for (_t, p), a in zip(params, args) if (s := known.shape_of(a)) is not None}
        undefined = {p: "None" for (_t, p), a in zip(params, args) if known.values.get(a.strip()) == "None"}
        return self._returned(fn_step, facts, depth + 1, {p: len(s) for p, s in shapes.items()}, undefined, shapes)

    def _helper_flags(self, condition: str, fn: FactRow, known: Known) -> dict[str, str]:
        """``name(args)`` atoms of ``condition`` that call a boolean helper of ``fn``'s file of several
        statements, decided by binding the arguments (Note [A helper a condition calls])."""
        out = {}
        for m in _BARE_CALL.finditer(condition):
            name, args = m.group(1), [a.strip() for a in macros.split_args(m.group(2), angles=True) if a.strip()]
            for f in self.store.by_name(name, (FactKind.FUNCTION,)):
                if f.file != fn.file or f.generated:
                    continue
                text = "\n".join(self._line(f.file, n) for n in range(f.line, (f.end_line or f.line) + 1))
                if not re.match(r"\s*(?:static\s+)?(?:inline\s+)?(?:constexpr\s+)?bool\b", text):
                    continue
                got = helper_value(text, args, known)
                if got is not None:
                    out[m.group(0).replace(" ", "")] = "true" if got else "false"
                break
        return out

    def _assignments(self, fn: FactRow, var: str, before: int) -> list[tuple[int, int, str]]:
        """(first line, last line, right-hand side) of each assignment to ``var`` above line ``before``
        (``auto output = at::_unsafe_view(...); ... return output;``), nearest first."""
        rx = re.compile(rf"(?:^|[^\w.>])(?:const\s+)?(?:auto\s+|Tensor\s+)?{re.escape(var)}\s*=(?!=)")
        out, n = [], fn.line
        while n < before:
            m = rx.search(self._code(fn.file, n))
            if m:
                end = n
                while ";" not in self._code(fn.file, end) and end < before:
                    end += 1
                text = " ".join(self._code(fn.file, k) for k in range(n, end + 1))
                out.append((n, end, text[text.find("=", m.start() + 1) + 1:]))
                n = end
            n += 1
        return out[::-1]

    # ---- ranks (Note [A branch the ranks pick]) -------------------------------------------------
    def _params(self, fn: FactRow) -> list[tuple[str, str]]:
        """(type, name) of ``fn``'s parameters, read from its signature."""
        text = " ".join(self._line(fn.file, n) for n in range(fn.line, min(fn.line + 8, (fn.end_line or fn.line)) + 1))
        open_ = text.find("(")
        if open_ < 0:
            return []
        close = macros.balanced_paren(text, open_)
        out = macros.split_args(text[open_ + 1:close - 1] if close > 0 else text[open_ + 1:], angles=True)
        params = []
        for p in out:
            m = re.match(r"\s*(.*?)\s*\b([A-Za-z_]\w*)\s*(?:=.*)?$", p.split("=")[0].strip() + " ")
            if m and m.group(1):
                params.append((m.group(1), m.group(2)))
        return params

    def _ranks(self, fn: FactRow | None, shapes, every: int | None = None) -> dict[str, int]:
        """Tensor parameter -> its rank: from the call's shapes (tensors in order), or ``every``."""
        if fn is None:
            return {}
        if every is not None:
            return {n: every for _t, n in self._tensor_params(fn)}
        return {n: len(s) for n, s in self._shapes(fn, shapes).items()}

    def _tensor_params(self, fn: FactRow) -> list[tuple[str, str]]:
        return [(t, n) for t, n in self._params(fn) if _TENSOR_PARAM.search(t) and not _TENSOR_LIST.search(t)]

    def _shapes(self, fn: FactRow, shapes) -> dict[str, tuple[int, ...]]:
        """Tensor parameter -> the shape the call gives it (tensors in order); the optional tensors
        after the last one given are left out (Note [Optional tensors a call leaves out])."""
        tensors = self._tensor_params(fn)
        if shapes is None or len(shapes) > len(tensors) or (len(shapes) < len(tensors) and not all(
                _OPTIONAL_TENSOR.search(t) for t, _n in tensors[len(shapes):])):
            return {}
        return {n: tuple(s) for (_t, n), s in zip(tensors, shapes)}

    # Note [Optional tensors a call leaves out]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # ``F.linear(x, w)`` passes no bias: given two shapes (``--shape 3x4,5x4``), linear's third Tensor
    # parameter, ``const std::optional<Tensor>& bias_opt``, is left at None. Its kernel reads it through a
    # local (the hacky wrapper: ``auto bias = bias_opt.has_value() ? MaybeOwned<Tensor>::borrowed(*bias_opt)
    # : MaybeOwned<Tensor>::owned(std::in_place);``, or ``borrow_from_optional_tensor(bias_opt)`` then
    # ``const Tensor& bias = *bias_maybe_owned;``), so the parameter and every local declared from it are
    # bound to None, and ``bias->defined()`` is false (read as ``bias.defined()``, decide.py's optional
    # atoms, for these names only: a default call binds the schema's ``bias`` too): linear's addmm and
    # flattened returns are passed over, and the ``at::matmul(input, weight.t())`` it returns is asked
    # with the shapes its arguments have (a parameter's own, ``t()``/``mT()`` its last two swapped,
    # ``contiguous()`` its own), so that composite's ranks pick its return too. Only the leading
    # parameters get the shapes given, and only trailing optional tensors may be left out.
    def _absent(self, fn: FactRow, shapes) -> dict[str, str]:
        """The optional tensor parameters the call leaves out and the locals declared from them -> None."""
        tensors = self._tensor_params(fn)
        if not self._shapes(fn, shapes) or len(shapes) >= len(tensors):
            return {}
        out = {n: "None" for _t, n in tensors[len(shapes):]}
        text = " ".join(self._code(fn.file, n) for n in range(fn.line, (fn.end_line or fn.line) + 1))
        for _ in range(2):  # a local from a local (``*bias_maybe_owned``)
            for m in _DECLARED.finditer(text):
                if m.group(1) not in out and any(re.search(rf"\b{re.escape(x)}\b", m.group(2)) for x in out):
                    out[m.group(1)] = "None"
        return out

    def _rank_names(self, fn: FactRow) -> dict[str, str]:
        """Locals set once from a tensor's rank (``const auto dim_tensor1 = tensor1.dim();``) -> the tensor."""
        out = {}
        for n in range(fn.line, (fn.end_line or fn.line) + 1):
            m = _RANK_LOCAL.search(self._line(fn.file, n))
            if m:
                out[m.group(1)] = m.group(2)
        return out

    def _tensor_copies(self, fn: FactRow) -> dict[str, str]:
        """Locals declared as a copy of a tensor (``Tensor input_ = self;``) -> that tensor: its rank is
        the tensor's (nll_loss_nd's ``input_.dim() == 2``). A later reassignment is not read."""
        out = {}
        for n in range(fn.line, (fn.end_line or fn.line) + 1):
            m = _TENSOR_COPY.search(self._code(fn.file, n))
            if m:
                out[m.group(1)] = m.group(2)
        return out

    # Note [Template arguments a helper is called with]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # A helper's template parameters may pick its return: _dropout_impl<feature_dropout, alpha_dropout,
    # inplace> returns ``multiply(input, noise)`` when ``!alpha_dropout`` and ``multiply(input,
    # noise).add_(b)`` otherwise. The call that reaches it passes them (``_dropout_impl<false, true,
    # inplace>(...)`` in the alias ``_alpha_dropout`` that ALIAS_SPECIALIZATION makes; the index keeps a
    # call's explicit template arguments, macro arguments put in), so they are paired by position with
    # the parameters of the ``template<...>`` line above the helper's definition, and a ``true``/``false``
    # (or a parameter of the caller bound to one) is known while the helper's returns are decided:
    # F.alpha_dropout in training gives AddBackward0, the add_ applied last.
    def _template_binding(self, helper: Step, fn: FactRow, outer: dict[str, str]) -> dict[str, str]:
        """``helper``'s template parameters bound to ``true``/``false`` by its call in ``fn``."""
        target = self._function(helper)
        lines = set(self._call_lines(helper, fn)) or ({fn.line} if helper.line is None else set())
        if target is None or not lines:
            return {}
        head = self._line(target.file, target.line - 1) + " " + self._line(target.file, target.line)
        m = re.search(r"\btemplate\s*<([^<>]*)>", head)
        if m is None:
            return {}
        params = [p.split("=")[0].split()[-1].lstrip(".") for p in m.group(1).split(",") if p.split()]
        for call in self.store.by_name(target.name, (FactKind.CALL,)):
            if call.file == fn.file and call.line in lines and call.targs:
                args = [outer.get(a.strip(), a.strip()) for a in call.targs.split(",")]
                return {p: a for p, a in zip(params, args) if a in ("true", "false")}
        return {}

    def _passed(self, helper: Step, fn: FactRow, ranks: dict, read: Callable[[str], object] | None = None) -> dict:
        """The ranks of ``helper``'s tensor parameters, from the arguments ``fn`` passes it (``read``:
        an argument's value, for what a bare name does not give)."""
        target = self._function(helper)
        lines = self._call_lines(helper, fn)
        if target is None or not lines or not ranks:
            return {}
        name = helper.symbol.split("::")[-1].split()[0]
        text = " ".join(self._line(fn.file, n) for n in range(lines[0], lines[0] + 3))
        m = re.search(rf"\b{re.escape(name)}\s*(?:<[^<>()]*>)?\s*\(", text)
        if m is None:
            return {}
        args = _top_level_args(text[m.end():])
        params = self._params(target)
        if len(args) != len(params):
            return {}
        if read is not None:  # a tensor expression's shape (``tensor1.squeeze(0)``: Note [A helper a condition calls])
            return {p: got for (_t, p), a in zip(params, args) if (got := read(a)) is not None}
        return {p: ranks[a.strip().lstrip("*")] for (_t, p), a in zip(params, args) if a.strip().lstrip("*") in ranks}

    @staticmethod
    def _rank_bound(ranks: dict[str, int], names: dict[str, str]) -> dict[str, str]:
        return {f"{t}__rank": str(r) for t, r in ranks.items()} | {n: str(ranks[n]) for n in names if n in ranks}

    def _ranked(self, r: Reason, ranks: dict[str, int], names: dict[str, str], fn: FactRow) -> Reason:
        """``r`` with the ranks the call gives written in: ``t.dim()`` as a bound name (decide's
        ``_bound``), a local computed from ranks (``transpose = dim_tensor2 > dim_tensor1``) as its
        value where the ranks decide it."""
        text = r.text
        for name, expr in self._rank_flags(fn, names).items():
            text = re.sub(rf"(?<![\w.]){re.escape(name)}\b(?!\s*\()", f"({expr})", text)
        text = _DIM_CALL.sub(lambda m: f"{m.group(1)}__rank" if m.group(1) in ranks else m.group(0), text)
        known = {**{f"{t}__rank": v for t, v in ranks.items()}, **{n: ranks[n] for n in names if n in ranks}}
        text = re.sub(r"\b(\w+)\s*(==|!=|<=|>=|<|>)\s*(\w+)\b",
                      lambda m: _compare(m, known), text)
        return r if text == r.text else dataclasses.replace(r, text=text)

    def _rank_flags(self, fn: FactRow, names: dict[str, str]) -> dict[str, str]:
        """Locals of ``fn`` set once from the ranks (``const auto transpose = dim_tensor2 > dim_tensor1;``)."""
        out = {}
        for n in range(fn.line, (fn.end_line or fn.line) + 1):
            m = _LOCAL.search(self._code(fn.file, n))
            if m and m.group(1) not in names and (_DIM_CALL.search(m.group(2)) or any(
                    re.search(rf"\b{re.escape(x)}\b", m.group(2)) for x in names)):
                out[m.group(1)] = m.group(2).strip()
        return out

    # ---- the statements a value is returned by ------------------------------------------------
    def _statements(self, fn: FactRow) -> list[tuple[int, int]]:
        """(first, last line) of each ``return`` statement of ``fn``'s body, in source order."""
        spans: list[tuple[int, int]] = []
        for n in sorted(self._return_lines(fn)):
            if spans and spans[-1][1] == n - 1 and ";" not in self._code(fn.file, n - 1):
                spans[-1] = (spans[-1][0], n)
            else:
                spans.append((n, n))
        return spans

    def _outermost(self, children: list[Step], text: str) -> list[Step]:
        """The calls of ``text`` (one returned value), the one whose value it is first: the least
        nested, the last of a chain (``a.unsqueeze(0).mm(b).squeeze_(0)``: ``squeeze_``); an out=
        call gives no node and the next is tried. Calls not in ``text`` are left out. An op call
        is also found by its C++ API's SymInt spelling (``at::nll_loss_nd_symint(...)`` for
        ``aten::nll_loss_nd``)."""
        def place(c: Step) -> tuple[int, int] | None:
            name = c.symbol.split("::")[-1].split()[0]
            best = None
            for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?:{_SYMINT})?\s*(?:<[^<>()]*>)?\s*\(", text):
                depth = text[:m.start()].count("(") - text[:m.start()].count(")")
                key = (depth, -m.start())
                best = key if best is None or key < best else best
            return best
        placed = [(place(c), c) for c in children]
        return [c for p, c in sorted((t for t in placed if t[0] is not None), key=lambda t: t[0])]

    def _first_site(self, step: Step, fn: FactRow) -> int | None:
        lines = self._call_lines(step, fn)
        return lines[0] if lines else None

    def _branches(self, fn: FactRow, line: int) -> list[Reason]:
        """The ``if`` / ``else if`` / ``else`` conditions around ``line`` in ``fn``'s body, as the chain's
        reasons write them (``if (c)``, ``else of if (c)``): for a call whose reasons the chain gives
        for another of its lines (``mm`` at two returns of _matmul_impl)."""
        text, starts = "", []
        for n in range(fn.line, line):
            starts.append((len(text), n))
            text += self._code(fn.file, n) + "\n"
        body = text.find("{")
        if body < 0:
            return []
        stack: list[tuple[list[Reason], list[str]]] = [([], [])]  # (a block's reasons, the chain outside it)
        chain: list[str] = []  # the conditions of this level's if / else if chain so far
        i = body + 1
        pending: list[Reason] | None = None
        while i < len(text):
            m = _IF_HEAD.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                is_else = bool(m.group(1))
                cond_end = macros.balanced_paren(text, m.end() - 1) - 1  # the condition's ``)``
                if cond_end < 0:
                    return []
                cond = " ".join(text[m.end() - 1:cond_end + 1].split())
                prior = [Reason("else", f"else of if {c}", None) for c in chain] if is_else else []
                pending = [*prior, Reason("if", f"if {cond}", None)]
                chain = [*chain, cond] if is_else else [cond]
                i = cond_end + 1
                continue
            m = _ELSE_HEAD.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                pending = [Reason("else", f"else of if {c}", None) for c in chain]
                i = m.end()
                continue
            ch = text[i]
            if ch == "{":
                stack.append((pending or [], chain))
                pending, chain = None, []
            elif ch == "}" and len(stack) > 1:
                chain = stack.pop()[1]
            elif ch == ";" and pending is not None:
                pending = None  # an if without braces: its one statement ended
            i += 1
        out = [r for level, _chain in stack for r in level]
        if pending:
            out += pending
        return out

    def _code(self, file: str, n: int) -> str:
        return self._line(file, n).split("//")[0]

    def _op_nodes(self, step: Step, text: str = "", shapes: dict | None = None) -> tuple[tuple[str, ...], bool]:
        """The node an op call records: one name when its overloads (out= ones aside) agree, or when
        the arguments the call's ``text`` passes pick one (Note [The overload a C++ call's arguments
        pick]); helpers overloaded on in-place-ness are followed as the chain shows them (Note [The
        node of a composite's output])."""
        m = _OVERLOADS.search(step.detail)
        names = [n.strip() for n in m.group(1).split(",")] if m else [step.symbol.split("::")[-1].split()[0]]
        names = [n for n in names if n and not n.partition(".")[2].endswith("out")]  # mul.out, where.self_out
        names = self._picked_by_arguments(step, names, text) or names
        passed = _passed_shapes(step, text, shapes or {})  # Note [Optional tensors a call leaves out]
        found = {n: self.nodes(n, passed) for n in names}
        plain = [n for n in names if "." not in n or n.split(".", 1)[1] in ("Tensor", "default")] or names
        nodes = tuple(dict.fromkeys(x for n in plain for x in found[n][0]))
        return (nodes, all(found[n][1] for n in plain)) if len(nodes) == 1 else ((), True)

    # Note [The overload a C++ call's arguments pick]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # An op call in a composite's return names an operator with several overloads (the chain lists
    # them: ``calls the operator (squeeze_, squeeze_.dim, squeeze_.dims, squeeze_.dimname)``), and their
    # nodes differ (SqueezeBackward3, SqueezeBackward4, ...). C++ picks one by the arguments, as Python
    # does (Note [The signature a call parses] in names.py): ``a.unsqueeze(0).mm(b).squeeze_(0)`` passes
    # one argument after the receiver (a method call's ``self``), so only the overloads whose schema
    # takes two positional arguments, its defaults left out or given, fit; and an integer literal binds
    # exactly to ``int``/``SymInt`` (an ``int[]`` takes it by a user-defined conversion, ArrayRef's
    # one-element constructor; a ``Dimname`` not at all), so those overloads go first. What is left
    # decides the node when it is one overload's (or its overloads agree); otherwise the rule above.
    def _picked_by_arguments(self, step: Step, names: list[str], text: str) -> list[str]:
        """The overloads of ``names`` the arguments of ``step``'s call in ``text`` fit (Note [The
        overload a C++ call's arguments pick]); [] when the text does not say."""
        name = step.symbol.split("::")[-1].split()[0]
        if len(names) < 2 or not text:
            return []
        calls = list(re.finditer(rf"(\.|->|::|\b){re.escape(name)}(?:{_SYMINT})?\s*\(", text))
        if len(calls) != 1:
            return []
        args = _top_level_args(text[calls[0].end():])
        method = calls[0].group(1) in (".", "->")
        literal = [bool(re.fullmatch(r"-?\d+", a.strip())) for a in ([""] if method else []) + args]
        fits, exact = [], []
        for n in names:
            rec = self.store.operator_record(n)
            params = _schema_params(rec.get("schema", "")) if rec else None
            if params is None:
                return []
            given = len(args) + (1 if method else 0)
            if not sum(1 for _t, d in params if not d) <= given <= len(params):
                continue
            fits.append(n)
            if all(not lit or params[i][0] in ("int", "SymInt") for i, lit in enumerate(literal)):
                exact.append(n)
        return exact or fits

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
        if step.role != Role.HELPER:  # an op call's every line of this function (``at lines 2033, 2035``)
            m = _AT_LINES.search(step.detail)
            more = [int(x) for x in m.group(1).replace(" ", "").split(",") if x.isdigit()] if m else []
            return sorted({step.line, *more} - {None}) if step.line else []
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


@dataclasses.dataclass(frozen=True)
class OutputAnswer:
    """``nodes``: the node the output gets (one, ``decided``), or every node a return the call's
    tensors' ranks pick can give, the default call's first (not ``decided``)."""

    nodes: tuple[str, ...]
    decided: bool
    ranked: bool = False  # not decided, and ranked by Note [A branch the ranks pick] (not a bare list)


# Note [One value's return]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# ``if (p == 1) return multiply<inplace>(input, at::zeros({}, ...));`` (_dropout_impl): a return taken
# only when a number parameter of the function equals one number is a special case of the returns
# after it, which serve every other value (as Note [Special cases after the general one] in runs.py
# ranks a run). When the call does not decide it, the default call's output comes from the general
# return, so such a return is passed over; a rank (``input.dim() == 2``) is no such value (Note [A
# branch the ranks pick]), nor is a condition joined by ``||``.
_ONE_VALUE = re.compile(r"\(*\s*([A-Za-z_]\w*)\s*==\s*-?\d+(?:\.\d*)?\s*\)*")
_NUMBER_TYPE = re.compile(r"\b(?:double|float|int64_t|int|long|c10::SymInt|SymInt|size_t)\b")


def _one_value(reasons, params: list[tuple[str, str]]) -> bool:
    """Whether an ``if`` of ``reasons`` tests a number parameter against one number: Note [One value's return]."""
    numbers = {n for t, n in params if _NUMBER_TYPE.search(t)}
    for r in reasons:
        if r.kind != "if":
            continue
        cond = r.text.removeprefix("if (").removesuffix(")")
        if "||" in cond:
            continue
        for term in cond.split("&&"):
            m = _ONE_VALUE.fullmatch(term.strip())
            if m and m.group(1) in numbers:
                return True
    return False


def _mentions_rank(text: str, rank_names: dict[str, str], ranks: dict[str, int]) -> bool:
    """Does a condition test a tensor's rank that the call does not give (``x.dim() == 2``,
    ``dim_tensor1 == 1``)? Known ranks are already written as bound names (``_ranked``)."""
    return bool(_DIM_CALL.search(text) or any(re.search(rf"\b{re.escape(n)}\b", text)
                                              for n in rank_names if n not in ranks))


def _compare(m: re.Match, known: dict[str, int]) -> str:
    """``a OP b`` of two known ranks (or a rank and a number) as ``true`` / ``false``, else as it was."""
    def value(x: str) -> int | None:
        return int(x) if x.isdigit() else known.get(x)
    a, b = value(m.group(1)), value(m.group(3))
    if a is None or b is None or (m.group(1).isdigit() and m.group(3).isdigit()):
        return m.group(0)
    ok = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[m.group(2)]
    return "true" if ok else "false"


def _sides(value: str) -> list[tuple[list[Reason], str]]:
    """A returned value's alternatives: ``c ? a : b`` (top level) is ``a`` under ``if (c)`` and ``b``
    under its else; anything else is itself."""
    depth, q = 0, -1
    for i, ch in enumerate(value):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "?" and depth == 0 and q < 0:
            q = i
        elif ch == ":" and depth == 0 and q >= 0 and value[i - 1] != ":" and value[i + 1:i + 2] != ":":
            cond = " ".join(value[:q].split())
            return [([Reason("if", f"if ({cond})", None)], value[q + 1:i]),
                    ([Reason("else", f"else of if ({cond})", None)], value[i + 1:])]
    return [([], value)]


def _rewritten(r: Reason, known: Known) -> Reason:
    """``r`` with what the call's locals hold written in (Note [A helper a condition calls])."""
    text = known.rewrite(r.text)
    return r if text == r.text else dataclasses.replace(r, text=text)


def _through_arrow(r: Reason, names: dict[str, str]) -> Reason:
    """``r`` with ``x->defined()`` / ``x->has_value()`` of the ``names`` written ``x.defined()``, as the
    optional atoms of decide.py read them (Note [Optional tensors a call leaves out])."""
    text = re.sub(r"\b(\w+)\s*->\s*(defined|has_value)\(\)",
                  lambda m: f"{m.group(1)}.{m.group(2)}()" if m.group(1) in names else m.group(0), r.text)
    return r if text == r.text else dataclasses.replace(r, text=text)


def _passed_shapes(step: Step, text: str, shapes: dict[str, tuple[int, ...]]) -> tuple | None:
    """The shapes of the tensors ``step``'s call in ``text`` passes, in order, each a parameter of the
    composite with a known shape, bare or through ``t()``/``mT()``/``contiguous()`` (Note [Optional
    tensors a call leaves out]); None when one is not known."""
    name = step.symbol.split("::")[-1].split()[0]
    calls = list(re.finditer(rf"(?<![\w.>]){re.escape(name)}(?:{_SYMINT})?\s*\(", text)) if shapes else []
    if len(calls) != 1:
        return None
    out = []
    for a in _top_level_args(text[calls[0].end():]):
        m = re.fullmatch(r"\s*\*?(\w+)((?:\s*(?:\.|->)\s*(?:t|mT|contiguous)\(\))*)\s*", a)
        if m is None or m.group(1) not in shapes:
            return None
        shape = shapes[m.group(1)]
        for _swap in re.findall(r"(t|mT)\(\)", m.group(2)):
            shape = shape[:-2] + shape[-2:][::-1] if len(shape) >= 2 else shape
        out.append(shape)
    return tuple(out) or None


def _schema_params(schema: str) -> list[tuple[str, bool]] | None:
    """(type, has a default) of each argument of a ``func:`` schema (``squeeze_.dim(Tensor(a!) self,
    int dim) -> Tensor(a!)``), the ``*`` of keyword-only ones dropped (C++ takes them in order)."""
    open_ = schema.find("(")
    close = macros.balanced_paren(schema, open_) if open_ >= 0 else -1
    if close <= 0:
        return None
    out = []
    for a in macros.split_args(schema[open_ + 1:close - 1], angles=True):
        a = a.strip()
        if not a or a == "*":
            continue
        head, _, default = a.partition("=")
        words = head.split()
        out.append((re.sub(r"\(.*\)", "", words[0]).rstrip("?") if words else "", bool(default)))
    return out


def _top_level_args(text: str) -> list[str]:
    """The arguments of a call whose ``(`` was just read, split at its top-level commas."""
    close = macros.balanced_paren("(" + text, 0)
    return [a for a in macros.split_args(text[:close - 2], angles=True) if a] if close > 0 else []


def composite_native(chain_steps: tuple[Step, ...]) -> Step | None:
    """The first native step of a key's chain (the composite kernel: yaml -> register -> wrapper -> native)."""
    stack = list(chain_steps)
    while stack:
        s = stack.pop(0)
        if s.role == Role.NATIVE:
            return s
        stack = list(s.children) + stack
    return None


__all__ = ["OutputAnswer", "OutputProducer", "composite_native"]
