"""The write side. Every adapter (MCP, REST, admin, dreaming, reconcile) writes through here,
so every change is validated, secret-scanned, logged and published to the event log.

Embedding happens before the transaction (it may be slow or fail); the row, its
vector, its activity event and its sync event file are written in one short
transaction, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sync.publish import Publisher, publish
from sync.secrets import find_secret
from yullu_site.errors import NotFound, UserError

from .embedders import Embedder, embeds, get_embedder
from .models import CATEGORIES, EventKind, Memory, MemoryEvent, MemoryVector, RejectedMemory
from .scope import Scope, known_root
from .vector_index import ensure_index

log = logging.getLogger(__name__)

MAX_TAGS = 20
MAX_TAG_CHARS = 100
_UNSET: Any = object()


def max_content_chars() -> int:
    return settings.YULLU["retrieval"]["max_content_chars"]


def clean_content(content: Any) -> str:
    if not isinstance(content, str):
        raise UserError("content must be a string.")
    content = content.strip()
    if not content:
        raise UserError("content must not be empty.")
    if "\x00" in content:
        raise UserError("content must not contain NUL characters.")
    limit = max_content_chars()
    if len(content) > limit:
        raise UserError(
            f"content is {len(content)} characters; the limit is {limit}. Store a shorter, self-contained fact."
        )
    return content


def clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        raise UserError("tags must be a list of strings.")
    seen: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if "\x00" in tag:
            raise UserError("tags must not contain NUL characters.")
        if len(tag) > MAX_TAG_CHARS:
            raise UserError(f"each tag must be at most {MAX_TAG_CHARS} characters.")
        if tag and tag not in seen:
            seen.append(tag)
    if len(seen) > MAX_TAGS:
        raise UserError(f"at most {MAX_TAGS} tags are allowed.")
    return seen


def clean_category(category: Any) -> str | None:
    """Empty or unknown categories are stored as null ("uncategorised"), per the spec."""
    if category is None:
        return None
    if not isinstance(category, str):
        raise UserError("category must be a string.")
    value = category.strip().lower()
    return value if value in CATEGORIES else None


def refuse_secrets(*texts: str) -> None:
    for text in texts:
        kind = find_secret(text)
        if kind:
            raise UserError(f"refused: the content contains {kind}; remove it and try again (nothing was stored).")


def _embed(embedder: Embedder, texts: list[str]) -> list[np.ndarray] | None:
    if not embeds(embedder):
        return None
    return embedder.embed(texts)


def _save_vector(memory: Memory, embedder_id: str, vector: Sequence[float]) -> None:
    arr = np.asarray(vector, dtype=np.float32)
    ensure_index(embedder_id, len(arr))
    MemoryVector.objects.update_or_create(
        memory=memory,
        embedder=embedder_id,
        defaults={"vector": arr, "dim": len(arr), "project_id": memory.project_id, "created_at": timezone.now()},
    )


def _vectors_field(embedder_id: str, vector: np.ndarray | None) -> dict[str, list[float]] | None:
    if vector is None:
        return None
    return {embedder_id: [round(float(x), 7) for x in vector]}


def _activity(kind: str, memory: Memory, **metadata: Any) -> MemoryEvent:
    return MemoryEvent(
        kind=kind, memory=memory, memory_uuid=memory.uuid, project_id=memory.project_id, metadata=metadata
    )


@dataclass
class NewMemory:
    content: str
    category: str | None = None
    tags: list[str] | None = None
    created_at: datetime | None = None


def create_memory(
    scope: Scope,
    content: Any,
    category: Any = None,
    tags: Any = None,
    *,
    created_at: datetime | None = None,
    source: str = "api",
) -> Memory:
    return create_memories(scope, [NewMemory(content, category, tags, created_at)], source=source)[0]


def create_memories(scope: Scope, items: Iterable[NewMemory], *, source: str = "api") -> list[Memory]:
    """Store several memories with one batched embedding call and one transaction."""
    cleaned = [
        NewMemory(clean_content(i.content), clean_category(i.category), clean_tags(i.tags), i.created_at) for i in items
    ]
    for item in cleaned:
        refuse_secrets(item.content, *item.tags)
    embedder = get_embedder()
    vectors = _embed(embedder, [i.content for i in cleaned])
    if vectors:
        ensure_index(embedder.id, len(vectors[0]))
    publisher = Publisher(scope.project_id, scope.git_root)
    now = timezone.now()
    with transaction.atomic():
        created = Memory.objects.bulk_create(
            [
                Memory(
                    project_id=scope.project_id,
                    content=i.content,
                    category=i.category,
                    tags=i.tags,
                    created_at=i.created_at or now,
                    updated_at=i.created_at or now,
                )
                for i in cleaned
            ]
        )
        if vectors is not None:
            MemoryVector.objects.bulk_create(
                [
                    MemoryVector(
                        memory=m,
                        project_id=m.project_id,
                        embedder=embedder.id,
                        dim=len(v),
                        vector=np.asarray(v, dtype=np.float32),
                    )
                    for m, v in zip(created, vectors, strict=False)
                ]
            )
        for n, memory in enumerate(created):
            vector = vectors[n] if vectors is not None else None
            publisher.emit(
                "remember",
                str(memory.uuid),
                content=memory.content,
                tags=memory.tags,
                category=memory.category,
                vectors=_vectors_field(embedder.id, vector),
            )
        MemoryEvent.objects.bulk_create([_activity(EventKind.CREATED, m, source=source) for m in created])
    return created


def get_memory(memory_id: Any) -> Memory:
    if isinstance(memory_id, bool) or not isinstance(memory_id, int):
        try:
            memory_id = int(str(memory_id))
        except ValueError:
            raise UserError("id must be an integer.") from None
    memory = Memory.objects.filter(pk=memory_id).first()
    if memory is None:
        raise NotFound(f"memory {memory_id} not found")
    return memory


def update_memory(
    memory_id: Any, *, content: Any = _UNSET, tags: Any = _UNSET, category: Any = _UNSET, source: str = "api"
) -> Memory:
    """Patch content/tags/category. A content change re-embeds and drops other embedders' (now stale) vectors."""
    given = {k: v for k, v in (("content", content), ("tags", tags), ("category", category)) if v is not _UNSET}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        raise UserError("nothing to update: give content, tags or category.")
    memory = get_memory(memory_id)
    changes: dict[str, Any] = {}
    if "content" in given:
        changes["content"] = clean_content(given["content"])
    if "tags" in given:
        changes["tags"] = clean_tags(given["tags"])
    if "category" in given:
        changes["category"] = clean_category(given["category"])
    refuse_secrets(changes.get("content", ""), *changes.get("tags", []))
    embedder = get_embedder()
    vector = None
    if "content" in changes and changes["content"] != memory.content:
        embedded = _embed(embedder, [changes["content"]])
        vector = embedded[0] if embedded else None
        if vector is not None:
            ensure_index(embedder.id, len(vector))
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=memory.pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        content_changed = "content" in changes and changes["content"] != memory.content
        for key, value in changes.items():
            setattr(memory, key, value)
        memory.updated_at = timezone.now()
        memory.save()
        if content_changed:
            MemoryVector.objects.filter(memory=memory).exclude(embedder=embedder.id).delete()
            if vector is not None:
                _save_vector(memory, embedder.id, vector)
        fields: dict[str, Any] = {k: getattr(memory, k) for k in changes if k != "content" or content_changed}
        if content_changed:
            fields["vectors"] = _vectors_field(embedder.id, vector)
        publish(memory.project_id, None, "revise", str(memory.uuid), **fields)
        _activity(EventKind.UPDATED, memory, source=source, fields=sorted(changes)).save()
    return memory


