"""Memory lifecycle (docs/contract.md §10) through the service layer: duplicates on write, supersede, links and
conflicts, history, importance and expiry, recall feedback. Real Postgres + pgvector, stub embedder."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memories import lifecycle
from memories.models import (
    ArchiveReason,
    LinkKind,
    Memory,
    MemoryChange,
    MemoryEvent,
    MemoryLink,
    RecallFeedback,
    RejectedMemory,
)
from memories.scope import Scope
from memories.search import queries, stats
from memories.write import create, edit, validation
from tests.processes import wait_until
from tests.stubs import StubServer
from yullu_core.errors import NotFound, UserError
from yullu_core.locks import LockKey

pytestmark = pytest.mark.django_db(transaction=True)
A = Scope("acme/life", None)


def test_storing_the_same_fact_twice_returns_the_first_memory(stub_embedder: StubServer) -> None:
    first = create.store_memory(A, "We deploy with make ship", "process")
    second = create.store_memory(A, "  We deploy with make ship ", "process")
    assert first.created and not second.created
    assert second.duplicate_of == first.memory.pk and second.as_dict().get("duplicate_of") == first.memory.pk
    assert Memory.objects.count() == 1


def test_a_near_duplicate_vector_is_caught_and_a_related_one_is_listed_as_similar(stub_embedder: StubServer) -> None:
    first = create.store_memory(A, "vec:1,0,0 We deploy with make ship")
    near = create.store_memory(A, "vec:1,0,0 Deploys go out with make ship")
    related = create.store_memory(A, "vec:1,0.6,0 make ship also tags the release")
    assert not near.created and near.duplicate_of == first.memory.pk
    assert related.created and [s["id"] for s in related.similar] == [first.memory.pk]
    assert 0.75 <= related.similar[0]["similarity"] < 0.95
    assert Memory.objects.count() == 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The geocoder retries a failed job 3 times.", "The geocoder retries a failed job 5 times, 3 s apart."),
        ("The API listens on port 8080.", "The API listens on port 9090 behind nginx on 8080."),
    ],
)
def test_a_changed_number_is_a_new_fact_even_when_the_old_number_stays_in_the_text(
    stub_embedder: StubServer, old: str, new: str
) -> None:
    # Found on the walk: the correction held every literal of the first text (the old number moved to
    # another role), so it passed as a restatement and was answered "already there".
    first = create.store_memory(A, f"vec:1,0,0 {old}")
    second = create.store_memory(A, f"vec:1,0,0 {new}")
    assert first.created and second.created, second.as_dict()
    assert Memory.objects.count() == 2


def test_a_batch_never_stores_one_fact_twice(stub_embedder: StubServer) -> None:
    items = [validation.NewMemory("vec:0,0,1 Use pnpm"), validation.NewMemory("vec:0,0,1 Use pnpm")]
    results = create.store_memories(A, items, source="import")
    assert [r.created for r in results] == [True, False] and results[1].duplicate_of == results[0].memory.pk


def test_two_concurrent_identical_stores_leave_one_memory(stub_embedder: StubServer) -> None:
    """Deterministic, not a thread race: the test holds the project's write lock until both stores
    wait on it inside their transactions (after each checked for duplicates without the lock, had
    the lock been missing), then lets them go one after the other."""
    outcomes: list[bool] = []

    def store() -> None:
        try:
            outcomes.append(create.store_memory(A, "vec:0,1,0 Celery tasks take ids").created)
        finally:
            connection.close()

    def waiting() -> int:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND NOT granted",
                [LockKey.PROJECT_WRITE],
            )
            return int(cur.fetchone()[0])

    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [LockKey.PROJECT_WRITE, A.project_id])
    threads = [threading.Thread(target=store) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        wait_until(lambda: waiting() == 2, "both stores to wait on the project's write lock")
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [LockKey.PROJECT_WRITE, A.project_id])
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == [False, True] and Memory.objects.count() == 1


def test_superseding_keeps_the_old_memory_out_of_retrieval_and_listing(stub_embedder: StubServer) -> None:
    old = create.store_memory(A, "vec:1,0,0 We deploy with make ship", "process").memory
    new = create.store_memory(A, "vec:1,0.5,0 make ship is retired; deploy with make release", supersedes=old.pk)
    assert new.created and new.superseded == old.pk
    old.refresh_from_db()
    assert old.superseded_by_id == new.memory.pk
    found = queries.search(A.project_id, "vec:1,0,0 how do we deploy", min_similarity=0.0, log=False)
    assert [h["id"] for h in found.results] == [new.memory.pk]
    assert [m["id"] for m in stats.list_memories(A.project_id)] == [new.memory.pk]
    assert MemoryLink.objects.filter(from_memory=new.memory, to_memory=old, kind=LinkKind.SUPERSEDES).exists()
    assert [c["action"] for c in lifecycle.history(old.pk)] == ["created", "superseded"]


def test_update_with_supersede_stores_a_successor_with_the_old_labels(stub_embedder: StubServer) -> None:
    old = create.store_memory(A, "vec:0,0,1 The API listens on port 8080", "process", ["api"], importance="high").memory
    new = edit.update_memory(old.pk, content="vec:0,0.5,1 The API listens on port 8081", supersede=True)
    old.refresh_from_db()
    assert new.pk != old.pk and old.superseded_by_id == new.pk and old.content.endswith("8080")
    assert (new.category, new.tags, new.importance) == ("process", ["api"], "high")
    with pytest.raises(UserError, match="already superseded"):
        edit.update_memory(old.pk, content="vec:0,1,1 port 9000", supersede=True)


def test_supersedes_must_name_a_memory_of_the_same_project(stub_embedder: StubServer) -> None:
    other = create.store_memory(Scope("acme/other", None), "a fact elsewhere").memory
    with pytest.raises(NotFound):
        create.store_memory(A, "a fact here", supersedes=other.pk)
    assert Memory.objects.filter(project_id=A.project_id).count() == 0


def test_every_change_is_in_the_history_with_its_source(stub_embedder: StubServer) -> None:
    m = create.store_memory(A, "CI runs on every push", source="mcp").memory
    edit.update_memory(m.pk, tags=["ci"], source="rest")
    edit.rate_memory(m.pk, 8, source="admin")
    changes = lifecycle.history(m.pk)
    assert [(c["action"], c["source"]) for c in changes] == [
        ("created", "mcp"),
        ("updated", "rest"),
        ("rated", "admin"),
    ]
    before, after = changes[1]["before"], changes[1]["after"]
    assert before is not None and before["tags"] == [] and after is not None and after["tags"] == ["ci"]
    edit.delete_memory(m.pk, source="mcp")
    assert MemoryChange.objects.filter(memory_uuid=m.uuid, action="deleted", source="mcp").exists()


def test_importance_and_ttl_are_stored_and_validated(stub_embedder: StubServer) -> None:
    m = create.store_memory(A, "Use the staging DB this week", importance="low", ttl_days=7).memory
    assert m.importance == "low" and m.expires_at is not None
    assert timedelta(days=6.9) < m.expires_at - timezone.now() < timedelta(days=7.1)
    edit.update_memory(m.pk, ttl_days=0)
    m.refresh_from_db()
    assert m.expires_at is None
    for bad in ({"importance": "urgent"}, {"ttl_days": 0}, {"ttl_days": "soon"}, {"ttl_days": 99999}):
        with pytest.raises(UserError):
            create.store_memory(A, "another fact", **bad)
    assert Memory.objects.count() == 1


def test_expired_memories_leave_retrieval_at_once_and_prune_archives_them(stub_embedder: StubServer) -> None:
    gone = create.store_memory(A, "vec:1,0,0 temporary workaround", ttl_days=1).memory
    kept = create.store_memory(A, "vec:0,1,0 durable fact").memory
    Memory.objects.filter(pk=gone.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    found = queries.search(A.project_id, "vec:1,0,0 workaround", min_similarity=0.0, log=False)
    assert [h["id"] for h in found.results] == [kept.pk]
    assert lifecycle.prune_expired(dry_run=True) == {"dry_run": True, "expired": 1, "ids": [gone.pk]}
    assert Memory.objects.filter(pk=gone.pk).exists()
    assert lifecycle.prune_expired()["ids"] == [gone.pk]
    assert not Memory.objects.filter(pk=gone.pk).exists()
    assert RejectedMemory.objects.get(uuid=gone.uuid).reason == ArchiveReason.EXPIRED
    assert lifecycle.prune_expired()["expired"] == 0


def _conflict() -> tuple[Memory, Memory, MemoryLink]:
    a = create.store_memory(A, "vec:1,0,0 Releases are cut on Tuesdays").memory
    b = create.store_memory(A, "vec:0,1,0 Releases are cut on Thursdays").memory
    return a, b, lifecycle.link_memories(b.pk, a.pk, "contradicts", source="dream")


def test_open_contradictions_form_the_conflicts_queue(stub_embedder: StubServer) -> None:
    a, b, link = _conflict()
    queue = lifecycle.open_conflicts(A.project_id)
    assert [(c["from_id"], c["to_id"], c["source"]) for c in queue] == [(b.pk, a.pk, "dream")]
    assert lifecycle.link_memories(b.pk, a.pk, "contradicts").pk == link.pk  # idempotent


@pytest.mark.parametrize(
    ("resolution", "current"),
    [("keep_from", {"from"}), ("keep_to", {"to"}), ("keep_both", {"from", "to"}), ("merge", {"from"})],
)
def test_resolving_a_conflict(stub_embedder: StubServer, resolution: str, current: set[str]) -> None:
    a, b, link = _conflict()
    merged = "vec:1,1,0 Releases are cut on Thursdays since March" if resolution == "merge" else None
    done = lifecycle.resolve_conflict(link.pk, resolution, merged_content=merged)
    assert done["resolution"] == resolution and lifecycle.open_conflicts(A.project_id) == []
    alive = {name for name, m in (("from", b), ("to", a)) if Memory.objects.current().filter(pk=m.pk).exists()}
    assert alive == current
    if resolution == "keep_both":
        assert MemoryLink.objects.filter(kind=LinkKind.RELATED, from_memory=b, to_memory=a).exists()
    for memory in (a, b):  # one row each, with the resolution chosen (walk 10: the dropped one had two)
        rows = MemoryChange.objects.filter(memory_uuid=memory.uuid, action="conflict resolved")
        assert [(r.after or {}).get("resolution") for r in rows] == [resolution]
    if resolution == "merge":
        assert Memory.objects.get(pk=b.pk).content == merged
    with pytest.raises(UserError, match="already resolved"):
        lifecycle.resolve_conflict(link.pk, "keep_both")


def test_links_join_memories_of_one_project_only(stub_embedder: StubServer) -> None:
    a = create.store_memory(A, "fact a").memory
    b = create.store_memory(Scope("acme/other", None), "fact b").memory
    with pytest.raises(UserError, match="one project"):
        lifecycle.link_memories(a.pk, b.pk, "related")
    with pytest.raises(UserError, match="kind"):
        lifecycle.link_memories(a.pk, a.pk, "loves")


def _recall() -> tuple[Memory, str]:
    m = create.store_memory(A, "vec:1,0,0 We deploy with make release").memory
    found = queries.search(A.project_id, "vec:1,0,0 how do we deploy?", min_similarity=0.0)
    assert found.recall_id
    return m, found.recall_id


def test_a_verdict_on_a_real_recall_is_recorded_with_its_query(stub_embedder: StubServer) -> None:
    m, recall_id = _recall()
    out = lifecycle.rate_recall(recall_id, m.pk, False, "outdated")
    assert out == {"recall_id": recall_id, "memory_id": m.pk, "useful": False, "recorded": True}
    lifecycle.rate_recall(recall_id, m.pk, True)  # a second verdict replaces the first
    verdict = RecallFeedback.objects.get()
    assert verdict.useful and verdict.query == "vec:1,0,0 how do we deploy?" and verdict.query_vector is not None


@pytest.mark.parametrize(
    ("recall_id", "memory", "useful", "error"),
    [
        ("00000000-0000-4000-8000-000000000000", "real", True, NotFound),
        ("not-a-uuid", "real", True, UserError),
        ("real", 999999, True, UserError),
        ("real", "real", "yes", UserError),
    ],
)
def test_bad_verdicts_are_refused(
    stub_embedder: StubServer, recall_id: str, memory: Any, useful: Any, error: Any
) -> None:
    m, real = _recall()
    with pytest.raises(error):
        lifecycle.rate_recall(real if recall_id == "real" else recall_id, m.pk if memory == "real" else memory, useful)
    assert RecallFeedback.objects.count() == 0


def test_a_memory_judged_unhelpful_sinks_for_like_queries_only(stub_embedder: StubServer) -> None:
    first = create.store_memory(A, "vec:1,0.1,0 Deploys need the VPN").memory
    second = create.store_memory(A, "vec:1,0,0.3 Deploy with make release").memory

    def order(query: str) -> list[int]:
        return [h["id"] for h in queries.search(A.project_id, query, min_similarity=0.0, log=False).results]

    assert order("vec:1,0,0 how do we deploy?") == [first.pk, second.pk]
    found = queries.search(A.project_id, "vec:1,0,0 how do we deploy?", min_similarity=0.0)
    lifecycle.rate_recall(found.recall_id, first.pk, False)
    lifecycle.rate_recall(found.recall_id, second.pk, True)
    assert order("vec:1,0,0 deploy steps") == [second.pk, first.pk]
    # A question unlike the judged one is ranked as before.
    assert order("vec:0.2,1,0 what does the VPN guard?") == [first.pk, second.pk]


def test_the_admin_form_sets_importance_and_expiry_through_the_write_path(
    client: Any, owner: Any, stub_embedder: StubServer
) -> None:
    client.force_login(owner)
    form = {"project_id": A.project_id, "content": "Use the staging DB this week", "category": "process"}
    client.post("/admin/memories/memory/add/", {**form, "tags_text": "", "importance": "high", "ttl_days": "7"})
    m = Memory.objects.get()
    assert m.importance == "high" and m.expires_at is not None
    change = {**form, "tags_text": "", "importance": "low", "ttl_days": "0"}
    client.post(f"/admin/memories/memory/{m.pk}/change/", change)
    m.refresh_from_db()
    assert m.importance == "low" and m.expires_at is None
    assert [(c["action"], c["source"]) for c in lifecycle.history(m.pk)] == [("created", "admin"), ("updated", "admin")]


def test_the_recall_log_keeps_its_window_and_every_verdict(stub_embedder: StubServer) -> None:
    m, old_recall = _recall()
    lifecycle.rate_recall(old_recall, m.pk, True)
    MemoryEvent.objects.filter(recall_id=old_recall).update(created_at=timezone.now() - timedelta(days=200))
    recent = queries.search(A.project_id, "vec:1,0,0 how do we release?", min_similarity=0.0).recall_id
    assert lifecycle.prune_recall_log(days=180, batch=1) == 1  # several batches would be needed for more
    assert not MemoryEvent.objects.filter(recall_id=old_recall).exists()
    assert MemoryEvent.objects.filter(recall_id=recent).exists()
    assert MemoryEvent.objects.filter(memory=m, kind="created").exists()  # history is not the recall log
    assert RecallFeedback.objects.filter(recall_id=old_recall).exists()
    assert lifecycle.prune_recall_log(days=180) == 0  # idempotent


def test_an_update_that_changes_nothing_writes_no_event_and_keeps_updated_at(
    stub_embedder: StubServer, repo: Path
) -> None:
    # SPEC §3: every mutation writes its sync event; a field given its current value mutates nothing.
    from memories.scope import resolve
    from sync.eventlog import read_events

    scope = resolve(None, str(repo))
    memory = create.store_memory(scope, "vec:1,0,0 Deploys run make ship", "process", ["ops"]).memory
    logs = repo / ".yullu" / "logs"
    files, changes = len(read_events(logs).events), MemoryChange.objects.filter(memory=memory).count()
    same = edit.update_memory(
        memory.pk, content=memory.content, tags=["ops"], category="process", importance="normal", ttl_days=0
    )
    assert same.updated_at == memory.updated_at
    assert len(read_events(logs).events) == files and MemoryChange.objects.filter(memory=memory).count() == changes
    changed = edit.update_memory(memory.pk, tags=["ops"], importance="high")  # one field of two changes
    assert changed.updated_at > memory.updated_at and changed.importance == "high"
    update = [e for _, e in read_events(logs).events if e.type == "update"]
    assert len(update) == 1 and update[0].importance == "high" and "tags" not in update[0].model_fields_set
