"""The recall log: which memories a search returned (recalled) and which it weighed and held back
(considered), one row each, written without waiting for the WAL flush (yullu_core.durability)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, connection
from django.utils import timezone

from yullu_core.durability import losable

from ..models import EventKind, Memory, MemoryEvent
from ..secrets import redact
from .candidates import SearchResult

log = logging.getLogger(__name__)


EVENT_COLUMNS = "kind, memory_id, memory_uuid, project_id, recall_id, metadata, created_at"
# One row, typed: an INSERT … SELECT does not take its column types from the table.
EVENT_ROW = "(%s, %s::bigint, %s::uuid, %s, %s::uuid, %s::jsonb, %s::timestamptz)"


def _insert_events(rows: list[list[Any]]) -> None:
    """Recall-log rows (values in EVENT_COLUMNS order) in one multi-row INSERT, committed without
    waiting for the WAL flush (they may be lost in a crash; yullu_core.durability). Outside a
    transaction it is one statement, one round trip: `set_config(…, true)` lasts until the end of
    the statement's own implicit transaction, so only its commit is relaxed — instead of BEGIN,
    SET LOCAL, INSERT and COMMIT, four round trips on every retrieve. Inside a caller's transaction,
    `losable()` (a savepoint, the caller's commit untouched). Django's bulk_create cost ~6 % of the
    web process's CPU per retrieve (docs/benchmarks.md); the rows are simple and the table is ours."""
    table = MemoryEvent._meta.db_table
    values = ", ".join([EVENT_ROW] * len(rows))
    if connection.in_atomic_block or not connection.get_autocommit():
        # The memory FK is deferred: in a caller's transaction it is checked only at the caller's
        # commit, which a memory deleted since the search would fail. Keep only the live ids here.
        _drop_deleted(rows)
        params = [value for row in rows for value in row]
        with losable(), connection.cursor() as cur:
            cur.execute(f"INSERT INTO {table} ({EVENT_COLUMNS}) VALUES {values}", params)
        return
    params = [value for row in rows for value in row]
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {table} ({EVENT_COLUMNS}) SELECT * FROM (VALUES {values}) v "
            "WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL",
            params,
        )


def _drop_deleted(rows: list[list[Any]]) -> None:
    """Rows of memories deleted since the search are logged without their FK (memory_id None)."""
    alive = set(Memory.objects.filter(pk__in=[r[1] for r in rows]).values_list("pk", flat=True))
    for row in rows:
        row[1] = row[1] if row[1] in alive else None


def log_recall(parts: SearchResult | Sequence[SearchResult], query: str) -> None:
    """Best effort: a memory deleted between the search and this insert is logged without its FK;
    a logging failure never fails the search itself. `parts`: one search, or the parts of a merged one
    (each hit under its own project, one recall id), written in one INSERT. The query is kept with its
    secrets cut out, as conversation turns are: the hook sends whole prompts, and a token pasted into
    one ("I set FLY_API_TOKEN=… and it still says unauthorized") would otherwise sit in the log, the
    admin's Retrievals page, /api/retrievals and the verdicts copied from it (found on walk 7)."""
    now = timezone.now()
    shown = redact(query)[:1000]
    rows = [
        [
            kind,
            hit["id"],
            hit["uuid"],
            part.project_id,
            part.recall_id,
            json.dumps({"query": shown, "similarity": hit["similarity"], "rank": hit["rank"]}),
            now,
        ]
        for part in ([parts] if isinstance(parts, SearchResult) else parts)
        for kind, hits in ((EventKind.RECALLED, part.results), (EventKind.CONSIDERED, part.considered))
        for hit in hits
    ]
    try:
        _insert_events(rows)
        return
    except IntegrityError:  # the memory FK is checked at the statement's own commit
        _drop_deleted(rows)
    try:
        _insert_events(rows)
    except IntegrityError:
        log.warning("could not write the recall log for %s", rows[0][4])
