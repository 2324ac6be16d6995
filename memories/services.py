"""The write side. Every adapter (MCP, REST, admin, dreaming, reconcile) writes through here,
so every change is validated, secret-scanned, logged and published to the event log.

Embedding happens before the transaction (it may be slow or fail); the row, its
vector, its activity event and its announcement (`changes.publish_change`, which the
team-sync outbox turns into an event file after commit) are written in one short
transaction, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from access import policy as access
from yullu_core.errors import NotFound, UserError
from yullu_core.locks import LockKey
from yullu_core.text import find_control

from .anchors import store as anchor_store
from .changes import change_time, datetime_to_ns, ns_to_datetime, publish_change
from .duplicates import MAX_SIMILAR, same_fact_tokens, skeleton, thresholds
from .embedders import Embedder, embeds, get_embedder
from .models import (
    CATEGORIES,
    IMPORTANCES,
    SESSION_TAG,
    ArchiveReason,
    EventKind,
    Importance,
    LinkKind,
    Memory,
    MemoryChange,
    MemoryEvent,
    MemoryLink,
    MemoryVector,
    RejectedMemory,
)
from .poisoning import hold_reason
from .scope import Scope, known_root
from .secrets import find_secret
from .serializers import AnchorOut, Created, Duplicate, Rated, Similar, rated_to_wire
from .vector_index import ensure_index

log = logging.getLogger(__name__)

MAX_TAGS = 20
MAX_TAG_CHARS = 100
_UNSET: Any = object()


def session_tag(session_id: str) -> str:
    """`session:<id>`; an id too long for a tag becomes a stable hash of itself."""
    sid = session_id.strip()
    tag = SESSION_TAG + sid
    return tag if len(tag) <= MAX_TAG_CHARS else SESSION_TAG + hashlib.sha256(sid.encode()).hexdigest()[:32]


def with_session(tags: Any, session_id: str | None) -> Any:
    """`tags` plus the session's tag. Unchanged without a session, when a session tag is already
    there (the caller's wins), or when `tags` is malformed (clean_tags refuses it with its own message);
    the session tag takes the last place when the tags are full."""
    if not session_id or not session_id.strip():
        return tags
    if tags is not None and (not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags)):
        return tags
    tags = list(tags or [])
    if any(t.strip().startswith(SESSION_TAG) for t in tags):
        return tags
    return [*tags[: MAX_TAGS - 1], session_tag(session_id)]


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
    if bad := find_control(content):
        raise UserError(f"content must not contain control or bidi characters (found {bad}); remove them.")
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
        if bad := find_control(tag):
            raise UserError(f"tags must not contain control or bidi characters (found {bad}).")
        if len(tag) > MAX_TAG_CHARS:
            raise UserError(f"each tag must be at most {MAX_TAG_CHARS} characters.")
        if tag and tag not in seen:
            seen.append(tag)
    if len(seen) > MAX_TAGS:
        raise UserError(f"at most {MAX_TAGS} tags are allowed.")
    return seen


def clean_category(category: Any, *, strict: bool = True) -> str | None:
    """Empty is null ("uncategorised"); an unknown category is an error naming the five (docs/contract.md §1,
    every path: MCP, REST, CLI, import). `strict=False` keeps null for text we did not write and
    must not refuse whole: a teammate's event, a reasoner's proposal."""
    if category is None:
        return None
    if not isinstance(category, str):
        raise UserError("category must be a string.")
    value = category.strip().lower()
    if value and value not in CATEGORIES and strict:
        raise UserError(f"{value[:40]!r} is not a category; use one of {', '.join(CATEGORIES)} (or leave it empty).")
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


def _embed_missing(embedder: Embedder, items: list[CleanMemory]) -> list[np.ndarray] | None:
    """Each item's vector: the one it came with, else one batched embedding call for the rest.
    A given vector is used only when it has the model's dimension (else it is embedded again)."""
    if not embeds(embedder):
        return None
    given = [_given_vector(i.vector) for i in items]
    dim = next((len(v) for v in given if v is not None), None)
    if dim is not None and dim != _model_dim(embedder):
        given = [None] * len(items)
    missing = [n for n, v in enumerate(given) if v is None]
    computed = iter(embedder.embed([items[n].content for n in missing]) if missing else [])
    return [v if v is not None else next(computed) for v in given]


_DIMS: dict[str, int] = {}


def _model_dim(embedder: Embedder) -> int:
    """The embedder's vector size: from a stored vector, else one probe call (cached per model)."""
    if embedder.id not in _DIMS:
        stored = MemoryVector.objects.filter(embedder=embedder.id).values_list("dim", flat=True).first()
        _DIMS[embedder.id] = int(stored) if stored else len(embedder.embed(["dimension probe"])[0])
    return _DIMS[embedder.id]


def _given_vector(vector: Sequence[float] | None) -> np.ndarray | None:
    if vector is None:
        return None
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or not arr.size or not np.isfinite(arr).all() or not np.linalg.norm(arr):
        return None
    return arr / np.linalg.norm(arr)


def _locked(memory: Memory, memory_id: Any) -> Memory:
    """The row again, locked until the transaction ends; NotFound when it was deleted meanwhile."""
    locked = Memory.objects.select_for_update().filter(pk=memory.pk).first()
    if locked is None:
        raise NotFound(f"memory {memory_id} not found")
    return locked


def _save_vector(memory: Memory, embedder_id: str, vector: Sequence[float] | np.ndarray) -> None:
    arr = np.asarray(vector, dtype=np.float32)
    ensure_index(embedder_id, len(arr))
    MemoryVector.objects.update_or_create(
        memory=memory,
        embedder=embedder_id,
        defaults={"vector": arr, "dim": len(arr), "project_id": memory.project_id, "created_at": timezone.now()},
    )


def _logged_vector(embedder_id: str, vector: np.ndarray | None) -> tuple[str, list[float]] | None:
    if vector is None:
        return None
    return embedder_id, [float(x) for x in vector]


def _activity(kind: str, memory: Memory, **metadata: Any) -> MemoryEvent:
    return MemoryEvent(
        kind=kind, memory=memory, memory_uuid=memory.uuid, project_id=memory.project_id, metadata=metadata
    )


def clean_importance(importance: Any) -> str | None:
    """None = not given (keep the current value / default)."""
    if importance is None or importance == "":
        return None
    if not isinstance(importance, str) or importance.strip().lower() not in IMPORTANCES:
        raise UserError("importance must be one of: low, normal, high.")
    return importance.strip().lower()


MAX_TTL_DAYS = 3650


def expiry_from_ttl(ttl_days: Any, now: datetime | None = None) -> datetime | None:
    """ttl_days (1–3650) → expires_at. None = no expiry."""
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float)) or not 1 <= ttl_days <= MAX_TTL_DAYS:
        raise UserError(f"ttl_days must be a number of days from 1 to {MAX_TTL_DAYS}.")
    return (now or timezone.now()) + timedelta(days=float(ttl_days))


