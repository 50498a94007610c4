"""Issue 24's speed table: this checkout and the last landed commit, side by side with ctags.

    .venv/bin/python bench/bench_speed.py                        # 2.6.0 from scripts/fetch-pytorch-src
    .venv/bin/python bench/bench_speed.py --tree ~/pytorch --base 68727ee --json out.json
    .venv/bin/python bench/bench_speed.py --warm-only 11           # the warm rows alone, base and this
    .venv/bin/python bench/bench_speed.py --cold-only 3 --base main   # the cold row alone, 3 runs a side
    .venv/bin/python bench/bench_speed.py --cached-only 3 --base main # cold, then the facts-cached rebuild

One run, on one machine, in this order: ``ctags -R aten/src/ATen`` (median of 3), then for each
of ``base`` (a ``git worktree`` of --base in a temporary folder) and ``this`` checkout, each in
its own subprocess with its own empty ATENMAP_CACHE:

  first answer, hand-written   ``atenmap mul.out --key CUDA --json --no-codegen``, empty cache
  first answer, with generated ``atenmap mul.out --key CUDA``, empty cache (torchgen runs)
  on a terminal                the same with stdout on a pseudo-terminal, no pager: seconds to the
                               first output and to the end (Note [Generated steps later])
  query-driven preview         ``atenmap mul.out --key CUDA --no-codegen`` on a pseudo-terminal, empty
                               cache: seconds (and CPU seconds of the process, from /proc) to the first
                               output, the preview (Note [Query-driven preview] in preview.py)
  cold full index              ``atenmap index`` with ``indexes/`` and ``facts/`` removed, torchgen's
                               output cached (every file parsed)
  warm rebuild, facts cached   ``atenmap index --force``: every file read, hashed, found in the facts
  refresh                      ``atenmap index`` after one file's mtime moved (put back afterwards)
  warm query                   ``atenmap mul.out --key CUDA`` on a fresh index (median of 3), with
                               Python's bytecode cached (in a private PYTHONPYCACHEPREFIX, written
                               by the run before: what pip's install or any earlier run leaves)
  warm query, no bytecode      the same with every atenmap module compiled on each run (a copy of
                               src/ without __pycache__, PYTHONDONTWRITEBYTECODE=1): a checkout
                               whose bytecode cannot be written (Note [Start-up budget] in cli/)
  peak memory                  the largest resident set of any one process of these runs

Every command runs with the tree as its working folder; times are wall seconds of the whole
subprocess (interpreter start included). The machine may be shared: each step's ratio is to a ctags
run just before it (same load); the table also gives the median ctags of the whole run, and CPU
seconds (user + sys of the command and the processes it waited for: the parse pool, torchgen) as a
ratio to ctags' CPU seconds, a steadier figure under load than wall time. The rows whose index holds
torchgen's files too (with generated, on a terminal complete, cold, facts cached, refresh) are also
given against ctags on the same files (issue 24's words: the tree's and torchgen's, ~2x the bytes of
aten/src/ATen), by the ratio of the two ctags runs measured side by side. Targets as PASS/MISS; the bench
never fails on them. The user's cache is never read or written. Results: docs/performance.md.
"""
from __future__ import annotations

import argparse
import contextlib
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

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
CTAGS = shutil.which("ctags") or "/usr/bin/ctags"
CPU = [0.0]  # user + sys seconds of the last command and the processes it waited for (the pool, torchgen)
TIME = "/usr/bin/time"  # GNU time: %M, the largest resident set of the command (or a process it waited for)
TOUCH_FILE = "aten/src/ATen/native/BinaryOps.cpp"
QUERY = ["mul.out", "--key", "CUDA"]
ROWS = [("first_hand", "first answer, hand-written", 3.0, "x"),
        ("tty_preview", "first answer, query-driven preview (terminal)", 3.0, "x"), ("first_gen", "first answer, with generated", 10.0, "x"),
        ("tty_first", "  on a terminal: first output", None, "x"), ("tty_end", "  on a terminal: complete", None, "x"),
        ("cold", "cold full index", 4.0, "x"), ("facts_cached", "warm rebuild, facts cached", None, "x"),
        ("refresh", "refresh (one file touched)", None, "x"), ("warm", "warm query", 0.1, "s"),
        ("warm_nopyc", "warm query, no bytecode", None, "s"),
        ("peak_mb", "peak memory (MB)", 300, "MB")]


