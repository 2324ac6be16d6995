"""A reviewer's hour in the admin (lane admin18): what a new reviewer could not tell from the page alone.
Through Django's test client against the real database; the dream pass is a real one through the openai
client and the stub server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from access.actor import acting_as, actor_for_user
from dreaming.models import DreamPass
from dreaming.reasoners import configured_reasoner
from dreaming.services import record_messages, run_dream_pass
from memories import lifecycle
from memories.models import Memory, MemoryChange
from memories.scope import resolve
from memories.write import create
from sync.services import reconcile_scope
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

REVIEW = "/admin/memories/memory/review/"


@pytest.fixture
def staff(client: Client, owner: Any) -> Client:
    client.force_login(owner)
    return client


def test_a_dreamed_memory_in_the_queue_says_which_pass_proposed_it_from_which_conversation_and_why(
    staff: Client, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Walk 18: the queue said "from dream" and nothing more; the pass, the conversation and the reasoner's
    # reason were only on the pass's own page, found by reading every pass's operations.
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    record_messages("acme/shop", "chat-7", [{"role": "user", "content": "staging deploys need the VPN, always"}])
    op = {"op": "create", "content": "Staging deploys need the VPN", "category": "gotcha", "reasoning": "said twice"}
    stub_embedder.chat_replies.append(json.dumps({"operations": [op]}))
    run_dream_pass("acme/shop", reasoner=configured_reasoner())
    create.store_memory(resolve("acme/shop", None), "vec:1,0,0 An assistant's own note", source="mcp")
    dream = DreamPass.objects.get()
    page = staff.get(REVIEW).content.decode()
    assert page.count("Proposed by") == 1  # the assistant's memory has no pass to name
    assert f'href="/admin/dreaming/dreampass/{dream.pk}/change/"' in page
    assert "<code>chat-7</code>" in page and "said twice" in page
    Memory.objects.filter(content="Staging deploys need the VPN").update(content="Staging deploys need a VPN")
    assert "Proposed by" not in staff.get(REVIEW).content.decode()  # edited since: no origin rather than a wrong one


SECRET_TAG = "ghp_R8xK2mQv9LpT4wZs7NcY1bHd6FjE3aUo0GiV"


def test_a_secret_pasted_as_a_tag_is_refused_under_the_tags_field_and_nothing_changes(
    staff: Client, stub_embedder: StubServer
) -> None:
    # Walk 18: the refusal stood above the form ("the content contains a credential") while the content had
    # none; the reviewer had to guess which field held it.
    kept = create.store_memory(resolve("acme/shop", None), "Releases are tagged by CI", tags=["ci"]).memory
    form = {"content": kept.content, "category": "", "importance": "", "tags_text": f"ci, {SECRET_TAG}"}
    response = staff.post(f"/admin/memories/memory/{kept.pk}/change/", form)
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["tags_text"] and "contains a credential" in errors["tags_text"][0], errors
    response = staff.post(f"/admin/memories/memory/{kept.pk}/change/", {**form, "content": f"token {SECRET_TAG}"})
    assert "contains a credential" in response.context["adminform"].form.errors["content"][0]
    assert Memory.objects.get(pk=kept.pk).tags == ["ci"]


def test_the_rejected_list_says_who_archived_each_memory_and_why(staff: Client, stub_embedder: StubServer) -> None:
    # Walk 18: rejected memories showed what and when, never by whom, and a rejection next to an expiry looked alike.
    scope = resolve("acme/shop", None)
    rejected = create.store_memory(scope, "vec:1,0,0 Tabs, not spaces", "style").memory
    staff.post(REVIEW, {"action": "rate", "memory_id": rejected.pk, "rating": "2"})
    expired = create.store_memory(scope, "vec:0,1,0 The beta banner stays up", ttl_days=1).memory
    Memory.objects.filter(pk=expired.pk).update(expires_at="2020-01-01T00:00:00Z")
    lifecycle.prune_expired()
    page = staff.get("/admin/memories/rejectedmemory/").content.decode()
    assert (
        "Archived by" in page and "Rejected by owner (admin)" in page and "Expired (its time to live ran out)" in page
    )


def test_a_rating_sent_after_the_session_ended_says_on_the_login_page_that_it_was_not_saved(
    client: Client, stub_embedder: StubServer
) -> None:
    # Walk 18: with the session gone, pressing 8 led to the login page and, after logging in, back to the same
    # queue: nothing said the rating had been dropped.
    memory = create.store_memory(resolve("acme/shop", None), "vec:1,0,0 Tabs, not spaces", "style").memory
    response = client.post(REVIEW, {"action": "rate", "memory_id": memory.pk, "rating": "8"}, follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0].startswith("/admin/login/") and 'id="login-form"' in page
    assert "Your session had ended, so what you just sent was not saved" in page
    assert Memory.objects.get(pk=memory.pk).rating is None
    assert "Your session had ended" not in client.get("/admin/login/").content.decode()  # said once
    assert "Your session had ended" not in client.post("/admin/logout/", follow=True).content.decode()


def test_a_teammates_memory_in_the_queue_names_the_teammate(
    staff: Client, repo: Path, keyword_only: None, owner: Any
) -> None:
    # Walk 18: the queue said "from teammate" and the name was only in the memory's history.
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    event = {
        "id": "00000000-0000-4000-8000-000000000001",
        "type": "create",
        "memory_id": "22222222-2222-4222-8222-222222222222",
        "ts": "2026-06-01T00:00:01Z",
        "content": "The deploy key rotates on the first of the month.",
        "tags": [],
        "author": "Dana Reyes",
    }
    (folder / "teammate-1.json").write_text(json.dumps(event))
    scope = resolve(None, str(repo))
    assert reconcile_scope(scope)["created"] == 1
    with acting_as(actor_for_user(owner)):
        create.store_memory(scope, "Feature flags live in flags.yaml, not in the database.", source="admin")
    page = staff.get(REVIEW).content.decode()
    assert "from teammate <b>Dana Reyes</b>" in page and "from person <b>owner</b>" in page


def test_a_project_picked_under_filters_searches_by_meaning(staff: Client, stub_embedder: StubServer) -> None:
    # Walk 18: the Filters panel's project (?project_id=) was not the one the preview read (?project_id__exact=),
    # so a question searched as words and found nothing.
    create.store_memory(resolve("acme/a", None), "vec:1,0,0 exact match")
    create.store_memory(resolve("acme/a", None), "vec:0,1,0 unrelated")
    page = staff.get("/admin/memories/memory/", {"q": "vec:1,0,0 query", "project_id": "acme/a"}).content.decode()
    assert "#1 · 1.00 · sent" in page and "Search acme/a by meaning" in page
    words = staff.get("/admin/memories/memory/", {"q": "unrelated"}).content.decode()
    assert "pick a project under Filters to search by meaning" in words and "#1 ·" not in words


def test_undoing_a_keep_is_in_the_memorys_history(staff: Client, stub_embedder: StubServer) -> None:
    # Walk 18: after `u` undid a keep, the memory was back in the queue while its history still ended "rated 8".
    memory = create.store_memory(resolve("acme/shop", None), "vec:1,0,0 Tabs, not spaces", "style").memory
    staff.post(REVIEW, {"action": "rate", "memory_id": memory.pk, "rating": "8"})
    staff.post(REVIEW, {"action": "undo_keep", "memory_id": memory.pk})
    rows = MemoryChange.objects.filter(memory_uuid=memory.uuid).order_by("created_at", "id")
    assert [(r.action, r.source, r.user.get_username() if r.user else None) for r in rows][1:] == [
        ("rated", "admin", "owner"),
        ("unrated", "admin", "owner"),
    ]
    assert "unrated" in staff.get(f"/admin/memories/memory/{memory.pk}/change/").content.decode()