def parse_id(value: Any, name: str = "id") -> int:
    if isinstance(value, bool):
        raise UserError(f"{name} must be an integer.")
    try:
        return int(str(value))
    except ValueError:
        raise UserError(f"{name} must be an integer.") from None


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


# Fields whose changes travel in sync events (docs/contract.md §5, §10; memories.changes reads them from
# the row); verdicts, ratings and history never do. `supersedes` travels as an extra.
SYNCED = ("content", "tags", "category", "importance", "expires_at")


@dataclass
class NewMemory:
    content: str
    category: str | None = None
    tags: list[str] | None = None
    created_at: datetime | None = None
    importance: str | None = None
    ttl_days: float | None = None
    supersedes: int | None = None
    expires_at: datetime | None = None
    uuid: str | None = None  # kept by imports, so importing twice finds the same memory
    # The active embedder's vector of this content, when the caller has it (an export made with
    # `--vectors` by the same model): the import then skips the embedding call.
    vector: Sequence[float] | None = None
    anchors: Any = None  # code it cites (docs/contract.md §12): strings like 'app/clock.py::Clock.now'
    lenient_anchors: bool = False  # drop anchors that do not resolve instead of refusing (dreaming, carried over)


@dataclass
class CleanMemory(NewMemory):
    """A NewMemory after validation: tags a list, importance one of IMPORTANCES."""

    tags: list[str] = field(default_factory=list)
    importance: str = Importance.NORMAL


@dataclass
class Stored:
    """What a store answers: the memory (new, or the existing near-duplicate) and what is near it."""

    memory: Memory
    created: bool
    duplicate_of: int | None = None
    similarity: float | None = None
    similar: list[Similar] = field(default_factory=list)
    superseded: int | None = None
    anchors: list[AnchorOut] = field(default_factory=list)

    def as_dict(self) -> Created | Duplicate:
        m = self.memory
        out: Created | Duplicate
        if self.duplicate_of is not None:
            out = Duplicate(
                id=m.id,
                uuid=str(m.uuid),
                project_id=m.project_id,
                created=self.created,
                duplicate_of=self.duplicate_of,
                content=m.content,
            )
        else:
            created = Created(
                id=m.id, uuid=str(m.uuid), project_id=m.project_id, created=self.created, similar=self.similar
            )
            if m.held_reason:
                created["held_for_review"] = m.held_reason
            out = created
        if self.superseded is not None:
            out["supersedes"] = self.superseded
        if self.anchors and self.duplicate_of is None:
            cast(Created, out)["anchors"] = self.anchors
        return out


