"""Calls: plain, member, operator and misread calls, functor objects, lambdas, stub arguments
(queries/calls.scm, queries/lambdas.scm, queries/misread_calls.scm)."""
from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Iterable

from atenmap.extract import jiterator, objects
from atenmap.extract.dispatch import dispatch_fact, is_dispatch_macro
from atenmap.extract.fact import Fact
from atenmap.extract.nodes import (WORD_BYTES, is_upper_name, is_word, collapse_spaces, function_declarator, last_component, node_text,
                                   split_call_args, strip_templates, template_args, type_before, auto_init)
from atenmap.extract.unit import Scopes, Unit
from atenmap.kinds import CallDetail, FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node


def lambda_fact(unit: Unit, node: Node, scope: int) -> Fact:
    decl = node.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters") if decl is not None else None
    ptext = node_text(params) if params is not None else "()"
    arity = len(split_call_args(ptext))
    return unit.fact(FactKind.LAMBDA, f"lambda#{arity}", f"lambda{collapse_spaces(ptext)}",
                     unit.line_of(node), unit.line_of(node, True), scope=scope, arg=str(arity),
                     detail=_receiving_call(node))




def _receiving_call(lam: Node) -> str:
    """The last name of the function a lambda is passed to directly (``cpu_kernel_vec`` in
    ``cpu_kernel_vec(iter, [=](scalar_t a) {...}, ...)``), or ''. See Note [Lambdas a loop runs] in
    resolve/chain.py."""
    args = lam.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    fn = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
    if fn is None or fn.type not in ("identifier", "qualified_identifier", "template_function"):
        return ""
    return last_component(strip_templates(node_text(fn)))


# Note [Calls tree-sitter misreads]
# Two call shapes common in ATen are not call_expressions to tree-sitter-cpp:
#   gemm_internal_cublas<float>(CUDABLAS_GEMM_ARGS(float));   -- the most vexing parse: a declaration
#       of `CUDABLAS_GEMM_ARGS` with type `gemm_internal_cublas<float>` (parenthesized declarator);
#       qualified too, `at::native::gemm_internal_ck<float>(CUDABLAS_GEMM_ARGS(float));` (a type whose
#       last name is a template: `ns::Type (x);` alone stays the declaration it is);
#   gpu_reduce_kernel<scalar_t, out_t>(iter, ops, typename ops_t::acc_t{});  -- a braced argument
#       makes it a function definition nested in the body (C++ has no nested functions).
# Inside a function body both are reported as call facts, with their template arguments in targs.


def is_braced_call(node: Node, declarator: Node) -> bool:
    """A typeless ``f<T>(args, X{}) {}`` directly in a block: no nested functions in C++, so a call
    with a braced argument, misread. Macro-shaped blocks (``CUDA_KERNEL_LOOP(i, n) {``) are not."""
    if node.child_by_field_name("type"):
        return False
    parent = node.parent
    if parent is None or parent.type != "compound_statement":
        return False
    fd = function_declarator(declarator)
    callee = fd.child_by_field_name("declarator") if fd is not None else None
    if callee is not None and callee.type == "qualified_identifier":
        callee = callee.child_by_field_name("name")
    return callee is not None and callee.type == "template_function"


def misread_call_fact(unit: Unit, node: Node, caps: dict[str, Node], capname: str,
                       scope: int) -> Fact | None:
    if scope < 0:
        return None
    if capname == "reference.vexing_call":
        callee = caps["name"]
        if callee.type == "qualified_identifier":
            last = callee
            while last is not None and last.type == "qualified_identifier":
                last = last.child_by_field_name("name")
            if last is None or last.type != "template_type":
                return None  # `ns::Type (x);` declares x: only `ns::f<T>(M(t))` is a call
            qual = strip_templates(node_text(callee))
        else:
            qual = strip_templates(node_text(callee.child_by_field_name("name") or callee)
                                   if callee.type == "template_type" else node_text(callee))
    else:
        fd = function_declarator(caps["name"])
        callee = fd.child_by_field_name("declarator") if fd is not None else None
        if callee is None or callee.type not in ("identifier", "qualified_identifier", "template_function"):
            return None
        qual = strip_templates(node_text(callee))
    name = last_component(qual)
    if not qual or is_upper_name(name):
        return None
    if capname == "reference.braced_call":
        # the function objects made in the misread argument list (ArgMaxOps<acc_t>{}, NormOps<...>{p})
        for obj in braced_objects(node_text(caps["name"])):
            unit.facts.append(unit.fact(FactKind.CALL, obj.rsplit("::", 1)[-1], obj, unit.line_of(node),
                                        scope=scope, detail=CallDetail.FUNCTOR_ARG))
    return unit.fact(FactKind.CALL, name, qual, unit.line_of(node), scope=scope, targs=template_args(callee))


