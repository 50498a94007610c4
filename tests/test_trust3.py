"""Issue 34 ("Trust III"), each fault with its original input: a hostile checkout's torchgen under
the MCP server and without a terminal, FIFOs, devices, symlinks and huge files where atenmap reads
an outside file, control characters in the server's text, `trace` in a forked child, leaked
temporary folders. Items 4 and 10 (trace joins, malformed trace events) are tested in
tests/test_trace_*.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import FIXTURE_TREE, REPO, cli_run

PAYLOAD = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def evil_tree(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture tree with a torchgen/__init__.py that writes a marker file when imported."""
    tree = tmp_path / "evil"
    shutil.copytree(FIXTURE_TREE, tree)
    marker = tmp_path / "PWNED"
    init = tree / "torchgen" / "__init__.py"
    init.write_text(PAYLOAD.format(marker=str(marker)) + init.read_text())
    return tree, marker


def _server_env(**extra) -> dict[str, str]:
    return {"ATENMAP_CACHE": os.environ["ATENMAP_CACHE"], "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1",
            "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", "/nonexistent"), **extra}


def ask_server(args: list[str], calls: list[tuple[str, dict]], *, cwd=None, env=None, errfile: Path):
    """Start `atenmap mcp ARGS`, make ``calls`` in turn, return their results."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "atenmap", "mcp", *args],
                                   cwd=str(cwd) if cwd else None, env=env or _server_env())
    out = []

    async def main():
        with open(errfile, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for name, arguments in calls:
                        with anyio.fail_after(120):
                            out.append(await s.call_tool(name, arguments))

    anyio.run(main)
    return out


# ---- item 1: a tree's code runs only with consent -------------------------------------------------
@pytest.fixture
def no_setting(monkeypatch, tmp_path):
    """No codegen setting anywhere (the suite's consent removed, no config file)."""
    monkeypatch.delenv("ATENMAP_CODEGEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("where", ["source", "cwd"])
def test_the_server_never_runs_a_checkouts_torchgen_by_default(tmp_path, no_setting, where):
    tree, marker = evil_tree(tmp_path)
    args = ["--source", str(tree)] if where == "source" else []
    res = ask_server(args, [("chain", {"op": "mul.out", "key": "CUDA"})], cwd=tree / "aten" if where == "cwd" else None,
                     errfile=tmp_path / "err.txt")
    assert not marker.exists()
    assert not res[0].is_error and res[0].structured_content["source"]["root"] == str(tree.resolve())
    err = (tmp_path / "err.txt").read_text()
    assert "torchgen not run: no terminal" in err and "Traceback" not in err


def test_the_server_runs_it_with_consent(tmp_path, no_setting):
    tree, marker = evil_tree(tmp_path)
    ask_server(["--source", str(tree)], [("chain", {"op": "mul.out", "key": "CUDA"})],
               env=_server_env(ATENMAP_CODEGEN="always"), errfile=tmp_path / "err.txt")
    assert marker.read_text() == "ran"


def test_the_server_ignores_ask(tmp_path, no_setting):
    """`ask` in a server: stdin is the protocol, never a person -- treated as never."""
    tree, marker = evil_tree(tmp_path)
    ask_server(["--source", str(tree), "--codegen", "ask"], [("ops", {"limit": 1})], errfile=tmp_path / "err.txt")
    assert not marker.exists()
    assert "--codegen ask and no terminal to ask on" in (tmp_path / "err.txt").read_text()


def test_a_run_without_a_terminal_never_runs_it_by_default(capsys, tmp_path, no_setting):
    tree, marker = evil_tree(tmp_path)
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree))
    assert code == 0 and not marker.exists()
    assert "atenmap: torchgen not run: no terminal, and running a tree's code without one needs consent" in err
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree), "--codegen", "always")
    assert code == 0 and marker.read_text() == "ran"


