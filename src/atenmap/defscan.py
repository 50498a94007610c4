"""The exact definition pre-scan (issue 37, item 1): for each file, by its bytes alone, the names it
may define (its words from the pattern registry's ScanShape words, so the two cannot drift). Every definition the full extractor finds in a file (a function, a class, a
``__global__`` kernel, TORCH_IMPL_FUNC/TORCH_META_FUNC, a stub's DECLARE/DEFINE/REGISTER_*DISPATCH,
a jiterator name or code string, a macro block, each also as a same-file macro makes it) is among
that file's names here; the scan may name more. A lookup of a name then needs only the files whose
scan names it (``Candidates``), parsed for their definitions, instead of every file holding the name
as a token.

Note [An exact definition pre-scan]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Where a name is defined, the text around it has a shape no cheaper parse gets wrong, because the
rules below only ever widen (a rule that names too much costs a parse, one that names too little
costs a wrong answer):
- a function, ``__global__`` kernel or macro block: a name (or ``operator...``, ``~Name``), maybe
  template arguments, then ``(``, and the first of ``;``, ``{``, ``}`` after that ``(`` is ``{``
  (a parameter list holds no ``;`` or ``}`` before a brace: a default ``{}`` or a lambda opens
  one first), or ``= default`` / ``= delete``. A member access (``x.size(``, ``p->data(``) never
  defines. Nor does a call inside a control statement's condition, ``if (f(x)) {`` (``else if``,
  ``for``, ``while``, ``switch``), where the statement's text (from the last ``;``, ``{`` or ``}``)
  is that head alone: its parentheses balanced (three levels deep; deeper, and the calls are
  named: an over-estimate) and closed just before the ``{``;
- a class: a class keyword of the pattern registry (ScanShape.KEYWORD), and every word of its head
  up to the ``{`` (attributes, base classes and template arguments included: an over-estimate);
- a macro of the registry (ScanShape.FIRST_ARGUMENT, ANY_ARGUMENT: TORCH_IMPL_FUNC, *_DISPATCH):
  every word of its arguments, and the first two joined by ``_`` (TORCH_META_FUNC2(scatter, src)
  defines ``scatter_src``); of the ``*_DISPATCH*(`` macros only the stubs' (DECLARE/DEFINE/
  REGISTER_*DISPATCH, dispatch.is_dispatch_macro): an ``AT_DISPATCH_*(iter.common_dtype(), ...)``'s
  arguments define nothing; an upper-case macro's use names the macro (a macro block);
- an Objective-C++ ``@implementation`` or ``@interface`` names its class;
- jiterator strings: scan.py's shapes (``char name[] = "``, ``name = jiterator_stringify(``);
- a same-file macro: its uses at the start of a line are expanded as the extractor expands them
  (macros.py's own ``expand``, Note [Macro-made kernels]) and the expansion is read by the rules
  above, with the body that follows the use (Note [Macro-made definition heads]).
Comments and string and character literals are read as one space each (extract/blanking.py's
CODE_NOISE, but a digit separator's quotes are no literal's: ``1'000``; a jiterator string and an
Objective-C++ class are read as written): a head in a comment (``// calls globalContext() here``
above a definition) or a literal defines nothing. Nor
does a head whose ``(`` is still open at the ``{`` when that brace follows its arguments' last ``)``
with no ``=`` between (``gpu_kernel(iter, []GPU_LAMBDA(T a) -> T {``, ``jiterator_stringify(
template <typename T> T f(T a) {``: the brace is the lambda's or the inner function's, whose own
heads are named); a default ``= {}`` keeps the head, and so does a head split by ``#if`` branches
(``void f(\n#else\nvoid f_v7(\n#endif\n int a) {``, read as written). A control head may follow
preprocessor lines (``#ifdef USE_ROCM\n if (rocm(x)) {``). A template parameter's ``class``
(``<class F,``, ``, class SF = int>``) heads no class: its words are no class head's.
A C++ keyword (``static_cast``, ``if``: heads of ``if (static_cast<int>(x)) {``) names nothing
(``KEYWORDS``: no fact of either tree is named so).
A fact's name is keyed by its last word (``MulFunctor::operator()`` by ``operator``, ``~Guard`` by
``Guard``, ``VecMaskLoad>`` by ``VecMaskLoad``): ``name_key``.
Note [Where a scope can be]: a fact's qualified name holds ``scope::`` only where the scope is a
class that encloses it (a class head names it), a namespace (``namespace scope {``, ``namespace
a::scope {``) or a qualified declarator (``scope::f(``, ``scope<T>::f(``), in the file's bytes or
a same-file macro's expansion (as a word's end: Store.by_name_qual's ``instr`` finds ``type::`` in
``dtype::``): ``Candidates.qualifying``, for a member's lookup (``by_name_qual``
of ``::type::operator()`` reads the files that may define ``operator`` only where ``type`` is so
written, not every one that holds the word ``type``). tests/test_exactfirst_realtree.py checks it
for every scope of every qualified name of the whole trees.
Nothing is left undecided that the token rule would decide: a macro-made name is made by macros.py's
own expansion of the same uses the extractor expands (macros of other files are expanded by neither),
so no name needs the token rule. What neither finds: a name the extractor derives wrongly, which is
no word of its file (``enable_if_tcalc_erfinv`` of ``enable_if_t<...>\ncalc_erfinv(``: 21 facts of
2.6.0, 13 of 1.13.1); the token rule never found those either, and no lookup asks for them.
tests/test_defscan_realtree.py checks the whole 2.6.0 and 1.13.1 trees against the full extractor's
facts; bench/bench_defscan.py measures the scan against ctags. The first complete answer on a
never-indexed tree (exactfirst.py, Note [A complete answer from the candidates]) loads a name's
candidates before it answers a lookup of it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from atenmap.extract import macros, registry, scan
from atenmap.extract.blanking import COMMENTS
from atenmap.extract.dispatch import is_dispatch_macro
from atenmap.extract.registry import ScanShape
from atenmap.kinds import FactKind

# Not a query: unparsed bytes. A jiterator name or code string, any name in group 1 (scan.py's shapes).
_JIT_NAME = re.compile(scan.JIT_NAME_SHAPE % rb"(\w+)")
_JIT_CODE = re.compile(scan.JIT_CODE_SHAPE % rb"(\w+)")  # not a query: unparsed bytes (above)

# The stub kinds, whose names are only ever a registry macro's arguments (Candidates.stub_files)
STUB_KINDS = (FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH)
# The fact kinds the scan is exact for. Not among them: ``torch_impl`` (``m.impl("mul.out", fn)``,
# a registration found by the operator's name, made by handlers and macros of their own), calls,
# includes, lambdas; a lookup of those kinds keeps the token rule.
KINDS = (FactKind.FUNCTION, FactKind.GLOBAL, FactKind.CLASS, FactKind.IMPL_FUNC, FactKind.META_FUNC,
         FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH, FactKind.JIT_NAME,
         FactKind.JIT_CODE, FactKind.MACRO_BLOCK)

_ANGLES = rb"<[^;{}()<>]*(?:<[^;{}()<>]*(?:<[^;{}()<>]*>[^;{}()<>]*)*>[^;{}()<>]*)*>"  # three levels deep
# A function head: a name not after ``.`` or ``->``, template arguments, ``(`` (where a ``= default``
# or ``= delete`` follows; else _HEAD_REVERSED finds it). Not a query: unparsed bytes.
_HEAD = re.compile(
    rb"(?<![\w.])(?<!->)(?:(operator)(?!\w)\s*(?:\(\s*\)|\[\s*\]|\"\"\s*\w+|[^\s\w(]{1,3}|\w+)|~?\s*([A-Za-z_]\w*))"
    rb"\s*(?:%s\s*)?\(" % _ANGLES)
# A statement's text that ends in ``{`` and holds a ``(``: read backwards, it starts with the brace
# (a literal: one fast search), so the scan is linear. Not a query: unparsed bytes, reversed.
_BRACED_REVERSED = re.compile(rb"\{[^;{}(]*\([^;{}]*")
# Not a query: unparsed bytes, reversed. _HEAD read backwards from its ``(`` (a literal again):
# template arguments, then ``operator...`` or a word not after ``.`` or ``->`` (group 1 or 2, reversed).
_ANGLES_REVERSED = rb">[^;{}()<>]*(?:>[^;{}()<>]*(?:>[^;{}()<>]*<[^;{}()<>]*)*<[^;{}()<>]*)*<"
_HEAD_REVERSED = re.compile(  # not a query: unparsed bytes, reversed (above)
    rb"\(\s*(?:%s\s*)?(?:((?:\)\s*\(|\]\s*\[|\w+\s*\"\"|[^\s\w(]{1,3}|\w+\s+)\s*rotarepo)(?!\w)|(\w+))(?![\w.])(?!>-)"
    % _ANGLES_REVERSED)
# Not a query: unparsed bytes. A statement's text that is a control statement's head, ``if (...)``
# (``else if``, ``if constexpr``, ``for``, ``while``, ``switch``), its condition's parentheses
# balanced (three levels deep) and closed just before the statement's ``{``, after any preprocessor
# lines (``#ifdef USE_ROCM``): no definition (Note [An exact definition pre-scan]).
_CONTROL = re.compile(
    rb"(?:\s*#[^\n]*\n)*\s*(?:else\s+)?(?:if|for|while|switch)\s*(?:constexpr\s*)?"
    rb"\((?:[^()]|\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))*\)\s*")
# Not a query: unparsed bytes. ``= default;`` / ``= delete;``: a definition without a body.
_DEFAULTED = re.compile(rb"=\s*(?:default|delete)\s*;")
# An upper-case macro's use (``SMALL_INDEX(...)``): tree-sitter's error recovery may read it as a
# macro block, whatever follows it. Read backwards, as _HEAD_REVERSED. Not a query: unparsed bytes.
_CAPS_CALL_REVERSED = re.compile(rb"\(\s*([A-Z0-9_]*[A-Z][A-Z0-9_]*)(?![\w.])")  # read backwards, as _HEAD
# A function-like ``#define``: only a file with one has macro uses to expand.
# Not a query: preprocessor text.
_FUNCTION_DEFINE = re.compile(rb"#[ \t]*define[ \t]+\w+\(")
# Not a query: unparsed bytes. A template parameter ``<class T,`` / ``, class U>`` / ``class V = int``:
# no class head (its ``class`` is blanked before the class rule reads the heads).
_TEMPLATE_CLASS = re.compile(rb"([<,>]\s*)class(?=\s+\w+\s*(?:[,>=]))")
_PARENS = re.compile(rb"[()]")  # not a query: a head's parentheses, unparsed bytes
# Not a query: unparsed bytes. Comments and string and character literals (extract/blanking.py's CODE_NOISE),
# a character literal's quote never one after a digit or letter (``1'000``, ``0xFF'FF``: C++14 digit
# separators) but for a prefix (``L'x'``, ``u8'x'``).
_NOISE = re.compile(COMMENTS.pattern + rb'|"(?:\\.|[^"\\\n])*"'
                    rb"|(?:(?<=\bu8)|(?<=\b[uUL])|(?<!\w))'(?:\\.|[^'\\\n])*'", re.S)
_WORDS = re.compile(rb"[A-Za-z_]\w*")  # not a query: the words of a head or of macro arguments, unparsed
_NAME_KEY = re.compile(r"\w+")  # not a query: a fact's name, not source text
_OPERATOR = re.compile(r"(?:^|::)operator(?!\w)")  # not a query: a fact's name, not source text
# Not a query: unparsed bytes. An Objective-C++ class (.mm files): ``@implementation Name``.
_OBJC_CLASS = re.compile(rb"@(?:implementation|interface)\s+(\w+)")


def name_key(name: str) -> str:
    """The word a fact's ``name`` is found by: ``operator`` for an operator, else its last word."""
    if _OPERATOR.search(name):
        return "operator"
    words = _NAME_KEY.findall(name)
    return words[-1] if words else name


