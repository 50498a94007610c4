"""Bench: warm in-process chain time of this checkout against a base commit, 17 operators.

    .venv/bin/python bench/bench_warm_chain.py [--source TREE] [--base 68727ee] [--processes 2] [--rounds 3]

One index (this checkout opens or builds it first, outside the timed part, in ``ATENMAP_CACHE``)
is read by both sides with ``refresh=False``, so both answer from the same facts. The base is a
``git worktree`` of ``--base`` in a temporary folder. Sides alternate, each a fresh process
(``--processes`` per side) that runs every operator's ``Index.chain`` once (warm: SQLite pages,
imports), then ``--rounds`` rounds of all of them; per operator the best CPU time
(``time.process_time``) over all its processes and rounds. Prints the table and the ratio of the
sums. Issue 25's target: the warm chain time rises by no more than 10 % over 68727ee.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

OPS = [("add.out", "CUDA"), ("mm", "CUDA"), ("addmm.out", "CUDA"), ("linalg_cholesky_ex.L", "CUDA"),
       ("linalg_svd.U", "CUDA"), ("cudnn_convolution", "CUDA"), ("copy_", "CUDA"), ("sort.stable", "CUDA"),
       ("softmax.int", "CUDA"), ("index_put_", "CUDA"), ("mul.out", "CUDA"), ("cumsum", "CUDA"),
       ("erfinv.out", "CPU"), ("mv", "CPU"), ("mm", "CPU"), ("add.out", "CPU"), ("exponential_", "CPU")]

_CHILD = """
import json, sys, time
from atenmap.api import Index
ops, rounds = json.loads(sys.argv[2]), int(sys.argv[3])
ix = Index.open(sys.argv[1], refresh=False)
for op, key in ops:
    ix.chain(op, keys=[key])
best = {}
for _ in range(rounds):
    for op, key in ops:
        t = time.process_time(); ix.chain(op, keys=[key]); dt = time.process_time() - t
        best[f"{op}/{key}"] = min(best.get(f"{op}/{key}", 9e9), dt)
print(json.dumps(best))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.environ.get("ATENMAP_SOURCE",
                                                       os.path.expanduser("~/.cache/atenmap/test-trees/pytorch-2.6.0")))
    ap.add_argument("--base", default="68727ee")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index

    Index.open(args.source).close()  # built or refreshed by this checkout, outside the timing
    with tempfile.TemporaryDirectory(prefix="atenmap-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), args.base],
                       check=True, capture_output=True)
        try:
            sides = {args.base: base / "src", "this": REPO / "src"}
            best: dict[str, dict[str, float]] = {s: {} for s in sides}
            for _ in range(args.processes):
                for side, src in sides.items():
                    out = subprocess.run([sys.executable, "-c", _CHILD, args.source, json.dumps(OPS), str(args.rounds)],
                                         env=dict(os.environ, PYTHONPATH=str(src)), capture_output=True, text=True,
                                         check=True).stdout
                    for k, v in json.loads(out).items():
                        best[side][k] = min(best[side].get(k, 9e9), v)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)
    print(f"{'operator':28s}" + "".join(f"{s:>10s}" for s in sides) + "   (ms CPU, best)")
    for k in best[args.base]:
        print(f"{k:28s}" + "".join(f"{best[s][k] * 1e3:10.1f}" for s in sides))
    total = {s: sum(best[s].values()) for s in sides}
    print(f"{'total':28s}" + "".join(f"{total[s] * 1e3:10.1f}" for s in sides))
    print(f"ratio this/{args.base}: {total['this'] / total[args.base]:.3f}")


if __name__ == "__main__":
    main()
