"""Reconcile (SPEC §5): apply teammates' events from the log and publish local-only memories.

Idempotent and safe to repeat. Locks: a Postgres advisory lock per project, so two
reconciles of one project never run at once (the second reports `skipped`).
Ordering that keeps concurrent local writes safe: the local-only snapshot is taken
*before* the log is read — a committed local row always has its event file already
(the file is written inside the row's transaction), so it is never published twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from django.db import transaction

from memories import services as memory_services
from memories.backfill import advisory_lock
from memories.embedders import Embedder, embeds, get_embedder
from memories.models import Memory, MemoryVector, Meta
from memories.scope import Scope, known_root, resolve
from yullu_site.errors import UserError
from yullu_site.metrics import count_reconcile

from .eventlog import Event, logs_dir, read_events
from .publish import Publisher, sync_config

log = logging.getLogger(__name__)
LOCK_KEY = 0x59_75_6C_02


class ReconcileResult(TypedDict, total=False):
    project_id: str
    events_scanned: int
    created: int
    updated: int
    deleted: int
    embeddings_reused: int
    embeddings_computed: int
    local_only_logged: int
    watermark: str
    parse_errors: list[dict[str, str]]
    no_event_dir: bool
    skipped: bool


@dataclass
class Target:
    """The state one memory uuid folds to from the events after the watermark."""

    content: str | None = None
    tags: list[str] | None = None
    category: str | None = None
    category_given: bool = False
    vectors: dict[str, list[float]] = field(default_factory=dict)
    deleted: bool = False


def fold(events: list[tuple[str, Event]]) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    for _, event in events:
        t = targets.setdefault(event["memory_id"], Target())
        kind = event["type"]
        if kind == "forget":
            t.deleted = True
            continue
        if kind == "remember" or any(k in event for k in ("content", "tags", "category")):
            t.deleted = False  # a later remember/revise resurrects; a vector-only revise changes nothing
        if kind == "remember" or "content" in event:
            t.content = event.get("content", t.content)
            t.vectors = dict(event.get("vectors") or {})  # new content: old vectors are stale
        else:
            t.vectors.update(event.get("vectors") or {})  # vector-only revise merges
        if kind == "remember" or "tags" in event:
            t.tags = list(event.get("tags") or [])
        if kind == "remember" or "category" in event:
            t.category, t.category_given = event.get("category"), True
    return targets


def watermark_key(project_id: str) -> str:
    return f"last_event:{project_id}"


def embedder_dim(embedder: Embedder) -> int | None:
    row = MemoryVector.objects.filter(embedder=embedder.id).values_list("dim", flat=True).first()
    return int(row) if row else None


@count_reconcile
def reconcile_scope(scope: Scope) -> ReconcileResult:
    git_root = scope.git_root or known_root(scope.project_id)
    base: ReconcileResult = {
        "project_id": scope.project_id,
        "events_scanned": 0,
        "created": 0,
        "updated": 0,
        "deleted": 0,
        "embeddings_reused": 0,
        "embeddings_computed": 0,
        "local_only_logged": 0,
        "watermark": "",
    }
    if git_root is None:
        return {**base, "no_event_dir": True}
    cfg = sync_config(scope.project_id, git_root)
    folder = logs_dir(git_root, cfg["dir"])
    with advisory_lock(LOCK_KEY, scope.project_id) as got:
        if not got:
            return {**base, "skipped": True}
        return _reconcile(scope.project_id, git_root, folder, cfg, base)


def _reconcile(
    project_id: str, git_root: Path, folder: Path, cfg: dict[str, Any], result: ReconcileResult
) -> ReconcileResult:
    local_uuids = {str(u) for u in Memory.objects.filter(project_id=project_id).values_list("uuid", flat=True)}
    if not folder.is_dir():
        result["no_event_dir"] = True
    read = read_events(folder)
    watermark = Meta.objects.filter(key=watermark_key(project_id)).values_list("value", flat=True).first() or ""
    known_creates = {e["memory_id"] for _, e in read.events if e["type"] == "remember"}
    fresh = [(name, e) for name, e in read.events if name > watermark]
    result["events_scanned"] = len(fresh)
    embedder = get_embedder()
    publisher = Publisher(project_id, git_root)
    _apply(project_id, fold(fresh), embedder, cfg, publisher, result)
    result["local_only_logged"] = _publish_local_only(project_id, local_uuids - known_creates, embedder, publisher)
    if read.parse_errors:
        result["parse_errors"] = read.parse_errors
    new_mark = fresh[-1][0] if fresh else watermark
    with transaction.atomic():  # reached only when every step above succeeded
        Meta.objects.update_or_create(key=watermark_key(project_id), defaults={"value": new_mark})
    result["watermark"] = new_mark
    return result


def _apply(
    project_id: str,
    targets: dict[str, Target],
    embedder: Embedder,
    cfg: dict[str, Any],
    publisher: Publisher,
    result: ReconcileResult,
) -> None:
    dim = embedder_dim(embedder)
    chosen: dict[str, tuple[str, list[float]] | None] = {}
    to_embed: list[str] = []
    existing = {str(u): c for u, c in Memory.objects.filter(uuid__in=list(targets)).values_list("uuid", "content")}
    for uuid_, t in targets.items():
        if t.deleted:
            continue
        if uuid_ not in existing and t.content is None:
            continue  # ours: a tags- or vector-only revise for a memory we never had is skipped
        needs_vector = uuid_ not in existing or (t.content is not None and t.content != existing[uuid_])
        logged = t.vectors.get(embedder.id)
        reusable = cfg["reuse_embeddings"] and logged is not None and (dim is None or len(logged) == dim)
        if reusable:
            chosen[uuid_] = (embedder.id, logged)
        elif needs_vector and embeds(embedder):
            to_embed.append(uuid_)
    computed = _embed_missing(embedder, to_embed, targets, existing)
    for uuid_, t in targets.items():
        if t.deleted:
            result["deleted"] += int(memory_services.apply_remote_delete(uuid_))
            continue
        if uuid_ not in existing and t.content is None:
            continue
        vector = chosen.get(uuid_) or computed.get(uuid_)
        outcome = memory_services.apply_remote_upsert(
            project_id,
            uuid_,
            content=t.content,
            tags=t.tags,
            category=t.category,
            category_given=t.category_given,
            vector=vector,
        )
        if outcome in ("created", "updated"):
            result[outcome] += 1  # type: ignore[literal-required]
        if uuid_ in chosen and outcome != "unchanged":
            result["embeddings_reused"] += 1
        if uuid_ in computed:
            result["embeddings_computed"] += 1
            publisher.emit("revise", uuid_, vectors={embedder.id: [round(float(x), 7) for x in computed[uuid_][1]]})


def _embed_missing(
    embedder: Embedder, uuids: list[str], targets: dict[str, Target], existing: dict[str, str]
) -> dict[str, tuple[str, list[float]]]:
    if not uuids:
        return {}
    texts = [targets[u].content if targets[u].content is not None else existing[u] for u in uuids]
    vectors = embedder.embed(texts)  # outside any transaction
    return {u: (embedder.id, list(map(float, v))) for u, v in zip(uuids, vectors, strict=False)}


def _publish_local_only(project_id: str, uuids: set[str], embedder: Embedder, publisher: Publisher) -> int:
    if not uuids or publisher.folder is None:
        return 0
    vectors = {
        str(v.memory.uuid): list(map(float, v.vector))
        for v in MemoryVector.objects.filter(memory__uuid__in=uuids, embedder=embedder.id).select_related("memory")
    }
    count = 0
    for memory in Memory.objects.filter(uuid__in=uuids).order_by("created_at", "id"):
        vec = vectors.get(str(memory.uuid))
        publisher.emit(
            "remember",
            str(memory.uuid),
            content=memory.content,
            tags=list(memory.tags),
            category=memory.category,
            vectors={embedder.id: [round(x, 7) for x in vec]} if vec else None,
        )
        count += 1
    return count


def reconcile_cli(cwd: str, project_id: str | None) -> ReconcileResult:
    scope = resolve(project_id, cwd)
    if scope.git_root is None and known_root(scope.project_id) is None:
        raise UserError(f"no git repository known for {scope.project_id}; run inside the repository or pass --cwd.")
    return reconcile_scope(scope)
