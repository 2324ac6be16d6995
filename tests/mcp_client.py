"""Helpers to talk to our server with the official MCP SDK client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import InitializeResult, TextContent

# A raw MCP `initialize` request, and the Accept header streamable HTTP asks for: for tests that speak MCP by hand
# (through a proxy, a gate, a server whose database is down).
MCP_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def http_session(base_url: str, token: str, **session_kwargs: Any) -> AsyncIterator[ClientSession]:
    async with initialized_session(base_url, token, **session_kwargs) as (session, _):
        yield session


@asynccontextmanager
async def initialized_session(
    base_url: str, token: str, **session_kwargs: Any
) -> AsyncIterator[tuple[ClientSession, InitializeResult]]:
    """A session and the server's answer to `initialize` (its instructions, capabilities)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write, **session_kwargs) as session,
    ):
        yield session, await session.initialize()


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, structured content or error text)."""
    result = await session.call_tool(tool, arguments)
    first = result.content[0]
    assert isinstance(first, TextContent), first
    if result.is_error:
        return True, first.text
    assert json.loads(first.text) == result.structured_content
    return False, result.structured_content


async def store_all(session: ClientSession, facts: list[str], project_id: str) -> dict[str, int]:
    """Each fact stored through `store_memory` (each must succeed): its id by its text."""
    ids = {}
    for fact in facts:
        err, stored = await call(session, "store_memory", content=fact, project_id=project_id)
        assert not err, stored
        ids[fact] = stored["id"]
    return ids


async def ask_all(session: ClientSession, queries: list[str], project_id: str) -> dict[str, tuple[bool, Any]]:
    """Each query's `retrieve_memories` answer, (is_error, content), by the query."""
    return {q: await call(session, "retrieve_memories", query=q, project_id=project_id) for q in queries}
