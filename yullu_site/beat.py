"""Celery beat's scheduler: django-celery-beat's DatabaseScheduler, kept ticking when the wall clock
goes back (an NTP step, a VM restored from a snapshot, a clock set by hand).

Beat keeps its entries in a heap ordered by wall-clock time and each entry's last run as a wall-clock
time. When the clock went back an hour, the first event of the heap lay an hour and a period ahead,
and beat slept in 5 s steps until the clock caught up: no heartbeat, reconcile, dream, prune or
anchors tick for that hour (chaos drills round nine, a running site under libfaketime). A forward
jump needs nothing: every entry is due at once, runs once, then keeps its period.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from celery.utils.time import maybe_make_aware
from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry

from yullu_site.monitoring.logfilters import OUTAGE

SLACK_S = 1.0  # rounding of the heap's times; a clock set back by less does not matter


def _period(entry: ModelEntry) -> timedelta | None:
    every = getattr(entry.schedule, "run_every", None)
    return every if isinstance(every, timedelta) else None


class ClockSafeEntry(ModelEntry):
    """An entry whose last run lies in the future was run before the clock went back: it is due now
    (its tasks are idempotent ticks), then keeps its period. Otherwise it waited for the clock to
    catch up with that time, plus its period."""

    def is_due(self) -> Any:
        now = maybe_make_aware(self._default_now())
        last: datetime = self.last_run_at  # type: ignore[has-type]  # celery's attribute, untyped
        if maybe_make_aware(last) > now + timedelta(seconds=SLACK_S):
            due_at: datetime = now - (_period(self) or timedelta(0))
            self.last_run_at = self.model.last_run_at = due_at
        return super().is_due()


class ClockSafeScheduler(DatabaseScheduler):
    """DatabaseScheduler whose heap is built again when an event in it lies further ahead than its
    entry's whole period: the heap was built before the clock went back."""

    Entry = ClockSafeEntry

    def tick(self, *args: Any, **kwargs: Any) -> Any:
        heap: list[Any] | None = self._heap  # type: ignore[has-type]  # celery's attribute, untyped
        if heap and self._clock_went_back(heap):
            self._heap = None  # rebuilt by tick from the entries, each asked is_due() again
        return super().tick(*args, **kwargs)

    def schedule_changed(self) -> bool:
        """django-celery-beat's check, which logs a database it cannot reach and answers False; a check
        that logged nothing reached the database, which ends an outage (one line saying it is back)."""
        failures = OUTAGE.failures
        changed: bool = super().schedule_changed()
        if OUTAGE.failures == failures:
            OUTAGE.answered()
        return changed

    def _clock_went_back(self, heap: list[Any]) -> bool:
        # (An entry told to wait longer on purpose, a start_time in the future, also rebuilds the heap,
        # into the same heap: a few is_due() calls per tick, no change in what is sent.)
        for when, _, entry in heap:
            period = _period(entry)
            if period is not None and when - self._when(entry, 0) > period.total_seconds() + SLACK_S:
                return True
        return False
