"""The one module that imports ``tree_sitter``: grammars, the parser, the tag queries.

It hides py-tree-sitter's changing API (``Query`` / ``QueryCursor``) behind ``run_query`` and
``captures``. The other extractor modules hold ``Node`` objects and use their attributes only."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterator

import tree_sitter as ts

from atenmap.extract.blanking import blank_attributes

Node = ts.Node
Tree = ts.Tree

# The extractor's query files, one per fact kind, joined in this order into one query per
# language (one pass over each tree). The CUDA grammar is the C++ one plus CUDA syntax: its
# query is the C++ files and launches.scm.
QUERY_FILES = {
    "cpp": ("definitions", "calls", "lambdas", "includes", "misread_calls"),
    "cuda": ("definitions", "calls", "lambdas", "includes", "misread_calls", "launches"),
}
# The query of a caller that keeps no call fact (parse.py, ``calls_too=False``): definitions,
# lambdas, includes and only the member calls that may be ``m.impl(...)``. The generated autograd
# files hold 125,000 calls that would be matched and then dropped.
NO_CALLS_QUERY_FILES = {
    "cpp": ("definitions", "lambdas", "includes", "impl_calls"),
    "cuda": ("definitions", "lambdas", "includes", "impl_calls"),
}


@lru_cache(maxsize=None)
def language(lang: str) -> ts.Language:
    if lang == "cuda":
        import tree_sitter_cuda

        return ts.Language(tree_sitter_cuda.language())
    import tree_sitter_cpp

    return ts.Language(tree_sitter_cpp.language())


@lru_cache(maxsize=None)
def extract_query(lang: str, calls: bool = True) -> ts.Query:
    """The extractor's query for ``lang``: its QUERY_FILES joined (``calls=False``: its
    NO_CALLS_QUERY_FILES)."""
    folder = resources.files("atenmap.extract.queries")
    names = (QUERY_FILES if calls else NO_CALLS_QUERY_FILES)[lang]
    return ts.Query(language(lang), "\n".join(folder.joinpath(f"{n}.scm").read_text() for n in names))


@lru_cache(maxsize=None)
def parser(lang: str) -> ts.Parser:
    return ts.Parser(language(lang))


def grammar_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("tree-sitter", "tree-sitter-cpp", "tree-sitter-cuda"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:  # pragma: no cover - installed from source
            out[dist] = "unknown"
    return out


def run_query(lang: str, node: ts.Node, calls: bool = True) -> Iterator[tuple[str, dict[str, ts.Node]]]:
    """Yield ``(pattern_capture_name, {capture: node})`` for each match of the language's query
    (``calls``: as extract_query)."""
    cursor = ts.QueryCursor(extract_query(lang, calls))
    mains = _MAIN_CAPTURE.setdefault((lang, calls), {})
    for pattern, caps in cursor.matches(node):
        main = mains.get(pattern)
        if main is None:
            main = mains[pattern] = next(k for k in caps if "." in k)
        yield main, {k: v[0] for k, v in caps.items()}


# (lang, calls) -> pattern index -> its @definition./@reference. capture
_MAIN_CAPTURE: dict[tuple[str, bool], dict[int, str]] = {}


@dataclass(frozen=True, slots=True)
class Capture:
    """One capture of a reader's query (``captures``), as plain data: the node's byte span and
    1-based first line, and where its parent ends (the block an early ``return`` leaves)."""

    name: str
    start: int
    end: int
    line: int
    parent_end: int


@lru_cache(maxsize=None)
def _reader_query(lang: str, name: str) -> ts.Query:
    return ts.Query(language(lang), resources.files("atenmap.extract.queries").joinpath(f"{name}.scm").read_text())


def captures(src: bytes, lang: str, query: str) -> list[list[Capture]]:
    """Every match of ``queries/<query>.scm`` in ``src``, each as its captures. ``src`` is parsed
    as the extractor parses it (attribute macros and #defines blanked, same bytes and lines: Note
    [Attribute macros]); for readers of one file's structure at query time (extract/branches.py)."""
    lang = "cpp" if lang == "objcpp" else lang
    tree = parser(lang).parse(blank_attributes(src, lang))
    out = []
    for _pattern, caps in ts.QueryCursor(_reader_query(lang, query)).matches(tree.root_node):
        out.append([Capture(k, n.start_byte, n.end_byte, n.start_point[0] + 1,
                            n.parent.end_byte if n.parent is not None else n.end_byte)
                    for k, nodes in caps.items() for n in nodes])
    return out
