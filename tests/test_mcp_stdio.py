"""The same tools over `yullu stdio`, driven by the official MCP client."""

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.mcp_client import call
from tests.processes import REPO, git_repo, product_env, stub_env
from tests.stubs import StubServer

CONTRACT_TOOLS = {
    "store_memory", "retrieve_memories", "update_memory", "delete_memory", "list_memories",
    "reconcile_memories", "record_messages", "dream_now", "get_usage", "build_context", "rate_recall",
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_round_trip_over_stdio(tmp_path: Path, stub_api: StubServer) -> None:
    env = product_env(tmp_path / "home", **stub_env(stub_api.url))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "yullu_cli.main", "stdio"], env=env, cwd=str(REPO)
    )

    async def go() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert names >= CONTRACT_TOOLS  # docs/contract.md §3's tools; more may come
            err, stored = await call(s, "store_memory", content="vec:1,0,0 stdio works", project_id="acme/stdio")
            assert not err
            err, found = await call(s, "retrieve_memories", query="vec:1,0,0 does stdio work", project_id="acme/stdio")
            assert not err and found["results"][0]["id"] == stored["id"]
            err, updated = await call(s, "update_memory", id=stored["id"], category="gotcha")
            assert not err and updated["category"] == "gotcha"
            err, listed = await call(s, "list_memories", project_id="acme/stdio")
            assert [m["id"] for m in listed["memories"]] == [stored["id"]]
            err, deleted = await call(s, "delete_memory", id=stored["id"])
            assert deleted["deleted"] is True
            err, message = await call(s, "update_memory", id=stored["id"], content="x")
            assert err and message == f"memory {stored['id']} not found"
            return stored

    asyncio.run(go())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_over_stdio_a_call_naming_no_project_is_about_the_folder_the_client_started_it_in(
    tmp_path: Path, stub_api: StubServer
) -> None:
    # SPEC §2: explicit project_id → cwd → (stdio only) the server's working directory, the client's folder.
    checkout = git_repo(tmp_path / "checkout", "git@github.com:acme/stdio-here.git")
    env = product_env(tmp_path / "home", **stub_env(stub_api.url))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "yullu_cli.main", "stdio"], env=env, cwd=str(checkout)
    )

    async def go() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            err, stored = await call(s, "store_memory", content="vec:1,0,0 Deploys run make ship", category="process")
            assert not err and stored["project_id"] == "github.com/acme/stdio-here", stored
            err, listed = await call(s, "list_memories")
            assert not err and listed["project_id"] == "github.com/acme/stdio-here"
            assert [m["id"] for m in listed["memories"]] == [stored["id"]]

    asyncio.run(go())