# Note: read from the text of a braced call: tree-sitter took its argument list for a parameter list
# (Note [Calls tree-sitter misreads]), so the objects made in it are not expressions in the tree.
# The objects are ``[ns::]Name[<...>] {`` (the last name capitalised), found by string code over that
# text: it replaced a regex of that shape, with the same objects on every line of both test trees
# and fuzz (bench/regex_equal.py).
_CAPITALS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _is_w(c: str) -> bool:
    return c.isalnum() or c == "_"  # what ``\w`` matches in str


def braced_objects(text: str) -> list[str]:
    """``Foo``, ``ns::Bar`` of each ``ns::Bar<...>{`` in ``text``, the name starting a word that
    follows no ``:``; a read resumes after each ``{``."""
    out, at = [], 0
    while at < len(text):
        if _is_w(text[at]) and (at == 0 or not (_is_w(text[at - 1]) or text[at - 1] == ":")):
            got = _braced_object_at(text, at)
            if got is not None:
                out.append(got[0])
                at = got[1]
                continue
        at += 1
    return out


def _braced_object_at(text: str, start: int) -> tuple[str, int] | None:
    """``(name, after its brace)`` of ``a::B<...> {`` at ``start``, or None."""
    end, last = start, start
    while True:
        while end < len(text) and _is_w(text[end]):
            end += 1
        if text[end:end + 2] == "::" and end + 2 < len(text) and _is_w(text[end + 2]):
            end += 2
            last = end
            continue
        break
    at = end
    while at < len(text) and text[at].isspace():
        at += 1
    if text[last] not in _CAPITALS:
        return None
    if text[at:at + 1] == "<":
        stop = next((k for k in range(at + 1, len(text)) if text[k] in "(){};"), -1)
        close = len(text[:stop].rstrip()) - 1 if stop >= 0 else -1
        if stop < 0 or text[stop] != "{" or close <= at or text[close] != ">":
            return None
        at = stop
    if text[at:at + 1] != "{":
        return None
    return text[start:end], at + 1


