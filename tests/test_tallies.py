"""The counts the admin reads instead of counting every memory (memories.tallies, kept by triggers
from migration 0013) must equal a real COUNT after every path that writes memories or vectors: a
store, a batch by COPY, an import, a teammate's reconcile, a rating, an archive, an edit of the
category, a delete, expiry, a project moved by SQL, a fold, a truncate."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Q
from django.test import Client
from django.utils import timezone

from memories import lifecycle, tallies
from memories.models import Memory, MemoryChange, MemoryEvent, MemoryTally, MemoryVector, VectorTally
from memories.scope import Scope, resolve
from memories.transfer.export import export_json
from memories.transfer.importer import import_path
from memories.write import bulk_rows, create, edit
from memories.write.validation import NewMemory
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope
from tests.processes import wait_until
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
A = Scope("acme/tally-a", None)
B = Scope("acme/tally-b", None)
MANY = bulk_rows.COPY_FROM + 5  # a batch that goes by COPY


def real_memories() -> dict[tuple[str, str | None], tuple[int, int]]:
    rows = Memory.objects.values("project_id", "category").annotate(n=Count("id"), u=Count("id", filter=Q(rating=None)))
    return {(r["project_id"], r["category"]): (r["n"], r["u"]) for r in rows}


def tallied_memories() -> dict[tuple[str, str | None], tuple[int, int]]:
    out: dict[tuple[str, str | None], list[int]] = {}
    for t in MemoryTally.objects.all():
        got = out.setdefault((t.project_id, t.category), [0, 0])
        got[0] += t.memories
        got[1] += t.unrated
    return {k: (m, u) for k, (m, u) in out.items() if m or u}


def real_vectors() -> dict[tuple[str, str], int]:
    rows = MemoryVector.objects.values("project_id", "embedder").annotate(n=Count("id"))
    return {(r["project_id"], r["embedder"]): r["n"] for r in rows}


def tallied_vectors() -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for t in VectorTally.objects.all():
        out[(t.project_id, t.embedder)] = out.get((t.project_id, t.embedder), 0) + t.vectors
    return {k: n for k, n in out.items() if n}


def assert_true() -> None:
    assert tallied_memories() == real_memories()
    assert tallied_vectors() == real_vectors()
    counts = tallies.memory_counts(install=True)
    assert (counts.memories, counts.unrated) == (Memory.objects.count(), Memory.objects.filter(rating=None).count())


def facts(n: int, tag: str = "") -> list[NewMemory]:
    return [NewMemory(f"Service {i}{tag} restarts after deploy number {i * 7}", "process", ["ops"]) for i in range(n)]


def test_stores_ratings_edits_deletes_and_expiry_keep_the_tallies_true(stub_embedder: StubServer) -> None:
    one = create.store_memory(A, "Builds run in CI on every push", "process").memory
    assert_true()
    assert tallied_memories() == {(A.project_id, "process"): (1, 1)}
    batch = create.store_memories(B, facts(MANY))  # COPY: one statement, one tally row per key
    assert_true()
    edit.rate_memory(batch[0].memory.pk, 9, "kept")  # rated: no longer in the review queue
    assert_true()
    edit.clear_rating(batch[0].memory.pk)
    assert_true()
    edit.rate_memory(batch[1].memory.pk, 2, "wrong")  # archived: the memory leaves the table
    assert_true()
    edit.update_memory(one.pk, category="decision")
    assert_true()
    edit.update_memory(one.pk, content="Builds run in CI on every push and every tag")  # re-embedded
    assert_true()
    edit.delete_memory(batch[2].memory.pk)
    assert_true()
    gone = create.store_memory(A, "A temporary workaround for the flaky runner", ttl_days=1).memory
    Memory.objects.filter(pk=gone.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert lifecycle.prune_expired()["ids"] == [gone.pk]
    assert_true()
    assert tallies.memory_counts(B.project_id).memories == MANY - 2
    assert tallies.memory_counts(B.project_id).unrated == MANY - 2


def test_an_import_and_a_teammates_reconcile_keep_the_tallies_true(
    repo: Path, stub_embedder: StubServer, tmp_path: Path
) -> None:
    scope = resolve(None, str(repo))
    create.store_memories(scope, facts(MANY))
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        export_json(scope.project_id, fh, vectors=True)
    Memory.objects.all().delete()  # a teammate's machine: nothing but the log
    for model in (MemoryEvent, MemoryChange, LedgerEntry, ProjectSyncState):
        model.objects.all().delete()
    assert_true()
    assert tallied_memories() == {}

    assert reconcile_scope(scope)["created"] == MANY
    assert_true()
    assert tallies.vector_count(stub_embedder_id(), install=True) == MANY

    Memory.objects.all().delete()
    assert import_path(export, project="acme/imported").created == MANY
    assert_true()
    assert tallies.memory_counts("acme/imported").memories == MANY


def stub_embedder_id() -> str:
    from memories.embedding.embedders import get_embedder

    return get_embedder().id


def test_a_project_moved_by_sql_a_fold_and_a_truncate_keep_the_tallies_true(stub_embedder: StubServer) -> None:
    create.store_memories(A, facts(MANY))
    create.store_memories(A, facts(3, " again"))
    with connection.cursor() as cur:  # a rename done by hand: the counts follow the rows
        cur.execute("UPDATE memories_memory SET project_id = %s WHERE project_id = %s", [B.project_id, A.project_id])
        cur.execute(
            "UPDATE memories_memoryvector SET project_id = %s WHERE project_id = %s", [B.project_id, A.project_id]
        )
    assert_true()
    assert tallies.memory_counts(A.project_id).memories == 0
    rows_before = MemoryTally.objects.count()
    tallies.fold(MemoryTally)
    tallies.fold(VectorTally)
    assert_true()
    assert MemoryTally.objects.count() < rows_before
    assert list(MemoryTally.objects.values_list("project_id", "memories")) == [(B.project_id, MANY + 3)]
    with connection.cursor() as cur:
        cur.execute("TRUNCATE memories_memory CASCADE")
    assert_true()


def test_a_long_tally_is_folded_by_the_next_read(stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tallies, "FOLD_AT", 3)
    for i in range(5):
        create.store_memory(A, f"Fact number {i} about the release train", "process")
    assert MemoryTally.objects.count() == 5
    assert tallies.memory_counts().memories == 5
    assert MemoryTally.objects.count() == 1
    assert_true()


def test_the_admin_pages_show_the_tallied_counts_to_whom_may_see_them(
    client: Client, owner: Any, stranger: Any, stub_embedder: StubServer
) -> None:
    create.store_memories(A, facts(4))
    Memory.objects.create(project_id=f"~user:{stranger.pk}", content="My own note about my editor setup")
    owner.is_superuser = True
    owner.save()
    client.force_login(owner)
    stats = client.get("/admin/memories/memory/stats/")
    assert stats.status_code == 200
    totals = stats.context["yullu_stats"]["totals"]
    assert (totals["memories"], totals["unrated"]) == (4, 4)  # another person's private memory is not counted
    assert totals["by_category"] == {"process": 4}
    assert totals["embedded_with_active"] == 4
    review = client.get("/admin/memories/memory/review/")
    assert review.context["total"] == 4 and review.context["projects"] == [A.project_id]
    assert client.get("/admin/memories/memory/review/?category=decision").context["total"] == 0
    edit.rate_memory(Memory.objects.filter(project_id=A.project_id).first().pk, 9)  # type: ignore[union-attr]
    assert client.get("/admin/memories/memory/review/").context["total"] == 3


def test_a_fold_neither_loses_nor_doubles_a_concurrent_write_nor_makes_it_wait(stub_embedder: StubServer) -> None:
    """Deterministic: a writer's transaction is held open across a fold (its rows are not the fold's
    to take), then a fold's transaction is held open while a writer stores (it must not wait)."""
    create.store_memories(A, facts(3))
    inserted, release, done = threading.Event(), threading.Event(), threading.Event()

    def open_writer() -> None:
        try:
            with transaction.atomic():
                Memory.objects.create(project_id=A.project_id, content="Written while a fold runs", category="process")
                inserted.set()
                release.wait(60)
        finally:
            connection.close()

    writer = threading.Thread(target=open_writer)
    writer.start()
    try:
        wait_until(inserted.is_set, "the writer to insert inside its open transaction")
        tallies.fold(MemoryTally)
    finally:
        release.set()
        writer.join(timeout=60)
    assert_true()
    assert tallies.memory_counts(A.project_id).memories == 4

    def store() -> None:
        try:
            create.store_memory(A, "Stored while a fold is open", "process")
            done.set()
        finally:
            connection.close()

    with transaction.atomic():
        tallies.fold(MemoryTally)  # its DELETE holds the rows it folded until this block ends
        other = threading.Thread(target=store)
        other.start()
        wait_until(done.is_set, "a store to finish while the fold's transaction is open")
    other.join(timeout=60)
    assert_true()
    assert tallies.memory_counts(A.project_id).memories == 5
