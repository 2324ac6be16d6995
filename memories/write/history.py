"""What every local write leaves behind besides the row. Audit is one call, `record()` (or
`record_created()` for a batch): the history row (local, never synced) and, for creates, updates
and deletes, the activity event. Access changes have their own trail (access.audit.record).
`announce()` publishes extra synced values (`changes.publish_change`)."""

from __future__ import annotations

from typing import Any

from access import policy as access
from yullu_core.timestamps import ns_to_datetime

from ..changes import change_time, publish_change
from ..models import EventKind, Memory, MemoryChange, MemoryEvent
from . import bulk_rows


def snapshot(m: Memory) -> dict[str, Any]:
    """The fields history records before and after a change."""
    return {
        "content": m.content,
        "tags": list(m.tags or []),
        "category": m.category,
        "importance": m.importance,
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "superseded_by": m.superseded_by_id,
        "rating": m.rating,
    }


def _row(
    memory: Memory,
    action: str,
    source: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    author: str | None = None,
) -> MemoryChange:
    return MemoryChange(
        memory=memory,
        memory_uuid=memory.uuid,
        project_id=memory.project_id,
        action=action,
        source=HISTORY_SOURCES.get(source, source)[:20],
        before=before,
        after=after,
        user_id=access.acting().user_id,
        author=(author or "")[:150],
    )


def _event(kind: str, memory: Memory, source: str, **metadata: Any) -> MemoryEvent:
    row: Memory | None = memory
    if kind == EventKind.DELETED:  # the row is about to go: the event keeps what it said
        row, metadata = None, {"content": memory.content[:200], **metadata}
    return MemoryEvent(
        kind=kind,
        memory=row,
        memory_uuid=memory.uuid,
        project_id=memory.project_id,
        metadata={"source": source, **metadata},
    )


# Adapters name themselves; history uses the contract's vocabulary (docs/contract.md §10).
HISTORY_SOURCES = {"reconcile": "sync", "review": "admin"}
# Actions the activity feed (stats, the dashboard's charts) counts too; the rest are history only.
ACTIVITY = {"created": EventKind.CREATED, "updated": EventKind.UPDATED, "deleted": EventKind.DELETED}


def record(
    memory: Memory,
    action: str,
    source: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    *,
    author: str | None = None,
    **metadata: Any,
) -> None:
    """The one audit call of a local write, inside its transaction: the history row (who, through
    which channel, before → after; none when nothing it shows changed) and, for a create, update or
    delete, the activity event (`metadata` goes there). Call it before deleting the row. The sync
    announcement is not audit and stays `changes.publish_change` (it carries the change itself).
    `author`: a teammate's event's author, for a change applied from the log."""
    if before != after:
        _row(memory, action, source, before, after, author).save()
    if (kind := ACTIVITY.get(action)) is not None:
        _event(kind, memory, source, **metadata).save()


def record_created(memories: list[Memory], source: str, authors: list[str | None] | None = None) -> None:
    """`record(m, "created", source, None, snapshot(m), author=a)` for a batch of new memories: a few in
    one statement, many by two COPYs (bulk_rows)."""
    names = authors or [None] * len(memories)
    events = [_event(EventKind.CREATED, m, source) for m in memories]
    rows = [_row(m, "created", source, None, snapshot(m), a) for m, a in zip(memories, names, strict=True)]
    if len(memories) < bulk_rows.COPY_FROM:
        bulk_rows.insert_together(events, rows)
        return
    bulk_rows.insert(MemoryEvent, events)
    bulk_rows.insert(MemoryChange, rows)


def announce(memory: Memory, **extra: Any) -> None:
    """Publish an `update` of `memory` carrying only `extra` synced values (e.g. `links`,
    `supersedes`), stamped after its last change. Inside the change's transaction."""
    ts = change_time(memory.updated_at)
    memory.updated_at = ns_to_datetime(ts)
    memory.save(update_fields=["updated_at"])
    publish_change("update", memory, ts, fields=(), extra=extra)