@lru_cache(maxsize=4)
def _patterns(generation: int) -> tuple[re.Pattern, re.Pattern, tuple[bytes, ...], tuple[bytes, ...]]:
    """(a class head, a registry macro's argument list, the macros' words, those of ANY_ARGUMENT:
    the stubs' macros, ``_DISPATCH``, found among every ``*_DISPATCH*(``, AT_DISPATCH_* too), from
    the registry's scan words."""
    keyword = b"|".join(re.escape(w) for w in registry.scan_words(ScanShape.KEYWORD))
    args = b"|".join(re.escape(w) for w in registry.scan_words(ScanShape.FIRST_ARGUMENT)
                     + registry.scan_words(ScanShape.ANY_ARGUMENT))
    # A class head up to its body's brace (parentheses of attributes and alignas inside), or to the
    # first ``;``/``}`` (a declaration: not a definition, not kept). Not a query: unparsed bytes.
    klass = re.compile(rb"\b(?:%s)\b((?:[^;{}()]|\([^;{}]*?\))*)\{" % keyword)
    # Not a query: unparsed bytes. A registry macro's arguments (its name as scan.py reads it).
    macro = re.compile(rb"(?:%s)\w*\s*\(([^;{}]*)" % args)
    return (klass, macro, registry.scan_words(ScanShape.FIRST_ARGUMENT) + registry.scan_words(ScanShape.ANY_ARGUMENT),
            registry.scan_words(ScanShape.ANY_ARGUMENT))


