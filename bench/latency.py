"""Search latency at scale: 1k → 10k → 100k memories in one project.

Run: `yullu bench latency [--sizes 1000,10000,100000] [--queries 200] [--dated] [--out PATH]`

Synthetic memories (text drawn with a Zipf-like skew from a 20,000-word vocabulary; vectors
clustered around 1,000 topic directions, as real embeddings cluster by subject) are bulk-loaded,
so the scale curve measures search, not ingest. Query vectors are drawn around the same topics,
so each has true near neighbours; reported latency is server-side search time without the query
embedding. It also reports how many of the exact nearest vectors the HNSW search returns. With
`--dated` every query names the current year ("… in 2026"), a window that holds the whole
project, so each search also runs the date-window search (memories.search.expansion); it then reports how
many of the window's exact nearest memories that search returns. The throwaway project is
deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from django.db import connection

from memories.embedding.embedders import get_embedder
from memories.embedding.vector_index import ensure_index, vector_literal
from memories.models import Memory, MemoryEvent
from memories.search import bm25, candidates, expansion, queries

TOPICS = 1_000
# Per-dimension noise around a topic: with 384 dimensions a vector keeps cos ≈ 0.7 to its topic
# and ≈ 0.5 to its topic's other vectors, ≈ 0 to the rest (MiniLM: related texts 0.4–0.8).
SPREAD = 0.05
VOCABULARY = 20_000  # pseudo-words w0 … w19999, drawn with a Zipf-like skew as in natural text
SKEW = 3.0  # word index = floor(V * u^SKEW): a few very common words, a long tail of rare ones


def clustered(count: int, dim: int, seed: int) -> Any:
    """Unit vectors near randomly chosen topic directions (the topics are the same for every seed)."""
    import numpy as np

    topics = np.random.default_rng(3).normal(size=(TOPICS, dim))
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    block = topics[rng.integers(0, TOPICS, size=count)] + rng.normal(scale=SPREAD, size=(count, dim))
    return (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float32)


def populate(project_id: str, n: int, dim: int, embedder_id: str, start: int) -> None:
    """Add rows start..n-1: text generated in SQL, clustered unit vectors written with binary COPY."""
    from django.utils import timezone
    from pgvector.psycopg import register_vector

    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO memories_memory (uuid, project_id, content, tags, category, created_at, updated_at,
                                         rating_comment)
            SELECT gen_random_uuid(), %s,
                   (SELECT string_agg('w' || floor(%s * power(random(), %s))::int, ' ')
                    FROM generate_series(1, 10 + (g %% 11)) s WHERE g = g),
                   '{}', NULL, now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval, ''
            FROM generate_series(%s, %s - 1) g
            """,
            [project_id, VOCABULARY, SKEW, start, n],
        )
        cur.execute(
            "SELECT id FROM memories_memory m WHERE project_id = %s AND NOT EXISTS ("
            "SELECT 1 FROM memories_memoryvector v WHERE v.memory_id = m.id AND v.embedder = %s)",
            [project_id, embedder_id],
        )
        ids = [row[0] for row in cur.fetchall()]
    conn = connection.connection
    register_vector(conn)
    now = timezone.now()
    copy_sql = (
        "COPY memories_memoryvector (memory_id, project_id, embedder, dim, vector, created_at) "
        "FROM STDIN WITH (FORMAT BINARY)"
    )
    with conn.cursor() as raw, raw.copy(copy_sql) as copy:
        copy.set_types(["int8", "varchar", "varchar", "int4", "vector", "timestamptz"])
        for chunk in range(0, len(ids), 10_000):
            block = clustered(len(ids[chunk : chunk + 10_000]), dim, seed=start + chunk + 7)
            for mid, vec in zip(ids[chunk : chunk + 10_000], block, strict=True):
                copy.write_row((mid, project_id, embedder_id, dim, vec, now))
    with connection.cursor() as cur:  # settle: no background vacuum during the measurement
        cur.execute("VACUUM ANALYZE memories_memory")
        cur.execute("VACUUM ANALYZE memories_memoryvector")
        cur.execute("VACUUM ANALYZE memories_term")


def sample_queries(count: int) -> list[str]:
    """Queries drawn from the same word distribution as the memories (6 words each)."""
    rng = random.Random(11)
    return [" ".join(f"w{int(VOCABULARY * rng.random() ** SKEW)}" for _ in range(6)) for _ in range(count)]


def measure(project_id: str, qvecs: list[Any], n_queries: int, suffix: str = "") -> dict[str, float]:
    latencies = []
    embedder = get_embedder()
    texts = [q + suffix for q in sample_queries(len(qvecs))]
    for i in range(n_queries):
        q = texts[i % len(texts)]
        started = time.perf_counter()
        queries.search(
            project_id,
            q,
            limit=5,
            min_similarity=0.0,
            log=False,
            embedded=queries.Embedded(embedder, qvecs[i % len(qvecs)]),
        )
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    return {
        "p50": round(statistics.median(latencies), 2),
        "p95": round(latencies[int(0.95 * len(latencies)) - 1], 2),
        "mean": round(statistics.fmean(latencies), 2),
    }


