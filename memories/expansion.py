"""A second look before the final ranking (read side, called by queries.search).

- Dates: a question naming a day, a month or a year ("what did we decide on 13 October 2023?",
  "in May") favours memories created then, and fetches the closest ones created then that neither
  search returned.
- Session hop: the other memories of the sessions of the best first hits join the candidates, so
  the context around a strong hit can rise with it even when it shares no words with the question.

Each step is off when its weight is 0 (queries.W_DATE, queries.SESSION_HOP).
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_M = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_M}\s*,?\s*{_YEAR}\b", re.I)
MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+{_DAY}\s*,?\s*{_YEAR}\b", re.I)
ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
MONTH_YEAR = re.compile(rf"\b{_M}\s*,?\s*{_YEAR}\b", re.I)
MONTH_ONLY = re.compile(rf"\b(?:in|during|of|since|last|early|late|mid)\s+{_M}\b", re.I)
YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I)

Window = tuple[float, float] | int  # (start, end) in epoch seconds, or a month number (any year)


def _day(year: int, month: int, day: int) -> Window | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    # A day either side: the question's day may be the writer's, in another time zone.
    return ((start - timedelta(days=1)).timestamp(), (start + timedelta(days=2)).timestamp())


def date_windows(query: str) -> list[Window]:
    """The times a question names, most precise first; [] when it names none."""
    text = query
    out: list[Window] = []

    def take(pattern: re.Pattern[str], build: Any) -> None:
        nonlocal text
        for m in pattern.finditer(text):
            window = build(m)
            if window is not None:
                out.append(window)
        text = pattern.sub(" ", text)

    take(DAY_MONTH_YEAR, lambda m: _day(int(m[3]), MONTHS[m[2].lower()], int(m[1])))
    take(MONTH_DAY_YEAR, lambda m: _day(int(m[3]), MONTHS[m[1].lower()], int(m[2])))
    take(ISO_DAY, lambda m: _day(int(m[1]), int(m[2]), int(m[3])) if 1 <= int(m[2]) <= 12 else None)

    def month_year(m: re.Match[str]) -> Window:
        year, month = int(m[2]), MONTHS[m[1].lower()]
        start = datetime(year, month, 1, tzinfo=UTC)
        return (start.timestamp(), (start + timedelta(days=monthrange(year, month)[1])).timestamp())

    take(MONTH_YEAR, month_year)
    # "may" alone is usually the verb: a bare month needs a preposition in front of it.
    take(MONTH_ONLY, lambda m: MONTHS[m[1].lower()])
    take(
        YEAR_ONLY,
        lambda m: (
            datetime(int(m[1]), 1, 1, tzinfo=UTC).timestamp(),
            datetime(int(m[1]) + 1, 1, 1, tzinfo=UTC).timestamp(),
        ),
    )
    return out


def in_window(created: float | None, windows: list[Window]) -> bool:
    if created is None:
        return False
    for w in windows:
        if isinstance(w, int):
            if datetime.fromtimestamp(created, UTC).month == w:
                return True
        elif w[0] <= created < w[1]:
            return True
    return False


def window_sql(windows: list[Window]) -> tuple[str, list[Any]]:
    parts, params = [], []
    for w in windows:
        if isinstance(w, int):
            parts.append("extract(month from m.created_at AT TIME ZONE 'UTC') = %s")
            params.append(w)
        else:
            parts.append("(m.created_at >= to_timestamp(%s) AND m.created_at < to_timestamp(%s))")
            params += [w[0], w[1]]
    return "(" + " OR ".join(parts) + ")", params


def nearest_in_windows(
    project_id: str, embedder_id: str, qvec: str, dim: int, windows: list[Window], cats: list[str], k: int
) -> list[int]:
    """The k memories created within `windows` nearest to the question (an exact scan of those rows)."""
    where, params = window_sql(windows)
    cat_sql = "AND m.category = ANY(%s)" if cats else ""
    sql = f"""
        SELECT m.id FROM memories_memory m
        JOIN memories_memoryvector v ON v.memory_id = m.id AND v.embedder = %s AND v.dim = %s
        WHERE m.project_id = %s AND {where} {cat_sql}
        ORDER BY ((v.vector::vector({dim})) <=> %s::vector({dim})) + 0
        LIMIT %s
    """
    with connection.cursor() as cur:
        cur.execute(sql, [embedder_id, dim, project_id, *params, *([cats] if cats else []), qvec, k])
        return [row[0] for row in cur.fetchall()]


def session_members(project_id: str, sessions: list[str], cats: list[str], per_session: int) -> list[int]:
    """Up to `per_session` memories of each of these `session:` tags."""
    if not sessions:
        return []
    cat_sql = "AND m.category = ANY(%s)" if cats else ""
    sql = f"""
        SELECT s.tag, m.id FROM unnest(%s::text[]) AS s(tag)
        CROSS JOIN LATERAL (
            SELECT m.id FROM memories_memory m
            WHERE m.project_id = %s AND m.tags @> ARRAY[s.tag]::varchar[] {cat_sql}
            ORDER BY m.created_at LIMIT %s
        ) m
    """
    with connection.cursor() as cur:
        cur.execute(sql, [sessions, project_id, *([cats] if cats else []), per_session])
        return [row[1] for row in cur.fetchall()]


def feedback_terms(project_id: str, memory_ids: list[int], exclude: set[str], n: int) -> list[str]:
    """Pseudo-relevance feedback: the `n` most telling lexemes of the best first hits (summed
    tf × idf over them) that the question does not already hold."""
    from . import bm25

    if not memory_ids or n <= 0:
        return []
    with connection.cursor() as cur:
        cur.execute("SELECT lexeme, sum(tf) FROM memories_term WHERE memory_id = ANY(%s) GROUP BY lexeme", [memory_ids])
        tf = {lex: float(t) for lex, t in cur.fetchall() if lex not in exclude and len(lex) > 2}
    total, _ = bm25.project_stats(project_id)
    kept = bm25.within_budget(bm25.document_frequencies(project_id, list(tf)), total)
    weight = {lex: tf[lex] * bm25.idf_of(df, total) for lex, df in kept.items() if df > 1}
    return sorted(weight, key=lambda lex: -weight[lex])[:n]


def keyword_scores(project_id: str, lexemes: list[str], cats: list[str], k: int) -> dict[int, float]:
    """memory id → BM25 of these lexemes (already normalised) for the best `k` memories."""
    from . import bm25

    if not lexemes:
        return {}
    n, avgdl = bm25.project_stats(project_id)
    dfs = bm25.document_frequencies(project_id, lexemes)
    lexs = [lex for lex in lexemes if dfs.get(lex)]
    if not lexs:
        return {}
    idf = [bm25.idf_of(dfs[lex], n) for lex in lexs]
    cat_join = "JOIN memories_memory m ON m.id = t.memory_id AND m.category = ANY(%s)" if cats else ""
    sql = f"""
        SELECT t.memory_id, sum(w.idf * t.tf * %s / (t.tf + %s * (1 - %s + %s * t.dl / %s))) AS score
        FROM unnest(%s::text[], %s::float8[]) AS w(lex, idf)
        JOIN memories_term t ON t.lexeme = w.lex {cat_join}
        WHERE t.project_id = %s
        GROUP BY t.memory_id ORDER BY score DESC, t.memory_id DESC LIMIT %s
    """
    params: list[Any] = [bm25.K1 + 1, bm25.K1, bm25.B, bm25.B, avgdl, lexs, idf, *([cats] if cats else [])]
    with connection.cursor() as cur:
        cur.execute(sql, [*params, project_id, k])
        return {mid: float(score) for mid, score in cur.fetchall()}
