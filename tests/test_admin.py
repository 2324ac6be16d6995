"""The review UI: every page and action, with anonymous / non-staff / staff personas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from dreaming.models import DreamPass, DreamPrompt, DreamSchedule, SessionMessage
from dreaming.prompt import DEFAULT_PROMPT
from dreaming.services import record_messages
from memories.models import Memory, MemoryEvent, RejectedMemory
from memories.scope import resolve
from memories.search import queries
from memories.write import create, edit
from sync.eventlog import read_events
from tests.stubs import StubServer
from yullu_core.locks import LockKey, advisory_lock

pytestmark = pytest.mark.django_db

PAGES = [
    "/admin/",
    "/admin/memories/memory/",
    "/admin/memories/memory/review/",
    "/admin/memories/memory/retrievals/",
    "/admin/memories/memory/stats/",
    "/admin/memories/memory/usage/",
    "/admin/memories/memory/settings/",
    "/admin/memories/rejectedmemory/",
    "/admin/dreaming/dreampass/",
    "/admin/dreaming/dreampass/dreaming/",
    "/admin/dreaming/dreamschedule/",
]


@pytest.fixture
def staff(client: Client, owner: Any) -> Client:
    client.force_login(owner)
    return client


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_users_are_sent_to_login(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize("url", PAGES)
def test_non_staff_users_get_403(client: Client, stranger: Any, url: str) -> None:
    client.force_login(stranger)
    assert client.get(url).status_code == 403


# What each page must show of the data `test_staff_see_every_page` puts in.
SHOWS = {
    "/admin/": ["Builds run in CI"],  # the dashboard's top recalled memory
    "/admin/memories/memory/": ["Builds run in CI", "acme/a"],
    "/admin/memories/memory/review/": ["Builds run in CI"],
    "/admin/memories/memory/retrievals/": ["vec:1,0,0 builds", "Builds run in CI"],
    "/admin/memories/memory/stats/": ["Builds run in CI"],  # top recalled
    "/admin/memories/memory/usage/": ["stub-embed"],  # the provider calls, by model
    "/admin/memories/memory/settings/": ["stub-embed"],  # the effective embedding model
    "/admin/memories/rejectedmemory/": ["A vague fact to reject"],
    "/admin/dreaming/dreampass/": ["acme/dreamed"],
    "/admin/dreaming/dreampass/dreaming/": ["we build with make", "acme/dreamed"],
    "/admin/dreaming/dreamschedule/": ["acme/on-a-schedule"],
}


def test_every_page_has_an_expectation() -> None:
    assert set(SHOWS) == set(PAGES)


@pytest.mark.parametrize("url", PAGES)
def test_staff_see_every_page(staff: Client, stub_embedder: StubServer, url: str) -> None:
    create.store_memory(resolve("acme/a", None), "vec:1,0,0 Builds run in CI", "process", ["ci"])
    queries.search("acme/a", "vec:1,0,0 builds", min_similarity=0.5)
    rejected = create.store_memory(resolve("acme/a", None), "A vague fact to reject", "domain").memory
    edit.rate_memory(rejected.id, 3)
    record_messages("acme/a", "s1", [{"role": "user", "content": "we build with make"}])
    DreamPass.objects.create(project_id="acme/dreamed", trigger="manual", phase="done", ops_created=2)
    DreamSchedule.objects.create(project_id="acme/on-a-schedule", interval_seconds=3600)
    response = staff.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    for text in SHOWS[url]:
        assert text in page, f"{url} does not show {text!r}"


def test_rating_3_archives_and_writes_a_delete_event(
    staff: Client, stub_embedder: StubServer, repo: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # event files are written on commit
        m = create.store_memory(resolve(None, str(repo)), "A vague fact", "domain").memory
        response = staff.post(
            "/admin/memories/memory/review/", {"memory_id": m.pk, "rating": "3", "comment": "vague"}, follow=True
        )
    assert f"Memory {m.pk} rated 3: archived to rejected memories" in response.content.decode()
    assert not Memory.objects.filter(pk=m.pk).exists()
    assert RejectedMemory.objects.get().rating_comment == "vague"
    kinds = [e.type for _, e in read_events(repo / ".yullu" / "logs").events]
    assert sorted(kinds) == ["create", "delete", "embedding"]


def test_rating_8_keeps_the_memory(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/a", None), "A good fact").memory
    staff.post("/admin/memories/memory/review/", {"memory_id": m.pk, "rating": "8"})
    assert Memory.objects.get(pk=m.pk).rating == 8


def test_the_bulk_buttons_name_the_rating_they_give_not_a_count(staff: Client, stub_embedder: StubServer) -> None:
    # Found on the walk: "Keep selected (8)" with nothing selected read as "8 memories selected".
    create.store_memory(resolve("acme/a", None), "A fact to review")
    page = staff.get("/admin/memories/memory/review/").content.decode()
    assert "Keep selected (rate 8)" in page and "Reject selected (rate 3)" in page


@pytest.mark.parametrize("rating", ["0", "11", "x"])
def test_a_bad_rating_is_refused_with_a_message(staff: Client, stub_embedder: StubServer, rating: str) -> None:
    m = create.store_memory(resolve("acme/a", None), "A fact").memory
    response = staff.post("/admin/memories/memory/review/", {"memory_id": m.pk, "rating": rating}, follow=True)
    assert "rating must be a whole number from 1 to 10" in response.content.decode().lower()
    assert Memory.objects.get(pk=m.pk).rating is None


def test_editing_goes_through_the_service_and_syncs(
    staff: Client, stub_embedder: StubServer, repo: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # event files are written on commit
        m = create.store_memory(resolve(None, str(repo)), "Old text", "process", ["a"]).memory
        response = staff.post(
            f"/admin/memories/memory/{m.pk}/change/",
            {"project_id": m.project_id, "content": "New text", "category": "gotcha", "tags_text": "a, b"},
        )
    assert response.status_code == 302
    m.refresh_from_db()
    assert (m.content, m.category, m.tags) == ("New text", "gotcha", ["a", "b"])
    update = [e for _, e in read_events(repo / ".yullu" / "logs").events if e.type == "update"]
    assert update[0].content == "New text" and update[0].category == "gotcha"


def test_an_edit_with_a_secret_is_refused_on_the_form(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/a", None), "Old text").memory
    response = staff.post(
        f"/admin/memories/memory/{m.pk}/change/",
        {"project_id": m.project_id, "content": "key AKIA" + "Q3ZKX7LM2VPB4TJW", "category": "", "tags_text": ""},
    )
    assert response.status_code == 200 and "aws-access-token" in response.content.decode()
    assert Memory.objects.get(pk=m.pk).content == "Old text"


def test_delete_with_confirmation_uses_the_service(staff: Client, stub_embedder: StubServer) -> None:
    m = create.store_memory(resolve("acme/a", None), "Doomed").memory
    assert "Are you sure" in staff.get(f"/admin/memories/memory/{m.pk}/delete/").content.decode()
    staff.post(f"/admin/memories/memory/{m.pk}/delete/", {"post": "yes"})
    assert not Memory.objects.exists()
    assert MemoryEvent.objects.filter(kind="deleted", metadata__source="admin").count() == 1


def test_bulk_archive_action(staff: Client, stub_embedder: StubServer) -> None:
    ids = [create.store_memory(resolve("acme/a", None), f"fact {i}").memory.pk for i in range(3)]
    staff.post("/admin/memories/memory/", {"action": "archive_selected", "_selected_action": ids})
    assert Memory.objects.count() == 0 and RejectedMemory.objects.count() == 3


def test_semantic_search_previews_without_logging(staff: Client, stub_embedder: StubServer) -> None:
    create.store_memory(resolve("acme/a", None), "vec:1,0,0 exact match")
    create.store_memory(resolve("acme/a", None), "vec:0,1,0 unrelated")
    page = staff.get("/admin/memories/memory/", {"q": "vec:1,0,0 query", "project_id__exact": "acme/a"})
    text = page.content.decode()
    assert "#1 · 1.00 · sent" in text and "below floor" in text
    assert not MemoryEvent.objects.filter(kind__in=["recalled", "considered"]).exists()


def test_prompt_can_be_edited_and_reset(staff: Client) -> None:
    staff.post("/admin/dreaming/dreampass/dreaming/", {"action": "save_prompt", "prompt": "Be brief."})
    assert DreamPrompt.objects.get().text == "Be brief."
    staff.post("/admin/dreaming/dreampass/dreaming/", {"action": "reset_prompt"})
    assert not DreamPrompt.objects.exists()
    assert DEFAULT_PROMPT[:40] in staff.get("/admin/dreaming/dreampass/dreaming/").content.decode()


def test_dream_now_button_runs_a_pass(staff: Client, stub_embedder: StubServer, monkeypatch: Any) -> None:
    from yullu_site.celery import app

    monkeypatch.setitem(settings.YULLU, "reasoning", {"provider": "openai", "model": "stub", "timeout_seconds": 5})
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    record_messages("acme/a", "s1", [{"role": "user", "content": "we deploy on Tuesdays"}])
    stub_embedder.chat_replies.append(
        json.dumps({"operations": [{"op": "create", "content": "Deploys happen on Tuesdays", "category": "process"}]})
    )
    staff.post("/admin/dreaming/dreampass/dreaming/", {"action": "dream", "project_id": "acme/a"})
    assert DreamPass.objects.get().ops_created == 1 and SessionMessage.objects.count() == 0


def test_settings_page_masks_keys(staff: Client, monkeypatch: Any) -> None:
    monkeypatch.setitem(settings.YULLU, "openai", {"api_key": "sk-live-very-secret-value-123", "base_url": ""})
    text = staff.get("/admin/memories/memory/settings/").content.decode()
    assert "openai.api_key" in text and "sk-live-very-secret-value-123" not in text and "(set)" in text


def test_two_interleaved_preview_searches_each_show_their_own_match(owner: Any, stub_embedder: StubServer) -> None:
    """The MemoryAdmin is one instance for every request: request B's search must not leak into
    the match column of request A's rows (it did when the preview was kept on the admin)."""
    from django.contrib import admin
    from django.test import RequestFactory

    from memories.admin import MemoryAdmin

    a = create.store_memory(resolve("acme/a", None), "vec:1,0,0 deploys go through make ship").memory
    create.store_memory(resolve("acme/b", None), "vec:0,1,0 tests run with make test")
    model_admin = admin.site._registry[Memory]
    assert isinstance(model_admin, MemoryAdmin)

    def rows(project: str, q: str) -> list[Memory]:
        request = RequestFactory().get("/admin/memories/memory/", {"q": q, "project_id__exact": project})
        request.user = owner
        found, _ = model_admin.get_search_results(request, model_admin.get_queryset(request), q)
        return list(found)

    rows_a = rows("acme/a", "vec:1,0,0 how do we deploy")
    rows_b = rows("acme/b", "vec:1,0,0 how do we test")  # renders after A's query ran
    assert [m.pk for m in rows_a] == [a.pk]
    assert model_admin.match(rows_a[0]) == '<span class="y-nowrap">#1 · 1.00 · sent</span>'
    assert "below floor" in model_admin.match(rows_b[0])


