"""The benchmarks' MCP client: the official SDK over Streamable HTTP, as an assistant connects."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized official-SDK client session over Streamable HTTP, as an assistant opens one."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
