"""The write side of a memory's life after it is stored: links and conflicts, expiry and prune,
recall feedback. Part of the service layer (memories.write holds the store/update/delete
path these build on); adapters (MCP, REST, admin, dreaming, tasks, CLI) call these only.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from access import policy as access
from access.people import username
from yullu_core.arguments import Text
from yullu_core.errors import NotFound, UserError

from .anchors.checks import anchors_of, is_stale
from .embedding.embedders import embeds, get_embedder
from .models import (
    ArchiveReason,
    EventKind,
    LinkKind,
    Memory,
    MemoryChange,
    MemoryEvent,
    MemoryLink,
    RecallFeedback,
)
from .wire import AnchorOut, MemoryOut, memory_to_wire
from .write import create, edit, validation
from .write import history as memory_history

LINK_KINDS = tuple(k.value for k in LinkKind)


class LinkDict(TypedDict):
    id: int
    from_id: int
    to_id: int
    kind: str
    source: str
    note: str
    created_at: str
    resolved_at: str | None
    resolution: str


def link_dict(link: MemoryLink) -> LinkDict:
    return {
        "id": link.pk,
        "from_id": link.from_memory_id,
        "to_id": link.to_memory_id,
        "kind": link.kind,
        "source": link.source,
        "note": link.note,
        "created_at": link.created_at.isoformat(),
        "resolved_at": link.resolved_at.isoformat() if link.resolved_at else None,
        "resolution": link.resolution,
    }


# --- links -----------------------------------------------------------------------------------


def link_memories(from_id: Any, to_id: Any, kind: Any, *, source: str = "api", note: str = "") -> MemoryLink:
    """Link two memories of one project. `supersedes` also marks `to` superseded by `from`.
    Idempotent: linking twice returns the existing link."""
    return link_or_find(from_id, to_id, kind, source=source, note=note)[0]


def link_or_find(
    from_id: Any, to_id: Any, kind: Any, *, source: str = "api", note: str = ""
) -> tuple[MemoryLink, bool]:
    """`link_memories`, and whether the link is new: an existing one is returned as it is (its note
    unchanged), with no history row or sync event written again (REST answers it 200, not 201)."""
    if kind not in LINK_KINDS:
        raise UserError("kind must be one of: supersedes, contradicts, related.")
    a, b = edit.get_memory(from_id, access.WRITE), edit.get_memory(to_id, access.WRITE)
    if a.pk == b.pk:
        raise UserError("a memory cannot be linked to itself.")
    if a.project_id != b.project_id:
        raise UserError("links join memories of one project only.")
    with transaction.atomic():
        if kind == LinkKind.SUPERSEDES:
            if b.superseded_by_id not in (None, a.pk):
                raise UserError(f"memory {b.pk} is already superseded by memory {b.superseded_by_id}.")
            made = b.superseded_by_id is None
            if made:
                create.mark_superseded(b.pk, a, source)
            return MemoryLink.objects.get(from_memory=a, to_memory=b, kind=kind), made
        link, made = MemoryLink.objects.get_or_create(
            from_memory=a,
            to_memory=b,
            kind=kind,
            defaults={"project_id": a.project_id, "source": _source(source), "note": (note or "")[:2000]},
        )
        if made:
            memory_history.record(a, "linked", source, None, {"kind": kind, "to": b.pk})
            memory_history.record(b, "linked", source, None, {"kind": kind, "from": a.pk})
            memory_history.announce(a, links=[{"kind": kind, "to": str(b.uuid)}])
    return link, made


def _source(source: str) -> str:
    return memory_history.HISTORY_SOURCES.get(source, source)[:20]


def links_of(memory_id: Any) -> list[LinkDict]:
    return _links(edit.get_memory(memory_id))


def _links(memory: Memory) -> list[LinkDict]:
    rows = MemoryLink.objects.filter(from_memory=memory) | MemoryLink.objects.filter(to_memory=memory)
    return [link_dict(link) for link in rows.order_by("created_at", "id")]


def apply_remote_links(
    project_id: str, memory_uuid: str, supersedes: Any, links: Any, author: str | None = None
) -> int:
    """Apply what a teammate's events say this memory supersedes and links to (the folded log,
    called by sync reconcile after every memory of the pass exists). Publishes nothing. Targets
    not (yet) here are skipped; a later pass that brings them applies the links then. `author`: the
    events' author, whom history names (it named whoever ran the reconcile: walk 10).
    Returns how many supersede marks and links were added."""
    added = 0
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(project_id=project_id, uuid=memory_uuid).first()
        if memory is None:
            return 0
        wanted = [("supersedes", str(u)) for u in supersedes or []]
        wanted += [(str(x.get("kind")), str(x.get("to"))) for x in links or [] if isinstance(x, dict)]
        for kind, target_uuid in wanted:
            if kind not in LINK_KINDS or target_uuid == memory_uuid:
                continue
            target = Memory.objects.filter(project_id=project_id, uuid=target_uuid).first()
            if target is None:
                continue
            if kind == LinkKind.SUPERSEDES:
                if target.superseded_by_id is None:
                    create.mark_superseded(target.pk, memory, "sync", remote=True, author=author)
                    added += 1
                continue
            _, made = MemoryLink.objects.get_or_create(
                from_memory=memory, to_memory=target, kind=kind, defaults={"project_id": project_id, "source": "sync"}
            )
            if made:
                memory_history.record(memory, "linked", "sync", None, {"kind": kind, "to": target.pk}, author=author)
                added += 1
    return added


# --- conflicts -------------------------------------------------------------------------------


def open_conflicts(project_id: str | None = None) -> list[dict[str, Any]]:
    """Open `contradicts` links between two current memories, oldest first (the admin's queue)."""
    qs = MemoryLink.objects.filter(kind=LinkKind.CONTRADICTS, resolved_at__isnull=True).select_related(
        "from_memory", "to_memory"
    )
    qs = access.only_visible(qs, role=access.ADMIN)  # the conflicts queue is a project admin's
    if project_id:
        access.require(project_id, access.ADMIN)
        qs = qs.filter(project_id=project_id)
    out = []
    for link in qs.order_by("created_at", "id"):
        out.append(
            {
                **link_dict(link),
                "project_id": link.project_id,
                "from_content": link.from_memory.content,
                "to_content": link.to_memory.content,
            }
        )
    return out


RESOLUTIONS = ("keep_from", "keep_to", "keep_both", "merge")
COMMENT = Text("comment", 2000)  # a recall verdict's


def conflict_in(link_id: Any, project_id: str) -> None:
    """A conflict addressed with a project must be that project's (else: not found)."""
    pk = validation.parse_id(link_id, "conflict id")
    if not MemoryLink.objects.filter(pk=pk, kind=LinkKind.CONTRADICTS, project_id=project_id).exists():
        raise NotFound(f"conflict {pk} not found in project {project_id}")


def resolve_conflict(link_id: Any, resolution: Any, *, merged_content: Any = None, source: str = "admin") -> LinkDict:
    """Close an open `contradicts` link:
    - keep_from / keep_to: the other memory is superseded by the kept one;
    - keep_both: both stay current, the link becomes `related`;
    - merge: `merged_content` becomes the text of the `from` memory and `to` is superseded by it.
    """
    if resolution not in RESOLUTIONS:
        raise UserError(f"resolution must be one of: {', '.join(RESOLUTIONS)}.")
    if resolution == "merge" and not (isinstance(merged_content, str) and merged_content.strip()):
        raise UserError("merge needs the merged text.")
    link = MemoryLink.objects.filter(pk=validation.parse_id(link_id, "link id"), kind=LinkKind.CONTRADICTS).first()
    if link is None:
        raise NotFound(f"conflict {link_id} not found")
    access.require(link.project_id, access.ADMIN, missing=NotFound(f"conflict {link_id} not found"))
    if link.resolved_at is not None:
        raise UserError(f"conflict {link.pk} was already resolved ({link.resolution}).")
    if resolution == "merge":  # embeds outside the transaction below
        edit.update_memory(link.from_memory_id, content=merged_content, source=source)
    with transaction.atomic():
        link = MemoryLink.objects.select_for_update().get(pk=link.pk)
        if link.resolved_at is not None:
            raise UserError(f"conflict {link.pk} was already resolved ({link.resolution}).")
        # Closed first: superseding the dropped memory closes its open conflicts as "superseded", which wrote a
        # second "conflict resolved" row on it and a resolution overwritten a moment later (walk 10).
        link.resolved_at, link.resolution = timezone.now(), resolution
        link.save(update_fields=["resolved_at", "resolution"])
        keep, drop = _kept(link, resolution)
        if drop is not None:
            current = Memory.objects.select_for_update().get(pk=drop.pk)
            if current.superseded_by_id is None:
                create.mark_superseded(drop.pk, keep, source)
        elif resolution == "keep_both":
            MemoryLink.objects.get_or_create(
                from_memory_id=link.from_memory_id,
                to_memory_id=link.to_memory_id,
                kind=LinkKind.RELATED,
                defaults={"project_id": link.project_id, "source": _source(source)},
            )
        for memory in (link.from_memory, link.to_memory):
            after = {"link": link.pk, "resolution": resolution}
            memory_history.record(memory, "conflict resolved", source, None, after)
    return link_dict(link)


def _kept(link: MemoryLink, resolution: str) -> tuple[Memory, Memory | None]:
    if resolution in ("keep_from", "merge"):
        return link.from_memory, link.to_memory
    if resolution == "keep_to":
        return link.to_memory, link.from_memory
    return link.from_memory, None


# --- history ---------------------------------------------------------------------------------


class ChangeDict(TypedDict):
    action: str
    source: str
    user: str | None  # who (null: the system)
    author: str | None  # a teammate's change from the event log: its event's author
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: str


def history(memory_id: Any) -> list[ChangeDict]:
    """Every recorded change to a memory, oldest first (by uuid, so it survives the row's deletion)."""
    memory = edit.get_memory(memory_id)
    rows = MemoryChange.objects.filter(memory_uuid=memory.uuid).order_by("created_at", "id")
    return [
        {
            "action": r.action,
            "source": r.source,
            "user": username(r.user_id),
            "author": r.author or None,  # a teammate's, from the event log (sync)
            "before": r.before,
            "after": r.after,
            "at": r.created_at.isoformat(),
        }
        for r in rows
    ]


def _who(source: str, author: str) -> str:
    """ "sync (Dana Reyes)" for a teammate's change that named its author."""
    return f"{source} ({author})" if author else source


class HistorySummary(TypedDict):
    changes: int
    first_at: str | None
    last_at: str | None
    recent: list[dict[str, str | None]]


def history_summary(memory: Memory, recent: int = 5) -> HistorySummary:
    """How many changes a memory has had, when, and the last few (action, source, who, time). `by` is
    the user who made it, or a teammate's event author: on a team server the admin's history said
    "mcp (alice)" while get_memory said only "mcp" (walk 8)."""
    rows = MemoryChange.objects.filter(memory_uuid=memory.uuid).order_by("-created_at", "-id")
    count = rows.count()
    last = list(rows.values("action", "source", "author", "user_id", "created_at")[:recent])
    first = rows.order_by("created_at", "id").values_list("created_at", flat=True).first()
    return {
        "changes": count,
        "first_at": first.isoformat() if first else None,
        "last_at": last[0]["created_at"].isoformat() if last else None,
        "recent": [
            {
                "action": r["action"],
                "source": _who(r["source"], r["author"]),
                "by": r["author"] or username(r["user_id"]),
                "at": r["created_at"].isoformat(),
            }
            for r in last
        ],
    }


WRITES = ("created", "updated")  # the changes that wrote a memory's text (ratings, links and the rest did not)


def last_writers(memories: list[Memory]) -> dict[uuid.UUID, dict[str, str | None]]:
    """Who last wrote each memory's text and when (`by`, `at`): its newest create or update, however many
    ratings, links and reviews came after (absent when it has none). Not history_summary's last five changes:
    six ratings after an edit hid its writer, and the Conflicts page named nobody. One query for any number
    of memories (DISTINCT ON over the memory_uuid, created_at index): the page called history_summary per
    side, three queries and a user lookup each."""
    newest = (
        MemoryChange.objects.filter(memory_uuid__in=[m.uuid for m in memories], action__in=WRITES)
        .order_by("memory_uuid", "-created_at", "-id")
        .distinct("memory_uuid")
        .values("memory_uuid", "author", "user__username", "created_at")
    )
    return {
        r["memory_uuid"]: {"by": r["author"] or r["user__username"], "at": r["created_at"].isoformat()} for r in newest
    }


class MemoryDetail(MemoryOut):
    """One memory and what surrounds it: MCP's get_memory and REST's GET /api/memories/<id> (docs/contract.md §3)."""

    anchors: list[AnchorOut]  # the code it cites, with its last check's status (§12), as results and stores give them
    stale: bool  # one of them changed or is missing, as a recall result says it
    links: list[LinkDict]
    history: HistorySummary


def memory_detail(memory_id: Any, project_id: str | None = None) -> MemoryDetail:
    """The memory `memory_id` (with `project_id`: it must be that project's or the caller's personal one), its
    anchors, links and a summary of its history. One call for both transports: REST's GET answered the memory
    alone while MCP's get_memory added the rest."""
    memory = edit.get_memory_in(memory_id, project_id)
    anchors = anchors_of(memory)
    return {
        **memory_to_wire(memory),
        "anchors": anchors,
        "stale": is_stale(anchors),
        "links": _links(memory),
        "history": history_summary(memory),
    }


# --- expiry ----------------------------------------------------------------------------------


class PruneResult(TypedDict):
    dry_run: bool
    expired: int
    ids: list[int]


def prune_expired(*, dry_run: bool = False, now: datetime | None = None, limit: int = 1000) -> PruneResult:
    """Archive expired memories (to rejected memories with reason "expired") and delete them.

    No sync event: expires_at travels in the log, so every machine prunes the same memories on
    its own schedule. Rows are claimed with SKIP LOCKED, so two prunes never archive one twice.
    """
    now = now or timezone.now()
    due = Memory.objects.filter(expires_at__lte=now).order_by("expires_at", "id")
    if dry_run:
        ids = list(due.values_list("id", flat=True)[:limit])
        return {"dry_run": True, "expired": len(ids), "ids": ids}
    done: list[int] = []
    with transaction.atomic():
        for memory in due.select_for_update(skip_locked=True)[:limit]:
            edit.archive(memory, ArchiveReason.EXPIRED)
            edit.remove(memory, "prune", publish_forget=False, expired=True)
            done.append(memory.pk)
    return {"dry_run": False, "expired": len(done), "ids": done}


def prune_recall_log(*, days: int | None = None, now: datetime | None = None, batch: int = 10_000) -> int:
    """Delete recall-log rows (recalled / considered) older than `[retrieval].recall_log_days`.

    The log grows by ~10 rows a search (a team's year: millions) and is read only for the recent
    past: the Retrievals page, recall counts, `rate_recall` on a recent recall. Verdicts live in
    their own table and are kept. Deleted a batch per statement (short transactions, no long lock);
    idempotent. Returns the rows deleted."""
    keep = days if days is not None else settings.YULLU["retrieval"]["recall_log_days"]
    cutoff = (now or timezone.now()) - timedelta(days=keep)
    table, deleted = MemoryEvent._meta.db_table, 0
    while True:
        with connection.cursor() as cur:
            cur.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} "
                "WHERE kind IN (%s, %s) AND created_at < %s LIMIT %s)",
                [EventKind.RECALLED, EventKind.CONSIDERED, cutoff, batch],
            )
            deleted += cur.rowcount
            if cur.rowcount < batch:
                return deleted