@dataclass
class Parts:
    """What a lookup may need of a file besides its words (Candidates): ``stubs``, the arguments of its
    DECLARE/DEFINE/REGISTER_*DISPATCH macros (dispatch.is_dispatch_macro: the only words a stub fact
    is named by); ``classes``, the words of its class heads (the only words a class fact is named by);
    ``expanded``, the text of its same-file macros' expansions (names a macro pastes, for
    ``mentions``)."""
    stubs: set[bytes] = field(default_factory=set)
    classes: set[bytes] = field(default_factory=set)
    expanded: list[bytes] = field(default_factory=list)


def _macro_name(data: bytes, start: int) -> str:
    """The whole identifier around ``data[start]`` (a registry macro's name, found by its scan word)."""
    i = start
    while i > 0 and (data[i - 1] == 95 or 48 <= data[i - 1] <= 57 or 65 <= data[i - 1] <= 90 or 97 <= data[i - 1] <= 122):
        i -= 1
    j = start
    while j < len(data) and (data[j] == 95 or 48 <= data[j] <= 57 or 65 <= data[j] <= 90 or 97 <= data[j] <= 122):
        j += 1
    return data[i:j].decode("ascii")


def scan_text(data: bytes, parts: Parts | None = None) -> set[bytes]:
    """The words ``data`` may define by the rules of Note [An exact definition pre-scan], without
    its same-file macros' expansions; ``parts``, when given, gets the stub and class words."""
    klass, macro, macro_words, stub_words = _patterns(registry.generation())
    out: set[bytes] = set()
    raw, data = data, _code(data)
    rev = data[::-1]
    size = len(data)
    control = _CONTROL.fullmatch
    for m in _BRACED_REVERSED.finditer(rev):
        if control(data, size - m.end(), size - m.start() - 1):  # ``if (f(x)) {``: no head
            continue
        brace = size - m.start() - 1
        close = data.rfind(b")", size - m.end(), brace)  # an argument's body may follow it, not a ``=``
        inner = close >= 0 and data.find(b"=", close, brace) < 0
        for h in _HEAD_REVERSED.finditer(rev, m.start(), m.end()):
            if inner and _inner_body(data, size - h.start() - 1, close, brace):
                continue  # ``gpu_kernel(iter, []GPU_LAMBDA(T a) -> T {``: the lambda's brace
            out.add(b"operator" if h.group(1) else h.group(2)[::-1])
    if b"default" in data or b"delete" in data:
        for m in _DEFAULTED.finditer(data):
            start = max(data.rfind(b";", 0, m.start()), data.rfind(b"{", 0, m.start()), data.rfind(b"}", 0, m.start()))
            for h in _HEAD.finditer(data, start + 1, m.start()):
                out.add(h.group(1) or h.group(2))
    for m in klass.finditer(_TEMPLATE_CLASS.sub(rb"\1     ", data) if b"class" in data else data):
        words = _WORDS.findall(m.group(1))
        out.update(words)
        if parts is not None:
            parts.classes.update(words)
    if b"(" in data:
        out.update(w[::-1] for w in _CAPS_CALL_REVERSED.findall(rev))
        for m in macro.finditer(data) if any(w in data for w in macro_words) else ():
            stub = m.group(0).startswith(stub_words)
            if stub and not is_dispatch_macro(_macro_name(data, m.start())):
                continue  # AT_DISPATCH_FLOATING_TYPES(iter.common_dtype(), ...): defines nothing
            words = _WORDS.findall(m.group(1))
            out.update(words)
            if parts is not None and stub:
                parts.stubs.update(words)
            if len(words) > 1:  # TORCH_META_FUNC2(scatter, src) defines scatter_src
                out.add(words[0] + b"_" + words[1])
    data = raw  # an Objective-C++ class and jiterator strings: the bytes as written
    if b"@" in data:
        objc = _OBJC_CLASS.findall(data)
        out.update(objc)
        if parts is not None:
            parts.classes.update(objc)
    if b"char" in data:
        out.update(_JIT_NAME.findall(data))
    if b"jiterator_stringify" in data:
        out.update(_JIT_CODE.findall(data))
    return out


