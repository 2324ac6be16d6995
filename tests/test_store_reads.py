"""A store's duplicate check reads the current neighbours' ids and texts, not whole rows, and a whole row only of the
duplicate it answers with (issue 34, round twenty-four: the ORM's `current()` querysets for the exact-text read and the
neighbours' rows cost 0.9–1.3 ms of CPU each a store). Real models and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import Memory, ProjectLocation
from memories.scope import recorded_root, resolve
from memories.write import create, edit
from sync import outbox

pytestmark = pytest.mark.django_db

PORT = "The probe service listens on port 8080 behind the staging proxy."
OTHER_PORT = "The probe service listens on port 8081 behind the staging proxy."  # a changed literal: related only
VAULT = "Secrets of the probe service are kept in Vault under secret/probe; never commit them."
WHOLE_ROW = '"memories_memory"."uuid"'  # what the ORM selects when it builds Memory rows


def test_a_store_reports_each_related_memorys_own_current_text() -> None:
    scope = resolve("acme/store-reads", None)
    port = create.store_memory(scope, PORT).memory
    vault = create.store_memory(scope, VAULT).memory
    stored = create.store_memory(scope, OTHER_PORT)
    assert stored.created
    similar = {s["id"]: s["content"] for s in stored.similar}
    assert similar.get(port.pk) == PORT
    assert similar.get(vault.pk, VAULT) == VAULT  # each its own text, none another's
    edit.update_memory(port.pk, content="The probe service listens on port 9090 behind the staging proxy.")
    again = create.store_memory(scope, "The probe service listens on port 7070 behind the staging proxy.")
    assert {s["id"]: s["content"] for s in again.similar}.get(port.pk) == (
        "The probe service listens on port 9090 behind the staging proxy."
    )


def test_a_memory_held_for_review_is_neither_a_duplicate_nor_related() -> None:
    scope = resolve("acme/store-reads-held", None)
    create.store_memory(scope, VAULT)
    held = create.store_memory(scope, PORT).memory
    Memory.objects.filter(pk=held.pk).update(held_reason="review")
    again = create.store_memory(scope, PORT)
    assert again.created and again.duplicate_of is None
    assert held.pk not in {s["id"] for s in again.similar}
    related = create.store_memory(scope, OTHER_PORT)
    assert held.pk not in {s["id"] for s in related.similar}
    assert again.memory.pk in {s["id"] for s in related.similar}


@pytest.mark.parametrize("text", [PORT, PORT.replace("o", "\u03bf")])  # the same text; a look-alike of it
def test_a_duplicate_answers_with_the_whole_existing_memory(text: str) -> None:
    scope = resolve("acme/store-reads-dup", None)
    first = create.store_memory(scope, PORT, "process", ["ops"]).memory
    again = create.store_memory(scope, text)
    assert (again.created, again.duplicate_of) == (False, first.pk)
    assert again.memory == first
    assert (again.memory.uuid, again.memory.tags, again.memory.category) == (first.uuid, ["ops"], "process")
    assert again.as_dict()["id"] == first.pk


def test_the_check_builds_no_memory_rows_unless_it_found_a_duplicate() -> None:
    scope = resolve("acme/store-reads-rows", None)
    create.store_memory(scope, PORT)
    create.store_memory(scope, VAULT)
    with CaptureQueriesContext(connection) as fresh:
        assert create.store_memory(scope, OTHER_PORT).similar
    with CaptureQueriesContext(connection) as duplicate:
        assert not create.store_memory(scope, PORT).created
    selects = [q["sql"] for q in fresh.captured_queries if q["sql"].startswith("SELECT") and WHOLE_ROW in q["sql"]]
    assert selects == []
    read = [q["sql"] for q in duplicate.captured_queries if q["sql"].startswith("SELECT") and WHOLE_ROW in q["sql"]]
    assert len(read) == 1  # the duplicate's own row, which the store answers with


def test_a_store_of_a_project_never_checked_out_is_not_logged_and_one_whose_checkout_is_gone_is_held(
    tmp_path: Path,
) -> None:
    """outbox._target's last two cases, which read the project's recorded folder (memories.scope.recorded_root)
    rather than asking the ORM whether one exists (round twenty-four)."""
    assert outbox._target("acme/never-checked-out", None) == (None, False)
    ProjectLocation.objects.create(project_id="acme/moved-away", git_root=str(tmp_path / "gone"))
    assert recorded_root("acme/moved-away") == str(tmp_path / "gone")
    assert outbox._target("acme/moved-away", None)[0] == outbox.HELD
