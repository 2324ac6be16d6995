"""The MCP token check runs on the event loop's own connection (access/token_check.py) and
still asks the database on every request. The deleted-token case: tests/test_caches.py; PostgreSQL
down → 503: tests/test_faults.py."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection

from access import auth, services
from access.models import ApiToken
from access.token_check import APPLICATION_NAME
from tests.mcp_client import http_session

pytestmark = pytest.mark.django_db(transaction=True)


def initialize(url: str, raw: str) -> httpx.Response:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        headers={"accept": "application/json, text/event-stream", "authorization": f"Bearer {raw}"},
        timeout=30,
    )


def test_a_deactivated_users_token_is_refused_by_mcp_at_once(live_server_url: str, owner: Any) -> None:
    _, raw = ApiToken.issue(owner)
    assert initialize(live_server_url, raw).status_code == 200
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    refused = initialize(live_server_url, raw)
    assert refused.status_code == 401 and "yullu token" in refused.json()["error"]["message"]  # JSON-RPC


def test_the_token_check_stamps_last_used_at_at_most_once_a_minute(live_server_url: str, owner: Any) -> None:
    token, raw = ApiToken.issue(owner)
    assert initialize(live_server_url, raw).status_code == 200
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    assert initialize(live_server_url, raw).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at == first


def test_a_lost_connection_is_replaced_without_failing_the_request(live_server_url: str, owner_token: str) -> None:
    assert initialize(live_server_url, owner_token).status_code == 200
    with connection.cursor() as cur:  # what a PostgreSQL restart does to the checker's connection
        cur.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            [APPLICATION_NAME],
        )
        assert cur.fetchone()[0] >= 1
    assert initialize(live_server_url, owner_token).status_code == 200


def test_a_token_row_locked_elsewhere_does_not_hold_up_the_check(live_server_url: str, owner: Any) -> None:
    # Every request of the process waits on the checker's one connection, so the once-a-minute
    # stamp must not wait for a row lock someone else holds (an admin saving the token, say).
    token, raw = ApiToken.issue(owner)

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params) as other:  # its own transaction, holding the token's row
        other.execute(f"SELECT 1 FROM {ApiToken._meta.db_table} WHERE id = %s FOR UPDATE", [token.pk])
        answered = initialize(live_server_url, raw)  # token never used: its stamp is due
        assert answered.status_code == 200
        other.rollback()
    token.refresh_from_db()
    assert token.last_used_at is None  # skipped, not waited for: the next request stamps it
    assert initialize(live_server_url, raw).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_mcp_sdk_client_shows_why_a_token_is_refused(live_server_url: str, owner: Any) -> None:
    """The refusal is a JSON-RPC error, so the SDK raises it with our sentence; any other body it replaced with
    "Server returned an error response", and a revoked token's owner could not tell why (walk 10)."""
    token, raw = ApiToken.issue(owner, "lost laptop")
    services.revoke_token(token.pk)

    async def connect() -> None:
        async with http_session(live_server_url, raw):
            pass

    with pytest.raises(BaseException) as refused:
        asyncio.run(connect())
    said = _messages(refused.value)
    assert any("was revoked on" in m for m in said), said
    assert not any(raw in m for m in said)


def test_a_revoked_token_is_told_so_after_the_connection_went_stale(owner: Any) -> None:
    """The front gate asks for the reason from a thread outside Django's request cycle; a connection PostgreSQL
    dropped (a restart, or a test that killed it before) once turned the reason into the general sentence."""
    token, raw = ApiToken.issue(owner, "old laptop")
    services.revoke_token(token.pk)
    connection.ensure_connection()
    connection.connection.close()  # what a PostgreSQL restart leaves behind: Django still holds it as open
    assert "was revoked on" in auth.refusal(raw)


def _messages(exc: BaseException) -> list[str]:
    """The messages of an exception and of those an exception group holds (anyio's task groups wrap them)."""
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in _messages(inner)]
    return [str(exc)]