def run(variant: Path, cache: Path, tree: Path, args: list[str], extra_env: dict | None = None,
        parent_cpu: bool = False) -> tuple[float, float, str]:
    """``python -m atenmap ARGS`` of ``variant``'s src: (wall s, peak RSS MB of one process, stdout);
    with ``parent_cpu``, the command's own process CPU seconds also go to PARENT_CPU (its pool's not
    counted: ``--cold-only``)."""
    env = {**os.environ, "PYTHONPATH": str(variant / "src"), "ATENMAP_CACHE": str(cache), "ATENMAP_CODEGEN": "always",
           "COLUMNS": "200", **(extra_env or {})}
    env.pop("ATENMAP_FACT_CACHE", None)
    entry = ["-m", "atenmap"]
    if parent_cpu:
        env["BENCH_SELF_CPU"] = str(cache.parent / "self-cpu")
        entry = ["-c", _SELF_CPU]
    rss = cache.parent / "rss"
    t0 = time.perf_counter()
    p = subprocess.run([TIME, "-o", str(rss), "-f", "%M %U %S", PY, *entry, *args], cwd=tree, env=env,
                       capture_output=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{variant.name}: atenmap {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    kib, user, system = rss.read_text().split()[-3:]
    CPU[0] = float(user) + float(system)
    if parent_cpu:
        PARENT_CPU[0] = float((cache.parent / "self-cpu").read_text())
    return wall, int(kib) / 1024, p.stdout.decode().replace(str(cache), "<cache>")


def run_on_a_terminal(variant: Path, cache: Path, tree: Path, args: list[str], extra_env: dict | None = None) -> tuple[float, float]:
    """``atenmap ARGS`` with stdout on a pseudo-terminal (no pager): seconds to its first byte of
    stdout, and to its end (Note [Generated steps later] in cli/chain_run.py)."""
    import pty
    import select

    env = {**os.environ, "PYTHONPATH": str(variant / "src"), "ATENMAP_CACHE": str(cache), "ATENMAP_CODEGEN": "always",
           "ATENMAP_PAGER": "", "COLUMNS": "200", **(extra_env or {})}
    master, slave = pty.openpty()
    t0 = time.perf_counter()
    p = subprocess.Popen([PY, "-m", "atenmap", *args], cwd=tree, env=env, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    first = None
    CPU[0] = 0.0
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            if first is None:
                first = time.perf_counter() - t0
                CPU[0] = _cpu_so_far(p.pid)
        elif p.poll() is not None:
            break
    p.wait()
    os.close(master)
    end = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{variant.name}: atenmap {' '.join(args)} on a terminal failed ({p.returncode})")
    return first if first is not None else end, end


def _cpu_so_far(pid: int) -> float:
    """user + sys seconds of a running process (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ctags(tree: Path, tmp: Path, runs: int = 3) -> float:
    """Median wall seconds of ``ctags -R aten/src/ATen``; its CPU seconds (user + sys) go to CTAGS_CPU."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([TIME, "-o", str(tmp / "ctags.time"), "-f", "%U %S", CTAGS, "-R", "-f", str(tmp / "tags"),
                        "aten/src/ATen"], cwd=tree, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        CTAGS_CPU.append(sum(map(float, (tmp / "ctags.time").read_text().split()[-2:])))
    return statistics.median(times)


CTAGS_CPU: list[float] = []
SAME_FILES_ROWS = ("first_gen", "tty_end", "cold", "facts_cached", "refresh")  # their index holds torchgen's files too


def ctags_same_files(tree: Path, cache: Path, tmp: Path, runs: int = 3) -> dict[str, float]:
    """ctags on the files the index with generated steps holds (the tree's, as build.walk_sources
    lists them, and torchgen's output in ``cache``, as build.walk_generated picks them), as issue 24
    asks ("against ctags on the same files"), beside ``ctags -R aten/src/ATen``, alternately, ``runs``
    times each: ``{"files", "mb", "same_s", "same_cpu", "scale"}``, ``scale`` the
    median ratio of the two walls (same files / aten/src/ATen)."""
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.build import walk_generated, walk_sources

    out = [next(iter((cache / "codegen").glob("codegen-*")), None)]
    gen = walk_generated(out[0] / "aten", out[0] / "python", out[0] / "autograd") if out[0] else []
    paths = [str(tree / rel) for rel, _lang, _s, _m in walk_sources(tree)] + [p for p, _lang, _s, _m in gen]
    listing = "\n".join(paths) + "\n"
    same, same_cpu, scale = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([TIME, "-o", str(tmp / "ctags.time"), "-f", "%U %S", CTAGS, "-L", "-", "--languages=C++",
                        "--langmap=C++:+.cu.cuh.mm", "-f", str(tmp / "tags-same")], input=listing.encode(), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        same.append(time.perf_counter() - t0)
        same_cpu.append(sum(map(float, (tmp / "ctags.time").read_text().split()[-2:])))
        scale.append(same[-1] / ctags(tree, tmp, runs=1))
    return {"files": len(paths), "mb": sum(os.path.getsize(p) for p in paths) / 1e6,
            "same_s": statistics.median(same), "same_cpu": statistics.median(same_cpu),
            "scale": statistics.median(scale)}


def measure(variant: Path, tree: Path, tmp: Path) -> tuple[dict[str, float], dict[str, str]]:
    """The rows of ROWS for one checkout; also its answers (to compare)."""
    cache = tmp / f"cache-{variant.name}"
    res: dict[str, float] = {}
    answers: dict[str, str] = {}
    peaks = []

    def step(name: str, args: list[str], extra_env: dict | None = None) -> float:
        # the same load as the step: ratios to it. Not before a warm query, whose target is in ms:
        # ctags' 10 MB tags file, still being written back, slowed the query after it by ~30 ms
        res[f"ctags_{name}"] = ctags(tree, tmp, runs=1) if not name.startswith("warm") else 0.0
        wall, peak, out = run(variant, cache, tree, args, extra_env)
        res[f"cpu_{name}"] = CPU[0]
        peaks.append(peak)
        answers[name] = out
        before = f"  (ctags just before: {res[f'ctags_{name}']:.2f} s)" if res[f"ctags_{name}"] else ""
        print(f"  {variant.name:5} {name:13} {wall:7.2f} s{before}", file=sys.stderr, flush=True)
        return wall

    shutil.rmtree(cache, ignore_errors=True)
    res["first_hand"] = step("first_hand", [*QUERY, "--json", "--no-codegen"])  # issue 37 words it with --json
    shutil.rmtree(cache, ignore_errors=True)
    res["first_gen"] = step("first_gen", QUERY)
    res["same_files"] = ctags_same_files(tree, cache, tmp)
    shutil.rmtree(cache, ignore_errors=True)
    preview(variant, cache, tree, tmp, res)
    shutil.rmtree(cache, ignore_errors=True)
    res["ctags_tty_first"] = res["ctags_tty_end"] = ctags(tree, tmp, runs=1)
    res["tty_first"], res["tty_end"] = run_on_a_terminal(variant, cache, tree, QUERY)
    print(f"  {variant.name:5} on a terminal: first output {res['tty_first']:.2f} s, complete {res['tty_end']:.2f} s",
          file=sys.stderr, flush=True)
    for sub in ("indexes", "facts"):
        shutil.rmtree(cache / sub, ignore_errors=True)
    subprocess.run(["sync"], check=False)
    res["cold"] = step("cold", ["index"])
    res["facts_cached"] = step("facts_cached", ["index", "--force"])
    touched = tree / TOUCH_FILE
    st = touched.stat()
    try:
        os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        res["refresh"] = step("refresh", ["index"])
    finally:
        os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns))
    pyc, no_pyc = bytecode_envs(variant, tmp)
    step("warm0", QUERY, pyc)  # the mtime put back: this one refreshes again (and writes the bytecode)
    res["warm"] = statistics.median(step(f"warm{i}", QUERY, pyc) for i in (1, 2, 3))
    res["warm_nopyc"] = statistics.median(step(f"warm_nopyc{i}", QUERY, no_pyc) for i in (1, 2, 3))
    res["peak_mb"] = max(peaks)
    return res, answers


def bytecode_envs(variant: Path, tmp: Path) -> tuple[dict, dict]:
    """The environments of the two warm rows: bytecode cached in a private PYTHONPYCACHEPREFIX
    (the first run writes it), and none: ``variant``'s src copied without __pycache__ (mtimes
    kept: the index's freshness proof still holds) and PYTHONDONTWRITEBYTECODE=1."""
    env_pyc = {"PYTHONPYCACHEPREFIX": str(tmp / f"pyc-{variant.name}"), "PYTHONDONTWRITEBYTECODE": ""}
    src = tmp / f"src-{variant.name}" / "src"
    if not src.exists():
        shutil.copytree(variant / "src", src, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    return env_pyc, {"PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}


@contextlib.contextmanager
def base_and_this(base_rev: str):
    """A temporary folder holding ``base`` (a ``git worktree`` of ``base_rev``, removed at the end; or,
    with ``--base-dir``, a link to that folder: a copy of the base's files, ``git archive`` made, that
    leaves the repository's worktrees alone) and ``this`` (a link to this checkout): ``(tmp, base, this)``."""
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-speed-") as tmp_s:
        tmp = Path(tmp_s)
        base = tmp / "base"
        if BASE_DIR[0] is not None:
            base.symlink_to(BASE_DIR[0])
        else:
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), base_rev], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        this = tmp / "this"
        this.symlink_to(REPO)
        try:
            yield tmp, base, this
        finally:
            if BASE_DIR[0] is None:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)