def create_memory(
    scope: Scope,
    content: Any,
    category: Any = None,
    tags: Any = None,
    *,
    created_at: datetime | None = None,
    source: str = "api",
    importance: Any = None,
    ttl_days: Any = None,
    supersedes: Any = None,
    anchors: Any = None,
    lenient_anchors: bool = False,
) -> Memory:
    """The memory now holding this fact: a new one, or the existing near-duplicate."""
    return store_memory(
        scope,
        content,
        category,
        tags,
        created_at=created_at,
        source=source,
        importance=importance,
        ttl_days=ttl_days,
        supersedes=supersedes,
        anchors=anchors,
        lenient_anchors=lenient_anchors,
    ).memory


def store_memory(
    scope: Scope,
    content: Any,
    category: Any = None,
    tags: Any = None,
    *,
    created_at: datetime | None = None,
    source: str = "api",
    importance: Any = None,
    ttl_days: Any = None,
    supersedes: Any = None,
    anchors: Any = None,
    lenient_anchors: bool = False,
) -> Stored:
    item = NewMemory(
        content,
        category,
        tags,
        created_at,
        importance,
        ttl_days,
        supersedes,
        anchors=anchors,
        lenient_anchors=lenient_anchors,
    )
    return store_memories(scope, [item], source=source)[0]


def create_memories(
    scope: Scope, items: Iterable[NewMemory], *, source: str = "api", dedupe: bool = True
) -> list[Memory]:
    return [s.memory for s in store_memories(scope, items, source=source, dedupe=dedupe)]


def _clean_item(i: NewMemory, now: datetime) -> CleanMemory:
    return CleanMemory(
        clean_content(i.content),
        clean_category(i.category),
        clean_tags(i.tags),
        i.created_at,
        clean_importance(i.importance) or Importance.NORMAL,
        None,
        None if i.supersedes is None else parse_id(i.supersedes, "supersedes"),
        i.expires_at or expiry_from_ttl(i.ttl_days, now),
        i.uuid,
        i.vector,
    )