def test_without_consent_torchgens_cached_output_is_used(capsys, tmp_path, no_setting, terminal, monkeypatch):
    """Output torchgen made with consent (on a terminal) answers later runs without one: using it runs nothing."""
    tree, marker = evil_tree(tmp_path)
    code, out, err = cli_run(capsys, "index", "--source", str(tree))
    assert code == 0 and marker.exists()
    marker.unlink()
    for stream in (sys.stdin, sys.stderr):  # no terminal now
        monkeypatch.setattr(type(stream), "isatty", lambda self: False)
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--source", str(tree))
    assert code == 0 and "RegisterCUDA.cpp" in out and not marker.exists()
    code, out, err = cli_run(capsys, "index", "--source", str(tree), "--force")  # a rebuild: the cache again
    assert code == 0 and not marker.exists() and "torchgen not run" not in err


def test_on_a_terminal_the_default_still_runs_it(capsys, tmp_path, no_setting, terminal):
    tree, marker = evil_tree(tmp_path)
    code, out, err = cli_run(capsys, "index", "--source", str(tree))
    assert code == 0 and marker.exists(), err
    assert "(code from that tree)" in " ".join(err.split())  # the notice, wrapped for the terminal


# ---- item 3: the Inductor cache, read with bounds ---------------------------------------------
from atenmap import files  # noqa: E402
from atenmap.inductor import outputcode  # noqa: E402
from atenmap.inductor.outputcode import find_kernel  # noqa: E402

from .test_inductor_outputcode import TRITON  # noqa: E402

KERNEL = "triton_poi_fused_add_relu_0"


def _code(folder: Path, name: str, text: str = TRITON, mtime: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    if mtime is not None:
        os.utime(p, ns=(mtime, mtime))
    return p


def test_devices_fifos_and_symlinks_out_are_not_read(tmp_path):
    cache = tmp_path / "cache"
    good = _code(cache / "ab", "cgood.py", mtime=1_000_000_000 * 10**9)
    os.symlink("/dev/zero", cache / "ab" / "czero.py")
    os.mkfifo(cache / "ab" / "cfifo.py")
    outside = _code(tmp_path / "elsewhere", "csecret.py", TRITON.replace("[add, y]", "[SECRET]"))
    os.symlink(outside, cache / "ab" / "cout.py")  # newer than good: would win if read
    k = find_kernel(KERNEL, [cache])
    assert k.file == str(good) and k.nodes == ("add", "y")
    assert outputcode.output_files([cache]) == [good]
    with pytest.raises(files.Outside):
        files.read_bytes(cache / "ab" / "cout.py", root=cache)


def test_only_symlinks_out_and_devices_find_nothing(tmp_path, capsys, mini_tree, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "ab").mkdir(parents=True)
    os.symlink("/dev/zero", cache / "ab" / "czero.py")
    outside = _code(tmp_path / "elsewhere", "csecret.py", TRITON.replace("[add, y]", "[SECRET]"))
    os.symlink(outside, cache / "ab" / "cout.py")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    code, out, err = cli_run(capsys, "kernel", KERNEL, "--source", str(mini_tree), "--no-codegen")
    assert "SECRET" not in out + err and "Traceback" not in err
    assert f"{KERNEL}: not in the output code of the Inductor cache at {cache}" in err


def test_a_huge_output_file_is_refused_unread(tmp_path):
    """A 600 MB .py (sparse) took 1.9 GB: refused from its size, in a process limited to 1 GiB."""
    cache = tmp_path / "cache"
    huge = cache / "ab" / "chuge.py"
    huge.parent.mkdir(parents=True)
    with open(huge, "wb") as f:
        f.write(f"{KERNEL} = async_compile.triton('x', '')\ndef call(args):\n    pass\n".encode())
        f.truncate(600 << 20)
    good = _code(cache / "cd", "cgood.py", mtime=10**18)
    os.utime(huge, ns=(2 * 10**18, 2 * 10**18))  # the newest: read first
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from pathlib import Path; from atenmap.inductor.outputcode import find_kernel; "
            f"print(find_kernel({KERNEL!r}, [Path({str(cache)!r})]).file)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(good)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another uid owns needs root")
