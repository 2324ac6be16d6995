"""A database outage, said the same way by every process that meets one: one line at the first failure, a reminder
at most every REMIND_EVERY_S while failures go on, one line when the database answers again.

    the database is not answering: <the driver's first line> (1 request failed since 14:20:03)
    the database is not answering: <…> (57 requests failed since 14:20:03)          (30 s later, if still failing)
    the database answers again after 35 s, 58 requests failed

The web (REST, MCP tools, the token checks of /mcp and of /api's front gate) counts into `DATABASE`, which the first
new Django connection ends (`connected`, on Django's connection_created: a connect that reaches the server and its
first statements). Beat keeps its own, ended by the first schedule check that reaches the database
(yullu_site.monitoring.logfilters, yullu_site.beat). The duration runs from the first failure seen, not from a line.
Before, the web said a line per request (548 for walk 15's 35 s of kill -9s), then one every 30 s and never that it
was over; beat said it once and once when back, in its own words."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .failures import first_line

REMIND_EVERY_S = 30.0


def _requests(n: int, counted: str = "request") -> str:
    return f"{n} {counted} failed" if n == 1 else f"{n} {counted}s failed"


@dataclass
class Outage:
    """One process's view of one database being gone (thread-safe: the web fails in several threads at once)."""

    log: logging.Logger
    prefix: str = ""  # "beat: " where celery's own lines share the log
    what: str = "the database is not answering"
    # Seconds without a failure that end the outage silently (None: only `answered` ends it). A full disk has no
    # moment that says it is over: its next failure after a quiet spell is a new outage, said again.
    quiet_ends: float | None = None
    counted: str = "request"  # what failed, as the lines count it
    since: float | None = None  # monotonic time of this outage's first failure
    since_clock: str = ""  # the same moment as the log shows it (local time)
    failures: int = 0  # in this outage
    said_at: float = 0.0
    failed_at: float = 0.0  # monotonic time of the last failure
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def failed(self, exc: BaseException | str) -> bool:
        """Count a failure; log the outage's line when it is the first, or the reminder when REMIND_EVERY_S passed
        since the last line. True when a line was logged."""
        with self._lock:
            now = time.monotonic()
            if self.quiet_ends is not None and now - self.failed_at > self.quiet_ends:
                self.since, self.failures = None, 0
            self.failures, self.failed_at = self.failures + 1, now
            if self.since is None:
                self.since, self.since_clock = now, time.strftime("%H:%M:%S")
            elif now - self.said_at < REMIND_EVERY_S:
                return False
            self.said_at = now
            said = exc if isinstance(exc, str) else first_line(exc) or type(exc).__name__
            count, clock = self.failures, self.since_clock
        self.log.warning("%s%s: %s (%s since %s)", self.prefix, self.what, said, _requests(count, self.counted), clock)
        return True

    def answered(self) -> None:
        """The database answered: the outage, if any, is over (one line)."""
        with self._lock:
            if self.since is None:
                return
            lasted, count = time.monotonic() - self.since, self.failures
            self.since, self.failures = None, 0
        self.log.warning("%sthe database answers again after %.0f s, %s", self.prefix, lasted,
                         _requests(count, self.counted))  # fmt: skip


DATABASE = Outage(logging.getLogger("yullu.database"))  # the web process's
# The web's requests refused for a full disk (507): said as an outage is, not one ERROR line per request from Django
# ("Insufficient Storage: /api/memories", eight a second under a chaos drill's four writers) and nothing for MCP.
DISK = Outage(logging.getLogger("yullu.disk"), what="the disk is full, writes are refused", quiet_ends=REMIND_EVERY_S)


def connected(*args: Any, **kwargs: Any) -> None:
    """Django's connection_created receiver (yullu_site.apps): a new connection is the database answering."""
    DATABASE.answered()
