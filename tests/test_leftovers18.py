"""Leftovers of the seventeenth round: what "current" means spelled once for the ORM and the plain-SQL probes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import CURRENT_WHERE, Importance, LinkKind, Memory, MemoryAnchor, MemoryLink
from memories.search.candidates import CURRENT_SQL
from memories.write.nearby import _has_current

DAY = timedelta(days=1)


def _one_in_every_state(project: str) -> dict[str, Memory]:
    """A memory in every lifecycle state the memories table holds (docs/contract.md §10, §12). Rejected and
    deleted memories leave the table (archived), so they are made and removed."""
    now = timezone.now()

    def make(name: str, **fields: object) -> Memory:
        return Memory.objects.create(project_id=project, content=f"{name} fact of {project}", **fields)

    rows = {"active": make("active")}
    rows["superseded"] = make("superseded", superseded_by=rows["active"])
    rows["held"] = make("held", held_reason="its text instructs the assistant")
    rows["held and superseded"] = make("held superseded", held_reason="instructs", superseded_by=rows["active"])
    rows["expired"] = make("expired", expires_at=now - DAY)
    rows["expired and superseded"] = make("expired superseded", expires_at=now - DAY, superseded_by=rows["active"])
    rows["expiring later"] = make("expiring", expires_at=now + DAY)
    rows["low importance, rated 1"] = make("low", importance=Importance.LOW, rating=1)
    rows["stale"] = make("stale")
    MemoryAnchor.objects.create(memory=rows["stale"], project_id=project, path="a.py", status="changed")
    rows["contradicted"] = make("contradicted")
    MemoryLink.objects.create(
        from_memory=rows["contradicted"], to_memory=rows["active"], kind=LinkKind.CONTRADICTS, project_id=project
    )
    for gone in ("rejected", "deleted"):
        make(gone).delete()
    return rows


CURRENT_STATES = {"active", "expiring later", "low importance, rated 1", "stale", "contradicted"}


@pytest.mark.django_db
def test_the_orm_and_the_sql_spellings_of_current_select_the_same_rows() -> None:
    """nearby._has_current spelled Memory.objects.current()'s conditions in its own SQL, and nothing checked they
    agreed: CURRENT_WHERE is the one SQL spelling beside the manager, and each of them (and the search's
    CURRENT_SQL) selects exactly the current states here."""
    project = "lifecycle/every"
    rows = _one_in_every_state(project)
    names = {m.pk: name for name, m in rows.items()}
    current = Memory.objects.current().filter(project_id=project)
    orm = {names[pk] for pk in current.values_list("pk", flat=True)}
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT id FROM memories_memory WHERE project_id = %(project)s AND {CURRENT_WHERE}",
            {"project": project, "now": timezone.now()},
        )
        plain = {names[pk] for (pk,) in cur.fetchall()}
        cur.execute(f"SELECT m.id FROM memories_memory m WHERE m.project_id = %s AND {CURRENT_SQL}", [project])
        search = {names[pk] for (pk,) in cur.fetchall()}
    assert orm == CURRENT_STATES
    assert plain == orm
    assert search == orm


@pytest.mark.django_db
def test_the_stores_probe_for_a_current_memory_agrees_with_the_manager_in_every_state() -> None:
    """The store's plain-SQL probe (nearby._has_current) says a project has a current memory exactly when the
    manager's current().exists() does: one project per state, the state's row alone in it."""
    rows = _one_in_every_state("lifecycle/probe")
    for name, memory in rows.items():
        project = f"lifecycle/probe/{name}"
        Memory.objects.filter(pk=memory.pk).update(project_id=project)
        current = Memory.objects.current().filter(project_id=project).exists()
        assert _has_current(project, set()) is current, name
        assert current is (name in CURRENT_STATES), name
        assert _has_current(project, {memory.pk}) is False, name  # excluded: the batch's own rows