def _inner_body(data: bytes, paren: int, close: int, brace: int) -> bool:
    """Whether the ``(`` at ``paren`` is still open at the ``{`` at ``brace`` (the statement's last
    ``)`` at ``close``, no ``=`` after it: a default ``= {}`` is the head's own), so that the brace
    opens the body of what its arguments hold (a lambda, a jiterator string's function). A head
    split by #if branches is read as written (not skipped)."""
    if (close < paren or data.count(b"(", paren, brace) <= data.count(b")", paren, brace)
            or data.find(b"#", paren, brace) >= 0):
        return False
    depth = 0
    for m in _PARENS.finditer(data, paren, brace):
        depth += 1 if m.group() == b"(" else -1
        if depth == 0:
            return False  # closed before the brace: a constructor's ``: a_(f(x, [] {``
    return True


def _code(data: bytes) -> bytes:
    """``data`` with each comment and string or character literal made one space: no definition is
    in them (Note [An exact definition pre-scan])."""
    if b"/" not in data and b'"' not in data and b"'" not in data:
        return data
    return _NOISE.sub(b" ", data)


# C++ keywords that a head's rule reads before ``(`` (``if (static_cast<int>(x)) {``): no definition
# is named so (tests/test_defscan_realtree.py checks every fact), so they name no candidate
KEYWORDS = frozenset(b"if for while switch return sizeof alignof alignas decltype static_cast dynamic_cast const_cast "
                     b"reinterpret_cast catch noexcept static_assert typeid throw new delete case do else typedef "
                     b"using template typename explicit constexpr co_await co_return co_yield requires".split())


