from celery import shared_task

from .backfill import backfill


@shared_task(ignore_result=True)
def backfill_embeddings() -> None:
    """Embed memories that have no vector for the active embedder (idempotent, single flight)."""
    backfill()
