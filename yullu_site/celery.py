"""The Celery app. Beat's schedule is data; `expires` is shorter than each period so a
backed-up queue never stacks duplicate runs. Every task is declared with an explicit `name=`
(its historical module path), so moving a module never orphans queued rows or beat entries."""

import os
import warnings
from datetime import datetime, timedelta
from typing import Any

from celery import Celery, signals
from celery.exceptions import SecurityWarning
from celery.schedules import schedstate, schedule

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


class Steady(schedule):
    """An interval a wall clock stepped back does not stall. Celery's waits until `last run + period` by the
    clock, so a step back of an hour sent no tick (no dreaming, reconcile or heartbeat) for that hour; the
    passes' own rules already treat a last pass "in the future" as due (round nine), but never got a tick to
    apply them (chaos drill, round 23). A last run later than now is due now; a step forward is one run."""

    def is_due(self, last_run_at: datetime) -> schedstate:
        if self.maybe_make_aware(last_run_at) > self.now():
            return schedstate(is_due=True, next=self.seconds)
        return super().is_due(last_run_at)


def every(seconds: float) -> Steady:
    return Steady(timedelta(seconds=seconds))


HEARTBEAT = env_float("YULLU_HEARTBEAT_SECONDS")
TICK = env_float("YULLU_SCHEDULER_TICK_SECONDS")

app.conf.beat_schedule = {
    "heartbeat": {
        "task": "yullu_site.tasks.heartbeat",
        "schedule": every(HEARTBEAT),
        "options": {"expires": HEARTBEAT * 0.9},
    },
    "reconcile-tick": {"task": "sync.tasks.reconcile_due", "schedule": every(TICK), "options": {"expires": TICK * 0.9}},
    "dream-tick": {"task": "dreaming.tasks.dream_due", "schedule": every(TICK), "options": {"expires": TICK * 0.9}},
    "prune-tick": {
        "task": "memories.tasks.prune_expired",
        "schedule": every(TICK * 60),
        "options": {"expires": TICK * 50},
    },
    "recall-log-tick": {
        "task": "memories.tasks.prune_recall_log",
        "schedule": every(TICK * 60),
        "options": {"expires": TICK * 50},
    },
    # Code anchors against each checkout's HEAD (docs/contract.md §12); unchanged HEADs cost one lookup each.
    "anchors-tick": {
        "task": "memories.tasks.check_anchors",
        "schedule": every(TICK * 5),
        "options": {"expires": TICK * 4.5},
    },
    "backfill-tick": {
        "task": "memories.tasks.backfill_embeddings",
        "schedule": every(TICK * 5),
        "options": {"expires": TICK * 4.5},
    },
}
