"""Writes of many memories at once (a teammate's first reconcile, an import, a store batch) go by
COPY (memories.write.bulk_rows) and write their event files in bulk (sync.outbox): the rows, vectors,
activity, history, ledger and files they leave must be exactly those of the row-by-row path."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memories.embedding import vector_index
from memories.embedding.embedders import get_embedder
from memories.models import Memory, MemoryChange, MemoryEvent, MemoryVector
from memories.scope import Scope, resolve
from memories.search.candidates import nearest_many
from memories.transfer import importer
from memories.transfer.export import export_json
from memories.transfer.importer import import_path
from memories.write import bulk_rows, create, edit
from memories.write.validation import NewMemory
from sync import outbox, services
from sync.eventlog import list_names, read_events, read_file
from sync.models import LedgerEntry, OutboxEvent, ProjectSyncState
from sync.services import reconcile_scope
from tests import processes
from tests.processes import git_repo
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
MANY = bulk_rows.COPY_FROM + 5  # enough to take the COPY path


def rows(project_id: str) -> list[tuple[Any, ...]]:
    fields = ("uuid", "content", "category", "tags", "importance", "held_reason", "created_at", "updated_at")
    return sorted(Memory.objects.filter(project_id=project_id).values_list(*fields))


def vectors(project_id: str) -> dict[str, np.ndarray]:
    found = MemoryVector.objects.filter(project_id=project_id).values_list("memory__uuid", "vector")
    return {str(u): np.asarray(v, dtype=np.float32) for u, v in found}


def ratings(project_id: str) -> list[tuple[Any, ...]]:
    return sorted(Memory.objects.filter(project_id=project_id).values_list("uuid", "rating", "rating_comment"))


def facts(n: int) -> list[NewMemory]:
    return [
        NewMemory(f"Service {i} restarts after deploy number {i * 7}", "process", [f"svc{i}", "ops"]) for i in range(n)
    ]


def test_a_first_reconcile_of_many_memories_writes_what_the_log_holds(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = resolve(None, str(repo))
    flushes: list[int] = []
    real_flush = outbox.flush

    def counted(ids: list[int] | None = None, **kwargs: Any) -> Any:
        flushes.append(len(ids or []))
        return real_flush(ids=ids, **kwargs)

    monkeypatch.setattr(outbox, "flush", counted)
    create.store_memories(scope, facts(MANY))  # one batch: its 2 x MANY event files are written in bulk
    assert flushes == [2 * MANY]  # one flush on commit for the whole batch, not one per memory
    monkeypatch.setattr(outbox, "flush", real_flush)
    assert OutboxEvent.objects.count() == 0
    folder = repo / ".yullu" / "logs"
    assert len(list_names(folder)) == 2 * MANY  # a create and an embedding each
    expected = rows(scope.project_id)
    logged = {str(e.memory_id): e.vector or [] for _, e in read_events(folder).events if e.type == "embedding"}
    assert len(logged) == MANY
    Memory.objects.all().delete()  # a teammate's machine: nothing but the log
    MemoryEvent.objects.all().delete()
    MemoryChange.objects.all().delete()
    LedgerEntry.objects.all().delete()
    ProjectSyncState.objects.all().delete()

    result = reconcile_scope(scope)

    assert (result["created"], result["embeddings_reused"], result["embeddings_computed"]) == (MANY, MANY, 0)
    assert rows(scope.project_id) == expected
    got = vectors(scope.project_id)
    assert got.keys() == logged.keys()
    for memory_uuid, vector in got.items():
        assert np.allclose(vector, logged[memory_uuid], atol=1e-6)
    created = MemoryEvent.objects.filter(project_id=scope.project_id, kind="created")
    assert list(created.values_list("metadata", flat=True)) == [{"source": "reconcile"}] * MANY
    history = MemoryChange.objects.filter(project_id=scope.project_id, action="created", source="sync")
    assert history.count() == MANY and all(h.after and h.after["content"] for h in history)
    ledger = LedgerEntry.objects.filter(project_id=scope.project_id, status="applied", memory_uuid__isnull=False)
    assert ledger.count() == 2 * MANY
    # The vectors went into the index searches use: each memory is its own nearest neighbour.
    embedder = get_embedder()
    one = Memory.objects.get(content="Service 3 restarts after deploy number 21")
    near = nearest_many(scope.project_id, embedder.id, [got[str(one.uuid)]], 1, exact=False)
    assert list(near[0]) == [one.pk]
    assert reconcile_scope(scope)["created"] == 0  # and the ledger knows every file


def test_an_import_of_many_memories_with_vectors_keeps_them_and_their_fields(
    stub_embedder: StubServer, tmp_path: Path
) -> None:
    scope = Scope("acme/bulk-import", None)
    stored = create.store_memories(scope, facts(MANY))
    edit.rate_memory(stored[4].memory.pk, 9, "kept")
    expected, expected_vectors = rows(scope.project_id), vectors(scope.project_id)
    rated = ratings(scope.project_id)
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        export_json(scope.project_id, fh, vectors=True)
    Memory.objects.all().delete()  # a fresh server
    MemoryEvent.objects.all().delete()
    seen = len(stub_embedder.requests)

    result = import_path(export)

    assert (result.created, result.skipped, result.refused) == (MANY, 0, 0)
    sent = [str(r["body"]) for r in stub_embedder.requests[seen:]]
    assert not [body for body in sent if "restarts after deploy" in body]  # the export's vectors were used
    assert rows(scope.project_id) == expected
    got = vectors(scope.project_id)
    assert got.keys() == expected_vectors.keys()
    for memory_uuid, vector in got.items():
        assert np.allclose(vector, expected_vectors[memory_uuid], atol=1e-6)
    assert ratings(scope.project_id) == rated
    assert MemoryEvent.objects.filter(project_id=scope.project_id, kind="created").count() == MANY


def test_an_import_writes_the_carried_fields_with_the_insert_and_its_history_as_before(
    stub_embedder: StubServer, tmp_path: Path
) -> None:
    scope = Scope("acme/carried", None)
    stored = create.store_memories(scope, facts(MANY))
    edit.rate_memory(stored[2].memory.pk, 7, "useful")
    expected, rated = rows(scope.project_id), ratings(scope.project_id)
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        export_json(scope.project_id, fh, vectors=True)
    Memory.objects.all().delete()
    MemoryChange.objects.all().delete()

    with CaptureQueriesContext(connection) as queries:
        assert import_path(export).created == MANY

    # Times, ratings and the rest went in with the rows: no second version of every row.
    assert not [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().startswith("UPDATE")]
    assert rows(scope.project_id) == expected and ratings(scope.project_id) == rated
    # The history's create row is the write path's, as when the import set those fields afterwards.
    rated_memory = Memory.objects.get(uuid=stored[2].memory.uuid)
    [created] = MemoryChange.objects.filter(memory=rated_memory, action="created")
    assert created.after is not None and created.after["rating"] is None and created.source == "import"


def test_an_import_pauses_the_cycle_collector_and_restarts_it_even_when_it_fails(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export, _ = exported_with_vectors(tmp_path, "acme/paused-collector")
    seen: list[bool] = []
    real = importer._write_batch

    def watched(*args: Any) -> None:
        seen.append(gc.isenabled())
        real(*args)

    monkeypatch.setattr(importer, "_write_batch", watched)
    assert import_path(export).created == MANY
    assert seen == [False] and gc.isenabled()  # paused for the writes, running again after

    def broken(*args: Any) -> None:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(importer, "_write_batch", broken)
    with pytest.raises(RuntimeError):
        import_path(export)
    assert gc.isenabled()


def test_an_imported_vector_not_all_numbers_is_embedded_again(stub_embedder: StubServer, tmp_path: Path) -> None:
    scope = Scope("acme/bad-vector", None)
    create.store_memories(scope, facts(2))
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        export_json(scope.project_id, fh, vectors=True)
    lines = export.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[1])  # lines[0] is the header
    [model] = first["vectors"]
    first["vectors"][model][3] = "0.5"  # one component a string: the row is kept, its vector is not
    export.write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n", encoding="utf-8")
    Memory.objects.all().delete()
    seen = len(stub_embedder.requests)

    result = import_path(export)

    assert (result.created, result.refused) == (2, 0)
    sent = " ".join(str(r["body"]) for r in stub_embedder.requests[seen:])
    assert first["content"] in sent and json.loads(lines[2])["content"] not in sent


def event_files(folder: Path) -> dict[str, list[str]]:
    """Each memory's event files (by its content), with what differs between two writes of one fact
    (event id, time, memory uuid) replaced by placeholders: the rest must be byte for byte the same."""
    by_uuid: dict[str, list[str]] = {}
    for name in list_names(folder):
        text = (folder / name).read_text(encoding="utf-8")
        [event] = read_file(folder, name)
        for value, placeholder in ((str(event.id), "<id>"), (str(event.memory_id), "<memory>")):
            text = text.replace(value, placeholder)
        by_uuid.setdefault(str(event.memory_id), []).append(text.replace(event.to_wire()["ts"], "<ts>"))
    contents = {str(m.uuid): m.content for m in Memory.objects.filter(uuid__in=list(by_uuid))}
    return {contents[u]: sorted(texts) for u, texts in by_uuid.items()}


def test_a_batch_queues_its_event_files_in_one_insert_and_they_are_those_of_single_stores(
    repo: Path, tmp_path: Path, stub_embedder: StubServer
) -> None:
    one_by_one = resolve(None, str(repo))
    batch_repo = git_repo(tmp_path / "other", "git@github.com:acme/other.git")
    batched = resolve(None, str(batch_repo))
    for item in facts(MANY):
        create.store_memory(one_by_one, item.content, item.category, item.tags)
    with CaptureQueriesContext(connection) as queries:
        create.store_memories(batched, facts(MANY))
    queued = [q["sql"] for q in queries.captured_queries if "sync_outboxevent" in q["sql"].split("WHERE")[0]]
    # One insert of all 2 x MANY rows (a COPY, which the capture does not see, after one reservation
    # of their keys), not one per memory.
    inserts = [q for q in queued if q.lstrip().startswith(("INSERT", "SELECT nextval"))]
    assert len(inserts) == 1 and f"generate_series(1, {2 * MANY})" in inserts[0], queued

    single = event_files(repo / ".yullu" / "logs")
    together = event_files(batch_repo / ".yullu" / "logs")
    assert len(together) == MANY and all(len(texts) == 2 for texts in together.values())  # a create, an embedding
    assert together == single


def index_oid(name: str) -> int | None:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)::oid", [name])
        return cur.fetchone()[0]


def exported_with_vectors(tmp_path: Path, project_id: str) -> tuple[Path, str]:
    """An export of MANY memories with their vectors, their project then emptied (a fresh server);
    also the name of the embedder's HNSW index."""
    stored = create.store_memories(Scope(project_id, None), facts(MANY))
    vector = MemoryVector.objects.get(memory=stored[0].memory)
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        export_json(project_id, fh, vectors=True)
    Memory.objects.filter(project_id=project_id).delete()
    return export, vector_index.index_name(vector.embedder, vector.dim)


