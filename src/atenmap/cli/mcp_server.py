"""``atenmap mcp``: the Index verbs as tools of a Model Context Protocol server over stdio, on the
MCP Python SDK 2.x (``mcp.server.mcpserver.MCPServer``; the ``atenmap[mcp]`` extra). Each tool is
one function of TOOLS calling one answer of mcp_answers.py; its result is the CLI's ``--json`` as
structured content and a few lines of text (Note [Answers that fit an agent's context]).

Note [One thread owns the index]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The SDK runs a plain (sync) tool on any thread of anyio's pool, but a SQLite connection belongs to
the thread that opened it, and the Index's caches (the kernel-name index, decoded operators) are
what make a warm call fast. So the server opens the Index once, on one worker thread, and every
tool call runs there in turn; the event loop stays free to read the next message, a cancellation
or the end of input. Before each call the index's freshness is proven by stat (build.is_fresh, Note
[Cheap freshness], ~10 ms on 2.6.0); an edited tree is re-indexed (the changed files only) and
reopened. The first open starts with the server, so a first build (a minute on a fresh checkout)
overlaps the client's handshake instead of the first call's timeout.

Errors: an AtenmapError (an unknown operator with its "did you mean", a bad key or file), an
OSError or a damaged index database is a tool error (``isError``) with the one line the CLI prints
after ``atenmap: error:``. A bad argument is the SDK's own validation error. Anything else is a
bug: one line on stderr and a tool error naming it; the server goes on (Note [A bug ends the call
only]). What the SDK logs is one escaped line a record, never a traceback (Note [One line a log
record]).

Note [A bug ends the call only]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The worker thread answers every call in turn, so an exception that left it ended the thread and
every later call waited for good: an ``explain_trace`` path holding a NUL byte (os.open's
ValueError) did that (tests/test_fuzz_surfaces.py). An exception that is not a fault of the
environment is caught where the answer is made: one status line and one tool error, and the
worker takes the next call.
"""
from __future__ import annotations

import asyncio
import ctypes
import inspect
import logging
import queue
import sqlite3
import sys
import threading
import time
from concurrent.futures import Future
from typing import Annotated, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from atenmap.cli import mcp_answers as answers
from atenmap.errors import AmbiguousOperator, AtenmapError

INSTRUCTIONS = (
    "atenmap reads a PyTorch source tree and answers, with path:line for every step, how an ATen operator "
    "reaches the code it runs on the device. `chain` gives an operator's dispatch chain (its `runs` are the "
    "kernel launches, library calls and jiterator kernels it reaches); `kernel` maps a profiler's kernel name "
    "to its source and operators; `where` lists the operators passing through a file:line; `search` finds "
    "names; `ops` lists operators; `explain_trace` answers every kernel of a torch.profiler chrome trace. "
    "Paths are relative to the PyTorch source root named in each answer.")


# Note [Ending a call's work]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A call runs Python on the worker thread; cancelling the awaiting coroutine does not stop it, and
# a later call queued behind it waited (101 s after a cancelled 10^6-event explain_trace: issue 34,
# item 7). So a call the client cancels, one that runs past its time budget (ATENMAP_MCP_CALL_SECONDS,
# the answer's own time: opening or building the index is not counted) and one in flight when the
# client closes stdin are ended: ``_Stop`` is raised in the worker thread
# (PyThreadState_SetAsyncExc: at its next bytecode, so a long SQLite statement ends first). What it
# was in the middle of may be half done, so the worker then drops its Index (closed, reopened by the
# next call: its caches are lost, never wrong). A stop asked while the worker opens or builds the
# index waits for that to finish and skips the answer: a build is never cut short by a client's
# impatience. The worker is a daemon thread, so the process can exit while it works (a pool thread
# is joined at exit: the server outlived its client by 115 s).


class _Stop(BaseException):
    """Raised in the worker thread to end the call it runs; see Note [Ending a call's work]."""


class _Job:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args
        self.future: Future = Future()
        self.answering: float | None = None  # monotonic time the answer (not the index) began
        self.stop = ""  # why it is to stop: "cancelled", "over its time budget", "input closed"


