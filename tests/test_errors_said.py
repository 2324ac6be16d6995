"""Errors that say what happened (issue 32): input PostgreSQL cannot hold, a full disk, deeply
nested JSON, an unreadable cwd and an absurd time window are one sentence on REST and MCP (real
HTTP, the official MCP client), never "the database is unavailable", a 500 or "Internal error"."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from memories.models import Memory
from memories.transfer.importer import BATCH, import_path
from tests.mcp_client import call, http_session
from tests.stubs import StubServer
from yullu_core import outage
from yullu_core.failures import DiskFull

pytestmark = pytest.mark.django_db(transaction=True)
LONG_CWD = "/tmp/" + "x" * 300  # a path component longer than any file system takes: stat fails


@pytest.fixture
def api(live_server_url: str, owner_token: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as client:
        yield client


def mcp(live_server_url: str, token: str, tool: str, **arguments: Any) -> tuple[bool, Any]:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, token) as session:
            return await call(session, tool, **arguments)

    return asyncio.run(go())


def assert_said(answer: tuple[bool, Any], *words: str) -> None:
    is_error, text = answer
    assert is_error, text
    assert all(w in text for w in words) and "unavailable" not in text and "Internal error" not in text, text


def test_a_nul_byte_in_a_query_or_a_session_id_is_an_input_error(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    stored = mcp(live_server_url, owner_token, "store_memory", content="Deploys run from CI", project_id="acme/n")
    assert stored[0] is False
    assert_said(mcp(live_server_url, owner_token, "retrieve_memories", query="deploys\x00", project_id="acme/n"), "NUL")
    record = {"session_id": "s\x00", "messages": [{"role": "user", "content": "hi"}], "project_id": "acme/n"}
    assert_said(mcp(live_server_url, owner_token, "record_messages", **record), "NUL")


def test_an_unreadable_cwd_and_a_huge_window_are_one_sentence(
    api: httpx.Client, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    r = api.post("/api/memories", json={"content": "a fact", "cwd": LONG_CWD})
    assert r.status_code == 400 and "cwd cannot be read" in r.json()["error"], r.text
    assert_said(mcp(live_server_url, owner_token, "list_memories", cwd=LONG_CWD), "cwd cannot be read")
    assert_said(mcp(live_server_url, owner_token, "get_usage", since_hours=1e300), "since_hours")
    assert api.get("/api/usage", params={"since_hours": "1e300"}).status_code == 400


def test_deeply_nested_json_is_a_400(api: httpx.Client) -> None:
    body = '{"content": ' + "[" * 100_000 + "]" * 100_000 + ', "project_id": "acme/deep"}'
    r = api.post("/api/memories", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "nested too deeply" in r.json()["error"], r.text


@pytest.fixture
def full_disk() -> Iterator[None]:
    """PostgreSQL answering every new memory with its real "disk full" error (SQLSTATE 53100)."""
    with connection.cursor() as cur:
        cur.execute(
            "CREATE FUNCTION yullu_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$"
        )
        cur.execute(
            "CREATE TRIGGER yullu_test_disk_full BEFORE INSERT ON memories_memory "
            "FOR EACH ROW EXECUTE FUNCTION yullu_test_disk_full()"
        )
    yield
    with connection.cursor() as cur:
        cur.execute("DROP TRIGGER yullu_test_disk_full ON memories_memory")
        cur.execute("DROP FUNCTION yullu_test_disk_full()")


def test_a_full_disk_says_so_and_status_reports_it(
    api: httpx.Client, live_server_url: str, owner_token: str, stub_embedder: StubServer, full_disk: None
) -> None:
    r = api.post("/api/memories", json={"content": "a fact for a full disk", "project_id": "acme/full"})
    assert r.status_code == 507 and "disk is full" in r.json()["error"], r.text
    answer = mcp(live_server_url, owner_token, "store_memory", content="another fact", project_id="acme/full")
    assert_said(answer, "disk is full")
    status = httpx.get(f"{live_server_url}/api/status").json()
    assert status["ready"] is False and status["disk"]["ok"] is False, status
    assert "full" in status["disk"]["error"]
    assert not Memory.objects.exists()


def test_an_import_the_disk_fills_under_says_what_it_stored(tmp_path: Path) -> None:
    """A full disk after the import's first batch was stored: it said "The disk is full, so nothing
    was stored" right after progress lines saying 12,000 rows were (round eight's drill)."""
    project = "acme/filling-disk"
    rows = tmp_path / "export.jsonl"
    with rows.open("w") as out:
        out.write(json.dumps({"format": "yullu-memories", "version": 1, "project_id": project}) + "\n")
        for n in range(BATCH + 300):
            which = "first" if n < BATCH else "second"
            out.write(json.dumps({"project_id": project, "content": f"{which} batch fact {n} about billing"}) + "\n")
    with connection.cursor() as cur:  # the disk fills while the second batch is written
        cur.execute(
            "CREATE FUNCTION yullu_test_filling() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.content LIKE 'second batch%' THEN RAISE EXCEPTION 'could not extend file: No space left on "
            "device' USING ERRCODE = 'disk_full'; END IF; RETURN NEW; END $$"
        )
        cur.execute(
            "CREATE TRIGGER yullu_test_filling BEFORE INSERT ON memories_memory "
            "FOR EACH ROW EXECUTE FUNCTION yullu_test_filling()"
        )
    try:
        with pytest.raises(DiskFull) as said:
            import_path(rows)
    finally:
        with connection.cursor() as cur:
            cur.execute("DROP TRIGGER yullu_test_filling ON memories_memory")
            cur.execute("DROP FUNCTION yullu_test_filling()")
    assert str(said.value) == (
        f"The disk is full: the import stopped after storing {BATCH} new memories, and the 300 rows it was "
        "writing were not stored. Free some space on the server and run the same import again: the rows already "
        "there are skipped."
    )
    assert Memory.objects.filter(project_id=project).count() == BATCH


def test_a_full_disk_is_one_log_line_and_a_reminder_not_a_line_per_request(
    api: httpx.Client,
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
    full_disk: None,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chaos drill (the home's tmpfs filled under four REST writers): Django logged `ERROR django.request:
    Insufficient Storage: /api/memories` for every store, eight a second, and MCP's refusals nothing at all.
    Now REST, MCP and the token checks count into one outage, said as the database's is (yullu_core.outage)."""
    monkeypatch.setattr(outage, "DISK", replace(outage.DISK, since=None, failures=0, said_at=0.0, failed_at=0.0))
    caplog.set_level(logging.INFO)
    for n in range(3):
        assert api.post("/api/memories", json={"content": f"fact {n}", "project_id": "acme/full"}).status_code == 507
    assert_said(mcp(live_server_url, owner_token, "store_memory", content="fact 3", project_id="acme/full"), "disk")
    said = [r.getMessage() for r in caplog.records if r.name in ("yullu.disk", "django.request")]
    assert len(said) == 1 and said[0].startswith("the disk is full, writes are refused: could not extend file"), said
    assert "(1 request failed since" in said[0]
    outage.DISK.said_at -= outage.REMIND_EVERY_S + 1  # 30 s later, still full
    assert api.post("/api/memories", json={"content": "fact 4", "project_id": "acme/full"}).status_code == 507
    said = [r.getMessage() for r in caplog.records if r.name in ("yullu.disk", "django.request")]
    assert len(said) == 2 and "(5 requests failed since" in said[1], said
