"""Lifecycle fields and links travel through the team log (docs/contract.md §10); verdicts and history stay local.
A is this test process; B is a `yullu reconcile` process with its own database (tests/test_sync.py)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memories import lifecycle
from memories.scope import resolve
from memories.search import queries
from memories.write import create
from tests.stubs import StubServer
from tests.test_sync import Machine, machine_dbs, machines, repo_origin  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def test_supersede_links_importance_and_expiry_reach_a_teammate_but_verdicts_do_not(
    repo: Path,
    machines: dict[str, Machine],  # noqa: F811 (the fixture imported above)
    stub_embedder: StubServer,
) -> None:
    scope = resolve(None, str(repo))
    old = create.store_memory(scope, "vec:1,0,0 We deploy with make ship", "process").memory
    new = create.store_memory(
        scope, "vec:1,0.6,0 make ship is retired; deploy with make release", supersedes=old.pk, importance="high"
    ).memory
    other = create.store_memory(scope, "vec:0,0,1 Releases happen on Fridays", ttl_days=30).memory
    lifecycle.link_memories(other.pk, new.pk, "contradicts")
    found = queries.search(scope.project_id, "vec:1,0,0 deploy", min_similarity=0.0)
    lifecycle.rate_recall(found.recall_id, new.pk, True)

    b = machines["B"]
    b.reconcile(repo)
    with psycopg.connect(b.url) as conn:
        found_rows = conn.execute(
            "SELECT m.uuid::text, m.importance, s.uuid::text, m.expires_at IS NOT NULL "
            "FROM memories_memory m LEFT JOIN memories_memory s ON s.id = m.superseded_by_id"
        ).fetchall()
        rows = {r[0]: tuple(r[1:]) for r in found_rows}
        links = conn.execute(
            "SELECT f.uuid::text, l.kind, t.uuid::text FROM memories_memorylink l "
            "JOIN memories_memory f ON f.id = l.from_memory_id JOIN memories_memory t ON t.id = l.to_memory_id"
        ).fetchall()
        verdicts = conn.execute("SELECT count(*) FROM memories_recallfeedback").fetchone()
    assert rows[str(old.uuid)] == ("normal", str(new.uuid), False)
    assert rows[str(new.uuid)] == ("high", None, False)
    assert rows[str(other.uuid)] == ("normal", None, True)
    assert sorted(links) == sorted(
        [(str(new.uuid), "supersedes", str(old.uuid)), (str(other.uuid), "contradicts", str(new.uuid))]
    )
    assert verdicts == (0,)


def test_superseding_leaves_both_machines_with_the_same_updated_at_on_every_memory(
    repo: Path,
    machines: dict[str, Machine],  # noqa: F811 (the fixture imported above)
    stub_embedder: StubServer,
) -> None:
    """Marking a memory superseded is carried by the superseding memory's event; the old row's
    `updated_at` must not move on this machine alone (teammates would differ from us forever)."""
    from memories.models import Memory

    scope = resolve(None, str(repo))
    old = create.store_memory(scope, "vec:1,0,0 We deploy with make ship", "process").memory
    create.store_memory(scope, "vec:1,0.6,0 make ship is retired; deploy with make release", supersedes=old.pk)
    gone = create.store_memory(scope, "vec:0,0,1 Staging runs on Fridays", "process").memory
    later = create.store_memory(scope, "vec:0,1,0 Staging runs on Thursdays now", "process").memory
    lifecycle.link_memories(later.pk, gone.pk, "supersedes")

    machines["B"].reconcile(repo)
    here = {
        str(u): (t, s and str(s)) for u, t, s in Memory.objects.values_list("uuid", "updated_at", "superseded_by__uuid")
    }
    with psycopg.connect(machines["B"].url) as conn:
        rows = conn.execute(
            "SELECT m.uuid::text, m.updated_at, s.uuid::text "
            "FROM memories_memory m LEFT JOIN memories_memory s ON s.id = m.superseded_by_id"
        ).fetchall()
    there = {r[0]: (r[1], r[2]) for r in rows}
    assert there[str(old.uuid)][1] is not None and there[str(gone.uuid)][1] == str(later.uuid)
    assert there == here
