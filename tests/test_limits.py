"""Limits an anonymous client cannot turn against a user (issue 33): rate limits keyed so that requests
without a token never lock out a token, X-Forwarded-For only from configured proxies, bodies refused
before they are read, one Host rule for /mcp and Django. Real uvicorn on a loopback port, real sockets."""

from __future__ import annotations

import asyncio
import logging
import select
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings

from access import ratelimit
from access.models import ApiToken
from access.origins import HOST_REFUSED
from tests.conftest import LiveServer
from tests.mcp_client import call, http_session
from tests.processes import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MB = 1024 * 1024


def test_no_anonymous_request_changes_how_a_token_is_treated(live_server_url: str, owner: Any) -> None:
    _, fresh = ApiToken.issue(owner, name="never-used")  # not seen by the server before the flood
    # What a web page can send: anonymous POSTs to /mcp, and wrong tokens to /api, well past the limit.
    for _ in range(ratelimit.MAX_FAILURES + 5):
        httpx.post(f"{live_server_url}/mcp", json=LIST_TOOLS, headers=MCP_HEADERS)
        httpx.get(f"{live_server_url}/api/memories", headers={"authorization": "Bearer yl_guess"})
    anonymous = httpx.post(f"{live_server_url}/mcp", json=LIST_TOOLS, headers=MCP_HEADERS)
    assert anonymous.status_code == 429  # the flood itself is limited...

    auth = {"authorization": f"Bearer {fresh}"}  # ...but the token, from the same address, is not
    assert httpx.get(f"{live_server_url}/api/memories?project_id=acme/limits", headers=auth).status_code == 200
    posted = httpx.post(
        f"{live_server_url}/api/memories/recall", json={"query": "ok", "project_id": "a/b"}, headers=auth
    )
    assert posted.status_code == 200, posted.text

    async def session() -> tuple[bool, Any]:
        async with http_session(live_server_url, fresh) as s:
            return await call(s, "list_memories", project_id="acme/limits")

    assert asyncio.run(session()) == (False, {"project_id": "acme/limits", "memories": []})


async def _echo_client(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers with the client address uvicorn gives the application (what the limiter counts)."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(scope["client"][0]).encode()})


@pytest.fixture
def echo_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Real uvicorn with the site's proxy settings (`LiveServer`, as `yullu serve` runs it) for
    `[server].trusted_proxies` = the test's parameter."""
    monkeypatch.setitem(settings.YULLU, "server", {**settings.YULLU["server"], "trusted_proxies": request.param})
    server = LiveServer(_echo_client)
    server.start()
    yield server.url
    server.server.should_exit = True
    server.thread.join(timeout=10)


@pytest.mark.parametrize("echo_server", [[]], indirect=True)
def test_x_forwarded_for_is_ignored_by_default(echo_server: str) -> None:
    assert httpx.get(echo_server, headers={"x-forwarded-for": "203.0.113.7"}).text == "127.0.0.1"


@pytest.mark.parametrize("echo_server", [["127.0.0.0/8"]], indirect=True)
def test_x_forwarded_for_from_a_trusted_proxy_names_the_client(echo_server: str) -> None:
    assert httpx.get(echo_server, headers={"x-forwarded-for": "203.0.113.7"}).text == "203.0.113.7"


def test_a_client_cannot_choose_the_address_it_is_counted_by(live_server_url: str) -> None:
    codes = []
    for n in range(ratelimit.MAX_FAILURES + 1):  # bad tokens, each claiming another address
        headers = {"authorization": "Bearer yl_guess", "x-forwarded-for": f"203.0.113.{n + 1}"}
        codes.append(httpx.get(f"{live_server_url}/api/memories", headers=headers).status_code)
    assert codes[-1] == 429


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _stream_body(port: int, head: str, total: int = 100 * MB) -> tuple[bytes, int]:
    """Send `head` announcing a `total`-byte body, then 64 KB of it, then wait for the server's answer
    before sending more: a server that reads the whole body before answering never answers here.
    Afterwards keep sending: returns (the answer, bytes of body sent before the server hung up)."""
    chunk = b"x" * (64 * 1024)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head.encode() + f"Content-Length: {total}\r\n\r\n".encode())
        sock.sendall(chunk)
        sent = len(chunk)
        wait_until(lambda: select.select([sock], [], [], 0.05)[0], "the server to answer before the body")
        answer = sock.recv(65536)
        sock.settimeout(10)
        try:
            while sent < total:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        return answer, sent


