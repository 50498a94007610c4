"""`atenmap mcp`: the real server started as a subprocess, spoken to with the MCP SDK's own stdio
client. Each tool's structured content is compared with what the CLI's --json prints for the
same question on the same index (the subprocess gets the test's private ATENMAP_CACHE)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import FIXTURE_TREE, REPO, cli_run

TOOLS = {"chain", "kernel", "where", "search", "ops", "explain_trace", "compile"}
ADDED = ("runs", "steps", "notes", "other_keys")  # what chain adds to the CLI's --json
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
       "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
KINETO = REPO / "fixtures" / "trace" / "h200_kineto_small.json"


def _env(cache) -> dict[str, str]:
    # the suite consents to torchgen (conftest.py); the server gets only what is passed here
    return {"ATENMAP_CACHE": str(cache), "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1", "ATENMAP_CODEGEN": "always"}


def _command(tree, *extra) -> list[str]:
    return ["-m", "atenmap", "mcp", "--source", str(tree), *extra]


@asynccontextmanager
async def served(tree, cache, errlog):
    params = StdioServerParameters(command=sys.executable, args=_command(tree), env=_env(cache))
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def talk(tree, cache, tmp_path, body):
    """Run ``body(session)`` against a fresh server; returns its result and the server's stderr."""
    errfile = tmp_path / "server-stderr.txt"
    out = {}

    async def main():
        with open(errfile, "w") as errlog:
            async with served(tree, cache, errlog) as session:
                out["result"] = await body(session)

    anyio.run(main)
    return out["result"], errfile.read_text()


def _ok(res) -> dict:
    assert not res.is_error, res.content[0].text
    return res.structured_content


def _cli_json(capsys, *args):
    code, out, err = cli_run(capsys, *args, errors_only=True)
    assert code == 0 and err == "", err
    return json.loads(out)


def _trace(tmp_path):
    trace = tmp_path / "trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "args": {"External id": 7}},
              {"ph": "X", "cat": "kernel", "name": MUL, "dur": 3, "args": {"External id": 7}},
              {"ph": "X", "cat": "kernel", "name": MUL, "dur": 3},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "dur": 1}]
    trace.write_text(json.dumps({"traceEvents": events}))
    return trace


# ---- the fixture tree --------------------------------------------------------------------------
def test_tools_are_listed_with_schemas(tmp_path):
    async def body(s):
        return (await s.list_tools()).tools

    tools, _ = talk(FIXTURE_TREE, os.environ["ATENMAP_CACHE"], tmp_path, body)
    assert {t.name for t in tools} == TOOLS
    by = {t.name: t for t in tools}
    assert by["chain"].input_schema["required"] == ["op"]
    assert set(by["chain"].input_schema["properties"]) == {"op", "key", "why", "backward", "dtype", "shape", "example",
                                                           "platform"}
    assert "platform" in by["kernel"].input_schema["properties"] and "platform" in by["explain_trace"].input_schema["properties"]
    assert "missing" in by["ops"].input_schema["properties"]
    assert by["ops"].input_schema["properties"]["limit"]["minimum"] == 0
    assert all(t.description and t.annotations.read_only_hint for t in tools)


