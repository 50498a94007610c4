"""Benchmark atenmap trace's overhead against torch.profiler(with_stack=True) on the same loop.

    .venv/bin/python bench/bench_trace.py                    # CPU, 64x64 add/mm/softmax
    .venv/bin/python bench/bench_trace.py --device cuda --json $OUT/bench_trace.json
    .venv/bin/python bench/bench_trace.py --chrome TREE      # + the --chrome file's size

Variants, each around the same ``step()`` (add, mm, softmax on small tensors):
  plain           no instrument
  with_stack      torch.profiler.profile(with_stack=True)             <- the baseline of the ratios
  profiler        torch.profiler.profile() without stacks
  stack+shapes    profile(with_stack=True, record_shapes=True): what atenmap.trace() runs
  sysmon          with_stack + sys.monitoring CALL events in the user's code (Python 3.12+): the
                  price of the calling line by a Python hook, had the profiler not recorded it
  bare_modes      a TorchFunctionMode and a TorchDispatchMode that only forward: the floor of any
                  tracer built on the two modes
  trace           atenmap.trace(): the profiler alone, joined after the run (the default)
  trace_dispatch  atenmap.trace(dispatch=True): the opt-in dispatch mode (+ the profiler where CUDA
                  is, or with --chrome): the code path every trace took before issue 20

Steady state: a fresh process per variant (a with_stack session leaves Python code slower after
it ends, which would penalise whatever runs next in the same process); the variant is run once to
warm it, then ``--rounds`` blocks of ``--iters`` steps, each block timed inside the instrument
(start/stop and post-processing are reported apart as "session"). Median per variant; ratio =
variant / with_stack.
First call: a fresh process per variant times its first ``step()`` inside the instrument; for
trace the one-time mode warm-up (see Note [Mode warm-up] in atenmap/trace/record.py) happens in
trace's start, before the user's code, and is reported apart. Target (issue 13): trace steady <= 1.2x with_stack
(printed PASS/MISS; a bench never fails on it). Nothing is written except --json OUT.
``--chrome TREE`` (``bundled``: atenmap's bundled 2.6.0 index, for a machine with no tree): also one
fresh process that times the whole command against the profiler: ``with_stack`` + its
``export_chrome_trace``, against ``atenmap.trace(chrome=True)`` + the join with TREE + ``write_chrome``
+ the report's JSON (the index opened before; target <= 1.5x), and compares the files' sizes
(atenmap's --chrome / the with_stack file, target <= 1.2x).
``--command TREE`` (or ``bundled``): the whole command as a user runs it, each a fresh process: ``python BASE
script.py`` (the script under ``torch.profiler(with_stack=True)``, then ``export_chrome_trace``)
against ``atenmap trace --source TREE --chrome OUT --json OUT -- script.py`` (its report on stdout),
the same 300-step add/mm/softmax script; ``--command-runs`` pairs, alternating, after one pair to
warm the disk cache. The first atenmap run is made with the chain cache beside TREE's index emptied
(Note [Chains kept beside the index]: "cold", the first trace after a build), the others find it
("warm"). Wall time and CPU time (user + system of the child) are medians; target <= 1.5x.
``--from-trace-rss N``: write a synthetic Kineto trace of N events (ops with Python frames and
kernels), then read it with ``atenmap kernel --from-trace``'s reader in a fresh process and print
its peak RSS against a process that only imported atenmap; and the whole answer (read, joined with
fixtures/pytorch-mini's index, counted) against a process that only opened that index.
``--chrome-rss N``: the ``--chrome`` rewrite's own peak RSS (``chrome.Annotations.write``; Note [The
chrome rewrite streams]) on the same synthetic trace, plain and gzip: the peak from the moment it
starts (VmHWM reset through /proc/self/clear_refs) above the RSS it started at, against the file's
size. "copy": no event annotated (every event copied, the rewrite alone); "annotated": ``kernel
--from-trace T --chrome OUT``'s steps (read, join with fixtures/pytorch-mini, write), the write's
rise above what the read and join left. ``BENCH_SRC`` (another checkout's src/) measures a before.
``--chrome-speed N[,N...]`` (``--chrome-gzip``: the trace gzipped): ``kernel --from-trace T --chrome OUT``
as a whole (read, join with fixtures/pytorch-mini, OUT written) against json.load of the same file,
fresh processes alternating (``--speed-runs``), CPU, wall and peak RSS; with ``BENCH_BASE_SRC`` that
checkout's --chrome too, in the same run (Note [The annotations of a long trace]).
``--from-trace-speed N`` with ``BENCH_BASE_SRC`` (another checkout's src/) also times that
checkout's table in the same run, its processes alternating with the others ("answer (base)"), so
that before and after share the box's load and the same json.load medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.2  # issue 13
TARGET_CHROME = 1.2
TARGET_WHOLE = 1.5  # issue 20: the whole command, join and file included, against the profiler + its export
VARIANTS = ["plain", "with_stack", "profiler", "stack+shapes", "sysmon", "bare_modes", "trace", "trace_dispatch"]

CHILD = r"""
import contextlib, json, sys, time
import torch, torch.nn.functional as F
dev, n, iters, rounds, variants, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(","), sys.argv[6]
import atenmap.trace as amtrace
from torch.profiler import ProfilerActivity, profile
torch.set_num_threads(1)  # one intra-op thread: timings of tiny ops without thread-pool noise
x = torch.randn(n, n, device=dev); w = torch.randn(n, n, device=dev)
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

