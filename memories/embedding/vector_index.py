"""HNSW indexes: one partial index per embedder, on `vector::vector(dim)` with cosine ops.

Vectors of every embedder share one table (so switching model is a backfill,
not a wipe); a partial expression index per embedder id keeps each one searchable.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from django.db import OperationalError, connection, transaction

from yullu_core.locks import LockKey, advisory_lock, held

log = logging.getLogger(__name__)

# (embedder id, dim) -> when this process last saw its index (time.monotonic()); inf while this
# process loads without it on purpose (paused_for_load).
_known: dict[tuple[str, int], float] = {}
# How long a process trusts that an index it saw is still there. A load that drops it and is killed
# before building it again (kill -9 of `yullu import`, of a worker reconciling a large log) left it
# missing, and every running process trusted it for good: searches scanned every vector until a
# restart. One to_regclass a minute per process finds it gone.
RECHECK_S = 60.0


def index_name(embedder_id: str, dim: int) -> str:
    return "memvec_hnsw_" + hashlib.sha256(f"{embedder_id}:{dim}".encode()).hexdigest()[:12]


def ensure_index(embedder_id: str, dim: int) -> None:
    """Create the HNSW index for this embedder if missing. Idempotent; cached per process for
    RECHECK_S. Left missing while another process loads without it (paused_for_load)."""
    seen = _known.get((embedder_id, dim))
    if seen is not None and time.monotonic() - seen < RECHECK_S:
        return
    name = index_name(embedder_id, dim)
    if _exists(name):
        _known[(embedder_id, dim)] = time.monotonic()
        return
    if held(LockKey.INDEX_LOAD, name):
        return  # a load builds it when it is done; searches scan exactly meanwhile
    if seen is not None:
        log.warning("the vector index %s is missing (a load that dropped it was stopped?); building it again", name)
    with connection.cursor() as cur:
        if connection.in_atomic_block:
            # Deferred FK checks queued earlier in this transaction would block CREATE INDEX.
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # Concurrent first writers would race on IF NOT EXISTS (a duplicate-key error in pg_class):
        # they take turns on a lock named after the index.
        cur.execute("SELECT pg_advisory_lock(hashtext(%s))", [name])
        try:
            cur.execute(_create_sql(embedder_id, dim, if_not_exists=True))
        finally:
            cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", [name])
    _known[(embedder_id, dim)] = time.monotonic()


def _create_sql(embedder_id: str, dim: int, *, if_not_exists: bool = False) -> str:
    literal = embedder_id.replace("'", "''")
    return (
        f"CREATE INDEX {'IF NOT EXISTS ' if if_not_exists else ''}{index_name(embedder_id, dim)} "
        f"ON memories_memoryvector USING hnsw ((vector::vector({int(dim)})) vector_cosine_ops) "
        f"WHERE embedder = '{literal}'"
    )


# A load this large, and at least as large as what the index holds, builds the index afterwards
# instead of inserting into it: pgvector builds a graph about three times faster than it inserts
# the same vectors one by one (2,000 vectors: 0.5 s against 1.8 s, docs/benchmarks.md), so even
# rebuilding what was there (at most as many again) costs less.
BUILD_AFTER_FROM = 1_000
LOCK_WAIT = "2s"  # how long the load waits for searches running meanwhile before it inserts instead
BUILD_MEMORY = "512MB"  # maintenance_work_mem for the build: the graph of 100k vectors fits
# A build of fewer vectors runs in this process alone: parallel workers cost more than they save
# below ~3,000 vectors on 2 cores (2,000 real vectors: 0.22 s serial against 0.34-0.73 s with two
# workers, which PostgreSQL starts once the table passes 8 MB, dead rows of earlier loads counted;
# 4,000 clustered: 0.76 s serial, 0.65 s parallel; docs/benchmarks.md).
SERIAL_BELOW = 3_000


@contextmanager
def built_after_load(embedder_id: str, dim: int, rows: int) -> Iterator[None]:
    """Around a load of `rows` vectors of one embedder inside a transaction: when the load is at
    least BUILD_AFTER_FROM and at least as large as what the index holds (a first import, a first
    reconcile), drop the HNSW index first and build it again after the load, in the same
    transaction. A failed load rolls the drop back with it (the index is never lost); searches
    running meanwhile wait for the commit (the drop locks the vector table), so the drop waits at
    most LOCK_WAIT for the ones already running and otherwise the load inserts as usual."""
    if rows < BUILD_AFTER_FROM or not connection.in_atomic_block or not _small_beside(embedder_id, dim, rows):
        yield
        return
    if not _dropped(index_name(embedder_id, dim)):
        yield
        return
    yield
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # CREATE INDEX refuses to run with FK checks pending
        _build(cur, embedder_id, dim, rows)
        cur.execute("SET CONSTRAINTS ALL DEFERRED")  # as Django declares its foreign keys


def _build(cur: Any, embedder_id: str, dim: int, rows: int, *, if_not_exists: bool = False) -> None:
    """Build the embedder's index after a load of `rows` vectors, in the caller's transaction: with
    BUILD_MEMORY, by this process alone below SERIAL_BELOW vectors; the session's settings after."""
    cur.execute("SELECT current_setting('maintenance_work_mem'), current_setting('max_parallel_maintenance_workers')")
    memory, parallel = cur.fetchone()
    _set_build(cur, BUILD_MEMORY, "0" if rows < SERIAL_BELOW else parallel)
    cur.execute(_create_sql(embedder_id, dim, if_not_exists=if_not_exists))
    # CREATE INDEX resets the table's row count but leaves its columns without statistics: the
    # planner then guessed one row per project and sorted a large project instead of using the index.
    cur.execute("ANALYZE memories_memoryvector")
    _set_build(cur, memory, parallel)


