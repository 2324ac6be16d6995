"""BM25 over Postgres full-text vectors.

Postgres' ts_rank has no inverse document frequency, so a question's common words
(a speaker's name, "when", "did") swamp its rare, telling ones. Here the query is
turned into lexemes with the same `english` configuration as the stored `search`
column; document frequencies and term frequencies come from `memories_term`
(postings kept by a trigger, migration 0003), and rows are scored with BM25
(k1 1.2, b 0.3).

Per-process caches, shared by every request and blind to other processes' writes, so they hold
only what may lag without hiding a memory: the project's size and mean length (for STATS_TTL, and
re-read at once when a word turns out to be in more memories than the cached size) and positive
document frequencies. Both only weight the score; which memories hold a word is read from the postings
on every search. A zero — a word no memory holds yet, an empty project — is never cached: it would
hide the memory that adds it. (Re-reading size and mean length per search would cost 35 ms at
100k memories, where the whole search takes 7 ms; docs/benchmarks.md, "Per-process caches".)
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from django.db import connection

from yullu_core.database import fetch_prepared

from . import synonyms

K1 = 1.2
B = 0.3  # short memories: weak length normalisation measured best (docs/benchmarks.md)
STATS_TTL = 60.0
# Lexemes in more than this share of a project's rows carry almost no information;
# leaving them out of the match keeps the candidate set (and the latency) small. Small projects
# keep every lexeme (MIN_DF_CUT): in a project of two memories that both say "deploy", "deploy"
# is still the telling word of "how do we deploy?".
MAX_DF_SHARE = 0.4
MIN_DF_CUT = 50
# Query coverage (the relevance gate's keyword evidence) weighs each query lexeme by an idf computed
# as if the project held at least this many memories, so it does not vanish in a tiny project.
COVERAGE_MIN_N = 100
# Below this many memories the fusion scales keyword evidence down by how much weaker the idfs are
# (search_with_coverage): in a project of two memories, a word one of them holds says little.
ATTAINABLE_MIN_N = 20
# At most this many postings are scanned per query; the commonest remaining terms are dropped
# first (they carry the least weight), which bounds latency on large projects.
POSTINGS_BUDGET = 5_000
# A question word's synonym (synonyms.py) counts this much of what the word itself would, in the
# BM25 score and in coverage: "release" finds the memory saying "deploy", below one saying "release".
SYNONYM_WEIGHT = 0.6

_lock = threading.Lock()
_project_stats: dict[str, tuple[float, int, float]] = {}
_df: dict[tuple[str, str], tuple[float, int]] = {}


def query_lexemes(query: str) -> list[str]:
    # Prepared (no table, nothing to choose): planning it took as long as running it.
    return [row[0] for row in fetch_prepared("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [query[:2000]])]


def forget(project_id: str) -> None:
    """Drop a project's cached statistics (after a bulk load that bypassed the write path)."""
    with _lock:
        _project_stats.pop(project_id, None)
        for key in [k for k in _df if k[0] == project_id]:
            del _df[key]


def cached_count(project_id: str) -> int:
    """The project's memory count if a fresh one is cached, else 0 (no query)."""
    with _lock:
        hit = _project_stats.get(project_id)
    return hit[1] if hit and hit[0] > time.monotonic() else 0


def project_stats(project_id: str, *, at_least: int = 0) -> tuple[int, float]:
    """(memory count, mean search-vector length); a cached pair is used while fresh and while its
    count is at least `at_least` (a document frequency just read: a smaller count is stale)."""
    now = time.monotonic()
    with _lock:
        hit = _project_stats.get(project_id)
    if hit and hit[0] > now and hit[1] >= at_least:
        return hit[1], hit[2]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), coalesce(avg(length(search)), 1) FROM memories_memory WHERE project_id = %s",
            [project_id],
        )
        n, avgdl = cur.fetchone()
    if n:
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
                "SELECT lexeme, count(*) FROM memories_term WHERE project_id = %s AND lexeme = ANY(%s) GROUP BY lexeme",
                [project_id, missing],
            )
            fresh = {lex: 0 for lex in missing} | {lex: int(n) for lex, n in cur.fetchall()}
        with _lock:
            if len(_df) > 50_000:
                _df.clear()
            for lex, df in fresh.items():
                if df:  # a word no memory holds yet is asked again: the next write may add it
                    _df[(project_id, lex)] = (now + STATS_TTL, df)
        out.update(fresh)
    return out


def within_budget(dfs: dict[str, int], n: int) -> dict[str, int]:
    """The informative lexemes, rarest first, until their postings fill the scan budget."""
    kept: dict[str, int] = {}
    total = 0
    for lex, df in sorted(dfs.items(), key=lambda kv: kv[1]):
        if df == 0 or df > max(MIN_DF_CUT, MAX_DF_SHARE * n):
            continue
        if kept and total + df > POSTINGS_BUDGET:
            break
        kept[lex] = df
        total += df
    return kept


def coverage_weight(df: int, n: int) -> float:
    """A lexeme's weight in query coverage: idf against max(n, COVERAGE_MIN_N) memories."""
    n = max(n, COVERAGE_MIN_N)
    return idf_of(df, n)


