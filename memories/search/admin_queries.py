"""Read-side helpers for the review UI: per-project health, sources, recall history, retrieval pages,
the memory graph. Nothing here writes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, DateTimeField, Exists, ExpressionWrapper, F, OuterRef, Q, QuerySet, Value
from django.db.models.expressions import OrderBy

from access import policy as access

from ..embedding.embedders import embeds, get_embedder
from ..models import EventKind, Memory, MemoryEvent, MemoryLink, RecallFeedback

# How a memory came to be, from the `source` its create event recorded.
SOURCES: dict[str, tuple[str, ...]] = {
    "dream": ("dream",),
    # `yullu memories add` is typed by a person at a terminal (walk 16 saw its memory as "from assistant").
    "person": ("admin", "cli"),
    "assistant": ("mcp", "rest", "api", "import", "hook"),
    "teammate": ("reconcile", "sync"),
}


RARE_SOURCE = 2_000  # memories; a source with fewer is filtered by their ids


def newest_first_unindexed(field: str) -> OrderBy:
    """`-field` as an order no index serves (the time plus a zero interval), for a list filtered by
    source: read in index order and stopped at a page, the per-memory test walked every memory when
    the source's memories are few among the newest (8.8 s for "teammate" at 1M); a sort after the join
    costs about a second whatever the source."""
    shifted = ExpressionWrapper(F(field) + Value(timedelta(0)), output_field=DateTimeField())
    return OrderBy(shifted, descending=True)


def source_filter(qs: QuerySet[Memory], source: str) -> QuerySet[Memory]:
    """The memories whose create event names `source`. A rare source (a person, dreaming) is looked up
    first and filtered by id: the admin's lists read memories in order from an index and stop at a
    page, so a per-memory test for a source that matches nothing walked every memory (8.5 s at 1M).
    A common one keeps the per-memory test, which finds a page's worth at once."""
    if source not in SOURCES:
        return qs
    created = MemoryEvent.objects.filter(kind=EventKind.CREATED, metadata__source__in=SOURCES[source])
    few = list(created.values_list("memory_id", flat=True)[: RARE_SOURCE + 1])  # the source index
    if len(few) <= RARE_SOURCE:
        return qs.filter(pk__in=[pk for pk in few if pk is not None])
    return qs.filter(Exists(created.filter(memory=OuterRef("pk"))))


def sources(memory_ids: list[int]) -> dict[int, str]:
    raw = dict(
        MemoryEvent.objects.filter(memory_id__in=memory_ids, kind=EventKind.CREATED).values_list(
            "memory_id", "metadata__source"
        )
    )
    label = {s: name for name, values in SOURCES.items() for s in values}
    return {pk: label.get(str(src), str(src or "unknown")) for pk, src in raw.items()}


def recall_history(memory_ids: list[int], per_memory: int = 5) -> dict[int, dict[str, Any]]:
    """For each memory: how often it was sent / fell below the floor, and its last few recalls."""
    out: dict[int, dict[str, Any]] = {pk: {"sent": 0, "considered": 0, "recent": []} for pk in memory_ids}
    counts = (
        MemoryEvent.objects.filter(memory_id__in=memory_ids, kind__in=[EventKind.RECALLED, EventKind.CONSIDERED])
        .values("memory_id", "kind")
        .annotate(n=Count("id"))
    )
    for row in counts:
        out[row["memory_id"]]["sent" if row["kind"] == EventKind.RECALLED else "considered"] = row["n"]
    recent = MemoryEvent.objects.filter(memory_id__in=memory_ids, kind=EventKind.RECALLED).order_by("-created_at")
    for ev in recent[: per_memory * max(1, len(memory_ids))]:
        if ev.memory_id is None:  # never: filtered on memory_id above
            continue
        bucket = out[ev.memory_id]["recent"]
        if len(bucket) < per_memory:
            bucket.append(
                {
                    "query": ev.metadata.get("query", ""),
                    "similarity": ev.metadata.get("similarity"),
                    "rank": ev.metadata.get("rank"),
                    "at": ev.created_at,
                }
            )
    return out


