"""Definitions: functions, ``__global__`` kernels, TORCH_IMPL_FUNC-style blocks, macro-shaped
blocks, classes and includes (queries/definitions.scm, queries/includes.scm)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from atenmap.extract.blanking import COMMENTS
from atenmap.extract.dispatch import IMPL_MACROS
from atenmap.extract.fact import Fact
from atenmap.extract.nodes import (WORD_BYTES, function_declarator, is_upper_name, last_component, node_text,
                                   split_call_args, strip_templates, template_args)
from atenmap.extract.calls import is_braced_call
from atenmap.extract.unit import Unit
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node


def definition_fact(unit: Unit, node: Node, caps: dict[str, Node]) -> Fact | None:
    """A function body: a function (or ``__global__``), a TORCH_IMPL_FUNC-style block, or a
    macro-shaped block ``NAME(args) { ... }``."""
    fd = function_declarator(caps["name"])
    inner = fd.child_by_field_name("declarator") if fd is not None else None
    if inner is None:
        return None
    namespace, cls = unit.ns_of(node)
    start, end = unit.line_of(node), unit.line_of(node, end=True)
    if node.has_error and unit.fixed_line is None:  # Note [A function ends where its body ends] (not an expansion)
        got = _body_end(unit, node)
        if got is not None and got[0] < end:
            end = got[0]
            unit.cut_ends[node.start_byte] = got[1]
    inner_type = inner.type
    if inner_type == "function_declarator":
        # MACRO(args) (params) { body } -- TORCH_IMPL_FUNC and friends.
        mac, margs = inner.child_by_field_name("declarator"), inner.child_by_field_name("parameters")
        if mac is None or margs is None:
            return None
        mname, args = node_text(mac), split_call_args(node_text(margs))
        kind = IMPL_MACROS.get(mname)
        if kind is None or not args:
            return None
        name = "_".join(args[:2]) if mname.endswith("2") else args[0]
        return unit.fact(kind, name, f"{namespace}::{mname}({', '.join(args)})".lstrip(":"), start, end,
                         namespace=namespace, detail=mname)
    raw = node_text(inner)
    if raw in STATEMENT_WORDS:
        return None  # `else if (x) {` after an #ifdef that closed the function early (CUDABlas.cpp)
    if inner_type == "identifier" and is_upper_name(raw) and node.child_by_field_name("type") is None:
        params = fd.child_by_field_name("parameters")
        return unit.fact(FactKind.MACRO_BLOCK, raw, raw, start, end, namespace=namespace,
                         arg=node_text(params) if params is not None else "")
    qual = strip_templates(raw)
    prefix = "::".join(p for p in (namespace, cls) if p)
    if qual.startswith("::"):
        qual = qual[2:]
    elif prefix:
        qual = f"{prefix}::{qual}"
    # __global__ may sit before the node's start when it was blanked (cpp grammar)
    lead = unit.src[max(0, node.start_byte - 200):node.start_byte]
    cut = max(lead.rfind(b";"), lead.rfind(b"}"), lead.rfind(b"{"))
    head = lead[cut + 1:] + unit.src[node.start_byte:inner.start_byte]
    kind = FactKind.GLOBAL if b"__global__" in head else FactKind.FUNCTION
    return unit.fact(kind, last_component(qual), qual, start, end, namespace=namespace,
                     arg=_signature(head, fd), detail=_specialization(node, inner))


# Note [A function ends where its body ends]
# tree-sitter recovers from what it cannot parse by stretching the node around it: in
# DepthwiseConv3d.cu, conv_depthwise3d_cuda (lines 390-459) ends with uses of its own
# DWCONV3D_FORWARD_* macros without semicolons, and its node then ran to line 706, over the
# #define DWCONV3D_BACKWARD_* bodies below it and the two backward functions, so that their launches
# counted as the forward's. A function whose node holds an ERROR ends at the brace that closes its
# body, matched on the masked text (comments, literals, preprocessor lines and #else branches
# blanked), when that comes first; the functions the node swallowed are then found by brace
# matching (textblocks.add_recovered_functions), as in a file whose tree broke near the top.
def _body_end(unit: Unit, node: Node) -> tuple[int, int] | None:
    body = node.child_by_field_name("body")
    masked = unit.masked()
    if body is None or masked[body.start_byte:body.start_byte + 1] != b"{":
        return None
    depth, pos = 0, body.start_byte
    while True:
        close = masked.find(b"}", pos)
        if close < 0:
            return None
        open_ = masked.find(b"{", pos, close)
        if open_ >= 0:
            depth, pos = depth + 1, open_ + 1
            continue
        depth, pos = depth - 1, close + 1
        if depth == 0:
            return unit.src.count(b"\n", 0, close) + 1 + unit.line_offset, close + 1


# Note [Function signatures]
# A definition's ``arg`` keeps what decides whether a call from another translation unit can reach
# it: the linkage and execution-space words written before the name (``static``, ``__global__``,
# ``__device__``, ``__host__``; C10_HOST_DEVICE / C10_DEVICE / C10_HOST spelled out) and the number
# of parameters: ``static __device__ params=2``, ``params=3 defaults=1``, ``params=1+`` (variadic).
# Functions recovered by brace matching have an empty ``arg``: unknown, never filtered on.
_SPEC_WORDS = {b"static": ("static",), b"__global__": ("__global__",), b"__device__": ("__device__",),
               b"__host__": ("__host__",), b"C10_HOST_DEVICE": ("__host__", "__device__"),
               b"C10_DEVICE": ("__device__",), b"C10_HOST": ("__host__",)}
# Note: read from the head's bytes: __global__, C10_HOST_DEVICE & co are blanked before the parse
# (Note [Attribute macros]), so tree-sitter never sees them.
# The words are whole words of the head (its bytes less comments), in their order.
_NOT_WORD = bytes(b if b in WORD_BYTES else 0x20 for b in range(256))  # each non-word byte as a space


def _signature(head: bytes, fd: Node) -> str:
    """See Note [Function signatures]."""
    words: list[str] = []
    for word in (COMMENTS.sub(b" ", head) if b"/" in head else head).translate(_NOT_WORD).split():
        words.extend(w for w in _SPEC_WORDS.get(word, ()) if w not in words)
    params = fd.child_by_field_name("parameters")
    n = defaults = 0
    variadic = False
    if params is not None:
        # Note: both variadic forms are spelled with "...": a parameter list without it has neither.
        variadic = b"..." in params.text and any(c.type in ("variadic_parameter_declaration", "...")
                                                 for c in params.children)
        kinds: list[str] = []
        for c in params.named_children:
            kind = c.type
            if kind == "optional_parameter_declaration":
                defaults += 1
            elif kind != "parameter_declaration":
                continue
            if c.end_byte - c.start_byte != 4 or node_text(c) != "void":
                n += 1
                t = c.child_by_field_name("type")
                kinds.append(param_kind(node_text(t)) if t is not None else "?")
    words.append(f"params={n}{'+' if variadic else ''}")
    if defaults:
        words.append(f"defaults={defaults}")
    if n and any(k != "?" for k in kinds):
        words.append("types=" + "".join(kinds))
    return " ".join(words)


# Note [Parameter kinds]
# ~~~~~~~~~~~~~~~~~~~~~~
# Several C++ overloads of one native name take as many parameters (repeat_interleave_symint's
# ``(const Tensor& self, const Tensor& repeats, ...)`` and ``(const Tensor& self, c10::SymInt
# repeats, ...)``; fill_'s ``const Scalar&`` and ``const Tensor&``). torchgen writes each schema
# argument's C++ type by fixed rules, so a coarse kind per parameter tells the overloads apart: a
# definition's ``arg`` keeps them as ``types=TIOO`` (resolve/natives.py compares them with the
# schema's). The kinds: T a tensor, O an optional, L a list or ArrayRef, S a Scalar, I an integer
# (int64_t, SymInt), F a double, B a bool, E a ScalarType, Layout, Device or MemoryFormat, ? other.
def param_kind(type_text: str) -> str:
    """The kind of a C++ parameter type (Note [Parameter kinds])."""
    t = type_text.replace("const ", "").replace(" ", "")
    outer = t.split("<", 1)[0].rsplit("::", 1)[-1]  # c10::List<std::optional<Tensor>>: a List
    base = outer if "<" not in t else t
    if outer == "optional" or outer.startswith("Optional"):
        return "O"
    if "ArrayRef" in outer or "List" in outer or outer == "vector":
        return "L"
    if base in ("Tensor", "TensorBase"):
        return "T"
    if base == "Scalar":
        return "S"
    if base in ("int64_t", "SymInt", "int", "int32_t"):
        return "I"
    if base == "double":
        return "F"
    if base == "bool":
        return "B"
    if base in ("ScalarType", "Layout", "Device", "MemoryFormat"):
        return "E"
    return "?"


STATEMENT_WORDS = {"if", "for", "while", "switch", "catch", "return", "else", "do"}


# Note [Explicit specializations]
# CUDABlas.cpp defines each dtype of at::cuda::blas::gemm as `template <> void gemm<float>(...) {}`.
# The function fact keeps the plain name (gemm, qual at::cuda::blas::gemm, templates stripped as
# for every definition) and records the specialization's arguments in detail: `specialization<float>`.


def _specialization(node: Node, declarator: Node) -> str:
    parent = node.parent
    if parent is None or parent.type != "template_declaration":
        return ""
    params = parent.child_by_field_name("parameters")
    if params is None or params.named_child_count:
        return ""
    targs = template_args(declarator)
    return f"specialization<{targs}>" if targs else ""


def function(unit: Unit, node: Node, caps: dict[str, Node]) -> None:
    """``@definition.function``: a function body, or a call tree-sitter read as a nested definition
    (kept as a reference, Note [Calls tree-sitter misreads] in calls.py)."""
    if is_braced_call(node, caps["name"]):
        unit.refs.append((node, caps, "reference.braced_call"))
        return
    fact = definition_fact(unit, node, caps)
    if fact is not None:
        unit.funcs.append((node.start_byte, unit.cut_ends.get(node.start_byte, node.end_byte), len(unit.facts)))
        unit.facts.append(fact)


def class_(unit: Unit, node: Node, caps: dict[str, Node]) -> None:
    """``@definition.class``: a struct or class with a body."""
    namespace, cls = unit.ns_of(node)
    name = strip_templates(node_text(caps["name"]))
    qual = "::".join(p for p in (namespace, cls, name) if p)
    unit.facts.append(unit.fact(FactKind.CLASS, last_component(name), qual, unit.line_of(node),
                                unit.line_of(node, True), namespace=namespace))


def include(unit: Unit, node: Node, caps: dict[str, Node]) -> None:
    """``@reference.include``: ``#include "…"`` / ``<…>``."""
    path = node_text(caps["name"]).strip('"<>')
    unit.facts.append(unit.fact(FactKind.INCLUDE, path, path, unit.line_of(node)))
