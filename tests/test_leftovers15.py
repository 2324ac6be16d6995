"""The last note's small leftovers (lane fixes15): each test is red without its fix."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from memories.models import MemoryChange
from memories.scope import Scope
from memories.write import create
from sync.models import OutboxEvent
from tests.mcp_client import call, http_session
from tests.stubs import StubServer

# --- 2. linking twice answers the existing link, writing nothing again ------------------------------------------


def _trail(project_id: str) -> tuple[int, int]:
    """History rows and sync events a project's writes have left so far."""
    return MemoryChange.objects.filter(project_id=project_id).count(), OutboxEvent.objects.count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["related", "supersedes"])
def test_the_same_link_posted_again_answers_200_with_it_and_writes_nothing(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, kind: str
) -> None:
    """REST answered 201 to every repeat. The link, its history rows and its event are written once; a repeat
    (with another note) answers 200 with the link as it was; the MCP tool answers that same link too."""
    project = f"acme/links-again-{kind}"
    old = create.store_memory(Scope(project, None), "vec:1,0,0 The API listens on port 8000", "process").memory
    new = create.store_memory(Scope(project, None), "vec:0,1,0 The API listens on port 9000", "process").memory
    http = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=30)
    first = http.post(f"/api/memories/{new.pk}/links", json={"to": old.pk, "kind": kind, "note": "ports"})
    assert first.status_code == 201, first.text
    trail = _trail(project)
    again = http.post(f"/api/memories/{new.pk}/links", json={"to": old.pk, "kind": kind, "note": "other"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()  # the same link, its note unchanged
    assert _trail(project) == trail

    async def over_mcp() -> dict[str, object]:
        async with http_session(live_server_url, owner_token) as s:
            err, link = await call(s, "link_memories", from_id=new.pk, to_id=old.pk, kind=kind, note="mcp")
            assert not err, link
            return dict(link)

    assert asyncio.run(over_mcp()) == first.json()
    assert _trail(project) == trail
