"""Scheduled reconcile. Tasks take ids/primitives, are idempotent, and call services only."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from celery import shared_task
from django.conf import settings

from memories.models import Meta, ProjectLocation
from memories.scope import Scope
from yullu_site.config import parse_duration

from .eventlog import logs_dir
from .publish import sync_config
from .services import reconcile_scope

log = logging.getLogger(__name__)


def log_signature(folder: Path) -> str:
    """Changes whenever a file is added, removed or replaced in the log folder."""
    if not folder.is_dir():
        return "none"
    entries = sorted((e.name, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.name.endswith(".json"))
    return f"{len(entries)}:{hash(tuple(entries))}"


def is_due(project_id: str, signature: str, now: float, interval: int) -> bool:
    last = Meta.objects.filter(key=f"reconcile_at:{project_id}").values_list("value", flat=True).first()
    if last:
        at, _, sig = last.partition("|")
        if sig == signature or now - float(at) < interval:
            return False
    return True


def reconcile_location(location_id: int, force: bool = False) -> dict | None:
    loc = ProjectLocation.objects.filter(pk=location_id).first()
    if loc is None:
        return None  # the project went away: nothing to do
    root = Path(loc.git_root)
    if not (root / ".git").exists():
        return None
    cfg = sync_config(loc.project_id, root)
    if not cfg["enabled"]:
        return None
    folder = logs_dir(root, cfg["dir"])
    signature = log_signature(folder)
    now = time.time()
    if not force and not is_due(loc.project_id, signature, now, parse_duration(cfg["reconcile_interval"])):
        return None
    result = reconcile_scope(Scope(loc.project_id, root))
    if not result.get("skipped"):
        signature = log_signature(folder)  # our own publications count as seen
        Meta.objects.update_or_create(key=f"reconcile_at:{loc.project_id}", defaults={"value": f"{now}|{signature}"})
    return dict(result)


@shared_task(ignore_result=True)
def reconcile_due() -> None:
    """Reconcile every known project whose log changed and whose interval has passed."""
    if not settings.YULLU["sync"]["enabled"]:
        return
    for loc_id in ProjectLocation.objects.values_list("id", flat=True):
        try:
            reconcile_location(loc_id)
        except Exception:
            log.exception("scheduled reconcile failed for project location %s", loc_id)


@shared_task(ignore_result=True)
def reconcile_all_known() -> None:
    """Start-up reconcile of every known project location."""
    for loc_id in ProjectLocation.objects.values_list("id", flat=True):
        try:
            reconcile_location(loc_id, force=True)
        except Exception:
            log.exception("start-up reconcile failed for project location %s", loc_id)