def store_memories(
    scope: Scope, items: Iterable[NewMemory], *, source: str = "api", dedupe: bool = True
) -> list[Stored]:
    """Store several memories with one batched embedding call and one transaction.

    With `dedupe` (every product write path; only benchmarks turn it off) a near-duplicate of
    a current memory of the project, or of an earlier item of the batch, is not stored again:
    its Stored says created=False and names the existing memory. The check and the insert run
    under a per-project transaction-level advisory lock, so two concurrent identical stores
    still leave one memory. `supersedes` marks that memory superseded by the stored one.
    """
    access.require(scope.project_id, access.WRITE)
    author = access.acting().user_id
    now = timezone.now()
    items = list(items)
    cleaned = [_clean_item(i, now) for i in items]
    for item in cleaned:
        refuse_secrets(item.content, *item.tags)
    cited = [
        anchor_store.prepare(i.anchors, c.content, scope.git_root, lenient=i.lenient_anchors)
        for i, c in zip(items, cleaned, strict=True)
    ]
    embedder = get_embedder()
    vectors = _embed_missing(embedder, cleaned)
    if vectors:
        ensure_index(embedder.id, len(vectors[0]))
    stamp = change_time(None)
    with transaction.atomic():
        if dedupe:
            _lock_project(scope.project_id)
        targets = _supersede_targets(scope.project_id, cleaned)
        exact_scan = _scans_exactly(scope.project_id) if dedupe and vectors else True
        found: list[Nearby | None] = [None] * len(cleaned)
        if dedupe:
            exclude = set(targets.values())
            probes = _probe_vectors(embedder, cleaned, vectors)
            found = list(_near_many(scope.project_id, embedder.id, cleaned, probes, exclude, exact_scan=exact_scan))
        batch = _BatchIndex(embedder.id)
        results: dict[int, Stored] = {}  # item → its answer; every item gets one
        fresh: list[int] = []
        same_as: dict[int, tuple[int, float]] = {}  # item → earlier item of this batch it duplicates
        for n in range(len(cleaned)):
            near = found[n]
            if near is not None and near.duplicate is not None:
                memory, sim = near.duplicate
                results[n] = Stored(memory, False, duplicate_of=memory.pk, similarity=sim)
            elif dedupe and (earlier := batch.duplicate(cleaned, vectors, n)) is not None:
                same_as[n] = earlier
            else:
                fresh.append(n)
                batch.add(cleaned, vectors, n)
        created = Memory.objects.bulk_create(
            [
                Memory(
                    project_id=scope.project_id,
                    content=cleaned[n].content,
                    category=cleaned[n].category,
                    tags=cleaned[n].tags,
                    importance=cleaned[n].importance,
                    expires_at=cleaned[n].expires_at,
                    held_reason=hold_reason(cleaned[n].content, cleaned[n].tags),
                    created_at=ns_to_datetime(_ts(cleaned[n], stamp)),
                    updated_at=ns_to_datetime(_ts(cleaned[n], stamp)),
                    created_by_id=author,
                    updated_by_id=author,
                    **({"uuid": cleaned[n].uuid} if cleaned[n].uuid else {}),
                )
                for n in fresh
            ]
        )
        for n, memory in zip(fresh, created, strict=True):
            near = found[n]
            results[n] = Stored(memory, True, similar=near.similar if near else [])
        for n, (m, sim) in same_as.items():
            first = results[m].memory
            results[n] = Stored(first, False, duplicate_of=first.pk, similarity=sim)
        if vectors is not None and created:
            MemoryVector.objects.bulk_create(
                [
                    MemoryVector(
                        memory=m,
                        project_id=m.project_id,
                        embedder=embedder.id,
                        dim=len(vectors[n]),
                        vector=np.asarray(vectors[n], dtype=np.float32),
                    )
                    for n, m in zip(fresh, created, strict=True)
                ]
            )
        root = str(scope.git_root) if scope.git_root else None
        for n, memory in zip(fresh, created, strict=True):
            logged = _logged_vector(embedder.id, vectors[n] if vectors is not None else None)
            extra = None
            if items_cited := cited[n]:
                rows = anchor_store.attach(memory, items_cited)
                results[n].anchors = [anchor_store.anchor_out(a) for a in rows]
                extra = {"anchors": anchor_store.to_wire(rows)}
            publish_change("create", memory, _ts(cleaned[n], stamp), vector=logged, git_root=root, extra=extra)
        MemoryEvent.objects.bulk_create([_activity(EventKind.CREATED, m, source=source) for m in created])
        MemoryChange.objects.bulk_create([change_row(m, "created", source, None, snapshot(m)) for m in created])
        for n in range(len(cleaned)):  # supersede marks are written in the order the items came
            result, old = results[n], targets.get(n)
            if old is not None and result.memory.pk != old:
                _mark_superseded(old, result.memory, source)
                result.superseded = old
    return [results[n] for n in range(len(cleaned))]


def _ts(item: NewMemory, now_ns: int) -> int:
    """A create's event time: an imported memory keeps its creation time."""
    return datetime_to_ns(item.created_at) if item.created_at else now_ns


def _lock_project(project_id: str) -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LockKey.PROJECT_WRITE, project_id])


def _supersede_targets(project_id: str, items: list[CleanMemory]) -> dict[int, int]:
    """Item index → id of the memory it supersedes, each checked to be a current memory of the project."""
    targets: dict[int, int] = {}
    for n, item in enumerate(items):
        if item.supersedes is None:
            continue
        old = Memory.objects.select_for_update().filter(pk=item.supersedes).first()
        if old is None or old.project_id != project_id:
            raise NotFound(f"memory {item.supersedes} not found in project {project_id}")
        if old.superseded_by_id is not None:
            raise UserError(
                f"memory {old.pk} is already superseded by memory {old.superseded_by_id}; supersede that one instead."
            )
        targets[n] = old.pk
    return targets


@dataclass
class Nearby:
    duplicate: tuple[Memory, float] | None
    similar: list[Similar]


def _scans_exactly(project_id: str) -> bool:
    """Whether the duplicate check scans the project exactly rather than through HNSW. Counted here,
    once per batch (nothing is inserted until every item is checked): the search's cached project
    count would go stale as we insert."""
    from .queries import EXACT_SCAN_MAX

    # Counting stops at EXACT_SCAN_MAX + 1 rows: a full count(*) grew with the project (3 ms at 100k
    # memories, docs/benchmarks.md) and runs under the project's write lock, so every store of a
    # large project waited for it.
    return Memory.objects.filter(project_id=project_id)[: EXACT_SCAN_MAX + 1].count() <= EXACT_SCAN_MAX