def call_fact(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: "Scopes",
               macro_defs) -> Fact | None:
    """A call_expression: a plain or member call, a dispatch macro, or ``m.impl("op", fn)``."""
    fnode = caps["name"]
    ftype = fnode.type
    member = ""
    if ftype in ("identifier", "qualified_identifier", "template_function"):
        qual = strip_templates(node_text(fnode))
    elif ftype == "compound_literal_expression":
        # sum_functor<scalar_t>{}(iter): calls the functor's operator()
        tnode = fnode.child_by_field_name("type") or (fnode.named_children or [None])[0]
        if tnode is None:
            return None
        qual = strip_templates(node_text(tnode)) + "::operator()"
    elif ftype == "field_expression":
        fld = fnode.child_by_field_name("field")
        if fld is not None and fld.type == "dependent_name" and fld.named_child_count:
            fld = fld.named_children[0]  # l.template launch<T>(...)
        if fld is None:
            return None
        qual = strip_templates(node_text(fld))
        member = CallDetail.MEMBER
        receiver_type = _receiver_type(unit, fnode, scope, scopes)
        if receiver_type and qual:
            qual = f"{receiver_type}::{qual}"
    else:
        return None
    if not qual or "(" in qual and "(" in qual.replace("operator()", ""):
        return None
    name = last_component(qual)
    line = unit.line_of(node)
    if is_upper_name(name):
        if name not in macro_defs and not is_dispatch_macro(name) and scope >= 0:
            return _macro_callee(unit, caps["args"], line, scope)
        if name in macro_defs or not is_dispatch_macro(name):
            return None  # same-file macros are expanded by expand_in_functions
        args = split_call_args(node_text(caps["args"]))
        return dispatch_fact(unit, name, args, line, unit.ns_of(node)[0], scope)
    if member and name in ("impl", "impl_UNBOXED") and scope >= 0:
        args = split_call_args(node_text(caps["args"]))
        if len(args) >= 2 and args[0].startswith('"'):
            return unit.fact(FactKind.TORCH_IMPL, args[0].strip('"'), args[0].strip('"'), line, scope=scope, arg=args[1])
    arg = ""
    if jiterator.is_launcher(name):
        arg = ",".join(a.strip() for a in split_call_args(node_text(caps["args"])) if a.strip().isidentifier())
    elif scope >= 0 and (member or qual.startswith(_OPERATOR_SPELLINGS) and not qual.startswith("at::native::")):
        arg = _operator_call_args(unit, caps["args"], scope, scopes)
    has_targs = ftype != "identifier" and unit.text.find(b"<", fnode.start_byte, fnode.end_byte) >= 0
    return unit.fact(FactKind.CALL, name, qual, line, scope=scope, detail=member, arg=arg,
                     targs=template_args(fnode) if has_targs else "")




# Note [Arguments of operator calls]
# ``at::arange_out(result, 0, end, 1)`` inside ``arange.out`` reaches ``arange.start_out``: which
# overload a call reaches is decided by its arguments (resolve/opcalls.py). A call spelled like an
# operator call (``at::x``, ``at::_ops::x::call``, ``at::cuda::x``, a member call ``self.x(...)``)
# keeps its argument list in ``arg``, whitespace collapsed, each argument cut to 40 characters; an
# argument that is a name declared in the same function (a parameter or local) is written
# ``name:Type`` with its declared type's last word (``result:Tensor``, ``end:Scalar``). The whole
# text is cut to 400 characters, ending in "…" when cut.
_OPERATOR_SPELLINGS = ("at::", "_ops::", "::at::")


def _operator_call_args(unit: Unit, args: Node, scope: int, scopes: "Scopes") -> str:
    """See Note [Arguments of operator calls]."""
    out = []
    for a in args.named_children:
        kind = a.type
        if kind == "comment":
            continue
        if kind == "identifier":
            text = " ".join(node_text(a).split())
            typ = _declared_type(unit, scopes.span(scope)[0], text, a.start_byte)
            text += ":" + typ if typ else ""
        else:
            text = _collapsed_head(unit.text, a.start_byte, a.end_byte)
        out.append(text[:40])
    joined = ", ".join(out)
    return joined if len(joined) <= 400 else joined[:399] + "…"


def _collapsed_head(text: bytes, start: int, end: int) -> str:
    """``text[start:end]`` decoded, whitespace collapsed, at least its first 40 characters
    (Note [Arguments of operator calls]): a long argument (a lambda's body) is read from a
    prefix. The collapsed prefix is a prefix of the collapsed whole, but for its last few
    characters (a word or a UTF-8 sequence cut), hence the margin."""
    if end - start > 512:
        head = " ".join(text[start:start + 512].decode("utf-8", "replace").split())
        if len(head) >= 48:
            return head
    return " ".join(text[start:end].decode("utf-8", "replace").split())


def _declared_type(unit: Unit, lo: int, name: str, limit: int) -> str:
    """The last word of the type ``name`` is first declared with between ``lo`` (the function's
    start, so parameters count) and ``limit``: ``Tensor``, ``Scalar``, ``double``; '' if none."""
    text, word = unit.text, name.encode()
    pos = text.find(word, lo, limit)
    while pos >= 0:
        end = pos + len(word)
        if text[pos - 1] not in WORD_BYTES and text[end] not in WORD_BYTES:
            after = text[end:end + 80].lstrip()[:1]
            if after and after in b"({=;,)[:":
                typ = _builtin_before(text, max(lo, pos - 40), pos) or type_before(text, pos, lo)
                typ = _unqualified(typ).split()[-1] if typ.strip() else ""
                if _is_type_word(typ):
                    return typ
        pos = text.find(word, end, limit)
    return ""


