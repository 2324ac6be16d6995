"""Time as the event log and the database keep it, in one place: nanoseconds since the Unix
epoch (UTC), RFC 3339 text with nanoseconds for event files, microseconds in PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")
# Times a datetime (and PostgreSQL) can hold, in ns since the epoch; a zone offset can push a
# `9999-12-31T23:59:59-23:59` past them. Later than the reader's clock is clamped by reconcile.
MIN_NS = (datetime.min.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1) * 1000
MAX_NS = (datetime.max.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1) * 1000 + 999


def ns_to_datetime(ns: int) -> datetime:
    """Microsecond precision (Postgres), truncated towards the past."""
    return EPOCH + timedelta(microseconds=ns // 1000)


def datetime_to_ns(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1) * 1000


def whole_second(ns: int) -> datetime:
    """The second `ns` falls in (event file names and `ts` text add the nanoseconds themselves)."""
    return EPOCH + timedelta(seconds=ns // 1_000_000_000)


def parse_ts(value: str) -> int:
    """RFC 3339 (Go's RFC3339Nano included) → nanoseconds since the epoch."""
    match = TS_RE.match(value)
    if not match:
        raise ValueError("ts must be an RFC 3339 time, e.g. 2026-06-01T04:12:13.364878Z")
    base, frac, zone = match.groups()
    stamp = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    seconds = (stamp - EPOCH) // timedelta(seconds=1)
    ns = seconds * 1_000_000_000 + int((frac or "").ljust(9, "0"))
    if not MIN_NS <= ns <= MAX_NS:
        raise ValueError("ts must be between the years 1 and 9999 in UTC")
    return ns


def format_ts(ns: int) -> str:
    return f"{whole_second(ns):%Y-%m-%dT%H:%M:%S}.{ns % 1_000_000_000:09d}Z"
