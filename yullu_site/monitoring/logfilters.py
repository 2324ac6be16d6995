"""Log filters: a database outage is one line when it starts and one when it is over, not a traceback
per check."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from yullu_core.failures import first_line

log = logging.getLogger("yullu_site.beat")


@dataclass
class Outage:
    """Beat's view of the database being gone. Beat checks its schedule every few seconds and sends
    due tasks through the broker, a table in the same database: each failed check and send logged a
    line (and each send a traceback of ~100 lines), three lines within a millisecond and ~400 lines
    for a 16 s outage. The first failure is logged, the rest are counted; the first schedule check
    that reaches the database again logs that it is back (yullu_site.beat.ClockSafeScheduler)."""

    since: float | None = None
    failures: int = 0

    def failed(self) -> bool:
        """Count a failure; True when it is the first of this outage (the one to log)."""
        self.failures += 1
        if self.since is not None:
            return False
        self.since = time.monotonic()
        return True

    def reached_database(self) -> None:
        if self.since is None:
            return
        lasted, self.since = time.monotonic() - self.since, None
        log.warning("beat: the database is back after %.0f s; beat carries on.", lasted)


OUTAGE = Outage()  # one per process: only beat runs the scheduler that ends it


def _lost_connection(exc: BaseException | None) -> BaseException | None:
    """The lost-connection error in `exc`'s chain (beat's SchedulingError wraps kombu's, which wraps
    psycopg's), or None for any other error."""
    from django.db import InterfaceError, OperationalError
    from kombu.exceptions import OperationalError as BrokerUnreachable
    from psycopg import InterfaceError as PsycopgInterfaceError
    from psycopg import OperationalError as PsycopgOperationalError

    lost = (OperationalError, InterfaceError, BrokerUnreachable, PsycopgOperationalError, PsycopgInterfaceError)
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, lost):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


class DatabaseOutageWithoutTraceback(logging.Filter):
    """On django-celery-beat's scheduler and celery's beat: a lost database connection (a failed
    schedule check, a task that could not be sent) is one warning line for the whole outage; any
    other error keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = _lost_connection(record.exc_info[1] if record.exc_info else None)
        interface_error = str(record.msg).startswith("DatabaseScheduler: InterfaceError")  # logged without exc_info
        if exc is None and not interface_error:
            return True
        if not OUTAGE.failed():
            return False
        said = (first_line(exc) if exc is not None else "") or "InterfaceError"
        record.msg = "beat: the database is unavailable (%s); beat retries and logs one line when it is back."
        record.args = (said,)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
