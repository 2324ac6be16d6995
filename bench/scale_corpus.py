"""The corpus `yullu bench scale` grows: one large project (half the corpus, at most BIG_MAX
memories) and the rest spread over SPREAD_PROJECTS projects with a skew, dated over the last year,
each memory with its `created` activity row and, per ten memories, one logged search of ten
candidates; text from bench.latency's vocabulary, vectors clustered by topic, all written with COPY
or one INSERT … SELECT, then indexed and analysed (settle)."""

from __future__ import annotations

from django.db import connection

BIG = "scale/big"
SPREAD_PROJECTS = 300
BIG_MAX = 100_000


def big_share(size: int) -> int:
    return min(BIG_MAX, size // 2)


def _fill(start: int, stop: int, big_from: int, big_to: int) -> None:
    """Rows start..stop-1 of the corpus: those in [big_from, big_to) go to the large project,
    the others to one of the spread projects (index = 300 * u^2: a few big, a long tail)."""
    from bench.latency import SKEW, VOCABULARY

    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO memories_memory (uuid, project_id, content, tags, category, created_at, updated_at,
                                         rating_comment)
            SELECT gen_random_uuid(),
                   CASE WHEN g >= %s AND g < %s THEN %s
                        ELSE 'scale/p' || floor(%s * power(random(), 2))::int END,
                   (SELECT string_agg('w' || floor(%s * power(random(), %s))::int, ' ')
                    FROM generate_series(1, 10 + (g %% 11)) s WHERE g = g),
                   '{}', (ARRAY['process','decision','gotcha','domain','style',NULL])[1 + g %% 6],
                   t, t, ''
            FROM (SELECT g, now() - random() * interval '365 days' AS t FROM generate_series(%s, %s - 1) g) src
            """,
            [big_from, big_to, BIG, SPREAD_PROJECTS, VOCABULARY, SKEW, start, stop],
        )


def _activity_and_recalls(first_new_id: int) -> None:
    """A `created` activity row per new memory, and per ten of them one search of ten candidates."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO memories_memoryevent (kind, memory_id, memory_uuid, project_id, metadata, created_at) "
            "SELECT 'created', id, uuid, project_id, '{\"source\": \"bench\"}', created_at "
            "FROM memories_memory WHERE id >= %s",
            [first_new_id],
        )
        cur.execute(
            """
            INSERT INTO memories_memoryevent (kind, memory_id, memory_uuid, project_id, recall_id, metadata,
                                              created_at)
            SELECT CASE WHEN rn <= 5 THEN 'recalled' ELSE 'considered' END, id, uuid, project_id,
                   md5(project_id || (rn0 / 10)::text)::uuid,
                   jsonb_build_object('query', 'how do we w' || (rn0 / 10), 'similarity', 0.5, 'rank', rn),
                   created_at
            FROM (SELECT id, uuid, project_id, created_at, row_number() OVER () AS rn0,
                         1 + (row_number() OVER ()) %% 10 AS rn
                  FROM memories_memory WHERE id >= %s) m
            """,
            [first_new_id],
        )


def grow(target: int, have: int, embedder_id: str, dim: int) -> None:
    """Grow the corpus from `have` to `target` memories, vectors by binary COPY."""
    from pgvector.psycopg import register_vector

    from bench.latency import clustered

    with connection.cursor() as cur:
        cur.execute("SELECT coalesce(max(id), 0) + 1 FROM memories_memory")
        first_id = cur.fetchone()[0]
    big_have, big_target = big_share(have), big_share(target)
    step = 50_000
    for lo in range(have, target, step):
        hi = min(target, lo + step)
        # the large project's new rows are the first (big_target - big_have) of this growth
        _fill(lo, hi, have, have + (big_target - big_have))
        print(f"  {hi:>9,} memories written", flush=True)
    _activity_and_recalls(first_id)
    conn = connection.connection
    register_vector(conn)
    copy_sql = (
        "COPY memories_memoryvector (memory_id, project_id, embedder, dim, vector, created_at) "
        "FROM STDIN WITH (FORMAT BINARY)"
    )
    with connection.cursor() as cur:
        cur.execute("SELECT id, project_id, created_at FROM memories_memory WHERE id >= %s ORDER BY id", [first_id])
        rows = cur.fetchall()
    with conn.cursor() as raw, raw.copy(copy_sql) as copy:
        copy.set_types(["int8", "varchar", "varchar", "int4", "vector", "timestamptz"])
        for chunk in range(0, len(rows), 10_000):
            part = rows[chunk : chunk + 10_000]
            block = clustered(len(part), dim, seed=first_id + chunk)
            for (mid, pid, created), vec in zip(part, block, strict=True):
                copy.write_row((mid, pid, embedder_id, dim, vec, created))


def settle(embedder_id: str, dim: int) -> None:
    from memories.embedding.vector_index import ensure_index
    from memories.search import bm25

    print("  building the HNSW index and analysing …", flush=True)
    with connection.cursor() as cur:
        # A million vectors' graph (~2 GB) fits: a build that outgrows maintenance_work_mem goes on
        # many times slower. The parallel workers share it through /dev/shm.
        cur.execute("SET maintenance_work_mem = '4GB'")
        cur.execute("SET max_parallel_maintenance_workers = 2")
    ensure_index(embedder_id, dim)
    with connection.cursor() as cur:
        for table in ("memories_memory", "memories_memoryvector", "memories_term", "memories_memoryevent"):
            cur.execute(f"VACUUM ANALYZE {table}")
    bm25.forget(BIG)