def _near_many(
    project_id: str,
    embedder_id: str,
    items: list[CleanMemory],
    vectors: list[np.ndarray] | None,
    exclude: set[int],
    *,
    exact_scan: bool,
) -> list[Nearby]:
    """For each item, the current memory it duplicates (the same text as a reader sees it, or cosine ≥
    the embedder's duplicate threshold), else up to MAX_SIMILAR related ones. A constant number of
    queries whatever the batch size (an import writes 100 per batch): exact texts in one, every item's
    nearest neighbours in one, their rows in one. `vectors` are the texts' skeletons' (_probe_vectors)."""
    current = Memory.objects.current().filter(project_id=project_id).exclude(pk__in=exclude)
    shapes = [skeleton(i.content) for i in items]
    exact: dict[str, Memory] = {}
    for memory in current.filter(content__in={*(i.content for i in items), *shapes}).order_by("-id"):
        exact[skeleton(memory.content)] = memory  # the oldest wins: rows come newest first
    out: list[Nearby] = [Nearby((exact[shape], 1.0), []) if shape in exact else Nearby(None, []) for shape in shapes]
    todo = [n for n, shape in enumerate(shapes) if shape not in exact and vectors is not None]
    if not todo or vectors is None:
        return out
    from .queries import nearest_many

    limit = thresholds(embedder_id)
    near = nearest_many(project_id, embedder_id, [vectors[n] for n in todo], 12, exact=exact_scan)
    rows = current.in_bulk({mid for hits in near for mid in hits})
    for n, hits in zip(todo, near, strict=True):
        # A look-alike of a neighbour (its skeleton's vector found it, whatever the cosine) is the same text.
        same = [(mid, sim) for mid, sim in hits.items() if mid in rows and skeleton(rows[mid].content) == shapes[n]]
        if same:
            mid, sim = max(same, key=lambda p: p[1])
            out[n] = Nearby((rows[mid], sim), [])
            continue
        close = {mid: sim for mid, sim in hits.items() if sim >= limit.related}
        out[n] = _nearby_from(items[n].content, close, rows, limit.duplicate)
    return out


def _probe_vectors(
    embedder: Embedder, items: list[CleanMemory], vectors: list[np.ndarray] | None
) -> list[np.ndarray] | None:
    """The vectors the duplicate check searches with: of each text's skeleton, so look-alike letters
    (which move an embedding a long way) do not hide a duplicate. Stored vectors stay the text's own."""
    if vectors is None:
        return None
    changed = [n for n, item in enumerate(items) if skeleton(item.content) != item.content]
    if not changed:
        return vectors  # plain text (nearly always): no second embedding
    probes = list(vectors)
    fresh = _embed(embedder, [skeleton(items[n].content) for n in changed]) or []
    for n, vector in zip(changed, fresh, strict=True):
        probes[n] = vector
    return probes


def _nearby_from(content: str, close: dict[int, float], rows: dict[int, Memory], duplicate: float) -> Nearby:
    ranked = sorted(((rows[mid], sim) for mid, sim in close.items() if mid in rows), key=lambda p: (-p[1], p[0].pk))
    for memory, sim in ranked:  # the nearest that is the same fact, not one with a changed literal
        if sim >= duplicate and same_fact_tokens(memory.content, content):
            return Nearby((memory, sim), [])
    similar: list[Similar] = [
        {"id": m.pk, "content": m.content, "similarity": round(sim, 4)} for m, sim in ranked[:MAX_SIMILAR]
    ]
    return Nearby(None, similar)


def nearby(project_id: str, content: Any) -> Nearby:
    """Read-only: the current memory `content` would duplicate, else the related ones (for dreaming,
    which decides between update, supersede and a contradicts link before it writes)."""
    item = CleanMemory(clean_content(content))
    embedder = get_embedder()
    vectors = _embed(embedder, [skeleton(item.content)])  # a probe, as for a store
    exact_scan = _scans_exactly(project_id) if vectors else True
    return _near_many(project_id, embedder.id, [item], vectors, set(), exact_scan=exact_scan)[0]