def test_a_shared_temp_cache_owned_by_someone_else_is_not_read(tmp_path, capsys, mini_tree, monkeypatch):
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "torchinductor_me"
    _code(planted / "ab", "cplanted.py")
    os.chown(planted, 65534, 65534)
    assert find_kernel(KERNEL, [planted]) is None
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(planted))
    code, out, err = cli_run(capsys, "kernel", KERNEL, "--source", str(mini_tree), "--no-codegen")
    assert f"{KERNEL}: not looked up: {planted} belongs to uid 65534, not to you (uid 0)" in err
    os.chown(planted, 0, 0)  # the user's own: read
    assert find_kernel(KERNEL, [planted]) is not None


def test_the_file_cap_keeps_the_newest(tmp_path):
    """30,000 old files and the kernel's file, newest: the cap of 20,000 used to apply in walk order."""
    cache = tmp_path / "cache"
    for i in range(30_000):
        d = cache / f"{i % 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"c{i}.py"
        p.write_bytes(b"x = 1\n")
        os.utime(p, ns=(10**18 + i, 10**18 + i))
    good = _code(cache / "zz", "cgood.py", mtime=2 * 10**18)
    assert find_kernel(KERNEL, [cache]).file == str(good)
    assert len(outputcode.output_files([cache])) == outputcode.MAX_FILES


@pytest.mark.parametrize("body", ["x = " + "a." * 200_000 + "b\n",
                                  "x = " + "1 + " * 2_000_000 + "1\n",
                                  "x = (" + "1 +\n" * 2_000_000 + "1)\n",
                                  "x = (" + "a\n." * 200_000 + "b)\n"])
def test_output_code_too_deep_is_one_note(tmp_path, capsys, mini_tree, monkeypatch, body):
    cache = tmp_path / "cache"
    _code(cache / "ab", "cdeep.py", TRITON + body)
    k = find_kernel(KERNEL, [cache])
    assert k.line is None and ("nested too deeply to parse" in k.note or "a line over 65536 bytes" in k.note)
    assert "\n" not in k.note
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    code, out, err = cli_run(capsys, "kernel", KERNEL, "--source", str(mini_tree), "--no-codegen")
    assert "Traceback" not in err and "RecursionError" not in out + err


def test_a_rewritten_output_file_is_read_again(tmp_path):
    """Item 9: an answer kept per process named a deleted file and its old line; the names kept per
    file are checked against its inode, size, mtime and ctime."""
    cache = tmp_path / "cache"
    names = outputcode.OutputNames()
    old = _code(cache / "ab", "cold.py", mtime=10**18)
    assert find_kernel(KERNEL, [cache], names=names).file == str(old)
    old.unlink()
    new = _code(cache / "cd", "cnew.py", "\n\n" + TRITON, mtime=10**18)  # same mtime, new file
    k = find_kernel(KERNEL, [cache], names=names)
    assert k.file == str(new)
    new.write_text(TRITON.replace(f"{KERNEL} = async_compile", f"renamed_kernel = async_compile"))
    os.utime(new, ns=(10**18, 10**18))  # same mtime again; the ctime moved
    assert find_kernel(KERNEL, [cache], names=names) is None


# ---- item 11: show reads with a bound -----------------------------------------------------------
def test_show_refuses_a_huge_file_a_fifo_and_a_device(capsys, mini_tree):
    big = mini_tree / "big.txt"
    with open(big, "wb") as f:
        f.write(b"line one\n")
        f.truncate(1536 << 20)  # 1.5 GB, sparse: it reached 5 GB RSS
    os.mkfifo(mini_tree / "f.txt")
    os.symlink("/dev/zero", mini_tree / "zero.txt")
    src = ("--source", str(mini_tree), "--no-codegen")
    code, out, err = cli_run(capsys, "show", "big.txt:1", *src, errors_only=True)
    assert code == 1 and out == "" and err == \
        f"atenmap: error: big.txt: larger than {8 << 20} bytes (ATENMAP_MAX_FILE_BYTES), not shown\n"
    code, out, err = cli_run(capsys, "show", "f.txt:1", *src, errors_only=True)
    assert code == 1 and err == "atenmap: error: f.txt: not a regular file (a folder, a FIFO or a device), not shown\n"
    code, out, err = cli_run(capsys, "show", "zero.txt:1", *src, errors_only=True)  # a symlink out of the tree
    assert code == 2 and err == f"atenmap: error: zero.txt: outside {mini_tree}\n"
    code, out, err = cli_run(capsys, "show", "version.txt:1", *src, errors_only=True)
    assert code == 0 and "2." in out


