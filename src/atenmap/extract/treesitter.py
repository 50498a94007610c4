"""The one module that imports ``tree_sitter``: grammars, the parser, the tag queries.

It hides py-tree-sitter's changing API (``Query`` / ``QueryCursor``) behind ``run_query`` and
``captures``. The other extractor modules hold ``Node`` objects and use their attributes only."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterator

import tree_sitter as ts

from atenmap.extract import registry
from atenmap.extract.blanking import blank_attributes

Node = ts.Node
Tree = ts.Tree

# The extractor's query of a language is the query files of its patterns (extract/registry.py)
# joined in registry order into one query (one pass over each tree); the query of a caller that
# keeps no call fact (parse.py, ``calls_too=False``) joins those of the patterns marked
# ``without_calls``. The CUDA grammar is the C++ one plus CUDA syntax: its query adds launches.scm.


@lru_cache(maxsize=None)
def language(lang: str) -> ts.Language:
    if lang == "cuda":
        import tree_sitter_cuda

        return ts.Language(tree_sitter_cuda.language())
    import tree_sitter_cpp

    return ts.Language(tree_sitter_cpp.language())


def extract_query(lang: str, calls: bool = True) -> ts.Query:
    """The extractor's query for ``lang``: its patterns' query files joined (``calls=False``: those
    of the query without calls), as registry.query_files lists them."""
    return _joined_query(lang, registry.query_files(lang, calls))


@lru_cache(maxsize=None)
def _joined_query(lang: str, files: tuple[str | Path, ...]) -> ts.Query:
    return ts.Query(language(lang), "\n".join(query_text(f) for f in files))


def query_text(query: str | Path) -> str:
    """A query file's text: a stem of the package's queries folder, or a path."""
    if isinstance(query, Path):
        return query.read_text()
    return resources.files("atenmap.extract.queries").joinpath(f"{query}.scm").read_text()


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
    files = registry.query_files(lang, calls)
    cursor = ts.QueryCursor(_joined_query(lang, files))
    mains = _MAIN_CAPTURE.setdefault((lang, files), {})
    for pattern, caps in cursor.matches(node):
        main = mains.get(pattern)
        if main is None:
            main = mains[pattern] = next(k for k in caps if "." in k)
        yield main, {k: v[0] for k, v in caps.items()}


# (lang, query files) -> pattern index -> its @definition./@reference. capture
_MAIN_CAPTURE: dict[tuple[str, tuple], dict[int, str]] = {}


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
    return ts.Query(language(lang), query_text(name))


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
