"""`yullu serve --workers 2`: two uvicorn worker processes behind one port, MCP sessions routed to the
worker that opened them (yullu_site.mcp.routing), driven through the official MCP SDK client.
Per-process caches must not make one worker miss what the other wrote."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psutil
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from dreaming.services import record_messages
from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import REPO, product_env, wait_ready, wait_until


@pytest.fixture
def two_workers(django_db_setup: Any, tmp_path: Path) -> Iterator[tuple[str, str, int]]:
    port = free_port()
    home = tmp_path / "home"
    env = product_env(home, YULLU_PORT=str(port))
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yullu_cli.main", "serve", "--role", "web", "--workers", "2", "--port", str(port)],
            env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, output=lambda: log.read_text(errors="replace"))
        wait_until(lambda: _uvicorn_workers(proc.pid) >= 2, "two uvicorn worker processes", alive=proc)
        yield url, (home / "token").read_text().strip(), proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _uvicorn_workers(supervisor: int) -> int:
    try:
        procs = psutil.Process(supervisor).children(recursive=True)
    except psutil.Error:
        return 0
    return sum(1 for p in procs if "multiprocessing" in " ".join(p.cmdline()))


async def _retrieve_many(url: str, token: str, project: str, query: str, sessions: int) -> list[list[str]]:
    async def one() -> list[str]:
        async with http_session(url, token) as s:
            found = []
            for _ in range(3):
                is_error, body = await call(s, "retrieve_memories", query=query, project_id=project)
                assert not is_error, body
                found.append(",".join(hit["content"] for hit in body["results"]))
            return found

    return await asyncio.gather(*(one() for _ in range(sessions)))


def test_mcp_sessions_work_across_two_workers_and_every_worker_sees_a_new_memory(
    two_workers: tuple[str, str, int],
) -> None:
    url, token, _ = two_workers
    project = f"workers-{uuid.uuid4().hex[:8]}"
    fact = "The staging deploy waits for the schema migration job before switching traffic."
    query = "what does the staging deploy wait for?"

    # Both workers first see the project empty (and may cache what they learn about it)…
    before = asyncio.run(_retrieve_many(url, token, project, query, sessions=4))
    assert all(found == "" for session in before for found in session)

    async def store() -> dict[str, Any]:
        async with http_session(url, token) as s:
            is_error, body = await call(s, "store_memory", content=fact, category="process", project_id=project)
            assert not is_error, body
            return body

    assert asyncio.run(store())["created"] is True
    # …then every request, whichever worker answers it, finds the memory the other may have written.
    after = asyncio.run(_retrieve_many(url, token, project, query, sessions=4))
    assert all(found == fact for session in after for found in session), after


class _Split(httpx2.AsyncBaseTransport):
    """The client's requests, by kind, to one worker's socket or the other's: `initialize` to the first (which
    opens the session), everything after it (tool calls, the GET stream, the answer to a sampling request, the
    DELETE) to the second, which does not hold the session and must hand each to its owner."""

    def __init__(self, owner: str, other: str) -> None:
        self.owner = httpx2.AsyncHTTPTransport(uds=owner)
        self.other = httpx2.AsyncHTTPTransport(uds=other)
        self.sent: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        opening = request.method == "POST" and b'"initialize"' in request.content
        self.sent.append((request.method, "owner" if opening else "other"))
        return await (self.owner if opening else self.other).handle_async_request(request)

    async def aclose(self) -> None:
        await self.owner.aclose()
        await self.other.aclose()


def _worker_sockets(supervisor: int) -> list[str]:
    """Each uvicorn worker's own socket (yullu_site.mcp.routing), from the folder the supervisor gave them."""
    children = psutil.Process(supervisor).children(recursive=True)
    folder = next(Path(env["YULLU_MCP_ROUTE_DIR"]) for p in children if "YULLU_MCP_ROUTE_DIR" in (env := p.environ()))
    sockets = [folder / f"{p.pid}.sock" for p in children]
    return [str(sock) for sock in sockets if sock.exists()]


@pytest.mark.django_db(transaction=True)
def test_a_session_keeps_sampling_when_its_requests_reach_the_worker_that_did_not_open_it(
    two_workers: tuple[str, str, int],
) -> None:
    url, token, supervisor = two_workers

    project = f"routed-{uuid.uuid4().hex[:8]}"
    record_messages(project, "s1", [{"role": "user", "content": "we always run make lint before pushing"}])
    owner, other = _worker_sockets(supervisor)
    split = _Split(owner, other)
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(str(params.messages[0].content))
        reply = {"operations": [{"op": "create", "content": "Run make lint before every push", "category": "process"}]}
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=json.dumps(reply)), model="client-model"
        )

    def forwarded() -> float:
        scraped = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}).text
        found = re.search(r'^yullu_mcp_forwarded_total\{method="POST"\} (\S+)$', scraped, re.M)
        return float(found.group(1)) if found else 0.0

    capability = types.SamplingCapability()

    async def go() -> tuple[list[tuple[bool, Any]], float, tuple[bool, Any]]:
        http = httpx2.AsyncClient(transport=split, headers={"Authorization": f"Bearer {token}"}, timeout=120)
        async with (
            http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write, sampling_callback=sampling, sampling_capabilities=capability) as s,
        ):
            await s.initialize()
            query = "what do we run before pushing?"
            await call(s, "retrieve_memories", query=query, project_id=project)  # `initialized` (forwarded) is out
            before = forwarded()
            found = [await call(s, "retrieve_memories", query=query, project_id=project) for _ in range(3)]
            hops = forwarded() - before
            return found, hops, await call(s, "dream_now", project_id=project)

    found, hops, (dream_error, dreamed) = asyncio.run(go())
    assert not any(is_error for is_error, _ in found) and not dream_error, dreamed
    assert hops == 0  # a tool answered in JSON needs nothing of the session: answered where it landed
    assert len(asked) == 1 and "make lint" in asked[0]  # the owner sampled through the other worker's connection
    assert dreamed["ops_created"] == 1
    assert [who for _, who in split.sent].count("owner") == 1 and ("POST", "other") in split.sent
    assert forwarded() >= 2  # dream_now's call and the client's answer to its sampling request


def test_a_worker_socket_checks_the_token_too(two_workers: tuple[str, str, int]) -> None:
    url, _token, supervisor = two_workers
    sockets = _worker_sockets(supervisor)
    assert len(sockets) == 2
    for sock in sockets:
        with httpx.Client(transport=httpx.HTTPTransport(uds=sock)) as client:
            answer = client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401
