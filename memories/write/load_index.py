"""The duplicate check of a long load (an import of many batches), in memory.

A store batch checks its items against the project through the vector index (`nearby.near_many`).
An import of 10,000+ rows paid that for every batch after the first: 2,000 HNSW probes a batch, most
of them finding the import's own earlier rows, and every vector inserted into the index one by one
(docs/benchmarks.md). A `LoadIndex` instead keeps, for the whole load, what the project held when
the load began (read once, with the memories other writers add between batches) and the load's own
rows kept so far, and compares each new item with them here: the same text (skeleton), or cosine >=
the duplicate threshold and the same fact (`same_fact_skeletons`), as the store's check decides.

Only pairs that can be the same fact get a cosine: two texts that both carry literals are the same
fact only if one's literals are all among the other's (`same_fact_skeletons`: a literal is a word
of the other text only as one of its literals). So an item with literals is compared with the kept
texts without any, those whose literals include all of its own, and those whose literals are some
of its own: an exact bound, not a sample (what it skips could never pass `same_fact_skeletons`).
Comparing with every text sharing one literal was not enough: a bench corpus of 50,000 with
`s3`, `utf-8` or `3` in 3,000-4,000 texts each spent 113 s on it.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..models import Memory, MemoryVector
from .duplicates import literal_tokens, same_fact_skeletons, skeleton, thresholds
from .nearby import Nearby
from .validation import CleanMemory

SUBSETS_UP_TO = 8  # literals of a text whose subsets are looked up one by one (255 lookups)
Hit = tuple[int, float]  # (position in a pool, cosine)
CHUNK = 256  # items a matrix product takes at once: 256 x 50,000 cosines are 51 MB


@dataclass
class Pool:
    """Texts (memory id, skeleton, unit vector) an item may repeat, with what finds them fast."""

    dim: int
    ids: list[int] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    by_shape: dict[str, int] = field(default_factory=dict)  # skeleton → its first position
    plain: list[int] = field(default_factory=list)  # positions of texts without a literal
    literals: list[frozenset[str]] = field(default_factory=list)
    by_literal: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    by_literals: dict[frozenset[str], list[int]] = field(default_factory=lambda: defaultdict(list))
    unit: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.unit = np.zeros((1024, self.dim), dtype=np.float32)

    def add(self, memory_id: int, shape: str, vector: np.ndarray | None) -> None:
        n = len(self.ids)
        if n == len(self.unit):  # grown by doubling: a copy per doubling, not per batch
            self.unit = np.concatenate([self.unit, np.zeros_like(self.unit)])
        if vector is not None:
            norm = float(np.linalg.norm(vector))
            self.unit[n] = np.asarray(vector, dtype=np.float32) / (norm or 1.0)
        self.ids.append(memory_id)
        self.shapes.append(shape)
        self.by_shape.setdefault(shape, n)
        literals = literal_tokens(shape)
        self.literals.append(literals)
        if not literals:
            self.plain.append(n)
            return
        self.by_literals[literals].append(n)
        for literal in literals:
            self.by_literal[literal].append(n)

    def find(self, shapes: list[str], vectors: list[np.ndarray] | None, limit: float) -> list[tuple[int, float] | None]:
        """For each text, the kept one it repeats (memory id, cosine): the same skeleton, else the
        nearest at or above `limit` that is the same fact."""
        out: list[tuple[int, float] | None] = [None] * len(shapes)
        todo: list[int] = []
        for n, shape in enumerate(shapes):
            if (at := self.by_shape.get(shape)) is not None:
                out[n] = (self.ids[at], 1.0)
            elif vectors is not None and self.ids:
                todo.append(n)
        if not todo or vectors is None:
            return out
        query = np.asarray([vectors[n] for n in todo], dtype=np.float32)
        query /= np.where((norms := np.linalg.norm(query, axis=1, keepdims=True)) > 0, norms, 1.0)
        for n, hits in zip(todo, self._over(shapes, todo, query, limit), strict=True):
            for at, cosine in sorted(hits, key=lambda hit: (-hit[1], hit[0])):
                if same_fact_skeletons(self.shapes[at], shapes[n]):
                    out[n] = (self.ids[at], cosine)
                    break
        return out

    def _over(self, shapes: list[str], todo: list[int], query: np.ndarray, limit: float) -> list[list[Hit]]:
        """Each queried text's kept texts at cosine >= limit, among those that may be the same fact."""
        size = len(self.ids)
        hits: list[list[Hit]] = [[] for _ in todo]
        literals = [literal_tokens(shapes[n]) for n in todo]
        # A text without literals may repeat any kept text: its row against all of them.
        bare = [k for k, lits in enumerate(literals) if not lits]
        self._scan(hits, bare, query, np.arange(size), limit)
        # One with literals: the kept texts without any (one product), then those sharing a literal.
        marked = [k for k, lits in enumerate(literals) if lits]
        self._scan(hits, marked, query, np.asarray(self.plain, dtype=np.int64), limit)
        for k in marked:
            if shared := self._related(literals[k]):
                columns = np.fromiter(shared, dtype=np.int64, count=len(shared))
                cosines = self.unit[columns] @ query[k]
                hits[k].extend(zip(columns[cosines >= limit].tolist(), cosines[cosines >= limit].tolist(), strict=True))
        return hits

    def _related(self, own: frozenset[str]) -> set[int]:
        """Positions of kept texts with literals that may be the same fact as a text whose literals are
        `own`: theirs include all of `own`, or are some of `own`."""
        rarest = min((self.by_literal.get(literal, ()) for literal in own), key=len)
        found = {at for at in rarest if own <= self.literals[at]}
        if len(own) <= SUBSETS_UP_TO:
            for size in range(1, len(own) + 1):
                for subset in itertools.combinations(sorted(own), size):
                    found.update(self.by_literals.get(frozenset(subset), ()))
        else:  # a text of many literals: the kept texts sharing one, checked
            found.update(at for literal in own for at in self.by_literal.get(literal, ()) if self.literals[at] <= own)
        return found

    def _scan(
        self, hits: list[list[Hit]], rows: list[int], query: np.ndarray, columns: np.ndarray, limit: float
    ) -> None:
        if not rows or not len(columns):
            return
        kept = self.unit[columns]
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            cosines = query[chunk] @ kept.T
            for r, c in zip(*np.nonzero(cosines >= limit), strict=True):
                hits[chunk[r]].append((int(columns[c]), float(cosines[r, c])))


