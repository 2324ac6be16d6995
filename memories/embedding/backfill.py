"""Backfill vectors for the active embedder after a model switch.

Runs in batches: select rows without a vector, embed outside any transaction,
then insert the vectors only for rows whose content is unchanged (a concurrent
edit re-embeds by itself). Progress goes to the log and to KeyValue
`backfill:<embedder id>`. A Postgres advisory lock keeps one backfill at a time.
"""

from __future__ import annotations

import json
import logging

from django.db import transaction
from django.db.models import QuerySet

from yullu_core.locks import LockKey, advisory_lock

from ..models import KeyValue, Memory, MemoryVector
from .embedders import embeds, get_embedder
from .vector_index import ensure_index

log = logging.getLogger(__name__)


def missing(embedder_id: str) -> QuerySet[Memory]:
    return Memory.objects.exclude(vectors__embedder=embedder_id)


def backfill(batch_size: int = 64) -> dict[str, int]:
    embedder = get_embedder()
    if not embeds(embedder):
        return {"embedded": 0, "remaining": 0}
    done = 0
    with advisory_lock(LockKey.BACKFILL, embedder.id) as got:
        if not got:
            return {"embedded": 0, "remaining": missing(embedder.id).count(), "skipped": 1}
        while True:
            rows = list(missing(embedder.id).order_by("id").values_list("id", "content", "project_id")[:batch_size])
            if not rows:
                break
            vectors = embedder.embed([content for _, content, _ in rows])
            ensure_index(embedder.id, len(vectors[0]))
            with transaction.atomic():
                current = dict(Memory.objects.filter(pk__in=[r[0] for r in rows]).values_list("id", "content"))
                for (mid, content, project_id), vector in zip(rows, vectors, strict=True):
                    if current.get(mid) == content:
                        MemoryVector.objects.update_or_create(
                            memory_id=mid,
                            embedder=embedder.id,
                            defaults={
                                "vector": vector,
                                "dim": len(vector),
                                "project_id": project_id,
                            },
                        )
                        done += 1
            remaining = missing(embedder.id).count()
            KeyValue.objects.update_or_create(
                key=f"backfill:{embedder.id}",
                defaults={"value": json.dumps({"embedded": done, "remaining": remaining})},
            )
            log.info("backfill %s: %d embedded, %d remaining", embedder.id, done, remaining)
            if len(rows) < batch_size:
                break
    return {"embedded": done, "remaining": missing(embedder.id).count()}