# Note [Declared types as string code]
# A builtin type right before a declared name (``const int64_t& dim``), and the names of template
# type parameters (``typename T,``), are read by string code over the text: fixed words and
# punctuation. They replaced regexes of the same shapes, with the same answers on every input of both
# test trees and fuzz (bench/regex_equal.py).
_BUILTIN_WORDS = (b"int64_t", b"int32_t", b"int", b"double", b"float", b"bool", b"size_t", b"long", b"char")
_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_BEFORE_TYPE = _WS + b"(,;{"  # what may stand before a declaration's type (or the text's start)
_IDENT_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _builtin_before(text: bytes, lo: int, pos: int) -> str:
    """The builtin type word (_BUILTIN_WORDS) that ``text[lo:pos]`` ends with, after it maybe one
    ``&``/``*`` and blanks, as a whole word after one of _BEFORE_TYPE (or at the text's start; a
    ``const`` before it is passed over); '' when none."""
    end = len(text[lo:pos].rstrip(_WS)) + lo
    if end > lo and text[end - 1] in b"&*":
        end = len(text[lo:end - 1].rstrip(_WS)) + lo
    for word in _BUILTIN_WORDS:
        start = end - len(word)
        if start >= lo and text[start:end] == word:
            return word.decode() if start == 0 or (start > lo and text[start - 1] in _BEFORE_TYPE) else ""
    return ""


def _unqualified(typ: str) -> str:
    """``typ`` less a leading ``const`` (with the whitespace after it) and the ``ns::`` qualifiers
    that follow: ``const at::native::Foo<T>`` -> ``Foo<T>``."""
    if typ.startswith("const") and typ[5:6].isspace():
        typ = typ[5:].lstrip()
    while True:
        head, sep, rest = typ.partition("::")
        if not sep or not is_word(head):
            return typ
        typ = rest


_BUILTIN_TYPES = frozenset({"int", "double", "float", "bool", "char", "long", "short", "unsigned", "size_t"})


def _is_type_word(word: str) -> bool:
    """A declared type's last word that is a type: a class name (Tensor, IntArrayRef), a builtin or a
    ``*_t`` typedef; not ``alpha`` in ``alpha * a``, which reads backwards like a pointer declaration."""
    return is_word(word) and ("A" <= word[0] <= "Z" or word in _BUILTIN_TYPES or len(word) > 2 and word.endswith("_t"))


# Note [Functions handed to a macro]
# ``CUB_WRAPPER(cub::DeviceSegmentedReduce::Reduce, in, out, ...)`` (cuda/cub.cuh, defined in a
# header, so not expanded here) calls its first argument, twice (workspace query, then the work).
# A macro call from another file whose first argument is a bare qualified name gets a ``call``
# fact of that name, detail ``macro_arg``, at the macro's line; the resolver keeps only those that
# are library calls (cub::..., cublas...), so ``TORCH_CHECK(ns::flag, ...)`` adds nothing to a chain.


def _macro_callee(unit: Unit, args: Node, line: int, scope: int) -> Fact | None:
    """See Note [Functions handed to a macro]."""
    first = args.named_child(0) if args.named_child_count else None
    if first is None or first.type != "qualified_identifier":
        return None
    qual = strip_templates(node_text(first))
    return unit.fact(FactKind.CALL, last_component(qual), qual, line, scope=scope, detail=CallDetail.MACRO_ARG)


# Note [Member calls on locals]
# `KthvalueLauncher l(k); ... l.launch<scalar_t>(...)` calls KthvalueLauncher::launch. When the
# receiver of a member call is a local or parameter declared in the same function with a named
# class type (`Foo l(...)`, `Foo l{...}`, `auto l = Foo{...}`, `const Foo& l`), the call's qual is
# `Foo::method` (templates stripped); otherwise just `method`. detail stays "member". A temporary the
# call builds with a class's constructor is read the same way: `KronImpl(self, other).kron()` (kron)
# calls KronImpl::kron, not the kron operator. A constructor is a call of a bare CamelCase name
# (`Foo(...)`, `Foo<T>(...)`, `Foo{...}`); an ALL-CAPS name is a macro and a snake_case one a
# function, whose result's class the text does not say.


