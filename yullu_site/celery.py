"""The Celery app. Beat's schedule is data; `expires` is shorter than each period so a
backed-up queue never stacks duplicate runs. Every task is declared with an explicit `name=`
(its historical module path), so moving a module never orphans queued rows or beat entries."""

import os
import warnings
from typing import Any

from celery import Celery, signals
from celery.exceptions import SecurityWarning

from yullu_core.env import env_float

from .broker import register

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
register()  # `yullupg://`, the default broker (yullu_site/broker.py)

app = Celery("yullu")
app.config_from_object("django.conf:settings", namespace="CELERY")
# As root (containers, CI) Celery warns on every worker start that it runs with superuser
# privileges. It refuses outright when pickle is accepted; ours accepts JSON only
# (CELERY_ACCEPT_CONTENT), so a message can never run code: the warning is noise there.
if app.conf.accept_content == ["json"]:
    warnings.filterwarnings("ignore", message=r"You're running the worker with superuser", category=SecurityWarning)
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def _start_database_first(**_kwargs: Any) -> None:
    """A worker or beat starts: the embedded PostgreSQL first (importing the settings starts nothing;
    before the worker's pool forks, so its children find it started)."""
    from yullu_core.database import start_database_or_say

    start_database_or_say("worker" if _kwargs.get("signal") is signals.worker_init else "beat",
                          "it runs on, and its connections try again.")  # fmt: skip


HEARTBEAT = env_float("YULLU_HEARTBEAT_SECONDS")
TICK = env_float("YULLU_SCHEDULER_TICK_SECONDS")

app.conf.beat_schedule = {
    "heartbeat": {"task": "yullu_site.tasks.heartbeat", "schedule": HEARTBEAT, "options": {"expires": HEARTBEAT * 0.9}},
    "reconcile-tick": {"task": "sync.tasks.reconcile_due", "schedule": TICK, "options": {"expires": TICK * 0.9}},
    "dream-tick": {"task": "dreaming.tasks.dream_due", "schedule": TICK, "options": {"expires": TICK * 0.9}},
    "prune-tick": {"task": "memories.tasks.prune_expired", "schedule": TICK * 60, "options": {"expires": TICK * 50}},
    "recall-log-tick": {
        "task": "memories.tasks.prune_recall_log",
        "schedule": TICK * 60,
        "options": {"expires": TICK * 50},
    },
    # Code anchors against each checkout's HEAD (docs/contract.md §12); unchanged HEADs cost one lookup each.
    "anchors-tick": {"task": "memories.tasks.check_anchors", "schedule": TICK * 5, "options": {"expires": TICK * 4.5}},
    "backfill-tick": {
        "task": "memories.tasks.backfill_embeddings",
        "schedule": TICK * 5,
        "options": {"expires": TICK * 4.5},
    },
}
