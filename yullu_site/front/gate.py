"""The front door of every HTTP request, before any of its body is read (issue 33).

- A request with a body to /api needs a valid token before Django sees it: Django reads (and spools
  to disk) the whole body before any view or authentication runs, so a 2 GB body without a token
  was read in full to answer 401. Here it is answered 401/429 with the body unread; uvicorn then
  closes the connection. /mcp does the same in `mcp_http.TokenAuth`.
- Every body is counted while it streams, whatever Content-Length says: past the limit the request
  is answered 413 and the application sees the client disconnect. Requests that no token or admin
  session vouches for (the admin's login form, anything else without a session) get a small limit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async

from access import ratelimit
from access.actor import ACTOR_KEY
from access.auth import bearer_from_header, refusal
from access.token_check import TokenChecker
from yullu_core import outage
from yullu_core.failures import database_refusal
from yullu_core.json_body import dumps

ASGIScope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[ASGIScope, Receive, Send], Awaitable[None]]

# Above Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) and the MCP SDK's 4 MB message limit, so a token
# holder's oversized request still gets their own specific message; this one bounds what is read at all.
BODY_LIMIT = 8 * 1024 * 1024
ANONYMOUS_BODY_LIMIT = 64 * 1024  # the admin's login form is well under 1 KB
SESSION_COOKIE = b"sessionid="  # Django's default SESSION_COOKIE_NAME
TOKEN_PATHS = ("/api/", "/mcp")
PUBLIC_PATHS = ("/api/status",)
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


def headers_of(scope: ASGIScope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def client_of(scope: ASGIScope) -> str:
    return str((scope.get("client") or ("", 0))[0])


async def check_token(tokens: TokenChecker, scope: ASGIScope) -> Refusal | None:
    """None when the request carries a valid token; else the answer (401, or 429 over the limit).
    Raises psycopg.Error when the database cannot be asked. A valid token's owner is left in the
    scope (access.actor.ACTOR_KEY): the MCP server reads it when it runs a tool, which may happen in
    the session's own task rather than this request's, out of reach of a context variable set here."""
    raw = bearer_from_header(headers_of(scope).get("authorization", ""))
    actor = await tokens.actor(raw) if raw else None
    if actor is not None:
        scope[ACTOR_KEY] = actor
        return None
    if ratelimit.refuse(client_of(scope)) == 429:
        return Refusal(429, ratelimit.THROTTLED)
    sentence = await sync_to_async(refusal)(raw)  # expired, revoked, or the general help (the token never echoed)
    return Refusal(401, sentence, ((b"www-authenticate", b'Bearer realm="yullu"'),))


async def send_json(
    send: Send,
    status: int,
    error: str,
    extra: tuple[tuple[bytes, bytes], ...] = (),
    payload: dict[str, Any] | None = None,
    close: bool = True,
) -> None:
    """A refusal (`{"error": …}`, or `payload`). It closes the connection (unless `close=False`): uvicorn would
    otherwise go on reading (and discarding) the rest of a body nobody wants, 100 MB of it if the client insists."""
    body = dumps({"error": error} if payload is None else payload)  # the one body shape (yullu_core.json_body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *([(b"connection", b"close")] if close else []),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def has_body(scope: ASGIScope) -> bool:
    headers = headers_of(scope)
    return scope["method"] in BODY_METHODS and (
        headers.get("content-length", "0").strip() not in ("", "0") or "transfer-encoding" in headers
    )


def needs_token_first(scope: ASGIScope) -> bool:
    """/api requests with a body: checked here, before Django reads it (/mcp checks in TokenAuth)."""
    path = scope["path"]
    return path.startswith("/api/") and path not in PUBLIC_PATHS and has_body(scope)


def body_limit(scope: ASGIScope) -> int:
    """Token paths are only read after their token passed; elsewhere an admin session cookie is needed."""
    if scope["path"].startswith(TOKEN_PATHS) and scope["path"] not in PUBLIC_PATHS:
        return BODY_LIMIT
    cookies = b";".join(v for k, v in scope.get("headers", []) if k.lower() == b"cookie")
    return BODY_LIMIT if SESSION_COOKIE in cookies else ANONYMOUS_BODY_LIMIT


def too_large(limit: int) -> str:
    return f"The request body is too large: the limit here is {limit // 1024} KB."


class Gate:
    """ASGI middleware for `app` (Django): token before body on /api, a streamed body limit everywhere."""

    def __init__(self, app: ASGIApp, tokens: TokenChecker) -> None:
        self.app, self.tokens = app, tokens

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if needs_token_first(scope):
            import psycopg

            try:
                refusal = await check_token(self.tokens, scope)
            except psycopg.Error as exc:
                await send_json(send, *refused_for_database(exc))
                return
            if refusal is not None:
                await send_json(send, refusal.status, refusal.error, refusal.headers)
                return
        await limit_body(self.app, scope, receive, send)


def refused_for_database(exc: BaseException) -> tuple[int, str]:
    """A token check's database failure as (status, sentence), a 503's counted into the web's outage, which says
    it once (yullu_core.outage), for /api's gate and /mcp's alike."""
    status, sentence = database_refusal(exc)
    if status == 503:
        outage.DATABASE.failed(exc)
    elif status == 507:
        outage.DISK.failed(exc)
    return status, sentence


async def limit_body(
    app: ASGIApp,
    scope: ASGIScope,
    receive: Receive,
    send: Send,
    limit: int | None = None,
    payload: Callable[[str], dict[str, Any]] | None = None,
    close: bool = True,
) -> None:
    """Run `app` with at most `limit` (else `body_limit(scope)`) bytes of body; past it, 413 and a disconnect,
    the sentence as `payload(sentence)` when given (/mcp's JSON-RPC error), else `{"error": …}`. `close=False`
    lets the server drain the rest of the body (bounded by an outer limit) so a client still sending it reads
    the answer instead of a reset connection."""
    limit = body_limit(scope) if limit is None else limit
    sentence = too_large(limit)
    body = None if payload is None else payload(sentence)
    declared = headers_of(scope).get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        await send_json(send, 413, sentence, payload=body, close=close)
        return
    seen = 0
    answered = False  # our 413 went out: whatever the app sends afterwards is dropped
    started = False

    async def counted_receive() -> dict[str, Any]:
        nonlocal seen, answered
        if answered:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                answered = True
                if not started:
                    await send_json(send, 413, sentence, payload=body, close=close)
                return {"type": "http.disconnect"}
        return message

    async def guarded_send(message: Mapping[str, Any]) -> None:
        nonlocal started
        if answered:
            return
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    await app(scope, counted_receive, guarded_send)