def index_recall(project_id: str, embedder_id: str, qvecs: list[Any]) -> float:
    """Share of the exact nearest DENSE_CANDIDATES that the HNSW search (as configured) also returns."""
    k, shares = queries.DENSE_CANDIDATES, []
    for vec in qvecs:
        approx = candidates.nearest(project_id, embedder_id, vec, k, exact=False)
        exact = candidates.nearest(project_id, embedder_id, vec, k, exact=True)
        shares.append(len(set(approx) & set(exact)) / max(1, len(exact)))
    return round(statistics.fmean(shares), 3)


def window_recall(project_id: str, embedder_id: str, qvecs: list[Any], question: str) -> float:
    """Share of the exact nearest DATE_CANDIDATES memories in the question's date window that the
    date-window search (as configured) returns."""
    windows = expansion.date_windows(question)
    k, shares, bound = queries.DATE_CANDIDATES, [], expansion.WINDOW_EXACT_MAX
    for vec in qvecs:
        literal = vector_literal(vec)
        found = expansion.nearest_in_windows(project_id, embedder_id, literal, len(vec), windows, [], k)
        expansion.WINDOW_EXACT_MAX = 10**9
        try:
            exact = expansion.nearest_in_windows(project_id, embedder_id, literal, len(vec), windows, [], k)
        finally:
            expansion.WINDOW_EXACT_MAX = bound
        shares.append(len(set(found) & set(exact)) / max(1, len(exact)))
    return round(statistics.fmean(shares), 3)


def uses_hnsw(project_id: str, embedder_id: str, dim: int) -> bool:
    with connection.cursor() as cur:
        cur.execute(
            f"EXPLAIN SELECT memory_id FROM memories_memoryvector WHERE embedder = %s AND project_id = %s "
            f"ORDER BY (vector::vector({dim})) <=> %s::vector({dim}) LIMIT 60",
            [embedder_id, project_id, "[" + ",".join(["0.01"] * dim) + "]"],
        )
        return any("memvec_hnsw" in row[0] for row in cur.fetchall())


def rebuild_index(embedder_id: str, dim: int, drop: bool) -> None:
    """Bulk loads are far faster without the HNSW index; it is rebuilt (in parallel) afterwards."""
    from memories.embedding import vector_index

    name = vector_index.index_name(embedder_id, dim)
    with connection.cursor() as cur:
        if drop:
            cur.execute(f"DROP INDEX IF EXISTS {name}")
            vector_index.forget_cache()
            return
        cur.execute("SET maintenance_work_mem = '1GB'")
        cur.execute("SET max_parallel_maintenance_workers = 2")
    ensure_index(embedder_id, dim)


def main(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    embedder = get_embedder()
    dim = len(embedder.embed(["how do we deploy a hotfix release"], kind="query")[0])
    qvecs = list(clustered(50, dim, seed=99))
    print(
        "note: the HNSW index of the active embedder is dropped and rebuilt around each bulk load; "
        "run this on a development database.",
        flush=True,
    )
    project = f"latency-{uuid.uuid4().hex[:8]}"
    suffix = f" in {time.gmtime().tm_year}" if getattr(args, "dated", False) else ""
    random.seed(7)
    report: dict[str, Any] = {"embedder": embedder.id, "sizes": {}}
    have = 0
    try:
        for size in sizes:
            started = time.perf_counter()
            rebuild_index(embedder.id, dim, drop=True)
            populate(project, size, dim, embedder.id, have)
            rebuild_index(embedder.id, dim, drop=False)
            bm25.forget(project)  # else the previous size's cached count would pick an exact scan
            have = size
            fill_s = time.perf_counter() - started
            measure(project, qvecs, 20, suffix)  # warm caches
            result = measure(project, qvecs, args.queries, suffix)
            result["hnsw_used"] = uses_hnsw(project, embedder.id, dim)
            result["hnsw_recall"] = index_recall(project, embedder.id, qvecs)
            if suffix:
                result["window_recall"] = window_recall(project, embedder.id, qvecs, suffix)
            report["sizes"][str(size)] = result
            print(
                f"{size:>7} memories (filled in {fill_s:.0f}s): search p50 {result['p50']} ms, "
                f"p95 {result['p95']} ms, HNSW used: {result['hnsw_used']}, "
                f"HNSW recall@{queries.DENSE_CANDIDATES} vs exact: {result['hnsw_recall']}",
                flush=True,
            )
    finally:
        Memory.objects.filter(project_id=project).delete()
        MemoryEvent.objects.filter(project_id=project).delete()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report