def step():
    y = torch.add(x, x)
    z = torch.mm(y, w)
    return F.softmax(z, dim=-1)

from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
class BareF(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
class BareD(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func._op(*args, **(kwargs or {}))
@contextlib.contextmanager
def bare_modes():
    with BareF(), BareD():
        yield

@contextlib.contextmanager
def sysmon():
    # the calling line by sys.monitoring (Python 3.12+): CALL events in the user's code only, on top of
    # with_stack; what a tracer would pay to know the line of each call without the profiler's caller
    mon = sys.monitoring
    tool = 3
    mon.use_tool_id(tool, "atenmap-bench")
    seen = []
    mon.register_callback(tool, mon.events.CALL, lambda code, off, fn, arg0: seen.append((code, off)))
    mon.set_local_events(tool, step.__code__, mon.events.CALL)
    try:
        with profile(activities=acts, with_stack=True):
            yield
    finally:
        mon.set_local_events(tool, step.__code__, 0)
        mon.free_tool_id(tool)

def instrument(v):
    if v == "plain": return contextlib.nullcontext()
    if v == "bare_modes": return bare_modes()
    if v == "with_stack": return profile(activities=acts, with_stack=True)
    if v == "profiler": return profile(activities=acts)
    if v == "stack+shapes": return profile(activities=acts, with_stack=True, record_shapes=True)
    if v == "sysmon": return sysmon()
    if v == "trace": return amtrace.trace()
    if v == "trace_dispatch": return amtrace.trace(dispatch=True)
    raise SystemExit(v)

def block(v, k):
    t0 = time.perf_counter()
    with instrument(v) as ins:
        sync(); t1 = time.perf_counter()
        for _ in range(k): step()
        sync(); t2 = time.perf_counter()
    t3 = time.perf_counter()
    return t2 - t1, (t1 - t0) + (t3 - t2), ins

if mode == "chrome":
    import os, tempfile
    tree = sys.argv[7]
    from atenmap.api import Index
    ix = Index.open(None if tree == "bundled" else tree)  # opened (and built) before any timing
    block("trace", 2); block("with_stack", 2)
    sizes, whole, cpu = {}, {}, {}
    now = lambda: (time.perf_counter(), time.process_time())
    with tempfile.TemporaryDirectory() as d:
        for v in ("with_stack", "profiler"):
            (t0, c0) = now()
            with instrument(v) as p:
                for _ in range(iters): step()
            sync()
            p.export_chrome_trace(os.path.join(d, v + ".json"))
            (t1, c1) = now()
            whole[v], cpu[v] = t1 - t0, c1 - c0
            sizes[v] = os.path.getsize(os.path.join(d, v + ".json"))
        marks = [now()]
        with amtrace.trace(chrome=True) as t:
            for _ in range(iters): step()
        sync()
        marks.append(now())
        rep = t.report(index=ix)
        marks.append(now())
        out = os.path.join(d, "trace.json")
        n = t.write_chrome(out, rep)
        marks.append(now())
        t.write_json(os.path.join(d, "t.json"), rep)  # what --json writes
        marks.append(now())
        whole["trace"] = marks[-1][0] - marks[0][0]
        cpu["trace"] = marks[-1][1] - marks[0][1]
        names = ("run", "join", "chrome", "json")
        whole["parts"] = {k: marks[i + 1][0] - marks[i][0] for i, k in enumerate(names)}
        cpu["parts"] = {k: marks[i + 1][1] - marks[i][1] for i, k in enumerate(names)}
        whole["cpu"] = cpu
        sizes["trace_chrome"] = os.path.getsize(out)
    print(json.dumps({"sizes": sizes, "annotated": n, "calls": len(t.recording.calls), "whole": whole}))
elif mode == "first":
    v = variants[0]
    sync()
    ins = instrument(v)
    t0 = time.perf_counter(); ins.__enter__(); t1 = time.perf_counter()
    step(); sync(); t2 = time.perf_counter()
    ins.__exit__(None, None, None); t3 = time.perf_counter()
    warm = getattr(ins, "warm_up_s", 0.0)
    print(json.dumps({"variant": v, "first_step_s": t2 - t1, "start_s": t1 - t0, "stop_s": t3 - t2, "warm_up_s": warm}))
else:
    for v in variants: block(v, 2)
    res = {v: {"region": [], "session": []} for v in variants}
    for r in range(rounds):
        for v in variants:
            reg, ses, _ = block(v, iters)
            res[v]["region"].append(reg); res[v]["session"].append(ses)
    print(json.dumps(res))
"""


def child(args: list[str]) -> dict:
    src = os.environ.get("BENCH_SRC", str(REPO / "src"))  # another checkout's src/, for before/after
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONWARNINGS="ignore",
                                PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)))
    if r.returncode != 0:
        raise SystemExit(f"bench child failed ({r.returncode}): {r.stderr.strip()[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


RSS_CHILD = r"""
import json, resource, sys, time
what, path = sys.argv[1], sys.argv[2]
if what in ("index", "answer", "answer_held"):  # the whole --from-trace: read, join with the fixture tree's index, count
    from atenmap.api import Index
    ix = Index.open(sys.argv[3])
t0 = time.perf_counter()
if what == "answer":
    from atenmap.trace.fromtrace import answer
    n = answer(ix, path).events
elif what == "answer_held":  # the reader that holds the whole recording (before the bounded one)
    from atenmap.trace.fromtrace import answer
    n = answer(ix, path, bounded=False).events
elif what == "index":
    n = 0
elif what == "reader":
    from atenmap.trace.tracefile import read_recording
    rec = read_recording(path)
    n = rec.kernel_count
elif what == "json.load":  # what --from-trace did before: the whole document in memory
    with open(path) as f:
        n = len(json.load(f)["traceEvents"])
else:
    import atenmap.trace.tracefile
    n = 0
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "s": time.perf_counter() - t0, "n": n}))
"""


def synthetic_trace(path: Path, n: int) -> None:
    """A Kineto-shaped trace of about ``n`` events: per step a module and a function frame, an op with
    its External id and input types, its cudaLaunchKernel and its kernel (5 events)."""
    kern = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
    with path.open("w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        for i in range(n // 5):
            t = i * 10.0
            evs = [{"ph": "X", "cat": "python_function", "name": "train.py(40): step", "pid": 1, "tid": 1, "ts": t, "dur": 9,
                    "args": {"Python id": 2 * i, "Python parent id": None}},
                   {"ph": "X", "cat": "python_function", "name": "<built-in method add of type object at 0x7f>", "pid": 1,
                    "tid": 1, "ts": t + 1, "dur": 7, "args": {"Python id": 2 * i + 1, "Python parent id": 2 * i}},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": t + 2, "dur": 5,
                    "args": {"External id": i, "Input type": ["float", "float", "Scalar"], "Input Dims": [[64, 64], [64, 64], []]}},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 3, "dur": 1,
                    "args": {"External id": i, "correlation": i}},
                   {"ph": "X", "cat": "kernel", "name": kern, "pid": 0, "tid": 7, "ts": t + 5, "dur": 2,
                    "args": {"External id": i, "correlation": i, "device": 0, "stream": 7}}]
            f.write(",\n".join(json.dumps(e) for e in evs) + (",\n" if i < n // 5 - 1 else "\n"))
        f.write("]}\n")


def rss(n: int, whats=("import", "reader", "json.load", "index", "answer_held", "answer")) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.json"
        synthetic_trace(path, n)
        size = path.stat().st_size
        rows = {}
        for what in whats:
            src = os.environ.get("BENCH_SRC", str(REPO / "src"))
            r = subprocess.run([sys.executable, "-c", RSS_CHILD, what, str(path), str(REPO / "fixtures" / "pytorch-mini")],
                               capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=src))
            if r.returncode != 0:
                raise SystemExit(r.stderr[-2000:])
            rows[what] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"--from-trace reader on a synthetic trace of {n} events ({size / 1e6:.0f} MB):")
    for what, row in rows.items():
        print(f"  {what:<10} peak RSS {row['rss_mb']:7.0f} MB  {row['s']:6.1f} s  ({row['n']} kernels/events)")
    extra = rows["reader"]["rss_mb"] - rows["import"]["rss_mb"]
    print(f"  reader (read_recording): {extra:.0f} MB above the import, {extra * 1e6 / n:.0f} bytes per event")
    for what, label in (("answer_held", "held in memory (read_recording)"), ("answer", "bounded (spill.py)")):
        if what in rows:
            extra = rows[what]["rss_mb"] - rows["index"]["rss_mb"]
            print(f"  --from-trace answer, {label}: read + join with fixtures/pytorch-mini + count: peak "
                  f"{rows[what]['rss_mb']:.0f} MB, {extra:.0f} MB above the index opened, {extra * 1e6 / n:.0f} bytes per event")
    return rows


CHROME_RSS_CHILD = r"""
import json, re, sys, time
what, path, out, tree = sys.argv[1:5]

