"""Cross-process single-flight: a Postgres advisory lock (STYLE: one backfill, one reconcile, one
dream pass per project at a time, whichever process asks)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


@contextmanager
def advisory_lock(key: int, name: str = "") -> Iterator[bool]:
    """Session-level pg_try_advisory_lock: yields False at once when another process holds it."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [key, name])
        got = bool(cur.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [key, name])
