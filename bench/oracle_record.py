"""Record a ground-truth oracle on a GPU: for every OpInfo of PyTorch's ``op_db``, which CUDA kernels
each ATen operator launches, as seen by the real PyTorch and its profiler.

    # on the GPU machine (torch with CUDA; expecttest importable):
    python bench/oracle_record.py record --out DIR [--budget 420] [--dtypes float32,bfloat16]
    # half precision and the backward pass (a pass named DTYPE+backward runs autograd on each sample):
    python bench/oracle_record.py record --out DIR --dtypes float16,float32+backward
    # anywhere, from the raw events recorded there (no torch needed):
    python bench/oracle_record.py build --raw DIR/oracle_raw.jsonl.gz --meta DIR/oracle_meta.json \
        --out fixtures/oracle/opinfo_cuda_h200_torch2.11.json

Recording (``record``)
----------------------
A driver process runs worker processes (``_worker``) over the OpInfos that support CUDA in the
pass's dtype, in ``op_db`` order, and restarts a worker past an op that kills it (segfault, sticky
CUDA error), so one bad op costs one op. For each OpInfo, with a per-op alarm (``--op-timeout``):
  1. the first ``--samples`` sample inputs of ``op.sample_inputs('cuda', dtype)`` (seeded);
  2. per sample, a warm-up run, then one run under a ``TorchDispatchMode`` that logs every ATen
     overload it sees, with its nesting depth (a dispatch mode sees the ops below Autograd that the
     Python code called; calls made *inside* a kernel run with the mode popped, so they are not
     seen: depth is 0 in practice; the log is kept as a cross-check of the profiler's overloads);
  3. one ``torch.profiler`` session (CPU + CUDA, overload names captured where this torch can),
     each sample inside a ``record_function('oracle#<i>')`` marker, CUDA synchronised before stop.
     The dispatch mode is not active here: under a mode every op shows twice in the profile
     (``aten::x`` > ``PythonDispatchMode`` > ``aten::x``), which would blur "innermost".
The raw profiler events (ops, runtime/driver calls, kernels, memcpy/memset, with times, thread,
correlation ids) go to ``oracle_raw.jsonl.gz``, one line per OpInfo and dtype; nothing is
interpreted on the GPU machine beyond what the profiler gives. torch 2.11's ``_KinetoEvent`` has no
``activity_type()``: its rows carry ``'?'`` and ``classify`` reads the class from device and name.

Attribution (``build``, also run at the end of ``record``)
--------------------------------------------------------
For each GPU activity (kernel, memcpy, memset) the runtime/driver call with the same CUPTI
correlation id is found; the ATen ops (``cpu_op`` events) whose interval on the same thread
encloses that call are its stack: the innermost one is ``op``, the outermost one ``top``. Where no
runtime call is found, the Kineto link (the kernel's linked correlation id = the ``External id`` of
the innermost op active at launch) is used instead. Both are computed when both exist and their
agreement is counted in ``attribution`` (on the 2.11 / H200 recording: 6530 of 6530 kernels with
both agree; the chrome traces of a few ops, whose kernels carry the same ``External id``, agree too). A kernel that neither places under an ATen op is written
with ``op: null`` and counted; no pair is invented. Overloads: the profiler's own overload names
when captured (``''`` = the default overload, written as the bare name), else the dispatch-mode log
matched by name in call order per sample; an op matched by neither is written as its bare name with
``overload_unresolved: true``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

RAW_NAME = "oracle_raw.jsonl"
META_NAME = "oracle_meta.json"
ORACLE_NAME = "opinfo_cuda_h200_torch2.11.json"
MARKER = "oracle#"
DEBUG_OPS = ("add", "nn.functional.relu", "mm", "sum", "softmax", "sort", "nn.functional.conv2d",
             "matmul", "linalg.inv", "cumsum")
MAX_EVENTS_PER_OP = 40000
EXIT_DONE, EXIT_BUDGET, EXIT_POISONED = 0, 2, 3
GPU_ACTS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_ACTS = ("cuda_runtime", "cuda_driver")
DISAGREE: list[dict] = []


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


# =====================================================================================================
# Worker (GPU machine)
# =====================================================================================================

def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


class OpTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise OpTimeout("per-op time limit")


def op_key(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def cuda_ops(dtype, device="cuda", backward=False):
    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        try:
            ok = dtype in (op.supported_backward_dtypes(device) if backward else op.supported_dtypes(device))
            ok = ok and (op.supports_autograd or not backward)
        except Exception:
            ok = False
        if ok:
            out.append(op)
    return out


def _describe(x, depth=0) -> str:
    import torch

    if isinstance(x, torch.Tensor):
        try:
            nc = "" if x.layout != torch.strided or x.is_contiguous() else "nc"
        except Exception:  # noqa: BLE001
            nc = ""
        lay = "" if x.layout == torch.strided else str(x.layout).rsplit(".", 1)[-1] + ":"
        return lay + "T" + "x".join(map(str, x.shape)) + nc
    if isinstance(x, (list, tuple)) and depth < 2:
        return "[" + ",".join(_describe(y, depth + 1) for y in list(x)[:6]) + (",..." if len(x) > 6 else "") + "]"
    s = repr(x)
    return s if len(s) <= 24 else s[:21] + "..."


def describe_sample(s) -> str:
    parts = [_describe(s.input)] + [_describe(a) for a in s.args] + [f"{k}={_describe(v)}" for k, v in s.kwargs.items()]
    d = "(" + ", ".join(parts) + ")"
    return d if len(d) <= 200 else d[:197] + "..."


def _short_err(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return s if len(s) <= 240 else s[:237] + "..."


def _poisoned(e: BaseException) -> bool:
    t = str(e)
    return any(w in t for w in ("device-side assert", "illegal memory access", "CUDA error: unspecified launch",
                                "misaligned address", "an illegal instruction", "CUBLAS_STATUS_EXECUTION_FAILED"))


def make_dispatch_logger():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Logger(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.log: list[list] = []
            self.depth = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            try:
                name = func._schema.name
                ov = func._overloadname
            except Exception:
                name, ov = str(func), ""
            self.log.append([name + ("" if ov in ("", "default") else "." + ov), self.depth])
            self.depth += 1
            try:
                return func(*args, **(kwargs or {}))
            finally:
                self.depth -= 1

    return Logger


def profiler_config():
    """(experimental_config or None, whether overload names are captured)."""
    try:
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(capture_overload_names=True), True
    except Exception:
        return None, False


def event_rows(prof, names: dict[str, int], t0: int) -> list[list]:
    """Raw kineto events as rows: [act, name_idx, overload, start, end, tid, corr, linked, ext, device].
    Times in ns relative to t0."""
    def get(e, attr, default=None):
        try:
            return getattr(e, attr)()
        except Exception:  # noqa: BLE001 — an accessor this torch lacks
            return default

    rows = []
    for e in prof.profiler.kineto_results.events():
        act = str(get(e, "activity_type", "?"))
        if act == "python_function":
            continue
        n = e.name()
        idx = names.setdefault(n, len(names))
        dev = str(get(e, "device_type", "?")).rsplit(".", 1)[-1]
        rows.append([act, idx, get(e, "overload_name"), e.start_ns() - t0, e.end_ns() - t0,
                     get(e, "start_thread_id", 0), get(e, "correlation_id", 0), get(e, "linked_correlation_id", 0),
                     get(e, "external_id", 0), dev])
        if len(rows) >= MAX_EVENTS_PER_OP:
            break
    return rows


def split_pass(name: str) -> tuple[str, bool]:
    """``float32+backward`` -> ("float32", True): a pass's dtype and whether it runs the backward."""
    dtype, _, mode = name.partition("+")
    return dtype, mode == "backward"