@dataclass
class _BatchIndex:
    """The items of one store batch kept so far, to find an item that repeats an earlier one:
    same text, or cosine ≥ the duplicate threshold (one matrix product, not a loop over pairs)."""

    embedder_id: str
    texts: dict[str, int] = field(default_factory=dict)
    kept: list[int] = field(default_factory=list)
    matrix: list[np.ndarray] = field(default_factory=list)

    def add(self, items: list[CleanMemory], vectors: list[np.ndarray] | None, n: int) -> None:
        self.texts.setdefault(skeleton(items[n].content), n)
        self.kept.append(n)
        if vectors is not None:
            v = np.asarray(vectors[n], dtype=np.float32)
            self.matrix.append(v / (np.linalg.norm(v) or 1.0))

    def duplicate(self, items: list[CleanMemory], vectors: list[np.ndarray] | None, n: int) -> tuple[int, float] | None:
        if (shape := skeleton(items[n].content)) in self.texts:
            return self.texts[shape], 1.0
        if vectors is None or not self.matrix:
            return None
        v = np.asarray(vectors[n], dtype=np.float32)
        sims = np.stack(self.matrix) @ (v / (np.linalg.norm(v) or 1.0))
        threshold = thresholds(self.embedder_id).duplicate
        for k in np.flatnonzero(sims >= threshold):  # in the order they were kept, as before
            m = self.kept[int(k)]
            if same_fact_tokens(items[m].content, items[n].content):
                return m, float(sims[k])
        return None


def _mark_superseded(old_id: int, new: Memory, source: str, *, remote: bool = False) -> None:
    """old.superseded_by = new, a `supersedes` link new → old, history on both. Inside a transaction.
    `remote`: applying a teammate's event — nothing is published.
    The old row's `updated_at` is kept either way: the mark travels in the new memory's event
    (`supersedes`), and `updated_at` is the time of a memory's own last event (docs/contract.md §5), so a
    teammate applying that event ends with the same row as we do."""
    old = Memory.objects.select_for_update().get(pk=old_id)
    before = snapshot(old)
    old.superseded_by = new
    old.save(update_fields=["superseded_by"])
    MemoryLink.objects.get_or_create(
        from_memory=new,
        to_memory=old,
        kind=LinkKind.SUPERSEDES,
        defaults={"project_id": new.project_id, "source": HISTORY_SOURCES.get(source, source)[:20]},
    )
    record_change(old, "superseded", source, before, snapshot(old))
    record_change(new, "supersedes", source, None, {"supersedes": old.pk})
    _close_conflicts_of(old, source)
    if not remote:
        announce(new, supersedes=[str(old.uuid)])


def _close_conflicts_of(old: Memory, source: str) -> None:
    """A superseded memory is history: its open `contradicts` links leave the conflicts queue
    (resolution "superseded"), whichever side it was on."""
    open_links = MemoryLink.objects.filter(kind=LinkKind.CONTRADICTS, resolved_at__isnull=True)
    for link in (open_links.filter(from_memory=old) | open_links.filter(to_memory=old)).select_for_update():
        link.resolved_at, link.resolution = timezone.now(), "superseded"
        link.save(update_fields=["resolved_at", "resolution"])
        after = {"link": link.pk, "resolution": "superseded"}
        record_change(old, "conflict resolved", source, None, after)


def announce(memory: Memory, **extra: Any) -> None:
    """Publish an `update` of `memory` carrying only `extra` synced values (e.g. `links`,
    `supersedes`), stamped after its last change. Inside the change's transaction."""
    ts = change_time(memory.updated_at)
    memory.updated_at = ns_to_datetime(ts)
    memory.save(update_fields=["updated_at"])
    publish_change("update", memory, ts, fields=(), extra=extra)


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
    changes: dict[str, Any] = {}
    if "content" in given:
        changes["content"] = clean_content(given["content"])
    if "tags" in given:
        changes["tags"] = clean_tags(given["tags"])
    if "category" in given:
        changes["category"] = clean_category(given["category"])
    if "importance" in given:
        changes["importance"] = clean_importance(given["importance"]) or Importance.NORMAL
    if "ttl_days" in given:
        changes["expires_at"] = None if given["ttl_days"] == 0 else expiry_from_ttl(given["ttl_days"])
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
        embedded = _embed(embedder, [changes["content"]])
        vector = embedded[0] if embedded else None
        if vector is not None:
            ensure_index(embedder.id, len(vector))
    with transaction.atomic():
        memory = _locked(memory, memory_id)
        before = snapshot(memory)
        content_changed = "content" in changes and changes["content"] != memory.content
        for key, value in changes.items():
            setattr(memory, key, value)
        if "content" in changes or "tags" in changes:
            memory.held_reason = hold_reason(memory.content, memory.tags)
        memory.updated_by_id = access.acting().user_id
        ts = change_time(memory.updated_at)
        memory.updated_at = ns_to_datetime(ts)
        memory.save()
        if content_changed:
            MemoryVector.objects.filter(memory=memory).exclude(embedder=embedder.id).delete()
            if vector is not None:
                _save_vector(memory, embedder.id, vector)
        fields = [k for k in changes if k in SYNCED and (k != "content" or content_changed)]
        logged = _logged_vector(embedder.id, vector) if content_changed else None
        extra = None
        # New anchors replace the old; new content without them re-pins the old at HEAD (whoever
        # rewrote the memory wrote it against the code as it is now).
        rows = anchor_store.attach(memory, cited) if cited is not None else None
        if rows is None and content_changed:
            rows = anchor_store.repin(memory, strict=False)
        if rows is not None:
            extra = {"anchors": anchor_store.to_wire(rows)}
            changes["anchors"] = extra["anchors"]
        publish_change("update", memory, ts, fields=fields, vector=logged, extra=extra)
        _activity(EventKind.UPDATED, memory, source=source, fields=sorted(changes)).save()
        after = snapshot(memory)
        if after != before:
            record_change(memory, "updated", source, before, after)
    return memory