def test_pages_name_an_icon_that_is_served_so_browsers_never_ask_for_a_missing_favicon(
    client: Client, admin_client: Client
) -> None:
    from django.contrib.staticfiles import finders

    for who, page in ((client, "/admin/login/"), (admin_client, "/admin/")):
        html = who.get(page).content.decode()
        assert '<link rel="icon" href="/static/yullu/favicon.svg" type="image/svg+xml"' in html, page
    assert finders.find("yullu/favicon.svg")
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"] == "/static/yullu/favicon.svg"


def test_a_pass_whose_process_died_is_shown_interrupted_not_running(staff: Client) -> None:
    # The passes table (Dreaming page, dashboard) drew every unfinished pass as running, one whose process
    # died too, until the project's next pass; only the status JSON asked whether its lock was held.
    DreamPass.objects.create(project_id="acme/dead", phase="session 1 of 1")
    DreamPass.objects.create(project_id="acme/live", phase="session 2 of 3")
    with advisory_lock(LockKey.DREAM, "acme/live") as got:
        assert got
        pages = [staff.get(url).content.decode() for url in ("/admin/dreaming/dreampass/dreaming/", "/admin/")]
    for page in pages:
        assert 'y-bad" data-phase>interrupted</span>' in page
        assert 'y-run" data-phase>session 2 of 3</span>' in page
        assert "session 1 of 1" not in page


def test_the_header_keeps_a_memorys_case_and_capitalises_only_the_app_and_model(
    staff: Client, stub_embedder: StubServer
) -> None:
    """Walk 16: the change page's header read `Evolve() in attrs-app …` for `evolve() in attrs-app …` (Unfold's
    capfirst on every part of it); the app's and the model's names keep their capital."""
    m = create.store_memory(resolve("acme/app", None), "evolve() in attrs-app copies via __init__", "gotcha").memory
    page = staff.get(f"/admin/memories/memory/{m.pk}/change/").content.decode()
    assert "Evolve()" not in page, page
    header = page[page.index("chevron_right") - 2000 : page.rindex("chevron_right") + 1000]
    assert "evolve() in attrs-app copies via __init__" in header, header
    assert "Memories" in header, header
