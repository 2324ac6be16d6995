"""dream_now over MCP: sampling through the calling client when it supports it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent


async def dream_with_client(
    ctx: Context,
    session_id: str | None,
    project_id: str | None,
    cwd: str | None,
    run: Callable[[Callable[[], dict[str, Any]]], Awaitable[CallToolResult]],
) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text="dream_now is not available yet in this build.")], is_error=True
    )
