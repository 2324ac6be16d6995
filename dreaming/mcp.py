"""Dreaming's MCP tools: record_messages (buffer conversation turns) and dream_now (a dream pass now;
its LLM call goes back to the client by sampling when it can, mcp_sampling.py)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field, WithJsonSchema

from memories.scope import resolve
from yullu_core.arguments import AS_GIVEN, SESSION_ID
from yullu_core.mcp import Cwd, ProjectId, run

from .mcp_sampling import dream_with_client
from .services import MESSAGES_SCHEMA, SESSION_ID_SCHEMA
from .services import record_messages as record


def register(server: MCPServer) -> None:
    @server.tool(description="Record conversation turns so durable facts can be extracted later (dreaming).")
    async def record_messages(
        # Judged by the service, as on REST (the same sentence), and described by its schemas.
        session_id: Annotated[
            str, AS_GIVEN, WithJsonSchema(SESSION_ID_SCHEMA), Field(description="Your conversation/session id.")
        ],
        messages: Annotated[
            list[Any],
            AS_GIVEN,
            WithJsonSchema(MESSAGES_SCHEMA),
            Field(description="New turns: a list of {role: 'user'|'assistant', content: string}."),
        ],
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        def body() -> dict[str, Any]:
            scope = resolve(project_id, cwd)
            return dict(record(scope.project_id, session_id, messages))

        return await run(body)

    @server.tool(description="Extract durable memories from recorded conversations now.")
    async def dream_now(
        ctx: Context,
        session_id: Annotated[
            str | None,
            AS_GIVEN,
            WithJsonSchema(SESSION_ID.schema()),
            Field(description="Only this session (default: all)."),
        ] = None,
        project_id: ProjectId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        return await dream_with_client(ctx, session_id, project_id, cwd, run)
