"""Transactions for rows we can afford to lose in a crash (recall log, usage rows).

`losable()` commits without waiting for the WAL flush (`synchronous_commit = off`): other
sessions see the rows at once, a crash may lose the last fraction of a second of them whole,
and nothing is ever corrupted. It saves the flush wait (a few ms) on every retrieve. Memories,
their vectors, activity rows and events are never written this way: an acknowledged store is
durable. Inside a caller's transaction it is a plain savepoint: `SET LOCAL` would relax the
caller's commit too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def losable() -> Iterator[None]:
    nested = connection.in_atomic_block
    with transaction.atomic():
        if not nested:
            with connection.cursor() as cur:
                cur.execute("SET LOCAL synchronous_commit = off")
        yield
