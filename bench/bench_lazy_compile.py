"""What leaving the torch.compile facts out of a build saves (issue 37, item 2; Note [torch.compile
facts when asked] in build.py), against ctags in the same run.

    .venv/bin/python bench/bench_lazy_compile.py               # 2.6.0, torchgen's output cached first
    .venv/bin/python bench/bench_lazy_compile.py --runs 3 --no-codegen

In a private temporary cache: torchgen's output made once (unless --no-codegen), then ``--runs``
times, alternately: ``ctags -R aten/src/ATen``, a cold build as a query makes it (``build(force=True)``
with ``indexes/`` and ``facts/`` moved aside: every file parsed, no torch.compile facts), the same
with ``compile_facts=True`` (as ``atenmap index`` builds), and then a ``--compile`` query's build of
the facts alone into the fresh index (``build(compile_facts=True)``). Each build runs in a fresh
interpreter; wall and CPU (user + sys, its pool included) are printed with their ratios to the
ctags run just before and to ctags' median CPU. The box may be shared: only ratios mean anything.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_BUILD = """
import json, sys, time, resource
from atenmap.build import build
from atenmap.source.find import find_source
t = time.perf_counter()
build(find_source(sys.argv[1]), force=sys.argv[2] == "force", codegen=sys.argv[3] == "codegen",
      compile_facts=sys.argv[4] == "compile")
print(json.dumps({"wall": time.perf_counter() - t}))
"""


def _build(tree: Path, cache: Path, force: bool, codegen: bool, compile_facts: bool) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of one build in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "ATENMAP_CACHE": str(cache), "ATENMAP_CODEGEN": "always"}
    before = os.times()
    out = subprocess.run([sys.executable, "-c", _BUILD, str(tree), "force" if force else "-",
                          "codegen" if codegen else "-", "compile" if compile_facts else "-"],
                         env=env, check=True, capture_output=True, text=True).stdout
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return json.loads(out.splitlines()[-1])["wall"], cpu


def main() -> int:
    sys.path.insert(0, str(REPO / "bench"))
    import bench_speed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-codegen", action="store_true")
    args = ap.parse_args()
    codegen = not args.no_codegen
    rows: dict[str, list[tuple[float, float, float]]] = {"without": [], "with": [], "facts alone": []}
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-lazy-") as tmp_s:
        tmp = Path(tmp_s)
        cache = tmp / "cache"
        if codegen:
            _build(args.tree, cache, True, True, False)  # torchgen's output, cached for every run below
        for i in range(args.runs):
            for label, compile_facts in (("without", False), ("with", True)):
                for sub in ("indexes", "facts"):
                    if (cache / sub).exists():
                        shutil.move(str(cache / sub), str(tmp / f"{sub}-{label}-{i}"))
                subprocess.run(["sync"], check=False)
                c = bench_speed.ctags(args.tree, tmp, runs=1)
                wall, cpu = _build(args.tree, cache, True, codegen, compile_facts)
                rows[label].append((wall, cpu, c))
                print(f"  cold build {label} torch.compile facts: {wall:.2f} s, CPU {cpu:.2f} s (ctags {c:.2f} s)",
                      file=sys.stderr, flush=True)
                if not compile_facts:
                    c = bench_speed.ctags(args.tree, tmp, runs=1)
                    t0 = time.perf_counter()
                    wall, cpu = _build(args.tree, cache, False, codegen, True)
                    rows["facts alone"].append((wall, cpu, c))
                    print(f"  then a --compile query's build of the facts alone: {wall:.2f} s "
                          f"({time.perf_counter() - t0:.2f} s with the interpreter), CPU {cpu:.2f} s",
                          file=sys.stderr, flush=True)
    ccpu = statistics.median(bench_speed.CTAGS_CPU)
    print(f"ctags -R aten/src/ATen CPU median {ccpu:.2f} s; torchgen's output {'cached' if codegen else 'off'}; "
          f"median of {args.runs} runs")
    print("| build | wall | wall / ctags just before | CPU | CPU / ctags CPU |", "|---|---|---|---|---|", sep="\n")
    for label, rs in rows.items():
        wall, cpu = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
        ratio = statistics.median(r[0] / r[2] for r in rs)
        print(f"| {label} torch.compile facts | {wall:.2f} s | {ratio:.1f}x | {cpu:.2f} s | {cpu / ccpu:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
