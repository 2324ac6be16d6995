"""Review-app pages without a browser: undo and restore, bulk rating, source filter, collapsed hook
repeats, conflicts, history, the graph's edges and who may see the scheduler internals."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from access.actor import acting_as, actor_for_user
from memories import lifecycle
from memories.models import Memory, RecallFeedback, RejectedMemory
from memories.scope import resolve
from memories.search import admin_queries, queries
from memories.search.admin_queries import graph, retrieval_page
from memories.write import create
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client, owner: Any) -> Client:
    client.force_login(owner)
    return client


@pytest.fixture
def reviewer(django_user_model: Any) -> Client:
    """Staff, not superuser: a teammate who reviews memories (a client of their own)."""
    client = Client()
    client.force_login(django_user_model.objects.create_user("teammate", password="teammate-pass-1", is_staff=True))
    return client


REVIEW = "/admin/memories/memory/review/"


def test_a_rejection_can_be_undone_and_the_memory_is_back_unrated(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/u", None), "vec:1,0,0 Tabs, not spaces", "style").memory
    staff.post(REVIEW, {"action": "rate", "memory_id": m.pk, "rating": "2"})
    rejected = RejectedMemory.objects.get()
    page = staff.get(REVIEW).content.decode()
    assert "Undo last rating" in page
    response = staff.post(REVIEW, {"action": "restore", "rejected_id": rejected.pk}, follow=True)
    assert "Restored 1 memory" in response.content.decode()
    assert RejectedMemory.objects.count() == 0
    assert Memory.objects.get(content=m.content).rating is None


def test_a_keep_can_be_undone(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/u", None), "vec:1,0,0 Tabs, not spaces", "style").memory
    staff.post(REVIEW, {"action": "rate", "memory_id": m.pk, "rating": "9"})
    assert Memory.objects.get(pk=m.pk).rating == 9
    staff.post(REVIEW, {"action": "undo_keep", "memory_id": m.pk})
    assert Memory.objects.get(pk=m.pk).rating is None


def test_bulk_rating_needs_a_selection_and_rates_every_selected(staff: Client, stub_embedder: StubServer) -> None:
    scope = resolve("acme/u", None)
    a = create.store_memory(scope, "vec:1,0,0 first fact").memory
    b = create.store_memory(scope, "vec:0,1,0 second fact").memory
    empty = staff.post(REVIEW, {"action": "bulk", "rating": "8"}, follow=True)
    assert "Select memories first" in empty.content.decode()
    staff.post(REVIEW, {"action": "bulk", "rating": "8", "selected": [a.pk, b.pk]})
    assert set(Memory.objects.values_list("rating", flat=True)) == {8}


def test_the_queue_filters_by_source(staff: Client, stub_embedder: StubServer) -> None:
    scope = resolve("acme/u", None)
    create.store_memory(scope, "vec:1,0,0 from a dream", source="dream")
    create.store_memory(scope, "vec:0,1,0 from an assistant", source="mcp")
    dreamed = staff.get(REVIEW + "?source=dream").content.decode()
    assert "from a dream" in dreamed and "from an assistant" not in dreamed
    assert "from an assistant" in staff.get(REVIEW + "?source=assistant").content.decode()


def test_the_unfiltered_queue_says_any_source(staff: Client, stub_embedder: StubServer) -> None:
    """Walk 23: with no filter the Source box said the last row's source ("person"), so a reviewer believed the
    queue filtered and the next filter change sent it (the row's source leaked out of the comprehension)."""
    create.store_memory(resolve("acme/u", None), "vec:1,0,0 typed at the terminal", source="cli")
    page = staff.get(REVIEW).content.decode()
    assert "typed at the terminal" in page
    assert '<option value="person" selected' not in page and '<option value="" selected' not in page
    assert '<option value="person" selected' in staff.get(REVIEW + "?source=person").content.decode()


def test_the_queue_names_whose_assistant_stored_a_memory_on_a_team_server(
    staff: Client, stub_embedder: StubServer, django_user_model: Any
) -> None:
    """Walk 23: Ben's assistant's memory said "from assistant" beside "from person admin": on a team server the
    reviewer could not tell whose it was. The owner's own assistant (a one-person install's every row) stays unnamed."""
    scope = resolve("acme/u", None)
    with acting_as(actor_for_user(django_user_model.objects.create_user("ben"))):
        create.store_memory(scope, "vec:1,0,0 stored by ben's assistant", source="mcp")
    create.store_memory(scope, "vec:0,1,0 stored by nobody's", source="mcp")
    page = staff.get(REVIEW).content.decode()
    assert "from assistant <b>ben</b>" in page and page.count("from assistant</span>") == 1


def test_a_memory_added_at_the_terminal_is_a_persons(staff: Client, stub_embedder: StubServer) -> None:
    create.store_memory(resolve("acme/u", None), "vec:1,0,0 typed at the terminal", source="cli")
    assert "typed at the terminal" in staff.get(REVIEW + "?source=person").content.decode()
    assert "typed at the terminal" not in staff.get(REVIEW + "?source=assistant").content.decode()


def test_a_hook_prompt_recalled_twice_shows_once(stub_embedder: StubServer) -> None:
    create.store_memory(resolve("acme/h", None), "vec:1,0,0 Deploy with make release", "process")
    create.store_memory(resolve("acme/h", None), "vec:0,1,0 The VPN drops at midnight", "gotcha")
    # The hook asks with category hints first (here: nothing clears the floor), then without.
    queries.search("acme/h", "vec:1,0,0 how do we deploy?", min_similarity=0.5, categories=["gotcha"])
    queries.search("acme/h", "vec:1,0,0 how do we deploy?", min_similarity=0.5)
    groups, more = retrieval_page("acme/h", 1)
    assert len(groups) == 1 and groups[0]["repeats"] == 1 and not more
    assert groups[0]["sent"] and groups[0]["sent"][0]["content"].endswith("make release")


def test_retrievals_page_through_the_log_newest_first(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages are read from the log a chunk at a time (here 3 rows): each page shows the next
    recalls, and the last one says there is no more."""
    monkeypatch.setattr(admin_queries, "HEADS_CHUNK", 3)
    create.store_memory(resolve("acme/p", None), "vec:1,0,0 Deploy with make release", "process")
    create.store_memory(resolve("acme/p", None), "vec:0,1,0 The VPN drops at midnight", "gotcha")
    asked = [f"vec:1,0,0 question number {n}" for n in range(7)]
    for question in asked:
        queries.search("acme/p", question, min_similarity=0.0)
    pages = [retrieval_page("acme/p", n, per_page=3) for n in (1, 2, 3)]
    assert [[g["query"] for g in groups] for groups, _ in pages] == [asked[6:3:-1], asked[3:0:-1], asked[0:1]]
    assert [more for _, more in pages] == [True, True, False]
    assert all(len(g["sent"]) + len(g["dropped"]) == 2 for groups, _ in pages for g in groups)


def test_a_conflict_is_resolved_from_the_queue(staff: Client, stub_embedder: StubServer) -> None:
    scope = resolve("acme/c", None)
    old = create.store_memory(scope, "vec:1,0,0 We deploy on Fridays").memory
    new = create.store_memory(scope, "vec:0,1,0 We never deploy on Fridays").memory
    lifecycle.link_memories(new.pk, old.pk, "contradicts", source="api")
    page = staff.get("/admin/memories/memory/conflicts/").content.decode()
    assert "We deploy on Fridays" in page and "We never deploy on Fridays" in page
    conflict = lifecycle.open_conflicts("acme/c")[0]
    staff.post("/admin/memories/memory/conflicts/", {"link_id": conflict["id"], "resolution": "keep_from"})
    assert lifecycle.open_conflicts("acme/c") == []
    assert Memory.objects.get(pk=old.pk).superseded_by_id == new.pk
    history = staff.get(f"/admin/memories/memory/{old.pk}/change/").content.decode()
    assert "conflict resolved" in history and "contradicts" in history


def test_the_graph_joins_near_memories_and_links(staff: Client, stub_embedder: StubServer) -> None:
    scope = resolve("acme/g", None)
    a = create.store_memory(scope, "vec:1,0,0 a", "process").memory
    b = create.store_memory(scope, "vec:1,0.45,0 b", "gotcha").memory
    c = create.store_memory(scope, "vec:0,0,1 c").memory
    lifecycle.link_memories(c.pk, a.pk, "related", source="api")
    data = graph("acme/g", threshold=0.9)
    assert {n["category"] for n in data["nodes"]} == {"process", "gotcha", "uncategorised"}
    similar = {(e["source"], e["target"]) for e in data["edges"] if e["kind"] == "similar"}
    assert similar in ({(a.pk, b.pk)}, {(b.pk, a.pk)})
    assert {"source": c.pk, "target": a.pk, "kind": "related"} in data["edges"]
    body = staff.get("/admin/memories/memory/graph.json?project_id=acme/g&threshold=0.9").json()
    assert len(body["nodes"]) == 3 and body["nodes"][0]["url"].endswith("/change/")
    assert staff.get("/admin/memories/memory/graph.json?threshold=x").status_code == 400


def test_scheduler_internals_are_for_superusers_only(reviewer: Client, staff: Client) -> None:
    assert reviewer.get("/admin/django_celery_beat/crontabschedule/").status_code == 403
    assert reviewer.get("/admin/auth/user/").status_code == 403
    assert "Beat tasks" not in reviewer.get("/admin/").content.decode()
    assert staff.get("/admin/django_celery_beat/crontabschedule/").status_code == 200
    assert "Beat tasks" in staff.get("/admin/").content.decode()


def test_a_verdict_on_a_recalled_memory_is_saved_and_shown(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/v", None), "vec:1,0,0 Deploy with make release", "process").memory
    found = queries.search("acme/v", "vec:1,0,0 how do we deploy?", min_similarity=0.1)
    response = staff.post(
        "/admin/memories/memory/verdict/",
        {"recall_id": found.recall_id, "memory_id": m.pk, "useful": "0"},
        follow=True,
    )
    assert f"Marked memory {m.pk} not useful" in response.content.decode()
    assert not RecallFeedback.objects.get(memory=m).useful
    page = staff.get("/admin/memories/memory/retrievals/?project_id=acme/v").content.decode()
    assert 'y-chosen" name="useful" value="0"' in page
    bad = staff.post("/admin/memories/memory/verdict/", {"recall_id": "nope", "memory_id": m.pk}, follow=True)
    assert "recall_id must be" in bad.content.decode()


@pytest.mark.parametrize("rare_below", [admin_queries.RARE_SOURCE, 1])  # filtered by ids / tested per memory
def test_the_queue_filtered_by_source_lists_newest_first_and_counts_them(
    staff: Client, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch, rare_below: int
) -> None:
    monkeypatch.setattr(admin_queries, "RARE_SOURCE", rare_below)
    scope = resolve("acme/u", None)
    create.store_memory(scope, "vec:1,0,0 older from an assistant", source="mcp")
    create.store_memory(scope, "vec:0,0,1 from a dream", source="dream")
    create.store_memory(scope, "vec:0,1,0 newer from an assistant", source="rest")
    page = staff.get(REVIEW + "?source=assistant")
    assert [r["m"].content for r in page.context["rows"]] == [
        "vec:0,1,0 newer from an assistant",
        "vec:1,0,0 older from an assistant",
    ]
    assert page.context["total"] == 2
    listed = staff.get("/admin/memories/memory/?source=assistant")
    assert [m.content for m in listed.context["cl"].result_list] == [
        "vec:0,1,0 newer from an assistant",
        "vec:1,0,0 older from an assistant",
    ]
