"""One memory shape on the wire: the MCP tools, the REST API and the OpenAPI schema agree on it
(and all three on memories.wire.MemoryOut / HitOut, where it is declared)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from memories.scope import Scope
from memories.wire import HitOut, MemoryOut, RecallResults
from memories.write import create
from sync.services import ReconcileResult
from tests.mcp_client import call, http_session
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

MEMORY = set(MemoryOut.__annotations__)
HIT = MEMORY | {"similarity", "rank", "anchors", "stale"}  # HitOut's own optional clears_floor is the admin preview's


def schema_fields(schema: dict[str, Any], component: str) -> set[str]:
    return set(schema["components"]["schemas"][component]["properties"])


def test_mcp_rest_and_the_openapi_schema_agree_on_the_memory_and_hit_fields(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    memory = create.store_memory(Scope("acme/wire", None), "vec:1,0,0 Deploys go through make ship", "process").memory
    auth = {"Authorization": f"Bearer {owner_token}"}
    with httpx.Client(base_url=live_server_url, headers=auth) as rest:
        schema = rest.get("/api/schema", params={"format": "json"}).json()
        rest_one = rest.get(f"/api/memories/{memory.pk}").json()
        rest_page = rest.get("/api/memories", params={"project_id": "acme/wire"}).json()["results"]
        rest_recall = rest.post(
            "/api/memories/recall", json={"project_id": "acme/wire", "query": "vec:1,0,0 deploy", "min_similarity": 0}
        ).json()
        rest_reconciled = rest.post("/api/reconcile", json={"project_id": "acme/wire"}).json()

    async def mcp() -> tuple[Any, Any, Any, Any]:
        async with http_session(live_server_url, owner_token) as s:
            _, got = await call(s, "get_memory", id=memory.pk)
            assert set(got) == MEMORY | {"anchors", "stale", "links", "history"}  # the memory, plus what surrounds it
            _, listed = await call(s, "list_memories", project_id="acme/wire")
            _, found = await call(s, "retrieve_memories", query="vec:1,0,0 deploy", project_id="acme/wire")
            _, updated = await call(s, "update_memory", id=memory.pk, tags=["ops"])
            _, reconciled = await call(s, "reconcile_memories", project_id="acme/wire")
            return listed["memories"], found, updated, reconciled

    mcp_list, mcp_recall, mcp_updated, mcp_reconciled = asyncio.run(mcp())
    rest_hits, mcp_hits = rest_recall["results"], mcp_recall["results"]

    assert schema_fields(schema, "MemoryOut") == MEMORY
    assert set(rest_page[0]) == MEMORY
    assert set(rest_one) == MEMORY | {"anchors", "stale", "links", "history"} == schema_fields(schema, "MemoryDetail")
    assert set(mcp_list[0]) == set(mcp_updated) == MEMORY
    assert schema_fields(schema, "HitOut") == set(HitOut.__annotations__) | MEMORY
    assert rest_hits and mcp_hits
    assert set(rest_hits[0]) == set(mcp_hits[0]) == HIT
    assert set(rest_recall) == set(mcp_recall) == schema_fields(schema, "RecallResults")
    assert set(mcp_recall) == set(RecallResults.__annotations__)
    assert schema_fields(schema, "ReconcileResult") == set(ReconcileResult.__annotations__)
    assert set(rest_reconciled) == set(mcp_reconciled) and set(mcp_reconciled) <= set(ReconcileResult.__annotations__)