def test_each_tool_answers_what_the_cli_prints(tmp_path, capsys):
    trace = _trace(tmp_path)

    async def body(s):
        return [await s.call_tool("chain", {"op": "mul.out", "key": "CUDA"}),
                await s.call_tool("kernel", {"name": MUL}),
                await s.call_tool("where", {"file": "aten/src/ATen/native/cuda/Loops.cuh", "function": "gpu_kernel"}),
                await s.call_tool("search", {"pattern": "mul", "key": "CUDA", "limit": 3}),
                await s.call_tool("ops", {"key": "CUDA", "limit": 2}),
                await s.call_tool("explain_trace", {"path": str(trace)}),
                await s.call_tool("chain", {"op": "mul.Tensor", "backward": True, "why": True})]

    (chain, kernel, where, search, ops, explained, bwd), err = talk(
        FIXTURE_TREE, os.environ["ATENMAP_CACHE"], tmp_path, body)
    src = ("-s", str(FIXTURE_TREE))
    c = _ok(chain)
    cli = _cli_json(capsys, "mul.out", "--key", "CUDA", "--json", *src)
    assert {k: v for k, v in c.items() if k not in ADDED} == {k: v for k, v in cli.items() if k != "runs"}
    assert c["runs"] == cli["runs"]  # the CLI's runs, moved first (no links on a local tree's answer)
    assert list(c)[:2] == ["op", "runs"] and c["runs"] and c["steps"] > len(c["runs"])
    launches = {(s["file"], s["line"]) for kc in c["keys"] for s in _walk(kc["steps"]) if s["role"] == "launch"}
    assert {(r["file"], r["line"]) for r in c["runs"] if r["role"] == "launch"} == launches
    assert all(r["key"] == "CUDA" and r["name"] for r in c["runs"])
    assert "runs (" in chain.content[0].text and "CUDALoops.cuh:" in chain.content[0].text
    k = _ok(kernel)
    cli_k = _cli_json(capsys, "kernel", MUL, "--json", *src)
    assert k == {**cli_k, "operators_total": len(cli_k["operators"])}
    first = k["operators"][0]
    assert first["op"].startswith("aten::mul") and first["key"] == "CUDA" and f"{first['op']} [CUDA]" in kernel.content[0].text
    assert _ok(where) == _cli_json(capsys, "where", "aten/src/ATen/native/cuda/Loops.cuh", "gpu_kernel", "--json", *src)
    assert _ok(search) == _cli_json(capsys, "search", "mul", "--key", "CUDA", "--limit", "3", "--json", *src)
    o = _ok(ops)
    cli_ops = _cli_json(capsys, "ops", "--key", "CUDA", "--json", *src)
    assert o == {"key": "CUDA", "total": len(cli_ops), "operators": cli_ops[:2]}
    assert ops.content[0].text.startswith(f"2 of {len(cli_ops)} operators shown")
    e = _ok(explained)
    assert e["kernels"] == _cli_json(capsys, "kernel", "--from-trace", str(trace), "--json", *src)
    assert (e["events"], e["total"], e["found"]) == (3, 2, 2)  # the memcpy too: cuda/Copy.cu calls cudaMemcpyAsync
    b = _ok(bwd)
    cli_b = _cli_json(capsys, "mul.Tensor", "--backward", "--why", "--json", *src)
    assert {k: v for k, v in b.items() if k not in ADDED + ("backward_runs",)} == {k: v for k, v in cli_b.items() if k != "runs"}
    assert b["runs"] == cli_b["runs"]
    assert "Traceback" not in err


def test_keys_and_platforms_as_the_cli_takes_them(tmp_path, capsys):
    """Issue 36: `platform` (chain, kernel, explain_trace), `missing` (ops) and the device keys answer
    what the CLI answers; a bad value is one tool error, the CLI's line."""
    trace = _trace(tmp_path)

    async def body(s):
        return [await s.call_tool("chain", {"op": "mul.out", "key": "CUDA", "platform": "rocm"}),
                await s.call_tool("kernel", {"name": "Cijk_Ailk_Bljk_SB_MT64x64x16_SN", "platform": "rocm"}),
                await s.call_tool("explain_trace", {"path": str(trace), "platform": "rocm"}),
                await s.call_tool("ops", {"key": "Meta", "missing": True, "limit": 3}),
                await s.call_tool("chain", {"op": "mul.out", "platform": "metal"}),
                await s.call_tool("kernel", {"name": MUL, "platform": "metal"}),
                await s.call_tool("ops", {"missing": True}),
                await s.call_tool("chain", {"op": "mul.out", "key": "XPU"}),
                await s.call_tool("chain", {"op": "mul.out", "key": "MPS"})]

    (chain, kernel, explained, missing, *bad), err = talk(FIXTURE_TREE, os.environ["ATENMAP_CACHE"], tmp_path, body)
    src = ("-s", str(FIXTURE_TREE))
    c = _ok(chain)
    cli = _cli_json(capsys, "mul.out", "--key", "CUDA", "--platform", "rocm", "--json", *src)
    assert {k: v for k, v in c.items() if k not in ADDED} == {k: v for k, v in cli.items() if k != "runs"}
    assert c["runs"] == cli["runs"]
    k = _ok(kernel)
    cli_k = _cli_json(capsys, "kernel", "Cijk_Ailk_Bljk_SB_MT64x64x16_SN", "--platform", "rocm", "--json", *src)
    assert k == {**cli_k, "operators_total": len(cli_k["operators"])}
    assert (k["library"], k["family"], k["dtype"]) == ("Tensile", "gemm", "float")
    assert "cublasSgemm (hipblasSgemm on ROCm)" in {c["symbol"] for c in k["library_calls"]}
    assert _ok(explained)["kernels"] == _cli_json(capsys, "kernel", "--from-trace", str(trace), "--platform", "rocm",
                                                  "--json", *src)
    m = _ok(missing)
    assert m == _cli_json(capsys, "ops", "--key", "Meta", "--missing", "--limit", "3", "--json", *src)
    assert all(r.is_error and r.content[0].text.count("\n") == 0 for r in bad)
    text = [r.content[0].text for r in bad]
    assert text[0] == text[1] == "--platform metal: no such platform; platforms: cuda, rocm"
    assert "needs a key" in text[2]
    assert "torch-xpu-ops" in text[3]
    code, _, cli_err = cli_run(capsys, "mul.out", "--key", "MPS", *src, errors_only=True)
    assert code == 1 and text[4] in cli_err
    for args in (("kernel", MUL), ("kernel", "--from-trace", str(trace), "--json")):
        code, out, cli_err = cli_run(capsys, *args, "--platform", "metal", *src, errors_only=True)
        assert code == 2 and out == "" and cli_err == "atenmap: error: --platform metal: no such platform; platforms: cuda, rocm\n"
    assert "Traceback" not in err


