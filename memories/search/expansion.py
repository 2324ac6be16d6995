"""A second look at the candidates (read side, called by queries.search): dates in a question,
and each candidate's place in its session.

A question naming a day, a month or a year ("what did we decide on 13 October 2023?", "in May")
favours memories created then (queries.W_DATE), and the closest ones created then join the
candidates even when neither search returned them. Measured on LoCoMo dev (docs/benchmarks.md);
a session hop, keyword pseudo-relevance feedback and prefix matching were measured too and not kept.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from ..embedding.vector_index import ensure_index
from . import bm25

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
DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_M}(?!\w)", re.I)
MONTH_DAY = re.compile(rf"\b{_M}\s+{_DAY}\b", re.I)
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


def _latest_day(month: int, day: int, now: datetime | None = None) -> Window | None:
    """A day named without a year: its latest occurrence up to today (memories are in the past)."""
    today = (now or datetime.now(UTC)).date()
    for year in (today.year, today.year - 1):
        try:
            if datetime(year, month, day).date() <= today:
                return _day(year, month, day)
        except ValueError:
            return None
    return None


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
    take(DAY_MONTH, lambda m: _latest_day(MONTHS[m[2].lower()], int(m[1])))
    # "may 3 tests fail" is not a date: lower-case "may" before a number is the verb.
    take(MONTH_DAY, lambda m: None if m[1] == "may" else _latest_day(MONTHS[m[1].lower()], int(m[2])))

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
    parts: list[str] = []
    params: list[Any] = []
    for w in windows:
        if isinstance(w, int):
            parts.append("extract(month from m.created_at AT TIME ZONE 'UTC') = %s")
            params.append(w)
        else:
            parts.append("(m.created_at >= to_timestamp(%s) AND m.created_at < to_timestamp(%s))")
            params += [w[0], w[1]]
    return "(" + " OR ".join(parts) + ")", params


# A window holding up to this many of the project's memories is scanned exactly (cheap, and exact);
# past it the HNSW index answers, with the window as a filter of its iterative scan.
WINDOW_EXACT_MAX = 2_000


def nearest_in_windows(
    project_id: str, embedder_id: str, qvec: str, dim: int, windows: list[Window], cats: list[str], k: int
) -> list[int]:
    """The k memories created within `windows` nearest to the question.

    In a project of up to WINDOW_EXACT_MAX memories (the search's cached count) the window is
    scanned exactly. In a larger one the window's ids are read first, stopping one past the bound:
    up to the bound they are scanned exactly; past it (a year holding a 100k-memory project) the
    HNSW index answers, its iterative scan (settings: hnsw.iterative_scan=relaxed_order) walking
    the graph until k rows pass the date filter, which stays cheap while the window is a sizeable
    share of the project, instead of computing every distance in the window."""
    where, params = window_sql(windows)
    if cats:
        where, params = f"{where} AND m.category = ANY(%s)", [*params, cats]
    with connection.cursor() as cur:
        if bm25.project_stats(project_id)[0] > WINDOW_EXACT_MAX:
            cur.execute(
                f"SELECT m.id FROM memories_memory m WHERE m.project_id = %s AND {where} LIMIT %s",
                [project_id, *params, WINDOW_EXACT_MAX + 1],
            )
            ids = [row[0] for row in cur.fetchall()]
            if len(ids) <= WINDOW_EXACT_MAX:
                where, params = "m.id = ANY(%s)", [ids]
            else:
                found = _nearest_by_index(cur, project_id, embedder_id, qvec, dim, where, params, k)
                if len(found) >= k:
                    return found
                # The iterative scan stops at hnsw.max_scan_tuples, counted over every project's
                # vectors of this embedder, so a window that is a small share of them can come back
                # short: then the exact scan of the window below.
        # "+ 0": the ordering expression differs from the index expression, an exact scan.
        cur.execute(
            f"""
            SELECT m.id FROM memories_memory m
            JOIN memories_memoryvector v ON v.memory_id = m.id AND v.embedder = %s AND v.dim = %s
            WHERE m.project_id = %s AND {where}
            ORDER BY ((v.vector::vector({dim})) <=> %s::vector({dim})) + 0
            LIMIT %s
            """,
            [embedder_id, dim, project_id, *params, qvec, k],
        )
        return [row[0] for row in cur.fetchall()]


def _nearest_by_index(
    cur: Any, project_id: str, embedder_id: str, qvec: str, dim: int, where: str, params: list[Any], k: int
) -> list[int]:
    ensure_index(embedder_id, dim)
    cur.execute(
        f"""
        SELECT v.memory_id FROM memories_memoryvector v JOIN memories_memory m ON m.id = v.memory_id
        WHERE v.embedder = %s AND v.project_id = %s AND v.dim = %s AND {where}
        ORDER BY (v.vector::vector({dim})) <=> %s::vector({dim})
        LIMIT %s
        """,
        [embedder_id, project_id, dim, *params, qvec, k],
    )
    return [row[0] for row in cur.fetchall()]


# Sessions read per search for the neighbour bonus: dreaming stores tens of memories per session (LoCoMo ~30), so
# a bound far above that keeps one search from reading an unbounded session.
SESSION_PLACES_MAX = 2000


def session_places(project_id: str, sessions: list[str]) -> dict[int, int]:
    """memory id → its place in its session (0 = stored first), for every memory carrying one of
    these `session:` tags (found through the GIN index on tags)."""
    return {mid: place for mid, (_, place) in session_members(project_id, sessions).items()}


def session_members(project_id: str, sessions: list[str]) -> dict[int, tuple[str, int]]:
    """memory id → (its session, its place there), for every memory carrying one of these tags."""
    wanted = set(sessions)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT m.id, m.tags FROM memories_memory m "
            "WHERE m.project_id = %s AND m.tags && %s::varchar[] ORDER BY m.created_at, m.id LIMIT %s",
            [project_id, sessions, SESSION_PLACES_MAX + 1],
        )
        rows = cur.fetchall()
        if len(rows) > SESSION_PLACES_MAX:
            # A client that tags thousands of memories with one session would make every search read
            # them all; past the bound the neighbour bonus is skipped (ranking falls back to the rest).
            return {}
        members: dict[int, tuple[str, int]] = {}
        counts: dict[str, int] = {}
        for mid, tags in rows:
            session = next(t for t in tags if t in wanted)
            members[mid] = (session, counts.get(session, 0))
            counts[session] = members[mid][1] + 1
        return members


# Developers' shorthand and synonyms for what a team's memories usually say in full: a question
# typed as "how do i push the agent live" or "who gets paged" shares no word, and too little
# meaning for the small models, with "The probe deploys with make ship-it" / "On-call rotates
# weekly". Each group's words join the query (for its vector, its keywords and the cross-encoder)
# when one of its phrases is typed. Common engineering vocabulary only: the families issue 34 names
# (ship / push live / deploy, db / Postgres / database, toggle / flag, pager / on-call), common
# abbreviations, and what the codebase set's tuning prompts missed (docs/benchmarks.md).
JARGON: tuple[tuple[str, str], ...] = (
    (
        r"ship(?:s|ping)?|push(?:es|ing|ed)? (?:\w+ ){0,3}(?:live|to prod\w*)|go(?:es|ing)? live|"
        r"roll(?:s|ing|ed)? (?:\w+ ){0,2}out|rollout|releas\w* to prod\w*|(?:out|live) (?:to|in|into) prod\w*|"
        r"put (?:\w+ ){0,2}in(?:to)? prod\w*",
        "deploy",
    ),
    (r"publish(?:ing|ed)?|cut(?:ting)? (?:a |the )?(?:new )?version|new version|bump(?:ing)? the version", "release"),
    (r"db|dbs|postgres(?:ql)?|pg|psql", "database"),
    (r"toggles?|switch(?:es)?", "feature flag"),
    # "paging" is also pagination ("ROWNUM paging", "paging through results"): not on-call then.
    (
        r"pager|paged|(?<!rownum )(?<!offset )(?<!keyset )(?<!cursor )(?<!result )paging(?! through)|"
        r"on ?call|oncall|wak(?:e|es|ing) (?:\w+ )?up|woken",
        "on-call paged",
    ),
    (r"schema changes?|altering the schema", "migration"),
    (r"throttl\w*", "rate limit"),
    (r"k8s", "kubernetes"),
    (r"py", "python"),
    (r"golang", "go"),
    (r"msgs?", "message"),
    (r"prs?", "pull request"),
    (r"repo", "repository"),
    (r"prod", "production"),
    # Asking for a person: "who do I ask about…", "who looks after…" of a memory naming an owner or a lead. "who" is a
    # stopword to the keyword half and the thesaurus (PostgreSQL's english configuration), so only a pattern sees it.
    # Not "who approves / signs off": "approve review" also names what a process memory does (1 won, 2 lost).
    (
        r"who (?:do|should|can|could|would|shall) (?:i|we) (?:\w+ )?"
        r"(?:ask|talk to|ping|contact|reach out to|go to|speak to|check with|clear it with)|"
        r"who to (?:ask|talk to|ping|contact|go to)|"
        r"who (?:knows|looks after|takes care of|maintains|manages|owns|leads|runs|handles|is in charge|"
        r"is responsible|is running)|who'?s (?:running|in charge|responsible)",
        "owner",
    ),
)
_JARGON = [(re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.I), words) for pattern, words in JARGON]


def with_jargon(query: str) -> str:
    """The query with the full words of the shorthand it uses appended (`JARGON`); unchanged when it
    uses none."""
    present = set(re.findall(r"[\w-]+", query.lower()))
    extra: list[str] = []
    for pattern, words in _JARGON:
        if pattern.search(query):
            extra += [w for w in words.split() if w not in present and w not in extra]
    return f"{query} ({' '.join(extra)})" if extra else query
