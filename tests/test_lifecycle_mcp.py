"""docs/contract.md §10 through the real MCP client over Streamable HTTP: duplicates, supersede, feedback,
expiry args."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from memories.models import Memory
from tests.mcp_client import call, http_session
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
P = "acme/lifecycle-mcp"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_second_identical_store_is_a_duplicate_and_a_paraphrase_too(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            fact = "vec:1,0,0 We deploy with make ship"
            err, first = await call(s, "store_memory", content=fact, category="process", project_id=P)
            assert not err and first["created"] is True and first["similar"] == []
            err, again = await call(s, "store_memory", content=fact, project_id=P)
            assert not err and again["created"] is False and again["duplicate_of"] == first["id"]
            # The stub embedder maps "vec:" texts to that vector: a reworded fact with the same vector.
            err, para = await call(s, "store_memory", content="vec:1,0,0 Deploys go out using make ship", project_id=P)
            assert not err and para["duplicate_of"] == first["id"]
            err, listed = await call(s, "list_memories", project_id=P)
            assert not err and [m["id"] for m in listed["memories"]] == [first["id"]]

    run(go())


def test_a_new_memory_lists_at_most_three_similar_ones_nearest_first(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    # SPEC §10: `similar: [{id, content, similarity}]` (at most 3), so the caller can update or supersede.
    def near(cos: float, axis: int) -> str:  # cosine `cos` with (1,0,…), about 0.7 with each other
        rest = ["0"] * 7
        rest[axis] = f"{(1 - cos * cos) ** 0.5:.4f}"
        return "vec:" + ",".join([f"{cos:.4f}", *rest])

    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            ids = []
            for n, cos in enumerate((0.81, 0.85, 0.82, 0.84, 0.83)):
                err, stored = await call(s, "store_memory", content=f"{near(cos, n + 1)} Fact {n}", project_id=P)
                assert not err and stored["created"] is True, stored
                ids.append(stored["id"])
            err, new = await call(s, "store_memory", content="vec:1,0,0 The new fact", project_id=P)
            assert not err and new["created"] is True
            assert [m["id"] for m in new["similar"]] == [ids[1], ids[3], ids[4]]
            assert [m["content"] for m in new["similar"]] == [f"{near(c, n + 1)} Fact {n}" for n, c in
                                                              ((1, 0.85), (3, 0.84), (4, 0.83))]  # fmt: skip
            assert [round(m["similarity"], 2) for m in new["similar"]] == [0.85, 0.84, 0.83]

    run(go())


def test_a_superseding_memory_is_recalled_and_the_old_one_is_not(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            _, old = await call(s, "store_memory", content="vec:1,0,0 We deploy with make ship", project_id=P)
            err, new = await call(
                s,
                "store_memory",
                content="vec:1,0.6,0 make ship is retired: deploy with make release",
                supersedes=old["id"],
                project_id=P,
            )
            assert not err and new["created"] and new["supersedes"] == old["id"]
            assert [x["id"] for x in new["similar"]] == []  # the superseded memory is not offered back
            err, found = await call(s, "retrieve_memories", query="vec:1,0,0 how do we deploy?", project_id=P)
            assert not err and [h["id"] for h in found["results"]] == [new["id"]]
            err, updated = await call(
                s, "update_memory", id=new["id"], content="vec:1,0.6,0.6 deploy with make release-2", supersede=True
            )
            assert not err and updated["supersedes"] == new["id"] and updated["id"] != new["id"]

    run(go())
    assert Memory.objects.current().filter(project_id=P).count() == 1 and Memory.objects.count() == 3


def test_rate_recall_accepts_a_real_recall_and_refuses_an_unknown_one(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            _, stored = await call(
                s, "store_memory", content="vec:0,1,0 Tests need the embedded postgres", project_id=P
            )
            _, found = await call(s, "retrieve_memories", query="vec:0,1,0 how do tests run?", project_id=P)
            err, verdict = await call(
                s, "rate_recall", recall_id=found["recall_id"], memory_id=stored["id"], useful=True, comment="spot on"
            )
            assert not err and verdict["recorded"] is True
            err, text = await call(
                s, "rate_recall", recall_id="00000000-0000-4000-8000-000000000000", memory_id=stored["id"], useful=True
            )
            assert err and "unknown recall_id" in text

    run(go())


def test_importance_and_ttl_days_are_accepted_and_bad_values_refused(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, stored = await call(
                s,
                "store_memory",
                content="Use the staging DB until Friday",
                importance="high",
                ttl_days=3,
                project_id=P,
            )
            assert not err and stored["created"]
            err, text = await call(s, "store_memory", content="another", importance="urgent", project_id=P)
            assert err and "importance" in text
            err, text = await call(s, "store_memory", content="another", ttl_days=0, project_id=P)
            assert err and "ttl_days" in text

    run(go())
    m = Memory.objects.get(project_id=P)
    assert m.importance == "high" and m.expires_at is not None


@pytest.fixture
def local_embedder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real default embedder (all-MiniLM-L6-v2, offline), for what only real embeddings show."""
    from django.conf import settings

    from memories.embedding import embedders, vector_index

    monkeypatch.setitem(
        settings.YULLU, "embedding", {**settings.YULLU["embedding"], "provider": "local", "model": "all-MiniLM-L6-v2"}
    )
    embedders._cache.clear()
    vector_index.forget_cache()
    yield
    embedders._cache.clear()


def test_with_the_real_embedder_a_paraphrase_merges_and_a_changed_port_does_not(
    live_server_url: str, owner_token: str, local_embedder: None
) -> None:
    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            _, first = await call(
                s, "store_memory", content="We use pnpm, never npm, to install JavaScript dependencies.", project_id=P
            )
            err, para = await call(
                s, "store_memory", content="Install JS dependencies with pnpm rather than npm.", project_id=P
            )
            assert not err and para["created"] is False and para["duplicate_of"] == first["id"]
            _, port = await call(s, "store_memory", content="The API listens on port 8080.", project_id=P)
            err, moved = await call(s, "store_memory", content="The API listens on port 8081.", project_id=P)
            assert not err and moved["created"] is True
            assert [x["id"] for x in moved["similar"]] == [port["id"]]  # offered, so the caller can supersede

    run(go())
