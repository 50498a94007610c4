"""Bench: what the runs block (resolve/runs.py) adds to a warm chain query.

    .venv/bin/python bench/bench_runs.py [--source TREE] [--rounds N]

On one open Index (the index must exist or is built first, outside the timed region), for each
operator, N interleaved rounds of:
  chain       the chain as before the runs block (Resolver.chain + the codegen warnings)
  chain+runs  Index.chain, which now also ranks the runs and reads their conditions
and prints the best CPU time (``time.process_time``: other processes' load moves it less than
wall time) of each and their ratio. Each round reads the files again (the reader
keeps nothing between queries), so the ratio is the cost a warm `atenmap OP` pays. Target from
issue 21: the warm chain time rises by no more than about 10 %.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

OPS = ["mul.out", "add.out", "mm", "scaled_dot_product_attention"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.environ.get("ATENMAP_SOURCE"))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--key", default="CUDA")
    args = ap.parse_args()
    from atenmap.api import Index
    from atenmap.resolve.chain import DEFAULT_DEPTH, Resolver

    ix = Index.open(args.source)

    def before(op):
        c = Resolver(ix.store, ix.source, ix._get, ix.operators).chain(ix.operator(op), keys=[args.key],
                                                                       depth=DEFAULT_DEPTH, expand=True)
        return dataclasses.replace(c, warnings=(*ix.codegen_warnings(), *c.warnings))

    def after(op):
        return ix.chain(op, keys=[args.key])

    print(f"source: {ix.source.root}  key: {args.key}  rounds: {args.rounds}")
    print(f"{'operator':<32} {'chain ms':>9} {'chain+runs ms':>14} {'ratio':>6} {'runs':>5}  (CPU, best of {args.rounds})")
    for op in OPS:
        after(op)  # warm: sqlite pages, memo tables
        best = {before: float("inf"), after: float("inf")}
        for _ in range(args.rounds):
            for fn in (before, after):
                t = time.process_time()
                fn(op)
                best[fn] = min(best[fn], time.process_time() - t)
        n = len(after(op).runs)
        print(f"{op:<32} {best[before] * 1e3:9.1f} {best[after] * 1e3:14.1f} {best[after] / best[before]:6.2f} {n:5d}")


if __name__ == "__main__":
    main()