def call_op(op, s, backward: bool):
    """One sample through the op; with ``backward``, then through autograd (each output that needs a
    gradient gets ones: the backward pass's kernels run under the profile too)."""
    import torch

    out = op(s.input, *s.args, **s.kwargs)
    if backward:
        outs = [t for t in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None]
        if outs:
            torch.autograd.backward(outs, [torch.ones_like(t) for t in outs])
    return out


def run_op(op, dtype, n_samples: int, cfg, debug_dir: Path | None, device: str = "cuda",
           backward: bool = False) -> dict:
    import itertools

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    key = op_key(op)
    rec: dict = {"key": key, "dtype": str(dtype).removeprefix("torch."), "samples": []}
    torch.manual_seed(0)
    try:
        samples = list(itertools.islice(op.sample_inputs(device, dtype, requires_grad=backward), n_samples))
    except Exception as e:  # noqa: BLE001 — one OpInfo's failure is data, not a crash
        rec["error"] = "sample_inputs: " + _short_err(e)
        if _poisoned(e):
            rec["poisoned"] = True
        return rec
    Logger = make_dispatch_logger()
    runnable = []
    for i, s in enumerate(samples):
        srec = {"n": i, "desc": describe_sample(s)}
        rec["samples"].append(srec)
        try:
            call_op(op, s, backward)  # warm-up: lazy inits (handles, plans, workspaces) outside the profile
            _sync()
        except Exception as e:  # noqa: BLE001
            srec["err"] = "warm-up: " + _short_err(e)
            if _poisoned(e):
                rec["poisoned"] = True
                return rec
            continue
        try:
            m = Logger()
            with m:
                call_op(op, s, backward)
            _sync()
            srec["disp"] = m.log[:2000]
        except Exception as e:  # noqa: BLE001
            srec["disp_err"] = _short_err(e)
            if _poisoned(e):
                rec["poisoned"] = True
                return rec
        runnable.append((i, s))
    if not runnable:
        if samples and all("err" in s for s in rec["samples"]):
            rec["error"] = rec["samples"][0]["err"]
        elif not samples:
            rec["error"] = "no sample inputs"
        return rec
    kw = {"experimental_config": cfg} if cfg is not None else {}
    t0 = time.perf_counter_ns()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts, **kw) as prof:
        for i, s in runnable:
            with record_function(f"{MARKER}{i}"):
                try:
                    call_op(op, s, backward)
                except Exception as e:  # noqa: BLE001
                    rec["samples"][i]["err"] = "profiled: " + _short_err(e)
        _sync()
    rec["profile_ms"] = round((time.perf_counter_ns() - t0) / 1e6, 1)
    names: dict[str, int] = {}
    try:
        t_base = prof.profiler.kineto_results.trace_start_ns()
    except Exception:
        t_base = 0
    rec["events"] = event_rows(prof, names, t_base)
    rec["names"] = list(names)
    if debug_dir is not None and key in DEBUG_OPS and rec["dtype"] == "float32":
        try:
            debug_dir.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(debug_dir / f"{key}.json"))
        except Exception as e:  # noqa: BLE001
            log(f"chrome export {key}: {_short_err(e)}")
    return rec


