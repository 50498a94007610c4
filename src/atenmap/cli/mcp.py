"""`atenmap mcp`: serve the Index verbs to coding agents over the Model Context Protocol (stdio).
The server is mcp_server.py; its SDK is the optional extra ``atenmap[mcp]``, imported only here."""
from __future__ import annotations

from typing import Optional

from atenmap.cli.common import CodegenOpt, NoCodegenOpt, SourceOpt, app, codegen_setting, status_line
from atenmap.errors import UsageError

NEEDS = "atenmap mcp needs the MCP Python SDK 2.x: pip install 'atenmap[mcp]'"


@app.command("mcp")
def mcp_cmd(
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
) -> None:
    """A Model Context Protocol server on stdin/stdout with the tools chain, kernel, where, search, ops and
    explain_trace (docs/agents.md). Example: claude mcp add atenmap -- atenmap mcp --source ~/pytorch"""
    from atenmap.source.find import find_source

    try:
        from atenmap.cli import mcp_server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise UsageError(NEEDS) from None
    setting = codegen_setting(no_codegen, codegen)
    info = find_source(source, bundled=True)  # a bad --source fails here, before the client is served
    mcp_server.serve(info, setting, status_line)
