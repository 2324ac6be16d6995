"""The read side: hybrid retrieval, listings and stats.

Retrieval fuses three signals into one ranking:
- dense: cosine similarity from pgvector (HNSW, iterative scan so a project filter stays correct);
- keyword: Postgres full-text rank of an OR query over the question's lexemes;
- recency: newer memories win ties;
- session: memories tagged with the same `session:<id>` (a conversation, as a client or the
  benchmark tags them) lend each other part of their score, so the context around a strong hit
  rises with it. (Wall-clock closeness was tried instead; its gain was an artefact of 1-second
  benchmark turns.)
- dates: a question naming a day, month or year favours memories created then (memories.expansion).
`similarity` on every hit is the plain cosine in [0, 1]. What is returned is decided by a relevance
gate calibrated per embedder (`Judged`): a cross-encoder (memories.rerank) reads the question with
each of the first stage's best few candidates, and its score, the cosine and the keyword coverage
make one calibrated probability; an unrelated prompt returns nothing. No cosine threshold alone
separates relevant from unrelated (docs/benchmarks.md). `min_similarity` replaces the gate by a
plain cosine floor.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from memories.trivial import is_acknowledgement
from yullu_core.errors import Unavailable
from yullu_core.metrics import timed_recall

from . import bm25, expansion, rerank
from .anchors import store as anchor_store
from .durability import losable
from .embedders import Embedder, embed_query, embeds, get_embedder
from .models import CATEGORIES, SESSION_TAG, EventKind, Memory, MemoryEvent
from .serializers import HIT_FIELDS, HitOut, hit_to_wire
from .vector_index import ensure_index, vector_literal

log = logging.getLogger(__name__)
Mode = Literal["hybrid", "dense", "keyword"]


# Fusion, chosen on the LoCoMo dev split (docs/benchmarks.md, bench/tune_fusion.py).
FUSION = "score"
W_KEYWORD = 0.6
KEYWORD_POWER = 2.0  # (BM25 / best)²: only near-best keyword matches move a hit much
W_RECENCY = 0.05
W_CONTIGUITY = 0.3  # share of the best same-session candidate's score a candidate gains …
W_NEIGHBOUR = 0.1  # … plus this share of the best one stored at most NEIGHBOUR_TURNS before or after it
NEIGHBOUR_TURNS = 2
RRF_K = 20
# Dates named in a question (memories.expansion), chosen on LoCoMo dev's tuning questions.
W_DATE = 0.3  # gained by a memory created on the day / month / year the question names
DATE_CANDIDATES = 10  # nearest memories created then, added when the question names a date
# Candidates per side. 40 nearest vectors recall as well as 60 on LoCoMo (0.730 either way) and
# let the HNSW search stop sooner; keyword candidates are cheap, so 60.
DENSE_CANDIDATES = 40
KEYWORD_CANDIDATES = 60
EXACT_SCAN_MAX = 2_000  # projects up to this size are searched exactly (measured: docs/benchmarks.md)
# HNSW candidate list: hnsw.ef_search = 40 (= DENSE_CANDIDATES), set per connection in settings.py;
# with iterative scans it grows by itself when the project filter drops rows.


@dataclass(frozen=True)
class Gate:
    """When a candidate is relevant enough to return, calibrated per embedder (cosine scales differ).

    A hit clears the gate when its cosine alone reaches `cosine`, or when cosine + `weight` × coverage
    reaches `combined` — coverage being the idf-weighted share of the question's telling words the
    memory holds (bm25.search_with_coverage), which stays meaningful in a project of one memory."""

    cosine: float
    combined: float
    weight: float

    def clears(self, c: Candidate) -> bool:
        sim = c.similarity or 0.0
        return sim >= self.cosine or sim + self.weight * c.coverage >= self.combined


@dataclass(frozen=True)
class Judged:
    """The gate on a calibrated relevance probability: p = sigmoid(w_logit × cross-encoder logit +
    w_cosine × cosine + w_coverage × coverage + bias), fitted (logistic regression) on the tuning
    half of the codebase set with bench/calibrate.py, so p reads as how likely the memory
    answers the question. A candidate is returned when p ≥ threshold.

    Only the first stage's best `depth` candidates can be returned. The cross-encoder costs
    milliseconds per pair, so it runs only for the unsure: its logit is bounded
    (rerank.LOGIT_RANGE), so cosine and coverage alone often settle p on one side of the threshold
    whatever the model would say."""

    w_logit: float
    w_cosine: float
    w_coverage: float
    bias: float
    threshold: float
    fallback: Gate  # when the cross-encoder cannot load
    depth: int = 3
    clauses: bool = True  # a long prompt's logit is its best clause's (rerank.Judge.best_logits)
    # Below this cosine a candidate is not judged and not returned: on the tuning split no answer
    # cleared the gate below 0.26, and half of the unrelated prompts' candidates sit under 0.11.
    min_cosine: float = 0.2

    def probability(self, logit: float, c: Candidate) -> float:
        z = self.w_logit * logit + self.w_cosine * (c.similarity or 0.0) + self.w_coverage * c.coverage + self.bias
        return 1.0 / (1.0 + math.exp(-z))

    def settled(self, c: Candidate) -> bool | None:
        """True / False when the first stage's evidence decides alone, None when the model must judge."""
        low, high = rerank.LOGIT_RANGE
        if (c.similarity or 0.0) < self.min_cosine:
            return False
        if self.probability(low, c) >= self.threshold:
            return True
        if self.probability(high, c) < self.threshold:
            return False
        return None


