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
a check that gets no answer within the connect timeout (yullu_core.failures.answer_timeout) is told
"not answering" (503) and leaves the connection behind, TCP keepalives notice a peer that vanished,
and after a failed connect the next requests fail at once for a moment instead of each waiting for
its own connect timeout.

A check that gets no answer is not cancelled: cancelling psycopg mid-statement makes it send
PostgreSQL a cancel request and wait for the statement's end, up to 5 s each, so a frozen server
(SIGSTOP) made a store wait 15 s for its 503 (walk 15). The statement goes on in its own task with
the connection, which no later check is given, and closes it once the server answers (SIGCONT) or
the connection breaks: one connection held, nothing left half done (the statement is one autocommit
UPDATE of `last_used_at`).
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
from yullu_core.failures import answer_timeout
from yullu_core.postgres import CONNECT_TIMEOUT

log = logging.getLogger("yullu.mcp")
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
    params.setdefault("connect_timeout", CONNECT_TIMEOUT)  # Django's own (settings.py) when it has one: 503, not a hang
    for key, value in KEEPALIVES.items():
        params.setdefault(key, value)
    params["application_name"] = APPLICATION_NAME
    return params


class TokenCheckUnavailable(psycopg.InterfaceError):
    """The check could not be asked now (not a lost connection: no retry; TokenAuth: 503)."""


class TokenCheckTimeout(TokenCheckUnavailable):
    """The database took the check and said nothing within the timeout: "not answering" (yullu_core.failures)."""

    database_timeout = True


def _settle(task: asyncio.Task[Any]) -> None:
    """A done callback: read the outcome of a check nobody awaits any more, so asyncio reports nothing."""
    if not task.cancelled():
        task.exception()


class TokenChecker:
    """One connection per event loop (uvicorn has one; tests may run several servers in one process)."""

    def __init__(self) -> None:
        self._compiled: tuple[sql.Composed, list[Any]] | None = None  # on first use: no query compiled at import
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._turn = asyncio.Lock()  # one check at a time on self._conn; a new connection gets a new one
        self._connecting = asyncio.Lock()
        self._failed_at = -RECONNECT_PAUSE
        self._failure: type[TokenCheckUnavailable] = TokenCheckUnavailable  # how the last connect failed

    async def is_valid(self, raw: str) -> bool:
        return await self.actor(raw) is not None

    async def actor(self, raw: str) -> Actor | None:
        """Who `raw` is the (unexpired) token of, if of an active user. Raises psycopg.Error when
        the database cannot be asked."""
        if not raw:
            return None
        key_hash = hash_token(raw)
        conn, turn = await self._connection()
        try:
            return await self._ask(conn, turn, key_hash)
        except psycopg.OperationalError as exc:  # e.g. PostgreSQL restarted since the last request (closed by _run)
            log.info("token check connection lost (%s); reconnecting", exc)
            return await self._ask(*await self._connection(), key_hash)

    async def _ask(self, conn: psycopg.AsyncConnection[Any], turn: asyncio.Lock, key_hash: str) -> Actor | None:
        """The check on `conn`, answered within the timeout or TokenCheckTimeout (the statement then goes on
        without this request: see the module's docstring)."""
        loop = asyncio.get_running_loop()
        timeout = answer_timeout()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                await turn.acquire()  # waiting for the turn is safe to cancel: no statement of ours runs yet
        except TimeoutError:
            raise TokenCheckTimeout(f"the token check waited {timeout:g} s for its turn") from None
        if conn.closed:  # the check before ours was left behind, and closed it when it ended
            turn.release()
            raise psycopg.OperationalError("the token check's connection was closed")
        asking = asyncio.ensure_future(self._run(conn, turn, key_hash))
        asking.add_done_callback(_settle)
        await asyncio.wait([asking], timeout=max(0.0, deadline - loop.time()))
        if not asking.done():
            if self._conn is conn:
                self._conn = None  # the next check connects anew; `asking` closes this one when it ends
            raise TokenCheckTimeout(f"the token check got no answer within {timeout:g} s")
        return asking.result()

    async def _run(self, conn: psycopg.AsyncConnection[Any], turn: asyncio.Lock, key_hash: str) -> Actor | None:
        # Prepared once per connection: planning this unique-key lookup cost more than running it.
        try:
            self._compiled = self._compiled or _statement()
            statement, params = self._compiled
            bound = [key_hash if p == _KEY else p for p in params]
            cur = await conn.execute(statement, bound, prepare=True)
            row = await cur.fetchone()
        except psycopg.OperationalError:
            if self._conn is conn:
                self._conn = None  # lost: the next check connects anew
            raise
        finally:
            if conn is not self._conn:  # lost, or left behind (no answer in time): closed while we hold its turn
                await self._close(conn)
            turn.release()
        return Actor(row[0], row[1], bool(row[2]), bool(row[3])) if row else None

    async def _connection(self) -> tuple[psycopg.AsyncConnection[Any], asyncio.Lock]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new loop: its own locks and connection (the old ones belong to a dead loop)
            self._loop, self._conn, self._connecting = loop, None, asyncio.Lock()
        async with self._connecting:
            if self._conn is None or self._conn.closed:
                if time.monotonic() - self._failed_at < RECONNECT_PAUSE:
                    raise self._failure("the database could not be reached a moment ago")
                try:
                    self._conn = await psycopg.AsyncConnection.connect(**_connection_params(), autocommit=True)
                except psycopg.Error as exc:
                    self._failed_at = time.monotonic()
                    timed_out = isinstance(exc, psycopg.errors.ConnectionTimeout)
                    self._failure = TokenCheckTimeout if timed_out else TokenCheckUnavailable
                    raise
                self._turn = asyncio.Lock()
            return self._conn, self._turn

    async def close(self) -> None:
        """Drop this loop's connection (a test or a benchmark that is done with the checker)."""
        if self._conn is not None:
            await self._forget(self._conn)

    async def _forget(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if self._conn is conn:
            self._conn = None
        await self._close(conn)

    @staticmethod
    async def _close(conn: psycopg.AsyncConnection[Any]) -> None:
        with contextlib.suppress(psycopg.Error, TimeoutError):
            async with asyncio.timeout(1.0):
                await conn.close()
