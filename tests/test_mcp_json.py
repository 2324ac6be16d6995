"""MCP POSTs are answered with one JSON body unless the tool may talk back mid-call (issue 16,
yullu_site/mcp/transport.py): cheaper for the web process, and dream_now keeps its SSE stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

from tests.conftest import LiveServer
from tests.mcp_client import call, http_session
from tests.stubs import StubServer
from yullu_site.mcp.transport import streamable_http_app

pytestmark = pytest.mark.django_db(transaction=True)

ACCEPT = {"accept": "application/json, text/event-stream"}


@contextmanager
def serving(app: Any) -> Iterator[str]:
    server = LiveServer(app)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def rpc(method: str, id: int | None = None, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    return message if id is None else {**message, "id": id}


def open_session(http: httpx.Client, url: str) -> dict[str, str]:
    """Initialize by hand; the headers every later request of the session carries."""
    client_info = {"name": "raw", "version": "0"}
    init = http.post(
        url, json=rpc("initialize", 1, protocolVersion="2025-11-25", capabilities={}, clientInfo=client_info)
    )
    assert init.status_code == 200, init.text
    headers = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    assert http.post(url, json=rpc("notifications/initialized"), headers=headers).status_code == 202
    return headers


def test_a_retrieve_is_answered_with_one_json_body_and_dream_now_with_an_event_stream(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    url = f"{live_server_url}/mcp"
    with httpx.Client(headers={**ACCEPT, "authorization": f"Bearer {owner_token}"}, timeout=30) as http:
        session = open_session(http, url)
        args = {"query": "how do we deploy?", "project_id": "acme/json"}
        retrieve = http.post(url, json=rpc("tools/call", 2, name="retrieve_memories", arguments=args), headers=session)
        assert retrieve.headers["content-type"] == "application/json"
        assert retrieve.json()["id"] == 2 and retrieve.json()["result"]["structuredContent"]["results"] == []
        listed = http.post(url, json=rpc("tools/list", 3), headers=session)
        assert listed.headers["content-type"] == "application/json" and listed.json()["result"]["tools"]
        dream = http.post(url, json=rpc("tools/call", 4, name="dream_now", arguments={}), headers=session)
        assert dream.headers["content-type"].startswith("text/event-stream")
        assert '"id":4' in dream.text


def noisy_app(talks_back: bool) -> Any:
    """A server whose one tool logs and reports progress before answering."""
    server = MCPServer(name="noisy")

    @server.tool()
    async def noisy(ctx: Context) -> str:
        await ctx.info("halfway there")
        await ctx.report_progress(1, 2)
        return "the real answer"

    return streamable_http_app(server, stateless=False, security_settings=None, talks_back=lambda _name: talks_back)


@pytest.mark.parametrize("talks_back", [False, True])
def test_a_tool_that_logs_still_returns_its_real_response(talks_back: bool) -> None:
    logged: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.data)

    async def go(url: str) -> tuple[bool, Any]:
        with anyio.fail_after(60):  # a notification taken for the response would leave the call waiting
            async with http_session(url, "unused", logging_callback=on_log) as s:
                result = await s.call_tool("noisy", {})
                first = result.content[0]
                assert isinstance(first, types.TextContent)
                return bool(result.is_error), first.text

    with serving(noisy_app(talks_back)) as url:
        assert asyncio.run(go(url)) == (False, "the real answer")
        with httpx.Client(headers=ACCEPT, timeout=30) as http:
            session = open_session(http, f"{url}/mcp")
            raw = http.post(f"{url}/mcp", json=rpc("tools/call", 2, name="noisy", arguments={}), headers=session)
    if talks_back:  # on SSE the log line reaches the client; in a JSON body there is no room for it
        assert logged == ["halfway there"] and raw.headers["content-type"].startswith("text/event-stream")
    else:
        assert logged == [] and raw.headers["content-type"] == "application/json"
        assert raw.json()["result"]["content"][0]["text"] == "the real answer"


def test_stateless_mode_answers_in_json_and_the_sdk_client_works(
    owner_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from yullu_site.mcp.http import build_mcp_asgi

    monkeypatch.setenv("YULLU_MCP_STATELESS", "1")
    headers = {**ACCEPT, "authorization": f"Bearer {owner_token}"}

    async def go(url: str) -> tuple[bool, Any]:
        async with http_session(url, owner_token) as s:
            return await call(s, "list_memories", project_id="acme/stateless", limit=1)

    with serving(build_mcp_asgi()) as url:
        assert asyncio.run(go(url)) == (False, {"project_id": "acme/stateless", "memories": []})
        listed = httpx.post(f"{url}/mcp", json=rpc("tools/list", 1), headers=headers, timeout=30)
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in listed.headers
