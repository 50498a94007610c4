"""Time the extractor alone over a whole PyTorch tree: this checkout against a baseline checkout, same run.

    .venv/bin/python bench/bench_extract.py                          # baseline: a worktree of main in /tmp
    .venv/bin/python bench/bench_extract.py --base /tmp/old-checkout --repeat 3

Each side runs in its own subprocess (single process, no fact cache): it reads every file a build
reads (build.walk_sources) into memory first, then calls ``extract_file`` on each and reports the
total seconds (wall and CPU), the slowest files and its peak RSS. Sides alternate ``--repeat``
times and the best of each is kept, so that load from other processes on the machine weighs on
both alike. The baseline is a ``git worktree`` of ``--base-rev`` (default ``main``) made in a
temporary folder and removed afterwards, unless ``--base`` names a checkout. Nothing is asserted:
the ratio is printed (new / base, lower is faster).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TREE = Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0"

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1] + "/src")
from pathlib import Path
from atenmap.build import walk_sources
from atenmap.extract.parse import extract_file
tree = Path(sys.argv[2])
jobs = []
for rel, lang, _s, _m in walk_sources(tree):
    data = (tree / rel).read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        continue
    jobs.append((rel, lang, data))
extract_file(b"int f() { return g(); }", "cpp")  # grammar and queries loaded outside the timing
extract_file(b"__global__ void k() {}", "cuda")
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
slow = []
w0, c0 = time.perf_counter(), time.process_time()
facts = 0
for rel, lang, data in jobs:
    t = time.perf_counter()
    facts += len(extract_file(data, lang)[1])
    slow.append((time.perf_counter() - t, rel))
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
slow.sort(reverse=True)
print(json.dumps({"files": len(jobs), "facts": facts, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mb": rss0 / 1024, "slowest": [[round(s, 3), r] for s, r in slow[:5]]}))
"""


def run_side(code: Path, tree: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(code), str(tree)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench_extract: the run of {code} failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=DEFAULT_TREE)
    ap.add_argument("--base", type=Path, help="a checkout to compare against (default: a worktree of --base-rev)")
    ap.add_argument("--base-rev", default="main")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    if not args.tree.is_dir():
        print(f"bench_extract: no PyTorch tree at {args.tree}", file=sys.stderr)
        return 2
    tmp = None
    base = args.base
    if base is None:
        tmp = tempfile.mkdtemp(prefix="atenmap-bench-extract-")
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), args.base_rev],
                       check=True, capture_output=True)
    try:
        runs: dict[str, list[dict]] = {"base": [], "new": []}
        for _ in range(args.repeat):
            runs["base"].append(run_side(base, args.tree))
            runs["new"].append(run_side(REPO, args.tree))
    finally:
        if tmp is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], capture_output=True)
    best = {k: min(v, key=lambda r: r["cpu_s"]) for k, v in runs.items()}
    for k in ("base", "new"):
        r = best[k]
        print(f"{k:5} {r['files']} files {r['facts']} facts  wall {r['wall_s']:.1f} s  cpu {r['cpu_s']:.1f} s  "
              f"peak RSS {r['peak_rss_mb']:.0f} MB  slowest {r['slowest'][0]}")
    print(f"ratio new/base: cpu {best['new']['cpu_s'] / best['base']['cpu_s']:.2f}  "
          f"wall {best['new']['wall_s'] / best['base']['wall_s']:.2f}  "
          f"peak RSS {best['new']['peak_rss_mb'] / best['base']['peak_rss_mb']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"best": best, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
