"""Streamable HTTP that answers a POST with one JSON body when nothing but the response can follow
it, and with an SSE stream only when something can (issue 16).

An SSE answer costs the web process a task group, two memory streams and an EventSourceResponse
per request; a JSON body costs none of that (docs/benchmarks.md, round four). The SDK offers JSON
for the whole server only, which would take away dream_now's sampling (a server→client request in
the middle of the call, carried on that POST's SSE stream). The spec lets the server choose per
POST, so here:

- `tools/call` of a tool that takes the MCP `Context` (it may sample, log or report progress:
  dream_now) → SSE, exactly as before;
- every other request (the other tools, initialize, tools/list, ping…) → one JSON body.

Built on internals of mcp==2.3.0's StreamableHTTPServerTransport and StreamableHTTPSessionManager,
which is why requirements.txt pins the SDK exactly: `is_json_response_enabled` is read while the
SDK serves a POST (`_handle_post_request`, `_validate_accept_header`, `_message_metadata`) and by
the session's `message_router` task; `_admit_session` builds the transport. Re-run
tests/test_mcp_json.py when upgrading the SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Self

import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.types import JSONRPCError, JSONRPCResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from yullu_site.mcp.routing import Router, new_session_id, read_body, replay

# True while this transport serves a POST it answers in JSON. A context variable, not an attribute:
# one session serves several POSTs at once (a dream_now on SSE beside retrieves in JSON), and the
# session's message router, a task of its own, must keep seeing False.
_json_body: ContextVar[bool] = ContextVar("yullu_mcp_json_body", default=False)

TalksBack = Callable[[str], bool]  # tool name → may it send anything to the client mid-call?
# True while a request for another worker's session is answered in this one (SelectiveJsonSessionManager).
_answered_here: ContextVar[bool] = ContextVar("yullu_mcp_answered_here", default=False)


class SelectiveJsonTransport(StreamableHTTPServerTransport):
    def __init__(self, *args: Any, talks_back: TalksBack, **kwargs: Any) -> None:
        self._talks_back = talks_back
        self._json_requests: set[str] = set()  # ids of the requests being answered in JSON
        super().__init__(*args, **kwargs)

    @property
    def is_json_response_enabled(self) -> bool:
        return _json_body.get()

    @is_json_response_enabled.setter
    def is_json_response_enabled(self, value: bool) -> None:
        if value:  # the SDK's __init__ stores the manager's global choice; ours is per request
            raise ValueError("SelectiveJsonTransport decides JSON per request; build it with json_response=False.")

    async def _handle_post_request(self, scope: Scope, request: Request, receive: Receive, send: Send) -> None:
        request_id = self._answerable_in_json(await request.body())  # Starlette keeps the body for the SDK
        if request_id is None:
            await super()._handle_post_request(scope, request, receive, send)
            return
        token = _json_body.set(True)
        self._json_requests.add(request_id)
        try:
            await super()._handle_post_request(scope, request, receive, send)
        finally:
            self._json_requests.discard(request_id)
            _json_body.reset(token)

    def _answerable_in_json(self, body: bytes) -> str | None:
        return answerable_in_json(body, self._talks_back)

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
        async with super().connect() as (read_stream, write_stream):
            yield read_stream, _DropRelatedToJson(write_stream, self._json_requests)


def answerable_in_json(body: bytes, talks_back: TalksBack) -> str | None:
    """The id of a JSON-RPC request that only its response can follow, else None."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None  # the SDK answers the parse error
    if not isinstance(message, dict) or message.get("id") is None or not isinstance(message.get("method"), str):
        return None  # notifications, responses, batches: the SDK's usual way
    if message["method"] == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str) or talks_back(name):
            return None
    return str(message["id"])  # the SDK keys its request streams by str(id)


class _DropRelatedToJson:
    """The session's write stream, minus the notifications tied to a request answered in JSON.

    The SDK's message router routes such a notification (a log line, progress) into the request's
    stream unless JSON mode is on for the whole transport, and the SDK's JSON branch takes the first
    message there for the response. A JSON body can carry only the response, so they are dropped
    here, as the SDK drops them in its own JSON mode."""

    def __init__(self, inner: WriteStream[SessionMessage], json_requests: set[str]) -> None:
        self._inner = inner
        self._json_requests = json_requests

    async def send(self, item: SessionMessage, /) -> None:
        meta = item.metadata
        if (
            not isinstance(item.message, JSONRPCResponse | JSONRPCError)
            and isinstance(meta, ServerMessageMetadata)
            and meta.related_request_id is not None
            and str(meta.related_request_id) in self._json_requests
        ):
            return
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class SelectiveJsonSessionManager(StreamableHTTPSessionManager):
    """Stateful sessions whose transports choose JSON or SSE per POST (stateless mode has no
    back-channel to keep, so it uses the SDK's own `json_response=True`)."""

    def __init__(self, *args: Any, talks_back: TalksBack, router: Router | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._talks_back = talks_back
        self.router = router

    @property
    def json_response(self) -> bool:
        return self._json_everywhere or _answered_here.get()

    @json_response.setter
    def json_response(self, value: bool) -> None:  # the SDK's __init__ stores the manager's choice here
        self._json_everywhere = value

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = Request(scope).headers.get(MCP_SESSION_ID_HEADER)
        owner = None
        if self.router is not None and session_id not in self._server_instances:
            owner = self.router.foreign_owner(session_id)
        if owner is None or self.router is None:
            await super()._handle_stateful_request(scope, receive, send)
            return
        # Another worker's session (yullu_site.mcp.routing). A request that only its response can follow
        # (every tool but dream_now, tools/list, ping) needs nothing of the session: it is answered here, in
        # JSON, as stateless mode answers it, which costs less than the hop. Whatever needs the session
        # (dream_now, the answer to a sampling request, the GET stream, DELETE) goes to its owner; if the
        # owner is gone, the SDK answers 404 "Session not found" below.
        body = await read_body(receive)
        again = replay(body, receive)
        if scope["method"] == "POST" and answerable_in_json(body, self._talks_back) is not None:
            version = Request(scope).headers.get(MCP_PROTOCOL_VERSION_HEADER)
            here = _answered_here.set(True)  # read (as json_response) while the SDK builds the request's transport
            try:
                await self._handle_stateless_request(version, scope, again, send)
            finally:
                _answered_here.reset(here)
            return
        if await self.router.forward(owner, scope, body, again, send):
            return
        await super()._handle_stateful_request(scope, again, send)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        # mcp 2.3.0's _admit_session, building our transport instead of the SDK's.
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = SelectiveJsonTransport(
            mcp_session_id=new_session_id(routed=self.router is not None),
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
            talks_back=self._talks_back,
        )
        session_id = transport.mcp_session_id
        assert session_id is not None
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport


def streamable_http_app(
    server: MCPServer,
    *,
    stateless: bool,
    security_settings: TransportSecuritySettings | None,
    talks_back: TalksBack,
    router: Router | None = None,
) -> Starlette:
    """What `server.streamable_http_app()` builds (no SDK auth: yullu_site.mcp.http.TokenAuth guards
    it), with our session manager. Stateless requests have no back-channel at all (dream_now's
    sampling falls back to the configured reasoner), so there every POST is answered in JSON."""
    manager = SelectiveJsonSessionManager(
        app=server._lowlevel_server,
        stateless=stateless,
        json_response=stateless,
        security_settings=security_settings,
        talks_back=talks_back,
        router=None if stateless else router,
    )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(manager.run())
            if manager.router is not None:  # this worker's socket, for the others' requests to its sessions
                await stack.enter_async_context(manager.router.listening())
            yield

    return Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)