def _receiver_type(unit: Unit, fexpr: Node, scope: int, scopes: "Scopes") -> str:
    """The class a member call's receiver was declared with in the same function, or ''."""
    if scope < 0:
        return ""
    receiver = fexpr.child_by_field_name("argument")
    if receiver is not None and receiver.type in ("call_expression", "compound_literal_expression"):
        return _constructed_class(receiver)
    if receiver is None or receiver.type != "identifier":
        return ""
    name = node_text(receiver)
    key = (scope, name)
    found = unit.receivers.get(key)
    if found is None:
        found = _declaration_in(unit, scopes.span(scope), name, fexpr.start_byte)
        if found[1] and "::" not in found[1] and found[1] in _template_parameters(unit):
            found = (found[0], "")  # `Launcher l` in run_launcher<..., Launcher>: a template parameter
        unit.receivers[key] = found
    pos, typ = found
    return typ if typ and pos < fexpr.start_byte else ""


def _constructed_class(call: Node) -> str:
    """``Foo`` of a temporary ``Foo(...)``, ``Foo<T>(...)`` or ``Foo{...}`` (Note [Member calls on
    locals]), or ''."""
    fn = call.child_by_field_name("function") or call.child_by_field_name("type")
    if fn is not None and fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    if fn is None or fn.type not in ("identifier", "type_identifier"):
        return ""
    name = node_text(fn)
    return name if name[:1].isupper() and any(c.islower() for c in name) else ""


def _declaration_in(unit: Unit, span: tuple[int, int], name: str, limit: int) -> tuple[int, str]:
    """``(byte, type)`` of the first declaration of ``name`` in the function's text: a parameter or
    local ``Foo name``, ``const Foo<T>& name``, ``Foo name(...)``, ``Foo name{...}`` or
    ``auto name = Foo{...}``, before byte ``limit`` (the first member call through it); ``(0, '')``
    when none. Read as text, and only for receivers of member calls: a query over every
    declaration of every file cost 12 % of the index time."""
    text, lo, hi = unit.text, span[0], min(span[1], limit)
    word = name.encode()
    pos = text.find(word, lo, hi)
    while pos >= 0:
        end = pos + len(word)
        if text[pos - 1] not in WORD_BYTES and text[end] not in WORD_BYTES:
            after = text[end:end + 80].lstrip()
            if after[:1] and after[:1] in b"({=;,)[:":
                typ = type_before(text, pos, lo)
                if typ == "auto" and after[:1] == b"=":
                    t = auto_init(after)
                    typ = t.decode() if t is not None else ""
                if typ and typ != "auto":
                    return pos, strip_templates(typ)
        pos = text.find(word, end, hi)
    return 0, ""


# Note: a cost choice, not blindness: read once per file, and only when a member call's receiver
# type is checked; a query would walk every template parameter list of every file (candidate for
# a query if it is ever needed more often).
# (Note [Declared types as string code]: ``typename|class name`` then ``,``, ``>`` or ``=``.)
def _template_names(text: bytes) -> set[bytes]:
    """The names after each word ``typename``/``class`` (blanks between) followed by ``,``, ``>`` or ``=``."""
    names: set[bytes] = set()
    for word in (b"typename", b"class"):
        at = text.find(word)
        while at >= 0:
            if at == 0 or text[at - 1] not in WORD_BYTES:
                name = _skip_blanks(text, at + len(word))
                end = name
                if name > at + len(word) and end < len(text) and text[end] in _IDENT_FIRST:
                    while end < len(text) and text[end] in WORD_BYTES:
                        end += 1
                    after = _skip_blanks(text, end)
                    if after < len(text) and text[after] in b",>=":
                        names.add(text[name:end])
            at = text.find(word, at + 1)
    return names