HEADS_CHUNK = 2_000  # recall-log rows read at a time (a recall is ~10 rows)


def _recall_heads(qs: QuerySet[MemoryEvent]) -> Iterator[dict[str, Any]]:
    """Recalls newest first, one row each (its query, project and time), read from the recall
    log's time index a chunk at a time: a page costs the rows up to it, not the whole log
    (which grows by ~10 rows a search: 18 s for this page at 100k memories before)."""
    seen: set[Any] = set()
    ordered = qs.order_by("-created_at", "-id")
    after: tuple[Any, int] | None = None
    while True:
        page = (
            ordered
            if after is None
            else ordered.filter(Q(created_at__lt=after[0]) | Q(created_at=after[0], id__lt=after[1]))
        )
        rows = list(page.values("id", "recall_id", "project_id", "metadata__query", "created_at")[:HEADS_CHUNK])
        for row in rows:
            if row["recall_id"] not in seen:
                seen.add(row["recall_id"])
                yield dict(row)
        if len(rows) < HEADS_CHUNK:
            return
        after = (rows[-1]["created_at"], rows[-1]["id"])


def retrieval_page(project_id: str | None, page: int, per_page: int = 20) -> tuple[list[dict[str, Any]], bool]:
    """One page of recalls, newest first, grouped by recall_id. A hook that fires twice for one prompt
    (the same query in the same project within a minute) shows once, with the repeat counted."""
    qs = MemoryEvent.objects.filter(kind__in=[EventKind.RECALLED, EventKind.CONSIDERED], recall_id__isnull=False)
    qs = access.only_visible(qs)
    if project_id:
        access.require(project_id, access.READ)
        qs = qs.filter(project_id=project_id)
    start = (page - 1) * per_page
    collapsed = _collapsed_recalls(qs, start + per_page)
    window = collapsed[start : start + per_page]
    _fill_recalls(qs, window)
    return window, start + per_page < len(collapsed)


def _collapsed_recalls(qs: QuerySet[MemoryEvent], needed: int) -> list[dict[str, Any]]:
    """Recall groups, newest first, a repeat of the previous one folded into it; read until the
    group after the first `needed` is closed."""
    collapsed: list[dict[str, Any]] = []
    for h in _recall_heads(qs):
        prev = collapsed[-1] if collapsed else None
        if (
            prev
            and prev["query"] == (h["metadata__query"] or "")
            and prev["project_id"] == h["project_id"]
            and prev["oldest"] - h["created_at"] <= timedelta(minutes=1)
        ):
            prev["recall_ids"].append(h["recall_id"])
            prev["oldest"] = h["created_at"]
            continue
        if len(collapsed) > needed:  # the group after this page is closed: enough read
            break
        collapsed.append(
            {
                "recall_ids": [h["recall_id"]],
                "project_id": h["project_id"],
                "query": h["metadata__query"] or "",
                "at": h["created_at"],
                "oldest": h["created_at"],
            }
        )
    return collapsed


def _fill_recalls(qs: QuerySet[MemoryEvent], window: list[dict[str, Any]]) -> None:
    """Each group's recall that sent something, with its sent and dropped memories and verdicts."""
    ids = [rid for g in window for rid in g["recall_ids"]]
    events = qs.filter(recall_id__in=ids).select_related("memory").order_by("created_at")
    verdicts: dict[tuple[str, int | None], bool | None] = {
        (str(r), m): useful
        for r, m, useful in RecallFeedback.objects.filter(recall_id__in=ids).values_list(
            "recall_id", "memory_id", "useful"
        )
    }
    by_recall: dict[Any, list[MemoryEvent]] = {}
    for ev in events:
        by_recall.setdefault(ev.recall_id, []).append(ev)
    for g in window:
        # Show the recall that sent something (the hook's empty twin adds nothing).
        best = max(g["recall_ids"], key=lambda r: sum(e.kind == EventKind.RECALLED for e in by_recall.get(r, [])))
        g["recall_id"] = str(best)
        g["repeats"] = len(g["recall_ids"]) - 1
        g["sent"], g["dropped"] = [], []
        for ev in by_recall.get(best, []):
            item = {
                "id": ev.memory_id,
                "content": ev.memory.content if ev.memory else "(deleted)",
                "category": ev.memory.category if ev.memory else None,
                "similarity": ev.metadata.get("similarity"),
                "rank": ev.metadata.get("rank"),
                "verdict": verdicts.get((str(best), ev.memory_id)),
            }
            g["sent" if ev.kind == EventKind.RECALLED else "dropped"].append(item)
        g["sent"].sort(key=lambda i: i["rank"] or 0)


