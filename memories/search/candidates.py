"""The first stage of retrieval: the candidates and their reads from PostgreSQL (nearest by
cosine, exactly or through HNSW; keyword hits; times, sessions and missing cosines), and the
shape of a search's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection

from ..embedding.vector_index import ensure_index, vector_literal
from ..models import SESSION_TAG
from ..wire import HitOut
from . import bm25

EXACT_SCAN_MAX = 2_000  # projects up to this size are searched exactly (measured: docs/benchmarks.md)
# HNSW candidate list: hnsw.ef_search = 40 (= queries.DENSE_CANDIDATES), set per connection in
# settings.py; with iterative scans it grows by itself when the project filter drops rows.


@dataclass
class Candidate:
    memory_id: int
    similarity: float | None = None
    created: float | None = None  # epoch seconds: cheaper to load than timestamps, all fusion needs
    updated: float | None = None
    dense_rank: int | None = None
    keyword_rank: int | None = None
    keyword_score: float = 0.0
    keyword_strength: float = 1.0  # < 1 in a project too small for idf to tell words apart (bm25)
    coverage: float = 0.0  # share of the query's telling words the memory holds (bm25.search_with_coverage)
    session: str | None = None  # its `session:<id>` tag, if any
    position: int | None = None  # its place in its session (0 = stored first), when W_NEIGHBOUR is on
    dated: bool = False  # created when the question says (expansion.date_windows)
    score: float = 0.0
    judged: float | None = None  # the cross-encoder's logit, when `[retrieval].rerank_depth` judged the candidates
    relevance: float | None = None  # the calibrated gate's probability, when the cross-encoder judged it
    stale: bool = False  # code it cites changed since it was written (anchors.checks.demote)
    # Its text as `details` read it, with its times: the later steps of the same search (asking_last, the gate,
    # the rewordings) read it here instead of each reading memories_memory by id again. None: read it by id.
    content: str | None = None


@dataclass
class SearchResult:
    project_id: str
    recall_id: str | None
    results: list[HitOut] = field(default_factory=list)
    considered: list[HitOut] = field(default_factory=list)


# similarity, created_at, updated_at (epoch s), session, content
Timed = tuple[float | None, float, float, str | None, str]
EPOCHS = "extract(epoch from m.created_at)::float8, extract(epoch from m.updated_at)::float8"
SESSION_SQL = f"(SELECT t FROM unnest(m.tags) t WHERE t LIKE '{SESSION_TAG}%%' LIMIT 1)"


def dense(
    project_id: str, embedder_id: str, qvec: str, dim: int, cats: list[str], k: int, exact: bool | None = None
) -> dict[int, float]:
    """Nearest memories by cosine. Small projects are scanned exactly (their rows via the btree on
    (embedder, project_id)); large ones use the HNSW index with an iterative scan, which stays
    correct under the project filter. In a database shared by many projects, walking the
    shared HNSW graph for a small project would mostly visit other projects' vectors."""
    ensure_index(embedder_id, dim)
    if exact is None:
        exact = bm25.project_stats(project_id)[0] <= EXACT_SCAN_MAX
    # The memories table is joined only to filter by category: the join costs ~1 ms at 100k.
    join, cat_sql = ("JOIN memories_memory m ON m.id = v.memory_id", "AND m.category = ANY(%s)") if cats else ("", "")
    params: list[Any] = [qvec, embedder_id, project_id, dim]
    if cats:
        params.append(cats)
    params += [qvec, k]
    # "+ 0" makes the ordering expression differ from the index expression: an exact scan.
    order = f"((v.vector::vector({dim})) <=> %s::vector({dim})){' + 0' if exact else ''}"
    sql = f"""
        SELECT v.memory_id, (v.vector::vector({dim})) <=> %s::vector({dim}) AS dist
        FROM memories_memoryvector v {join}
        WHERE v.embedder = %s AND v.project_id = %s AND v.dim = %s {cat_sql}
        ORDER BY {order}
        LIMIT %s
    """
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return {mid: _cosine(dist) for mid, dist in rows}


def nearest(
    project_id: str, embedder_id: str, vector: np.ndarray, k: int, exact: bool | None = None
) -> dict[int, float]:
    """The k memories nearest to `vector` → cosine (exact scan or HNSW as `dense` decides)."""
    return dense(project_id, embedder_id, vector_literal(vector), len(vector), [], k, exact=exact)


