"""Chaos drills, round 26 (docs/reliability.md, "Chaos drills (round 26)"): `yullu serve --workers 2`, its web
workers handing MCP sessions to each other over unix sockets (yullu_site.mcp.routing); the review's leftovers of
round 25: a routing client kept per gone worker, an owner dying mid-answer, two processes replacing a damaged secret
key at once."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.conftest import free_port
from tests.processes import REPO, product_env, wait_ready, wait_until
from yullu_core.paths import write_private
from yullu_site import settings as site_settings
from yullu_site.mcp.routing import Router

pytestmark = pytest.mark.anyio

KEY = "k" * 40  # what the other process wrote


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _gone_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def _scope(method: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "headers": [(b"host", b"127.0.0.1")]}  # fmt: skip


async def _receive() -> dict[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError  # never reached: the client stays


async def _owner_answering_then_dying(path: Path, answered: anyio.Event) -> None:
    """A session's owner over its socket: the SSE answer's head and one event, then the process is gone (the
    connection closes in the middle of the chunked body, as a `kill -9` leaves it)."""
    listener = await anyio.create_unix_listener(path)

    async def serve(conn: anyio.abc.SocketStream) -> None:
        async with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await conn.receive()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            await conn.send(head + b"8\r\n: open\n\n\r\n")
            answered.set()

    async with listener:
        await listener.serve(serve)


async def test_an_owner_gone_mid_answer_is_one_line_and_the_answer_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker killed while another relayed its SSE answer (a session's GET stream, dream_now): the relay's
    RemoteProtocolError went out of the ASGI app, and uvicorn logged "Exception in ASGI application" and a
    30-line traceback. Now one warning, and the relayed answer ends (the client's SDK opens the session again)."""
    relay = Router(tmp_path)
    relay.me = os.getpid() + 1  # another worker's Router, in this process
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    answered = anyio.Event()
    with caplog.at_level(logging.WARNING, logger="yullu_site.mcp.routing"):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_owner_answering_then_dying, tmp_path / f"{os.getpid()}.sock", answered)
            with anyio.fail_after(30):  # a deadline against a hang, not a measure
                while not (tmp_path / f"{os.getpid()}.sock").exists():
                    await anyio.sleep(0.01)
                assert await relay.forward(os.getpid(), _scope("GET"), b"", _receive, send)
            tg.cancel_scope.cancel()
    await relay._forget(os.getpid())
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [200]
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b": open\n\n"
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert [r.getMessage() for r in caplog.records] == [
        f"the worker (pid {os.getpid()}) answering this request through its socket is gone (RemoteProtocolError); "
        "the answer ends here."
    ]
    assert all(r.exc_info is None for r in caplog.records)


async def test_the_clients_of_gone_workers_are_closed_and_forgotten(tmp_path: Path) -> None:
    """One routing client (and its connection pool) was kept per owner for the worker's life: a worker restarted
    again and again left one more each time. Now the next forward closes those of workers that are gone."""
    router = Router(tmp_path)
    router.me = os.getpid() + 1
    gone = [_gone_pid() for _ in range(3)]
    for pid in gone:
        (tmp_path / f"{pid}.sock").touch()  # a worker killed hard leaves its socket's file behind
        router._client(pid)
    clients = [router._clients[pid] for pid in gone]
    forwarded = await router.forward(gone[0], _scope("POST"), b"{}", _receive, _never_sent)
    assert forwarded is False  # the caller answers 404 "Session not found"
    assert set(router._clients) <= {gone[0]}  # only the one just asked for, forgotten at the next forward
    await router.forward(os.getpid(), _scope("POST"), b"{}", _receive, _never_sent)
    assert not set(router._clients) & set(gone)
    assert all(client.is_closed for client in clients)
    await router._forget(os.getpid())


async def _never_sent(message: MutableMapping[str, Any]) -> None:
    raise AssertionError(f"nothing is sent for a gone owner: {message}")


def test_two_processes_replacing_a_damaged_secret_key_at_once_use_one_key(tmp_path: Path) -> None:
    """Two processes found the key file damaged at once; each wrote a key of its own and kept using it, while the
    file held the other's. Here the other process holds the file while this one replaces it: this one must wait
    and take the other's key."""
    path = tmp_path / "secret_key"
    path.write_bytes(b"\0" * 67)
    got: list[str] = []
    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the other process, replacing the file
        replacing = threading.Thread(target=lambda: got.append(site_settings._new_secret_key(path)))
        replacing.start()
        replacing.join(0.5)  # without the lock it is done by now (with it, it waits: either way the check below)
        write_private(path, KEY + "\n")
    replacing.join(30)
    assert got == [KEY] and path.read_text() == KEY + "\n"


