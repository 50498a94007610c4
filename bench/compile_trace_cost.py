"""What ``atenmap trace`` costs on a torch.compile'd script: wall time and peak RSS of

- ``plain``:    the script under ``python`` (compiled, no trace);
- ``eager``:    ``atenmap trace`` with ``TORCH_COMPILE_DISABLE=1`` (the same script uncompiled);
- ``compiled``: ``atenmap trace`` on the compiled script (issue 22: the compilation must not be recorded).

    python bench/compile_trace_cost.py [SCRIPT] [--cap-mb 6000] [--runs compiled,eager,plain]

Each run is a fresh process with a fresh TORCHINDUCTOR_CACHE_DIR (so every compiled run compiles),
the private ATENMAP_CACHE the environment names, and the bundled index unless ``--source``. Peak
RSS is the child's VmHWM, polled; a run over ``--cap-mb`` is stopped and reported as such (the
pre-fix recorder reached 10 GB on the 2-core machine). The default script is a compiled
pointwise+relu, mm and softmax (``bench/compile_trace_demo.py``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(cmd: list[str], env: dict, cap_mb: int) -> dict:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, capped = 0, False
    while p.poll() is None:
        peak = max(peak, _hwm_kib(p.pid))
        if peak > cap_mb * 1024:
            capped = True
            p.kill()
            break
        time.sleep(0.05)
    out = p.communicate()[0]
    return {"s": time.perf_counter() - t0, "rss_mb": peak / 1024, "rc": p.returncode, "capped": capped,
            "tail": out.strip().splitlines()[-3:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("script", nargs="?", default=str(HERE / "compile_trace_demo.py"))
    ap.add_argument("--cap-mb", type=int, default=6000)
    ap.add_argument("--runs", default="plain,eager,compiled")
    ap.add_argument("--source", default=None)
    a = ap.parse_args()
    py = sys.executable
    trace = [py, "-m", "atenmap", "trace"] + (["--source", a.source] if a.source else []) + ["--", a.script]
    results = {}
    for name in a.runs.split(","):
        with tempfile.TemporaryDirectory(prefix="amc-bench-") as tmp:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"),
                       PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
            env.pop("TORCH_COMPILE_DISABLE", None)
            if name == "eager":
                env["TORCH_COMPILE_DISABLE"] = "1"
            cmd = [py, a.script] if name == "plain" else trace
            results[name] = r = measure(cmd, env, a.cap_mb)
            flag = " STOPPED at the cap" if r["capped"] else ""
            print(f"{name:9s} {r['s']:7.1f} s  peak RSS {r['rss_mb']:7.0f} MB  rc={r['rc']}{flag}", flush=True)
    if "compiled" in results and "eager" in results:
        c, e = results["compiled"], results["eager"]
        print(f"compiled/eager trace: time x{c['s'] / e['s']:.2f}, peak RSS x{c['rss_mb'] / e['rss_mb']:.2f}")
    if "compiled" in results and "plain" in results:
        c, p = results["compiled"], results["plain"]
        print(f"compiled trace/plain compiled run: time x{c['s'] / p['s']:.2f}, peak RSS x{c['rss_mb'] / p['rss_mb']:.2f}")


if __name__ == "__main__":
    main()