def rss_kb(key):
    return int(re.search(key + r":\s+(\d+)", open("/proc/self/status").read()).group(1))

from atenmap.trace.chrome import Annotations
if what == "annotated":  # kernel --from-trace T --chrome OUT, step by step (fromtrace._answer_to_chrome)
    import inspect
    from atenmap.api import Index
    from atenmap.trace.fromtrace import _answer
    ix = Index.open(tree, codegen=False)
    if "spilled" in inspect.signature(Annotations).parameters:  # the bounded read (Note [The annotations of a long trace])
        from atenmap.trace.spill import stream_recording
        notes = Annotations(spilled=True)
        with stream_recording(path, repeats=True, ops=notes.map_op) as rec:
            notes.firsts = rec.firsts
            _answer(ix, rec, rec.host, notes.add, "cuda", notes.repeat)
    else:  # a checkout from before it (BENCH_SRC): the whole recording in memory
        from atenmap.trace.tracefile import read_recording
        rec = read_recording(path)
        notes = Annotations(rec.op_events)
        _answer(ix, rec, not rec.unattributed and not any(c.kernels for c in rec.calls), notes.add)
else:
    notes = Annotations({})
held = rss_kb("VmHWM")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) from here: the write's own
start = rss_kb("VmRSS")
t0 = time.perf_counter()
n = notes.write(path, out)
print(json.dumps({"start_mb": start / 1024, "peak_mb": rss_kb("VmHWM") / 1024, "before_mb": held / 1024,
                  "s": time.perf_counter() - t0, "annotated": n}))