def worker(a) -> int:
    import torch

    name, backward = split_pass(a.dtype)
    dtype = getattr(torch, name)
    ops = cuda_ops(dtype, a.device, backward)
    if a.only:
        wanted = set(a.only.split(","))
        ops = [o for o in ops if op_key(o) in wanted or o.name in wanted]
    cfg, captured = profiler_config()
    skip = set(a.skip.split(",")) if a.skip else set()
    debug_dir = Path(a.debug_dir) if a.debug_dir else None
    signal.signal(signal.SIGALRM, _alarm)
    with open(a.raw, "a") as out:
        if a.start == 0:
            out.write(json.dumps({"pass": a.dtype, "ops_total": len(ops), "overloads_captured": captured}) + "\n")
        for idx in range(a.start, len(ops)):
            op = ops[idx]
            key = op_key(op)
            if time.time() > a.deadline:
                return EXIT_BUDGET
            rec: dict
            if key in skip:
                rec = {"key": key, "dtype": a.dtype, "samples": [], "error": "skipped (--skip)"}
            else:
                left = a.deadline - time.time()
                signal.setitimer(signal.ITIMER_REAL, max(1.0, min(a.op_timeout, left)))
                t = time.time()
                try:
                    rec = run_op(op, dtype, a.samples, cfg, debug_dir, a.device, backward)
                except OpTimeout:
                    rec = {"key": key, "dtype": a.dtype, "samples": [], "error": f"timeout after {a.op_timeout}s"}
                except Exception as e:  # noqa: BLE001
                    rec = {"key": key, "dtype": a.dtype, "samples": [], "error": "recorder: " + _short_err(e),
                           "poisoned": _poisoned(e)}
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                rec["secs"] = round(time.time() - t, 2)
            rec["i"] = idx
            rec["pass"] = a.dtype
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
            out.flush()
            if rec.get("poisoned"):
                return EXIT_POISONED
            try:
                _sync()
            except Exception:  # noqa: BLE001
                return EXIT_POISONED
    return EXIT_DONE