def scan_file(data: bytes, parts: Parts | None = None) -> set[bytes]:
    """The words ``data`` may define: ``scan_text`` of it and of the expansions of its same-file
    macros' uses that the extractor expands (Note [Macro-made kernels] in macros.py), each followed
    by a body (Note [Macro-made definition heads] in macro_uses.py). ``parts`` gets the rest (Parts)."""
    names = _scan_file(data, parts)
    names -= KEYWORDS
    return names


def scan_parts(data: bytes) -> tuple[set[bytes], Parts]:
    """``scan_file`` of ``data`` and its Parts: what Candidates.add_scanned takes."""
    parts = Parts()
    return scan_file(data, parts), parts


def _scan_file(data: bytes, parts: Parts | None) -> set[bytes]:
    names = scan_text(data, parts)
    if b"define" not in data or not _FUNCTION_DEFINE.search(data):
        return names
    text = data.decode("utf-8", "replace")  # as parse.py decodes it for macros.read_defines
    defs = macros.read_defines(text)
    if not defs or not macros.interesting_names(defs):
        return names
    for use in macros.find_uses(text, defs):
        expanded = macros.expand(use, defs)
        if expanded:
            raw = expanded.encode("utf-8", "replace")
            names |= scan_text(raw + b" {}", parts)
            if parts is not None:
                parts.expanded.append(raw)
    return names


