"""The tools over Streamable HTTP: the real ASGI app under uvicorn and the official MCP client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types

from tests.mcp_client import MCP_HELLO, call, http_session, initialized_session
from tests.processes import git_repo
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "get_memory",
    "link_memories",
    "list_conflicts",
    "resolve_conflict",
    "store_memory",
    "retrieve_memories",
    "update_memory",
    "delete_memory",
    "list_memories",
    "reconcile_memories",
    "record_messages",
    "dream_now",
    "get_usage",
    "build_context",
    "rate_recall",
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_tools_are_listed_with_described_parameters(live_server_url: str, owner_token: str) -> None:
    async def go() -> list[types.Tool]:
        async with initialized_session(live_server_url, owner_token) as (s, init):
            told = init.instructions or ""
            assert all(n in told for n in ("retrieve_memories", "get_memory", "link_memories", "resolve_conflict"))
            return (await s.list_tools()).tools

    tools = {t.name: t for t in run(go())}
    assert set(tools) == TOOLS
    for tool in tools.values():
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["store_memory"].input_schema["required"] == ["content"]
    assert tools["retrieve_memories"].input_schema["properties"]["limit"]["default"] == 5
    assert tools["list_memories"].input_schema["properties"]["limit"]["default"] == 20
    assert set(tools["record_messages"].input_schema["required"]) == {"session_id", "messages"}
    assert tools["update_memory"].input_schema["required"] == ["id"]


def test_store_retrieve_update_list_delete_round_trip(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, stored = await call(
                s,
                "store_memory",
                content="vec:1,0,0 We deploy with make ship",
                category="process",
                tags=["deploy"],
                project_id="acme/mcp",
            )
            assert (
                not err
                and set(stored) == {"id", "uuid", "project_id", "created", "similar"}
                and stored["project_id"] == "acme/mcp"
            )
            err, found = await call(s, "retrieve_memories", query="vec:1,0,0 how do we deploy?", project_id="acme/mcp")
            assert not err and found["project_id"] == "acme/mcp"
            hit = found["results"][0]
            assert hit["id"] == stored["id"] and hit["rank"] == 1 and 0.99 <= hit["similarity"] <= 1.0
            err, updated = await call(s, "update_memory", id=stored["id"], tags=["deploy", "ci"])
            assert not err and updated["tags"] == ["deploy", "ci"] and updated["category"] == "process"
            err, listed = await call(s, "list_memories", project_id="acme/mcp")
            assert not err and [m["id"] for m in listed["memories"]] == [stored["id"]]
            err, deleted = await call(s, "delete_memory", id=stored["id"])
            assert not err and deleted == {"id": stored["id"], "uuid": stored["uuid"], "deleted": True}
            err, listed = await call(s, "list_memories", project_id="acme/mcp")
            assert listed["memories"] == []

    run(go())


def test_the_server_tells_an_assistant_when_to_retrieve_store_and_record(
    live_server_url: str, owner_token: str
) -> None:
    # SPEC §3: instructions on when to call retrieve_memories (before codebase questions), store_memory
    # (durable learnings, with a category and cwd) and record_messages.
    async def go() -> str:
        async with initialized_session(live_server_url, owner_token) as (_, init):
            return " ".join((init.instructions or "").split())

    text = run(go())
    assert "Before answering a question about this codebase" in text and "call retrieve_memories" in text
    assert "call store_memory with one self-contained fact, a `category`" in text and "and `cwd`" in text
    assert "call record_messages" in text


def test_cwd_resolves_the_project_and_records_its_location(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, tmp_path: Path
) -> None:
    from memories.models import ProjectLocation

    git_repo(tmp_path, "git@github.com:acme/viacwd.git")

    async def go() -> dict[str, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return (await call(s, "store_memory", content="fact", cwd=str(tmp_path)))[1]

    assert run(go())["project_id"] == "github.com/acme/viacwd"
    assert ProjectLocation.objects.filter(project_id="github.com/acme/viacwd").exists()


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("update_memory", {"id": 1}, "nothing to update"),
        ("update_memory", {"id": 987654, "content": "x"}, "memory 987654 not found"),
        ("delete_memory", {"id": 987654}, "memory 987654 not found"),
        ("record_messages", {"session_id": "s", "messages": []}, "messages must be a non-empty list"),
        (
            "record_messages",
            {
                "session_id": "s",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "user", "content": "a"},
                    {"role": "bot", "content": "x"},
                ],
            },
            "messages[2].role must be 'user' or 'assistant'",
        ),
        (
            "record_messages",
            {"session_id": "s", "messages": [{"role": "user", "content": ""}]},
            "messages[0].content must be a non-empty string",
        ),
        ("record_messages", {"session_id": "s", "messages": ["hello"]}, "messages[0] must be an object"),
        (
            "record_messages",
            {"session_id": "", "messages": [{"role": "user", "content": "x"}]},
            "session_id must be a non-empty string",
        ),
        ("store_memory", {"content": ""}, "content must not be empty"),
        ("store_memory", {"content": "x" * 9000}, "the limit is 8000"),
        ("retrieve_memories", {"query": "x", "limit": 0}, "limit"),
        ("retrieve_memories", {"query": "x", "limit": 500}, "limit"),
    ],
)
def test_bad_arguments_are_one_line_tool_errors(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, tool: str, args: dict[str, Any], message: str
) -> None:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            await call(s, "store_memory", content="seed fact", project_id="acme/err")
            scoped = {"project_id": "acme/err"} if tool in ("record_messages", "store_memory") else {}
            return await call(s, tool, **scoped, **args)

    is_error, text = run(go())
    assert is_error
    assert message in text
    assert "Traceback" not in text and "\n" not in text.strip()


def test_record_messages_buffers_turns(live_server_url: str, owner_token: str) -> None:
    from dreaming.models import SessionMessage

    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(
                s,
                "record_messages",
                session_id="sess-1",
                project_id="acme/dream",
                messages=[{"role": "user", "content": "we use pnpm here"}, {"role": "assistant", "content": "noted"}],
            )

    err, result = run(go())
    assert not err and result == {"session_id": "sess-1", "project_id": "acme/dream", "count": 2}
    assert SessionMessage.objects.filter(session_id="sess-1").count() == 2


def test_get_usage_reports_buckets(live_server_url: str, owner_token: str, stub_embedder: StubServer) -> None:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            await call(s, "store_memory", content="a fact", project_id="acme/usage")
            return await call(s, "get_usage", recent=True)

    err, usage = run(go())
    assert not err and usage["total_calls"] == 1
    assert usage["buckets"][0]["provider"] == "openai" and usage["recent"][0]["kind"] == "embed"


def test_mcp_without_a_token_is_401(live_server_url: str) -> None:
    response = httpx.post(
        f"{live_server_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("headers", [{"origin": "http://evil.example"}, {"host": "evil.example"}])
def test_foreign_origin_or_host_is_refused(live_server_url: str, owner_token: str, headers: dict[str, str]) -> None:
    response = httpx.post(
        f"{live_server_url}/mcp",
        json=MCP_HELLO,
        headers={"authorization": f"Bearer {owner_token}", "accept": "application/json, text/event-stream", **headers},
    )
    assert response.status_code in (403, 421)


def test_get_mcp_without_a_session_returns_promptly_and_the_site_stays_up(
    live_server_url: str, owner_token: str
) -> None:
    auth = {"authorization": f"Bearer {owner_token}"}
    # A GET that held the stream open would hit this timeout (ReadTimeout) and fail the test.
    response = httpx.get(f"{live_server_url}/mcp", timeout=30, headers={**auth, "accept": "text/event-stream"})
    assert response.status_code in (400, 404, 405, 406)
    for _ in range(5):  # the site still serves: an authenticated API call and the status probe answer
        assert httpx.get(f"{live_server_url}/api/memories", headers=auth, timeout=30).status_code == 200
        status = httpx.get(f"{live_server_url}/api/status", timeout=30).json()
        assert status["database"]["ok"] is True and status["broker"]["ok"] is True
