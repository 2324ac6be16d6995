"""Review 19's leftovers: an undone rejection gives the memory back as it was (its origin, creation time, first
writer and channel, here and in the team log), one reading of who wrote a memory on every page, and what the
audit pages cover."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from access.actor import acting_as, actor_for_user
from dreaming.models import DreamOp, DreamPass
from memories.models import Memory, MemoryChange, MemoryEvent, RejectedMemory
from memories.scope import resolve
from memories.write import create
from sync.fold import fold
from sync.schema import Event
from sync.services import reconcile_scope
from tests import team_log
from tests.stubs import StubServer
from tests.test_sync import Machine, machine_dbs, machines, repo_origin  # noqa: F401  (fixtures)
from yullu_core.timestamps import datetime_to_ns

REVIEW = "/admin/memories/memory/review/"
U1 = "33333333-3333-4333-8333-333333333333"
CREATED = datetime(2026, 6, 1, 0, 0, 1, tzinfo=UTC)


@pytest.fixture
def staff(client: Client, owner: Any) -> Client:
    client.force_login(owner)
    return client


def _events(repo: Path) -> list[dict[str, Any]]:
    return team_log.events(repo)


def _teammate(repo: Path, n: int, kind: str, **fields: Any) -> None:
    team_log.teammate_event(repo, U1, n, kind, **fields)


# --- 1. an undone rejection ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_dreamed_memory_rejected_then_restored_comes_back_dreamed_when_it_was_with_its_pass(
    staff: Client, owner: Any, keyword_only: None
) -> None:
    """It came back as if made now, by the restorer, from the admin: "from person", today's date, no pass."""
    text = "Invoices are numbered per tenant, never globally."
    memory = create.store_memory(resolve("acme/app", None), text, "domain", ["billing"], source="dream").memory
    then = timezone.now() - timedelta(days=3)
    Memory.objects.filter(pk=memory.pk).update(created_at=then)
    dream = DreamPass.objects.create(project_id="acme/app", reasoner="openai:llama3.1", phase="done")
    DreamOp.objects.create(
        dream_pass=dream, session_id="sess-42", op="create", content=text, outcome="created", reasoning="said twice"
    )
    assert f"dream pass {dream.pk}" in staff.get(REVIEW).content.decode()

    staff.post(REVIEW, {"action": "rate", "memory_id": memory.pk, "rating": "2"})
    row = RejectedMemory.objects.get()
    assert (row.created_at, row.source, row.created_by_id) == (then, "dream", memory.created_by_id)
    assert row.origin["label"].startswith(f"dream pass {dream.pk}") and row.origin["session"] == "sess-42"
    listed = staff.get("/admin/memories/rejectedmemory/").content.decode()
    assert f"dream pass {dream.pk} (openai:llama3.1) · {then:%Y-%m-%d %H:%M}" in listed  # what a restore gives back
    pass_id = dream.pk
    dream.delete()  # passes are pruned: the origin kept with the rejection is what is left
    staff.post(REVIEW, {"action": "restore", "rejected_id": row.pk})

    back = Memory.objects.get(content=text)
    assert (back.uuid, back.created_at, back.created_by_id, back.tags) == (memory.uuid, then, None, ["billing"])
    assert back.updated_by_id == owner.pk
    assert MemoryEvent.objects.get(memory=back, kind="created").metadata["source"] == "dream"
    page = staff.get(REVIEW + "?source=dream").content.decode()
    assert text in page and "from dream" in page
    assert f"dream pass {pass_id}" in page and "sess-42" in page and "said twice" in page
    assert then.strftime("%Y-%m-%d %H:%M") in page
    restored = MemoryChange.objects.get(memory=back, action="restored")
    assert (restored.user_id, restored.source, (restored.after or {})["rejected_rating"]) == (owner.pk, "admin", 2)
    assert not MemoryChange.objects.filter(memory=back, action="created").exists(), "the restore is no creation"