# Fitted and chosen on the tuning half of the codebase set (bench/calibrate.py); held-out
# results and LoCoMo in docs/benchmarks.md. Embedders nobody calibrated keep the cosine gate below.
JUDGED = {
    "local:all-MiniLM-L6-v2": Judged(
        w_logit=0.338,
        w_cosine=20.644,
        w_coverage=3.648,
        bias=-2.935,
        threshold=0.7,
        fallback=Gate(cosine=0.4, combined=0.5, weight=0.4),  # issue 15's calibration (docs/benchmarks.md)
    ),
}
# The cosine + coverage gate, for embedders without a calibrated judge (remote models): strict on
# cosine, the same keyword evidence.
GATES: dict[str, Gate] = {}
DEFAULT_GATE = Gate(cosine=0.5, combined=0.6, weight=0.4)
# Written to every config.toml before the gate existed; read as "not set" so upgraded installs get the gate.
LEGACY_DEFAULT_FLOOR = 0.45


def gate_for(embedder_id: str) -> Gate | Judged:
    return JUDGED.get(embedder_id) or GATES.get(embedder_id, DEFAULT_GATE)


def warm_up_gate() -> None:
    """Load the active embedder's cross-encoder now (web start), not in the first search."""
    if isinstance(gate_for(get_embedder().id), Judged):
        rerank.judge.logits("warm up", ["warm up"])


def configured_floor(retrieval: dict[str, Any] | None = None) -> float | None:
    """`[retrieval].min_similarity` (of `retrieval`, else the global config) when someone set one;
    None means the calibrated gate."""
    value = (retrieval or settings.YULLU["retrieval"])["min_similarity"]
    return None if value is None or value == LEGACY_DEFAULT_FLOOR else float(value)


def is_trivial(query: str) -> bool:
    return is_acknowledgement(query)


def clean_categories(categories: Iterable[str] | None) -> list[str]:
    """OR of the given categories; unknown values are dropped."""
    if not categories:
        return []
    return sorted({c.strip().lower() for c in categories if isinstance(c, str) and c.strip().lower() in CATEGORIES})


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
    relevance: float | None = None  # the calibrated gate's probability, when the cross-encoder judged it


@dataclass
class SearchResult:
    project_id: str
    recall_id: str | None
    results: list[HitOut] = field(default_factory=list)
    considered: list[HitOut] = field(default_factory=list)


Timed = tuple[float | None, float, float, str | None]  # similarity, created_at, updated_at (epoch s), session
EPOCHS = "extract(epoch from m.created_at)::float8, extract(epoch from m.updated_at)::float8"
SESSION_SQL = f"(SELECT t FROM unnest(m.tags) t WHERE t LIKE '{SESSION_TAG}%%' LIMIT 1)"