def repin_memory(memory_id: Any, *, source: str = "admin") -> Memory:
    """Keep a stale memory as it is: pin its anchors again at HEAD, where their code is now (docs/contract.md §12).
    A re-pin is an event, so teammates get the new pins."""
    memory = get_memory(memory_id)
    with transaction.atomic():
        memory = _locked(memory, memory_id)
        before = anchor_store.wire_of(memory)
        rows = anchor_store.repin(memory) or []
        after = anchor_store.to_wire(rows)
        announce(memory, anchors=after)
        record_change(memory, "repinned", source, {"anchors": before}, {"anchors": after})
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
        given.get("ttl_days", remaining) or None,
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
        _delete(memory, source)
    return memory


def archive(memory: Memory, reason: str, *, rating: int | None = None, comment: str = "") -> RejectedMemory:
    """Keep a copy of `memory` in rejected_memories before it is deleted (a rejection or an expiry)."""
    return RejectedMemory.objects.create(
        uuid=memory.uuid,
        project_id=memory.project_id,
        content=memory.content,
        tags=memory.tags,
        category=memory.category,
        rating=rating,
        rating_comment=comment,
        reason=reason,
    )


def _delete(memory: Memory, source: str, *, publish_forget: bool = True, **metadata: Any) -> None:
    pk = memory.pk
    record_change(memory, "deleted", source, snapshot(memory), None)
    MemoryEvent.objects.create(
        kind=EventKind.DELETED,
        memory=None,
        memory_uuid=memory.uuid,
        project_id=memory.project_id,
        metadata={"source": source, "content": memory.content[:200], **metadata},
    )
    if publish_forget:
        publish_change("delete", memory, change_time(memory.updated_at))
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
            record_change(memory, "rated", source, before, snapshot(memory))
            return rated_to_wire(memory, value, archived=False)
        archive(memory, ArchiveReason.REJECTED, rating=value, comment=comment)
        _delete(memory, source, rating=value)
    return rated_to_wire(memory, value, archived=True)


def clear_rating(memory_id: Any) -> Memory:
    """Undo a keep: the memory goes back to the review queue (unrated, no comment)."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=get_memory(memory_id, access.WRITE).pk).first()
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        memory.rating, memory.rating_comment = None, ""
        memory.save(update_fields=["rating", "rating_comment"])
    return memory


def approve_held(memory_id: Any, *, source: str = "admin") -> Memory:
    """A person read a memory held for review (memories.poisoning) and lets assistants see it: it
    joins retrieval and context. History records who approved what reason. Idempotent. Local only:
    each teammate's server holds and approves its own copy."""
    with transaction.atomic():
        memory = _locked(get_memory(memory_id), memory_id)
        if memory.held_reason:
            reason, memory.held_reason = memory.held_reason, ""
            memory.save(update_fields=["held_reason"])
            record_change(memory, "approved", source, {"held_reason": reason}, {"held_reason": ""})
    return memory


def restore_rejected(rejected_id: Any, *, source: str = "admin") -> Memory:
    """Undo a rejection: store the archived memory again (a new create event, so teammates get it
    back too) as unrated, and drop it from the archive. The archive row goes only if the store worked."""
    try:
        row = RejectedMemory.objects.get(pk=int(str(rejected_id)))
    except (ValueError, RejectedMemory.DoesNotExist):
        raise NotFound(f"rejected memory {rejected_id} not found") from None
    access.require(row.project_id, access.WRITE, missing=NotFound(f"rejected memory {rejected_id} not found"))
    memory = create_memory(
        Scope(row.project_id, known_root(row.project_id)), row.content, row.category, row.tags, source=source
    )
    RejectedMemory.objects.filter(pk=row.pk).delete()
    return memory


