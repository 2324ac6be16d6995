"""Counts of memories and vectors read from the tallies the database keeps (migration 0013), instead
of counting a million rows per page: memories per (project, category) with how many are unrated,
vectors per (project, embedder). Every write appends signed rows in its own transaction, so a sum is
as exact as a COUNT in the same snapshot; `fold` merges the rows so a sum reads a few hundred."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import QuerySet, Sum

from access import policy as access

from .models import MemoryTally, VectorTally

FOLD_AT = 5_000  # rows: past this a read folds them first (a store adds one or two)


@dataclass
class MemoryCounts:
    """Memories of the visible projects: totals, per project and per category."""

    memories: int = 0
    unrated: int = 0
    by_project: dict[str, tuple[int, int]] = field(default_factory=dict)  # project -> (memories, unrated)
    by_category: dict[str | None, int] = field(default_factory=dict)
    unrated_by_category: dict[str | None, int] = field(default_factory=dict)


def memory_counts(project_id: str | None = None, role: str = access.READ, install: bool = False) -> MemoryCounts:
    """The memories the caller may see with `role` (one project's, if given; the whole install's with
    `install`, for health checks that show no project), counted from the tallies."""
    _fold_if_long(MemoryTally)
    qs: QuerySet[MemoryTally] = MemoryTally.objects.all()
    if not install:
        qs = access.only_visible(qs, role=role)
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    rows = qs.values("project_id", "category").annotate(m=Sum("memories"), u=Sum("unrated"))
    out = MemoryCounts()
    projects: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if not r["m"]:
            continue
        out.memories += r["m"]
        out.unrated += r["u"]
        projects[r["project_id"]][0] += r["m"]
        projects[r["project_id"]][1] += r["u"]
        out.by_category[r["category"]] = out.by_category.get(r["category"], 0) + r["m"]
        if r["u"]:
            out.unrated_by_category[r["category"]] = out.unrated_by_category.get(r["category"], 0) + r["u"]
    out.by_project = {pid: (m, u) for pid, (m, u) in projects.items()}
    return out


def vector_count(embedder_id: str, project_id: str | None = None, install: bool = False) -> int:
    """Vectors of `embedder_id` in the visible projects (one project's, if given; all with `install`).
    A vector carries its memory's project id (written together), so this is the number of visible
    memories it embeds."""
    _fold_if_long(VectorTally)
    qs = VectorTally.objects.filter(embedder=embedder_id)
    if not install:
        qs = access.only_visible(qs)
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return int(qs.aggregate(n=Sum("vectors"))["n"] or 0)


# table: (key columns, sums, counted columns, which sums are kept: a key down to zero goes)
FOLDS = {
    MemoryTally: ("project_id, category", "sum(memories), sum(unrated)", "memories, unrated", "sum(memories) <> 0"),
    VectorTally: ("project_id, embedder", "sum(vectors)", "vectors", "sum(vectors) <> 0"),
}


def fold(model: type[MemoryTally] | type[VectorTally]) -> None:
    """Merge a tally's rows into one per key. One statement: the rows it deletes are the rows it sums
    (a write committing meanwhile keeps its rows for the next fold), so no count is lost or doubled,
    and no writer waits (they only append)."""
    keys, sums, columns, kept = FOLDS[model]
    table = model._meta.db_table
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            f"WITH gone AS (DELETE FROM {table} RETURNING *) "  # noqa: S608 (names from FOLDS, no input)
            f"INSERT INTO {table} ({keys}, {columns}) SELECT {keys}, {sums} FROM gone GROUP BY {keys} HAVING {kept}"
        )


def _fold_if_long(model: type[MemoryTally] | type[VectorTally]) -> None:
    with connection.cursor() as cur:
        cur.execute(f"SELECT 1 FROM {model._meta.db_table} OFFSET %s LIMIT 1", [FOLD_AT])  # noqa: S608
        long = cur.fetchone() is not None
    if long:
        fold(model)
