"""Plain-dict shapes that cross boundaries (MCP results, REST bodies)."""

from __future__ import annotations

from typing import Any, TypedDict

from .models import Memory


class MemoryDict(TypedDict):
    id: int
    uuid: str
    project_id: str
    content: str
    tags: list[str]
    category: str | None
    created_at: str
    updated_at: str
    rating: int | None
    rating_comment: str
    importance: str
    expires_at: str | None
    superseded_by: int | None


def memory_dict(m: Memory) -> MemoryDict:
    return {
        "id": m.id,
        "uuid": str(m.uuid),
        "project_id": m.project_id,
        "content": m.content,
        "tags": list(m.tags or []),
        "category": m.category,
        "created_at": m.created_at.isoformat(),
        "updated_at": m.updated_at.isoformat(),
        "rating": m.rating,
        "rating_comment": m.rating_comment,
        "importance": m.importance,
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "superseded_by": m.superseded_by_id,
    }


def hit_dict(m: Memory, similarity: float | None, rank: int) -> dict[str, Any]:
    return {**memory_dict(m), "similarity": None if similarity is None else round(similarity, 4), "rank": rank}
