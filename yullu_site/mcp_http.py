"""The MCP Streamable HTTP app with bearer-token auth and DNS-rebinding protection.

Mode: stateful by default (sessions in this process's memory; sampling for
dream_now works). With several uvicorn workers, a session would land on a worker
that does not know it, so `yullu serve --workers N>1` sets YULLU_MCP_STATELESS=1 (yullu_cli/supervisor.py):
every request is self-contained (sampling then falls back to the configured reasoner).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import psycopg
from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings

from yullu_site import ratelimit
from yullu_site.auth import bearer_from_header
from yullu_site.mcp_transport import streamable_http_app
from yullu_site.models import hash_token
from yullu_site.origins import allowed_origins
from yullu_site.token_check import TokenChecker

log = logging.getLogger("yullu.mcp")
# ASGI's types, for this module and yullu_site.asgi. Named ASGIScope: memories.scope.Scope is the
# project a memory belongs to, a different thing.
ASGIScope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[ASGIScope, Any, Any], Awaitable[None]]


def allowed_hosts() -> list[str]:
    hosts = []
    for host in settings.YULLU["server"]["allowed_hosts"]:
        hosts += [host, f"{host}:*"]
    return hosts


def transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts(), allowed_origins=allowed_origins()
    )


class TokenAuth:
    """Rejects requests without a valid `Authorization: Bearer` token (401, JSON body)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.tokens = TokenChecker()

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        raw = bearer_from_header(headers.get("authorization", ""))
        client = (scope.get("client") or ("", 0))[0]
        if ratelimit.blocked(client, hash_token(raw)):
            await _json(send, 429, "Too many failed token attempts; wait a minute and try again.")
            return
        try:
            valid = await self._is_valid(raw)
        except psycopg.Error as exc:
            log.warning("token check failed, database unavailable: %s", exc)
            await _json(send, 503, "The database is unavailable right now; try again shortly.")
            return
        if valid:
            ratelimit.record_success(hash_token(raw))
            await self.app(scope, receive, send)
            return
        ratelimit.record_failure(client)
        await _json(
            send,
            401,
            "Invalid or missing API token; run `yullu token` to see yours.",
            [(b"www-authenticate", b'Bearer realm="yullu"')],
        )

    async def _is_valid(self, raw: str) -> bool:
        # Asked of the database on every request, as the REST API does: a deleted token or a
        # deactivated user is refused at once, in every process (no per-process token cache).
        # One statement on the event loop's own connection: no hop through the thread pool.
        return await self.tokens.is_valid(raw)


async def _json(send: Send, status: int, error: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(extra or [])],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps({"error": error}).encode()})


def build_mcp_asgi() -> ASGIApp:
    from .mcp import get_server

    server = get_server()
    stateless = os.environ.get("YULLU_MCP_STATELESS", "") in ("1", "true")
    app = streamable_http_app(
        server, stateless=stateless, security_settings=transport_security(), talks_back=server.talks_back
    )
    return _Guarded(TokenAuth(app), app)


class _Guarded:
    """HTTP goes through auth; lifespan goes straight to the MCP app (it starts the session manager)."""

    def __init__(self, guarded: ASGIApp, inner: ASGIApp) -> None:
        self.guarded, self.inner = guarded, inner

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        target = self.inner if scope["type"] == "lifespan" else self.guarded
        await target(scope, receive, send)