# --- Applying teammates' events (called by sync reconcile only) ---------------------------
# These write without announcing a change: what they apply is already in the log.


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


def create_remote_many(project_id: str, items: Sequence[tuple[str, RemoteState, RemoteVector | None]]) -> list[Memory]:
    """`apply_remote_state` for memories this machine does not have yet, in a constant number of
    statements (a teammate's first reconcile creates thousands). Call inside a transaction, after
    checking that no row with these uuids exists."""
    memories = []
    for memory_uuid, state, _ in items:
        memory = Memory(uuid=memory_uuid, project_id=project_id)
        for key, value in remote_fields(memory, state).items():
            setattr(memory, key, value)
        memory.held_reason = hold_reason(memory.content, memory.tags)
        memory.created_at, memory.updated_at = state.created_at, state.updated_at
        memories.append(memory)
    created = Memory.objects.bulk_create(memories)
    with_vector = [(m, v) for m, (_, _, v) in zip(created, items, strict=True) if v is not None]
    for embedder_id, dim in {(v[0], len(v[1])) for _, v in with_vector}:
        ensure_index(embedder_id, dim)
    MemoryVector.objects.bulk_create(
        MemoryVector(
            memory=m, project_id=project_id, embedder=v[0], dim=len(v[1]), vector=np.asarray(v[1], dtype=np.float32)
        )
        for m, v in with_vector
    )
    anchor_store.add_from_wire([(m, state.anchors) for m, (_, state, _) in zip(created, items, strict=True)])
    MemoryEvent.objects.bulk_create([_activity(EventKind.CREATED, m, source="reconcile") for m in created])
    MemoryChange.objects.bulk_create([change_row(m, "created", "sync", None, snapshot(m)) for m in created])
    return created


def apply_remote_state(
    project_id: str,
    memory_uuid: str,
    state: RemoteState | None,
    vector: tuple[str, Sequence[float]] | None = None,
    *,
    memory: Memory | None = None,
) -> RemoteOutcome:
    """Make the local row equal `state` (None: the memory is deleted). Call inside a transaction,
    with the row (if any) passed in locked `select_for_update` by the caller.

    `vector` is stored for its embedder; a content change first drops every old (now stale) vector.
    """
    if state is None:
        if memory is None:
            return "absent"
        _delete(memory, "reconcile", publish_forget=False)
        return "deleted"
    if memory is None:
        memory = Memory(uuid=memory_uuid, project_id=project_id)
        for key, value in remote_fields(memory, state).items():
            setattr(memory, key, value)
        memory.held_reason = hold_reason(memory.content, memory.tags)
        memory.created_at, memory.updated_at = state.created_at, state.updated_at
        memory.save()
        if vector is not None:
            _save_vector(memory, vector[0], vector[1])
        if state.anchors:
            anchor_store.from_wire(memory, state.anchors)
        _activity(EventKind.CREATED, memory, source="reconcile").save()
        record_change(memory, "created", "sync", None, snapshot(memory))
        return "created"
    changes = remote_fields(memory, state)
    if state.anchors is not None and anchor_store.wire_of(memory) != state.anchors:
        anchor_store.from_wire(memory, state.anchors)  # a teammate's re-pin or new anchors
        changes["anchors"] = state.anchors
    if "content" in changes:  # a content change makes every old vector stale
        MemoryVector.objects.filter(memory=memory).delete()
    if vector is not None:
        _save_vector(memory, vector[0], vector[1])
    if not changes and (memory.created_at, memory.updated_at) == (state.created_at, state.updated_at):
        return "unchanged"
    before = snapshot(memory)
    for key, value in changes.items():
        if key != "anchors":
            setattr(memory, key, value)
    if "content" in changes or "tags" in changes:
        memory.held_reason = hold_reason(memory.content, memory.tags)
    memory.created_at, memory.updated_at = state.created_at, state.updated_at
    memory.save()
    if not changes:
        return "unchanged"  # only the times moved (e.g. an empty update event)
    _activity(EventKind.UPDATED, memory, source="reconcile", fields=sorted(changes)).save()
    record_change(memory, "updated", "sync", before, snapshot(memory))
    return "updated"