@contextmanager
def paused_for_load(embedder_id: str, dim: int, rows: int) -> Iterator[None]:
    """Around a load of `rows` vectors committed in several transactions (a first reconcile of a large
    team log applies 200 memories a transaction): when the load is at least BUILD_AFTER_FROM and at
    least as large as what the index holds, the index is dropped before the load and built again
    after it, each in a transaction of its own. Inserting 50,000 vectors one by one into the growing
    graph was most of a 100,000-file reconcile (docs/benchmarks.md).

    Meanwhile searches of this embedder scan its vectors exactly (the same results, slower); if the
    build fails or the process dies first, the next `ensure_index` of any process builds it again."""
    if connection.in_atomic_block or rows < BUILD_AFTER_FROM or not _small_beside(embedder_id, dim, rows):
        yield
        return
    name = index_name(embedder_id, dim)
    with advisory_lock(LockKey.INDEX_LOAD, name) as loading:  # other processes leave the index to us
        if not loading or (_exists(name) and not _dropped(name)):
            yield
            return
        _known[(embedder_id, dim)] = math.inf  # this process's writes must not build it (again) halfway
        try:
            yield
        finally:
            _build_after(embedder_id, dim, rows)


def _build_after(embedder_id: str, dim: int, rows: int) -> None:
    name = index_name(embedder_id, dim)
    try:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])  # as ensure_index's builders
            _build(cur, embedder_id, dim, rows, if_not_exists=True)
    except Exception as exc:
        _known.pop((embedder_id, dim), None)  # the next search here tries again
        # One line: the caller reports the error itself (a killed database: `yullu import` printed
        # a traceback of three chained exceptions before its one sentence).
        log.warning("the vector index %s could not be built again after the load (%s); searches will build it",
                    name, " ".join(str(exc).split())[:300])  # fmt: skip
        raise
    _known[(embedder_id, dim)] = time.monotonic()


def _set_build(cur: Any, memory: str, workers: str) -> None:
    """The build's settings, for the rest of the transaction."""
    cur.execute(
        "SELECT set_config('maintenance_work_mem', %s, true), set_config('max_parallel_maintenance_workers', %s, true)",
        [memory, workers],
    )


def _small_beside(embedder_id: str, dim: int, rows: int) -> bool:
    """Whether the index holds fewer vectors than `rows` (counted no further than that)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_memoryvector WHERE embedder = %s AND dim = %s LIMIT %s) t",
            [embedder_id, dim, rows],
        )
        (indexed,) = cur.fetchone()
    return int(indexed) < rows


def _exists(name: str) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return bool(cur.fetchone()[0])


def _dropped(name: str) -> bool:
    """Drop the index if it exists and its table's lock comes within LOCK_WAIT."""
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL, current_setting('lock_timeout')", [name])
        exists, wait = cur.fetchone()
        if not exists:
            return False
        try:
            with transaction.atomic():
                cur.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
                cur.execute(f"DROP INDEX {name}")
        except OperationalError:  # lock_timeout: searches kept the table busy
            log.info("vector index %s kept: the table stayed busy; inserting into it", name)
            return False
        finally:
            cur.execute("SELECT set_config('lock_timeout', %s, true)", [wait])
    return True


def forget_cache() -> None:
    _known.clear()


_last_literal = threading.local()


def vector_literal(vector: np.ndarray) -> str:
    """The pgvector text of `vector`. One search formats its query vector for the dense search,
    the candidate details, the date windows and the feedback lookup (and again for the user scope):
    the last one is kept per thread, keyed by the array itself. Formatting Python floats rather
    than numpy scalars halves the cost (~0.25 ms per 384-dim vector before, ~5 % of a retrieve)."""
    if getattr(_last_literal, "vector", None) is vector:
        return str(_last_literal.text)
    text = "[" + ",".join(map("{:.7f}".format, vector.tolist())) + "]"
    _last_literal.vector, _last_literal.text = vector, text
    return text