def _walk(steps):
    for s in steps:
        yield s
        yield from _walk(s["children"])


def test_errors_are_tool_errors_and_the_server_goes_on(tmp_path, capsys):
    async def body(s):
        out = [await s.call_tool("chain", {"op": "mul.ot"}),
               await s.call_tool("chain", {"op": 3}),
               await s.call_tool("where", {"file": "nope.cpp", "line": 3}),
               await s.call_tool("ops", {"key": "NoSuchKey"}),
               await s.call_tool("kernel", {"name": "void no_such_kernel_anywhere(int)"}),
               await s.call_tool("explain_trace", {"path": str(tmp_path / "missing.json")}),
               await s.call_tool("search", {"pattern": "mul", "limit": -1}),
               await s.call_tool("no_such_tool", {})]
        with anyio.move_on_after(0.005):  # a call the client gives up on mid-way
            await s.call_tool("chain", {"op": "mul.out", "backward": True, "why": True})
        out.append(await s.call_tool("chain", {"op": "mul.out", "key": "CUDA"}))
        return out

    results, err = talk(FIXTURE_TREE, os.environ["ATENMAP_CACHE"], tmp_path, body)
    *bad, good = results
    assert all(r.is_error for r in bad)
    text = [r.content[0].text for r in bad]
    code, _, cli_err = cli_run(capsys, "mul.ot", "-s", str(FIXTURE_TREE), errors_only=True)
    assert code == 1 and cli_err == f"atenmap: error: {text[0]}\n" and "did you mean mul.out" in text[0]
    assert "valid string" in text[1]
    assert "no indexed file" in text[2]
    assert "no operator has a kernel for key 'NoSuchKey'" in text[3]
    assert text[4].startswith("no kernel named 'no_such_kernel_anywhere'")
    assert "missing.json" in text[5]
    assert "greater than or equal to 0" in text[6]
    assert "no_such_tool" in text[7]
    assert _ok(good)["runs"]
    assert "Traceback" not in err


