"""A store's statements, counted, and the rows its cheaper inserts write (issue 34, round twenty-six: CPU per
operation outside the models). Real models and PostgreSQL."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import Memory, MemoryChange, MemoryEvent, MemoryVector
from memories.scope import resolve
from memories.write import bulk_rows, create
from memories.write.history import _event, _row, snapshot

pytestmark = pytest.mark.django_db

FIRST = "The probe service listens on port 8080 behind the staging proxy."
SECOND = "Releases of the billing worker go out on Tuesdays after the freeze lifts."


def _written(model: type[MemoryEvent] | type[MemoryChange], ids: list[int]) -> list[dict[str, Any]]:
    rows = model.objects.filter(memory_id__in=ids).order_by("memory_id").values()
    return [{k: v for k, v in row.items() if k != "id"} for row in rows]


def test_history_rows_inserted_together_are_the_rows_bulk_create_writes() -> None:
    scope = resolve("acme/store-statements-rows", None)
    one = create.store_memory(scope, FIRST, "process", ["ops", "probe"]).memory
    two = create.store_memory(scope, SECOND).memory
    MemoryEvent.objects.filter(memory_id__in=[one.pk, two.pk]).delete()
    MemoryChange.objects.filter(memory_id__in=[one.pk, two.pk]).delete()
    events = [_event("created", m, "mcp") for m in (one, two)]
    changes = [_row(m, "created", "mcp", None, snapshot(m), a) for m, a in ((one, None), (two, "ada"))]
    bulk_rows.insert_together(events, changes)
    together = _written(MemoryEvent, [one.pk, two.pk]), _written(MemoryChange, [one.pk, two.pk])
    MemoryEvent.objects.filter(memory_id__in=[one.pk, two.pk]).delete()
    MemoryChange.objects.filter(memory_id__in=[one.pk, two.pk]).delete()
    MemoryEvent.objects.bulk_create(events)
    MemoryChange.objects.bulk_create(changes)
    assert together == (_written(MemoryEvent, [one.pk, two.pk]), _written(MemoryChange, [one.pk, two.pk]))
    assert together[1][0]["after"]["tags"] == ["ops", "probe"] and together[1][1]["author"] == "ada"


def test_a_vector_inserted_plainly_is_the_row_bulk_create_writes() -> None:
    scope = resolve("acme/store-statements-vector", None)
    memory = create.store_memory(scope, FIRST).memory
    MemoryVector.objects.filter(memory_id=memory.pk).delete()
    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    bulk_rows.insert_vectors([(memory.pk, scope.project_id, "probe:model", vector)])
    plain = MemoryVector.objects.filter(memory_id=memory.pk).values(
        "memory_id", "project_id", "embedder", "dim", "vector"
    )
    written = [{**row, "vector": list(row["vector"])} for row in plain]
    MemoryVector.objects.filter(memory_id=memory.pk).delete()
    MemoryVector.objects.bulk_create(
        [MemoryVector(memory_id=memory.pk, project_id=scope.project_id, embedder="probe:model", dim=384, vector=vector)]
    )
    orm = MemoryVector.objects.filter(memory_id=memory.pk).values(
        "memory_id", "project_id", "embedder", "dim", "vector"
    )
    assert written == [{**row, "vector": list(row["vector"])} for row in orm]
    assert np.allclose(np.asarray(plain[0]["vector"], dtype=np.float32), vector, rtol=1e-6, atol=0)


def test_a_store_writes_its_history_and_activity_rows_in_one_statement() -> None:
    scope = resolve("acme/store-statements-count", None)
    create.store_memory(scope, FIRST)
    with CaptureQueriesContext(connection) as ctx:
        stored = create.store_memory(scope, SECOND, "process", ["release"], source="mcp")
    inserts = [q["sql"] for q in ctx.captured_queries if "memories_memorychange" in q["sql"]]
    assert len(inserts) == 1 and "memories_memoryevent" in inserts[0]
    assert not [q for q in ctx.captured_queries if q["sql"].startswith('INSERT INTO "memories_memoryevent"')]
    vectors = [q["sql"] for q in ctx.captured_queries if "INSERT INTO memories_memoryvector" in q["sql"]]
    assert len(vectors) == 1  # not through the ORM's bulk_create ('INSERT INTO "memories_memoryvector"')
    event = MemoryEvent.objects.get(memory_id=stored.memory.pk)
    change = MemoryChange.objects.get(memory_id=stored.memory.pk)
    assert (event.kind, event.metadata, event.memory_uuid) == ("created", {"source": "mcp"}, stored.memory.uuid)
    assert (change.action, change.before, (change.after or {})["content"]) == ("created", None, SECOND)
    assert Memory.objects.filter(pk=stored.memory.pk).exists()