"""


def chrome_rss(n: int, whats=("copy", "annotated")) -> dict:
    """The --chrome rewrite's peak above its start (CHROME_RSS_CHILD), plain -> plain and gzip -> gzip."""
    import gzip
    import shutil
    import tempfile

    rows = {}
    with tempfile.TemporaryDirectory() as d:
        plain = Path(d) / "big.json"
        synthetic_trace(plain, n)
        packed = Path(d) / "big.json.gz"
        with plain.open("rb") as fi, gzip.open(packed, "wb", compresslevel=1) as fo:
            shutil.copyfileobj(fi, fo)
        src = os.environ.get("BENCH_SRC", str(REPO / "src"))
        for what in whats:
            for path in (plain, packed):
                r = subprocess.run([sys.executable, "-c", CHROME_RSS_CHILD, what, str(path),
                                    str(Path(d) / ("out" + "".join(path.suffixes))), str(REPO / "fixtures" / "pytorch-mini")],
                                   capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=src))
                if r.returncode != 0:
                    raise SystemExit(r.stderr[-2000:])
                row = json.loads(r.stdout.strip().splitlines()[-1])
                row["input_mb"] = path.stat().st_size / 1e6
                row["text_mb"] = plain.stat().st_size / 1e6
                rows[f"{what} {''.join(path.suffixes)}"] = row
    print(f"--chrome rewrite on a synthetic trace of {n} events ({rows[next(iter(rows))]['text_mb']:.0f} MB of JSON text):")
    for k, r in rows.items():
        print(f"  {k:<20} input {r['input_mb']:6.0f} MB  rewrite peak {r['peak_mb']:7.0f} MB, "
              f"{r['peak_mb'] - r['start_mb']:6.0f} MB above its start ({r['start_mb']:.0f} MB; "
              f"peak before it {r['before_mb']:.0f} MB)  {r['s']:6.1f} s  {r['annotated']} annotated")
    return rows


SPEED_CHILD = r"""
import json, resource, sys, time
what, path, tree = sys.argv[1], sys.argv[2], sys.argv[3]
if what == "answer":
    from atenmap.api import Index
    from atenmap.trace.fromtrace import summarize
    ix = Index.open(tree, codegen=False)
    summarize(ix, path)  # the chain cache and the index pages warm: the first answer pays the resolver
c0, t0 = time.process_time(), time.perf_counter()
if what == "json.load":
    import gzip
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        n = len(json.load(f)["traceEvents"])
elif what == "answer":
    rank, rows, host = summarize(ix, path)
    n = rank.events
out = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0, "n": n,
       "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if what == "answer":
    from atenmap.trace.tracefile import fast_decoder
    out["reader"] = "msgspec" if fast_decoder() is not None else "json"
print(json.dumps(out))
"""


