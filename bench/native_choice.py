"""The native definitions each operator's chain shows, for the CPU and CUDA keys, as JSON lines.

    PYTHONPATH=src python bench/native_choice.py --tree PATH > natives.jsonl

Run it with two versions of atenmap and diff the outputs to see which operators change answer
(the Note [Native overload selection] measurement in docs/limits.md).
"""
from __future__ import annotations

import argparse
import json
import sys

from atenmap.api import Index


def natives(step, out):
    if step.role.value == "native":
        out.append(f"{step.loc.file}:{step.loc.line}" if step.loc else step.symbol)
        return
    for c in step.children:
        natives(c, out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True)
    ap.add_argument("--keys", default="CPU,CUDA,CompositeImplicitAutograd,CompositeExplicitAutograd")
    a = ap.parse_args()
    ix = Index.open(a.tree)
    keys = a.keys.split(",")
    for op in ix.operators():
        have = set(ix.operator_keys(op))
        for key in keys:
            if key not in have:
                continue
            ch = ix.chain(op, keys=[key], depth=0, expand=False)
            out: list[str] = []
            for kc in ch.keys:
                for s in kc.steps:
                    natives(s, out)
            print(json.dumps({"op": str(op.name), "key": key, "natives": sorted(set(out))}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
