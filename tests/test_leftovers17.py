"""Leftovers of the sixteenth round's note: a database outage said one way by the web and by beat
(yullu_core.outage)."""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db import OperationalError, connection, connections
from django.test import Client

from tests.conftest import free_port
from tests.mcp_client import MCP_HEADERS, MCP_HELLO
from tests.processes import product_env, spawn, stop, wait_ready, wait_until
from tests.tcp_gate import TcpGate

NOT_ANSWERING_LINE = re.compile(r"the database is not answering: .+ \((\d+) requests? failed since \d\d:\d\d:\d\d\)$")
ANSWERS_AGAIN_LINE = re.compile(r"the database answers again after (\d+) s, (\d+) requests? failed$")


@contextmanager
def _web_through_a_gate(tmp_path: Path, token: str) -> Iterator[tuple[TcpGate, httpx.Client, Any, Path]]:
    """A real web process (`yullu serve --role web`) reaching the test database through a TCP gate."""
    db = settings.DATABASES["default"]
    host, port = db["HOST"], int(db["PORT"] or 5432)
    gate = TcpGate(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port))
    url = f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@127.0.0.1:{gate.port}/{connection.settings_dict['NAME']}"
    env = product_env(tmp_path / "yhome", DATABASE_URL=url, YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    log = tmp_path / "serve.log"
    site = f"http://127.0.0.1:{free_port()}"
    with log.open("w") as out:
        web = spawn(["-m", "yullu_cli.main", "serve", "--role", "web", "--port", site.rsplit(":", 1)[1]], env,
                    stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    api = httpx.Client(base_url=site, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    try:
        wait_ready(site, web, output=log.read_text)
        yield gate, api, web, log
    finally:
        stop(web)
        api.close()
        gate.cut()


@pytest.mark.django_db(transaction=True)
def test_the_web_says_an_outage_once_and_when_the_database_answers_again(tmp_path: Path, owner_token: str) -> None:
    """The web said a line when an outage began (then one every 30 s with a count) and never that it was over, and
    MCP's token check and tools a line per request; beat said both ends in its own words. Here a real web process
    reaches the test database through a gate that is cut (REST read, REST store, MCP all answered 503) and restored:
    one line for the outage, one when the database answers again, counting every door's failed requests."""
    project = {"project_id": "acme/outage"}
    with _web_through_a_gate(tmp_path, owner_token) as (gate, api, web, log):
        assert api.get("/api/memories", params=project).status_code == 200
        gate.cut()
        failed = [
            api.get("/api/memories", params=project),  # DRF's token check, in the view's exception handler
            api.post("/api/memories", json={"content": "Releases are tagged from main", **project}),  # the gate
            api.post("/mcp", json=MCP_HELLO, headers=MCP_HEADERS),  # /mcp's token check
        ]
        assert [r.status_code for r in failed] == [503] * 3, [r.text for r in failed]
        gate.restore()
        wait_until(
            lambda: api.get("/api/memories", params=project).status_code == 200,
            "a read once the database answers again",
            alive=web,
            output=log.read_text,
        )
        wait_until(lambda: "the database answers again" in log.read_text(), "the line saying so", alive=web)
    text = log.read_text()
    said = [line for line in text.splitlines() if "the database" in line and "yullu.database" in line]
    assert len(said) == 2, text
    began, ended = NOT_ANSWERING_LINE.search(said[0]), ANSWERS_AGAIN_LINE.search(said[1])
    assert began and began.group(1) == "1", said
    assert ended and int(ended.group(2)) >= 3, said  # the three above, and any of wait_until's tries
    for per_request in ("Service Unavailable", "database error", "token check failed", "Traceback"):
        assert per_request not in text, (per_request, text)


@pytest.mark.django_db
def test_the_outage_reminds_every_30_s_and_its_length_runs_from_the_first_failure(
    client: Client, owner_token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The reminder comes at most every 30 s with the count so far, and the end line's length is taken from the
    first failure, not from the last line said. The end is a real new connection (Django's connection_created)."""
    from memories import api
    from yullu_core import outage

    def lost(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("connection failed: FATAL:  the database system is in recovery mode\nDETAIL: …")

    monkeypatch.setattr(api.MemoryList, "get", lost)
    monkeypatch.setattr(outage, "DATABASE", outage.Outage(logging.getLogger("yullu.database")))
    caplog.set_level(logging.INFO)

    def fail(times: int) -> list[str]:
        before = len(caplog.records)
        for _ in range(times):
            answer = client.get("/api/memories?project_id=acme/app", HTTP_AUTHORIZATION=f"Bearer {owner_token}")
            assert answer.status_code == 503, answer.content
        return [r.getMessage() for r in caplog.records[before:] if r.name in ("yullu.database", "django.request")]

    first = fail(5)
    assert len(first) == 1 and NOT_ANSWERING_LINE.search(first[0]), first
    assert "the database system is in recovery mode (1 request failed since" in first[0], first
    outage.DATABASE.since = (outage.DATABASE.since or 0) - 100  # the outage began 100 s ago ...
    outage.DATABASE.said_at -= 40  # ... and its line was said 40 s ago
    reminder = fail(1)
    assert len(reminder) == 1 and "(6 requests failed since" in reminder[0], reminder
    assert fail(3) == []  # within 30 s of the reminder
    new = connections.create_connection("default")  # a new connection: the database answers
    try:
        new.ensure_connection()
    finally:
        new.close()
    ended = ANSWERS_AGAIN_LINE.search(caplog.records[-1].getMessage())
    assert ended and int(ended.group(1)) >= 100 and ended.group(2) == "9", caplog.records[-1].getMessage()
    new = connections.create_connection("default")
    try:
        new.ensure_connection()  # no outage: nothing said
    finally:
        new.close()
    ends = [r for r in caplog.records if ANSWERS_AGAIN_LINE.search(r.getMessage())]
    assert len(ends) == 1, ends


@pytest.mark.django_db(transaction=True)
def test_the_same_refusal_is_the_same_bytes_from_every_door(tmp_path: Path, owner_token: str) -> None:
    """The database gone, a REST read (its view's exception handler) answered DRF's compact `{"error":"…"}` and a
    REST store or /api/context (the front gate, before Django) Django's spaced `{"error": "…"}`; /mcp's refusal and
    /api/status were spaced too. Now one function writes every body (yullu_core.json_body): compact, UTF-8."""
    from yullu_core.failures import UNAVAILABLE

    project = {"project_id": "acme/bytes"}
    with _web_through_a_gate(tmp_path, owner_token) as (gate, api, _web, _log):
        gate.cut()
        doors = {
            "REST read (view)": api.get("/api/memories", params=project),
            "REST store (front gate)": api.post("/api/memories", json={"content": "Deploys run from CI", **project}),
            "/api/context (front gate)": api.post("/api/context", json={"budget_tokens": 500, **project}),
        }
        mcp = api.post("/mcp", json=MCP_HELLO, headers=MCP_HEADERS)
        health = api.get("/api/status")
    expected = ('{"error":"' + UNAVAILABLE + '"}').encode()
    assert {door: (r.status_code, r.content) for door, r in doors.items()} == {door: (503, expected) for door in doors}
    rpc = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"' + UNAVAILABLE.encode() + b'"}}'
    assert (mcp.status_code, mcp.content) == (503, rpc)
    assert health.status_code == 503 and b'"ready":false' in health.content and b'": ' not in health.content
    assert {r.headers["content-type"] for r in (*doors.values(), mcp, health)} == {"application/json"}


@pytest.mark.django_db
def test_a_refusal_body_keeps_its_characters_and_is_compact(client: Client) -> None:
    """A middleware's refusal (a NUL in a query parameter) and a view's error share the shape, non-ASCII as UTF-8
    (Django's JsonResponse wrote "\\u2026")."""
    refused = client.get("/api/memories?q=%00")
    assert (refused.status_code, refused.content) == (400, b'{"error":"query parameters must not contain NUL bytes."}')
    missing = client.get("/api/n\u00e9ant")
    assert (
        missing.status_code == 404 and missing.content == '{"error":"no such API endpoint: /api/n\u00e9ant"}'.encode()
    )
