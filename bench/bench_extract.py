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

    .venv/bin/python bench/bench_extract.py --floor [--codegen CACHE/codegen/codegen-HASH]

``--floor``: this checkout alone, the floor of a cold build under its own design: CPU seconds of
tree-sitter's parse and of the extractor's query (``QueryCursor.matches``, every match made) over
the files a build parses, beside the whole ``extract_file`` of the same files (as build._parse_one
calls it: binding markers, kind filter), for the tree's files and torchgen's (``--codegen``: a
torchgen output folder of the cache, its files chosen as build.walk_generated chooses them), each
as a ratio to the CPU seconds of ``ctags -R aten/src/ATen`` (median of 3) on the same machine.
"""
from __future__ import annotations

import argparse
import json
import os
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


_FLOOR = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1] + "/src")
from pathlib import Path
from atenmap import build
from atenmap.extract.blanking import blank_attributes
from atenmap.extract.parse import extract_file
from atenmap.extract.treesitter import extract_query, parser
import tree_sitter as ts
tree, gen = Path(sys.argv[2]), sys.argv[3]
parts = {"tree": [(str(tree / rel), rel, lang) for rel, lang, _s, _m in build.walk_sources(tree)]}
if gen:
    g = Path(gen)
    parts["generated"] = [(p, p, lang) for p, lang, _s, _m in build.walk_generated(g / "aten", g / "python", g / "autograd")]
extract_file(b"int f() { return g(); }", "cpp")
extract_file(b"__global__ void k() {}", "cuda")
out = {}
for name, files in parts.items():
    parse = query = whole = 0.0
    nbytes = 0
    for path, rel, lang in files:
        data = Path(path).read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        nbytes += len(data)
        lang = "cpp" if lang == "objcpp" else lang
        t0 = time.process_time()
        t = parser(lang).parse(blank_attributes(data, lang))
        t1 = time.process_time()
        for _m in ts.QueryCursor(extract_query(lang)).matches(t.root_node):
            pass
        t2 = time.process_time()
        kinds = build._AUTOGRAD_KINDS if name == "generated" and build._AUTOGRAD_PATH.search(rel) else None
        extract_file(data, lang, bindings=name == "generated" and "/python_" in rel, kinds=kinds)
        t3 = time.process_time()
        parse, query, whole = parse + t1 - t0, query + t2 - t1, whole + t3 - t2
    out[name] = {"files": len(files), "mb": nbytes / 1e6, "parse_s": parse, "query_s": query, "extract_s": whole}
print(json.dumps(out))
"""


def floor(tree: Path, codegen: Path | None) -> int:
    """``--floor``: see the module's docstring."""
    import shutil
    import statistics

    ctags = shutil.which("ctags")
    if ctags is None:
        print("bench_extract: ctags not found (apt-get install -y universal-ctags)", file=sys.stderr)
        return 2
    cpu = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            t0 = os.times()
            subprocess.run([ctags, "-R", "-f", os.path.join(tmp, "tags"), "aten/src/ATen"], cwd=tree, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t1 = os.times()
            cpu.append(t1.children_user + t1.children_system - t0.children_user - t0.children_system)
    ctags_cpu = statistics.median(cpu)
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(REPO), str(tree), str(codegen or "")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench_extract: the floor run failed:\n{out.stderr.strip()}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"ctags -R aten/src/ATen CPU (median of 3): {ctags_cpu:.2f} s")
    print("| files | MB | parse | query | parse+query | extract_file (all of it) |")
    print("|---|---|---|---|---|---|")
    for name, r in res.items():
        pq = r["parse_s"] + r["query_s"]
        print(f"| {name} ({r['files']}) | {r['mb']:.1f} | {r['parse_s']:.2f} s | {r['query_s']:.2f} s | "
              f"{pq:.2f} s = {pq / ctags_cpu:.1f}x ctags | {r['extract_s']:.2f} s = {r['extract_s'] / ctags_cpu:.1f}x |")
    return 0


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
    ap.add_argument("--floor", action="store_true", help="this checkout's tree-sitter floor against ctags (see above)")
    ap.add_argument("--codegen", type=Path, help="with --floor: a torchgen output folder (<cache>/codegen/codegen-*)")
    args = ap.parse_args(argv)
    if not args.tree.is_dir():
        print(f"bench_extract: no PyTorch tree at {args.tree}", file=sys.stderr)
        return 2
    if args.floor:
        return floor(args.tree, args.codegen)
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