def _dense(
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
    """The k memories nearest to `vector` → cosine (exact scan or HNSW as `_dense` decides)."""
    return _dense(project_id, embedder_id, vector_literal(vector), len(vector), [], k, exact=exact)


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


def _keyword(project_id: str, query: str, cats: list[str], k: int) -> dict[int, tuple[float, float, float]]:
    return bm25.search_with_coverage(project_id, query, cats, k)


# Superseded, expired and held memories leave default retrieval at once (Memory.objects.current()).
CURRENT_SQL = "m.superseded_by_id IS NULL AND m.held_reason = '' AND (m.expires_at IS NULL OR m.expires_at > now())"


def _details(ids: list[int], cosine_for: list[int], embedder_id: str, qvec: str | None, dim: int) -> dict[int, Timed]:
    """Times and session tag of every candidate, and the cosine of those the vector search did not
    return (None without a vector), in one query. Memories deleted meanwhile, superseded or expired
    are absent."""
    if not ids:
        return {}
    cosine = f"(v.vector::vector({dim})) <=> %s::vector({dim})" if qvec else "NULL"
    # Not prepared: a reused generic plan is chosen without the id arrays, and with statistics from
    # when the project was small it walked every current memory (`superseded_by_id IS NULL`) and
    # filtered by id: PostgreSQL CPU per operation grew with the table (docs/benchmarks.md, round four).
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT m.id, {cosine}, {EPOCHS}, {SESSION_SQL} FROM memories_memory m "
            "LEFT JOIN memories_memoryvector v ON v.memory_id = m.id AND v.embedder = %s AND v.dim = %s "
            f"AND v.memory_id = ANY(%s) WHERE m.id = ANY(%s) AND {CURRENT_SQL}",
            [*([qvec] if qvec else []), embedder_id, dim, cosine_for, ids],
        )
        return {mid: (None if d is None else _cosine(d), c, u, sess) for mid, d, c, u, sess in cur.fetchall()}


def fuse(
    cands: dict[int, Candidate],
    mode: Mode,
    *,
    method: str | None = None,
    w_keyword: float | None = None,
    w_recency: float | None = None,
    w_contiguity: float | None = None,
) -> list[Candidate]:
    """One ranking from dense, keyword, recency and session signals.

    "score": cosine + w_keyword × (strength × BM25 / best BM25)² + w_recency × recency, strength being
    1 except in a project of fewer than 20 memories, where it is the query words' idf there over their
    idf in 20 memories (bm25.ATTAINABLE_MIN_N), + W_DATE when created when the question says; then each candidate
    gains w_contiguity × the best score among the other candidates tagged with its session.
    "rrf": reciprocal-rank fusion of the dense and keyword ranks (+ recency), kept for comparison.
    """
    # Unset weights are read at call time, so a benchmark can vary the module's settings.
    method = FUSION if method is None else method
    w_keyword = W_KEYWORD if w_keyword is None else w_keyword
    w_recency = W_RECENCY if w_recency is None else w_recency
    w_contiguity = W_CONTIGUITY if w_contiguity is None else w_contiguity
    best_kw = max((c.keyword_score for c in cands.values()), default=0.0) or 1.0
    recency = _recency(cands)
    dense_on, kw_on = mode != "keyword", mode != "dense"
    for c in cands.values():
        rec = w_recency * recency.get(c.memory_id, 0.0)
        if method == "rrf":
            dense = 1.0 / (RRF_K + c.dense_rank) if c.dense_rank is not None and dense_on else 0.0
            kw = 1.0 / (RRF_K + c.keyword_rank) if c.keyword_rank is not None and kw_on else 0.0
            c.score = dense + w_keyword * kw + rec / RRF_K
        else:
            dense = (c.similarity or 0.0) if dense_on else 0.0
            # Relative to the best candidate, but a tiny project's literal match is weak evidence
            # and must not outrank a much closer meaning (strength, bm25.search_with_coverage).
            kw = (c.keyword_strength * c.keyword_score / best_kw) ** KEYWORD_POWER if kw_on else 0.0
            c.score = dense + w_keyword * kw + rec + (W_DATE if c.dated else 0.0)
    if w_contiguity:
        _add_contiguity(cands, w_contiguity)
    return sorted(cands.values(), key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id))


