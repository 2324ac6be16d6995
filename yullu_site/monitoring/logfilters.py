"""Log filters: a database outage is one line when it starts and one when it is over, not a traceback
per check."""

from __future__ import annotations

import logging

from yullu_core.outage import Outage

log = logging.getLogger("yullu_site.beat")


# Beat checks its schedule every few seconds and sends due tasks through the broker, a table in the same database:
# each failed check and send logged a line (and each send a traceback of ~100 lines), three lines within a
# millisecond and ~400 lines for a 16 s outage. Counted here, said as yullu_core.outage says it; the first schedule
# check that reaches the database again ends it (yullu_site.beat.ClockSafeScheduler).
OUTAGE = Outage(log, prefix="beat: ")  # one per process: only beat runs the scheduler that ends it


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
    schedule check, a task that could not be sent) is counted into beat's OUTAGE, which says it (one line, a
    reminder every 30 s, one when it is over); any other error keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = _lost_connection(record.exc_info[1] if record.exc_info else None)
        interface_error = str(record.msg).startswith("DatabaseScheduler: InterfaceError")  # logged without exc_info
        if exc is None and not interface_error:
            return True
        OUTAGE.failed(exc if exc is not None else "InterfaceError")  # says the outage's line when it is due
        return False