@pytest.mark.django_db
def test_a_rejection_archived_before_the_fields_existed_still_restores_with_what_is_known(
    staff: Client, owner: Any, keyword_only: None
) -> None:
    row = RejectedMemory.objects.create(
        uuid="7d2f6a52-3c1e-4c55-9a43-0f3d6c1b2a11", project_id="acme/app", content="Tabs, not spaces.", rating=3
    )
    staff.post(REVIEW, {"action": "restore", "rejected_id": row.pk})
    back = Memory.objects.get(content=row.content)
    assert (str(back.uuid), back.created_by_id, back.rating) == (str(row.uuid), owner.pk, None)
    assert MemoryEvent.objects.get(memory=back, kind="created").metadata["source"] == "admin"
    assert MemoryChange.objects.get(memory=back).action == "restored"
    assert not RejectedMemory.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_teammates_memory_restored_keeps_its_writer_and_time_and_the_log_tells_teammates_the_same(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    staff = Client()
    staff.force_login(owner)
    scope = resolve(None, str(repo))
    text = "The deploy key rotates on the first of the month."
    _teammate(repo, 1, "create", content=text, tags=["ops"], author="Dana")
    assert reconcile_scope(scope)["created"] == 1
    memory = Memory.objects.get(uuid=U1)
    assert (memory.created_at, memory.created_author) == (CREATED, "Dana")
    # Dana's clock ran an hour ahead: her edit's time is ours too (reconcile), and so our delete's is later still.
    ahead = timezone.now() + timedelta(hours=1)
    Memory.objects.filter(pk=memory.pk).update(updated_at=ahead)

    staff.post(REVIEW, {"action": "rate", "memory_id": memory.pk, "rating": "2"})
    assert "sync · Dana · 2026-06-01 00:00" in staff.get("/admin/memories/rejectedmemory/").content.decode()
    row = RejectedMemory.objects.get()
    staff.post(REVIEW, {"action": "restore", "rejected_id": row.pk})
    back = Memory.objects.get(content=text)

    assert (str(back.uuid), back.created_at, back.created_author, back.created_by_id) == (U1, CREATED, "Dana", None)
    page = staff.get(REVIEW + "?source=teammate").content.decode()
    assert text in page and "<b>Dana</b>" in page
    # What a teammate folds from the log (sync.fold, as their reconcile does): the memory alive again, written by
    # Dana at her time, whichever files they hold: all of them, or only ours (the log compacted to a tombstone).
    events = [e for e in _events(repo) if e["memory_id"] == U1]
    restore = [e for e in events if e["type"] == "create" and e["id"] != "00000000-0000-4000-8000-000000000001"]
    assert len(restore) == 1 and restore[0]["created_at"] == "2026-06-01T00:00:01.000000000Z"
    delete = next(e for e in events if e["type"] == "delete")
    assert restore[0]["ts"] > delete["ts"]
    folded = fold([Event.model_validate(e) for e in events])
    assert folded.exists and (folded.content, folded.creator, folded.created_ns) == (
        text,
        "Dana",
        datetime_to_ns(CREATED),
    )
    ours = fold([Event.model_validate(e) for e in (delete, *restore)])
    assert ours.exists and ours.created_ns == datetime_to_ns(CREATED)


@pytest.mark.django_db(transaction=True)
def test_a_teammate_who_applied_the_reject_gets_the_memory_back_as_dana_wrote_it(
    repo: Path,
    owner: Any,
    machines: dict[str, Machine],  # noqa: F811 (the fixture imported above)
    stub_embedder: StubServer,
) -> None:
    """Machine B (a `yullu reconcile` process with its own database) applies the delete, then the restore."""
    staff = Client()
    staff.force_login(owner)
    scope = resolve(None, str(repo))
    text = "vec:1,0,0 The deploy key rotates on the first of the month."
    _teammate(repo, 1, "create", content=text, tags=["ops"], author="Dana")
    reconcile_scope(scope)
    b = machines["B"]
    b.reconcile(repo)
    staff.post(REVIEW, {"action": "rate", "memory_id": Memory.objects.get(uuid=U1).pk, "rating": "2"})
    b.reconcile(repo)
    assert b.rows() == []
    staff.post(REVIEW, {"action": "restore", "rejected_id": RejectedMemory.objects.get().pk})
    b.reconcile(repo)
    with psycopg.connect(b.url) as conn:
        rows = conn.execute(
            "SELECT uuid::text, content, tags, created_at, created_author FROM memories_memory"
        ).fetchall()
    assert rows == [(U1, text, ["ops"], CREATED, "Dana")]


# --- 2. who wrote a memory, one reading ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_every_page_names_the_teammate_who_wrote_a_memory_not_the_one_who_edited_it_last(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    """Dana's memory, edited by Sam before this machine reconciled: the history's "created" row names the last
    author of the fold (Sam), and the review queue read it from there."""
    staff = Client()
    staff.force_login(owner)
    scope = resolve(None, str(repo))
    _teammate(repo, 1, "create", content="The deploy key rotates on the first of the month.", tags=[], author="Dana")
    _teammate(repo, 2, "update", tags=["ops"], author="Sam Okafor")
    assert reconcile_scope(scope)["created"] == 1
    memory = Memory.objects.get(uuid=U1)
    with acting_as(actor_for_user(owner)):
        mine = create.store_memory(
            scope, "Releases are cut from the release branch on Thursdays.", source="admin"
        ).memory

    queue = staff.get(REVIEW).content.decode()
    assert "<b>Dana</b>" in queue and "<b>Sam Okafor</b>" not in queue
    assert "<b>owner</b>" in queue
    theirs = staff.get(f"/admin/memories/memory/{memory.pk}/change/").content.decode()
    assert "Dana" in _field(theirs, "created by") and "Sam Okafor" in _field(theirs, "updated by")
    assert "owner" in _field(staff.get(f"/admin/memories/memory/{mine.pk}/change/").content.decode(), "created by")


def _field(page: str, label: str) -> str:
    """The text after a read-only field's label on a change page (a few hundred characters)."""
    at = page.index(f">{label.capitalize()}") if f">{label.capitalize()}" in page else page.index(f">{label}")
    return page[at : at + 600]


@pytest.mark.django_db
def test_memories_written_before_0021_get_their_writer_from_history(owner: Any, keyword_only: None) -> None:
    """Migration 0023's backfill: a teammate's memory from before created_author, and one whose user was not kept,
    are named from their history's first "created" row; what a row already says is left alone."""
    scope = resolve("acme/app", None)
    rows = [create.store_memory(scope, f"Fact number {n} about the billing service.").memory for n in range(3)]
    theirs, nobodys, named = rows
    Memory.objects.filter(pk__in=[m.pk for m in rows]).update(created_by=None, created_author="")
    Memory.objects.filter(pk=named.pk).update(created_author="Cy")
    MemoryChange.objects.filter(memory=theirs, action="created").update(author="Ana", user=None)
    MemoryChange.objects.filter(memory=nobodys, action="created").update(author="", user=owner)
    MemoryChange.objects.filter(memory=named, action="created").update(author="Bo")

    backfill = importlib.import_module("memories.migrations.0023_backfill_created_author")
    with connection.cursor() as cur:
        cur.execute(backfill.BACKFILL_AUTHOR)
        cur.execute(backfill.BACKFILL_USER)
    got = {m.pk: (m.created_author, m.created_by_id) for m in Memory.objects.filter(pk__in=[m.pk for m in rows])}
    assert got == {theirs.pk: ("Ana", None), nobodys.pk: ("", owner.pk), named.pk: ("Cy", None)}


# --- 3. what "audit" covers ---------------------------------------------------------------------------------

CHANGES = "/admin/memories/memorychange/"


def _rows(page: str) -> int:
    return page.count('class="field-at')


@pytest.mark.django_db
def test_ratings_rejects_and_restores_are_in_a_trail_with_who_and_when_filtered_and_paged(
    staff: Client, owner: Any, django_user_model: Any, keyword_only: None
) -> None:
    """The audit trail listed access only; a reviewer looking for who rejected what found nothing there."""
    scope = resolve("acme/app", None)
    kept = create.store_memory(scope, "Releases are cut on Thursdays.").memory
    gone = create.store_memory(scope, "Tabs, not spaces, in the Makefile.").memory
    staff.post(REVIEW, {"action": "rate", "memory_id": kept.pk, "rating": "8"})
    staff.post(REVIEW, {"action": "rate", "memory_id": gone.pk, "rating": "2", "comment": "not ours"})
    staff.post(REVIEW, {"action": "restore", "rejected_id": RejectedMemory.objects.get().pk})
    create.store_memory(resolve("acme/other", None), "The other project's own fact.")

    reviews = staff.get(CHANGES + "?action=review").content.decode()
    assert _rows(reviews) == 3, reviews[-3000:]
    for action in ("rated", "rejected", "restored"):
        assert f">{action}<" in reviews
    assert "admin (owner)" in reviews and "not ours" in reviews
    assert "Releases are cut on Thursdays." in reviews and "The other project" not in reviews
    assert _rows(staff.get(CHANGES + "?q=owner").content.decode()) == 4  # and the reject's delete
    MemoryChange.objects.create(
        memory=kept, memory_uuid=kept.uuid, project_id="acme/app", action="updated", source="sync", author="Sam Okafor"
    )
    assert _rows(staff.get(CHANGES + "?q=Sam+Okafor").content.decode()) == 1
    assert _rows(staff.get(CHANGES + "?project_id=acme/other").content.decode()) == 1
    MemoryChange.objects.filter(action="rated").update(created_at=timezone.now() - timedelta(days=2))
    assert _rows(staff.get(CHANGES + "?action=review&within=24h").content.decode()) == 2  # the reject, the restore
    assert _rows(staff.get(CHANGES + "?action=review&within=7d").content.decode()) == 3
    assert "Access itself (API tokens, grants, admin logins" in reviews

    for n in range(55):
        create.store_memory(scope, f"Fact {n}: the build cache lives in /var/cache/b{n}.")
    first = staff.get(CHANGES + "?action=created").content.decode()
    second = staff.get(CHANGES + "?action=created&p=2").content.decode()
    assert _rows(first) == 50 and _rows(second) == 8  # 57 creates here and the other project's, 50 a page

    # a reviewer with a role on acme/app only sees its rows, and no audit of access
    reader = django_user_model.objects.create_user("rita", password="rita-pass-123", is_staff=True)
    from access.services import grant, reviewers_group

    reader.groups.add(reviewers_group())
    grant("rita", "acme/app", "read")
    theirs = Client()
    theirs.force_login(reader)
    page = theirs.get(CHANGES + "?action=created&p=2").content.decode()
    assert "The other project" not in page and _rows(page) == 7
    assert theirs.get("/admin/access/auditentry/").status_code in (302, 403)


@pytest.mark.django_db
def test_the_audit_trail_says_what_it_covers_and_where_the_rest_is(staff: Client) -> None:
    page = staff.get("/admin/access/auditentry/").content.decode()
    assert "This trail covers access" in page
    assert 'href="/admin/memories/memorychange/"' in page
    assert 'href="/admin/memories/memorychange/"' in staff.get("/admin/").content.decode()  # in the sidebar
