"""Bench: the bundled index's runs block, kept lists against the ranking by ``#if`` alone.

    .venv/bin/python bench/bench_bundle_runs.py [--rounds N]     (run it outside any PyTorch checkout)

On the bundled index (Note [The runs the bundle keeps] in resolve/runs.py), for each operator's
chain of the keys a default answer shows (plus CUDA), N interleaved rounds of:
  by #if     resolve.runs.runs(chain, None, ...): the root-less reading the bundle used before
  kept       Store.quoted_runs + resolve.runs.kept_runs for each key: what a bundled answer does now
and prints the best CPU time (``time.process_time``) of each and their ratio. The chain itself
(the same for both) is made once, outside the timed region. Target (issue 33): a warm bundled
answer no slower than before, i.e. the ratio at most 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

OPS = ["mm", "addmm", "conv2d", "amax", "softmax", "cross_entropy_loss", "add.out", "index_select", "sum", "cat",
       "copy_", "embedding"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from atenmap import devices
    from atenmap.api import Index
    from atenmap.resolve.runs import kept_runs, runs as what_runs

    ix = Index.open()
    if ix.source.origin != "bundled" or not ix.store.quotes_runs():
        sys.exit("bench_bundle_runs: run it where no PyTorch tree is found (the bundled index, with its kept runs)")
    chains = []
    for op in OPS:
        o = ix.lookup(op).operator
        keys = list(dict.fromkeys(devices.common_keys(ix.operator_keys(o)) + ["CUDA"]))
        chains.append((str(o.name), ix.chain(o, keys=keys, runs=False)))
    by_if = kept = float("inf")
    for _ in range(args.rounds):
        a = time.process_time()
        for _name, chain in chains:
            what_runs(chain, None, ix.store.function_spans, None, "cuda", ix._strided_views())
        b = time.process_time()
        for name, chain in chains:
            for kc in chain.keys:
                kept_runs(kc.key, ix.store.quoted_runs(name, kc.key, "cuda") or [])
        c = time.process_time()
        by_if, kept = min(by_if, b - a), min(kept, c - b)
    print(f"{len(OPS)} operators, best of {args.rounds}: by #if {by_if * 1000:.0f} ms, kept {kept * 1000:.0f} ms, "
          f"ratio {kept / by_if:.3f}")


if __name__ == "__main__":
    main()