@pytest.mark.parametrize(
    ("path", "extra"),
    [
        ("/api/memories", "Content-Type: application/json\r\n"),
        ("/api/memories", "Content-Type: application/json\r\nAuthorization: Bearer yl_wrong\r\n"),
        ("/mcp", "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"),
        ("/admin/login/", "Content-Type: application/x-www-form-urlencoded\r\n"),
    ],
)
def test_a_100_mb_body_without_a_token_is_refused_before_1_mb_is_read(
    live_server_url: str, path: str, extra: str
) -> None:
    port = _port(live_server_url)
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}"
    answer, sent = _stream_body(port, head)
    status = int(answer.split(b" ", 2)[1])
    assert status in (401, 413), answer[:300]
    # The server hung up instead of draining the body: the kernel's socket buffers hold a few MB at most.
    assert sent < 16 * MB, f"the server kept reading: {sent // MB} MB sent"


def test_a_token_holders_body_is_bounded_while_it_streams(live_server_url: str, owner_token: str) -> None:
    port = _port(live_server_url)
    chunk = b"x" * (256 * 1024)
    head = (
        f"POST /api/memories HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {owner_token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head.encode())
        sock.settimeout(10)
        sent = 0
        try:
            while not select.select([sock], [], [], 0)[0] and sent < 100 * MB:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = sock.recv(65536)
    assert b" 413 " in answer.split(b"\r\n", 1)[0], answer[:300]
    assert b"too large" in answer
    assert sent < 32 * MB


def _raw_get(port: int, path: str, host: str, extra: str = "") -> int:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n".encode())
        return int(sock.recv(65536).split(b" ", 2)[1])


def test_one_host_rule_for_mcp_and_django(
    live_server_url: str, owner_token: str, caplog: pytest.LogCaptureFixture
) -> None:
    port = _port(live_server_url)
    auth = f"Authorization: Bearer {owner_token}\r\n"
    # A host that only looks like ours gets the same answer everywhere: 421 and one sentence saying what to
    # set (JSON on the API), one warning in the log and no traceback (Django's own page was an empty 400).
    for host in (f"127.0.0.1:{port}@evil.example", "evil.example", f"127.0.0.1.evil.example:{port}"):
        assert _raw_get(port, "/mcp", host, auth) == 421, host
        api = httpx.get(f"{live_server_url}/api/status", headers={"host": host})
        assert api.status_code == 421 and api.json() == {"error": HOST_REFUSED}, host
        page = httpx.get(f"{live_server_url}/admin/login/", headers={"host": host})
        assert page.status_code == 421 and page.text.strip() == HOST_REFUSED, host
    assert not [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    for host in (f"[::1]:{port}", "[::1]", f"localhost:{port}", f"127.0.0.1:{port}"):
        assert _raw_get(port, "/api/status", host) in (200, 503), host
        assert _raw_get(port, "/admin/login/", host) == 200, host
        assert _raw_get(port, "/mcp", host, auth) != 421, host


def _login(client: Any, password: str, next_url: str = "/admin/", address: str = "127.0.0.1") -> Any:
    form = {"username": "owner", "password": password, "next": next_url}
    return client.post("/admin/login/", form, REMOTE_ADDR=address)


def test_admin_login_is_throttled_per_username_and_address(client: Any, owner: Any) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(client, "wrong-guess").status_code == 200  # the form again, with its error
    assert _login(client, "wrong-guess").status_code == 429  # the last failure allowed locks
    locked = _login(client, "owner-pass-123")  # even the right password, from that address
    assert locked.status_code == 429 and not locked.wsgi_request.user.is_authenticated
    elsewhere = _login(client, "owner-pass-123", address="192.0.2.9")  # the owner, from their own address
    assert elsewhere.status_code == 302 and elsewhere["Location"] == "/admin/"


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example/x", "/\\evil.example", ""])
def test_a_refused_next_lands_on_the_dashboard(client: Any, owner: Any, next_url: str) -> None:
    response = _login(client, "owner-pass-123", next_url=next_url)
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get(response["Location"]).status_code == 200


def test_a_next_inside_the_site_is_followed(client: Any, owner: Any) -> None:
    response = _login(client, "owner-pass-123", next_url="/admin/memories/memory/")
    assert response.status_code == 302 and response["Location"] == "/admin/memories/memory/"