# --- recall feedback ---------------------------------------------------------------------------


class VerdictDict(TypedDict):
    recall_id: str
    memory_id: int
    useful: bool
    recorded: bool


def rate_recall(recall_id: Any, memory_id: Any, useful: Any, comment: Any = "", *, source: str = "api") -> VerdictDict:
    """A verdict on one memory of one recall (useful or not for that query). Rating the same
    (recall, memory) again replaces the verdict. Local only: verdicts are never synced."""
    try:
        rid = uuid.UUID(str(recall_id))
    except ValueError:
        raise UserError("recall_id must be the recall_id a retrieval returned (a UUID).") from None
    mid = validation.parse_id(memory_id, "memory_id")
    if not isinstance(useful, bool):
        raise UserError("useful must be true or false.")
    comment = COMMENT.clean(comment)  # the same sentence over MCP and REST
    events = MemoryEvent.objects.filter(recall_id=rid, kind__in=[EventKind.RECALLED, EventKind.CONSIDERED])
    unknown = NotFound(f"unknown recall_id {rid}: rate only what a retrieval returned.")
    first = events.first()
    if first is None:
        raise unknown
    event = events.filter(memory_id=mid).first()
    access.require((event or first).project_id, access.WRITE, missing=unknown)
    if event is None:
        raise UserError(f"memory {mid} was not returned by recall {rid}.")
    text = (comment or "").strip()[:2000]
    validation.refuse_secrets(text)
    query = str(event.metadata.get("query", ""))[:1000]
    embedder, vector = get_embedder(), None
    if query and embeds(embedder):  # outside any transaction; ranking compares new queries with it
        vector = np.asarray(embedder.embed([query], kind="query")[0], dtype=np.float32)
    RecallFeedback.objects.update_or_create(
        recall_id=rid,
        memory_id=mid,
        defaults={
            "project_id": event.project_id,
            "query": query,
            "query_embedder": embedder.id if vector is not None else "",
            "query_vector": vector,
            "useful": useful,
            "comment": text,
            "source": _source(source),
            "user_id": access.acting().user_id,
            "created_at": timezone.now(),
        },
    )
    return {"recall_id": str(rid), "memory_id": mid, "useful": useful, "recorded": True}