# ---- items 2, 6, 7: the MCP server: FIFOs, cancel, closed pipes, escaped text ------------------
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3ul> >"
       "(int, at::native::MulFunctor<float>, std::array<char*, 3ul>)")
HELLO = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
         {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def _call(n: int, tool: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def big_trace(path: Path, pairs: int = 100_000) -> Path:
    """A trace whose explain_trace takes seconds: ``pairs`` ops, each launching one of 5,000 kernels."""
    with open(path, "w") as f:
        f.write('{"traceEvents": [')
        for i in range(pairs):
            f.write(("," if i else "") + json.dumps(
                {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
                 "args": {"External id": i}}) + "," + json.dumps(
                {"ph": "X", "cat": "kernel", "name": f"{MUL}{i % 5000}", "pid": 1, "tid": 7, "ts": i * 10 + 1,
                 "dur": 3, "args": {"External id": i}}))
        f.write("]}")
    return path


def server(tmp_path: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "atenmap", "mcp", "--source", str(FIXTURE_TREE)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(tmp_path / "err.txt", "w"),
                            env={**os.environ, **_server_env(ATENMAP_CODEGEN="always")}, text=True, **popen)


def send(proc, *msgs) -> None:
    for m in msgs:
        proc.stdin.write(json.dumps(m) + "\n")
    proc.stdin.flush()


def reply(proc, n: int) -> dict:
    while True:
        msg = json.loads(proc.stdout.readline())
        if msg.get("id") == n:
            return msg


def test_a_fifo_trace_is_a_tool_error_and_the_server_goes_on(tmp_path):
    os.mkfifo(tmp_path / "f.json")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    res = ask_server(["--source", str(FIXTURE_TREE)],
                     [("explain_trace", {"path": str(tmp_path / "f.json")}),
                      ("explain_trace", {"path": str(tmp_path / "zero.json")}),
                      ("ops", {"limit": 1})], env=_server_env(ATENMAP_CODEGEN="always"), errfile=tmp_path / "e.txt")
    assert [r.is_error for r in res] == [True, True, False]
    assert all("not a regular file" in r.content[0].text and "\n" not in r.content[0].text for r in res[:2])


def test_cancel_ends_the_calls_work_and_the_next_call_answers(tmp_path):
    trace = big_trace(tmp_path / "big.json")
    proc = server(tmp_path)
    try:
        send(proc, *HELLO)
        assert reply(proc, 1)["result"]["serverInfo"]["name"] == "atenmap"
        send(proc, _call(2, "explain_trace", {"path": str(trace)}),
             {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
             _call(3, "ops", {"limit": 1}))
        assert reply(proc, 3)["result"]["isError"] is False
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
    finally:
        proc.kill()
    err = (tmp_path / "err.txt").read_text()
    assert "a call was stopped (cancelled); its work ended" in err and "Traceback" not in err


def test_closing_stdin_mid_call_ends_its_work_and_the_server(tmp_path):
    trace = big_trace(tmp_path / "big.json")
    proc = server(tmp_path)
    try:
        send(proc, *HELLO)
        reply(proc, 1)
        send(proc, _call(2, "explain_trace", {"path": str(trace)}))
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
    finally:
        proc.kill()
    err = (tmp_path / "err.txt").read_text()
    assert "a call was stopped" in err and "Traceback" not in err


def test_a_client_that_closes_stdout_gets_a_quiet_exit(tmp_path):
    proc = server(tmp_path)
    try:
        proc.stdout.close()
        try:
            send(proc, *HELLO, _call(2, "ops", {"limit": 1}))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        assert proc.wait(timeout=120) == 0
    finally:
        proc.kill()
    err = (tmp_path / "err.txt").read_text()
    assert "Traceback" not in err and all(ln.startswith("atenmap: ") for ln in err.splitlines()), err


def test_text_parts_escape_control_characters(tmp_path):
    """Item 6: a tree whose root, file names and version.txt hold ESC, BEL and newlines put them raw
    into the chain and search text parts."""
    tree = tmp_path / "tree\x1b[31m\x07"
    shutil.copytree(FIXTURE_TREE, tree)
    (tree / "version.txt").write_text("2.6.0\x1b]0;pwned\x07\n")
    evil = tree / "aten/src/ATen/native/cuda/evil\x1b[2J\nname.cu"
    evil.write_text("void ctrl_probe_fn(int x) {}\n")
    res = ask_server(["--source", str(tree)], [("chain", {"op": "mul.out", "key": "CUDA"}),
                                                ("search", {"pattern": "ctrl_probe"})],
                     env=_server_env(ATENMAP_CODEGEN="always"), errfile=tmp_path / "e.txt")
    for r in res:
        assert not r.is_error, r.content[0].text
        text = r.content[0].text
        assert not any(c in text for c in "\x1b\x07\r"), text
    assert "tree\\x1b[31m\\x07" in res[0].content[0].text
    assert "evil\\x1b[2J\\x0aname.cu" in res[1].content[0].text
    assert res[1].structured_content["hits"][0]["file"].endswith("evil\x1b[2J\nname.cu")  # JSON keeps the name


# ---- items 5, 8, 12: `trace` in a forked child, temporary folders, the script's faults -----------
def trace_run(tmp_path: Path, script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`atenmap trace ARGS -- script.py` in a subprocess (a script that forks or closes fd 2 would
    take pytest with it in-process), with a private TMPDIR."""
    pytest.importorskip("torch", reason="atenmap trace needs torch")
    (tmp_path / "script.py").write_text(script)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "atenmap", "trace", "-s", str(FIXTURE_TREE), *args, "--", "script.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(tmp_path / "tmp"),
                               **(env or {})})


def test_trace_in_a_forked_child_does_nothing(tmp_path):
    script = ("import os, torch\nx = torch.ones(3) + 1\npid = os.fork()\nif pid == 0:\n    y = torch.ones(2) * 2\n"
              "else:\n    os.waitpid(pid, 0)\n    print('parent done')\n")
    r = trace_run(tmp_path, script, "--json", "out.json")  # it hung: the child blocked at exit
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(" aten calls, ") == 1 and r.stderr.count("atenmap: wrote out.json") == 1
    assert json.loads((tmp_path / "out.json").read_text())["script"]["exit_code"] == 0


def test_chrome_sessions_are_removed(tmp_path):
    r = trace_run(tmp_path, "import torch\nx = torch.ones(3) + 1\n", "--chrome", "c.json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "c.json").is_file()
    assert [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("atenmap-")] == []  # atenmap-chrome-XXXX/0.json was left


def test_a_killed_runs_folder_is_removed_by_the_next_run(tmp_path, capsys, mini_tree):
    import time

    from atenmap.tempdirs import TempFolder, clean_stale

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    trace = big_trace(tmp_path / "big.json")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "atenmap", "kernel", "--from-trace", str(trace), "-s", str(FIXTURE_TREE)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        for _ in range(1200):  # until it made its folder (bounded: no hang)
            if any(p.name.startswith("atenmap-trace-") and (p / ".alive").exists() for p in tmp.iterdir()):
                break
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    left = [p for p in tmp.iterdir() if p.name.startswith("atenmap-trace-")]
    assert len(left) == 1
    live = TempFolder("atenmap-trace-", dir=str(tmp))  # the next run: it removes the killed one's folder
    assert not left[0].exists() and os.path.isdir(live.path)
    assert clean_stale(str(tmp)) == [] and os.path.isdir(live.path)  # a live run's folder stays
    live.cleanup()
    assert not os.path.exists(live.path)


def test_a_folder_being_made_is_not_taken_for_a_killed_runs(tmp_path):
    """Two pool workers start at once: one's clean_stale() must not take the other's fresh, not yet
    locked ``.alive`` for a dead maker's (the lock is taken before the file is named ``.alive``)."""
    from atenmap.tempdirs import ALIVE, TempFolder, clean_stale

    live = TempFolder("atenmap-trace-", dir=str(tmp_path))
    assert sorted(os.listdir(live.path)) == [ALIVE]  # named only once locked
    being_made = tmp_path / "atenmap-trace-beingmade"
    being_made.mkdir()
    (being_made / (ALIVE + ".new")).write_text("")  # its maker has not locked and renamed it yet
    assert clean_stale(str(tmp_path)) == []
    assert being_made.is_dir() and os.path.isdir(live.path)
    live.cleanup()


def test_the_scripts_faults_keep_the_report(tmp_path):
    """Item 12: an exception whose __str__ raises, the script's own torch.profiler, os.close(2), Ctrl-C."""
    bad_str = ("import torch\nclass E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
               "x = torch.ones(3) + 1\nraise E()\n")
    r = trace_run(tmp_path, bad_str, "--json", "out.json")
    assert r.returncode == 1 and "atenmap: error: script.py raised E: <its str() raised RuntimeError>" in r.stderr
    assert "cli/trace.py" not in r.stderr
    assert json.loads((tmp_path / "out.json").read_text())["script"]["error"] == "E: <its str() raised RuntimeError>"

    own = "import torch\nfrom torch.profiler import profile\nwith profile():\n    x = torch.ones(3) + 1\n"
    r = trace_run(tmp_path, own)
    assert r.returncode == 0
    assert "atenmap: warning: the script ran its own torch.profiler, which ended atenmap's recording" in r.stderr

    r = trace_run(tmp_path, "import os, torch\nx = torch.ones(3) + 1\nos.close(2)\n", "--json", "closed.json")
    assert r.returncode == 0, r.stderr
    assert "atenmap: wrote closed.json" in r.stderr and (tmp_path / "closed.json").is_file()

    r = trace_run(tmp_path, "import os, signal, torch\nx = torch.ones(3) + 1\nos.kill(os.getpid(), signal.SIGINT)\n")
    assert r.returncode == 130 and "script.py:2" in r.stdout


# ---- item 13: the help, a bad search key, open on the bundled index ---------------------------
def test_no_arguments_prints_the_help_as_lines(capsys):
    code, out, err = cli_run(capsys)
    assert code == 2 and "\\x0a" not in err
    assert err.startswith("Usage: atenmap [OPTIONS] COMMAND [ARGS]...\n") and "\nCommands:\n" in err


def test_search_refuses_a_key_no_operator_has(capsys):
    code, out, err = cli_run(capsys, "search", "softmax", "--key", "GPU", "-s", str(FIXTURE_TREE), errors_only=True)
    assert code == 2 and out == "" and err.startswith("atenmap: error: no operator has a kernel for key 'GPU'; keys: ")
    code, out, _ = cli_run(capsys, "search", "mul", "--key", "cuda", "-s", str(FIXTURE_TREE), errors_only=True)
    assert code == 0 and "mul" in out  # any case, as ops takes it
    res = ask_server(["--source", str(FIXTURE_TREE)], [("search", {"pattern": "softmax", "key": "GPU"})],
                     env=_server_env(ATENMAP_CODEGEN="always"), errfile=Path(os.environ["ATENMAP_CACHE"]) / "e.txt")
    assert res[0].is_error and "no operator has a kernel for key 'GPU'" in res[0].content[0].text


def test_open_on_the_bundled_index_exits_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no tree around, none fetched into this test's cache: the bundled index
    monkeypatch.setenv("EDITOR", "true")
    code, out, err = cli_run(capsys, "open", "mm", errors_only=True)
    assert code == 2 and err == ("atenmap: error: this command needs a local PyTorch tree: pass --source PATH, "
                                 "or get one with `atenmap fetch`\n")