class Served:
    """The Index of one source tree, opened once and kept fresh; see Note [One thread owns the index]
    and Note [Ending a call's work]."""

    def __init__(self, source: str | None, codegen, status: Callable[[str], None], budget: float = 300.0):
        self.source, self.codegen, self.status, self.budget = source, codegen, status, budget
        self.ix = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: _Job | None = None
        self._thread = threading.Thread(target=self._work, name="atenmap-index", daemon=True)
        self._thread.start()

    def start(self) -> None:
        """Open (or build) the index now, on the worker; an error there is told at the first call."""
        self._jobs.put(_Job(None, ()))

    async def call(self, answer: Callable[..., answers.Answer], *args) -> CallToolResult:
        import anyio

        job = _Job(answer, args)
        self._jobs.put(job)
        waiting = asyncio.wrap_future(job.future)
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=1.0)
                if done:
                    return waiting.result()
                if job.answering is not None and time.monotonic() - job.answering > self.budget:
                    self.stop(job, "over its time budget")
                    return _error(f"stopped after {self.budget:g} s (ATENMAP_MCP_CALL_SECONDS); ask for less "
                                  "(a smaller trace, a lower limit)")
        except anyio.get_cancelled_exc_class():
            self.stop(job, "cancelled")
            raise

    def stop(self, job: _Job | None, why: str) -> None:
        """End ``job`` (the running one when None): at once if it is answering, else before it
        answers (Note [Ending a call's work])."""
        with self._lock:
            job = job or self._running
            if job is None or job.stop or job.future.done():
                return
            job.stop = why
            if job is self._running and job.answering is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread.ident), ctypes.py_object(_Stop))

    def _work(self) -> None:
        while True:
            try:
                while self._one(self._jobs.get()):
                    pass
                return
            except _Stop:  # a stop that landed after its call ended: nothing left to end
                continue

    def _one(self, job: _Job | None) -> bool:
        if job is None:
            return False
        if job.fn is None:  # start(): open now
            self._quiet_open()
            return True
        if not job.future.set_running_or_notify_cancel():
            return True
        with self._lock:
            self._running = job
        try:
            result = self._answer(job)
        except _Stop:
            result = _error(f"stopped: {job.stop or 'cancelled'}")
            self._drop_index()
            self.status(f"a call was stopped ({job.stop or 'cancelled'}); its work ended")
        with self._lock:
            self._running = None
        if not job.future.done():
            job.future.set_result(result)
        return True

    def _answer(self, job: _Job) -> CallToolResult:
        try:
            ix = self._index()
            if job.stop:
                raise _Stop
            with self._lock:
                job.answering = time.monotonic()
            a = job.fn(ix, *job.args)
        except (AtenmapError, OSError, sqlite3.DatabaseError) as exc:
            return _error(error_text(exc))
        except Exception as exc:  # noqa: BLE001 - a bug; the worker must live on (Note [A bug ends the call only])
            self.status(f"error: a bug in atenmap (please report it): {type(exc).__name__}: {exc}")
            return _error(f"a bug in atenmap (please report it): {type(exc).__name__}: {exc}")
        finally:
            job.answering = None
        return CallToolResult(content=[TextContent(type="text", text=a.text)], structured_content=a.data)

    def _drop_index(self) -> None:
        if self.ix is not None:
            try:
                self.ix.close()
            except sqlite3.Error:
                pass
            self.ix = None

    def _decision(self, info):
        """The codegen decision for ``info``, made as for a run without a terminal whatever stdin
        and stderr are: stdin is the protocol, and an agent may open any tree (Note [Whose code
        runs]: only --codegen always, ATENMAP_CODEGEN=always or the config file runs its code)."""
        from atenmap.indexstate import codegen_decision

        return codegen_decision(info, self.codegen, terminal=False) if info.origin != "bundled" else self.codegen

    def _index(self):
        from atenmap import build
        from atenmap.api import Index

        if self.ix is not None and self.ix.source.origin != "bundled" \
                and not build.is_fresh(self.ix.source, decision := self._decision(self.ix.source)):
            info = self.ix.source
            self._drop_index()
            self.status("the tree changed: refreshing the index")
            self.ix = Index.open(info, codegen=decision, status=self.status)
        if self.ix is None:
            self.ix = Index.open(self.source, codegen=self._decision(self.source), status=self.status)
        return self.ix

    def _quiet_open(self) -> None:
        try:
            self._index()
        except (AtenmapError, OSError, sqlite3.DatabaseError) as exc:
            self.status(f"error: {error_text(exc)}")

    def close(self, wait: float = 0.0) -> None:
        """End the running call (the client is gone) and let the worker go; ``wait``: seconds to let
        it finish ending (its temporary files are removed on the way out)."""
        self.stop(None, "input closed")
        self._jobs.put(None)
        if wait:
            self._thread.join(wait)


def _error(text: str) -> CallToolResult:
    """A tool error: one line, escaped as the CLI's error line is (issue 34, item 6)."""
    from atenmap.config import printable

    return CallToolResult(content=[TextContent(type="text", text=printable(text))], is_error=True)