def _skip_blanks(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _template_parameters(unit: Unit) -> set[str]:
    """Names of the template type parameters declared anywhere in the file (read once)."""
    if unit.template_params is None:
        unit.template_params = {m.decode() for m in _template_names(unit.text)}
    return unit.template_params


def call(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.call`` (a launch's call_expression is left to launches.py: parse.py)."""
    fact = call_fact(unit, node, caps, scope, scopes, unit.macro_defs)
    if fact is not None:
        unit.facts.append(fact)


def lambda_(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@definition.lambda``."""
    unit.facts.append(lambda_fact(unit, node, scope))


def functor_decl(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.functor_decl``: kept where the class is defined in the same text."""
    name = node_text(caps["name"])
    if name in unit.classes:
        unit.facts.append(unit.fact(FactKind.CALL, name, name, unit.line_of(node), scope=scope, detail=CallDetail.FUNCTOR))


def functor_arg(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.functor_arg``: ``MeanOps<...>{factor}`` in an argument list."""
    qual = strip_templates(node_text(caps["name"]))
    name = last_component(qual)
    if scope >= 0 and name[:1].isupper() and name.isidentifier():
        unit.facts.append(unit.fact(FactKind.CALL, name, qual, unit.line_of(node), scope=scope, detail=CallDetail.FUNCTOR_ARG))


def stub_arg(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.stub_arg``: a ``*_stub`` passed as an argument."""
    fnode = caps["name"]
    unit.facts.append(unit.fact(FactKind.CALL, node_text(fnode), node_text(fnode), unit.line_of(fnode), scope=scope,
                                detail=CallDetail.ARGUMENT))


def vexing_call(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.vexing_call``: Note [Calls tree-sitter misreads]."""
    fact = misread_call_fact(unit, node, caps, "reference.vexing_call", scope)
    if fact is not None:
        unit.facts.append(fact)


def braced_call(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``reference.braced_call``, handed on by definitions.function: Note [Calls tree-sitter misreads]."""
    fact = misread_call_fact(unit, node, caps, "reference.braced_call", scope)
    if fact is not None:
        unit.facts.append(fact)


def _merged_lines(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive line ranges, sorted and merged where they overlap or touch."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def add_object_args(unit: Unit, inherited: dict[str, str] | None) -> None:
    """See Note [Functor objects passed by name] in objects.py."""
    if not unit.funcs:
        return
    masked = unit.masked()
    scopes = Scopes(unit)
    table = objects.aliases(masked, scopes.at)
    class_ = FactKind.CLASS  # once: an enum member's lookup costs ~150 ns, this loop runs per fact
    class_lines = _merged_lines((f.line + 1, f.end_line) for f in unit.facts if f.kind == class_)
    starts = [lo for lo, _hi in class_lines]
    newlines: list[int] = []

    def in_class(pos: int) -> bool:
        """Whether the line of ``pos`` is a class's, after its first (lo < line <= end_line)."""
        if not class_lines:
            return False
        if not newlines:
            newlines.extend(m.start() for m in re.finditer(b"\n", unit.text))
            newlines.append(len(unit.text))
        line = bisect.bisect_left(newlines, pos) + 1 + unit.line_offset
        i = bisect.bisect_right(starts, line) - 1
        return i >= 0 and line <= class_lines[i][1]

    unit.objects = objects.namespace_objects(masked, scopes.at, table, in_class, scopes.outside(len(masked)))
    seen: set[tuple[int, int, str]] = set()
    row, last = 0, 0  # newlines before the use, counted on from the previous one (uses come sorted)
    for use in objects.object_uses(masked, scopes.at, scopes.span, table, {**(inherited or {}), **unit.objects}):
        qual = strip_templates(use.type)
        name = last_component(qual)
        row, last = row + unit.text.count(b"\n", last, use.pos), use.pos
        line = unit.fixed_line if unit.fixed_line is not None else row + 1 + unit.line_offset
        if not name.isidentifier() or (use.scope, line, name) in seen:
            continue
        seen.add((use.scope, line, name))
        unit.facts.append(unit.fact(FactKind.CALL, name, qual, line, scope=use.scope, arg=use.name, detail=CallDetail.OBJECT_ARG))
