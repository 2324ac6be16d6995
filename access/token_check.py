"""The MCP endpoint's token check, on the event loop (issue 16).

Asked of the database on every request, as the REST API does (access.auth.user_for_token): a
deleted token or a deactivated user is refused at once, in every process. The rule itself is not
written here: the statement's WHERE is compiled from access.models.ApiTokenQuerySet.usable, the
queryset REST filters with (tests/test_token_rule.py asks both paths the same cases). But as one SQL
statement on one psycopg AsyncConnection per process and event loop, instead of the ORM in the
thread pool: no hop through the pool's 6 threads, no `select_related` compile, no health-check
`SELECT 1`: ~0.6 ms of CPU per check before, ~0.1 ms now (docs/benchmarks.md, round four).

The statement also stamps `last_used_at`, at most once a minute, like `user_for_token`.
A broken connection (PostgreSQL restarted) is replaced and the statement retried once; if that
fails too the error reaches the caller (TokenAuth answers 503). Every request of the process waits
on this one connection, so nothing may hold it long: the stamp skips a row someone else has locked,
a check that does not answer within ASK_TIMEOUT drops the connection (503), TCP keepalives notice
a peer that vanished, and after a failed connect the next requests fail at once for a moment
instead of each waiting for its own connect timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import psycopg
from django.contrib.auth import get_user_model
from django.db import connections
from django.db.models import Model
from psycopg import sql

from access.actor import Actor
from access.auth import STAMP_EVERY_S
from access.models import ApiToken, hash_token

log = logging.getLogger("yullu.mcp")
CONNECT_TIMEOUT = 5  # seconds; a database that does not answer is "unavailable" (503), not a hung request
ASK_TIMEOUT = 5.0  # seconds for the statement itself (it takes well under a millisecond)
RECONNECT_PAUSE = 2.0  # seconds after a failed connect during which checks fail at once
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
APPLICATION_NAME = "yullu-mcp-token-check"  # names the connection in pg_stat_activity


_KEY = "\x00key-hash"  # stands for the hash while the rule's query is compiled; the real one is bound per check


def _column(model: type[Model], field: str) -> sql.Identifier:
    column = model._meta.get_field(field).column  # type: ignore[union-attr]
    assert column is not None
    return sql.Identifier(column)


def _found() -> tuple[sql.SQL, list[Any]]:
    """The token rule (access.models.ApiTokenQuerySet.usable) as SQL, compiled by the ORM from the
    same queryset REST filters with: one rule, two runners. Returns the SQL and its parameters,
    with _KEY where the hash goes."""
    username = f"user__{get_user_model().USERNAME_FIELD}"
    found = ApiToken.objects.usable().filter(key_hash=_KEY)
    columns = found.values_list("pk", "last_used_at", "user_id", username, "user__is_superuser", "read_only")
    query, params = columns.query.sql_with_params()
    assert params.count(_KEY) == 1, "the token rule's SQL must bind the hash exactly once"
    return sql.SQL(query), list(params)


def _statement() -> tuple[sql.Composed, list[Any]]:
    found, params = _found()
    statement = sql.SQL(
        """WITH found(pk, used, user_id, username, is_superuser, read_only) AS ({found}), stamped AS (
            UPDATE {t_table} SET {t_used} = now() WHERE {t_pk} IN (
                SELECT s.{t_pk} FROM {t_table} s JOIN found ON s.{t_pk} = found.pk
                WHERE found.used IS NULL OR found.used < now() - {every}::interval
                FOR NO KEY UPDATE OF s SKIP LOCKED
            )
        )
        SELECT user_id, username, is_superuser, read_only FROM found"""
    ).format(
        found=found,
        t_table=sql.Identifier(ApiToken._meta.db_table),
        t_pk=_column(ApiToken, "id"),
        t_used=_column(ApiToken, "last_used_at"),
        every=sql.Literal(f"{STAMP_EVERY_S} seconds"),
    )
    return statement, params


def _connection_params() -> dict[str, Any]:
    """Django's own parameters for the default database, minus its sync cursor class."""
    params = connections["default"].get_connection_params()
    params.pop("cursor_factory", None)
    params.setdefault("connect_timeout", CONNECT_TIMEOUT)
    for key, value in KEEPALIVES.items():
        params.setdefault(key, value)
    params["application_name"] = APPLICATION_NAME
    return params


class TokenCheckUnavailable(psycopg.InterfaceError):
    """The check could not be answered in time (not a lost connection: no retry; TokenAuth: 503)."""


class TokenChecker:
    """One connection per event loop (uvicorn has one; tests may run several servers in one process)."""

    def __init__(self) -> None:
        self._compiled: tuple[sql.Composed, list[Any]] | None = None  # on first use: no query compiled at import
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._connecting = asyncio.Lock()
        self._failed_at = -RECONNECT_PAUSE

    async def is_valid(self, raw: str) -> bool:
        return await self.actor(raw) is not None

    async def actor(self, raw: str) -> Actor | None:
        """Who `raw` is the (unexpired) token of, if of an active user. Raises psycopg.Error when
        the database cannot be asked."""
        if not raw:
            return None
        key_hash = hash_token(raw)
        conn = await self._connection()
        try:
            return await self._ask(conn, key_hash)
        except psycopg.OperationalError as exc:  # e.g. PostgreSQL restarted since the last request
            log.info("token check connection lost (%s); reconnecting", exc)
            await self._forget(conn)
            return await self._ask(await self._connection(), key_hash)

    async def _ask(self, conn: psycopg.AsyncConnection[Any], key_hash: str) -> Actor | None:
        # The connection's own lock serialises the statements of concurrent requests.
        # Prepared once per connection: planning this unique-key lookup cost more than running it.
        try:
            async with asyncio.timeout(ASK_TIMEOUT):
                self._compiled = self._compiled or _statement()
                statement, params = self._compiled
                bound = [key_hash if p == _KEY else p for p in params]
                cur = await conn.execute(statement, bound, prepare=True)
                row = await cur.fetchone()
        except TimeoutError:
            await self._forget(conn)  # the requests queued behind it then reconnect
            raise TokenCheckUnavailable(f"the token check did not answer within {ASK_TIMEOUT:g} s") from None
        return Actor(row[0], row[1], bool(row[2]), bool(row[3])) if row else None

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new loop: its own lock and connection (the old ones belong to a dead loop)
            self._loop, self._conn, self._connecting = loop, None, asyncio.Lock()
        async with self._connecting:
            if self._conn is None or self._conn.closed:
                if time.monotonic() - self._failed_at < RECONNECT_PAUSE:
                    raise TokenCheckUnavailable("the database could not be reached a moment ago")
                try:
                    self._conn = await psycopg.AsyncConnection.connect(**_connection_params(), autocommit=True)
                except psycopg.Error:
                    self._failed_at = time.monotonic()
                    raise
            return self._conn

    async def close(self) -> None:
        """Drop this loop's connection (a test or a benchmark that is done with the checker)."""
        if self._conn is not None:
            await self._forget(self._conn)

    async def _forget(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if self._conn is conn:
            self._conn = None
        with contextlib.suppress(psycopg.Error, TimeoutError):
            async with asyncio.timeout(1.0):
                await conn.close()
