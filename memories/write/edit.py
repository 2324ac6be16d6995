"""Changes to memories that exist: patch, supersede, re-pin, delete, rate, approve a held one,
restore a rejected one. Each locks its row, writes history and activity, and announces what
travels to teammates (changes.publish_change) in one transaction."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
from django.db import transaction
from django.utils import timezone

from access import policy as access
from yullu_core.errors import NotFound, UserError
from yullu_core.timestamps import ns_to_datetime

from .. import origins
from ..anchors import stale as anchor_stale
from ..anchors import store as anchor_store
from ..anchors.checks import anchors_of
from ..changes import ATTRIBUTE_FIELDS, change_time, publish_change
from ..embedding.embedders import get_embedder
from ..embedding.vector_index import ensure_index
from ..models import (
    ArchiveReason,
    EventKind,
    Importance,
    Memory,
    MemoryChange,
    MemoryEvent,
    MemoryVector,
    RejectedMemory,
)
from ..scope import Scope, known_root
from ..wire import Rated, UpdatedOut, memory_to_wire, rated_to_wire
from .create import store_memories
from .history import HISTORY_SOURCES, announce, record, snapshot
from .poisoning import hold_reason
from .validation import (
    NewMemory,
    clean_category,
    clean_content,
    clean_importance,
    clean_tags,
    clean_ttl_days,
    expiry_from_ttl,
    parse_id,
    parse_rating,
    refuse_secrets,
)
from .vectors import embed, logged_vector, save_vector

_UNSET: Any = object()


def _locked(memory: Memory, memory_id: Any) -> Memory:
    """The row again, locked until the transaction ends; NotFound when it was deleted meanwhile."""
    locked = Memory.objects.select_for_update().filter(pk=memory.pk).first()
    if locked is None:
        raise NotFound(f"memory {memory_id} not found")
    return locked


def updated_answer(memory: Memory, anchors_given: bool) -> UpdatedOut:
    """The answer to an update: the memory, with its anchors as pinned when the caller gave anchors (walk 19:
    bob re-anchored a memory to the renamed code and learnt whether they were pinned only from get_memory)."""
    out = cast(UpdatedOut, memory_to_wire(memory))
    if anchors_given:
        out["anchors"] = anchors_of(memory)
    return out


def get_memory(memory_id: Any, role: str = access.READ) -> Memory:
    """The memory, if the acting user may act on its project with `role` (one they may not read
    answers exactly like a missing one: access.policy)."""
    memory_id = parse_id(memory_id)
    memory = Memory.objects.filter(pk=memory_id).first()
    missing = NotFound(f"memory {memory_id} not found")
    if memory is None:
        raise missing
    access.require(memory.project_id, role, missing=missing)
    return memory


def get_memory_in(memory_id: Any, project_id: str | None) -> Memory:
    """A memory addressed together with a project (a tool's `cwd`/`project_id`): it must be that
    project's or the caller's personal one; anything else answers like an unknown id."""
    memory = get_memory(memory_id)
    if project_id is not None and memory.project_id != project_id and not access.is_personal(memory.project_id):
        raise NotFound(f"memory {memory.pk} not found in project {project_id}")
    return memory


def update_memory(
    memory_id: Any,
    *,
    content: Any = _UNSET,
    tags: Any = _UNSET,
    category: Any = _UNSET,
    importance: Any = _UNSET,
    ttl_days: Any = _UNSET,
    supersede: bool = False,
    source: str = "api",
    anchors: Any = _UNSET,
    lenient_anchors: bool = False,
) -> Memory:
    """Patch content/tags/category/importance/expiry/anchors. A content change re-embeds and drops other
    embedders' (now stale) vectors. `ttl_days=0` clears the expiry.

    With `supersede=True` the memory is not edited: a new memory (the given fields over the old
    ones) is stored and the old one marked superseded by it; the new (or duplicate) memory is returned.
    """
    given = {
        k: v
        for k, v in (
            ("content", content),
            ("tags", tags),
            ("category", category),
            ("importance", importance),
            ("ttl_days", ttl_days),
            ("anchors", anchors),
        )
        if v is not _UNSET and v is not None
    }
    if not given:
        raise UserError("nothing to update: give content, tags, category, importance, ttl_days or anchors.")
    memory = get_memory(memory_id, access.WRITE)
    if supersede:
        return _supersede_with(memory, given, source)
    changes = _cleaned_changes(given)
    refuse_secrets(changes.get("content", ""), *changes.get("tags", []))
    cited = None
    if "anchors" in given:  # the given anchors (and paths the new content names) replace the old ones
        cited = anchor_store.prepare(
            given["anchors"],
            changes.get("content", memory.content),
            known_root(memory.project_id),
            lenient=lenient_anchors,
        )
    embedder = get_embedder()
    vector = None
    if "content" in changes and changes["content"] != memory.content:
        embedded = embed(embedder, [changes["content"]])
        vector = embedded[0] if embedded else None
        if vector is not None:
            ensure_index(embedder.id, len(vector))
    with transaction.atomic():
        return _apply_update(_locked(memory, memory_id), changes, cited, embedder.id, vector, source)


def _cleaned_changes(given: dict[str, Any]) -> dict[str, Any]:
    """The given fields, cleaned, as the row's attributes (ttl_days becomes expires_at)."""
    changes: dict[str, Any] = {}
    if "content" in given:
        changes["content"] = clean_content(given["content"])
    if "tags" in given:
        changes["tags"] = clean_tags(given["tags"])
    if "category" in given:
        changes["category"] = clean_category(given["category"])
    if "importance" in given:
        changes["importance"] = clean_importance(given["importance"]) or Importance.NORMAL
    if "ttl_days" in given and (days := clean_ttl_days(given["ttl_days"], zero_clears=True)) is not None:
        changes["expires_at"] = expiry_from_ttl(days) if days else None  # 0: no expiry
    return changes


def _apply_update(
    memory: Memory,
    changes: dict[str, Any],
    cited: Any,
    embedder_id: str,
    vector: np.ndarray | None,
    source: str,
) -> Memory:
    """Write `changes` to the locked row, its vectors and anchors, then publish, log and record it. A field
    given its current value is no change: an update that changes nothing writes no event and no history
    and keeps updated_at (a teammate's log and recency see only real changes)."""
    changes = {k: v for k, v in changes.items() if getattr(memory, k) != v}
    if not changes and cited is None:
        return memory
    before = snapshot(memory)
    content_changed = "content" in changes and changes["content"] != memory.content
    for key, value in changes.items():
        setattr(memory, key, value)
    if "content" in changes or "tags" in changes:
        memory.held_reason = hold_reason(memory.content, memory.tags)
    memory.updated_by_id, memory.updated_author = access.acting().user_id, ""  # a local change: no teammate's
    ts = change_time(memory.updated_at)
    memory.updated_at = ns_to_datetime(ts)
    memory.save()
    if content_changed:
        MemoryVector.objects.filter(memory=memory).exclude(embedder=embedder_id).delete()
        if vector is not None:
            save_vector(memory, embedder_id, vector)
    fields = [k for k in changes if k in ATTRIBUTE_FIELDS and (k != "content" or content_changed)]
    logged = logged_vector(embedder_id, vector) if content_changed else None
    extra = None
    # New anchors replace the old; new content without them re-pins the old at HEAD (whoever
    # rewrote the memory wrote it against the code as it is now).
    rows = anchor_store.attach(memory, cited) if cited is not None else None
    if rows is None and content_changed:
        rows = anchor_stale.repin(memory, strict=False)
    if rows is not None:
        extra = {"anchors": anchor_store.to_wire(rows)}
        changes["anchors"] = extra["anchors"]
    publish_change("update", memory, ts, fields=fields, vector=logged, extra=extra)
    record(memory, "updated", source, before, snapshot(memory), fields=sorted(changes))
    return memory


def repin_memory(memory_id: Any, *, source: str = "admin") -> Memory:
    """Keep a stale memory as it is: pin its anchors again at HEAD, where their code is now (docs/contract.md §12).
    A re-pin is an event, so teammates get the new pins."""
    memory = get_memory(memory_id)
    with transaction.atomic():
        memory = _locked(memory, memory_id)
        before = anchor_store.wire_of(memory)
        rows = anchor_stale.repin(memory) or []
        after = anchor_store.to_wire(rows)
        announce(memory, anchors=after)
        record(memory, "repinned", source, {"anchors": before}, {"anchors": after})
    return memory


def _supersede_with(old: Memory, given: dict[str, Any], source: str) -> Memory:
    if "content" not in given:
        raise UserError("supersede needs the new content.")
    if old.superseded_by_id is not None:
        raise UserError(
            f"memory {old.pk} is already superseded by memory {old.superseded_by_id}; supersede that one instead."
        )
    remaining = None
    if old.expires_at is not None:
        remaining = max(1.0, (old.expires_at - timezone.now()).total_seconds() / 86400)
    item = NewMemory(
        given["content"],
        given.get("category", old.category),
        given.get("tags", list(old.tags)),
        None,
        given.get("importance", old.importance),
        clean_ttl_days(given.get("ttl_days", remaining), zero_clears=True) or None,
        old.pk,
        anchors=given["anchors"] if "anchors" in given else (anchor_store.refs_now(old) or None),
        lenient_anchors="anchors" not in given,
    )
    scope = Scope(old.project_id, known_root(old.project_id))
    return store_memories(scope, [item], source=source)[0].memory


def delete_memory(memory_id: Any, *, source: str = "api") -> Memory:
    memory = get_memory(memory_id, access.WRITE)
    with transaction.atomic():
        memory = _locked(memory, memory_id)
        remove(memory, source)
    return memory


def left_in_the_log(project_id: str, whose: str) -> str | None:
    """What a person deleting a memory of a project with a team log must know about `whose` text, or None (a
    personal memory, a project never seen in a checkout). The delete is one more event; the files that carried
    the text stay, as docs/contract.md §5 has them (never rewritten: teammates fold them). Compaction alone
    replaces a memory's files, a deleted one's by its tombstone (docs/security.md)."""
    root = known_root(project_id)
    if root is None:
        return None
    return (
        f"{whose} text stays in the team event log of {root} (and in git history once committed) until "
        f"`yullu sync compact --cwd {root}` replaces its files with a delete marker; if it held a secret, run that "
        "and commit, and rotate the secret if it was ever pushed"
    )


def archive(memory: Memory, reason: str, *, rating: int | None = None, comment: str = "") -> RejectedMemory:
    """Keep a copy of `memory` in rejected_memories before it is deleted (a rejection or an expiry), with what
    undoing it needs to give the memory back as it was: when and by whom it was written, through which channel,
    and its origin (memories.origins: the dream pass that proposed it)."""
    created = MemoryEvent.objects.filter(memory=memory, kind=EventKind.CREATED).order_by("id")
    origin = origins.explain([memory]).get(memory.pk)
    return RejectedMemory.objects.create(
        uuid=memory.uuid,
        project_id=memory.project_id,
        content=memory.content,
        tags=memory.tags,
        category=memory.category,
        rating=rating,
        rating_comment=comment,
        reason=reason,
        importance=memory.importance,
        expires_at=memory.expires_at,
        anchors=anchor_store.wire_of(memory),
        created_at=memory.created_at,
        created_by_id=memory.created_by_id,
        created_author=memory.created_author,
        source=str(created.values_list("metadata__source", flat=True).first() or "")[:20],
        origin=dataclasses.asdict(origin) if origin else {},
        updated_at=memory.updated_at,
    )


def remove(memory: Memory, source: str, *, publish_forget: bool = True, **metadata: Any) -> None:
    pk = memory.pk
    record(memory, "deleted", source, snapshot(memory), None, **metadata)
    if publish_forget:
        publish_change("delete", memory, change_time(memory.updated_at))
    memory.delete()
    memory.pk = pk


def rate_memory(memory_id: Any, rating: Any, comment: str = "", *, source: str = "review") -> Rated:
    """6–10 keeps the memory with its rating; 1–5 archives it to rejected_memories and deletes it (synced)."""
    value = parse_rating(rating)
    comment = (comment or "").strip()[:2000]
    refuse_secrets(comment)  # a rejection's comment goes to the reasoner as an anti-example
    memory = get_memory(memory_id, access.WRITE)
    with transaction.atomic():
        memory = _locked(memory, memory_id)
        if value >= 6:
            before = snapshot(memory)
            memory.rating, memory.rating_comment = value, comment
            memory.save(update_fields=["rating", "rating_comment"])
            record(memory, "rated", source, before, snapshot(memory))
            return rated_to_wire(memory, value, archived=False)
        # A history row of its own: "deleted" alone did not say it was a reviewer's rating, nor which (review 19).
        record(memory, "rejected", source, {"rating": memory.rating}, {"rating": value, "rating_comment": comment})
        archive(memory, ArchiveReason.REJECTED, rating=value, comment=comment)
        remove(memory, source, rating=value)
    return rated_to_wire(memory, value, archived=True)


def clear_rating(memory_id: Any, *, source: str = "review") -> Memory:
    """Undo a keep: the memory goes back to the review queue (unrated, no comment). History records who took
    the rating back, as it recorded the rating: it said "rated 8" of a memory back in the queue (walk 18)."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=get_memory(memory_id, access.WRITE).pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        before = snapshot(memory)
        memory.rating, memory.rating_comment = None, ""
        memory.save(update_fields=["rating", "rating_comment"])
        record(memory, "unrated", source, before, snapshot(memory))
    return memory


def approve_held(memory_id: Any, *, source: str = "admin") -> Memory:
    """A person read a memory held for review (memories.write.poisoning) and lets assistants see it: it
    joins retrieval and context. History records who approved what reason. Idempotent. Local only:
    each teammate's server holds and approves its own copy."""
    with transaction.atomic():
        memory = _locked(get_memory(memory_id), memory_id)
        if memory.held_reason:
            reason, memory.held_reason = memory.held_reason, ""
            memory.save(update_fields=["held_reason"])
            record(memory, "approved", source, {"held_reason": reason}, {"held_reason": ""})
    return memory


def restore_rejected(rejected_id: Any, *, source: str = "admin") -> Memory:
    """Undo a rejection: store the archived memory again (a new create event, so teammates get it
    back too) as unrated, with its importance, its expiry (unless that has passed: an expired memory
    comes back without one) and the code it cited as pinned then, and drop it from the archive. The
    archive row goes only if the store worked.

    It comes back as it was, not as made now by the restorer (review 19): under its own uuid (teammates fold
    the new create after the delete, keeping its first create's author and time), with its creation time and
    first writer, and with its create event naming the channel that first wrote it (`dream`: the review queue
    says "from dream" and shows the pass again). History says who restored it and when ("restored"). A row
    archived before these were kept comes back with what it has (now, by the restorer, via `source`)."""
    try:
        row = RejectedMemory.objects.get(pk=int(str(rejected_id)))
    except (ValueError, RejectedMemory.DoesNotExist):
        raise NotFound(f"rejected memory {rejected_id} not found") from None
    access.require(row.project_id, access.WRITE, missing=NotFound(f"rejected memory {rejected_id} not found"))
    expires_at = row.expires_at if row.expires_at and row.expires_at > timezone.now() else None
    vectors = embed(get_embedder(), [row.content])  # before the transaction: a remote model may take seconds
    known = row.created_at is not None
    item = NewMemory(
        row.content,
        row.category,
        row.tags,
        created_at=row.created_at,
        importance=row.importance,
        expires_at=expires_at,
        uuid=None if Memory.objects.filter(uuid=row.uuid).exists() else str(row.uuid),
        vector=vectors[0].tolist() if vectors else None,
        first_writer=(row.created_by_id, row.created_author) if known else None,
        not_before=row.updated_at,
    )
    with transaction.atomic():
        scope = Scope(row.project_id, known_root(row.project_id))
        stored = store_memories(scope, [item], source=row.source or source)[0]
        if stored.created:
            if anchors := anchor_store.clean_wire(row.anchors):
                anchor_store.from_wire(stored.memory, anchors)
            # The history row of this store is the restore, by the person restoring, through their channel.
            MemoryChange.objects.filter(memory=stored.memory, action="created").update(
                action="restored",
                source=HISTORY_SOURCES.get(source, source)[:20],
                after={
                    **snapshot(stored.memory),
                    "rejected_at": row.rejected_at.isoformat(),
                    "rejected_rating": row.rating,
                    **({"origin": row.origin} if row.origin else {}),  # memories.origins reads it back
                },
            )
        RejectedMemory.objects.filter(pk=row.pk).delete()
    return stored.memory
