"""Rows we can afford to lose in a crash (recall log, usage) commit without waiting for the WAL
flush; nothing else does, and a caller's own transaction is never relaxed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection, transaction

from memories.models import Usage
from memories.usage import record_usage
from yullu_core.durability import losable


def _synchronous_commit() -> str:
    with connection.cursor() as cur:
        cur.execute("SHOW synchronous_commit")
        return cur.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_losable_write_outside_any_transaction_skips_the_flush_wait_only_for_itself() -> None:
    with losable():
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"


@pytest.mark.django_db(transaction=True)
def test_a_losable_write_inside_a_callers_transaction_leaves_the_callers_commit_durable() -> None:
    with transaction.atomic():
        with losable():
            assert _synchronous_commit() == "on"
        assert _synchronous_commit() == "on"


@pytest.mark.django_db(transaction=True)
def test_usage_rows_are_written_and_visible_at_once() -> None:
    record_usage("openai", "text-embedding-3-small", "embed", 0.0, tokens_in=12)
    assert Usage.objects.filter(provider="openai", input_tokens=12).count() == 1


@pytest.mark.django_db
def test_the_duplicate_check_counts_a_project_only_up_to_the_exact_scan_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.test.utils import CaptureQueriesContext

    from memories.models import Memory
    from memories.search import candidates
    from memories.write.nearby import scans_exactly

    monkeypatch.setattr(candidates, "EXACT_SCAN_MAX", 2)
    for text in ("first fact", "second fact"):
        Memory.objects.create(project_id="scan/limit", content=text)
    assert scans_exactly("scan/limit")
    Memory.objects.create(project_id="scan/limit", content="third fact")
    with CaptureQueriesContext(connection) as counted:
        assert not scans_exactly("scan/limit")
    assert "LIMIT 3" in counted.captured_queries[0]["sql"]  # a big project is not counted to its end


def _recall(project_id: str, memories: list[Any]) -> Any:
    from memories.search import candidates
    from memories.wire import hit_to_wire

    result = candidates.SearchResult(project_id=project_id, recall_id=str(uuid.uuid4()))
    result.results = [hit_to_wire(m, 0.9, n) for n, m in enumerate(memories, start=1)]
    return result


@pytest.mark.django_db(transaction=True)
def test_the_recall_log_outside_a_transaction_is_one_statement_and_relaxes_no_later_commit() -> None:
    from django.test.utils import CaptureQueriesContext

    from memories.models import Memory, MemoryEvent
    from memories.search import recall_log

    kept = Memory.objects.create(project_id="recall/log", content="a fact to recall")
    result = _recall("recall/log", [kept])
    with CaptureQueriesContext(connection) as ran:
        recall_log.log_recall(result, "what fact?")
    assert len(ran.captured_queries) == 1  # not BEGIN, SET LOCAL, INSERT, COMMIT
    assert "set_config('synchronous_commit', 'off', true)" in ran.captured_queries[0]["sql"]
    assert _synchronous_commit() == "on"  # the relaxation ended with the statement
    logged = MemoryEvent.objects.get(recall_id=result.recall_id)  # committed: rate_recall can find it
    assert (logged.kind, logged.memory_id, logged.metadata["query"]) == ("recalled", kept.pk, "what fact?")


@pytest.mark.django_db(transaction=True)
def test_a_memory_deleted_before_its_recall_is_logged_outside_a_transaction_is_logged_without_its_key() -> None:
    from memories.models import Memory, MemoryEvent
    from memories.search import recall_log

    kept = Memory.objects.create(project_id="recall/gone", content="kept fact")
    gone = Memory.objects.create(project_id="recall/gone", content="gone fact")
    result = _recall("recall/gone", [kept, gone])
    Memory.objects.filter(pk=gone.pk).delete()  # a concurrent delete between search and logging
    recall_log.log_recall(result, "q")
    logged = dict(MemoryEvent.objects.filter(recall_id=result.recall_id).values_list("memory_uuid", "memory_id"))
    assert logged == {kept.uuid: kept.pk, gone.uuid: None}
