"""Failures that are not bugs, said as what happened: the one mapping REST, MCP and the CLI use.

- Input PostgreSQL cannot store (a NUL character in a query or session id, a value out of range)
  is the client's error (400), not "the database is unavailable".
- A full disk (PostgreSQL's SQLSTATE 53100, or ENOSPC writing a file) is 507 with a sentence
  saying so; for `DISK_FULL_MEMORY_S` afterwards /api/status reports it and is not ready, as it
  is whenever the home folder's file system has less than `MIN_FREE_BYTES` left. A PostgreSQL
  whose own disk is full refuses new sessions ("could not write init file: No space left on
  device", no SQLSTATE): 507 too, with a sentence saying so rather than "unavailable, try again
  shortly" or the CLI's "start it" (round eight's drills).
- A database that takes the connection and says nothing (a PostgreSQL stopped with SIGSTOP, a firewall
  dropping packets) is 503 "not answering" once the connect timeout has passed, not the general
  "unavailable" (which a refused connection or a restart gets).
"""

from __future__ import annotations

import errno
import shutil
import time
from typing import Any

from django.db import DataError

from .errors import UserError

MIN_FREE_BYTES = 64 * 1024 * 1024
DISK_FULL_MEMORY_S = 60.0
# Said to reads too: a search spills its sort to temp files and writes its recall log, so on a full disk
# it fails as well (walk 11: `retrieve_memories` answered "so nothing was stored" to a question).
DISK_FULL = (
    "The disk is full, so this was not done (nothing was stored or changed); "
    "free some space on the server and try again."
)
DATABASE_DISK_FULL = (
    "The database's disk is full, so it takes no new connections; free some space on the server and try again."
)
NO_SPACE = "No space left on device"  # strerror(ENOSPC), in PostgreSQL's and pg_ctl's messages
UNAVAILABLE = "The database is unavailable right now; try again shortly."
_disk_full_at: float | None = None


def short_of_space(path: Any) -> bool:
    """The file system of `path` is (nearly) full: under MIN_FREE_BYTES free. (A start of PostgreSQL may
    fail on a checkpoint whose own line is all its log's FATAL says: "checkpoint request failed"; crash
    recovery writes WAL segments.)"""
    try:
        return shutil.disk_usage(path).free < MIN_FREE_BYTES
    except OSError:
        return False


class DiskFull(UserError):
    status = 507


class NotAnswering(UserError):
    status = 503


def answer_timeout() -> float:
    """Seconds a database connection waits for an answer: the connect timeout of Django's connections
    (yullu_site/settings.py, or DATABASE_URL's `connect_timeout`), which the MCP token check also bounds its
    statement with (access/token_check.py)."""
    from django.conf import settings

    # settings.py always sets it (postgres.CONNECT_TIMEOUT, not imported here: postgres reads this module)
    return float(settings.DATABASES["default"]["OPTIONS"].get("connect_timeout", 5))


def not_answering() -> str:
    return f"The database is not answering (nothing back within {answer_timeout():g} s); try again shortly."


def _timed_out(exc: BaseException) -> bool:
    """psycopg's connect timeout (Django wraps it: the cause), or the token check's own (`database_timeout`)."""
    import psycopg

    return any(
        isinstance(err, psycopg.errors.ConnectionTimeout) or getattr(err, "database_timeout", False)
        for err in (exc, exc.__cause__)
    )


def _sqlstate(exc: BaseException) -> str | None:
    for err in (exc, exc.__cause__):
        state = getattr(err, "sqlstate", None)
        if state:
            return str(state)
    return None


def translate(exc: BaseException) -> UserError | None:
    """The sentence for a failure caused by the input or by the machine (a database that does not answer
    included), or None (a bug, or a database that cannot be reached: the caller's own handling)."""
    global _disk_full_at
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or _sqlstate(exc) == "53100":
        _disk_full_at = time.monotonic()
        return DiskFull(DISK_FULL)
    if _sqlstate(exc) is None and NO_SPACE in str(exc) and _is_database_error(exc):
        _disk_full_at = time.monotonic()
        return DiskFull(DATABASE_DISK_FULL)
    if _is_database_error(exc) and _timed_out(exc):
        return NotAnswering(not_answering())
    if isinstance(exc, DataError):
        text = str(exc).strip()
        if "NUL" in text or "0x00" in text:
            return UserError("text must not contain NUL (0x00) characters.")
        return UserError(f"a value cannot be stored ({first_line(exc) or type(exc).__name__}).")
    return None


def first_line(exc: BaseException) -> str:
    """The first line of `exc`'s message, "" when it has none: a failure told in one line (a driver's
    message runs on with its context and hints)."""
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else ""


def database_refusal(exc: BaseException) -> tuple[int, str]:
    """The status and sentence for a database error met before any view runs (the token check): its
    disk full (507), else unavailable (503)."""
    said = translate(exc)
    return (said.status, str(said)) if said else (503, UNAVAILABLE)


def _is_database_error(exc: BaseException) -> bool:
    import psycopg
    from django.db import DatabaseError

    return isinstance(exc, DatabaseError | psycopg.Error)


def disk_status(path: Any) -> dict[str, Any]:
    """Free space where the data lives, and whether a write recently found the disk full."""
    recent = _disk_full_at is not None and time.monotonic() - _disk_full_at < DISK_FULL_MEMORY_S
    try:
        free = shutil.disk_usage(path).free
    except OSError as exc:
        return {"ok": False, "error": exc.strerror or type(exc).__name__}
    out: dict[str, Any] = {"ok": free >= MIN_FREE_BYTES and not recent, "free_mb": free // (1024 * 1024)}
    if recent:
        out["error"] = "a write found the disk full"
    elif free < MIN_FREE_BYTES:
        out["error"] = f"less than {MIN_FREE_BYTES // (1024 * 1024)} MB free"
    return out
