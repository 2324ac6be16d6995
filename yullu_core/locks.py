"""Cross-process single-flight: a Postgres advisory lock (STYLE: one backfill, one reconcile, one
dream pass per project at a time, whichever process asks)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum, unique

from django.db import connection


@unique
class LockKey(IntEnum):
    """Every advisory-lock key the product takes, declared together so that no two share one:
    the bootstrap lock once reused beat's key, and `yullu token` waited forever while a server ran.
    `unique` refuses a repeated value at import. Postgres keeps one-bigint locks and
    (int, hashtext(name)) locks apart, but each key here is distinct all the same."""

    # One bigint, session or transaction level.
    MIGRATE = 0x59554C4C5500  # one migrating process at a time (yullu_core.database)
    BEAT = 0x59554C4C5501  # held as long as a beat runs; standbys wait (yullu_cli.supervisor)
    BOOTSTRAP = 0x59554C4C5502  # web nodes starting together create the admin once (access.bootstrap)
    # (key, hashtext(name)): one per embedder or project.
    BACKFILL = 0x59_75_6C_01  # one embedding backfill per embedder (memories.embedding.backfill)
    RECONCILE = 0x59_75_6C_02  # one reconcile or compaction per project (sync)
    DREAM = 0x59_75_6C_03  # one dream pass per project (dreaming)
    INDEX_LOAD = 0x59_75_6C_04  # a load runs without an embedder's vector index (memories.embedding.vector_index)
    PROJECT_WRITE = 0x59_75_6C_18  # a project's writes take turns, transaction level (memories.write.create)


@contextmanager
def advisory_lock(key: LockKey, name: str = "") -> Iterator[bool]:
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


def held(key: LockKey, name: str = "") -> bool:
    """Whether some session holds the (key, hashtext(name)) lock now. A row saying a pass runs is
    true only while this holds: a process killed mid-pass leaves the row and takes the lock."""
    with connection.cursor() as cur:
        # pg_locks shows the two int4 halves as oids (unsigned): the hash as its low 32 bits.
        cur.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
            "AND classid = (%s::bigint & 4294967295)::oid AND objid = (hashtext(%s)::bigint & 4294967295)::oid)",
            [int(key), name],
        )
        return bool(cur.fetchone()[0])