def _add_contiguity(cands: dict[int, Candidate], weight: float) -> None:
    """Each candidate gains `weight` × the best score among the other candidates of its session, and
    W_NEIGHBOUR × the best among those stored at most NEIGHBOUR_TURNS memories before or after it
    there (the turn after the one that names the concert says what happened at it)."""
    sessions: dict[str, list[Candidate]] = {}
    for c in cands.values():
        if c.session is not None:
            sessions.setdefault(c.session, []).append(c)
    for members in sessions.values():
        if len(members) < 2:
            continue
        ranked = sorted(members, key=lambda c: -c.score)
        best, second = ranked[0].score, ranked[1].score
        base = {c.memory_id: c.score for c in members}
        for c in members:
            c.score += weight * (second if c is ranked[0] else best)
            if W_NEIGHBOUR and c.position is not None:
                near = [
                    base[o.memory_id]
                    for o in members
                    if o is not c and o.position is not None and abs(o.position - c.position) <= NEIGHBOUR_TURNS
                ]
                c.score += W_NEIGHBOUR * max(near, default=0.0)


def _recency(cands: dict[int, Candidate]) -> dict[int, float]:
    """1.0 for the newest candidate, decaying with a 30-day half-life (times in epoch seconds)."""
    updated = {mid: c.updated for mid, c in cands.items() if c.updated is not None}
    if not updated:
        return {}
    newest = max(updated.values())
    return {mid: math.pow(0.5, (newest - at) / (30 * 86400)) for mid, at in updated.items()}


@dataclass(frozen=True)
class Embedded:
    """A query already embedded, with the embedder that made the vector (the benchmarks embed
    their questions in batches, and time the search alone)."""

    embedder: Embedder
    vector: np.ndarray | None


@dataclass(frozen=True)
class Ranked:
    """One search's best candidates, in order, and the relevance test (rows not loaded yet)."""

    ordered: list[Candidate]
    relevant: Callable[[Candidate], bool]


@timed_recall
def search(
    project_id: str,
    query: str,
    *,
    limit: int = 5,
    categories: Iterable[str] | None = None,
    min_similarity: float | None = None,
    mode: Mode = "hybrid",
    log: bool = True,
    embedded: Embedded | None = None,
) -> SearchResult:
    """Search one project and log the recall (`log=False` for the benchmarks and merged searches).
    `min_similarity` (else `[retrieval].min_similarity`) is a plain cosine floor replacing the
    embedder's calibrated gate; None uses the gate."""
    result = SearchResult(project_id=project_id, recall_id=None)
    found = _ranked(project_id, query, limit, categories, min_similarity, mode, embedded)
    if found is None:
        return result
    ordered, memories = _rows(found.ordered, found.relevant, limit)
    _apply_floor(result, ordered, memories, found.relevant, limit)
    anchor_store.annotate(project_id, result.results)
    if log and (result.results or result.considered):
        result.recall_id = str(uuid.uuid4())
        _log_recall(result, query)
    return result


@timed_recall
def preview(project_id: str, query: str, *, limit: int) -> SearchResult:
    """The admin's search box: the best hits whatever the gate, each flagged `clears_floor`
    (whether a recall would send it); never logged."""
    result = SearchResult(project_id=project_id, recall_id=None)
    found = _ranked(project_id, query, limit, None, None, "hybrid", None)
    if found is not None:
        ordered, memories = _rows(found.ordered, _anything, limit)
        _apply_floor(result, ordered, memories, _anything, limit, preview=found.relevant)
        anchor_store.annotate(project_id, result.results)
    return result


