"""What every local write leaves behind besides the row: the history row (local, never synced),
the activity event, and the announcement of extra synced values (`changes.publish_change`)."""

from __future__ import annotations

from typing import Any

from access import policy as access

from ..changes import change_time, ns_to_datetime, publish_change
from ..models import Memory, MemoryChange, MemoryEvent


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


def change_row(
    memory: Memory, action: str, source: str, before: dict[str, Any] | None, after: dict[str, Any] | None
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
    )


def record_change(
    memory: Memory, action: str, source: str, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> MemoryChange:
    """One history row (local only, never synced). Call inside the change's transaction."""
    row = change_row(memory, action, source, before, after)
    row.save()
    return row


# Adapters name themselves; history uses the contract's vocabulary (docs/contract.md §10).
HISTORY_SOURCES = {"reconcile": "sync", "review": "admin"}


def activity(kind: str, memory: Memory, **metadata: Any) -> MemoryEvent:
    return MemoryEvent(
        kind=kind, memory=memory, memory_uuid=memory.uuid, project_id=memory.project_id, metadata=metadata
    )


def announce(memory: Memory, **extra: Any) -> None:
    """Publish an `update` of `memory` carrying only `extra` synced values (e.g. `links`,
    `supersedes`), stamped after its last change. Inside the change's transaction."""
    ts = change_time(memory.updated_at)
    memory.updated_at = ns_to_datetime(ts)
    memory.save(update_fields=["updated_at"])
    publish_change("update", memory, ts, fields=(), extra=extra)
