"""dream_now asks the connected client to do the LLM call (MCP sampling); tool calls do not leak connections."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any

import pytest
from django.db import connection
from mcp import types

from dreaming.models import SessionMessage
from dreaming.services import record_messages
from memories.models import Memory
from tests.mcp_client import call, http_session
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_dream_now_samples_through_the_calling_client(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    record_messages("acme/sampling", "s1", [{"role": "user", "content": "we always run make lint before pushing"}])
    seen: list[types.CreateMessageRequestParams] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.append(params)
        reply = json.dumps(
            {"operations": [{"op": "create", "content": "Run make lint before every push", "category": "process"}]}
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=reply), model="client-model"
        )

    async def go() -> tuple[bool, Any]:
        async with http_session(
            live_server_url, owner_token, sampling_callback=sampling, sampling_capabilities=types.SamplingCapability()
        ) as s:
            return await call(s, "dream_now", project_id="acme/sampling")

    is_error, result = asyncio.run(go())
    assert not is_error, result
    content = seen[0].messages[0].content
    assert len(seen) == 1 and isinstance(content, types.TextContent) and "make lint" in content.text
    assert "durable" in (seen[0].system_prompt or "")
    assert result["ops_created"] == 1 and result["sessions_processed"] == 1
    assert Memory.objects.get(project_id="acme/sampling").content == "Run make lint before every push"
    assert SessionMessage.objects.count() == 0


def test_without_sampling_or_reasoner_dream_now_reports_a_clear_error(live_server_url: str, owner_token: str) -> None:
    record_messages("acme/nosampling", "s1", [{"role": "user", "content": "we deploy on Fridays"}])

    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(s, "dream_now", project_id="acme/nosampling")

    _, result = asyncio.run(go())
    assert "no reasoner configured" in result["errors"][0]
    assert SessionMessage.objects.count() == 1


def test_when_the_client_fails_to_sample_dream_now_falls_back_to_the_configured_reasoner(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.conf import settings

    monkeypatch.setitem(settings.YULLU, "reasoning", {**settings.YULLU["reasoning"], "provider": "openai"})
    stub_embedder.chat_replies.append(
        json.dumps({"operations": [{"op": "create", "content": "Fallback reasoners work", "category": "process"}]})
    )
    record_messages("acme/fallback", "s1", [{"role": "user", "content": "we keep a fallback reasoner"}])

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-32600, message="sampling is switched off in this client")

    async def go() -> tuple[bool, Any]:
        async with http_session(
            live_server_url, owner_token, sampling_callback=sampling, sampling_capabilities=types.SamplingCapability()
        ) as s:
            return await call(s, "dream_now", project_id="acme/fallback")

    is_error, result = asyncio.run(go())
    assert not is_error, result
    assert result["ops_created"] == 1, result
    assert Memory.objects.get(project_id="acme/fallback").content == "Fallback reasoners work"


def _backends() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return int(cur.fetchone()[0])


@pytest.mark.slow
def test_500_tool_calls_keep_the_connection_count_bounded(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            await call(s, "store_memory", content="vec:1,0,0 bounded connections", project_id="acme/conn")
            for n in range(0, 500, 25):
                batch = [
                    call(s, "list_memories", project_id="acme/conn")
                    if i % 2
                    else call(s, "retrieve_memories", query="vec:1,0,0 connections", project_id="acme/conn")
                    for i in range(25)
                ]
                results = await asyncio.gather(*batch)
                assert not any(err for err, _ in results), n

    before = _backends()
    asyncio.run(go())
    after = _backends()
    # Tool calls run on their own pool (yullu_core.mcp.tool_pool) and keep at most one connection per thread,
    # never one per call. The live server runs in this process, so its pool threads are countable
    # (uvloop/asyncio name them uvloop_N/asyncio_N; the client loop's pool is gone once asyncio.run returns).
    pool = [t for t in threading.enumerate() if re.fullmatch(r"(uvloop|asyncio|yullu-tool)_\d+", t.name)]
    assert 0 < len(pool) <= 32, [t.name for t in threading.enumerate()]  # a default pool stays under 33
    assert after - before <= len(pool), (before, after, len(pool))