def graph(project_id: str, threshold: float = 0.5, per_node: int = 5, limit: int = 2000) -> dict[str, Any]:
    """Nodes (memories, coloured by category) and edges: each memory's `per_node` nearest neighbours
    above `threshold`, plus the supersedes / contradicts / related links between them."""
    access.require(project_id, access.READ)
    memories = list(
        Memory.objects.filter(project_id=project_id).order_by("-updated_at").values("id", "content", "category")[:limit]
    )
    nodes = [
        {"id": m["id"], "label": m["content"][:140], "category": m["category"] or "uncategorised"} for m in memories
    ]
    edges: list[dict[str, Any]] = []
    embedder = get_embedder()
    ids = [m["id"] for m in memories]
    if ids and embeds(embedder):
        edges.extend(_similar_edges(project_id, embedder.id, ids, threshold, per_node))
    edges.extend(_link_edges(ids))
    return {"project_id": project_id, "nodes": nodes, "edges": edges, "threshold": threshold}


def _similar_edges(
    project_id: str, embedder_id: str, ids: list[int], threshold: float, per_node: int
) -> list[dict[str, Any]]:
    """Each memory's `per_node` nearest neighbours above `threshold`. The project's vectors are read
    once and compared in one matrix product: at 2,000 memories that is a few milliseconds of numpy,
    where 2,000 separate index lookups took seconds (bench/admin_graph.py)."""
    keys, matrix = _vectors(project_id, embedder_id, ids)
    if len(keys) < 2:
        return []
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    sims = matrix @ matrix.T
    np.fill_diagonal(sims, -1.0)
    k = min(per_node, len(keys) - 1)
    nearest = np.argpartition(sims, len(keys) - k, axis=1)[:, len(keys) - k :]
    edges, seen = [], set()
    for i, row in enumerate(nearest):
        for j in row:
            sim = float(sims[i, j])
            pair = (min(keys[i], keys[j]), max(keys[i], keys[j]))
            if sim >= threshold and pair not in seen:
                seen.add(pair)
                edges.append({"source": keys[i], "target": keys[j], "kind": "similar", "similarity": round(sim, 3)})
    return edges


def _vectors(project_id: str, embedder_id: str, ids: list[int]) -> tuple[list[int], np.ndarray]:
    """The memories' vectors as one float32 matrix, read as raw float4 arrays in binary: pgvector's
    text form cost 1.2 ms a vector to parse (2.3 s of a 2,000-node graph at 100k memories)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT memory_id, dim, vector::real[] FROM memories_memoryvector "
            "WHERE project_id = %s AND embedder = %s AND memory_id = ANY(%s)",
            [project_id, embedder_id, ids],
        )
        rows = cur.fetchall()
    dims = {r[1] for r in rows}
    if len(dims) > 1:  # one embedder, one dimension; a mixed set cannot be compared
        rows = [r for r in rows if r[1] == max(dims)]
    return [r[0] for r in rows], np.asarray([r[2] for r in rows], dtype=np.float32).reshape(len(rows), -1)


def _link_edges(ids: list[int]) -> list[dict[str, Any]]:
    """supersedes / contradicts / related links between the shown memories."""
    rows = MemoryLink.objects.filter(from_memory_id__in=ids, to_memory_id__in=ids).values_list(
        "from_memory_id", "to_memory_id", "kind"
    )
    return [{"source": a, "target": b, "kind": kind} for a, b, kind in rows]
