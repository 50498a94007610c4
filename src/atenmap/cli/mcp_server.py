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
bug: the SDK logs it on stderr and answers "Error executing tool NAME"; the server goes on.
"""
from __future__ import annotations

import asyncio
import inspect
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Callable

from mcp.server.mcpserver import MCPServer
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


class Served:
    """The Index of one source tree, opened once and kept fresh; see Note [One thread owns the index]."""

    def __init__(self, source: str | None, codegen, status: Callable[[str], None]):
        self.source, self.codegen, self.status = source, codegen, status
        self.ix = None
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atenmap-index")

    def start(self) -> None:
        """Open (or build) the index now, on the worker; an error there is told at the first call."""
        self.pool.submit(self._quiet_open)

    async def call(self, answer: Callable[..., answers.Answer], *args) -> CallToolResult:
        return await asyncio.wrap_future(self.pool.submit(self._answer, answer, *args))

    def _answer(self, answer, *args) -> CallToolResult:
        try:
            a = answer(self._index(), *args)
        except (AtenmapError, OSError, sqlite3.DatabaseError) as exc:
            return CallToolResult(content=[TextContent(type="text", text=error_text(exc))], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=a.text)], structured_content=a.data)

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
            self.ix.close()
            self.ix = None
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

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


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
                    ) -> CallToolResult:
        """The dispatch chain of an ATen operator, path:line for every step: native_functions.yaml, the
        dispatch key's kernel, DispatchStub and its REGISTER_DISPATCH, down to the <<<>>> launch lines and
        library calls. `runs` (first) lists the launches/library calls/jiterator kernels it reaches."""
        return await served.call(answers.chain_answer, op, key, why, backward, 8, dtype, shape, example)

    async def kernel(name: Annotated[str, Field(description="Kernel name as torch.profiler/nsys prints it: demangled "
                                                            "(void at::native::...<...>(...)), mangled _Z..., or plain")],
                     limit: Limit = 50) -> CallToolResult:
        """Where a GPU kernel comes from: its __global__ definition, the lines that launch it, the functor
        or lambda it runs, and the operators that reach it (most likely first)."""
        return await served.call(answers.kernel_answer, name, limit)

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
                  limit: Limit = 50) -> CallToolResult:
        """Operators in native_functions.yaml order with their yaml line, kind and per-key kernels."""
        return await served.call(answers.ops_answer, key, limit)

    async def explain_trace(path: Annotated[str, Field(description="A torch.profiler / Kineto chrome trace (.json) "
                                                                   "on the server's machine (relative paths: to the "
                                                                   "server's working directory)")],
                            limit: Limit = 50) -> CallToolResult:
        """Every GPU kernel, memcpy and memset of a profiler trace mapped back to its source and operators,
        with its count and the operators the trace says launched it."""
        return await served.call(answers.trace_answer, path, limit)

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


def make_server(served: Served) -> MCPServer:
    from atenmap import __version__

    server = MCPServer("atenmap", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for fn in tools(served):
        server.add_tool(fn, description=" ".join(inspect.cleandoc(fn.__doc__ or "").split()), annotations=READ_ONLY,
                        structured_output=False)
    return server


def serve(source: str | None, codegen, status: Callable[[str], None]) -> None:
    """Serve on stdin/stdout until the client closes them."""
    import anyio

    served = Served(source, codegen, status)
    served.start()
    if sys.stdin.isatty():
        status("serving the Model Context Protocol on stdin/stdout for an agent client (docs/agents.md); Ctrl-C stops")
    try:
        anyio.run(make_server(served).run_stdio_async)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        served.close()
