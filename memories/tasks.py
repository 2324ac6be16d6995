from celery import shared_task

from .embedding.backfill import backfill


@shared_task(name="memories.tasks.backfill_embeddings", ignore_result=True)
def backfill_embeddings() -> None:
    """Embed memories that have no vector for the active embedder (idempotent, single flight)."""
    backfill()


@shared_task(name="memories.tasks.prune_expired", ignore_result=True)
def prune_expired() -> None:
    """Archive memories whose expiry passed (idempotent: SKIP LOCKED claims, gone rows are skipped)."""
    from .lifecycle import prune_expired as prune

    prune()


@shared_task(name="memories.tasks.prune_recall_log", ignore_result=True)
def prune_recall_log() -> None:
    """Drop recall-log rows past `[retrieval].recall_log_days` (idempotent, batched deletes)."""
    from .lifecycle import prune_recall_log as prune

    prune()


@shared_task(name="memories.tasks.check_anchors", ignore_result=True)
def check_anchors() -> None:
    """Check the code anchors of every known project against its checkout's HEAD (docs/contract.md §12); rows
    already checked at that HEAD cost nothing."""
    from .anchors.checks import check_known_projects

    check_known_projects()
