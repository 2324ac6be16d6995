"""Storing new memories: clean, secret-scan, pin anchors and embed (outside any transaction), then
one transaction under a per-project lock: duplicate check, insert, vectors, history, activity and
the announcement (`changes.publish_changes`, which the team-sync outbox turns into an event file
after commit), so a failure leaves nothing half-written. Also the supersede mark a store (or a
lifecycle merge) leaves on the memory it replaces."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from access import policy as access
from yullu_core.errors import NotFound, UserError
from yullu_core.locks import LockKey
from yullu_core.timestamps import datetime_to_ns, format_ts, ns_to_datetime

from ..anchors import checks as anchor_checks
from ..anchors import store as anchor_store
from ..changes import announced, change_time, publish_changes
from ..embedding.embedders import Embedder, get_embedder
from ..embedding.vector_index import ensure_index
from ..models import LinkKind, Memory, MemoryLink
from ..scope import Scope
from ..wire import AnchorOut, Created, Duplicate, Similar
from . import bulk_rows
from .history import HISTORY_SOURCES, announce, record, record_created, snapshot
from .load_index import LoadIndex
from .nearby import BatchIndex, Nearby, near_many, probe_vectors, scans_exactly
from .poisoning import hold_reason
from .validation import CleanMemory, NewMemory, clean_item, refuse_secrets
from .vectors import embed_missing, logged_vector


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
    cited: bool = False  # the store asked for anchors (what a duplicate's answer must say it did not attach)

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
            if all(a["status"] is None for a in self.anchors):
                cast(Created, out)["anchors_unpinned"] = unpinned(m.project_id)
        elif self.cited and self.duplicate_of is not None:
            # The existing memory is kept as it is: the caller learns the code it cited is not pinned there (walk
            # 18: a duplicate store's anchors vanished without a word), and how to pin it.
            cast(Duplicate, out)["anchors_not_attached"] = (
                f"memory {self.duplicate_of} already holds this fact and was not changed, so the anchors given were "
                f"not attached; update_memory(id={self.duplicate_of}, anchors=[...]) pins them there."
            )
        return out


def unpinned(project_id: str) -> str:
    """Why a store's anchors have no status: walk 19's team stored anchored memories on a team server before
    its admin gave it a checkout, and each answer said `"status": null` and nothing more."""
    return (
        f"this server has no checkout of {project_id} to read, so these anchors are not pinned and cannot show "
        "as stale; they are pinned once it has one (its admin runs `yullu anchors check --cwd CHECKOUT` there, "
        "or a write sends a cwd inside it)."
    )


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


def store_memories(
    scope: Scope,
    items: Iterable[NewMemory],
    *,
    source: str = "api",
    dedupe: bool = True,
    load: LoadIndex | None = None,
) -> list[Stored]:
    """Store several memories with one batched embedding call and one transaction.

    With `dedupe` (every product write path; only benchmarks turn it off) a near-duplicate of
    a current memory of the project, or of an earlier item of the batch, is not stored again:
    its Stored says created=False and names the existing memory. The check and the insert run
    under a per-project transaction-level advisory lock, so two concurrent identical stores
    still leave one memory. `supersedes` marks that memory superseded by the stored one.
    `load` (an import of many batches into scope's project): the duplicates are looked up in memory,
    among what the project held and the load's earlier batches, instead of through the vector index.
    """
    access.require(scope.project_id, access.WRITE)
    author = access.acting().user_id
    now = timezone.now()
    items = list(items)
    cleaned = [clean_item(i, now) for i in items]
    # (the project id too: it is stored on every memory and echoed in every answer; a git remote pasted with its
    # token, `x-access-token:ghs_…@github.com/acme/api`, is refused as in the content; secrets19)
    refuse_secrets(scope.project_id)
    for item in cleaned:
        refuse_secrets(item.content, *item.tags)
    cited = [
        anchor_store.prepare(i.anchors, c.content, scope.git_root, lenient=i.lenient_anchors)
        for i, c in zip(items, cleaned, strict=True)
    ]
    embedder = get_embedder()
    vectors = embed_missing(embedder, cleaned)
    if vectors:
        ensure_index(embedder.id, len(vectors[0]))
    stamp = change_time(None)
    with transaction.atomic():
        if dedupe:
            _lock_project(scope.project_id)
        targets = _supersede_targets(scope.project_id, cleaned)
        if load is not None and dedupe:
            found: list[Nearby | None] = list(load.nearby(cleaned, vectors, probe_vectors(embedder, cleaned, vectors)))
        else:
            found = _nearby_items(scope.project_id, embedder, cleaned, vectors, set(targets.values()), dedupe=dedupe)
        batch = _sort_out(embedder.id, cleaned, vectors, found, dedupe=dedupe)
        created = _insert(scope.project_id, cleaned, batch.fresh, stamp, author)
        results = batch.results
        for n, memory in zip(batch.fresh, created, strict=True):
            near = found[n]
            results[n] = Stored(memory, True, similar=near.similar if near else [])
        for n, (m, sim) in batch.same_as.items():
            first = results[m].memory
            results[n] = Stored(first, False, duplicate_of=first.pk, similarity=sim)
        if vectors is not None and created:
            _insert_vectors(embedder.id, vectors, batch.fresh, created)
        _announce_created(scope, cleaned, cited, batch.fresh, created, results, embedder.id, vectors, stamp)
        record_created(created, source)
        for n in range(len(cleaned)):  # supersede marks are written in the order the items came
            result, old = results[n], targets.get(n)
            if old is not None and result.memory.pk != old:
                mark_superseded(old, result.memory, source)
                result.superseded = old
    if load is not None:  # after the commit: a batch rolled back leaves nothing for the next to repeat
        load.kept(created, [vectors[n] if vectors is not None else None for n in batch.fresh])
    for n, asked in enumerate(items):
        results[n].cited = bool(asked.anchors)
    return [results[n] for n in range(len(cleaned))]


def _nearby_items(
    project_id: str,
    embedder: Embedder,
    cleaned: list[CleanMemory],
    vectors: list[np.ndarray] | None,
    exclude: set[int],
    *,
    dedupe: bool,
) -> list[Nearby | None]:
    """Each item's duplicate or related memories in the project (None for all without `dedupe`)."""
    exact_scan = scans_exactly(project_id) if dedupe and vectors else True
    if not dedupe:
        return [None] * len(cleaned)
    probes = probe_vectors(embedder, cleaned, vectors)
    return list(near_many(project_id, embedder.id, cleaned, probes, exclude, exact_scan=exact_scan))


@dataclass
class _Batch:
    results: dict[int, Stored] = field(default_factory=dict)  # item → its answer (duplicates of stored memories)
    fresh: list[int] = field(default_factory=list)  # items to insert
    same_as: dict[int, tuple[int, float]] = field(default_factory=dict)  # item → earlier item of this batch


def _sort_out(
    embedder_id: str,
    cleaned: list[CleanMemory],
    vectors: list[np.ndarray] | None,
    found: list[Nearby | None],
    *,
    dedupe: bool,
) -> _Batch:
    """Which items duplicate a stored memory, which repeat an earlier item, which are new."""
    index = BatchIndex(embedder_id)
    batch = _Batch()
    for n in range(len(cleaned)):
        near = found[n]
        if near is not None and near.duplicate is not None:
            memory, sim = near.duplicate
            batch.results[n] = Stored(memory, False, duplicate_of=memory.pk, similarity=sim)
        elif dedupe and (earlier := index.duplicate(cleaned, vectors, n)) is not None:
            batch.same_as[n] = earlier
        else:
            batch.fresh.append(n)
            index.add(cleaned, vectors, n)
    return batch


def _insert(
    project_id: str, cleaned: list[CleanMemory], fresh: list[int], stamp: int, author: int | None
) -> list[Memory]:
    return bulk_rows.insert(
        Memory,
        [
            Memory(
                project_id=project_id,
                content=cleaned[n].content,
                category=cleaned[n].category,
                tags=cleaned[n].tags,
                importance=cleaned[n].importance,
                expires_at=cleaned[n].expires_at,
                held_reason=hold_reason(cleaned[n].content, cleaned[n].tags),
                created_at=cleaned[n].created_at or ns_to_datetime(_ts(cleaned[n], stamp)),
                updated_at=ns_to_datetime(_ts(cleaned[n], stamp)),
                created_by_id=_first_writer(cleaned[n], author)[0],
                created_author=_first_writer(cleaned[n], author)[1],
                updated_by_id=author,
                **({"uuid": cleaned[n].uuid} if cleaned[n].uuid else {}),
            )
            for n in fresh
        ],
        [cleaned[n].carried for n in fresh],
    )


def _first_writer(item: CleanMemory, author: int | None) -> tuple[int | None, str]:
    """Who wrote it first: the acting person, or whoever wrote a memory stored again (a restore)."""
    return item.first_writer if item.first_writer is not None else (author, "")


def _insert_vectors(embedder_id: str, vectors: list[np.ndarray], fresh: list[int], created: list[Memory]) -> None:
    bulk_rows.insert_vectors(
        [(m.pk, m.project_id, embedder_id, vectors[n]) for n, m in zip(fresh, created, strict=True)]
    )


def _announce_created(
    scope: Scope,
    cleaned: list[CleanMemory],
    cited: list[Any],
    fresh: list[int],
    created: list[Memory],
    results: dict[int, Stored],
    embedder_id: str,
    vectors: list[np.ndarray] | None,
    stamp: int,
) -> None:
    """Attach each new memory's anchors and publish the creates (with their vectors and anchors) together."""
    root = str(scope.git_root) if scope.git_root else None
    changes = []
    for n, memory in zip(fresh, created, strict=True):
        logged = logged_vector(embedder_id, vectors[n] if vectors is not None else None)
        extra: dict[str, Any] = {}
        if items_cited := cited[n]:
            rows = anchor_store.attach(memory, items_cited)
            results[n].anchors = [anchor_checks.anchor_out(a) for a in rows]
            extra["anchors"] = anchor_store.to_wire(rows)
        if (first := cleaned[n].first_writer) is not None:  # a memory written before: teammates keep its creation
            extra["created_at"] = format_ts(datetime_to_ns(memory.created_at))  # time and its writer (the log's name
            extra.update({"created_by": first[1]} if first[1] else {"created_by_user": first[0]})  # by sync.outbox)
        changes.append(
            announced("create", memory, _ts(cleaned[n], stamp), vector=logged, git_root=root, extra=extra or None)
        )
    publish_changes(changes)


def _ts(item: NewMemory, now_ns: int) -> int:
    """A create's event time: an imported memory keeps its creation time; one written before and stored
    again (a restore) is stamped now, and after the delete it undoes (its event carries `created_at`)."""
    if item.created_at and item.first_writer is None:
        return datetime_to_ns(item.created_at)
    # After the memory's delete, stamped at least 1 µs after its last event (changes.change_time): 2 µs after.
    return max(now_ns, datetime_to_ns(item.not_before) + 2000) if item.not_before else now_ns


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


def mark_superseded(old_id: int, new: Memory, source: str, *, remote: bool = False, author: str | None = None) -> None:
    """old.superseded_by = new, a `supersedes` link new → old, history on both. Inside a transaction.
    `remote`: applying a teammate's event — nothing is published; `author`: that event's author.
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
    record(old, "superseded", source, before, snapshot(old), author=author)
    record(new, "supersedes", source, None, {"supersedes": old.pk}, author=author)
    _close_conflicts_of(old, source, author)
    if not remote:
        announce(new, supersedes=[str(old.uuid)])


def _close_conflicts_of(old: Memory, source: str, author: str | None = None) -> None:
    """A superseded memory is history: its open `contradicts` links leave the conflicts queue
    (resolution "superseded"), whichever side it was on."""
    open_links = MemoryLink.objects.filter(kind=LinkKind.CONTRADICTS, resolved_at__isnull=True)
    for link in (open_links.filter(from_memory=old) | open_links.filter(to_memory=old)).select_for_update():
        link.resolved_at, link.resolution = timezone.now(), "superseded"
        link.save(update_fields=["resolved_at", "resolution"])
        after = {"link": link.pk, "resolution": "superseded"}
        record(old, "conflict resolved", source, None, after, author=author)