def test_a_client_that_disconnects_mid_call_ends_the_server_cleanly(tmp_path):
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "test", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "chain", "arguments": {"op": "mul.out", "backward": True, "why": True}}}]
    env = {**os.environ, **_env(os.environ["ATENMAP_CACHE"])}
    proc = subprocess.run([sys.executable, *_command(FIXTURE_TREE)], input="".join(json.dumps(m) + "\n" for m in msgs),
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    first = json.loads(proc.stdout.splitlines()[0])  # stdout holds protocol messages only
    assert first["id"] == 1 and first["result"]["serverInfo"]["name"] == "atenmap"


def test_the_index_is_refreshed_when_the_tree_changes(mini_tree, tmp_path):
    kernel_file = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"

    async def body(s):
        before = await s.call_tool("search", {"pattern": "mcp_fresh_probe"})
        kernel_file.write_text(kernel_file.read_text() + "\nvoid mcp_fresh_probe_fn(int x) {}\n")
        after = await s.call_tool("search", {"pattern": "mcp_fresh_probe"})
        return before, after

    (before, after), _ = talk(mini_tree, os.environ["ATENMAP_CACHE"], tmp_path, body)
    assert _ok(before)["total"] == 0
    hits = _ok(after)["hits"]
    assert [(h["name"], h["file"]) for h in hits] == [("mcp_fresh_probe_fn", "aten/src/ATen/native/cuda/BinaryMulKernel.cu")]


def test_the_tree_is_found_as_the_cli_finds_it(tmp_path):
    """No --source: $ATENMAP_SOURCE, else the checkout around the working directory, else (no tree at
    all) the bundled 2.6.0 index with GitHub permalinks: source/find.py's order."""
    async def ask(cwd, extra_env):
        params = StdioServerParameters(command=sys.executable, args=["-m", "atenmap", "mcp"], cwd=str(cwd),
                                       env={**_env(os.environ["ATENMAP_CACHE"]), **extra_env})
        with open(tmp_path / "stderr.txt", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return _ok(await s.call_tool("chain", {"op": "mul.out", "key": "CUDA"}))

    async def main():
        by_cwd = await ask(FIXTURE_TREE / "aten" / "src", {})
        other = tmp_path / "elsewhere"
        other.mkdir()
        by_env = await ask(other, {"ATENMAP_SOURCE": str(FIXTURE_TREE)})
        bundled = await ask(other, {})  # no tree anywhere (and none fetched into this cache)
        return by_cwd, by_env, bundled

    by_cwd, by_env, bundled = anyio.run(main)
    assert by_cwd["source"] == {**by_env["source"], "origin": "cwd"}
    assert by_env["source"]["origin"] == "env" and by_env["source"]["root"] == str(FIXTURE_TREE.resolve())
    assert by_cwd["runs"] == by_env["runs"] and by_cwd["runs"]
    assert bundled["source"]["origin"] == "bundled"
    assert {(r["file"], r["line"]) for r in bundled["runs"]} >= {("aten/src/ATen/native/cuda/CUDALoops.cuh", 158)}
    assert all(r["link"].startswith("https://github.com/pytorch/pytorch/blob/v2.6.0/aten/") for r in bundled["runs"])


def test_without_the_sdk_it_says_how_to_get_it():
    code = ("import sys; sys.modules['mcp'] = None; from atenmap.cli import main; "
            f"main(['mcp', '--source', {str(FIXTURE_TREE)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "atenmap: error: atenmap mcp needs the MCP Python SDK 2.x: pip install 'atenmap[mcp]'\n"


def test_a_bad_source_fails_before_serving():
    proc = subprocess.run([sys.executable, "-m", "atenmap", "mcp", "--source", "/nonexistent-tree"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("atenmap: error: --source /nonexistent-tree: not a PyTorch source tree")


# ---- the real 2.6.0 tree ------------------------------------------------------------------------
@pytest.mark.realtree
def test_tools_on_the_26_tree(real_index_26, shared_cache, tmp_path):
    tree = real_index_26.source.root

    async def body(s):
        return [await s.call_tool("chain", {"op": "add.out", "key": "CUDA"}),
                await s.call_tool("kernel", {"name": ADD}),
                await s.call_tool("where", {"file": "aten/src/ATen/native/cuda/Loops.cuh", "function": "gpu_kernel",
                                            "limit": 5}),
                await s.call_tool("search", {"pattern": "softmax", "key": "CUDA", "limit": 5}),
                await s.call_tool("ops", {"key": "CUDA", "limit": 3}),
                await s.call_tool("explain_trace", {"path": str(KINETO)}),
                await s.call_tool("chain", {"op": "add.ot"}),
                await s.call_tool("chain", {"op": "mm.out", "key": "CUDA"}),
                await s.call_tool("compile", {"op": "mm"})]

    (chain, kernel, where, search, ops, explained, bad, mm, comp), err = talk(tree, shared_cache, tmp_path, body)
    c = _ok(comp)  # Inductor lowers mm with tuned_mm (torch/_inductor/kernel/mm.py), as `atenmap mm --compile` says
    assert ("lowering", "torch/_inductor/kernel/mm.py", "tuned_mm") in {(s["role"], s["file"], s["symbol"].split(".")[-1])
                                                                        for s in c["compile"]}
    runs = _ok(chain)["runs"]
    assert ("aten/src/ATen/native/cuda/CUDALoops.cuh", 158, "launch") in {(r["file"], r["line"], r["role"]) for r in runs}
    assert {r["name"] for r in runs if r["role"] == "launch"} >= {"vectorized_elementwise_kernel", "elementwise_kernel"}
    assert "aten/src/ATen/native/cuda/CUDALoops.cuh:158" in chain.content[0].text
    k = _ok(kernel)
    assert (k["definition"]["file"], k["definition"]["line"]) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 92)
    assert k["operators"][0]["op"].startswith("aten::add") and "CUDAFunctor_add" in kernel.content[0].text
    w = _ok(where)
    assert len(w["operators"]) == 5 and w["total"] > 300
    assert f"5 of {w['total']:,} operators shown" in where.content[0].text
    assert _ok(search)["total"] > 5 and len(_ok(search)["hits"]) == 5
    assert _ok(ops)["total"] > 1000
    e = _ok(explained)
    assert e["total"] == 10 and e["found"] >= 8
    assert bad.is_error and bad.content[0].text.startswith("unknown operator 'add.ot'; did you mean add.out")
    assert any(r["role"] == "library" for r in _ok(mm)["runs"])  # cuBLAS: mm's runs hold a library call
    assert "Traceback" not in err
