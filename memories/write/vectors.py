"""The write side's vectors: embedding outside any transaction, vectors an import carries, the
stored row, and the vector an event carries to teammates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.utils import timezone

from ..embedding.embedders import Embedder, embeds
from ..embedding.vector_index import ensure_index
from ..models import Memory, MemoryVector
from .validation import CleanMemory


def embed(embedder: Embedder, texts: list[str]) -> list[np.ndarray] | None:
    if not embeds(embedder):
        return None
    return embedder.embed(texts)


def embed_missing(embedder: Embedder, items: list[CleanMemory]) -> list[np.ndarray] | None:
    """Each item's vector: the one it came with, else one batched embedding call for the rest.
    A given vector is used only when it has the model's dimension (else it is embedded again)."""
    if not embeds(embedder):
        return None
    given = [_given_vector(i.vector) for i in items]
    dim = next((len(v) for v in given if v is not None), None)
    if dim is not None and dim != _model_dim(embedder):
        given = [None] * len(items)
    missing = [n for n, v in enumerate(given) if v is None]
    computed = iter(embedder.embed([items[n].content for n in missing]) if missing else [])
    return [v if v is not None else next(computed) for v in given]


_DIMS: dict[str, int] = {}


def _model_dim(embedder: Embedder) -> int:
    """The embedder's vector size: from a stored vector, else one probe call (cached per model)."""
    if embedder.id not in _DIMS:
        stored = MemoryVector.objects.filter(embedder=embedder.id).values_list("dim", flat=True).first()
        _DIMS[embedder.id] = int(stored) if stored else len(embedder.embed(["dimension probe"])[0])
    return _DIMS[embedder.id]


def _given_vector(vector: Sequence[float] | None) -> np.ndarray | None:
    if vector is None:
        return None
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or not arr.size or not np.isfinite(arr).all() or not np.linalg.norm(arr):
        return None
    return arr / np.linalg.norm(arr)


def save_vector(memory: Memory, embedder_id: str, vector: Sequence[float] | np.ndarray) -> None:
    arr = np.asarray(vector, dtype=np.float32)
    ensure_index(embedder_id, len(arr))
    MemoryVector.objects.update_or_create(
        memory=memory,
        embedder=embedder_id,
        defaults={"vector": arr, "dim": len(arr), "project_id": memory.project_id, "created_at": timezone.now()},
    )


def logged_vector(embedder_id: str, vector: np.ndarray | None) -> tuple[str, list[float]] | None:
    if vector is None:
        return None
    return embedder_id, np.asarray(vector).tolist()  # the floats float() of each component gives, made in C