def delete_memory(memory_id: Any, *, source: str = "api") -> Memory:
    memory = get_memory(memory_id)
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=memory.pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        _delete(memory, source)
    return memory


def _delete(memory: Memory, source: str, **metadata: Any) -> None:
    pk = memory.pk
    MemoryEvent.objects.create(
        kind=EventKind.DELETED,
        memory=None,
        memory_uuid=memory.uuid,
        project_id=memory.project_id,
        metadata={"source": source, "content": memory.content[:200], **metadata},
    )
    publish(memory.project_id, None, "forget", str(memory.uuid))
    memory.delete()
    memory.pk = pk


def parse_rating(rating: Any) -> int:
    if isinstance(rating, bool):
        raise UserError("rating must be a whole number from 1 to 10.")
    try:
        value = int(str(rating))
    except ValueError:
        raise UserError("rating must be a whole number from 1 to 10.") from None
    if not 1 <= value <= 10:
        raise UserError("rating must be a whole number from 1 to 10.")
    return value


def rate_memory(memory_id: Any, rating: Any, comment: str = "", *, source: str = "review") -> dict[str, Any]:
    """6–10 keeps the memory with its rating; 1–5 archives it to rejected_memories and deletes it (synced)."""
    value = parse_rating(rating)
    comment = (comment or "").strip()[:2000]
    memory = get_memory(memory_id)
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=memory.pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        if value >= 6:
            memory.rating, memory.rating_comment = value, comment
            memory.save(update_fields=["rating", "rating_comment"])
            return {"id": memory.pk, "uuid": str(memory.uuid), "rating": value, "archived": False}
        RejectedMemory.objects.create(
            uuid=memory.uuid,
            project_id=memory.project_id,
            content=memory.content,
            tags=memory.tags,
            category=memory.category,
            rating=value,
            rating_comment=comment,
        )
        _delete(memory, source, rating=value)
    return {"id": memory.pk, "uuid": str(memory.uuid), "rating": value, "archived": True}


