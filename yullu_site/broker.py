"""The default Celery broker: a queue table in the product's own PostgreSQL (`yullupg://`).

Why not kombu's `filesystem://` (wave 1) or `sqla://`: see docs/decisions.md. In short, a reader
of the filesystem transport can see a half-written message file (and dies on it), and both
transports forget a message once a worker has taken it, so a worker killed mid-task loses it.

Here a message is a row. Taking one marks it with the taking connection's backend pid (one
statement, `FOR UPDATE SKIP LOCKED`, so two workers never take the same row); acknowledging it
deletes the row; rejecting or restoring it clears the mark. A row whose mark names a backend that
no longer exists (its worker was killed, its connection cut) is released by the next poll of any
consumer, so the task runs again: every task is idempotent and acknowledged late.

Fanout (Celery's remote control) is not supported, as with kombu's SQL transport; Celery then
turns remote control, gossip and mingle off by itself.
"""

from __future__ import annotations

import json
import threading
import time
from queue import Empty
from typing import Any

import psycopg
from kombu.transport import TRANSPORT_ALIASES, virtual

TABLE = "yullu_site_brokermessage"
ALIAS = "yullupg"
SWEEP_EVERY = 2.0  # seconds between checks for messages taken by a dead connection


def register() -> None:
    """Let kombu resolve `yullupg://` to this module."""
    TRANSPORT_ALIASES.setdefault(ALIAS, "yullu_site.broker:Transport")


def connect() -> psycopg.Connection[Any]:
    """A connection of our own (never Django's: the consumer and publishers live in other threads)."""
    from django.db import connections

    params = connections["default"].get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


def release_orphans(conn: psycopg.Connection[Any]) -> int:
    """Make messages taken by connections that are gone available again. Returns how many."""
    cur = conn.execute(
        f"UPDATE {TABLE} SET owner = NULL, taken_at = NULL WHERE owner IS NOT NULL "
        "AND owner NOT IN (SELECT pid FROM pg_stat_activity)"
    )
    return cur.rowcount


def queue_depth() -> int:
    """Messages waiting (not taken), for /metrics."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {TABLE} WHERE owner IS NULL")
        return int(cur.fetchone()[0])


def table_ready() -> bool:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        return bool(cur.fetchone()[0])


class Channel(virtual.Channel):
    supports_fanout = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()  # acks may come from another thread than the consumer's
        self._rows: dict[str, int] = {}  # delivery tag → row id of messages this channel took
        self._swept = 0.0

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connect()
        return self._conn

    def _execute(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self.conn.execute(sql, params)

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        pass  # a queue is just a value in the table

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        return True

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        self._execute(f"INSERT INTO {TABLE} (queue, payload, created_at) VALUES (%s, %s, now())",
                      [queue, json.dumps(message)])  # fmt: skip
        if not self._consumers and not self._rows:
            # A publisher (web process, beat) sends rarely: hold no idle connection between sends, so
            # a restarted database or a dropped test database never finds one of ours left open.
            self._close_conn()

    def _close_conn(self) -> None:
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()
            self._conn = None

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        if time.monotonic() - self._swept > SWEEP_EVERY:
            self._swept = time.monotonic()
            with self._lock:
                release_orphans(self.conn)
        row = self._execute(
            f"UPDATE {TABLE} SET owner = pg_backend_pid(), taken_at = now() WHERE id = ("
            f"SELECT id FROM {TABLE} WHERE queue = %s AND owner IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
            ") RETURNING id, payload",
            [queue],
        ).fetchone()
        if row is None:
            raise Empty()
        message = json.loads(row[1])
        self._rows[message["properties"]["delivery_tag"]] = row[0]
        return message

    def _size(self, queue: str) -> int:
        return int(self._execute(f"SELECT count(*) FROM {TABLE} WHERE queue = %s AND owner IS NULL",
                                 [queue]).fetchone()[0])  # fmt: skip

    def _purge(self, queue: str) -> int:
        return int(self._execute(f"DELETE FROM {TABLE} WHERE queue = %s AND owner IS NULL", [queue]).rowcount)

    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        self._execute(f"DELETE FROM {TABLE} WHERE queue = %s", [queue])

    def _forget(self, delivery_tag: str, requeue: bool) -> None:
        row = self._rows.pop(delivery_tag, None)
        if row is None:
            return
        if requeue:
            self._execute(f"UPDATE {TABLE} SET owner = NULL, taken_at = NULL WHERE id = %s", [row])
        else:
            self._execute(f"DELETE FROM {TABLE} WHERE id = %s", [row])

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        self._forget(delivery_tag, requeue=False)
        super().basic_ack(delivery_tag, multiple=multiple)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        self._forget(delivery_tag, requeue=requeue)
        # Out of the QoS's unacked set without kombu's requeue: _forget already handed the row back.
        self.qos.ack(delivery_tag)

    def _restore(self, message: Any) -> None:
        # Unacked at shutdown: hand the same row back instead of copying it (the default re-puts).
        self._forget(message.delivery_tag, requeue=True)

    def _restore_at_beginning(self, message: Any) -> None:
        self._restore(message)

    def close(self) -> None:
        super().close()  # restores unacked messages first, so the connection is still needed
        self._close_conn()


class Transport(virtual.Transport):
    Channel = Channel
    polling_interval = 0.1  # an idle poll is one indexed no-op UPDATE; a slower poll caps throughput (acks_late)
    driver_type = "sql"
    driver_name = "yullupg"
    connection_errors = (*virtual.Transport.connection_errors, psycopg.OperationalError, psycopg.InterfaceError)
    channel_errors = (*virtual.Transport.channel_errors, psycopg.DatabaseError)

    def establish_connection(self) -> Any:
        # Connect once here, so a database that is down (restarting) fails here, where kombu retries
        # with backoff; the channel connects lazily, so otherwise every poll failed at once and the
        # worker's consumer restarted in a tight loop (RestartFreqExceeded, a traceback a second).
        # Closed at once: a publisher holds no idle connection (Channel._put).
        connect().close()
        return super().establish_connection()

    @property
    def default_connection_params(self) -> dict[str, Any]:
        return {}  # the database is Django's; no host (kombu would warn about defaulting to localhost)

    def driver_version(self) -> str:
        return psycopg.__version__
