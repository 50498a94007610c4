"""A real client exchange with `atenmap mcp`, written as the wire transcript in docs/agents.md.

    python docs/examples/mcp_session.py TREE > docs/examples/mcp_session_2.6.0.txt

The client is the MCP Python SDK's own (``stdio_client`` + ``ClientSession``). It starts the
server through this same file in ``--relay`` mode, which passes every line between the two
unchanged and logs it in order, so the transcript is the bytes that crossed the pipes (pretty-
printed, with long lists cut: each cut says how many entries it left out).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
KEEP = 3  # entries of a long list the transcript keeps


def relay(log_path: str, command: list[str]) -> int:
    """Run ``command``, passing stdin and stdout through line by line and logging both directions."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    log = open(log_path, "w")

    def note(who: str, line: bytes) -> None:
        with lock:
            log.write(f"{who} {line.decode().rstrip()}\n")
            log.flush()

    def to_server() -> None:
        for line in sys.stdin.buffer:
            note("client", line)
            proc.stdin.write(line)
            proc.stdin.flush()
        proc.stdin.close()

    threading.Thread(target=to_server, daemon=True).start()
    for line in proc.stdout:
        note("server", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return proc.wait()


def _cut(v, depth=0):
    if isinstance(v, list):
        kept = [_cut(x, depth + 1) for x in v[:KEEP]]
        return kept + [f"… {len(v) - KEEP} more"] if len(v) > KEEP else kept
    if isinstance(v, dict):
        if depth >= 4 and "children" in v:  # deep chain steps: their place, not their subtree
            n = len(v["children"])
            return {k: v[k] for k in ("role", "symbol", "file", "line")} | {"children": f"… {n} cut" if n else []}
        return {k: _cut(x, depth + 1) for k, x in v.items()}
    if isinstance(v, str) and len(v) > 2000:
        return v[:2000] + f"… ({len(v) - 2000} more characters)"
    return v


async def session(tree: str, log_path: str) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: os.environ[k] for k in ("ATENMAP_CACHE", "PYTHONPATH") if k in os.environ}
    server = [sys.executable, "-m", "atenmap", "mcp", "--source", tree]
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--relay", log_path, "--", *server], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.list_tools()
            await s.call_tool("chain", {"op": "add.out", "key": "CUDA"})
            await s.call_tool("kernel", {"name": ADD, "limit": 5})
            await s.call_tool("chain", {"op": "add.ot"})


def main() -> None:
    if sys.argv[1:2] == ["--relay"]:
        sys.exit(relay(sys.argv[2], sys.argv[4:]))
    import tempfile

    import anyio

    tree = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "wire.log")
        anyio.run(session, tree, log)
        lines = Path(log).read_text().splitlines()
    for line in lines:
        who, _, text = line.partition(" ")
        msg = json.loads(text)
        arrow = "client → server" if who == "client" else "server → client"
        print(f"--- {arrow}")
        print(json.dumps(_cut(msg), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