def _ranked(
    project_id: str,
    query: str,
    limit: int,
    categories: Iterable[str] | None,
    min_similarity: float | None,
    mode: Mode,
    embedded: Embedded | None,
) -> Ranked | None:
    """The fused, feedback-adjusted best candidates of a search; None when there is nothing to search."""
    if is_trivial(query) or not _has_memories(project_id):
        return None
    floor = configured_floor() if min_similarity is None else min_similarity
    cats = clean_categories(categories)
    embedder = embedded.embedder if embedded else get_embedder()
    qvec = embedded.vector if embedded else None
    if qvec is None and mode != "keyword" and embeds(embedder):
        qvec = embed_query(embedder, query)
    ranked = {c.memory_id: c for c in rank(project_id, query, qvec, embedder.id, cats, mode)}
    if mode == "hybrid" and ranked and W_DATE:
        second_look(project_id, query, qvec, embedder.id, cats, ranked)
    if mode == "hybrid" and W_NEIGHBOUR:
        _place_in_sessions(project_id, ranked)
    ordered = with_feedback(fuse(ranked, mode), embedder.id, qvec)[: max(limit * 4, 20)]
    depth = int(settings.YULLU["retrieval"].get("rerank_depth") or 0)
    if depth and mode == "hybrid":
        ordered = reordered(query, ordered, depth)
    ordered = anchor_store.demote(project_id, ordered)  # cited code changed: ranked lower (docs/contract.md §12)
    gate = gate_for(embedder.id)
    if floor is None and isinstance(gate, Judged) and qvec is not None:
        try:
            return Ranked(ordered, judged_test(query, ordered, gate))
        except Unavailable as exc:  # the model's package is missing: the cosine gate, not a failed search
            log.warning("%s Falling back to the cosine gate.", exc)
            gate = gate.fallback
    return Ranked(ordered, relevance_test(floor, gate if isinstance(gate, Gate) else DEFAULT_GATE, qvec is not None))


def _anything(c: Candidate) -> bool:
    return True


def _shown(ordered: list[Candidate], relevant: Callable[[Candidate], bool], limit: int) -> list[Candidate]:
    """The candidates a search shows: the first `limit` relevant ones (its hits), and up to `limit`
    of the others ranked before the last of those (logged as considered)."""
    shown: list[Candidate] = []
    hits = others = 0
    for c in ordered:
        if hits >= limit:
            break
        if relevant(c):
            hits += 1
            shown.append(c)
        elif others < limit:
            others += 1
            shown.append(c)
    return shown


def _rows(
    ordered: list[Candidate], relevant: Callable[[Candidate], bool], limit: int
) -> tuple[list[Candidate], dict[int, Memory]]:
    """Whole rows for the candidates a search shows, and only those (ORM rows are the costly part
    of the read; the ranking keeps 20 candidates, a search shows at most 2 × limit). A memory
    deleted since the ranking drops out and the next candidate takes its place, as if it had never
    been a candidate."""
    memories: dict[int, Memory] = {}
    while True:
        missing = [c.memory_id for c in _shown(ordered, relevant, limit) if c.memory_id not in memories]
        if not missing:
            return ordered, memories
        memories.update(Memory.objects.only(*HIT_FIELDS).in_bulk(missing))
        ordered = [c for c in ordered if c.memory_id in memories or c.memory_id not in missing]


def with_feedback(ordered: list[Candidate], embedder_id: str, qvec: np.ndarray | None) -> list[Candidate]:
    """Verdicts on similar past queries move a candidate up or down (memories.feedback)."""
    from .feedback import adjust

    delta = adjust({c.memory_id: c.score for c in ordered}, embedder_id, qvec)
    if not delta:
        return ordered
    for c in ordered:
        c.score += delta.get(c.memory_id, 0.0)
    return sorted(ordered, key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id))


def _has_memories(project_id: str) -> bool:
    # A cached positive count saves a query; a stale one only means searching an emptied project.
    return bm25.cached_count(project_id) > 0 or Memory.objects.filter(project_id=project_id).exists()


def rank(
    project_id: str, query: str, qvec: np.ndarray | None, embedder_id: str, cats: list[str], mode: Mode
) -> list[Candidate]:
    """Candidates from both sides, each with its cosine (when embedded) and its times; memories
    deleted meanwhile drop out."""
    cands: dict[int, Candidate] = {}
    literal = vector_literal(qvec) if qvec is not None else None
    dim = len(qvec) if qvec is not None else 0
    if literal is not None and mode != "keyword":
        dense = _dense(project_id, embedder_id, literal, dim, cats, DENSE_CANDIDATES)
        for n, (mid, sim) in enumerate(sorted(dense.items(), key=lambda kv: -kv[1]), start=1):
            cands[mid] = Candidate(mid, similarity=sim, dense_rank=n)
    if mode != "dense":
        keyword = _keyword(project_id, query, cats, KEYWORD_CANDIDATES)
        for n, (mid, (score, coverage, strength)) in enumerate(keyword.items(), start=1):
            c = cands.setdefault(mid, Candidate(mid))
            c.keyword_rank, c.keyword_score, c.coverage, c.keyword_strength = n, score, coverage, strength
    missing = [mid for mid, c in cands.items() if c.similarity is None]
    found = _details(list(cands), missing, embedder_id, literal, dim)
    for mid, c in list(cands.items()):
        if mid not in found:
            del cands[mid]
            continue
        cosine, c.created, c.updated, c.session = found[mid]
        if c.similarity is None:
            c.similarity = cosine
    return list(cands.values())


