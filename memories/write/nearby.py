"""What a new text is near in its project: the memory it duplicates (the same text as a reader
sees it, or the same fact by cosine and literals), else the related ones a store reports back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection
from django.utils import timezone

from ..embedding.embedders import Embedder, get_embedder
from ..models import CURRENT_WHERE, Memory
from ..wire import Similar
from .duplicates import MAX_SIMILAR, same_fact_skeletons, same_fact_tokens, skeleton, thresholds
from .validation import CleanMemory, clean_content
from .vectors import embed


@dataclass
class Nearby:
    duplicate: tuple[Memory, float] | None
    similar: list[Similar]


def scans_exactly(project_id: str) -> bool:
    """Whether the duplicate check scans the project exactly rather than through HNSW. Counted here,
    once per batch (nothing is inserted until every item is checked): the search's cached project
    count would go stale as we insert."""
    from ..search.candidates import EXACT_SCAN_MAX

    # Counting stops at EXACT_SCAN_MAX + 1 rows: a full count(*) grew with the project (3 ms at 100k
    # memories, docs/benchmarks.md) and runs under the project's write lock, so every store of a
    # large project waited for it.
    # Cost only (issue 34, round nineteen): the ORM's statement for filter()[:N].count(), without its query
    # building (0.46 ms of CPU a call against 0.11 here); once a store.
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_memory WHERE project_id = %s LIMIT %s) s",
            [project_id, EXACT_SCAN_MAX + 1],
        )
        (count,) = cur.fetchone()
    return bool(count <= EXACT_SCAN_MAX)


def near_many(
    project_id: str,
    embedder_id: str,
    items: list[CleanMemory],
    vectors: list[np.ndarray] | None,
    exclude: set[int],
    *,
    exact_scan: bool,
) -> list[Nearby]:
    """For each item, the current memory it duplicates (the same text as a reader sees it, or cosine ≥
    the embedder's duplicate threshold), else up to MAX_SIMILAR related ones. A constant number of
    queries whatever the batch size (an import writes 100 per batch): exact texts in one, every item's
    nearest neighbours in one, their texts in one (and the whole rows of the duplicates found, when there are any).
    `vectors` are the texts' skeletons' (probe_vectors)."""
    if not _has_current(project_id, exclude):  # an empty project (a first import): nothing to be near, no search
        return [Nearby(None, []) for _ in items]
    shapes = [skeleton(i.content) for i in items]
    exact: dict[str, int] = {}
    for mid, content in _current_texts(project_id, exclude, texts=[*{*(i.content for i in items), *shapes}]):
        exact[skeleton(content)] = mid  # the oldest wins: rows come newest first
    found: list[tuple[int, float] | None] = [(exact[shape], 1.0) if shape in exact else None for shape in shapes]
    similar: list[list[Similar]] = [[] for _ in items]
    todo = [n for n, shape in enumerate(shapes) if shape not in exact and vectors is not None]
    if todo and vectors is not None:
        from ..search.candidates import nearest_many

        limit = thresholds(embedder_id)
        near = nearest_many(project_id, embedder_id, [vectors[n] for n in todo], 12, exact=exact_scan)
        texts = dict(_current_texts(project_id, exclude, ids=sorted({mid for hits in near for mid in hits})))
        for n, hits in zip(todo, near, strict=True):
            # A look-alike of a neighbour (its skeleton's vector found it, whatever the cosine) is the same text.
            same = [(mid, sim) for mid, sim in hits.items() if mid in texts and skeleton(texts[mid]) == shapes[n]]
            if same:
                found[n] = max(same, key=lambda p: p[1])
                continue
            close = {mid: sim for mid, sim in hits.items() if sim >= limit.related}
            found[n], similar[n] = _nearby_from(items[n].content, close, texts, limit.duplicate)
    # Whole rows only for the duplicates a store answers with (rare): the neighbours' texts are all the check reads.
    # Read under the project's write lock (store_memories), so a row read as current above still is.
    rows = Memory.objects.in_bulk({hit[0] for hit in found if hit is not None})
    out: list[Nearby] = []
    for n, hit in enumerate(found):  # a duplicate deleted meanwhile (dreaming reads without the lock) is no longer one
        out.append(
            Nearby((rows[hit[0]], hit[1]), []) if hit is not None and hit[0] in rows else Nearby(None, similar[n])
        )
    return out


_CURRENT_TEXTS_SQL = (
    "SELECT id, content FROM memories_memory WHERE project_id = %(project)s "
    f"AND {CURRENT_WHERE} AND NOT (id = ANY(%(exclude)s)) AND {{match}} ORDER BY id DESC"
)


def _current_texts(
    project_id: str, exclude: set[int], *, texts: list[str] | None = None, ids: list[int] | None = None
) -> list[tuple[int, str]]:
    """(id, text) of the project's current memories outside `exclude` whose text is one of `texts`, or whose id is
    one of `ids`, newest first. Cost only (issue 34, round twenty-four): the ORM's `current()` querysets for these
    two reads built their statements and whole Memory rows for 0.9–1.3 ms of CPU each, a store; the check reads
    only ids and texts. The conditions are Memory.objects.current()'s (models.CURRENT_WHERE), with its own clock."""
    match, values = ("content = ANY(%(values)s)", texts) if texts is not None else ("id = ANY(%(values)s)", ids)
    if not values:
        return []
    with connection.cursor() as cur:
        cur.execute(
            _CURRENT_TEXTS_SQL.format(match=match),
            {"project": project_id, "now": timezone.now(), "exclude": sorted(exclude), "values": values},
        )
        return cur.fetchall()


_HAS_CURRENT_SQL = (
    "SELECT 1 FROM memories_memory WHERE project_id = %(project)s "
    f"AND {CURRENT_WHERE} AND NOT (id = ANY(%(exclude)s)) LIMIT 1"
)


def _has_current(project_id: str, exclude: set[int]) -> bool:
    """Whether the project has a current memory outside `exclude`: `current.exists()` of near_many as one plain
    statement (cost only, issue 34 round nineteen: the ORM's query building for it cost 0.75 ms of CPU a
    store against ~0.1). The conditions are Memory.objects.current()'s (models.CURRENT_WHERE), with its own clock."""
    with connection.cursor() as cur:
        cur.execute(
            _HAS_CURRENT_SQL,
            {"project": project_id, "now": timezone.now(), "exclude": sorted(exclude)},
        )
        return cur.fetchone() is not None


def probe_vectors(
    embedder: Embedder, items: list[CleanMemory], vectors: list[np.ndarray] | None
) -> list[np.ndarray] | None:
    """The vectors the duplicate check searches with: of each text's skeleton, so look-alike letters
    (which move an embedding a long way) do not hide a duplicate. Stored vectors stay the text's own."""
    if vectors is None:
        return None
    changed = [n for n, item in enumerate(items) if skeleton(item.content) != item.content]
    if not changed:
        return vectors  # plain text (nearly always): no second embedding
    probes = list(vectors)
    fresh = embed(embedder, [skeleton(items[n].content) for n in changed]) or []
    for n, vector in zip(changed, fresh, strict=True):
        probes[n] = vector
    return probes


def _nearby_from(
    content: str, close: dict[int, float], texts: dict[int, str], duplicate: float
) -> tuple[tuple[int, float] | None, list[Similar]]:
    """The nearest of `close` that is the same fact as `content` (id, cosine), else up to MAX_SIMILAR related ones."""
    ranked = sorted(((mid, sim) for mid, sim in close.items() if mid in texts), key=lambda p: (-p[1], p[0]))
    for mid, sim in ranked:  # the nearest that is the same fact, not one with a changed literal
        if sim >= duplicate and same_fact_tokens(texts[mid], content):
            return (mid, sim), []
    return None, [{"id": mid, "content": texts[mid], "similarity": round(sim, 4)} for mid, sim in ranked[:MAX_SIMILAR]]


def nearby(project_id: str, content: Any) -> Nearby:
    """Read-only: the current memory `content` would duplicate, else the related ones (for dreaming,
    which decides between update, supersede and a contradicts link before it writes)."""
    item = CleanMemory(clean_content(content))
    embedder = get_embedder()
    vectors = embed(embedder, [skeleton(item.content)])  # a probe, as for a store
    exact_scan = scans_exactly(project_id) if vectors else True
    return near_many(project_id, embedder.id, [item], vectors, set(), exact_scan=exact_scan)[0]


@dataclass
class BatchIndex:
    """The items of one store batch kept so far, to find an item that repeats an earlier one:
    same text, or cosine ≥ the duplicate threshold (one matrix product, not a loop over pairs)."""

    embedder_id: str
    texts: dict[str, int] = field(default_factory=dict)
    shapes: dict[int, str] = field(default_factory=dict)  # item → its skeleton, made once
    kept: np.ndarray | None = None  # item → kept so far
    # Every pair's cosine, from one matrix product over the batch's unit vectors, made at the first
    # item: a product per item (its row against the kept rows) cost half of an import of 2,000
    # memories with their vectors (BLAS threads woken 2,000 times on a busy machine).
    cosines: np.ndarray | None = None
    # item → the earlier items at or above the duplicate threshold, ascending, from the same product:
    # most items have none or a few, so an item no longer indexes a row of every kept item.
    near: list[np.ndarray] | None = None

    def add(self, items: list[CleanMemory], vectors: list[np.ndarray] | None, n: int) -> None:
        self.texts.setdefault(self._shape(items, n), n)
        if self.kept is None:
            self.kept = np.zeros(len(items), dtype=bool)
        self.kept[n] = True

    def duplicate(self, items: list[CleanMemory], vectors: list[np.ndarray] | None, n: int) -> tuple[int, float] | None:
        if (shape := self._shape(items, n)) in self.texts:
            return self.texts[shape], 1.0
        if vectors is None or self.kept is None:
            return None
        if self.near is None:
            self._pairs(vectors)
        assert self.cosines is not None and self.near is not None
        earlier = self.near[n]
        for m in earlier[self.kept[earlier]].tolist():  # in the order they were kept, as before
            if same_fact_skeletons(self._shape(items, m), shape):
                return m, float(self.cosines[n, m])
        return None

    def _shape(self, items: list[CleanMemory], n: int) -> str:
        if (shape := self.shapes.get(n)) is None:
            shape = self.shapes[n] = skeleton(items[n].content)
        return shape

    def _pairs(self, vectors: list[np.ndarray]) -> None:
        unit = np.asarray(vectors, dtype=np.float32)
        unit /= np.where((norms := np.linalg.norm(unit, axis=1, keepdims=True)) > 0, norms, 1.0)
        self.cosines = unit @ unit.T
        later, earlier = np.nonzero(np.tril(self.cosines >= thresholds(self.embedder_id).duplicate, -1))
        self.near = np.split(earlier, np.cumsum(np.bincount(later, minlength=len(unit)))[:-1])
