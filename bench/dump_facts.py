"""Dump every fact ``extract_file`` gives for a PyTorch tree (and fixtures/pytorch-mini), sorted, as text.

    .venv/bin/python bench/dump_facts.py --out /tmp/new.txt
    .venv/bin/python bench/dump_facts.py --code /tmp/main-checkout --out /tmp/old.txt   # another checkout's extractor
    diff /tmp/old.txt /tmp/new.txt

One line per fact: path, has_error, then the fact's fields, with ``scope`` written as the enclosing
fact's ``kind:qual:line`` (an index into the file's list would differ when only the order of the
list differs, which no reader of the index depends on). The files are those a build reads
(build.walk_sources: aten/src/ATen and FunctionsManual.*); Python binding markers are asked for on
files named ``python_*`` as a build does for generated ones (``--generated``: a torchgen output folder). Used to prove that a change of the
extractor keeps every fact (docs/architecture.md, "The extractor").
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TREE = Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0"


def files_of(tree: Path) -> list[tuple[str, str]]:
    """``(relpath, lang)`` of every file a build of ``tree`` reads, in walk order."""
    from atenmap.build import walk_sources

    return [(rel, lang) for rel, lang, _size, _mtime in walk_sources(tree)]


def fixture_files(root: Path) -> list[tuple[str, str]]:
    from atenmap.extract.languages import language_of

    out = []
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            rel = os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/")
            lang = language_of(rel)
            if lang is not None:
                out.append((rel, lang))
    return out


def fact_lines(label: str, data: bytes, lang: str, bindings: bool) -> list[str]:
    from atenmap.extract.parse import extract_file

    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{label}\tskipped:not-utf8"]
    has_error, facts = extract_file(data, lang, bindings=bindings)
    out = []
    for f in facts:
        scope = facts[f.scope] if 0 <= f.scope < len(facts) else None
        where = f"{scope.kind}:{scope.qual}:{scope.line}" if scope is not None else "-"
        fields = (f.kind, f.name, f.qual, f.line, f.end_line, f.namespace, where, f.arg, f.detail, f.via_macro,
                  f.cond, f.targs)
        out.append(label + "\t" + str(int(has_error)) + "\t" + "\t".join(str(x).replace("\n", "\\n") for x in fields))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=DEFAULT_TREE, help="PyTorch source tree (default: 2.6.0 test tree)")
    ap.add_argument("--code", type=Path, help="a checkout of atenmap whose src/ extractor to use (default: this one)")
    ap.add_argument("--generated", type=Path, action="append", default=[],
                    help="also a folder of generated sources (a codegen output in the cache): its python_* files "
                         "with their binding markers, as a build reads them")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    sys.path.insert(0, str((args.code or REPO) / "src"))
    if not args.tree.is_dir():
        print(f"dump_facts: no PyTorch tree at {args.tree}", file=sys.stderr)
        return 2
    lines: list[str] = []
    sources = [(args.tree, rel, lang, "") for rel, lang in files_of(args.tree)]
    mini = REPO / "fixtures/pytorch-mini"
    sources += [(mini, rel, lang, "mini:") for rel, lang in fixture_files(mini)]
    for folder in args.generated:
        sources += [(folder, rel, lang, "generated:") for rel, lang in fixture_files(folder)]
    for root, rel, lang, prefix in sources:
        data = (root / rel).read_bytes()
        lines.extend(fact_lines(prefix + rel, data, lang, "/python_" in "/" + rel))
    lines.sort()
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(sources)} files, {len(lines)} facts -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
