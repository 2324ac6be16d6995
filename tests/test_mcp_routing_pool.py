"""yullu_site.mcp.routing's forwarding between web workers, without a server: a worker's socket and another
worker's Router in one event loop."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from yullu_site.mcp.routing import Router

pytestmark = pytest.mark.anyio

STREAMS = 120  # GET streams held open through one owner: more than httpx's default pool (100 connections)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _owner_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A session's owner: GET is an SSE stream open as long as the session lasts, POST one JSON answer."""
    if scope["type"] != "http":
        return
    if scope["method"] == "GET":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
        await anyio.sleep_forever()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"ok": true}', "more_body": False})


def _scope(method: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "headers": [(b"host", b"127.0.0.1")]}  # fmt: skip


def _stays_connected() -> Any:
    """An ASGI receive: the request's (empty) body, then nothing until the client leaves (it does not)."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await anyio.sleep_forever()
        sent = True
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


async def test_a_forwarded_request_is_answered_while_many_sessions_streams_are_forwarded_to_the_same_owner(
    tmp_path: Path,
) -> None:
    """Every session's GET stream that landed on the other worker holds one connection to its owner for as long
    as the session lasts. httpx's pool held 100 and waited for a free one without a deadline: past 100 such
    streams, every forwarded request to that worker (a tool call, the initialize's follow-ups) hung for good."""
    owner = Router(tmp_path)
    owner.app = _owner_app
    other = Router(tmp_path)
    other.me = os.getpid() + 1  # another worker's Router, in this process
    async with owner.listening():
        first_bytes = anyio.Event()
        opened = 0

        async def stream() -> None:
            async def send(message: MutableMapping[str, Any]) -> None:
                nonlocal opened
                if message["type"] == "http.response.body" and message.get("body"):
                    opened += 1
                    if opened == STREAMS:
                        first_bytes.set()

            await other.forward(os.getpid(), _scope("GET"), b"", _stays_connected(), send)

        answered: list[MutableMapping[str, Any]] = []

        async def collect(message: MutableMapping[str, Any]) -> None:
            answered.append(message)

        async with anyio.create_task_group() as tg:
            for _ in range(STREAMS):
                tg.start_soon(stream)
            with anyio.move_on_after(30):  # a deadline against a hang, not a measure: it takes well under a second
                await first_bytes.wait()
                assert await other.forward(os.getpid(), _scope("POST"), b"{}", _stays_connected(), collect)
            tg.cancel_scope.cancel()
        assert opened == STREAMS
        assert [m["status"] for m in answered if m["type"] == "http.response.start"] == [200]
        for client in other._clients.values():
            await client.aclose()