BASE_DIR: list[Path | None] = [None]  # --base-dir


def warm_only(tree: Path, runs: int, base_rev: str) -> None:
    """``--warm-only``: the warm rows alone for ``base_rev`` and this checkout, ``runs`` times each,
    alternating (base, this) so both see the same load; medians and minimums. Each index is built
    once first (the second checkout starts from a copy of the first's cache: torchgen's output is
    reused, the index is rebuilt only if its extractor differs)."""
    with base_and_this(base_rev) as (tmp, base, this):
        variants, envs, times, cpu, answers = (base, this), {}, {}, {}, {}
        for v in variants:
            cache = tmp / f"cache-{v.name}"
            if v is this:
                shutil.copytree(tmp / "cache-base", cache, symlinks=True)
            pyc, no_pyc = envs[v.name] = bytecode_envs(v, tmp)
            for env in (pyc, no_pyc):  # builds or refreshes the index, writes the bytecode
                run(v, cache, tree, QUERY, env)
        for _ in range(runs):
            for v in variants:
                for kind, env in zip(("warm", "warm_nopyc"), envs[v.name]):
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    wall, _peak, out = run(v, tmp / f"cache-{v.name}", tree, QUERY, env)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    times.setdefault((v.name, kind), []).append(wall)
                    cpu.setdefault((v.name, kind), []).append(after.ru_utime - before.ru_utime
                                                              + after.ru_stime - before.ru_stime)
                    answers.setdefault(v.name, set()).add(out)
    print(f"| measure | base ({base_rev}) | this | target | |", "|---|---|---|---|---|", sep="\n")
    for key, label, target, _unit in ROWS:
        if key not in ("warm", "warm_nopyc"):
            continue
        cells = [f"{statistics.median(times[v, key]) * 1000:.0f} ms (min {min(times[v, key]) * 1000:.0f}; CPU "
                 f"{statistics.median(cpu[v, key]) * 1000:.0f} ms)" for v in ("base", "this")]
        ok = "" if not target else ("PASS" if statistics.median(times["this", key]) <= target else "MISS")
        print(f"| {label} | {cells[0]} | {cells[1]} | {f'<= {target * 1000:.0f} ms' if target else ''} | {ok} |")
    same = len(answers["this"]) == 1 and answers["this"] == answers["base"]
    print(f"median of {runs} runs each, alternating (CPU: user + sys of the process, steadier than wall time on a "
          f"loaded machine); answers identical to base and across runs: {'yes' if same else 'NO'}")


