"""yullu_site.mcp.routing inside one process: which requests for another worker's session are answered here,
and that a gone worker's session is unknown (404) for every request, as a restarted server's sessions are.
Two real workers and the hop itself: tests/test_multi_worker.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import httpx
import pytest
from mcp.server.mcpserver import MCPServer

from tests.test_mcp_json import ACCEPT, open_session, rpc, serving
from yullu_site.mcp.routing import Router, owner_of
from yullu_site.mcp.transport import streamable_http_app

pytestmark = pytest.mark.django_db(transaction=True)


def _app(folder: Path) -> object:
    server = MCPServer(name="routed")

    @server.tool()
    async def ping_tool() -> str:
        return "pong"

    router = Router(folder)
    app = streamable_http_app(
        server, stateless=False, security_settings=None, talks_back=lambda _n: False, router=router
    )
    router.app = app
    return app


def _gone_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def test_a_session_id_names_this_worker_and_another_live_workers_json_request_is_answered_here(tmp_path: Path) -> None:
    other = os.getppid()  # alive; its "socket" listens but would answer nothing: a hop would hang or fail
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / f"{other}.sock"))
        with serving(_app(tmp_path)) as url, httpx.Client(headers=ACCEPT, timeout=30) as http:
            mine = open_session(http, f"{url}/mcp")
            assert owner_of(mine["mcp-session-id"]) == os.getpid()
            foreign = {**mine, "mcp-session-id": f"{other}-{uuid4().hex}"}
            call = rpc("tools/call", 2, name="ping_tool", arguments={})
            answer = http.post(f"{url}/mcp", json=call, headers=foreign)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.json()["result"]["content"][0]["text"] == "pong"


def test_a_gone_workers_session_is_not_found_even_for_a_json_request(tmp_path: Path) -> None:
    gone = _gone_pid()
    (tmp_path / f"{gone}.sock").touch()  # left behind by a worker killed hard
    with serving(_app(tmp_path)) as url, httpx.Client(headers=ACCEPT, timeout=30) as http:
        mine = open_session(http, f"{url}/mcp")
        headers = {**mine, "mcp-session-id": f"{gone}-{uuid4().hex}"}
        listed = http.post(f"{url}/mcp", json=rpc("tools/list", 2), headers=headers)
        stream = http.get(f"{url}/mcp", headers=headers)
    assert listed.status_code == 404 and stream.status_code == 404
