"""The in-memory duplicate check of a long load (memories.write.load_index.Pool) skips the pairs
whose literals rule out the same fact: it must find exactly what comparing every pair finds."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.utils import timezone

from memories.models import Memory
from memories.write.duplicates import same_fact_skeletons, skeleton
from memories.write.load_index import LoadIndex, Pool
from memories.write.validation import NewMemory, clean_item

LIMIT = 0.9
WORDS = ["deploy", "cache", "queue", "staging", "backup", "gateway", "worker", "cron", "token", "schema"]
LITERALS = ["s3", "utf-8", "3", "8080", "8081", "v2", "v3", "/etc/app.toml", "--force", "OPS-1", "OPS-2"]


def corpus(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Texts of a few words and 0-3 literals (some shared by many texts), their vectors in a few tight
    clusters, so that many pairs pass the cosine and only the literals tell them apart."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = rng.sample(WORDS, 3) + rng.sample(LITERALS, rng.choice([0, 1, 1, 1, 2, 2, 3, 3, 3, 3]))
        rng.shuffle(words)
        texts.append(" ".join(words))
    centres = np.random.default_rng(seed).normal(size=(60, 16))
    picks = np.random.default_rng(seed + 1).integers(0, 60, size=n)
    vectors = centres[picks] + 0.05 * np.random.default_rng(seed + 2).normal(size=(n, 16))
    return texts, vectors.astype(np.float32)


def brute(kept: list[str], kept_vectors: np.ndarray, text: str, vector: np.ndarray) -> tuple[int, float] | None:
    """The nearest kept text at cosine >= LIMIT that is the same fact, comparing with every one."""
    unit = kept_vectors / np.linalg.norm(kept_vectors, axis=1, keepdims=True)
    cosines = unit @ (vector / np.linalg.norm(vector))
    shape = skeleton(text)
    if shape in (shapes := [skeleton(k) for k in kept]):
        return shapes.index(shape), 1.0
    order = sorted((at for at in range(len(kept)) if cosines[at] >= LIMIT), key=lambda at: (-cosines[at], at))
    for at in order:
        if same_fact_skeletons(shapes[at], shape):
            return at, float(cosines[at])
    return None


def test_the_pool_finds_what_comparing_every_pair_finds() -> None:
    texts, vectors = corpus(600, seed=7)
    # A text whose literals are some of a later one's, the later adding two (the same fact: only a one-word
    # addition or a swap tells two texts apart), on an axis of their own.
    texts[399], texts[599] = "deploy cache queue worker 8080", "deploy cache queue worker 8080 v2 s3"
    vectors[399] = vectors[599] = np.eye(16, dtype=np.float32)[0] * 50
    kept, queries = texts[:400], texts[400:]
    pool = Pool(16)
    for n, text in enumerate(kept):
        pool.add(1000 + n, skeleton(text), vectors[n])

    found = pool.find([skeleton(q) for q in queries], list(vectors[400:]), LIMIT)

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit[400:] @ unit[:400].T
    expected = [brute(kept, vectors[:400], q, vectors[400 + k]) for k, q in enumerate(queries)]
    assert [None if f is None else f[0] - 1000 for f in found] == [None if e is None else e[0] for e in expected]
    assert [round(f[1], 4) for f in found if f] == [round(e[1], 4) for e in expected if e]
    assert sum(f is not None for f in found) > 20  # the corpus has repeats to find, and pairs it must refuse
    refused = [e is None and (cosines[k] >= LIMIT).any() for k, e in enumerate(expected)]
    assert sum(refused) > 20
    assert found[-1] == (1399, 1.0)


@pytest.mark.django_db
def test_a_memory_superseded_during_a_long_load_is_not_what_a_later_batch_repeats() -> None:
    """The store's check (near_many) looks among current memories only; so must the load's."""
    fact = "The staging gateway listens on port 8443."
    held = Memory.objects.create(project_id="load/superseded", content=fact)
    load = LoadIndex("load/superseded", "any-embedder")
    item = clean_item(NewMemory(fact), timezone.now())
    first = load.nearby([item], None, None)
    assert first[0].duplicate is not None and first[0].duplicate[0].pk == held.pk

    newer = Memory.objects.create(project_id="load/superseded", content="The staging gateway moved to port 9443.")
    Memory.objects.filter(pk=held.pk).update(superseded_by=newer)  # another writer, between two batches

    assert load.nearby([item], None, None)[0].duplicate is None
