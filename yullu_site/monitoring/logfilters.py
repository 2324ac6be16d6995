"""Log filters: a database outage is one line, not a traceback."""

from __future__ import annotations

import logging


class DatabaseOutageWithoutTraceback(logging.Filter):
    """django-celery-beat logs every failed schedule check during a database restart with
    `logger.exception`: two chained tracebacks at ERROR per check while the supervisor restarts
    PostgreSQL, which looks like a crash in a log that is only waiting. A lost connection
    (OperationalError, InterfaceError) becomes one warning line; any other error keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        from django.db import InterfaceError, OperationalError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (OperationalError, InterfaceError)):
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            record.msg, record.args = "the database is unavailable (%s); retrying", (first_line,)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
