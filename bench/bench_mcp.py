"""Bench: a warm tool call of `atenmap mcp`, end to end, against the same work done in-process.

    .venv/bin/python bench/bench_mcp.py [--source TREE] [--calls 20]

Starts the real server (`python -m atenmap mcp --source TREE`) with the MCP SDK's stdio client,
calls every tool once to warm it (index open, kernel-name index, decoded operators), then times
``--calls`` calls of each tool as the client sees them (request written to the server's stdin ->
result parsed from its stdout: JSON-RPC, argument validation, the per-call freshness proof, the
verb, the JSON). In the same run, as baselines:
  in-process  the same answer (cli/mcp_answers.py) on an open Index in this process, warm: what the
              protocol and the freshness check add is the difference;
  cli         `atenmap OP --json` as a fresh process, the call an agent without the server makes.
The server's CPU time per call (from /proc) is printed too: on a loaded machine the wall times grow
with the load, the CPU time does not. Target from the issue: a warm tool call <= 150 ms. The index must exist or is built first (outside
any timed region).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
CALLS = [
    ("chain", {"op": "add.out", "key": "CUDA"}),
    ("chain", {"op": "mul.Tensor"}),
    ("kernel", {"name": ADD}),
    ("where", {"file": "aten/src/ATen/native/cuda/Loops.cuh", "function": "gpu_kernel"}),
    ("search", {"pattern": "softmax", "key": "CUDA"}),
    ("ops", {"key": "CUDA"}),
    ("explain_trace", {"path": str(REPO / "fixtures" / "trace" / "h200_kineto_small.json")}),
]


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs) * 1000:6.1f} ms  p90 {xs[int(len(xs) * 0.9) - 1] * 1000:6.1f} ms"


def _children() -> set[int]:
    out = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def _cpu(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads), in seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _served(tree: str, n: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: os.environ[k] for k in ("ATENMAP_CACHE", "XDG_CACHE_HOME") if k in os.environ}
    params = StdioServerParameters(command=sys.executable, args=["-m", "atenmap", "mcp", "--source", tree],
                                   env={**env, "PYTHONPATH": str(REPO / "src")})
    times: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}  # the server's CPU seconds per call: what the wall time is on an idle machine
    before = _children()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            server = max(_children() - before)
            for name, args in CALLS:  # warm-up
                res = await s.call_tool(name, args)
                assert not res.is_error, res.content[0].text
            for name, args in CALLS:
                label = f"{name} {next(iter(args.values()))[:24]}"
                c0 = _cpu(server)
                for _ in range(n):
                    t = time.perf_counter()
                    await s.call_tool(name, args)
                    times.setdefault(label, []).append(time.perf_counter() - t)
                cpu[label] = (_cpu(server) - c0) / n
    return times, cpu


def _in_process(tree: str, n: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    from atenmap.api import Index
    from atenmap.cli import mcp_answers as a

    fns = {"chain": a.chain_answer, "kernel": a.kernel_answer, "where": lambda ix, **k: a.where_answer(ix, **k),
           "search": a.search_answer, "ops": a.ops_answer, "explain_trace": a.trace_answer}
    times: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    with Index.open(tree) as ix:
        for name, args in CALLS:
            fns[name](ix, **args)
        for name, args in CALLS:
            label = f"{name} {next(iter(args.values()))[:24]}"
            c0 = time.process_time()
            for _ in range(n):
                t = time.perf_counter()
                fns[name](ix, **args)
                times.setdefault(label, []).append(time.perf_counter() - t)
            cpu[label] = (time.process_time() - c0) / n
    return times, cpu


def _cli(tree: str, n: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "atenmap", "add.out", "--key", "CUDA", "--json", "-s", tree],
                       check=True, capture_output=True, env=env)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    import anyio

    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.expanduser("~/.cache/atenmap/test-trees/pytorch-2.6.0"))
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    subprocess.run([sys.executable, "-m", "atenmap", "index", "-s", args.source], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    served, server_cpu = anyio.run(_served, args.source, args.calls)
    local, local_cpu = _in_process(args.source, args.calls)
    cli = _cli(args.source, max(3, args.calls // 4))
    print(f"tree: {args.source}; {args.calls} warm calls per tool; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"{'call':<26} {'MCP call, end to end (wall)':<36} {'CPU/call: server':>16} {'in-process':>11} "
          f"{'overhead':>9}   in-process answer (wall)")
    for k in served:
        over = server_cpu[k] - local_cpu[k]
        print(f"{k[:26]:<26} {_ms(served[k]):<36} {server_cpu[k] * 1000:13.1f} ms {local_cpu[k] * 1000:8.1f} ms "
              f"{over * 1000:+6.1f} ms   {_ms(local[k])}")
    every = [x for v in served.values() for x in v]
    print(f"all warm MCP calls (wall): {_ms(every)}; max {max(every) * 1000:.1f} ms (target <= 150 ms)")
    print(f"server CPU per call, all tools: max {max(server_cpu.values()) * 1000:.1f} ms")
    print(f"baseline, `atenmap add.out --key CUDA --json` as a new process (wall): {_ms(cli)}")

if __name__ == "__main__":
    main()
