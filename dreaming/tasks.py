"""Scheduled dreaming. Idempotent: a pass that finds nothing to do changes nothing."""

import logging

from celery import shared_task

from .reasoners import configured_reasoner
from .services import due_projects, prune_buffer, run_dream_pass

log = logging.getLogger(__name__)


@shared_task(name="dreaming.tasks.dream_due", ignore_result=True)
def dream_due() -> None:
    """Run a pass for every project whose interval or idle trigger has fired (after buffer retention)."""
    prune_buffer()
    for project_id in due_projects():
        try:
            run_dream_pass(project_id, reasoner=configured_reasoner(), manual=False, trigger="scheduled")
        except Exception:
            log.exception("scheduled dream pass failed for %s", project_id)


@shared_task(name="dreaming.tasks.dream_project", ignore_result=True)
def dream_project(project_id: str) -> None:
    """A manual pass queued from the admin's "dream now" button."""
    run_dream_pass(project_id, reasoner=configured_reasoner(), manual=True, trigger="manual")