def _place_in_sessions(project_id: str, ranked: dict[int, Candidate]) -> None:
    """Each candidate's place in its session, for the sessions with two candidates or more (one
    query, through the GIN index on tags)."""
    seen: dict[str, int] = {}
    for c in ranked.values():
        if c.session is not None:
            seen[c.session] = seen.get(c.session, 0) + 1
    sessions = sorted(s for s, n in seen.items() if n > 1)
    if sessions:
        for mid, place in expansion.session_places(project_id, sessions).items():
            if mid in ranked:
                ranked[mid].position = place


def second_look(
    project_id: str,
    query: str,
    qvec: np.ndarray | None,
    embedder_id: str,
    cats: list[str],
    ranked: dict[int, Candidate],
) -> None:
    """When the question names a date (memories.expansion), flag the candidates created then and add,
    in place, the memories created then that are nearest to it."""
    windows = expansion.date_windows(query)
    if not windows:
        return
    if qvec is not None:
        literal, dim = vector_literal(qvec), len(qvec)
        near = expansion.nearest_in_windows(project_id, embedder_id, literal, dim, windows, cats, DATE_CANDIDATES)
        new = [mid for mid in near if mid not in ranked]
        for mid, (sim, created, updated, session) in _details(new, new, embedder_id, literal, dim).items():
            ranked[mid] = Candidate(mid, similarity=sim, created=created, updated=updated, session=session)
    for c in ranked.values():
        c.dated = expansion.in_window(c.created, windows)


# `[retrieval].rerank_depth`: the best N candidates are reordered by fused score + W_RERANK × the
# cross-encoder's logit. Chosen on LoCoMo dev's tuning questions (docs/benchmarks.md): N = 20,
# weight 0.05 (recall@10 0.760 -> 0.792 there); off by default, for its CPU.
W_RERANK = 0.05


def reordered(query: str, ordered: list[Candidate], depth: int) -> list[Candidate]:
    """The first `depth` candidates reordered with the cross-encoder (one batch, cached), the rest as
    they were. Without the model's package, the order is left as it was."""
    top, rest = ordered[:depth], ordered[depth:]
    texts = dict(Memory.objects.filter(pk__in=[c.memory_id for c in top]).values_list("pk", "content"))
    top = [c for c in top if c.memory_id in texts]
    try:
        logits = rerank.judge.logits(query, [texts[c.memory_id] for c in top])
    except Unavailable as exc:
        log.warning("%s Search order left as it was.", exc)
        return ordered
    for c, logit in zip(top, logits, strict=True):
        c.score += W_RERANK * logit
    return sorted(top, key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id)) + rest


def judged_test(query: str, ordered: list[Candidate], gate: Judged) -> Callable[[Candidate], bool]:
    """The calibrated gate over the first `gate.depth` candidates: the ones whose cosine and coverage
    do not settle it are judged by the cross-encoder, in one batch (cached per question and text).
    A candidate without a vector yet (backfill pending) is kept on its keyword evidence, as before."""
    top = ordered[: gate.depth]
    passed = {c.memory_id for c in top if c.similarity is not None and gate.settled(c)}
    unsure = [c for c in top if c.similarity is not None and gate.settled(c) is None]
    if unsure:
        texts = dict(Memory.objects.filter(pk__in=[c.memory_id for c in unsure]).values_list("pk", "content"))
        unsure = [c for c in unsure if c.memory_id in texts]
        judge = rerank.judge.best_logits if gate.clauses else rerank.judge.logits
        logits = judge(query, [texts[c.memory_id] for c in unsure]) if unsure else []
        for c, logit in zip(unsure, logits, strict=True):
            c.relevance = gate.probability(logit, c)
            if c.relevance >= gate.threshold:
                passed.add(c.memory_id)

    def test(c: Candidate) -> bool:
        return c.similarity is None or c.memory_id in passed

    return test


