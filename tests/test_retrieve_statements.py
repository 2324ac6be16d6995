"""A retrieve's statements and the rows its cheaper reads build (issue 34, round twenty-six: CPU per operation
outside the models). Real models and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.models import Memory
from memories.scope import resolve
from memories.search import queries
from memories.wire import hit_to_wire
from memories.write import create

pytestmark = pytest.mark.django_db

DEPLOY = "Deploys of the billing worker go out through the release pipeline on Tuesdays."
PROXY = "The probe service listens on port 8080 behind the staging proxy."
WHOLE_ROW = '"memories_memory"."uuid"'  # what the ORM selects when it builds Memory rows


def _fields(m: Memory) -> dict[str, Any]:
    return {
        f.attname: getattr(m, f.attname)
        for f in Memory._meta.concrete_fields
        if f.attname not in m.get_deferred_fields()
    }


def test_hit_rows_are_the_orms_rows_field_for_field() -> None:
    scope = resolve("acme/retrieve-statements-rows", None)
    ada = User.objects.create(username="ada-retrieve-rows")
    one = create.store_memory(scope, DEPLOY, "process", ["release", "billing"]).memory
    two = create.store_memory(scope, PROXY).memory
    Memory.objects.filter(pk=one.pk).update(
        rating=4, rating_comment="right", importance="high", expires_at=timezone.now() + timedelta(days=3)
    )
    Memory.objects.filter(pk=two.pk).update(
        superseded_by_id=one.pk, created_by_id=ada.pk, updated_author="bob", held_reason="review"
    )
    ids = [one.pk, two.pk, 10**12]  # a missing id is absent from both
    ours, orms = queries.hit_rows(ids), Memory.objects.only(*queries.HIT_FIELDS).in_bulk(ids)
    assert ours.keys() == orms.keys() == {one.pk, two.pk}
    for pk in ours:
        assert ours[pk].get_deferred_fields() == orms[pk].get_deferred_fields()
        assert _fields(ours[pk]) == _fields(orms[pk])
        assert hit_to_wire(ours[pk], 0.5, 1) == hit_to_wire(orms[pk], 0.5, 1)
        assert ours[pk]._state.db == orms[pk]._state.db and not ours[pk]._state.adding
    # Memory.from_db takes values as they come: no field may need converting (a from_db_value would be skipped)
    assert not [f.name for f in queries._HIT_COLUMNS if hasattr(f, "from_db_value")]


def test_a_retrieve_builds_no_row_through_the_orm() -> None:
    scope = resolve("acme/retrieve-statements-count", None)
    create.store_memory(scope, DEPLOY)
    create.store_memory(scope, PROXY)
    with CaptureQueriesContext(connection) as ctx:
        found = queries.search(scope.project_id, "how do we deploy the billing worker?", limit=3)
    assert [h["content"] for h in found.results][:1] == [DEPLOY]
    assert not [q["sql"] for q in ctx.captured_queries if WHOLE_ROW in q["sql"]]
