"""How the write side announces a change to a memory, without knowing who listens.

`publish_change()` is the one call every write path makes *inside* its transaction, after
the row is written. Listeners (the team-sync outbox in `sync`, registered by its AppConfig)
run in that same transaction, so a rolled-back write announces nothing. `memories` never
imports `sync`: sync depends on this module, not the reverse.

Event times: a change is stamped with `change_time(memory)`, at least 1 µs after the
memory's `updated_at` (which reconcile sets from the latest event it folded), so a local
edit always orders after every event this machine has seen for that memory — whatever the
teammates' clocks say — and every machine folds the edit the same way (docs/contract.md §5).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from yullu_core.timestamps import datetime_to_ns

ChangeKind = Literal["create", "update", "delete"]

# Fields of a memory that travel to teammates (docs/contract.md §5, §10); verdicts, ratings and history
# never do. `memory_state()` reads them from the row; `supersedes` (a memory uuid) and `links`
# ([{type, target uuid}]) are passed by the caller in `publish_change(extra=...)`.
ATTRIBUTE_FIELDS = ("content", "tags", "category", "importance", "expires_at")


@dataclass(frozen=True)
class AnnouncedChange:
    """One change to one memory, as the write side saw it."""

    kind: ChangeKind
    project_id: str
    memory_uuid: str
    ts_ns: int  # event time, nanoseconds since the epoch (UTC)
    state: dict[str, Any] = field(default_factory=dict)  # create: every synced field; update: the changed ones
    vector: tuple[str, Sequence[float]] | None = None  # (embedder id, vector) computed for new content
    git_root: str | None = None  # when the caller knows it (saves a lookup)


# A listener gets the changes of one call: one for a single write, a whole batch for a store batch or
# an import (`publish_changes`), so it can queue them together.
Listener = Callable[[Sequence[AnnouncedChange]], None]
_listeners: list[Listener] = []


def register_listener(listener: Listener) -> None:
    """Idempotent; called from an AppConfig.ready()."""
    if listener not in _listeners:
        _listeners.append(listener)


def change_time(previous_updated_at: datetime | None) -> int:
    """Now, or 1 µs after the memory's last known event if a teammate's clock ran ahead."""
    now = time.time_ns()
    if previous_updated_at is None:
        return now
    return max(now, datetime_to_ns(previous_updated_at) + 1000)


def memory_state(memory: Any, fields: Iterable[str] = ATTRIBUTE_FIELDS) -> dict[str, Any]:
    """The synced fields the model has, read from the row (uuids and datetimes as strings)."""
    state: dict[str, Any] = {}
    for name in fields:
        if not hasattr(memory, name):
            continue
        value = getattr(memory, name)
        if isinstance(value, datetime):
            value = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        elif name == "tags":
            value = list(value or [])
        state[name] = value
    return state


def announced(
    kind: ChangeKind,
    memory: Any,
    ts_ns: int,
    *,
    fields: Iterable[str] | None = None,
    vector: tuple[str, Sequence[float]] | None = None,
    extra: dict[str, Any] | None = None,
    git_root: str | None = None,
) -> AnnouncedChange:
    """The change to `memory` (a saved Memory; for deletes, the row just deleted) that `publish_change`
    announces. `fields`: which synced fields changed (update; None = all, as for create). `extra`:
    synced values that are not model attributes (e.g. `links`, `supersedes`)."""
    state: dict[str, Any] = {}
    if kind != "delete":
        state = memory_state(memory, ATTRIBUTE_FIELDS if fields is None else fields)
        state.update(extra or {})
    return AnnouncedChange(kind, memory.project_id, str(memory.uuid), ts_ns, state, vector, git_root)


def publish_change(
    kind: ChangeKind,
    memory: Any,
    ts_ns: int,
    *,
    fields: Iterable[str] | None = None,
    vector: tuple[str, Sequence[float]] | None = None,
    extra: dict[str, Any] | None = None,
    git_root: str | None = None,
) -> None:
    """Announce a change to `memory` (arguments as `announced`). Call inside the write's transaction.
    Listeners may raise to refuse the write (the transaction then rolls back)."""
    publish_changes([announced(kind, memory, ts_ns, fields=fields, vector=vector, extra=extra, git_root=git_root)])


def publish_changes(changes: Sequence[AnnouncedChange]) -> None:
    """Announce many changes at once (a store batch, an import), inside their transaction: the
    listeners get them together (the outbox queues their events in one insert rather than one per
    memory: an import of 2,000 memories into a repository's project spent a third of its time there)."""
    if not changes:
        return
    for listener in _listeners:
        listener(changes)