class Candidates:
    """The files that may define a name, from each file's ``scan_file``: ``files(name)`` in the
    order the files were added; ``stub_files`` and ``class_files`` for a stub's or a class's facts;
    ``qualifying(scope, rels)``: those of ``rels`` where a qualified name may hold ``scope::``."""

    def __init__(self):
        self._by_word: dict[bytes, list[str]] = {}
        self._by_stub_word: dict[bytes, list[str]] = {}
        self._by_class_word: dict[bytes, list[str]] = {}
        self._texts: dict[str, bytes] = {}
        self._expanded: dict[str, bytes] = {}
        self._classes: dict[str, frozenset[bytes]] = {}  # a file's class heads' words
        self._shapes: dict[bytes, re.Pattern] = {}  # qualifying's, by scope

    def add(self, rel: str, data: bytes) -> None:
        self.add_scanned(rel, data, *scan_parts(data))

    def add_scanned(self, rel: str, data: bytes, names: set[bytes], parts: Parts) -> None:
        """``add`` with ``scan_parts(data)`` made before (in a worker: exactfirst.TreeFiles)."""
        for word in names:
            self._by_word.setdefault(word, []).append(rel)
        for word in parts.stubs:
            self._by_stub_word.setdefault(word, []).append(rel)
        for word in parts.classes:
            self._by_class_word.setdefault(word, []).append(rel)
        if parts.classes:
            self._classes[rel] = frozenset(parts.classes)
        self._texts[rel] = data
        if parts.expanded:
            self._expanded[rel] = b"\n".join(parts.expanded)

    def files(self, name: str) -> list[str]:
        return self._by_word.get(name_key(name).encode(), [])

    def stub_files(self, name: str) -> list[str]:
        """The files that may declare, define or register a DispatchStub ``name`` (STUB_KINDS): those
        where a DECLARE/DEFINE/REGISTER_*DISPATCH's arguments name it."""
        return self._by_stub_word.get(name_key(name).encode(), [])

    def class_files(self, name: str) -> list[str]:
        """The files that may define a class ``name``: those where a class head names it."""
        return self._by_class_word.get(name_key(name).encode(), [])

    def qualifying(self, scope: str, rels: list[str]) -> list[str]:
        """Those of ``rels`` where a fact's qualified name may hold ``scope::`` (Note [Where a scope can
        be]; as Store.by_name_qual matches it, ``dtype::`` holds ``type::``): a class head names a word
        that ends in ``scope``, or its bytes or same-file macro expansions hold ``scope`` followed by
        ``::`` or ``<``, or a ``namespace`` head's last word ends in it."""
        word = scope.encode()
        shape = self._shapes.get(word)
        if shape is None:
            shape = self._shapes[word] = re.compile(  # not a query: unparsed bytes
                rb"%s\s*(?:<|::)|namespace\s+(?:\w+\s*::\s*)*\w*%s(?!\w)" % (re.escape(word), re.escape(word)))
        out = []
        for rel in rels:
            data = self._texts.get(rel, b"")
            if ((word in data and shape.search(data)) or any(head.endswith(word) for head in self._classes.get(rel, ()))
                    or shape.search(self._expanded.get(rel, b""))):
                out.append(rel)
        return out