def preview(variant: Path, cache: Path, tree: Path, tmp: Path, res: dict[str, float]) -> None:
    """The query-driven preview's row: seconds and CPU seconds to the first output on a terminal."""
    res["ctags_tty_preview"] = ctags(tree, tmp, runs=1)
    # on by default (config.preview) since preview2; asked for anyway: a base where it was opt-in needs it
    res["tty_preview"], _end = run_on_a_terminal(variant, cache, tree, [*QUERY, "--no-codegen"], {"ATENMAP_PREVIEW": "1"})
    res["cpu_tty_preview"] = CPU[0]
    print(f"  {variant.name:5} preview on a terminal: first output {res['tty_preview']:.2f} s "
          f"(CPU {CPU[0]:.2f} s; ctags just before: {res['ctags_tty_preview']:.2f} s), complete {_end:.2f} s",
          file=sys.stderr, flush=True)


def preview_only(tree: Path, runs: int) -> None:
    """``--preview-only``: the preview's row for this checkout alone, ``runs`` times (a quick look)."""
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-speed-") as tmp_s:
        tmp = Path(tmp_s)
        rows = []
        for i in range(runs):
            res: dict[str, float] = {}
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            preview(REPO, tmp / "cache", tree, tmp, res)
            rows.append(res)
    ctags_cpu = statistics.median(CTAGS_CPU)
    for res in rows:
        print(f"| first answer, query-driven preview (terminal) | {res['tty_preview']:.2f} s = "
              f"{res['tty_preview'] / res['ctags_tty_preview']:.1f}x; CPU {res['cpu_tty_preview']:.2f} s = "
              f"{res['cpu_tty_preview'] / ctags_cpu:.1f}x (ctags CPU {ctags_cpu:.2f} s) | <= 3x ctags |")


