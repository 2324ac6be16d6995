"""Scheduled reconcile and the outbox sweep. Tasks take ids/primitives, are idempotent, and call services only."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from celery import shared_task
from django.conf import settings

from memories.models import ProjectLocation
from memories.scope import Scope, location_allowed
from yullu_core.config import parse_duration
from yullu_core.errors import UserError

from .eventlog import list_names, logs_dir
from .models import ProjectSyncState
from .outbox import SWEEP_AFTER, flush, sync_config
from .services import listing_sha256, reconcile_scope

log = logging.getLogger(__name__)


def is_due(project_id: str, folder: Path, now: float, interval: int) -> bool:
    """Due when the log's file names changed since the last complete pass and the interval has passed
    (or that pass is later than now: the clock went back since, round nine)."""
    state = ProjectSyncState.objects.filter(project_id=project_id).first()
    if state is None or state.reconciled_at is None:
        return True
    if state.listing_sha256 == listing_sha256(set(list_names(folder))):
        return False
    since = now - state.reconciled_at.timestamp()
    return since >= interval or since < 0


def reconcile_location(location_id: int, force: bool = False) -> dict | None:
    loc = ProjectLocation.objects.filter(pk=location_id).first()
    if loc is None:
        return None  # the project went away: nothing to do
    root = Path(loc.git_root)
    if not (root / ".git").exists() or not location_allowed(root):
        return None  # gone, or recorded before [server].allowed_roots confined cwd (issue 33)
    cfg = sync_config(loc.project_id, root)
    if not cfg["enabled"]:
        return None
    folder = logs_dir(root, cfg["dir"])
    if not force and not is_due(loc.project_id, folder, time.time(), parse_duration(cfg["reconcile_interval"])):
        return None
    return dict(reconcile_scope(Scope(loc.project_id, root)))


def sweep_outbox() -> int:
    """Write events whose on-commit flush never ran (the process died right after the commit)."""
    written = flush(older_than=SWEEP_AFTER)
    if written:
        log.warning("outbox sweep wrote %d event file(s) left behind by an interrupted write", len(written))
    return len(written)


@shared_task(name="sync.tasks.reconcile_due", ignore_result=True)
def reconcile_due() -> None:
    """Sweep the outbox, then reconcile every known project whose log changed and whose interval has passed."""
    try:
        sweep_outbox()
    except Exception:
        log.exception("outbox sweep failed")
    if not settings.YULLU["sync"]["enabled"]:
        return
    _reconcile_every_location("scheduled", force=False)


@shared_task(name="sync.tasks.reconcile_all_known", ignore_result=True)
def reconcile_all_known() -> None:
    """Start-up reconcile of every known project location."""
    sweep_outbox()
    _reconcile_every_location("start-up", force=True)


def _reconcile_every_location(which: str, force: bool) -> None:
    """One location's failure never stops the others: a checkout's own problem (a bad committed config, a
    looping log folder) is one warning line; anything else is logged with its traceback."""
    for loc_id in ProjectLocation.objects.values_list("id", flat=True):
        try:
            reconcile_location(loc_id, force=force)
        except UserError as exc:
            log.warning("%s reconcile of project location %s skipped: %s", which, loc_id, exc)
        except Exception:
            log.exception("%s reconcile failed for project location %s", which, loc_id)
