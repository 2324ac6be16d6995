"""The MCP Streamable HTTP app with bearer-token auth and DNS-rebinding protection.

Mode: stateful by default (sessions in this process's memory; sampling for
dream_now works). With several uvicorn workers (`yullu serve --workers N>1`) a session
lives in the worker that opened it, and a request reaching another worker is handed to it
(yullu_site.mcp.routing; the supervisor sets YULLU_MCP_ROUTE_DIR). YULLU_MCP_STATELESS=1
serves every request on its own (several web nodes without sticky routing): no sampling then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import psycopg
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from access.origins import HOST_REFUSED, allowed_origins, host_allowed, origin_allowed
from access.token_check import TokenChecker
from yullu_core.env import env_bool
from yullu_site.front.gate import check_token, headers_of, limit_body, refused_for_database, send_json
from yullu_site.mcp.routing import Router, route_dir
from yullu_site.mcp.transport import streamable_http_app

# ASGI's types, for this module and yullu_site.asgi. Named ASGIScope: memories.scope.Scope is the
# project a memory belongs to, a different thing.
ASGIScope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[ASGIScope, Any, Any], Awaitable[None]]


MCP_MESSAGE_LIMIT = DEFAULT_MAX_REQUEST_BODY_SIZE  # the SDK's (4 MB), which stays behind ours as a backstop


def transport_security() -> TransportSecuritySettings:
    # Host and Origin are checked by TokenAuth with the site's own rules (access.origins), before
    # the token: the SDK's prefix match let `127.0.0.1:PORT@evil.example` through.
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def jsonrpc_error(sentence: str) -> dict[str, Any]:
    """A refusal as a JSON-RPC error, which MCP clients show: the SDK reads a non-2xx body that is one, and
    says "Server returned an error response" for any other (seen on the walk while PostgreSQL restarted, and
    for a revoked token, whose sentence says when: walk 10). Every refusal of /mcp's front gate is one.
    The id is null: the body, which holds the request's id, is not read before the token is checked."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": sentence}}


async def refuse(send: Send, status: int, sentence: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """The front gate's refusal of an /mcp request, as a JSON-RPC error (jsonrpc_error)."""
    await send_json(send, status, sentence, extra, payload=jsonrpc_error(sentence))


class TokenAuth:
    """Refuses a foreign Host (421) or Origin (403), then requests without a valid `Authorization: Bearer`
    token (401, or 429 past the failure limit: access.ratelimit), all before the body is read.
    The token is asked of the database on every request (a deleted or expired token or a deactivated
    user is refused at once, in every process); its owner is who the tools act for (yullu_site.mcp.server)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.tokens = TokenChecker()

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = headers_of(scope)
        if not host_allowed(headers.get("host", "")):
            await refuse(send, 421, HOST_REFUSED)
            return
        origin = headers.get("origin", "")
        if origin and not origin_allowed(origin, allowed_origins()):
            sentence = f"requests from origin {origin[:200]} are not allowed; add it to [server].allowed_origins."
            await refuse(send, 403, sentence)
            return
        try:
            # Asked of the database on every request, as the REST API does: a deleted token or a
            # deactivated user is refused at once, in every process (no per-process token cache).
            refusal = await check_token(self.tokens, scope)
        except psycopg.Error as exc:
            await refuse(send, *refused_for_database(exc))
            return
        if refusal is None:
            # The SDK's own limit answers a plain-text "Request body too large" that MCP clients show as "Server
            # returned an error response" (walk 16): ours, at the same size, says the limit as a JSON-RPC error.
            # The connection stays open so the client reads it: yullu_site.asgi's 8 MB limit bounds the drain.
            await limit_body(
                self.app, scope, receive, send, limit=MCP_MESSAGE_LIMIT, payload=jsonrpc_error, close=False
            )
            return
        await refuse(send, refusal.status, refusal.error, refusal.headers)


def build_mcp_asgi() -> ASGIApp:
    from .server import get_server

    server = get_server()
    stateless = env_bool("YULLU_MCP_STATELESS")
    folder = route_dir()
    router = Router(folder) if folder is not None and not stateless else None
    app = streamable_http_app(
        server, stateless=stateless, security_settings=transport_security(), talks_back=server.talks_back, router=router
    )
    guarded = _Guarded(TokenAuth(app), app)
    if router is not None:
        router.app = guarded  # the socket serves what the port does: the token is checked there too
    return guarded


class _Guarded:
    """HTTP goes through auth; lifespan goes straight to the MCP app (it starts the session manager)."""

    def __init__(self, guarded: ASGIApp, inner: ASGIApp) -> None:
        self.guarded, self.inner = guarded, inner

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        target = self.inner if scope["type"] == "lifespan" else self.guarded
        await target(scope, receive, send)
