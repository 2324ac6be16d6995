"""The wire shapes of memories: declared once, here, as TypedDicts.

The MCP tools and the REST views return what these functions build, and the OpenAPI schema's
components are derived from the same TypedDicts (yullu_core.rest.shape), so the three cannot
drift apart (tests/test_wire_shapes.py checks that they agree).
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

from access.people import username
from yullu_core.wire import DATETIME, UUID, Doc

from .authors import written_by
from .models import Memory, RejectedMemory


class MemoryOut(TypedDict):
    id: int
    uuid: Annotated[str, UUID]
    project_id: str
    content: str
    tags: list[str]
    category: str | None
    created_at: Annotated[str, DATETIME]
    updated_at: Annotated[str, DATETIME]
    rating: int | None
    rating_comment: str
    importance: Literal["low", "normal", "high"]
    expires_at: Annotated[str | None, DATETIME]
    # Why it is held out of retrieval until a person approves it (memories.write.poisoning); "" when not held.
    held_for_review: str
    superseded_by: Annotated[int | None, Doc("id of the memory that replaced this one")]
    created_by: Annotated[
        str | None, Doc("user name of who stored it, or a teammate's event author; null: the system (dreaming, CLI)")
    ]
    updated_by: Annotated[
        str | None, Doc("user name of who last changed it, or a teammate's event author; null: the system")
    ]


class AnchorOut(TypedDict):
    """Code a memory cites (docs/contract.md §12) and its status against the project's HEAD."""

    path: str
    symbol: str | None
    lines: Annotated[list[int] | None, Doc("[first, last] line at the pinned commit")]
    status: Annotated[
        Literal["ok", "moved", "changed", "missing"] | None,
        Doc("null: never checked (no checkout of the repository on this server)"),
    ]
    commit: Annotated[str | None, Doc("the commit it was pinned at")]
    current_path: NotRequired[Annotated[str, Doc("moved: the file's path now (renamed)")]]
    current_lines: NotRequired[Annotated[list[int], Doc("moved or changed: [first, last] line now")]]


class UpdatedOut(MemoryOut):
    """What update_memory / PATCH answer: the memory, and its anchors as pinned when the update gave anchors."""

    anchors: NotRequired[list[AnchorOut]]


class HitOut(MemoryOut):
    """A memory as a recall returns it."""

    similarity: Annotated[float | None, Doc("cosine similarity 0–1; null when not embedded")]
    rank: int
    anchors: list[AnchorOut]
    stale: Annotated[bool, Doc("a cited piece of code changed or is gone since this was written")]
    clears_floor: NotRequired[bool]  # only in the admin's preview search


class RecallResults(TypedDict):
    """What a recall answers (MCP retrieve_memories, POST /api/memories/recall)."""

    project_id: str
    recall_id: str | None
    results: list[HitOut]


class SearchResults(TypedDict):
    """The REST preview search (GET /api/memories?q=): not logged, so no recall_id."""

    project_id: str
    results: list[HitOut]


class RejectedOut(TypedDict):
    uuid: Annotated[str, UUID]
    project_id: str
    content: str
    tags: list[str]
    category: str | None
    rating: int | None
    rating_comment: str
    rejected_at: Annotated[str, DATETIME]
    reason: str  # rejected (a reviewer's rating of 1-5) or expired (its ttl ran out)
    # Where it came from (review 19): null / "" for a memory archived before these were kept.
    created_at: Annotated[str, DATETIME] | None
    written_by: str | None  # who wrote it first: a user of this machine or a teammate's name
    source: str  # the channel its first store came through: mcp, rest, dream, reconcile …


class Similar(TypedDict):
    id: int
    content: str
    similarity: float


class Created(TypedDict):
    """A store that created a memory (status 201)."""

    id: int
    uuid: Annotated[str, UUID]
    project_id: str
    created: bool
    similar: NotRequired[list[Similar]]
    supersedes: NotRequired[int]
    # Stored, but held out of retrieval until a person approves it in the admin: the reason.
    held_for_review: NotRequired[str]
    anchors: NotRequired[list[AnchorOut]]  # the code it cites, as pinned (docs/contract.md §12)
    anchors_unpinned: NotRequired[str]  # none pinned (no checkout of the project here): why, what pins them


class Duplicate(TypedDict):
    """A store answered by an existing near-duplicate (status 200)."""

    id: int
    uuid: Annotated[str, UUID]
    project_id: str
    created: bool
    duplicate_of: int
    content: str
    supersedes: NotRequired[int]
    anchors_not_attached: NotRequired[str]  # anchors were given: why they are not on the existing memory


class Deleted(TypedDict):
    id: int
    uuid: Annotated[str, UUID]
    deleted: bool


class Rated(TypedDict):
    id: int
    uuid: Annotated[str, UUID]
    rating: int
    archived: bool


class ProjectOut(TypedDict):
    project_id: str
    memories: int
    unrated: int
    git_root: str | None


def memory_to_wire(m: Memory) -> MemoryOut:
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
        "importance": m.importance,  # type: ignore[typeddict-item]  # the model's choices are these three
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "superseded_by": m.superseded_by_id,
        "held_for_review": m.held_reason,
        # a user of this machine, else a teammate's name from the log (docs/contract.md §11)
        "created_by": written_by(m),
        "updated_by": username(m.updated_by_id) or m.updated_author or None,
    }


def hit_to_wire(m: Memory, similarity: float | None, rank: int) -> HitOut:
    score = None if similarity is None else round(similarity, 4)
    # anchors and stale are filled in by memories.anchors.checks.annotate (one checked batch per search)
    return {**memory_to_wire(m), "similarity": score, "rank": rank, "anchors": [], "stale": False}


def deleted_to_wire(memory_id: int, m: Memory) -> Deleted:
    return {"id": memory_id, "uuid": str(m.uuid), "deleted": True}


def rated_to_wire(m: Memory, rating: int, archived: bool) -> Rated:
    return {"id": m.pk, "uuid": str(m.uuid), "rating": rating, "archived": archived}


def recall_to_wire(project_id: str, recall_id: str | None, hits: list[HitOut]) -> RecallResults:
    return {"project_id": project_id, "recall_id": recall_id, "results": hits}


def rejected_to_wire(r: RejectedMemory) -> RejectedOut:
    return {
        "uuid": str(r.uuid),
        "project_id": r.project_id,
        "content": r.content,
        "tags": r.tags,
        "category": r.category,
        "rating": r.rating,
        "rating_comment": r.rating_comment,
        "rejected_at": r.rejected_at.isoformat(),
        "reason": r.reason,
        "created_at": r.created_at.isoformat() if r.created_at else None,
        "written_by": r.created_author or (r.created_by.get_username() if r.created_by else None) or None,
        "source": r.source,
    }


# Model fields a hit needs: the memory shape's, loaded with .only() (superseded_by is the FK's name;
# held_for_review is the model's held_reason).
HIT_FIELDS = (
    *("held_reason" if f == "held_for_review" else f for f in MemoryOut.__annotations__),
    "created_author",
    "updated_author",
)