def nearest_many(
    project_id: str, embedder_id: str, vectors: list[np.ndarray], k: int, exact: bool | None = None
) -> list[dict[int, float]]:
    """`nearest` for several vectors in one statement (a LATERAL search per vector): a batch of
    stores checks its duplicates in one round trip instead of one per item."""
    if not vectors:
        return []
    dim = len(vectors[0])
    ensure_index(embedder_id, dim)
    if exact is None:
        exact = bm25.project_stats(project_id)[0] <= EXACT_SCAN_MAX
    # The vectors are parsed once (a materialised CTE), not once per row compared.
    order = f"((v.vector::vector({dim})) <=> q.vec){' + 0' if exact else ''}"
    sql = f"""
        WITH q AS MATERIALIZED (
            SELECT n, vec::vector({dim}) AS vec FROM unnest(%s::int[], %s::text[]) AS u(n, vec)
        )
        SELECT q.n, hit.memory_id, hit.dist
        FROM q
        CROSS JOIN LATERAL (
            SELECT v.memory_id, (v.vector::vector({dim})) <=> q.vec AS dist
            FROM memories_memoryvector v
            WHERE v.embedder = %s AND v.project_id = %s AND v.dim = %s
            ORDER BY {order}
            LIMIT %s
        ) hit
    """
    out: list[dict[int, float]] = [{} for _ in vectors]
    with connection.cursor() as cur:
        cur.execute(
            sql, [list(range(len(vectors))), [vector_literal(v) for v in vectors], embedder_id, project_id, dim, k]
        )
        for n, mid, dist in cur.fetchall():
            out[n][mid] = _cosine(dist)
    return out


def _cosine(distance: float) -> float:
    return max(0.0, min(1.0, 1.0 - float(distance)))


def keyword(project_id: str, query: str, cats: list[str], k: int) -> dict[int, tuple[float, float, float]]:
    return bm25.search_with_coverage(project_id, query, cats, k)


# Superseded, expired and held memories leave default retrieval at once (Memory.objects.current()).
CURRENT_SQL = "m.superseded_by_id IS NULL AND m.held_reason = '' AND (m.expires_at IS NULL OR m.expires_at > now())"


def details(ids: list[int], cosine_for: list[int], embedder_id: str, qvec: str | None, dim: int) -> dict[int, Timed]:
    """Times, session tag and content of every candidate, and the cosine of those the vector search did not
    return (None without a vector), in one query. Memories deleted meanwhile, superseded or expired
    are absent."""
    if not ids:
        return {}
    # The cosine is a subquery on the (memory_id, embedder) unique index, evaluated only for the rows in
    # `cosine_for`, not a LEFT JOIN (cost only; the same rows and the same floats, at most one vector a
    # memory and embedder). Before the tables' first ANALYZE (a new database, until autovacuum's) the planner
    # took them for nearly empty and ran the join as a nested loop rescanning the embedder's vectors once per
    # memory: under `yullu bench load` on a fresh home 1.2-3.8 ms a call against 0.3 (docs/benchmarks.md,
    # round nineteen).
    cosine = (
        f"CASE WHEN m.id = ANY(%s) THEN (SELECT (v.vector::vector({dim})) <=> %s::vector({dim}) "
        "FROM memories_memoryvector v WHERE v.memory_id = m.id AND v.embedder = %s AND v.dim = %s) END"
        if qvec
        else "NULL"
    )
    # Not prepared: a reused generic plan is chosen without the id arrays, and with statistics from
    # when the project was small it walked every current memory (`superseded_by_id IS NULL`) and
    # filtered by id: PostgreSQL CPU per operation grew with the table (docs/benchmarks.md, round four).
    params: list[list[int] | str | int] = [cosine_for, qvec, embedder_id, dim] if qvec else []
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT m.id, {cosine}, {EPOCHS}, {SESSION_SQL}, m.content FROM memories_memory m "
            f"WHERE m.id = ANY(%s) AND {CURRENT_SQL}",
            [*params, ids],
        )
        return {mid: (None if d is None else _cosine(d), c, u, s, text) for mid, d, c, u, s, text in cur.fetchall()}
