"""Walk 16's small findings (a fresh clone, a clean HOME, the real CLIs), each red without its fix."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from memories.models import Memory
from tests.mcp_client import call, http_session

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads the token from the database


def test_an_oversized_mcp_message_is_refused_in_a_sentence_the_client_shows(
    live_server_url: str, owner_token: str
) -> None:
    """A 5 MB `store_memory` over MCP was answered by the SDK's own limit: 413 with the plain text "Request body
    too large", which the SDK client shows as "Server returned an error response" (no limit, no reason). It is
    now our JSON-RPC error at the same 4 MB, naming the limit; nothing is stored and the session goes on."""

    async def go() -> tuple[str, Any]:
        async with http_session(live_server_url, owner_token) as session:
            with pytest.raises(MCPError) as refused:
                await call(session, "store_memory", content="word " * 1_000_000, project_id="acme/app")
            return str(refused.value), await call(session, "list_memories", project_id="acme/app")

    said, listed = asyncio.run(go())
    assert "The request body is too large: the limit here is 4096 KB." in said, said
    assert listed[0] is False, listed
    assert not Memory.objects.exists()