def error_text(exc: Exception) -> str:
    """The line the CLI prints after ``atenmap: error:`` for ``exc`` (cli/__init__.py's _run)."""
    from atenmap.cli import _os_error

    if isinstance(exc, AmbiguousOperator):
        return f"{str(exc).split(';')[0]}: {', '.join(exc.candidates)}"
    if isinstance(exc, sqlite3.DatabaseError):
        text = str(exc)
        if "malformed" in text or "not a database" in text:
            return f"the index is damaged: {text}; rebuild it with `atenmap index --force`"
        return f"index database: {text}"
    if isinstance(exc, OSError):
        return _os_error(exc)
    return str(exc)


# ---- the tools: one function each, registered in TOOLS order ---------------------------------
Limit = Annotated[int, Field(ge=0, description="How many list entries to return (0: all); the total is always stated.")]
Platform = Annotated[str | None, Field(description="The build the CUDA key describes: cuda (default) or rocm (the "
                                                   "USE_ROCM side of #if, MIOpen/rocBLAS/hipBLASLt/CK, hipify's names)")]


def tools(served: Served) -> list[Callable]:
    """The tool functions over ``served``. A new verb is one more function here."""

    async def chain(op: Annotated[str, Field(description="Operator as PyTorch users name it: add.out, aten::mul.Tensor, "
                                                      "softmax, torch.softmax, F.relu, Tensor.add_")],
                    key: Annotated[str | None, Field(description="Dispatch key(s): CPU, CUDA, ... comma-separated, or "
                                                               "'all'. Default: CPU and CUDA (or the composite key serving them)")] = None,
                    why: Annotated[bool, Field(description="Also the conditions (if/switch/#if, AT_DISPATCH dtypes) on the "
                                                           "way to each call and launch")] = False,
                    backward: Annotated[bool, Field(description="Also the derivatives.yaml formulas, the autograd node "
                                                                "and the backward's chains")] = False,
                    dtype: Annotated[str | None, Field(description="The call's dtype (float32, bfloat16, ...): runs it "
                                                                 "cannot take are left out")] = None,
                    shape: Annotated[str | None, Field(description="The tensors' sizes, e.g. 64x64,64x64")] = None,
                    example: Annotated[str | None, Field(description="The call as Python (read, never run), e.g. "
                                                                   "torch.mm(torch.randn(64, 64), torch.randn(64, 64))")] = None,
                    platform: Platform = None,
                    ) -> CallToolResult:
        """The dispatch chain of an ATen operator, path:line for every step: native_functions.yaml, the
        dispatch key's kernel, DispatchStub and its REGISTER_DISPATCH, down to the <<<>>> launch lines and
        library calls. `runs` (first) lists the launches/library calls/jiterator kernels it reaches."""
        return await served.call(answers.chain_answer, op, key, why, backward, 8, dtype, shape, example, platform)

    async def kernel(name: Annotated[str, Field(description="Kernel name as torch.profiler/nsys prints it: demangled "
                                                            "(void at::native::...<...>(...)), mangled _Z..., or plain")],
                     limit: Limit = 50, platform: Platform = None) -> CallToolResult:
        """Where a GPU kernel comes from: its __global__ definition, the lines that launch it, the functor
        or lambda it runs, and the operators that reach it (most likely first)."""
        return await served.call(answers.kernel_answer, name, limit, platform)

    async def where(file: Annotated[str, Field(description="A file of the tree, relative to its root (a unique suffix "
                                                           "will do): aten/src/ATen/native/cuda/Loops.cuh")],
                    line: Annotated[int | None, Field(ge=1, description="A line in it (1-based)")] = None,
                    function: Annotated[str | None, Field(description="Or a function defined in it")] = None,
                    limit: Limit = 50) -> CallToolResult:
        """The function at file:line (or named in the file) and the operators whose chains pass through it,
        nearest first: what a kernel author asks before changing it."""
        return await served.call(answers.where_answer, file, line, function, limit)

    async def search(pattern: Annotated[str, Field(description="Part of a name; letters in order also match "
                                                               "(sftmx finds softmax)")],
                     key: Annotated[str | None, Field(description="Only operators with a kernel for this key, and "
                                                                  "stubs/kernels/functions of its device")] = None,
                     limit: Limit = 50) -> CallToolResult:
        """Find operators, DispatchStubs, kernels and functions by name, best first."""
        return await served.call(answers.search_answer, pattern, key, limit)

    async def ops(key: Annotated[str | None, Field(description="Only operators with a kernel for this dispatch key")] = None,
                  limit: Limit = 50,
                  missing: Annotated[bool, Field(description="With key: the operators CPU or CUDA run with a kernel "
                                                             "of their own and key (MPS, Meta, ...) has none, grouped "
                                                             "by what a call does (error, CPU fallback, composite)")] = False,
                  ) -> CallToolResult:
        """Operators in native_functions.yaml order with their yaml line, kind and per-key kernels; with
        missing, what a key lacks."""
        return await served.call(answers.ops_answer, key, limit, missing)

    async def explain_trace(path: Annotated[str, Field(description="A torch.profiler / Kineto chrome trace (.json) "
                                                                   "on the server's machine (relative paths: to the "
                                                                   "server's working directory)")],
                            limit: Limit = 50, platform: Platform = None) -> CallToolResult:
        """Every GPU kernel, memcpy and memset of a profiler trace mapped back to its source and operators,
        with its count and the operators the trace says launched it."""
        return await served.call(answers.trace_answer, path, limit, platform)

    async def compile(op: Annotated[str, Field(description="Operator as PyTorch users name it: mm, aten::relu, "
                                                        "softmax, torch.cumsum")],
                      key: Annotated[str | None, Field(description="Dispatch key(s) for a fallback's ATen chain: CPU, "
                                                                 "CUDA, ... comma-separated. Default: CPU and CUDA")] = None
                      ) -> CallToolResult:
        """What torch.compile's default backend (Inductor) does with an operator, path:line in the tree's
        Python: its decomposition (and whether Inductor's table takes it), lowering (with Triton templates
        and the extern choice for mm/conv), fallback (with the op's ATen chain) and fx passes naming it."""
        return await served.call(answers.compile_answer, op, key)

    return [chain, kernel, where, search, ops, explain_trace, compile]


READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


# Note [One line a log record]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# MCPServer's constructor sets the root logger to rich's handler with rich tracebacks, and the SDK
# logs with its traceback every exception a request's handler raises, its own included: a client's
# `prompts/get` of a name the server has no prompt for put 142 lines of boxed traceback on stderr
# (tests/test_fuzz_surfaces.py). So once the server is made its log handler is replaced: one line
# per record, ``atenmap: mcp LEVEL: message: ExcType: text``, escaped as the CLI's lines are.
class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        from atenmap.config import printable

        text = record.getMessage()
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            text += f": {type(exc).__name__}: {exc}"
        return printable(f"atenmap: mcp {record.levelname.lower()}: {text}")


def _one_line_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logging.getLogger().handlers[:] = [handler]


class _Server(MCPServer):
    """The SDK's server, with the refusals it words itself (an unknown tool, arguments its schema
    refuses) made one escaped line like atenmap's own: the SDK put the client's tool name raw into
    "Unknown tool: ..." and pydantic's report of several lines into the text part
    (tests/test_fuzz_surfaces.py; issue 34, item 6)."""

    async def call_tool(self, name, arguments, context=None):
        from pydantic import ValidationError

        from atenmap.config import printable

        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError):
                raise
            cause = exc.__cause__
            text = str(exc)
            if isinstance(cause, ValidationError):
                text = f"Error executing tool {name}: bad arguments: " + "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in cause.errors())
            raise ToolError(printable(text)) from cause


def make_server(served: Served) -> MCPServer:
    from atenmap import __version__

    server = _Server("atenmap", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    _one_line_logs()  # after the constructor: see Note [One line a log record]
    for fn in tools(served):
        server.add_tool(fn, description=" ".join(inspect.cleandoc(fn.__doc__ or "").split()), annotations=READ_ONLY,
                        structured_output=False)
    return server


def serve(source: str | None, codegen, status: Callable[[str], None]) -> None:
    """Serve on stdin/stdout until the client closes them. Input closed: the call in flight is
    ended and the server exits 0 (Note [Ending a call's work]); output closed: it exits quietly."""
    import anyio

    from atenmap import config

    served = Served(source, codegen, status, config.mcp_call_seconds())
    served.start()
    if sys.stdin.isatty():
        status("serving the Model Context Protocol on stdin/stdout for an agent client (docs/agents.md); Ctrl-C stops")
    try:
        anyio.run(make_server(served).run_stdio_async)  # at the end of input the SDK cancels the calls in flight
    except KeyboardInterrupt:
        served.close()
        sys.exit(130)
    except BaseException as exc:  # noqa: BLE001 -- only a gone client is quiet; anything else goes on up
        if not _client_gone(exc):
            raise
    served.close(wait=10.0)
    _quiet_exit()


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or every exception of its group) says the client closed the pipes."""
    import anyio

    group = getattr(exc, "exceptions", None)  # an exception group (anyio's task groups raise them)
    if isinstance(group, (list, tuple)) and group:
        return all(_client_gone(e) for e in group)
    return isinstance(exc, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError,
                            anyio.ClosedResourceError, anyio.EndOfStream))


def _quiet_exit() -> None:
    """Exit 0 now: stdout may be a closed pipe (flushing it at exit would print a traceback), and
    the worker may still be ending a call."""
    import os

    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    sys.stderr.flush()
    os._exit(0)