def relevance_test(floor: float | None, gate: Gate, embedded: bool) -> Callable[[Candidate], bool]:
    """Whether a candidate may be returned: a plain cosine floor when one is given, else the gate.
    A memory with no vector yet (backfill pending, or keyword-only mode) can only arrive through a
    keyword match, and is kept on that evidence."""

    def test(c: Candidate) -> bool:
        if c.similarity is None or not embedded:
            return True
        return c.similarity >= floor if floor is not None else gate.clears(c)

    return test


def _apply_floor(
    result: SearchResult,
    ordered: list[Candidate],
    memories: dict[int, Memory],
    relevant: Callable[[Candidate], bool],
    limit: int,
    preview: Callable[[Candidate], bool] | None = None,
) -> None:
    """Keep the best `limit` hits that pass `relevant`; up to `limit` of the others are logged as
    considered. `preview` flags each hit with whether it would pass (the admin's search box)."""
    for c in _shown(ordered, relevant, limit):  # the same choice `_rows` loaded the rows for
        if relevant(c):
            hit = hit_to_wire(memories[c.memory_id], c.similarity, len(result.results) + 1)
            if preview is not None:
                hit["clears_floor"] = preview(c)
            result.results.append(hit)
        else:
            result.considered.append(hit_to_wire(memories[c.memory_id], c.similarity, 0))


EVENT_COLUMNS = "kind, memory_id, memory_uuid, project_id, recall_id, metadata, created_at"
# One row, typed: an INSERT … SELECT does not take its column types from the table.
EVENT_ROW = "(%s, %s::bigint, %s::uuid, %s, %s::uuid, %s::jsonb, %s::timestamptz)"


def _insert_events(rows: list[list[Any]]) -> None:
    """Recall-log rows (values in EVENT_COLUMNS order) in one multi-row INSERT, committed without
    waiting for the WAL flush (they may be lost in a crash; memories.durability). Outside a
    transaction it is one statement, one round trip: `set_config(…, true)` lasts until the end of
    the statement's own implicit transaction, so only its commit is relaxed — instead of BEGIN,
    SET LOCAL, INSERT and COMMIT, four round trips on every retrieve. Inside a caller's transaction,
    `losable()` (a savepoint, the caller's commit untouched). Django's bulk_create cost ~6 % of the
    web process's CPU per retrieve (docs/benchmarks.md); the rows are simple and the table is ours."""
    params = [value for row in rows for value in row]
    table = MemoryEvent._meta.db_table
    values = ", ".join([EVENT_ROW] * len(rows))
    if connection.in_atomic_block or not connection.get_autocommit():
        with losable(), connection.cursor() as cur:
            cur.execute(f"INSERT INTO {table} ({EVENT_COLUMNS}) VALUES {values}", params)
        return
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {table} ({EVENT_COLUMNS}) SELECT * FROM (VALUES {values}) v "
            "WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL",
            params,
        )


def _log_recall(result: SearchResult, query: str) -> None:
    """Best effort: a memory deleted between the search and this insert is logged without its FK;
    a logging failure never fails the search itself."""
    now = timezone.now()
    rows = [
        [
            kind,
            hit["id"],
            hit["uuid"],
            result.project_id,
            result.recall_id,
            json.dumps({"query": query[:1000], "similarity": hit["similarity"], "rank": hit["rank"]}),
            now,
        ]
        for kind, hits in ((EventKind.RECALLED, result.results), (EventKind.CONSIDERED, result.considered))
        for hit in hits
    ]
    try:
        _insert_events(rows)
        return
    except IntegrityError:  # the memory FK is checked at commit
        alive = set(Memory.objects.filter(pk__in=[r[1] for r in rows]).values_list("pk", flat=True))
    for row in rows:
        row[1] = row[1] if row[1] in alive else None
    try:
        _insert_events(rows)
    except IntegrityError:
        log.warning("could not write the recall log for %s", result.recall_id)
