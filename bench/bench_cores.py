"""Issue 37's rows on any machine, as ratios to ctags in the same run, without GNU time or git.

    python bench/bench_cores.py --tree TREE [--ctags PATH] [--src DIR ...] [--runs N] [--json OUT]
                                [--no-first-answer]

Written for a machine with many cores and nothing installed but Python (the GPU machine: ctags
brought as a .deb unpacked into a folder, the tree as a tarball); bench_speed.py is the 2-core
box's full table. Each ``--src`` is an atenmap ``src/`` folder (this checkout's by default; give
two to compare a base with it), run in turn, each with its own empty ATENMAP_CACHE, torchgen off
(``--no-codegen``: ctags reads aten/src/ATen, the hand-written tree, the same files):

  ctags              ``ctags -R aten/src/ATen`` (median of N; the baseline of every ratio)
  first answer       ``atenmap mul.out --key CUDA --json --no-codegen``, empty cache, the default
                     way (the full index first), and with ATENMAP_EXACT_FIRST=1 (the answer from
                     the pre-scan's candidates); "answer" is the end of stdout (a pipe)
  cold full index    ``atenmap index --no-codegen`` with indexes/ and facts/ removed
  facts cached       ``atenmap index --no-codegen --force``: every file read, hashed, found in facts/
                     (and, since Note [An index of the same content], the index a copy of the one
                     the cold row built)
  warm query         ``atenmap mul.out --key CUDA --no-codegen`` on that index (median of N)

``--no-first-answer`` leaves the two first-answer rows out (the index rows alone); the answers
compared are then the warm queries' after each facts-cached rebuild.

Wall seconds (a first answer's: to the end of its stdout; its "process end" row: to the process's
end), and CPU seconds (user + sys of the command and the processes it waited for, from
``getrusage(RUSAGE_CHILDREN)``, to the process's end: an exact-first answer's CPU includes the full
index built after it), each row's median of N, as ratios to ctags' medians. The answers of
each --src are compared with the first's. The user's cache is never read or written.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = ["mul.out", "--key", "CUDA", "--no-codegen"]


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, bytes, float]:
    """(wall s to the process's end, CPU s of the command and its waited-for children, stdout,
    wall s to the end of stdout: a first answer's, which closes a pipe before the full index is
    built after it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    answer = time.perf_counter() - t0
    err = p.stderr.read()
    p.wait()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode()[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--ctags", default=shutil.which("ctags") or "ctags")
    ap.add_argument("--src", type=Path, action="append", help="an atenmap src/ folder (repeatable)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-first-answer", action="store_true",
                    help="leave out the first-answer rows (the index rows alone: a cheaper run)")
    args = ap.parse_args()
    tree = args.tree.resolve()
    srcs = [s.resolve() for s in (args.src or [Path(__file__).resolve().parent.parent / "src"])]
    res: dict = {"cores": os.cpu_count(), "runs": args.runs, "rows": {}}
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-cores-") as tmp_s:
        tmp = Path(tmp_s)
        ctags = [timed([args.ctags, "-R", "-f", str(tmp / "tags"), "aten/src/ATen"], tree)[:2] for _ in range(args.runs)]
        res["ctags"] = [statistics.median(c[0] for c in ctags), statistics.median(c[1] for c in ctags)]
        answers = {}
        for n, src in enumerate(srcs):
            name = f"{n}:{src.parent.name}"
            cache = tmp / f"cache-{n}"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
                   "ATENMAP_CACHE": str(cache), "COLUMNS": "200", "ATENMAP_PAGER": ""}
            env.pop("ATENMAP_EXACT_FIRST", None)
            atenmap = [sys.executable, "-m", "atenmap"]
            rows: dict[str, list] = {}
            for _ in range(args.runs):
                ways = () if args.no_first_answer else (("first answer (full index)", {}),
                                                        ("first answer (exact first)", {"ATENMAP_EXACT_FIRST": "1"}))
                for label, extra in ways:
                    shutil.rmtree(cache, ignore_errors=True)
                    wall, cpu, out, answer = timed([*atenmap, *QUERY, "--json"], tree, {**env, **extra})
                    rows.setdefault(label, []).append((answer, cpu))
                    rows.setdefault(f"  {label[14:-1]}: process end", []).append((wall, cpu))
                    answers.setdefault(name, set()).add(out)
                shutil.rmtree(cache, ignore_errors=True)
                rows.setdefault("cold full index", []).append(timed([*atenmap, "index", "--no-codegen"], tree, env)[:2])
                rows.setdefault("facts-cached rebuild", []).append(
                    timed([*atenmap, "index", "--no-codegen", "--force"], tree, env)[:2])
                timed([*atenmap, *QUERY], tree, env)  # writes the bytecode
                wall, cpu, out, _answer = timed([*atenmap, *QUERY, "--json"], tree, env)
                answers.setdefault(name, set()).add(out)  # after the facts-cached rebuild
                rows.setdefault("warm query", []).append(timed([*atenmap, *QUERY], tree, env)[:2])
            res["rows"][name] = {k: [statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)]
                                 for k, vs in rows.items()}
    cw, cc = res["ctags"]
    print(f"{res['cores']} cores; ctags -R aten/src/ATen: {cw:.2f} s wall, {cc:.2f} s CPU (median of {args.runs}); "
          f"each row the median of {args.runs}")
    print("| row | " + " | ".join(res["rows"]) + " |")
    print("|---|" + "---|" * len(res["rows"]))
    for label in next(iter(res["rows"].values())):
        cells = []
        for name, rows in res["rows"].items():
            w, c = rows[label]
            cells.append(f"{w:.2f} s = {w / cw:.2f}x; CPU {c:.2f} s = {c / cc:.2f}x")
        print(f"| {label} | " + " | ".join(cells) + " |")
    first = answers[next(iter(answers))]
    res["answers_identical"] = len(first) == 1 and all(a == first for a in answers.values())
    print(f"answers (--json, every way, every run, every src) identical: {'yes' if res['answers_identical'] else 'NO'}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