def speed(n: int, runs: int = 3) -> dict:
    """``kernel --from-trace``'s table (read, join with fixtures/pytorch-mini, rows) against json.load of
    the same synthetic file, each in a fresh process, alternating, ``runs`` times: CPU time medians."""
    import tempfile

    tree = str(REPO / "fixtures" / "pytorch-mini")
    src = os.environ.get("BENCH_SRC", str(REPO / "src"))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.json"
        synthetic_trace(path, n)
        size = path.stat().st_size
        base = os.environ.get("BENCH_BASE_SRC")
        got: dict[str, list] = {"json.load": [], "answer": [], "answer (json)": [],
                                **({"answer (base)": []} if base else {})}
        for _ in range(runs):
            for what in got:
                child = (what, src) if what != "answer (base)" else ("answer", base)
                env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=os.pathsep.join(
                    p for p in (child[1], os.environ.get("PYTHONPATH")) if p))  # msgspec where it is installed
                if what == "answer (json)":  # the reader without msgspec (Note [A compiled reader])
                    child, env["ATENMAP_TRACE_JSON"] = ("answer", src), "json"
                r = subprocess.run([sys.executable, "-c", SPEED_CHILD, child[0], str(path), tree], capture_output=True,
                                   text=True, env=env)
                if r.returncode != 0:
                    raise SystemExit(r.stderr[-2000:])
                got[what].append(json.loads(r.stdout.strip().splitlines()[-1]))
    med = {w: {k: statistics.median(x[k] for x in rows) for k in ("cpu_s", "wall_s", "rss_mb")} for w, rows in got.items()}
    ratio = med["answer"]["cpu_s"] / med["json.load"]["cpu_s"]
    print(f"--from-trace table on a synthetic trace of {n} events ({size / 1e6:.0f} MB), {runs} runs, medians:")
    reader = got["answer"][0]["reader"]
    for w, m in med.items():
        label = f"answer ({reader})" if w == "answer" else w
        print(f"  {label:<16} CPU {m['cpu_s']:6.2f} s  wall {m['wall_s']:6.2f} s  peak RSS {m['rss_mb']:6.0f} MB")
    print(f"{'PASS' if ratio <= 1.0 else 'MISS'}: from-trace CPU {ratio:.2f}x json.load (target <= 1x), reader {reader}")
    ratio_json = med["answer (json)"]["cpu_s"] / med["json.load"]["cpu_s"]
    print(f"  without msgspec (ATENMAP_TRACE_JSON=json): {ratio_json:.2f}x json.load")
    out = {"events": n, "bytes": size, "runs": got, "median": med, "ratio_cpu": ratio, "reader": reader,
           "ratio_cpu_json": ratio_json}
    if "answer (base)" in med:
        out["ratio_cpu_base"] = med["answer (base)"]["cpu_s"] / med["json.load"]["cpu_s"]
        print(f"  base ({os.environ['BENCH_BASE_SRC']}): {out['ratio_cpu_base']:.2f}x json.load")
    return out


CHROME_SPEED_CHILD = r"""
import json, resource, sys, time
what, path, tree, warm, out = sys.argv[1:6]
if what == "chrome":
    from atenmap.api import Index
    from atenmap.trace.fromtrace import answer
    ix = Index.open(tree, codegen=False)
    answer(ix, warm, chrome=out)  # the chain cache and the index pages warm, on a small trace of the same ops
c0, t0 = time.process_time(), time.perf_counter()
if what == "json.load":
    import gzip
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        n = len(json.load(f)["traceEvents"])
else:
    n = answer(ix, path, chrome=out).annotated
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0, "n": n,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def chrome_speed(n: int, runs: int = 1, gz: bool = False) -> dict:
    """``kernel --from-trace T --chrome OUT`` as a whole (read, join with fixtures/pytorch-mini, write OUT;
    Note [The annotations of a long trace]) against json.load of the same synthetic file, each in a
    fresh process, alternating, ``runs`` times: CPU, wall and peak RSS medians. ``BENCH_BASE_SRC``
    (another checkout's src/): that checkout's --chrome too ("chrome (base)"), in the same run."""
    import gzip
    import shutil
    import tempfile

    tree = str(REPO / "fixtures" / "pytorch-mini")
    src = os.environ.get("BENCH_SRC", str(REPO / "src"))
    base = os.environ.get("BENCH_BASE_SRC")
    with tempfile.TemporaryDirectory() as d:
        path, warm = Path(d) / "big.json", Path(d) / "warm.json"
        synthetic_trace(path, n)
        synthetic_trace(warm, 1000)
        text_size = path.stat().st_size
        if gz:
            with path.open("rb") as fi, gzip.open(str(path) + ".gz", "wb", compresslevel=1) as fo:
                shutil.copyfileobj(fi, fo)
            path.unlink()
            path = Path(str(path) + ".gz")
        got: dict[str, list] = {"json.load": [], "chrome": [], **({"chrome (base)": []} if base else {})}
        for _ in range(runs):
            for what in got:
                where = base if what == "chrome (base)" else src
                env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=os.pathsep.join(
                    p for p in (where, os.environ.get("PYTHONPATH")) if p))
                out = Path(d) / ("out.json.gz" if gz else "out.json")
                r = subprocess.run([sys.executable, "-c", CHROME_SPEED_CHILD, what.split()[0], str(path), tree, str(warm),
                                    str(out)], capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    raise SystemExit(r.stderr[-2000:])
                got[what].append(json.loads(r.stdout.strip().splitlines()[-1]))
                if what != "json.load":
                    got[what][-1]["out_mb"] = out.stat().st_size / 1e6
    med = {w: {k: statistics.median(x[k] for x in rows) for k in ("cpu_s", "wall_s", "rss_mb")} for w, rows in got.items()}
    print(f"--from-trace --chrome on a synthetic trace of {n} events ({text_size / 1e6:.0f} MB of JSON"
          f"{', gzip' if gz else ''}), {runs} run(s), medians:")
    for w, m in med.items():
        print(f"  {w:<14} CPU {m['cpu_s']:6.2f} s  wall {m['wall_s']:6.2f} s  peak RSS {m['rss_mb']:6.0f} MB "
              f"({m['cpu_s'] / med['json.load']['cpu_s']:.2f}x json.load's CPU)")
    return {"events": n, "bytes": text_size, "gzip": gz, "runs": got, "median": med,
            "ratio_cpu": med["chrome"]["cpu_s"] / med["json.load"]["cpu_s"]}


RANKS_CHILD = r"""
import json, resource, sys, time
from atenmap.api import Index
from atenmap.trace.fromtrace import summarize_job
ix = Index.open(sys.argv[1], codegen=False)
files = sys.argv[3:]
summarize_job(ix, files[:1], jobs=1)  # warm: the chain cache

def cpu():
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))

