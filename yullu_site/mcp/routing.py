"""Stateful MCP sessions under several web workers: a session id names the worker that owns it, and a
worker hands a request for another worker's session to its owner.

`yullu serve --workers N` runs N uvicorn processes behind one listening socket; the kernel gives each new
connection to one of them. An MCP session (and with it dream_now's sampling, a server→client request on
the session's streams) lives in one process's memory. So, when the supervisor sets YULLU_MCP_ROUTE_DIR
(a private folder, 0700, made for this server's run):

- every worker listens on its own unix socket there, `<pid>.sock`, serving the same /mcp app;
- a session it opens is called `<pid>-<uuid>`;
- a request carrying another worker's session id is forwarded, body and headers as they came, to that
  worker's socket, and the owner's answer (a JSON body, or an SSE stream for as long as it lasts) is
  streamed back. The owner checks the token again (the request's own Authorization header): nothing is
  trusted because it came through the socket.

A keep-alive connection stays on the worker that accepted it, but clients open several (the SDK's client
spreads a session's calls over more than one, and the GET stream has its own): about half of a two-worker
server's requests land on the worker that does not hold their session (docs/benchmarks.md, round 25). Those that need
nothing of it (a tool call answered in one JSON body: every tool but dream_now) are answered where they
land (yullu_site.mcp.transport); the rest take the hop. A worker that is gone (restarted) has no socket:
its sessions answer 404 "Session not found", as a restarted stateful server's do, and clients initialize
again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio
import httpx
from starlette.types import Receive, Scope, Send

from yullu_core.env import env_str
from yullu_core.metrics import MCP_FORWARDED
from yullu_core.pids import pid_exists

log = logging.getLogger(__name__)

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

# A session id's owner part: the owner's process id. Anything else (a client's made-up id, a
# stateless server's, one from before routing) is not forwarded: it is this worker's to answer.
_OWNED = re.compile(r"^([0-9]{1,10})-[0-9a-f]{32}$")
# Not forwarded either way: they describe one hop's connection, not the request.
_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"proxy-connection"})


def route_dir() -> Path | None:
    """The folder of the workers' sockets, or None when this server runs one worker (no routing)."""
    value = env_str("YULLU_MCP_ROUTE_DIR")
    return Path(value) if value else None


def new_session_id(routed: bool) -> str:
    """A session id; under routing it names this process as the owner."""
    return f"{os.getpid()}-{uuid4().hex}" if routed else uuid4().hex


def owner_of(session_id: str) -> int | None:
    """The worker (process id) a session id names, or None when it names none."""
    match = _OWNED.match(session_id)
    return int(match.group(1)) if match else None


