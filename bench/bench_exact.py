"""How much of the tree a complete (exact) answer depends on, and the least time that costs.

    .venv/bin/python bench/bench_exact.py                  # 2.6.0: the broad set + 60 at random (seed 24)
    .venv/bin/python bench/bench_exact.py --op mul.out --key CUDA   # bench_speed.py's query
    .venv/bin/python bench/bench_exact.py --tree ~/.cache/atenmap/test-trees/pytorch-1.13.1 --set random --random 30

A first answer that is *complete* (what a pipe, a script or ``--json`` gets, identical to the full
index's) can skip a file only if no fact of that file could change the answer. The resolver asks
the index about names (``by_name``, ``by_name_qual``, ``has_name``: is ``size`` defined anywhere? which
``operator()`` of ``MulFunctor``?), and the answer changes with every definition of those names.
Which occurrences of a name are definitions is tree-sitter's to say (with error recovery, a
token in a file full of export macros can head a definition), so a file holding the name as a
token must be parsed before the answer is known; a file without it can be skipped (facts are per
file: Note [Macro-made kernels] expands same-file macros only; the few names no file spells, a
pasted ``gru_cudnn_stub``, only add to this lower bound).

For each operator, on the full ``--no-codegen`` index (built in a private temporary cache), the
chain of ``atenmap OP`` (default keys) is made with the store's name lookups recorded; the files
that hold each looked-up name as a token (a ``by_name_qual``'s class too: both) are that lookup's
files; their union is what the answer depends on. Its floor is tree-sitter's own parse and query
of those files (CPU seconds, measured per file once, as ``bench_extract.py --floor`` does), split
perfectly over the machine's cores, with no Python work at all: a bound no implementation of the
complete answer on tree-sitter can beat. It is compared with ``ctags -R aten/src/ATen`` (median of
3): its CPU seconds, which are its wall time on an idle machine (one process) and steadier under
load, against issue 24's target for the first answer (3x ctags).
Results: docs/performance.md, "Why a complete first answer cannot be within 3x ctags".
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_TOKEN = re.compile(rb"[A-Za-z_]\w*")
_WORD = re.compile(r"[A-Za-z_]\w*")


def floor_per_file(tree: Path, rels: list[str], languages: dict[str, str]) -> dict[str, float]:
    """CPU seconds of tree-sitter's parse and of the extractor's query, per file (nothing else)."""
    import tree_sitter as ts

    from atenmap.extract.blanking import blank_attributes
    from atenmap.extract.treesitter import extract_query, parser

    out = {}
    for rel in rels:
        data = (tree / rel).read_bytes()
        lang = "cpp" if languages[rel] == "objcpp" else languages[rel]
        t0 = time.process_time()
        root = parser(lang).parse(blank_attributes(data, lang)).root_node
        for _m in ts.QueryCursor(extract_query(lang)).matches(root):
            pass
        out[rel] = time.process_time() - t0
    return out


def recording(store) -> list[tuple[str, str, str]]:
    """The name lookups made on this store object: (method, name, by_name_qual's suffix or '')."""
    seen: list[tuple[str, str, str]] = []
    for method in ("by_name", "by_name_qual", "has_name"):
        real = getattr(store, method)

        def recorded(name, kinds, *args, _real=real, _method=method, **kw):
            seen.append((_method, name, args[0] if args and isinstance(args[0], str) else ""))
            return _real(name, kinds, *args, **kw)

        setattr(store, method, recorded)
    return seen


def lookup_words(method: str, name: str, suffix: str) -> list[str]:
    """The tokens a file must hold to have a fact this lookup returns."""
    words = _WORD.findall(name.rsplit("::", 1)[-1])
    parts = suffix.split("::")
    if method == "by_name_qual" and len(parts) > 2 and parts[-2]:
        words += _WORD.findall(parts[-2])
    return words


def main() -> int:
    sys.path.insert(0, str(REPO / "bench"))
    import bench_preview
    import bench_speed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--set", choices=("broad", "random", "both"), default="both")
    ap.add_argument("--random", type=int, default=60)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--op", action="append", help="these operators only (repeatable), e.g. --op mul.out --key CUDA: "
                    "bench_speed's query")
    ap.add_argument("--key", action="append", help="the dispatch keys asked (default: as `atenmap OP`)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wall = bench_speed.ctags(args.tree, Path(tmp), runs=3)
    cpu = statistics.median(bench_speed.CTAGS_CPU)
    print(f"ctags -R aten/src/ATen: {wall:.2f} s wall, {cpu:.2f} s CPU (median of 3); {args.cores} cores")
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-exact-") as cache:
        os.environ["ATENMAP_CACHE"] = cache
        from atenmap.api import Index
        from atenmap.cli.chain_run import load_chain_for
        from atenmap.errors import AtenmapError
        from atenmap.source.find import find_source

        full = Index.open(find_source(str(args.tree)), codegen=False)
        rows = list(full.store.conn.execute("SELECT path, language, size FROM files WHERE generated = 0"))
        parsed = [(p, lang) for p, lang, _s in rows if (args.tree / p).is_file()]
        languages = dict(parsed)
        holders: dict[str, set[str]] = defaultdict(set)
        for rel, _lang in parsed:
            for tok in set(_TOKEN.findall((args.tree / rel).read_bytes())):
                holders[tok.decode()].add(rel)
        per_file = floor_per_file(args.tree, [r for r, _l in parsed], languages)
        tree_bytes = sum(s for _p, _l, s in rows)
        tree_floor = sum(per_file.values())
        print(f"tree: {len(parsed)} files, {tree_bytes / 1e6:.1f} MB; tree-sitter parse+query {tree_floor:.2f} s CPU "
              f"= {tree_floor / cpu:.1f}x ctags CPU")
        seen = recording(full.store)
        sets = []
        if args.op:
            sets.append(("asked", args.op))
        elif args.set in ("broad", "both"):
            sets.append(("broad", [op for op in bench_preview.OPS if bench_preview._known(full, op)]))
        if args.set in ("random", "both") and not args.op:
            sets.append((f"random (seed {bench_preview.SEED})", bench_preview.random_ops(full, args.random)))
        for title, ops in sets:
            print(f"== {title}: {len(ops)} operators")
            ratios, shares, within = [], [], 0
            for op in ops:
                seen.clear()
                try:
                    load_chain_for(full, op, args.key, 8, note=lambda _m: None)
                except AtenmapError as exc:
                    print(f"{op:40} error: {exc}")
                    continue
                files: set[str] = set()
                for method, name, suffix in seen:
                    words = lookup_words(method, name, suffix)
                    if words:
                        files |= set.intersection(*(holders.get(w, set()) for w in words))
                size = sum((args.tree / f).stat().st_size for f in files)
                floor = sum(per_file.get(f, 0.0) for f in files)
                ratio = floor / args.cores / cpu  # ctags is one process: its CPU is its idle wall time
                ratios.append(ratio)
                shares.append(size / tree_bytes)
                within += ratio <= 3.0
                print(f"{op:40} lookups {len(seen):4}  files {len(files):5}  {size / 1e6:5.1f} MB "
                      f"({100 * size / tree_bytes:3.0f}%)  floor {floor:5.2f} s CPU = {ratio:4.1f}x ctags")
            print(f"{title}: median share of the tree {100 * statistics.median(shares):.0f}%; median floor "
                  f"{statistics.median(ratios):.1f}x ctags on {args.cores} cores; {within} of {len(ratios)} "
                  f"operators could be answered completely within 3x ctags (with no Python work at all)")
        full.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