c0, t0 = cpu(), time.perf_counter()
table, notes = summarize_job(ix, files, jobs=int(sys.argv[2]))
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": cpu() - c0, "rows": len(table.rows)}))
"""


def ranks(n_ranks: int, n: int, jobs: int, runs: int = 3) -> dict:
    """``n_ranks`` copies of a synthetic trace of ``n`` events read one by one (--jobs 1) and in
    parallel (--jobs ``jobs``), fresh processes, alternating: wall time medians, and the CPU time
    of each side (the process and its workers). The CPU times tell the box's load from a
    serialization: where the parallel side spends the serial side's CPU time and its wall time is
    not shorter, its workers waited for a core, not for each other (docs/trace.md, "Profiles at
    scale", a job's ranks)."""
    import shutil
    import tempfile

    tree = str(REPO / "fixtures" / "pytorch-mini")
    src = os.environ.get("BENCH_SRC", str(REPO / "src"))
    with tempfile.TemporaryDirectory() as d:
        first = Path(d) / "rank0.json"
        synthetic_trace(first, n)
        files = [str(first)]
        for r in range(1, n_ranks):
            files.append(str(Path(d) / f"rank{r}.json"))
            shutil.copy(first, files[-1])
        got: dict[int, list] = {1: [], jobs: []}
        for _ in range(runs):
            for j in got:
                r = subprocess.run([sys.executable, "-c", RANKS_CHILD, tree, str(j), *files], capture_output=True,
                                   text=True, env=dict(os.environ, PYTHONPATH=src, PYTHONWARNINGS="ignore"))
                if r.returncode != 0:
                    raise SystemExit(r.stderr[-2000:])
                got[j].append(json.loads(r.stdout.strip().splitlines()[-1]))
    one, par = (statistics.median(x["wall_s"] for x in got[k]) for k in (1, jobs))
    cpu1, cpup = (statistics.median(x["cpu_s"] for x in got[k]) for k in (1, jobs))
    ratio = par / one
    print(f"{n_ranks} rank traces of {n} events, {runs} runs, medians; load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores:")
    print(f"  one by one  wall {one:6.2f} s  CPU {cpu1:6.2f} s ({cpu1 / one:.0%} of a core)")
    print(f"  {jobs} processes wall {par:6.2f} s  CPU {cpup:6.2f} s ({cpup / par:.0%} of a core)")
    print(f"{'PASS' if ratio <= 0.6 else 'MISS'}: {jobs} processes {ratio:.2f}x one by one (target <= 0.6x); "
          f"CPU {cpup / cpu1:.2f}x (1x: no work added by the parallel read)")
    return {"ranks": n_ranks, "events": n, "jobs": jobs, "runs": got, "ratio": ratio, "cpu_ratio": cpup / cpu1}


SCRIPT = """import torch, torch.nn.functional as F
torch.set_num_threads(1)
x = torch.randn({n}, {n}, device="{dev}"); w = torch.randn({n}, {n}, device="{dev}")
def step():
    y = torch.add(x, x)
    z = torch.mm(y, w)
    return F.softmax(z, dim=-1)
for _ in range({iters}):
    step()
"""

BASE = """import runpy, sys
import torch
from torch.profiler import ProfilerActivity, profile
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
with profile(activities=acts, with_stack=True) as p:
    runpy.run_path(script, run_name="__main__")
p.export_chrome_trace(out)
"""


def timed(cmd: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(wall s, CPU s: user + system of the child and its children) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... failed ({proc.returncode}): {err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def command(tree: str, device: str, size: int, iters: int, runs: int) -> dict:
    import shutil
    import tempfile

    src = os.environ.get("BENCH_SRC", str(REPO / "src"))
    env = dict(os.environ, PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory() as d:
        Path(d, "work.py").write_text(SCRIPT.format(n=size, dev=device, iters=iters))
        Path(d, "base.py").write_text(BASE)
        base = [sys.executable, "base.py", "base.json", "work.py"]
        bundled = tree == "bundled"  # atenmap's bundled 2.6.0 index (no tree on the machine)
        am = [sys.executable, "-m", "atenmap", "trace", *([] if bundled else ["--source", tree]), "--chrome", "am.json",
              "--json", "am.out.json", "--", "work.py"]
        if bundled:
            env.pop("ATENMAP_SOURCE", None)
        opener = "from atenmap.api import Index; import sys; ix = Index.open(None if sys.argv[1] == 'bundled' else sys.argv[1]); "
        cache = subprocess.run([sys.executable, "-c", opener + "print(ix.store.path.with_name('trace-chains.sqlite'))", tree],
                               env=env, check=True, capture_output=True, text=True, cwd=d).stdout.strip()
        # (the index built, refreshed or unpacked before timing)
        timed(base, env, d)  # the disk cache warm for both
        if cache and os.path.exists(cache):
            os.unlink(cache)
        cold = timed(am, env, d)
        pairs = []
        for _ in range(runs):
            pairs.append((timed(base, env, d), timed(am, env, d)))
        sizes = (os.path.getsize(os.path.join(d, "base.json")), os.path.getsize(os.path.join(d, "am.json")))
        shutil.rmtree(d, ignore_errors=True)
    med = lambda xs: statistics.median(xs)  # noqa: E731
    return {"base_wall": med([b[0] for b, _ in pairs]), "base_cpu": med([b[1] for b, _ in pairs]),
            "warm_wall": med([a[0] for _, a in pairs]), "warm_cpu": med([a[1] for _, a in pairs]),
            "cold_wall": cold[0], "cold_cpu": cold[1], "runs": runs, "sizes": sizes,
            "raw": [[list(b), list(a)] for b, a in pairs]}


def print_command(c: dict, iters: int) -> None:
    print(f"whole command, fresh processes, {iters} steps ({3 * iters} aten calls), median of {c['runs']} pairs:")
    print(f"  {'':<44} {'wall s':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6}")
    print(f"  {'python BASE work.py (with_stack + export)':<44} {c['base_wall']:>7.2f} {1:>5.2f}x {c['base_cpu']:>7.2f} {1:>5.2f}x")
    for k, label in (("cold", "atenmap trace, chain cache empty (1 run)"), ("warm", "atenmap trace, chain cache kept")):
        print(f"  {label:<44} {c[k + '_wall']:>7.2f} {c[k + '_wall'] / c['base_wall']:>5.2f}x "
              f"{c[k + '_cpu']:>7.2f} {c[k + '_cpu'] / c['base_cpu']:>5.2f}x")
    w = c["warm_wall"] / c["base_wall"]
    print(f"{'PASS' if w <= TARGET_WHOLE else 'MISS'}: whole command {w:.2f}x wall, "
          f"{c['warm_cpu'] / c['base_cpu']:.2f}x CPU (target <= {TARGET_WHOLE}x)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--iters", type=int, default=300, help="steps per timed block (3 aten calls each)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path, help="write the numbers here")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset (with_stack always runs)")
    ap.add_argument("--no-first", action="store_true", help="skip the first-step processes")
    ap.add_argument("--chrome", metavar="TREE", help="also measure the --chrome file, joined with this tree")
    ap.add_argument("--chrome-only", action="store_true", help="only the --chrome measurement")
    ap.add_argument("--command", metavar="TREE", help="only: the whole atenmap trace command against the profiler's, as processes")
    ap.add_argument("--command-runs", type=int, default=5)
    ap.add_argument("--from-trace-rss", type=int, metavar="N", help="only: the trace reader's peak RSS on N events")
    ap.add_argument("--chrome-rss", type=int, metavar="N", help="only: the --chrome rewrite's peak RSS on N events")
    ap.add_argument("--chrome-rss-what", default="copy,annotated", help="with --chrome-rss: copy, annotated or both")
    ap.add_argument("--from-trace-speed", metavar="N[,N...]",
                    help="only: kernel --from-trace's table against json.load of the same N-event file (CPU time); "
                         "several sizes comma-separated (100000,1000000: the issue's two)")
    ap.add_argument("--speed-runs", type=int, default=3, help="with --from-trace-speed: processes of each kind")
    ap.add_argument("--ranks", type=int, metavar="R", help="only: R rank traces (of --rank-events) one by one and in parallel")
    ap.add_argument("--rank-events", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chrome-speed", metavar="N[,N...]",
                    help="only: kernel --from-trace T --chrome OUT (CPU, peak RSS) against json.load on N events")
    ap.add_argument("--chrome-gzip", action="store_true", help="with --chrome-speed: the trace gzipped, OUT .json.gz")
    a = ap.parse_args()
    if a.from_trace_speed:
        rows = [speed(int(n), a.speed_runs) for n in a.from_trace_speed.split(",")]
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        for row in rows:
            print(f"{'PASS' if row['ratio_cpu'] <= 1.0 else 'MISS'}: {row['events']} events ({row['reader']}): from-trace CPU "
                  f"{row['ratio_cpu']:.2f}x json.load (target <= 1x), peak RSS {row['median']['answer']['rss_mb']:.0f} MB "
                  f"(json.load's {row['median']['json.load']['rss_mb']:.0f} MB)")
        if a.json:
            a.json.write_text(json.dumps({"from_trace_speed": rows}, indent=1))
        return 0
    if a.chrome_speed:
        rows = [chrome_speed(int(n), a.speed_runs, a.chrome_gzip) for n in a.chrome_speed.split(",")]
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        if a.json:
            a.json.write_text(json.dumps({"chrome_speed": rows}, indent=1))
        return 0
    if a.ranks:
        row = ranks(a.ranks, a.rank_events, a.jobs)
        if a.json:
            a.json.write_text(json.dumps({"ranks": row}, indent=1))
        return 0
    if a.chrome_rss:
        rows = chrome_rss(a.chrome_rss, tuple(a.chrome_rss_what.split(",")))
        if a.json:
            a.json.write_text(json.dumps({"chrome_rss": rows, "events": a.chrome_rss}, indent=1))
        return 0
    if a.from_trace_rss:
        rows = rss(a.from_trace_rss)
        if a.json:
            a.json.write_text(json.dumps({"from_trace_rss": rows, "events": a.from_trace_rss}, indent=1))
        return 0
    if a.command:
        c = command(a.command, a.device, a.size, a.iters, a.command_runs)
        print_command(c, a.iters)
        if a.json:
            a.json.write_text(json.dumps({"command": c}, indent=1))
        return 0
    common = [a.device, str(a.size), str(a.iters), str(a.rounds)]
    chrome = child(common + ["trace", "chrome", a.chrome]) if a.chrome else None
    if chrome:
        sz, wh = chrome["sizes"], chrome["whole"]
        print(f"chrome trace, {a.iters} steps ({chrome['calls']} calls, {chrome['annotated']} events annotated):")
        for k in ("with_stack", "profiler", "trace_chrome"):
            print(f"  {k:<13} {sz[k] / 1e6:8.2f} MB  {sz[k] / sz['with_stack']:5.2f}x with_stack")
        r = sz["trace_chrome"] / sz["with_stack"]
        print(f"{'PASS' if r <= TARGET_CHROME else 'MISS'}: --chrome {r:.2f}x the with_stack trace (target <= {TARGET_CHROME}x)")
        w = wh["trace"] / wh["with_stack"]
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in wh["parts"].items())
        print(f"whole: with_stack + export_chrome_trace {wh['with_stack']:.3f} s; trace + join + --chrome + --json "
              f"{wh['trace']:.3f} s ({parts})")
        cw = wh["cpu"]
        cparts = ", ".join(f"{k} {v:.3f} s" for k, v in cw["parts"].items())
        print(f"  CPU time: with_stack + export {cw['with_stack']:.3f} s; trace + join + --chrome + --json {cw['trace']:.3f} s "
              f"({cparts}): {cw['trace'] / cw['with_stack']:.2f}x")
        print(f"{'PASS' if w <= TARGET_WHOLE else 'MISS'}: in one process, the index open, {w:.2f}x wall "
              f"(target <= {TARGET_WHOLE}x; `--command` times the command as a user runs it)")
    if a.chrome_only:
        return 0
    variants = [v for v in VARIANTS if v == "with_stack" or v in a.variants.split(",")]
    if sys.version_info < (3, 12):
        variants = [v for v in variants if v != "sysmon"]  # sys.monitoring is Python 3.12+
    steady = {v: child(common + [v, "steady"])[v] for v in variants}
    nofirst = {"first_step_s": float("nan"), "start_s": float("nan"), "stop_s": float("nan"), "warm_up_s": float("nan")}
    first = {v: nofirst if a.no_first else child(common + [v, "first"]) for v in variants}

    per_call = 3 * a.iters
    base = statistics.median(steady["with_stack"]["region"])
    print(f"atenmap trace overhead: {a.device}, {a.size}x{a.size} add/mm/softmax, {a.iters} steps x {a.rounds} rounds")
    print(f"{'variant':<11} {'steady µs/call':>14} {'ratio':>6} {'session ms':>10} {'first step ms':>13} {'start ms':>9} {'warm-up s':>9}")
    rows = {}
    for v in variants:
        reg = statistics.median(steady[v]["region"])
        ses = statistics.median(steady[v]["session"])
        f = first[v]
        rows[v] = {"steady_us_per_call": reg / per_call * 1e6, "steady_ratio": reg / base, "session_ms": ses * 1e3,
                   "first_step_ms": f["first_step_s"] * 1e3, "first_start_ms": f["start_s"] * 1e3,
                   "warm_up_s": f["warm_up_s"],
                   "first_ratio": f["first_step_s"] / first["with_stack"]["first_step_s"]}
        r = rows[v]
        print(f"{v:<11} {r['steady_us_per_call']:>14.1f} {r['steady_ratio']:>5.2f}x {r['session_ms']:>10.1f} "
              f"{r['first_step_ms']:>13.1f} {r['first_start_ms']:>9.1f} {r['warm_up_s']:>9.2f}")
    for v in [v for v in ("trace", "trace_dispatch") if v in rows]:
        verdict = "PASS" if rows[v]["steady_ratio"] <= TARGET else "MISS"
        print(f"{verdict}: {v} steady state {rows[v]['steady_ratio']:.2f}x with_stack (target <= {TARGET}x); "
              f"first step {rows[v]['first_ratio']:.2f}x")
    if a.json:
        a.json.write_text(json.dumps({"device": a.device, "size": a.size, "iters": a.iters, "rounds": a.rounds,
                                      "rows": rows, "raw_steady": steady, "raw_first": first, "chrome": chrome}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