class Router:
    """One worker's side of routing: its own socket (while the app runs) and its clients to the others."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.me = os.getpid()
        self._clients: dict[int, httpx.AsyncClient] = {}
        self.relisten_every = 5.0  # seconds between looks at this worker's socket (a stat)
        self.app: ASGIApp | None = None  # what the socket serves: the guarded /mcp app (yullu_site.mcp.http)

    def socket_of(self, pid: int) -> Path:
        return self.folder / f"{pid}.sock"

    def foreign_owner(self, session_id: str | None) -> int | None:
        """The other worker owning this session, or None when it is this worker's (or nobody's) to answer:
        a session whose worker is gone is unknown here too (404), as a restarted server's sessions are."""
        owner = owner_of(session_id) if session_id else None
        if owner is None or owner == self.me or not self._alive(owner):
            return None
        return owner

    def _alive(self, pid: int) -> bool:
        return self.socket_of(pid).exists() and pid_exists(pid)  # a worker killed hard leaves its socket's file behind

    @contextlib.asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        """Serve `self.app` on this worker's socket while the context runs, listening there again if the socket
        is removed meanwhile."""
        path = self.socket_of(self.me)
        path.unlink(missing_ok=True)  # a process id reused after a crash
        servers = []
        # A worker (re)started while the folder is gone: the bind's OSError failed the app's start-up, and uvicorn
        # stops every worker when one fails to start (the whole web process, for a folder a /tmp cleaner removed).
        if (problem := _private_folder(self.folder)) is None:
            with contextlib.suppress(OSError):
                servers.append(await self._serve(path))
        if not servers:
            log.warning("cannot listen on %s (%s); trying again every %g s.", path, problem or "bind failed",
                        self.relisten_every)  # fmt: skip
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._keep_listening, path, servers)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                for client in self._clients.values():
                    await client.aclose()
                self._clients.clear()
                for server in servers:
                    await server.shutdown()
                path.unlink(missing_ok=True)

    async def _serve(self, path: Path) -> Any:
        import uvicorn

        app = self.app
        assert app is not None, "Router.app is set when the app is built"
        config = uvicorn.Config(
            app, uds=str(path), lifespan="off", log_config=None, access_log=False, proxy_headers=False,
            timeout_graceful_shutdown=1,
        )  # fmt: skip
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        quiet = _Quiet()  # uvicorn's "running on unix socket … (Press CTRL+C to quit)" is not for the user
        logging.getLogger("uvicorn.error").addFilter(quiet)
        try:
            await server.startup()
        finally:
            logging.getLogger("uvicorn.error").removeFilter(quiet)
        os.chmod(path, 0o600)
        return server

    async def _keep_listening(self, path: Path, servers: list[Any]) -> None:
        """The sockets' folder lives in /tmp, where a cleaner (systemd-tmpfiles, tmpreaper) or a hand may remove it.
        Then no worker reached another's sessions: every request that needed its session's owner (the first
        notification after initialize, the GET stream, dream_now) was 404 "Session not found", half of all new
        sessions failed until the server restarted (chaos round 26). Now each worker makes its socket again."""
        said = False
        while True:
            await anyio.sleep(self.relisten_every)
            if path.exists():
                said = False
                continue
            problem = _private_folder(self.folder)
            if problem is None:
                try:
                    servers.append(await self._serve(path))
                except OSError as exc:
                    problem = f"{path}: {exc.strerror}"
            if problem is None:
                log.warning("the socket %s was removed (a /tmp cleaner?); this worker listens there again.", path)
            elif not said:
                why = "this worker's MCP sessions fail (404) when a request reaches another worker"
                log.warning("cannot listen on %s again (%s): %s; restart `yullu serve`.", path, problem, why)
            said = problem is not None

    async def forward(self, owner: int, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Hand the request (its body read already) to its session's owner and stream the answer back.
        False when the owner is gone (nothing was sent: the caller answers as for an unknown session)."""
        await self._forget_the_gone()
        client = self._client(owner)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        request = client.build_request(
            scope["method"], "http://worker" + target.decode(), headers=headers, content=body
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError:
            return False
        MCP_FORWARDED.labels(method=scope["method"]).inc()  # /metrics: how often a client's connection missed
        try:
            await _relay(owner, response, receive, send)
        finally:
            await response.aclose()
        return True

    async def _forget_the_gone(self) -> None:
        """Close the clients of workers that are gone. One client per owner was kept for good: a worker restarted
        again and again (killed, or uvicorn's health check) left a client and its pool behind each time (review of
        round 25); now the cache holds the live workers' only. Judged by the process alone: a live worker's socket
        is missing for a moment after its folder was removed (it listens again), and closing its client then cut
        every answer streaming from it through this worker (the sessions' GET streams)."""
        for pid in [pid for pid in self._clients if not pid_exists(pid)]:
            await self._forget(pid)

    async def _forget(self, owner: int) -> None:
        client = self._clients.pop(owner, None)
        if client is not None:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    def _client(self, owner: int) -> httpx.AsyncClient:
        client = self._clients.get(owner)
        if client is None:
            # No cap on connections either: each session's GET stream that reached another worker holds one for as
            # long as the session lasts, and httpx's default pool (100, no pool deadline) made every forwarded request
            # past a hundred such sessions wait for good. The sessions' own limit (the SDK's max_sessions) bounds them.
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
            transport = httpx.AsyncHTTPTransport(uds=str(self.socket_of(owner)), limits=limits)
            # No read timeout: an SSE answer (dream_now, the GET stream) is open as long as the session wants.
            client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(None, connect=5.0))
            self._clients[owner] = client
        return client


def _private_folder(folder: Path) -> str | None:
    """Make the sockets' folder again, this user's and private (0700); what is wrong with it, else None. Its name is
    known: in /tmp, another user could have made one of that name first."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return f"{folder} is not a private folder of this user"
    return None


class _Quiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client left; the owner gets what came
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read given once more, then the client's own messages (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> dict[str, Any]:
        return pending.pop() if pending else dict(await receive())

    return again


async def _relay(owner: int, response: httpx.Response, receive: Receive, send: Send) -> None:
    """The owner's answer, sent on as it comes; stops (closing the owner's side) when the client leaves."""
    headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    async with anyio.create_task_group() as tg:

        async def client_left() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()

        tg.start_soon(client_left)
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.TransportError as exc:
            # The owner died mid-answer (killed, restarted). uvicorn logged it as a 30-line "Exception in ASGI
            # application" traceback (review of round 25). The client's SDK takes an SSE stream that ends
            # without its response as it takes a broken one (the request fails, the session opens again).
            log.warning("the worker (pid %s) answering this request through its socket is gone (%s); the answer ends "
                        "here.", owner, type(exc).__name__)  # fmt: skip
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        tg.cancel_scope.cancel()
