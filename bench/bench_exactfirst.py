"""The first complete answer on a never-indexed tree, from the full index (today's default) and from
the exact pre-scan's candidates (``ATENMAP_EXACT_FIRST=1``: exactfirst.py), side by side with ctags,
in one run (issue 37's first and third rows).

    .venv/bin/python bench/bench_exactfirst.py                 # 2.6.0, 2 rounds, alternating
    .venv/bin/python bench/bench_exactfirst.py --rounds 3 --tree ~/pytorch
    .venv/bin/python bench/bench_exactfirst.py --query hand-written --exact-only --src BASE/src --src src

Each round, for each query (``mul.out --key CUDA --json --no-codegen`` and ``mul.out --key CUDA
--json``, torchgen run with consent: ATENMAP_CODEGEN=always) and each way: ``ctags -R aten/src/ATen``
(wall and CPU), then ``python -m atenmap QUERY`` in the tree with an empty ATENMAP_CACHE, stdout a
pipe. Measured: seconds to the end of stdout (the answer: with ATENMAP_EXACT_FIRST=1 the full index
is built after it, stdout closed first), the CPU seconds of the process and its children at that
moment (from /proc, every process of its tree), and the seconds to the process's end. Both ways'
answers are compared byte for byte (the cache folder written <cache>). Medians per row. Each
``--src`` (an atenmap src/ folder, this checkout's by default; several: a base and this, each way
in turn within a round) gets its own rows; ``--exact-only`` leaves the full-index way out.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CTAGS = shutil.which("ctags") or "/usr/bin/ctags"
QUERIES = {"hand-written": ["mul.out", "--key", "CUDA", "--json", "--no-codegen"],
           "with generated": ["mul.out", "--key", "CUDA", "--json"]}


def _tree_cpu(pid: int) -> float:
    """user + sys seconds of ``pid`` and every living descendant, plus what they reaped (/proc)."""
    tck = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / tck  # utime stime cutime cstime
        todo += [int(k) for k in kids]
    return total


def ctags(tree: Path, tmp: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-o", str(tmp / "ctags.time"), "-f", "%U %S", CTAGS, "-R", "-f",
                    str(tmp / "tags"), "aten/src/ATen"], cwd=tree, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, sum(map(float, (tmp / "ctags.time").read_text().split()[-2:]))


def answer(tree: Path, cache: Path, args: list[str], exact: bool, src: Path) -> tuple[float, float, float, str]:
    """(seconds to the end of stdout, CPU seconds then, seconds to the end, stdout)."""
    env = {**os.environ, "PYTHONPATH": str(src), "ATENMAP_CACHE": str(cache), "ATENMAP_CODEGEN": "always",
           "ATENMAP_EXACT_FIRST": "1" if exact else "0", "COLUMNS": "200"}
    env.pop("ATENMAP_FACT_CACHE", None)
    shutil.rmtree(cache, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "atenmap", *args], cwd=tree, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    out = bytearray()
    cpu = 0.0
    while True:
        chunk = p.stdout.read1(65536)
        if not chunk:
            break
        out += chunk
        cpu = _tree_cpu(p.pid)  # the last read before the end: CPU up to the answer
    first = time.perf_counter() - t0
    p.wait()
    end = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"atenmap {' '.join(args)} failed ({p.returncode})")
    return first, cpu, end, out.decode().replace(str(cache), "<cache>")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--query", choices=list(QUERIES), action="append", help="only these rows (default: both)")
    ap.add_argument("--src", type=Path, action="append", help="an atenmap src/ folder (repeatable; default: this one)")
    ap.add_argument("--exact-only", action="store_true", help="only the exact-first way")
    args = ap.parse_args()
    srcs = [s.resolve() for s in args.src or [REPO / "src"]]
    ways = (True,) if args.exact_only else (False, True)
    queries = {label: QUERIES[label] for label in args.query or QUERIES}
    tree = args.tree.resolve()
    rows: dict[tuple[str, int, bool], list[tuple[float, float, float, float, float]]] = {}
    answers: dict[tuple[str, int, bool], str] = {}
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-exactfirst-") as tmp_s:
        tmp = Path(tmp_s)
        for rnd in range(args.rounds):
            for label, query in queries.items():
                for n, src in enumerate(srcs):
                    for exact in ways:
                        c_wall, c_cpu = ctags(tree, tmp)
                        load = os.getloadavg()[0]
                        first, cpu, end, out = answer(tree, tmp / "cache", query, exact, src)
                        rows.setdefault((label, n, exact), []).append((first, cpu, end, c_wall, c_cpu))
                        answers.setdefault((label, n, exact), out)
                        print(f"  round {rnd + 1} {label:15} src {n} {'exact first' if exact else 'full index':11} "
                              f"answer {first:6.2f} s (CPU {cpu:5.2f} s), end {end:6.2f} s; ctags just before "
                              f"{c_wall:.2f} s (CPU {c_cpu:.2f} s); load {load:.1f}", file=sys.stderr, flush=True)
    for n, src in enumerate(srcs):
        print(f"src {n}: {src}")
    print("| first complete answer, `atenmap mul.out --key CUDA --json` | src | way | answer (wall; ratio to the ctags "
          "run just before) | CPU to the answer (ratio to that ctags' CPU) | process end |")
    print("|---|---|---|---|---|---|")
    for (label, n, exact), got in rows.items():
        med = lambda i: statistics.median(r[i] for r in got)  # noqa: E731
        ratio = statistics.median(r[0] / r[3] for r in got)
        cratio = statistics.median(r[1] / r[4] for r in got)
        print(f"| {label} | {n} | {'exact first' if exact else 'full index'} | {med(0):.2f} s = {ratio:.1f}x | "
              f"{med(1):.2f} s = {cratio:.1f}x | {med(2):.2f} s |")
    for label in queries:
        same = len({answers[k] for k in answers if k[0] == label}) == 1
        print(f"answers identical ({label}, every src and way): {'yes' if same else 'NO'}")

if __name__ == "__main__":
    main()