def cold_only(tree: Path, base_rev: str, runs: int, cached: bool = False, codegen_from: Path | None = None) -> None:
    """``--cold-only RUNS``: the cold full index's row alone, for ``base`` and this checkout
    alternately, RUNS times each, torchgen's output made once per side first (it is cached in the
    row; or copied from ``codegen_from``, a cache's codegen/ folder of the same tree): wall and CPU
    seconds, each as a ratio to ctags just before (wall) and to ctags' median CPU, and the CPU of
    the build's own process (the parent: its intake and the tail) apart from its pool's. With
    ``cached`` (``--cached-only``), each cold build is followed by the facts-cached rebuild
    (``atenmap index --force``: every file read, hashed and found in facts/), measured the same way."""
    with base_and_this(base_rev) as (tmp, base, this):
        rows: dict[str, list[tuple[float, float, float, float]]] = {}
        for variant in (base, this):
            if codegen_from is not None:
                shutil.copytree(codegen_from, tmp / f"cache-{variant.name}" / "codegen", symlinks=True)
            run(variant, tmp / f"cache-{variant.name}", tree, ["index"])  # torchgen's output, cached
        steps = [("cold", ["index"])] + ([("facts cached", ["index", "--force"])] if cached else [])
        for _ in range(runs):
            for variant in (base, this):
                cache = tmp / f"cache-{variant.name}"
                for sub in ("indexes", "facts"):
                    shutil.rmtree(cache / sub, ignore_errors=True)
                subprocess.run(["sync"], check=False)
                for label, args in steps:
                    t_ctags = ctags(tree, tmp, runs=1)
                    wall = run(variant, cache, tree, args, parent_cpu=True)[0]
                    rows.setdefault(f"{label} | {variant.name}", []).append((wall, CPU[0], t_ctags, PARENT_CPU[0]))
                    print(f"  {variant.name:5} {label} {wall:.2f} s, CPU {CPU[0]:.2f} s (parent {PARENT_CPU[0]:.2f} s); "
                          f"ctags just before {t_ctags:.2f} s", file=sys.stderr, flush=True)
                facts = sum(p.stat().st_size for p in (cache / "facts").glob("*") if p.is_file())
                print(f"  {variant.name:5} facts/ {facts / 1e6:.1f} MB", file=sys.stderr, flush=True)
    ctags_cpu = statistics.median(CTAGS_CPU)
    print(f"ctags -R aten/src/ATen CPU (user + sys): median {ctags_cpu:.2f} s; base = {base_rev}; median of {runs} runs")
    print("| build | side | wall | wall / ctags just before | CPU | CPU / ctags CPU | of it the parent |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in sorted(rows.items()):
        wall, cpu = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
        ratio = statistics.median(r[0] / r[2] for r in rs)
        parent = statistics.median(r[3] for r in rs)
        print(f"| {name} | {wall:.2f} s | {ratio:.1f}x | {cpu:.2f} s | {cpu / ctags_cpu:.1f}x | {parent:.2f} s |")


PARENT_CPU = [0.0]  # user + sys seconds of the last command's own process (--cold-only)
_SELF_CPU = """
import os, resource, runpy, sys
sys.argv = ["atenmap", *sys.argv[1:]]
try:
    runpy.run_module("atenmap", run_name="__main__", alter_sys=True)
finally:
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_SELF_CPU"], "w") as f:
        f.write(str(r.ru_utime + r.ru_stime))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--base", default="68727ee", help="the commit to compare with (default: the last landed one)")
    ap.add_argument("--base-dir", type=Path, help="the base's files already in this folder (e.g. `git archive "
                    "BASE | tar -x -C DIR`): no git worktree is made; --base names it in the table")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--preview-only", type=int, metavar="RUNS", help="only the query-driven preview's row, RUNS times")
    ap.add_argument("--warm-only", type=int, metavar="RUNS", help="only the warm query's rows, base and this, RUNS times each")
    ap.add_argument("--cold-only", type=int, metavar="RUNS",
                    help="only the cold full index's row, base and this checkout alternately, RUNS times each")
    ap.add_argument("--cached-only", type=int, metavar="RUNS",
                    help="--cold-only, each cold build followed by the facts-cached rebuild (index --force)")
    ap.add_argument("--codegen-from", type=Path, metavar="DIR",
                    help="with --cold-only/--cached-only: torchgen's output copied from DIR (a cache's codegen/ "
                         "folder, same tree) instead of made")
    args = ap.parse_args()
    BASE_DIR[0] = args.base_dir.resolve() if args.base_dir else None
    tree = args.tree.resolve()
    if not (tree / "aten/src/ATen").is_dir():
        raise SystemExit(f"--tree {tree}: not a PyTorch tree (no aten/src/ATen)")
    if not os.access(CTAGS, os.X_OK):
        raise SystemExit("ctags not found: apt-get install -y universal-ctags")
    if args.preview_only:
        preview_only(tree, args.preview_only)
        return
    if args.warm_only:
        warm_only(tree, args.warm_only, args.base)
        return
    if args.cold_only or args.cached_only:
        cold_only(tree, args.base, args.cold_only or args.cached_only, cached=bool(args.cached_only),
                  codegen_from=args.codegen_from)
        return
    with base_and_this(args.base) as (tmp, base, this):
        t_ctags = ctags(tree, tmp)
        print(f"  ctags -R aten/src/ATen {t_ctags:.2f} s", file=sys.stderr)
        results, answers = {}, {}
        for variant in (base, this):
            results[variant.name], answers[variant.name] = measure(variant, tree, tmp)
    same = {k: answers["base"][k] == answers["this"][k] for k in ("first_hand", "first_gen", "warm1")}
    every = [v for r in results.values() for k, v in r.items() if k.startswith("ctags_") and v] + [t_ctags]
    ctags_cpu = statistics.median(CTAGS_CPU)
    lines = [f"ctags -R aten/src/ATen: {t_ctags:.2f} s at the start, median {statistics.median(every):.2f} s of "
             f"{len(every)} runs (ratios: to the run just before each step); its CPU (user + sys) median "
             f"{ctags_cpu:.2f} s (CPU ratios: to that; a command's CPU counts its workers and torchgen); "
             f"base = {args.base}",
             f"| measure | base ({args.base}) | this | target | |", "|---|---|---|---|---|"]
    for key, label, target, unit in ROWS:
        b, t = results["base"][key], results["this"][key]
        if unit == "x":
            rb, rt = b / results["base"][f"ctags_{key}"], t / results["this"][f"ctags_{key}"]
            cells = tuple(f"{v:.2f} s = {r:.1f}x" + (f"; CPU {c:.1f} s = {c / ctags_cpu:.1f}x" if c and ctags_cpu else "")
                          for v, r, c in ((b, rb, results["base"].get(f"cpu_{key}")),
                                          (t, rt, results["this"].get(f"cpu_{key}"))))
            goal = f"<= {target:g}x ctags" if target else ""
            ok = "" if not target else ("PASS" if rt <= target else "MISS")
        elif unit == "s":
            cells = f"{b * 1000:.0f} ms", f"{t * 1000:.0f} ms"
            goal = f"<= {target * 1000:.0f} ms" if target else ""
            ok = "" if not target else ("PASS" if t <= target else "MISS")
        else:
            cells = f"{b:.0f} MB", f"{t:.0f} MB"
            goal, ok = f"<= {target} MB", "PASS" if t <= target else "MISS"
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {goal} | {ok} |")
    sf = results["this"]["same_files"]
    lines.append(f"against ctags on the same files (issue 24's words): the index with generated steps holds {sf['files']} "
                 f"files, {sf['mb']:.1f} MB (tree and torchgen's output); ctags on them takes {sf['scale']:.2f}x the time "
                 f"of ctags -R aten/src/ATen (median of 3 pairs; {sf['same_s']:.2f} s wall, {sf['same_cpu']:.2f} s CPU), so "
                 f"against it:")
    for key, label, target, _unit in ROWS:
        if key in SAME_FILES_ROWS:
            r = [results[v][key] / results[v][f"ctags_{key}"] / results[v]["same_files"]["scale"] for v in ("base", "this")]
            goal = f" (target <= {target:g}x: {'PASS' if r[1] <= target else 'MISS'})" if target else ""
            lines.append(f"  {label}: base {r[0]:.1f}x, this {r[1]:.1f}x{goal}")
    lines.append("answers identical to base: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"ctags_s": t_ctags, "base": args.base, "results": results, "same": same},
                                        indent=1))


if __name__ == "__main__":
    main()
