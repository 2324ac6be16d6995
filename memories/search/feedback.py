"""What people said about recalled memories, folded into ranking (docs/contract.md §10 "Feedback").

A verdict (rate_recall) is about one memory *for one query*. A memory judged unhelpful for
questions like the current one sinks; one judged useful rises. "Like" is the cosine between the
current query and the verdict's query (both embedded by the same embedder): verdicts on
unrelated questions do not count. Review ratings and recall counts were measured the same way
and did not help (docs/benchmarks.md, "Feedback in ranking"), so they are not ranking signals.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from django.db import connection

from ..embedding.vector_index import vector_literal

W_VERDICT = 0.3  # score moved by a saturated (tanh) sum of similar-query verdicts
SIMILAR_QUERY = 0.5  # verdicts on queries below this cosine to the current one are ignored


def verdict_scores(memory_ids: list[int], embedder_id: str, qvec: np.ndarray) -> dict[int, float]:
    """memory id → Σ ±(cos − τ)/(1 − τ) over verdicts whose query is like this one (+ useful, − not)."""
    if not memory_ids:
        return {}
    dim = len(qvec)
    literal = vector_literal(qvec)
    # Not prepared: a generic plan for `memory_id = ANY(...)` is chosen without the array and can
    # scan the whole table when its statistics are old (see candidates.details).
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT memory_id, useful, 1 - (query_vector::vector({dim}) <=> %s::vector({dim})) "
            "FROM memories_recallfeedback WHERE memory_id = ANY(%s) AND query_embedder = %s "
            "AND vector_dims(query_vector) = %s",
            [literal, memory_ids, embedder_id, dim],
        )
        rows = cur.fetchall()
    scores: dict[int, float] = defaultdict(float)
    for memory_id, useful, cosine in rows:
        weight = max(0.0, (float(cosine) - SIMILAR_QUERY) / (1.0 - SIMILAR_QUERY))
        scores[memory_id] += weight if useful else -weight
    return dict(scores)


def adjust(scores: dict[int, float], embedder_id: str, qvec: np.ndarray | None) -> dict[int, float]:
    """Each candidate's score change from feedback (absent = unchanged)."""
    if qvec is None or not W_VERDICT:
        return {}
    return {m: W_VERDICT * math.tanh(total) for m, total in verdict_scores(list(scores), embedder_id, qvec).items()}
