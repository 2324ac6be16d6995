"""Sync's MCP tool: reconcile_memories (apply teammates' event files, publish local-only memories)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult

from memories.scope import resolve
from yullu_core.mcp import Cwd, ProjectId, run

from .services import reconcile_scope


def register(server: MCPServer) -> None:
    @server.tool(description="Apply teammates' memory events from <repo>/.yullu/logs and publish local-only memories.")
    async def reconcile_memories(project_id: ProjectId = None, cwd: Cwd = None) -> CallToolResult:
        def body() -> dict[str, Any]:
            return dict(reconcile_scope(resolve(project_id, cwd)))

        return await run(body)
