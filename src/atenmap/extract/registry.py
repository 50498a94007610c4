"""The pattern registry: each C++ pattern atenmap understands, in one place (Note [Adding a pattern]).

A ``Pattern`` names its tree-sitter query (``queries/<query>.scm``, with named captures), its main
capture, its handler (captures -> facts), the fact kinds it makes and the words a byte scan must
look for where it defines a name. What used to be listed beside each pattern is derived from
here: the query files joined for a language (treesitter.py), parse.py's dispatch of captures to
handlers, the extractor's files that freshness.py hashes, and the words of the preview's
definition finder (scan.py).

This module imports no handler (a handler is named ``"module:function"`` of atenmap.extract and
imported by parse.py on first use): freshness.py reads the registry on every query, without
importing tree_sitter.

Note [Adding a pattern]
~~~~~~~~~~~~~~~~~~~~~~~
1. Write the query, ``queries/<name>.scm``: one pattern per shape, its main capture named as
   tree-sitter's tags convention (``@definition.<thing>`` / ``@reference.<thing>``), the inner
   node of interest ``@name``, and a ``; fixture:`` comment naming a fixture line it matches.
2. Write the handler in the module of its kind: ``f(unit, node, caps)`` for a DEFINITION (a fact
   made as soon as it is seen), ``f(unit, node, caps, scope, scopes)`` for a REFERENCE (placed in
   its enclosing function once every function of the text is known).
3. Add one ``Pattern`` to PATTERNS (its place in the list is its place in the joined query), with
   its kinds and, where it defines a name a chain looks up, its ``scan_words``.
4. Annotate a fixture line (``// ^ KIND NAME``, tests/test_parse.py) and name the pattern's
   capture in tests/test_registry.py's table of fixture lines.
A pattern added at run time (``register``, for tests and experiments) takes part in all of the
above but the extractor hash, which covers the package's own files only.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Union

from atenmap.kinds import FactKind


class Stage(Enum):
    """When parse.py hands a capture to its handler."""

    DEFINITION = "definition"  # at once: handler(unit, node, caps)
    REFERENCE = "reference"  # once every function is known: handler(unit, node, caps, scope, scopes)
    TEXT = "text"  # no query: handler(unit), after the references (shapes read as text, with the reason)


class ScanShape(Enum):
    """Where a ``scan_words`` word stands when the text defines a name (scan.py)."""

    NONE = "none"
    FIRST_ARGUMENT = "first argument"  # WORD(name ...: TORCH_IMPL_FUNC(add_out)
    ANY_ARGUMENT = "any argument"  # WORD...(..., name: REGISTER_CUDA_DISPATCH(add_stub, &k); not AT_
    KEYWORD = "keyword"  # WORD ... name {: struct name {


Handler = Union[str, Callable]


@dataclass(frozen=True)
class Pattern:
    """One C++ pattern: its query, handler, fact kinds and scan words.

    ``query``: a file stem of the package's queries folder, or a path (a pattern registered at run
    time); None for a pattern without a query of its own (``made_by`` says which handler makes its
    capture, and why). ``with_calls``/``without_calls``: whether its query is part of the query of
    a caller that keeps call facts / that keeps none (parse.extract_file's ``calls_too``).
    ``languages``: the grammars whose query includes it (cuda is C++ plus CUDA syntax)."""

    capture: str
    query: str | Path | None
    handler: Handler
    kinds: tuple[FactKind, ...]
    stage: Stage = Stage.REFERENCE
    languages: tuple[str, ...] = ("cpp", "cuda")
    with_calls: bool = True
    without_calls: bool = False
    scan_words: tuple[bytes, ...] = ()
    scan_shape: ScanShape = ScanShape.NONE
    made_by: str = ""


_BOTH = dict(with_calls=True, without_calls=True)
_DISPATCH_KINDS = (FactKind.DECLARE_DISPATCH, FactKind.DEFINE_DISPATCH, FactKind.REGISTER_DISPATCH)

# The patterns, in the order of the joined query of a language (matches keep that order).
PATTERNS: list[Pattern] = [
    # Every function body; TORCH_IMPL_FUNC(x) / TORCH_META_FUNC(x) blocks are told apart by their
    # declarator (definitions.py); the macro words are what the preview's scan looks for before a name.
    Pattern("definition.function", "definitions", "definitions:function", stage=Stage.DEFINITION,
            kinds=(FactKind.FUNCTION, FactKind.GLOBAL, FactKind.IMPL_FUNC, FactKind.META_FUNC, FactKind.MACRO_BLOCK),
            scan_words=tuple(f"TORCH_{pre}{what}_FUNC{two}".encode() for pre in ("", "PRECOMPUTE_")
                             for what in ("IMPL", "META") for two in ("", "2")),
            scan_shape=ScanShape.FIRST_ARGUMENT, **_BOTH),
    Pattern("definition.class", "definitions", "definitions:class_", stage=Stage.DEFINITION,
            kinds=(FactKind.CLASS,), scan_words=(b"struct", b"class"), scan_shape=ScanShape.KEYWORD, **_BOTH),
    Pattern("reference.call", "calls", "calls:call",
            kinds=(FactKind.CALL, FactKind.TORCH_IMPL) + _DISPATCH_KINDS),
    Pattern("reference.functor_decl", "calls", "calls:functor_decl", kinds=(FactKind.CALL,)),
    Pattern("reference.functor_arg", "calls", "calls:functor_arg", kinds=(FactKind.CALL,)),
    Pattern("reference.stub_arg", "calls", "calls:stub_arg", kinds=(FactKind.CALL,)),
    Pattern("definition.lambda", "lambdas", "calls:lambda_", kinds=(FactKind.LAMBDA,), **_BOTH),
    Pattern("reference.include", "includes", "definitions:include", stage=Stage.DEFINITION,
            kinds=(FactKind.INCLUDE,), **_BOTH),
    Pattern("reference.vexing_call", "misread_calls", "calls:vexing_call", kinds=(FactKind.CALL,)),
    # A call with a braced argument (``f<T>(x, Ops<T>{})`` in a block) is parsed as a nested function
    # definition: the function pattern's handler recognises it and hands it on under this capture.
    Pattern("reference.braced_call", None, "calls:braced_call", kinds=(FactKind.CALL,),
            made_by="definition.function: definitions.function hands on a nested definition that "
                    "calls.is_braced_call (Note [Calls tree-sitter misreads])"),
    Pattern("reference.tensor_operator", "tensor_operators", "operators:tensor_operator", kinds=(FactKind.CALL,)),
    Pattern("reference.launch", "launches", "launches:launch", kinds=(FactKind.LAUNCH,), languages=("cuda",)),
    # The query of a caller that keeps no call fact (the generated autograd files) reads only the
    # member calls that may be ``m.impl("op", fn)``, with the call pattern's captures and handler.
    Pattern("reference.call", "impl_calls", "calls:call", kinds=(FactKind.TORCH_IMPL,),
            with_calls=False, without_calls=True),
    # DECLARE/DEFINE/REGISTER_*_DISPATCH lines, read as text besides the calls of the query: see
    # Note [Dispatch macros read as text] in dispatch.py.
    Pattern("text.dispatch_macro", None, "dispatch:add_dispatch_macros_from_text", stage=Stage.TEXT,
            kinds=_DISPATCH_KINDS, scan_words=(b"_DISPATCH",), scan_shape=ScanShape.ANY_ARGUMENT, **_BOTH,
            made_by="read as text: namespace-level macro lines tree-sitter reads as calls only some of the time"),
]

# The extractor's modules that are no pattern's handler: the pipeline (parse.py), the reading of
# the text around the query, and the caps of limits.py (they decide which files are parsed).
PIPELINE_MODULES = (
    "parse", "treesitter", "registry", "fact", "unit", "blanking", "linestart", "nodes", "textblocks",
    "macro_uses", "bindings", "macros", "preproc", "objects", "jiterator", "languages", "native_yaml",
)


def patterns(lang: str | None = None, calls: bool | None = None) -> list[Pattern]:
    """The registered patterns (of ``lang``'s query; ``calls``: of the query that keeps calls or not)."""
    return [p for p in PATTERNS if (lang is None or lang in p.languages)
            and (calls is None or (p.with_calls if calls else p.without_calls))]


def query_files(lang: str, calls: bool = True) -> tuple[str | Path, ...]:
    """The query files joined into ``lang``'s query, in registry order, each once."""
    return _query_files(lang, calls, _GENERATION[0])


@lru_cache(maxsize=16)
def _query_files(lang: str, calls: bool, generation: int) -> tuple[str | Path, ...]:
    out: list[str | Path] = []
    for p in patterns(lang, calls):
        if p.query is not None and p.query not in out:
            out.append(p.query)
    return tuple(out)


def call_kinds() -> frozenset[FactKind]:
    """The kinds that patterns of the query with calls make and those of the query without calls
    do not (the text patterns run either way, and make them too): a caller that keeps none of
    them gets its facts from the query without calls (parse.extract_file, ``calls_too``)."""
    made_with = {k for p in patterns(calls=True) if not p.without_calls for k in p.kinds}
    made_without = {k for p in patterns(calls=False) if p.stage is not Stage.TEXT for k in p.kinds}
    return frozenset(made_with - made_without)


def extractor_files() -> tuple[str, ...]:
    """The package files that turn sources into facts (freshness.EXTRACTOR_FILES, build.extractor_hash):
    the pipeline's modules, each pattern's handler module and query file."""
    modules = list(PIPELINE_MODULES)
    queries: list[str] = []
    for p in PATTERNS:
        if isinstance(p.handler, str) and (m := p.handler.split(":")[0]) not in modules:
            modules.append(m)
        if isinstance(p.query, str) and p.query not in queries:
            queries.append(p.query)
    return tuple(f"extract/{m}.py" for m in modules) + tuple(f"extract/queries/{q}.scm" for q in queries)


def scan_words(shape: ScanShape, kind: FactKind | None = None) -> tuple[bytes, ...]:
    """The words of the patterns scanned with ``shape`` (making ``kind``), longest first."""
    words = {w for p in PATTERNS if p.scan_shape is shape and (kind is None or kind in p.kinds)
             for w in p.scan_words if kind is not FactKind.META_FUNC or b"META" in w}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def generation() -> int:
    """Changes whenever a pattern is registered or removed (the caches of derived tables key on it)."""
    return _GENERATION[0]


_GENERATION = [0]


def register(pattern: Pattern, before: str | None = None) -> None:
    """Add ``pattern`` to the registry (at the end, or before the first pattern of capture ``before``)."""
    at = next((i for i, p in enumerate(PATTERNS) if p.capture == before), len(PATTERNS))
    PATTERNS.insert(at, pattern)
    _GENERATION[0] += 1


def unregister(pattern: Pattern) -> None:
    PATTERNS.remove(pattern)
    _GENERATION[0] += 1


@contextmanager
def registered(pattern: Pattern) -> Iterator[Pattern]:
    """``pattern`` registered for the ``with`` block."""
    register(pattern)
    try:
        yield pattern
    finally:
        unregister(pattern)