@dataclass
class LoadIndex:
    """One long load into one project: what the project held (`prior`) and the load's kept rows
    (`own`), to find what each new item repeats without searching the database. Call `nearby`
    and `kept` inside the batch's transaction, under the project's write lock."""

    project_id: str
    embedder_id: str
    prior: Pool | None = None
    own: Pool | None = None
    seen: int = 0  # the highest memory id read into `prior`
    last: list[int] = field(default_factory=list)  # ids this load wrote since `seen`

    def nearby(
        self, items: list[CleanMemory], vectors: list[np.ndarray] | None, probes: list[np.ndarray] | None
    ) -> list[Nearby]:
        """Each item's duplicate among the project's current memories (searched with its probe, as
        near_many does) and the load's own earlier rows (with its vector, as a batch's repeats are)."""
        dim = len(vectors[0]) if vectors else 0
        self._catch_up(dim)
        assert self.prior is not None and self.own is not None
        shapes = [skeleton(i.content) for i in items]
        limit = thresholds(self.embedder_id).duplicate
        found = self.prior.find(shapes, probes, limit)
        rest = [n for n, hit in enumerate(found) if hit is None]
        for n, hit in zip(rest, self.own.find([shapes[n] for n in rest], _pick(vectors, rest), limit), strict=True):
            found[n] = hit
        # A memory deleted, superseded or held meanwhile is no longer there to repeat (near_many searches
        # current memories only).
        rows = Memory.objects.current().in_bulk({hit[0] for hit in found if hit is not None})
        return [
            Nearby((rows[hit[0]], hit[1]), []) if hit is not None and hit[0] in rows else Nearby(None, [])
            for hit in found
        ]

    def kept(self, created: list[Memory], vectors: list[np.ndarray | None]) -> None:
        """The batch's new memories: later batches compare their items with them."""
        assert self.own is not None
        for memory, vector in zip(created, vectors, strict=True):
            self.own.add(memory.pk, skeleton(memory.content), vector)
        self.last = [m.pk for m in created]

    def _catch_up(self, dim: int) -> None:
        """Read the project's current memories not read yet (all of them at the first batch; later,
        those another writer stored between batches), with their vectors of this embedder."""
        if self.prior is None:
            self.prior, self.own = Pool(dim), Pool(dim)
        fresh = dict(
            Memory.objects.current()
            .filter(project_id=self.project_id, pk__gt=self.seen)
            .exclude(pk__in=self.last)
            .order_by("pk")
            .values_list("pk", "content")
        )
        vectors: dict[int, np.ndarray] = {}
        if dim and fresh:
            vectors = dict(
                MemoryVector.objects.filter(
                    project_id=self.project_id, embedder=self.embedder_id, dim=dim, memory_id__gt=self.seen
                )
                .exclude(memory_id__in=self.last)
                .values_list("memory_id", "vector")
            )
        for pk, content in fresh.items():
            self.prior.add(pk, skeleton(content), vectors.get(pk))
        self.seen = max([self.seen, *fresh, *self.last])
        self.last = []


def _pick(vectors: list[np.ndarray] | None, positions: list[int]) -> list[np.ndarray] | None:
    return None if vectors is None else [vectors[n] for n in positions]
