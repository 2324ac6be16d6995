"""The last note's small leftovers (lane fixes13): each test is red without its fix."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from access.actor import acting_as, actor_for_user
from memories import admin_views, lifecycle
from memories.models import Memory
from memories.scope import resolve
from memories.write import create, edit

pytestmark = pytest.mark.django_db


def _writer_by_history_summary(memory: Memory) -> str:
    """What the Conflicts page said before it read the writers in one query: the newest create or
    update among `history_summary`'s last five changes."""
    recent = lifecycle.history_summary(memory)["recent"]
    wrote = next((r for r in recent if r["action"] in ("created", "updated")), None)
    return f"{wrote['by'] or 'unknown'} · {str(wrote['at'])[:16].replace('T', ' ')}" if wrote else ""


def _conflict(scope: Any, n: int) -> tuple[Memory, Memory]:
    one = create.store_memory(scope, f"Queue {n} retries three times before it gives up", "process").memory
    two = create.store_memory(scope, f"Queue {n} never retries: a failure goes to the dead letters", "process").memory
    lifecycle.link_memories(one.pk, two.pk, "contradicts")
    return one, two


def test_the_conflicts_page_names_the_same_writers_as_each_memorys_history(
    django_user_model: Any, keyword_only: None
) -> None:
    """Written before the one-query version: with five or more later changes (ratings) the last write
    falls out of history_summary's five, and the page says no writer, as it did."""
    ana, bo, cy = (actor_for_user(django_user_model.objects.create_superuser(n)) for n in ("ana", "bo", "cy"))
    scope = resolve("acme/conflicts", None)
    with acting_as(ana):
        buried, rated_twice = _conflict(scope, 1)
        unrated, _ = _conflict(scope, 2)
    with acting_as(bo):
        edit.update_memory(buried.pk, content="Queue 1 retries five times before it gives up")
        edit.update_memory(rated_twice.pk, content="Queue 1 never retries at all")
        for i in range(6):  # six later edits: the newest is bo's
            edit.update_memory(unrated.pk, content=f"Queue 2 retries {i + 3} times before it gives up")
    with acting_as(cy):
        for rating in (6, 7, 8, 9, 10, 7):  # six later changes: bo's update is not among the last five
            edit.rate_memory(buried.pk, rating)
        for rating in (6, 7):
            edit.rate_memory(rated_twice.pk, rating)
    conflicts = admin_views._with_writers(lifecycle.open_conflicts("acme/conflicts"))
    memories = Memory.objects.in_bulk()
    said = {c[f"{side}_id"]: c[f"{side}_by"] for c in conflicts for side in ("from", "to")}
    assert said == {pk: _writer_by_history_summary(memories[pk]) for pk in said}
    assert said[buried.pk] == "" and said[rated_twice.pk].startswith("bo · ")
    assert said[unrated.pk].startswith("bo · ")
    assert sum(1 for by in said.values() if by.startswith("ana · ")) == 1


def test_the_conflicts_pages_queries_do_not_grow_with_its_conflicts(django_user_model: Any, keyword_only: None) -> None:
    """Three queries and the user lookups per side of each conflict (history_summary each)."""
    scope = resolve("acme/many-conflicts", None)
    for n in range(6):
        with acting_as(actor_for_user(django_user_model.objects.create_superuser(f"writer{n}"))):
            _conflict(scope, n)
    conflicts = lifecycle.open_conflicts("acme/many-conflicts")

    def queries(listed: list[dict[str, Any]]) -> int:
        with CaptureQueriesContext(connection) as captured:
            written = admin_views._with_writers([dict(c) for c in listed])
        assert all(c["from_by"] and c["to_by"] for c in written)
        return len(captured.captured_queries)

    one, six = queries(conflicts[:1]), queries(conflicts)
    assert six == one <= 3, (one, six)
