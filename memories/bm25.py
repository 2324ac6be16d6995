"""BM25 over Postgres full-text vectors.

Postgres' ts_rank has no inverse document frequency, so a question's common words
(a speaker's name, "when", "did") swamp its rare, telling ones. Here the query is
turned into lexemes with the same `english` configuration as the stored
`search` column, document frequencies come from the GIN index, and each matching
row is scored with BM25 (k1 1.2, b 0.3). Per-project statistics are cached for a
short while: slightly stale counts do not change a ranking in any way that matters.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from django.db import connection

K1 = 1.2
B = 0.3  # short memories: weak length normalisation measured best (docs/benchmarks.md)
STATS_TTL = 60.0
# Lexemes in more than this share of a project's rows carry almost no information;
# leaving them out of the match keeps the candidate set (and the latency) small.
MAX_DF_SHARE = 0.4

_lock = threading.Lock()
_project_stats: dict[str, tuple[float, int, float]] = {}
_df: dict[tuple[str, str], tuple[float, int]] = {}


def query_lexemes(query: str) -> list[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [query[:2000]])
        return [row[0] for row in cur.fetchall()]


def project_stats(project_id: str) -> tuple[int, float]:
    now = time.monotonic()
    with _lock:
        hit = _project_stats.get(project_id)
    if hit and hit[0] > now:
        return hit[1], hit[2]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), coalesce(avg(length(search)), 1) FROM memories_memory WHERE project_id = %s",
            [project_id],
        )
        n, avgdl = cur.fetchone()
    with _lock:
        _project_stats[project_id] = (now + STATS_TTL, int(n), float(avgdl) or 1.0)
    return int(n), float(avgdl) or 1.0


def document_frequencies(project_id: str, lexemes: list[str]) -> dict[str, int]:
    now = time.monotonic()
    out: dict[str, int] = {}
    missing = []
    with _lock:
        for lex in lexemes:
            hit = _df.get((project_id, lex))
            if hit and hit[0] > now:
                out[lex] = hit[1]
            else:
                missing.append(lex)
    if missing:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT l, (SELECT count(*) FROM memories_memory m WHERE m.project_id = %s "
                "AND m.search @@ quote_literal(l)::tsquery) FROM unnest(%s::text[]) AS l",
                [project_id, missing],
            )
            fresh = dict(cur.fetchall())
        with _lock:
            if len(_df) > 50_000:
                _df.clear()
            for lex, df in fresh.items():
                _df[(project_id, lex)] = (now + STATS_TTL, int(df))
        out.update({k: int(v) for k, v in fresh.items()})
    return out


def forget_stats(project_id: str | None = None) -> None:
    with _lock:
        if project_id is None:
            _project_stats.clear()
            _df.clear()
        else:
            _project_stats.pop(project_id, None)


def search(project_id: str, query: str, categories: list[str], k: int) -> dict[int, float]:
    """memory id → BM25 score for the top `k` rows matching any informative query lexeme."""
    lexemes = sorted(set(query_lexemes(query)))
    if not lexemes:
        return {}
    n, avgdl = project_stats(project_id)
    if n == 0:
        return {}
    dfs = document_frequencies(project_id, lexemes)
    weights = {
        lex: math.log(1 + (n - df + 0.5) / (df + 0.5)) for lex, df in dfs.items() if 0 < df <= max(1, MAX_DF_SHARE * n)
    }
    if not weights:
        return {}
    tsquery = " | ".join("'" + lex.replace("'", "''") + "'" for lex in weights)
    cat_sql = "AND m.category = ANY(%s)" if categories else ""
    params: list[Any] = [K1 + 1, K1, B, B, avgdl, list(weights), list(weights.values()), project_id, tsquery]
    if categories:
        params.append(categories)
    params.append(k)
    sql = f"""
        SELECT m.id,
               sum(w.idf * array_length(u.positions, 1) * %s
                   / (array_length(u.positions, 1) + %s * (1 - %s + %s * length(m.search) / %s))) AS score
        FROM memories_memory m
        CROSS JOIN LATERAL unnest(m.search) AS u
        JOIN unnest(%s::text[], %s::float8[]) AS w(lex, idf) ON w.lex = u.lexeme
        WHERE m.project_id = %s AND m.search @@ %s::tsquery {cat_sql}
        GROUP BY m.id
        ORDER BY score DESC, m.id DESC
        LIMIT %s
    """
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return {mid: float(score) for mid, score in cur.fetchall()}