def clear_rating(memory_id: Any) -> Memory:
    """Undo a keep: the memory goes back to the review queue (unrated, no comment)."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=get_memory(memory_id).pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        memory.rating, memory.rating_comment = None, ""
        memory.save(update_fields=["rating", "rating_comment"])
    return memory


def restore_rejected(rejected_id: Any, *, source: str = "admin") -> Memory:
    """Undo a rejection: store the archived memory again (a new create event, so teammates get it
    back too) as unrated, and drop it from the archive. The archive row goes only if the store worked."""
    try:
        row = RejectedMemory.objects.get(pk=int(str(rejected_id)))
    except (ValueError, RejectedMemory.DoesNotExist):
        raise NotFound(f"rejected memory {rejected_id} not found") from None
    memory = create_memory(
        Scope(row.project_id, known_root(row.project_id)), row.content, row.category, row.tags, source=source
    )
    RejectedMemory.objects.filter(pk=row.pk).delete()
    return memory


# --- Applying teammates' events (called by sync.reconcile only) ---------------------------
# These write without publishing: the events they apply are already in the log.


def apply_remote_upsert(
    project_id: str,
    memory_uuid: str,
    *,
    content: str | None,
    tags: list[str] | None,
    category: str | None,
    category_given: bool,
    vector: tuple[str, Sequence[float]] | None,
) -> str:
    """Insert or update one memory from the log. Returns 'created', 'updated' or 'unchanged'.

    Locks the row (select_for_update) so a concurrent local edit is never half-applied.
    """
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(uuid=memory_uuid).first()
        if memory is None:
            memory = Memory.objects.create(
                uuid=memory_uuid,
                project_id=project_id,
                content=content or "",
                tags=clean_tags(tags),
                category=clean_category(category),
            )
            if vector is not None:
                _save_vector(memory, vector[0], vector[1])
            _activity(EventKind.CREATED, memory, source="reconcile").save()
            return "created"
        changes: dict[str, Any] = {}
        if content is not None and content != memory.content:
            changes["content"] = content
        if tags is not None and clean_tags(tags) != list(memory.tags):
            changes["tags"] = clean_tags(tags)
        if category_given and clean_category(category) != memory.category:
            changes["category"] = clean_category(category)
        if "content" in changes:  # a content change makes every old vector stale
            MemoryVector.objects.filter(memory=memory).delete()
        if vector is not None and (
            "content" in changes or not MemoryVector.objects.filter(memory=memory, embedder=vector[0]).exists()
        ):
            _save_vector(memory, vector[0], vector[1])
        if not changes:
            return "unchanged"
        for key, value in changes.items():
            setattr(memory, key, value)
        memory.updated_at = timezone.now()
        memory.save()
        _activity(EventKind.UPDATED, memory, source="reconcile", fields=sorted(changes)).save()
        return "updated"


def apply_remote_delete(memory_uuid: str) -> bool:
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(uuid=memory_uuid).first()
        if memory is None:
            return False
        MemoryEvent.objects.create(
            kind=EventKind.DELETED,
            memory=None,
            memory_uuid=memory.uuid,
            project_id=memory.project_id,
            metadata={"source": "reconcile", "content": memory.content[:200]},
        )
        memory.delete()
        return True