def _web_workers(supervisor: int) -> list[psutil.Process]:
    procs = psutil.Process(supervisor).children(recursive=True)
    return [p for p in procs if "multiprocessing.spawn" in " ".join(p.cmdline())]


def _gone(procs: list[psutil.Process]) -> bool:
    return not [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.faults
def test_a_killed_supervisors_web_workers_die_with_it_and_the_next_start_removes_its_sockets_folder(
    django_db_setup: Any, tmp_path: Path
) -> None:
    """`kill -9` of `yullu serve --workers 2`: uvicorn's parent died with it, but its two workers served on, holding
    the port (the next `yullu serve`: "port … is already in use", exit 1); and its sockets' folder stayed in /tmp."""
    port = free_port()
    env = product_env(tmp_path / "home", YULLU_PORT=str(port))
    command = [sys.executable, "-m", "yullu_cli.main", "serve", "--role", "web", "--workers", "2"]
    log = tmp_path / "serve.log"
    started: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        with open(log, "ab") as out:
            started.append(subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True))  # fmt: skip
        wait_ready(f"http://127.0.0.1:{port}", started[-1], output=lambda: log.read_text(errors="replace"))

    workers: list[psutil.Process] = []

    def two_workers() -> list[psutil.Process] | None:
        found = _web_workers(started[0].pid)
        return found if len(found) == 2 else None

    try:
        start()
        workers = wait_until(two_workers, "two web workers")
        routes = Path(workers[0].environ()["YULLU_MCP_ROUTE_DIR"])
        started[0].kill()
        started[0].wait()
        wait_until(lambda: _gone(workers), "the killed supervisor's web workers to die", timeout=60)
        assert routes.is_dir()  # nothing removes it but the next start
        start()
        assert not routes.exists()
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
        for worker in workers:  # the web workers a failure of this test left running
            with contextlib.suppress(psutil.Error):
                worker.kill()


async def _json_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"ok": true}', "more_body": False})


async def test_a_worker_listens_again_when_its_sockets_folder_is_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The sockets' folder (in /tmp, where cleaners remove what looks old) deleted while serving: no worker reached
    another's sessions again until a restart (half of the new MCP sessions: 404 "Session not found"). Now each worker
    makes the folder (0700) and its socket again."""
    folder = tmp_path / "routes"
    folder.mkdir(mode=0o700)
    owner = Router(folder)
    owner.app = _json_app
    owner.relisten_every = 0.05
    other = Router(folder)
    other.me = os.getpid() + 1
    answered: list[MutableMapping[str, Any]] = []

    async def collect(message: MutableMapping[str, Any]) -> None:
        answered.append(message)

    with caplog.at_level(logging.WARNING, logger="yullu_site.mcp.routing"):
        async with owner.listening():
            shutil.rmtree(folder)
            with anyio.fail_after(30):  # a deadline against a hang, not a measure
                while not owner.socket_of(os.getpid()).exists():
                    await anyio.sleep(0.05)
            assert await other.forward(os.getpid(), _scope("POST"), b"{}", _receive, collect)
            await other._forget(os.getpid())
    assert [m["status"] for m in answered if m["type"] == "http.response.start"] == [200]
    assert folder.stat().st_mode & 0o777 == 0o700
    assert [r.getMessage() for r in caplog.records] == [
        f"the socket {owner.socket_of(os.getpid())} was removed (a /tmp cleaner?); this worker listens there again."
    ]


async def test_a_live_workers_client_is_kept_while_its_socket_is_missing(tmp_path: Path) -> None:
    """The sockets' folder removed: a live worker's socket is missing until it listens again (within 5 s). The next
    forward closed that worker's client as a gone one's, cutting every answer streaming from it through this
    worker (the sessions' GET streams, which would have lived on: their connections do not need the file)."""
    router = Router(tmp_path)
    router.me = os.getpid() + 1
    live = router._client(os.getpid())  # this process: alive, with no socket file in tmp_path
    gone = _gone_pid()
    assert await router.forward(gone, _scope("POST"), b"{}", _receive, _never_sent) is False
    assert router._clients.get(os.getpid()) is live and not live.is_closed
    await router._forget(os.getpid())


async def test_a_worker_starting_while_the_sockets_folder_is_gone_makes_it_and_listens(tmp_path: Path) -> None:
    """A web worker (re)started after the folder was removed: its socket's bind failed the app's start-up, and uvicorn
    stops all workers when one fails to start, so the whole web process ended."""
    folder = tmp_path / "routes"  # not there
    owner = Router(folder)
    owner.app = _json_app
    async with owner.listening():
        assert owner.socket_of(os.getpid()).exists()
    assert folder.stat().st_mode & 0o777 == 0o700
