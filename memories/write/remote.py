"""Applying teammates' events (called by sync's reconcile only). These write without announcing a
change: what they apply is already in the log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ..anchors import store as anchor_store
from ..embedding.vector_index import ensure_index
from ..models import Importance, Memory, MemoryVector
from . import bulk_rows
from .edit import remove
from .history import record, record_created, snapshot
from .poisoning import hold_reason
from .validation import clean_category, clean_importance, clean_tags
from .vectors import save_vector


@dataclass
class RemoteState:
    """What a memory folds to from the team log (sync.fold): fields, and times from its events."""

    content: str
    tags: list[str]
    category: str | None
    created_at: datetime
    updated_at: datetime
    importance: str | None = None  # None: the default
    expires_at: datetime | None = None
    anchors: list[Any] | None = None  # None: the log never named any
    author: str | None = None  # the `author` of the last event that changed it (docs/contract.md §11)
    creator: str | None = None  # the `author` of the event that created it


def _attribute(memory: Memory, state: RemoteState) -> None:
    """A memory the log created: its teammates' names, for created_by / updated_by on the wire."""
    memory.created_author, memory.updated_author = state.creator or "", state.author or ""


def _learn_names(memory: Memory, state: RemoteState) -> bool:
    """A row that knows no writer (or last editor) takes the log's when it names one: a memory applied from an
    older version's compaction, whose snapshot named no one, learns them from a newer peer's compaction that wrote
    them back (sync.compact); a name the row holds is never replaced here."""
    learnt = False
    if state.creator and not memory.created_author and memory.created_by_id is None:
        memory.created_author, learnt = state.creator, True
    if state.author and not memory.updated_author and memory.updated_by_id is None:
        memory.updated_author, learnt = state.author, True
    return learnt


RemoteOutcome = Literal["created", "updated", "unchanged", "deleted", "absent"]


def remote_fields(memory: Memory, state: RemoteState) -> dict[str, Any]:
    """The fields of `memory` that differ from `state` (times excluded)."""
    wanted: dict[str, Any] = {
        "content": state.content,
        "tags": clean_tags(state.tags),
        "category": clean_category(state.category),
        "importance": clean_importance(state.importance) or Importance.NORMAL,
        "expires_at": state.expires_at,
    }
    return {k: v for k, v in wanted.items() if getattr(memory, k) != v}


RemoteVector = tuple[str, Sequence[float]]  # (embedder id, vector)


def _new_from_remote(project_id: str, memory_uuid: str, state: RemoteState) -> Memory:
    """An unsaved row for a memory this machine does not have yet, equal to `state` (its times and author too)."""
    memory = Memory(uuid=memory_uuid, project_id=project_id)
    for key, value in remote_fields(memory, state).items():
        setattr(memory, key, value)
    memory.held_reason = hold_reason(memory.content, memory.tags)
    memory.created_at, memory.updated_at = state.created_at, state.updated_at
    _attribute(memory, state)
    return memory


def create_remote_many(project_id: str, items: Sequence[tuple[str, RemoteState, RemoteVector | None]]) -> list[Memory]:
    """`apply_remote_state` for memories this machine does not have yet, in a constant number of
    statements (a teammate's first reconcile creates thousands). Call inside a transaction, after
    checking that no row with these uuids exists."""
    memories = [_new_from_remote(project_id, memory_uuid, state) for memory_uuid, state, _ in items]
    created = bulk_rows.insert(Memory, memories)
    with_vector = [(m, v) for m, (_, _, v) in zip(created, items, strict=True) if v is not None]
    for embedder_id, dim in {(v[0], len(v[1])) for _, v in with_vector}:
        ensure_index(embedder_id, dim)
    bulk_rows.insert_vectors([(m.pk, project_id, v[0], v[1]) for m, v in with_vector])
    anchor_store.add_from_wire([(m, state.anchors) for m, (_, state, _) in zip(created, items, strict=True)])
    record_created(created, "reconcile", [state.author for _, state, _ in items])
    return created


def apply_remote_state(
    project_id: str,
    memory_uuid: str,
    state: RemoteState | None,
    vector: tuple[str, Sequence[float]] | None = None,
    *,
    memory: Memory | None = None,
    author: str | None = None,
) -> RemoteOutcome:
    """Make the local row equal `state` (None: the memory is deleted). Call inside a transaction,
    with the row (if any) passed in locked `select_for_update` by the caller.

    `vector` is stored for its embedder; a content change first drops every old (now stale) vector.
    `author`: the deleting event's author (a kept memory's is `state.author`), for history.
    """
    if state is None:
        if memory is None:
            return "absent"
        remove(memory, "reconcile", publish_forget=False, author=author)
        return "deleted"
    if memory is None:
        memory = _new_from_remote(project_id, memory_uuid, state)
        memory.save()
        if vector is not None:
            save_vector(memory, vector[0], vector[1])
        if state.anchors:
            anchor_store.from_wire(memory, state.anchors)
        record(memory, "created", "reconcile", None, snapshot(memory), author=state.author)
        return "created"
    changes = remote_fields(memory, state)
    if state.anchors is not None and anchor_store.wire_of(memory) != state.anchors:
        anchor_store.from_wire(memory, state.anchors)  # a teammate's re-pin or new anchors
        changes["anchors"] = state.anchors
    if "content" in changes:  # a content change makes every old vector stale
        MemoryVector.objects.filter(memory=memory).delete()
    if vector is not None:
        save_vector(memory, vector[0], vector[1])
    if _learn_names(memory, state) and not changes:
        memory.save(update_fields=["created_author", "updated_author"])
    if not changes and (memory.created_at, memory.updated_at) == (state.created_at, state.updated_at):
        return "unchanged"
    before = snapshot(memory)
    for key, value in changes.items():
        if key != "anchors":
            setattr(memory, key, value)
    if "content" in changes or "tags" in changes:
        memory.held_reason = hold_reason(memory.content, memory.tags)
    memory.created_at, memory.updated_at = state.created_at, state.updated_at
    if changes:  # a teammate's change is no user's here: the last changer kept would own their text (walk 12)
        memory.updated_by_id, memory.updated_author = None, state.author or ""
    memory.save()
    if not changes:
        return "unchanged"  # only the times moved (e.g. an empty update event)
    record(memory, "updated", "reconcile", before, snapshot(memory), author=state.author, fields=sorted(changes))
    return "updated"