def test_an_import_larger_than_the_index_builds_it_after_the_load_and_searches_use_it(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", MANY)  # the mechanism, at a test's size
    export, name = exported_with_vectors(tmp_path, "acme/first-import")
    before = index_oid(name)

    assert import_path(export).created == MANY

    after = index_oid(name)
    assert after is not None and after != before  # dropped and built again after the load
    embedder = get_embedder()
    got = vectors("acme/first-import")
    probes = [got[str(m.uuid)] for m in Memory.objects.filter(project_id="acme/first-import")]
    # The rebuilt index answers as the exact scan does, and a search goes through it.
    assert nearest_many("acme/first-import", embedder.id, probes, 5, exact=False) == nearest_many(
        "acme/first-import", embedder.id, probes, 5, exact=True
    )
    dim = len(probes[0])
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")  # 25 rows: the planner would rather read them all
        literal = vector_index.vector_literal(probes[0])
        cur.execute(
            f"EXPLAIN SELECT memory_id FROM memories_memoryvector WHERE embedder = %s "
            f"ORDER BY (vector::vector({dim})) <=> %s::vector({dim}) LIMIT 5",
            [embedder.id, literal],
        )
        assert name in " ".join(row[0] for row in cur.fetchall())


def test_a_failed_import_leaves_nothing_and_the_index_as_it_was(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", MANY)
    export, name = exported_with_vectors(tmp_path, "acme/failing-import")
    kept = create.store_memory(Scope("acme/other", None), "The release train leaves on Thursdays").memory
    before = index_oid(name)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(create, "record_created", broken)  # after the vectors and the index build
    with pytest.raises(RuntimeError):
        import_path(export)

    assert not Memory.objects.filter(project_id="acme/failing-import").exists()
    assert not MemoryVector.objects.filter(project_id="acme/failing-import").exists()
    assert index_oid(name) == before  # the drop was rolled back with the load
    vector = np.asarray(MemoryVector.objects.get(memory=kept).vector, dtype=np.float32)
    assert list(nearest_many("acme/other", get_embedder().id, [vector], 1, exact=False)[0]) == [kept.pk]


def test_the_index_built_after_a_small_load_is_built_by_one_process(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", MANY)
    export, name = exported_with_vectors(tmp_path, "acme/serial-build")
    notices: list[str] = []
    connection.ensure_connection()
    connection.connection.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
    with connection.cursor() as cur:  # settings under which PostgreSQL would start parallel workers
        cur.execute("SET min_parallel_table_scan_size = 0")
        cur.execute("SET max_parallel_maintenance_workers = 2")
        cur.execute("SET client_min_messages = debug1")  # the build says how it ran
    try:
        assert import_path(export).created == MANY
    finally:
        with connection.cursor() as cur:
            cur.execute("RESET client_min_messages")
            cur.execute("RESET min_parallel_table_scan_size")
            cur.execute("SHOW max_parallel_maintenance_workers")
            after = cur.fetchone()[0]
            cur.execute("RESET max_parallel_maintenance_workers")

    builds = [n for n in notices if n.startswith(f'building index "{name}"')]
    assert builds == [f'building index "{name}" on table "memories_memoryvector" serially'], notices
    assert after == "2"  # the build's setting ended with its transaction


def test_an_import_while_a_search_holds_the_vectors_inserts_into_the_index_instead(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", MANY)
    monkeypatch.setattr(vector_index, "LOCK_WAIT", "200ms")
    export, name = exported_with_vectors(tmp_path, "acme/busy-import")
    before = index_oid(name)
    with psycopg.connect(processes.test_database_url()) as reader:  # a search in another process, still running
        reader.execute("SELECT count(*) FROM memories_memoryvector").fetchone()

        assert import_path(export).created == MANY  # did not wait for the reader to finish

        reader.rollback()
    assert index_oid(name) == before
    assert MemoryVector.objects.filter(project_id="acme/busy-import").count() == MANY


def test_a_batch_finds_its_own_repeats_by_cosine_in_the_order_they_came(stub_embedder: StubServer) -> None:
    texts = [
        "vec:1,0,0 Deploys go out on Tuesdays",
        "vec:0,1,0 The API listens on port 8080",
        "vec:1,0,0 Deploys go out on Tuesdays.",  # the first one again, another text
        "vec:0,1,0 The API listens on port 8081",  # as near, but a changed literal: a new fact
        "vec:0,0,1 Logs go to Loki",
    ]
    results = create.store_memories(Scope("acme/batch-repeats", None), [NewMemory(t) for t in texts])
    assert [r.created for r in results] == [True, True, False, True, True]
    assert results[2].duplicate_of == results[0].memory.pk


def a_teammates_log(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Scope, str]:
    """MANY memories stored through `repo`'s project, then everything but its event log wiped (a
    teammate's machine before the first reconcile), with the build-after-load size and the apply batch
    at a test's scale; also the name of the embedder's HNSW index."""
    monkeypatch.setattr(vector_index, "BUILD_AFTER_FROM", MANY)
    monkeypatch.setattr(services, "APPLY_BATCH", 10)  # several transactions, as a large log's
    scope = resolve(None, str(repo))
    create.store_memories(scope, facts(MANY))
    for model in (Memory, MemoryEvent, MemoryChange, LedgerEntry, ProjectSyncState):
        model.objects.all().delete()
    embedder = get_embedder()
    return scope, vector_index.index_name(embedder.id, len(embedder.embed(["probe"])[0]))


def test_a_first_reconcile_larger_than_the_index_builds_it_after_the_load(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches go in with no index to insert into one by one; the index is built once after
    them, is used, and answers as the exact scan does."""
    scope, name = a_teammates_log(repo, monkeypatch)
    during: list[int | None] = []
    real = services.Reconcile._apply_batch

    def watched(self: Any, *args: Any, **kwargs: Any) -> None:
        during.append(index_oid(name))
        real(self, *args, **kwargs)

    monkeypatch.setattr(services.Reconcile, "_apply_batch", watched)

    assert reconcile_scope(scope)["created"] == MANY

    assert len(during) > 1 and set(during) == {None}  # no index while the batches went in
    assert index_oid(name) is not None
    got = vectors(scope.project_id)
    probes = list(got.values())
    assert nearest_many(scope.project_id, get_embedder().id, probes, 5, exact=False) == nearest_many(
        scope.project_id, get_embedder().id, probes, 5, exact=True
    )


def test_a_first_reconcile_that_fails_halfway_still_leaves_the_index(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope, name = a_teammates_log(repo, monkeypatch)
    calls: list[int] = []
    real = services.Reconcile._apply_batch

    def failing(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the disk went away")
        real(self, *args, **kwargs)

    monkeypatch.setattr(services.Reconcile, "_apply_batch", failing)
    with pytest.raises(RuntimeError):
        reconcile_scope(scope)

    assert index_oid(name) is not None  # built again after the failed load
    assert Memory.objects.filter(project_id=scope.project_id).count() == 10  # the first batch committed