def _synonym_rows(
    expansions: dict[str, set[str]], known: dict[str, int], n: int, total: float, budget: int
) -> list[tuple[str, float, float, str]]:
    """(lexeme, idf, coverage share, question word) for the synonyms worth a probe: held by some
    memory, not too common, within what is left of the postings budget; discounted by SYNONYM_WEIGHT."""
    rows = []
    for word, adds in sorted(expansions.items()):
        for lex in sorted(adds, key=lambda lex: known.get(lex, 0)):
            df = known.get(lex, 0)
            if df == 0 or df > max(MIN_DF_CUT, MAX_DF_SHARE * n) or df > budget:
                continue
            budget -= df
            cover = SYNONYM_WEIGHT * coverage_weight(known.get(word, 0), n) / total
            rows.append((lex, SYNONYM_WEIGHT * idf_of(df, n), cover, word))
    return rows


def idf_of(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def search(project_id: str, query: str, categories: list[str], k: int) -> dict[int, float]:
    """memory id → BM25 score for the top `k` rows holding any informative query lexeme."""
    return {mid: score for mid, (score, _, _) in search_with_coverage(project_id, query, categories, k).items()}


def search_with_coverage(
    project_id: str, query: str, categories: list[str], k: int
) -> dict[int, tuple[float, float, float]]:
    """memory id → (BM25 score, query coverage) for the top `k` rows holding any informative query lexeme.

    Coverage is the share of the query's lexemes (weighted by `coverage_weight`) that the memory
    holds: 1.0 when every telling word of the question is in it, whatever the project's size."""
    lexemes = sorted(set(query_lexemes(query)))
    if not lexemes:
        return {}
    n, avgdl = project_stats(project_id)
    if n == 0:
        return {}
    expansions = synonyms.expand(set(lexemes)) if SYNONYM_WEIGHT > 0 else {}
    extra = sorted({lex for adds in expansions.values() for lex in adds})
    known = document_frequencies(project_id, lexemes + extra)
    if max(known.values()) > n:  # memories were added since the count was cached
        n, avgdl = project_stats(project_id, at_least=max(known.values()))
    dfs = {lex: known[lex] for lex in lexemes}
    kept = within_budget(dfs, n)
    total = sum(coverage_weight(df, n) for df in dfs.values()) or 1.0
    # One row per (lexeme, the question word it stands for); a memory's score and coverage take the
    # best row per question word, so holding "deploy" and "release" counts once.
    rows = [(lex, idf_of(df, n), coverage_weight(df, n) / total, lex) for lex, df in kept.items()]
    rows += _synonym_rows(expansions, known, n, total, budget=POSTINGS_BUDGET - sum(kept.values()))
    if not rows:
        return {}
    # How telling these words can be here: their idf in this project over their idf in a project of
    # ATTAINABLE_MIN_N memories. 1.0 from that size on; in a project of two memories a word held by
    # one of them is weak evidence, and the fusion scales its keyword share down accordingly.
    basis = kept or {lex: known[lex] for lex, *_ in rows}
    strength = sum(idf_of(df, n) for df in basis.values()) / sum(
        idf_of(df, max(n, ATTAINABLE_MIN_N)) for df in basis.values()
    )
    cat_join = "JOIN memories_memory m ON m.id = t.memory_id AND m.category = ANY(%s)" if categories else ""
    # One index probe per kept lexeme, whatever the statistics say. As a plain join the planner,
    # believing a project absent from its statistics (new, or grown since the last ANALYZE) holds
    # ~1 row, walked all the project's postings and filtered by lexeme: 3.2 ms and ~1,900 buffers per
    # search under load instead of ~0.2 ms and ~10 (docs/benchmarks.md, "SQL per operation").
    # OFFSET 0 keeps the subquery from being flattened back into that join.
    sql = f"""
        SELECT memory_id, sum(score) AS score, sum(coverage) AS coverage FROM (
            SELECT t.memory_id, w.src,
                   max(w.idf * t.tf * %s / (t.tf + %s * (1 - %s + %s * t.dl / %s))) AS score,
                   max(w.cover) AS coverage
            FROM unnest(%s::text[], %s::float8[], %s::float8[], %s::text[]) AS w(lex, idf, cover, src)
            CROSS JOIN LATERAL (
                SELECT memory_id, tf, dl FROM memories_term WHERE project_id = %s AND lexeme = w.lex OFFSET 0
            ) t
            {cat_join}
            GROUP BY t.memory_id, w.src
        ) per_word
        GROUP BY memory_id
        ORDER BY score DESC, memory_id DESC
        LIMIT %s
    """
    # Parameters follow the SQL text: the scoring constants come before the unnest arrays.
    lex_col, idf_col, cover_col, src_col = (list(col) for col in zip(*rows, strict=True))
    params: list[Any] = [K1 + 1, K1, B, B, avgdl, lex_col, idf_col, cover_col, src_col, project_id]
    params += [categories] if categories else []
    params += [k]
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return {mid: (float(score), min(1.0, float(cov)), strength) for mid, score, cov in cur.fetchall()}