# =====================================================================================================
# Driver (GPU machine)
# =====================================================================================================

def _last_index(raw: Path, dtype: str) -> int:
    last = -1
    if raw.exists():
        for line in raw.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("pass") == dtype and "i" in d:
                last = max(last, d["i"])
    return last


def record(a) -> int:
    import torch

    start = time.time()
    deadline = start + a.budget
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = Path(a.work or "/tmp/oracle_work") / RAW_NAME
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.unlink(missing_ok=True)
    meta = {
        "torch": torch.__version__, "git": getattr(torch.version, "git_version", None),
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))) if torch.cuda.is_available() else None,
        "recorded": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": sys.version.split()[0],
        "settings": {"samples": a.samples, "op_timeout_s": a.op_timeout, "budget_s": a.budget,
                     "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                     "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32},
        "passes": [],
    }
    try:
        meta["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001
        meta["driver"] = None
    if a.device == "cuda" and not torch.cuda.is_available():
        log("oracle_record: no CUDA device")
        return 2
    restarts = 0
    for dtype in a.dtypes.split(","):
        p = {"dtype": dtype, "complete": False, "worker_exits": []}
        meta["passes"].append(p)
        nxt = 0
        while time.time() < deadline - 5:
            cmd = [sys.executable, __file__, "_worker", "--raw", str(raw), "--dtype", dtype, "--start", str(nxt),
                   "--deadline", str(deadline - 5), "--samples", str(a.samples), "--op-timeout", str(a.op_timeout)]
            if a.only:
                cmd += ["--only", a.only]
            if a.skip:
                cmd += ["--skip", a.skip]
            if a.debug_dir:
                cmd += ["--debug-dir", a.debug_dir]
            cmd += ["--device", a.device]
            log(f"[{time.time() - start:6.1f}s] worker {dtype} from op #{nxt}")
            try:
                rc = subprocess.run(cmd, timeout=max(10, deadline - time.time() + 30)).returncode
            except subprocess.TimeoutExpired:
                rc = -999
            last = _last_index(raw, dtype)
            p["worker_exits"].append(rc)
            if rc == EXIT_DONE:
                p["complete"] = True
                break
            if rc == EXIT_BUDGET or rc == -999:
                break
            # crashed or poisoned: mark the op after the last written one when it has no line
            if rc != EXIT_POISONED:
                with open(raw, "a") as f:
                    f.write(json.dumps({"i": last + 1, "pass": dtype, "key": None, "samples": [],
                                        "error": f"worker died (rc {rc}) in this op"}) + "\n")
                last += 1
            nxt = last + 1
            restarts += 1
            if restarts > a.max_restarts:
                log("too many worker restarts; stopping")
                break
        p["ops_done"] = _last_index(raw, dtype) + 1
        if time.time() >= deadline - 5:
            break
    meta["wall_s"] = round(time.time() - start, 1)
    (out / META_NAME).write_text(json.dumps(meta, indent=1, sort_keys=True))
    gz = out / (RAW_NAME + ".gz")
    with open(raw, "rb") as f, gzip.open(gz, "wb", compresslevel=9) as g:
        g.write(f.read())
    oracle = build_oracle(read_raw(gz), meta)
    write_oracle(oracle, out / ORACLE_NAME)
    log(f"done in {meta['wall_s']} s: {summary(oracle)}")
    return 0


# =====================================================================================================
# Attribution (anywhere; no torch)
# =====================================================================================================

def read_raw(path: Path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    out = []
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a torn last line of a killed worker
    return out


def fmt_op(name: str, overload: str | None) -> str:
    base = name.removeprefix("aten::")
    return base if overload in (None, "", "default") else f"{base}.{overload}"


def gpu_kind(act: str, name: str) -> str:
    if act == "gpu_memcpy" or name.startswith("Memcpy"):
        return "memcpy"
    if act == "gpu_memset" or name.startswith("Memset"):
        return "memset"
    return "kernel"


class Ev:
    __slots__ = ("act", "name", "ov", "start", "end", "tid", "corr", "linked", "ext", "dev", "i", "cls")

    def __init__(self, row, names, i):
        self.act, ni, self.ov, self.start, self.end, self.tid, self.corr, self.linked, self.ext, self.dev = row
        self.name = names[ni]
        self.i = i
        self.cls = classify(self)


_API_RE = re.compile(r"\A(?:cuda|cu)[A-Z]\w*\Z")


def classify(e: Ev) -> str:
    """'op' | 'marker' | 'launch' | 'gpu' | 'gpu_marker' | 'other'. torch 2.11's _KinetoEvent has no
    activity_type(), so the recorded rows of that version carry '?' and the class is read from the
    device and the name: CPU rows named like a CUDA API call are runtime/driver calls, rows with a
    namespace are ops; CUDA rows are GPU activities except the mirrors of the sample markers."""
    if e.dev == "CPU":
        if e.name.startswith(MARKER):
            return "marker"
        if e.act in LAUNCH_ACTS or (e.act == "?" and _API_RE.match(e.name)):
            return "launch"
        if e.act in ("cpu_op", "?") and "::" in e.name:
            return "op"
        return "other"
    if e.name.startswith(MARKER) or e.act in ("gpu_user_annotation",):
        return "gpu_marker"
    if e.act in GPU_ACTS or e.act == "?":
        return "gpu"
    return "other"


def _is_op(e: Ev) -> bool:
    return e.cls == "op"


def attribute_op(rec: dict, captured: bool, stats: Counter) -> list[dict]:
    """Per GPU activity of one OpInfo record: {kind, kernel, op, top, stack, sample, via}."""
    names = rec.get("names") or []
    evs = [Ev(r, names, i) for i, r in enumerate(rec.get("events") or [])]
    cpu = [e for e in evs if e.dev == "CPU"]
    ops = [e for e in cpu if _is_op(e)]
    markers = [e for e in cpu if e.cls == "marker"]
    launches = [e for e in cpu if e.cls == "launch"]
    gpu = [e for e in evs if e.cls == "gpu"]
    for e in evs:
        if e.dev != "CPU" and e.cls == "other":
            stats[f"device_event_ignored:{e.act}"] += 1
    # enclosing op stacks of every launch call, and of every op (for the kineto link), per thread
    stack_of: dict[int, list[Ev]] = {}
    by_tid: dict[int, list[Ev]] = defaultdict(list)
    for e in ops + launches + markers:
        by_tid[e.tid].append(e)
    for tid, lst in by_tid.items():
        # ops before launches at equal start so an op starting with its launch still encloses it
        lst.sort(key=lambda e: (e.start, 0 if e.cls == "marker" else 1 if _is_op(e) else 2, -e.end))
        open_: list[Ev] = []
        for e in lst:
            while open_ and open_[-1].end < e.start:
                open_.pop()
            stack_of[e.i] = list(open_)
            if e.cls == "marker" or _is_op(e):
                open_.append(e)
    launch_by_corr = {e.corr: e for e in launches if e.corr}
    op_by_corr = {e.corr: e for e in ops if e.corr}
    # overloads: profiler's own, else the dispatch-mode log in call order per sample
    disp_ov: dict[int, str] = {}
    if not captured:
        for s in rec.get("samples", []):
            m = next((x for x in markers if x.name == f"{MARKER}{s['n']}"), None)
            if m is None:
                continue
            inside = sorted((o for o in ops if o.tid == m.tid and m.start <= o.start <= m.end), key=lambda o: o.start)
            log_ = list(s.get("disp") or [])
            j = 0
            for o in inside:
                for k in range(j, len(log_)):
                    full = log_[k][0]
                    if full.split(".", 1)[0] == o.name:
                        disp_ov[o.i] = full.split(".", 1)[1] if "." in full else ""
                        j = k + 1
                        break

    def name_of(o: Ev) -> tuple[str, bool]:
        if captured:
            return fmt_op(o.name, o.ov), False
        if o.i in disp_ov:
            return fmt_op(o.name, disp_ov[o.i]), False
        return fmt_op(o.name, None), True

    out = []
    for g in gpu:
        via = None
        mk: list[Ev] = []
        stack: list[Ev] | None = None
        l = launch_by_corr.get(g.corr)
        if l is not None:
            stack = [e for e in stack_of.get(l.i, []) if _is_op(e)]
            via = "launch"
            mk = [e for e in stack_of.get(l.i, []) if e.cls == "marker"]
        link = op_by_corr.get(g.linked) or op_by_corr.get(g.ext) if (g.linked or g.ext) else None
        if stack is not None and stack and link is not None:
            stats["launch_and_link_agree" if link is stack[-1] else "launch_and_link_disagree"] += 1
            if link is not stack[-1] and len(DISAGREE) < 40:
                DISAGREE.append({"opinfo": rec.get("key"), "kernel": g.name[:160], "launch_innermost": stack[-1].name,
                                 "link": link.name})
        if (stack is None or not stack) and link is not None:
            stack = [e for e in stack_of.get(link.i, []) if _is_op(e)] + [link]
            via = "kineto_link"
            mk = [e for e in stack_of.get(link.i, []) + [link] if e.cls == "marker"]
        if stack is None:
            stats["no_launch_no_link"] += 1
            mk = []
        sample = None
        if mk:
            try:
                sample = int(mk[-1].name[len(MARKER):])
            except ValueError:
                sample = None
        entry = {"kind": gpu_kind(g.act, g.name), "kernel": g.name, "sample": sample, "via": via,
                 "op": None, "top": None, "stack": [], "unresolved": False}
        if stack:
            labels = [name_of(o) for o in stack]
            entry["stack"] = [x for x, _ in labels]
            entry["op"], unres_op = labels[-1]
            entry["top"], unres_top = labels[0]
            entry["unresolved"] = unres_op or unres_top
        stats[f"via_{via}"] += 1
        out.append(entry)
    return out


def build_oracle(records: list[dict], meta: dict) -> dict:
    heads = {r["pass"]: r for r in records if "ops_total" in r}
    stats: Counter = Counter()
    ops_main: dict[str, dict] = {}
    ops_extra: dict[str, dict[str, dict]] = defaultdict(dict)
    pairs: dict[tuple, dict] = {}
    kernels_seen: set[str] = set()
    n_samples = Counter()
    passes = []
    for p in meta.get("passes", []):
        h = heads.get(p["dtype"], {})
        passes.append({"dtype": p["dtype"], "ops_total": h.get("ops_total"), "ops_done": p.get("ops_done"),
                       "complete": p.get("complete"), "overloads_captured": h.get("overloads_captured"),
                       "worker_exits": p.get("worker_exits")})
    first = passes[0]["dtype"] if passes else "float32"
    for r in records:
        if "ops_total" in r:
            continue
        dtype = r.get("pass") or r.get("dtype")
        key = r.get("key") or f"<op #{r.get('i')}>"
        ok = [s for s in r.get("samples", []) if "err" not in s and "events" in r]
        entry: dict = {"samples": len(ok)}
        err = r.get("error") or next((s["err"] for s in r.get("samples", []) if "err" in s), None)
        if err:
            entry["error"] = err
        (ops_main.__setitem__(key, entry) if dtype == first else ops_extra[dtype].__setitem__(key, entry))
        n_samples[dtype] += len(ok)
        if "events" not in r:
            continue
        captured = bool(heads.get(dtype, {}).get("overloads_captured"))
        bad = {s["n"] for s in r.get("samples", []) if "err" in s}
        for a in attribute_op(r, captured, stats):
            if a["sample"] in bad:
                continue  # a failed profiled run: its partial launches are not the op's behaviour
            stats[f"gpu_{a['kind']}"] += 1
            if a["op"] is None:
                stats["unattributed"] += 1
            kernels_seen.add(a["kernel"])
            k = (a["op"], a["kernel"], a["top"], dtype)
            pr = pairs.get(k)
            if pr is None:
                pr = pairs[k] = {"op": a["op"], "kernel": a["kernel"], "top": a["top"], "opinfo": key,
                                 "dtype": dtype, "count": 0}
                if a["kind"] != "kernel":
                    pr["kind"] = a["kind"]
                if a["unresolved"]:
                    pr["overload_unresolved"] = True
                if a["via"] != "launch":
                    pr["via"] = a["via"]
                if len(a["stack"]) > 2:
                    pr["stack"] = a["stack"]
            pr["count"] += 1
    plist = sorted(pairs.values(), key=lambda p: (p["op"] or "", p["kernel"], p["top"] or "", p["dtype"]))
    return {
        "torch": meta.get("torch"), "torch_git": meta.get("git"), "cuda": meta.get("cuda"), "cudnn": meta.get("cudnn"),
        "device": meta.get("device"), "capability": meta.get("capability"), "driver": meta.get("driver"),
        "recorded": meta.get("recorded"), "settings": meta.get("settings"), "dtype_passes": passes,
        "ops": ops_main, "ops_extra": dict(ops_extra),
        "counts": {"ops": len(ops_main), "ops_with_pairs": len({p["opinfo"] for p in plist}),
                   "samples": dict(n_samples), "pairs": len(plist), "distinct_kernels": len(kernels_seen),
                   "pairs_op_null": sum(1 for p in plist if p["op"] is None)},
        "attribution": dict(sorted(stats.items())), "attribution_disagreements": DISAGREE[:40],
        "pairs": plist,
    }


def write_oracle(oracle: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(oracle, sort_keys=True, separators=(",", ":")))


def summary(o: dict) -> str:
    return json.dumps(o["counts"]) + " " + json.dumps(o["attribution"])


def build(a) -> int:
    meta = json.loads(Path(a.meta).read_text())
    oracle = build_oracle(read_raw(Path(a.raw)), meta)
    write_oracle(oracle, Path(a.out))
    log(f"{a.out}: {Path(a.out).stat().st_size} bytes; {summary(oracle)}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--out", required=True)
    r.add_argument("--work")
    r.add_argument("--budget", type=float, default=420)
    r.add_argument("--dtypes", default="float32")
    r.add_argument("--samples", type=int, default=2)
    r.add_argument("--op-timeout", type=float, default=20)
    r.add_argument("--only")
    r.add_argument("--skip")
    r.add_argument("--debug-dir")
    r.add_argument("--max-restarts", type=int, default=12)
    r.add_argument("--device", default="cuda", help="cpu: a dry run of the recorder where no GPU is")
    w = sub.add_parser("_worker")
    w.add_argument("--raw", required=True)
    w.add_argument("--dtype", required=True)
    w.add_argument("--start", type=int, default=0)
    w.add_argument("--deadline", type=float, required=True)
    w.add_argument("--samples", type=int, default=2)
    w.add_argument("--op-timeout", type=float, default=20)
    w.add_argument("--only")
    w.add_argument("--skip")
    w.add_argument("--debug-dir")
    w.add_argument("--device", default="cuda")
    b = sub.add_parser("build")
    b.add_argument("--raw", required=True)
    b.add_argument("--meta", required=True)
    b.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "record":
        return record(a)
    if a.cmd == "_worker":
        return worker(a)
    return build(a)


if __name__ == "__main__":
    sys.exit(main())
