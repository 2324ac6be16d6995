"""Fixes from review8's reading of round eight's changes, each red without its fix."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import product_env, run_cli


@pytest.fixture
def not_http() -> Iterator[str]:
    """A loopback port whose program answers every connection with a line that is not HTTP (an SSH server)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("server", ["http://localhost:abc", "http://[::1", "https://:8443"])
def test_install_with_a_server_url_it_cannot_parse_says_one_sentence_and_writes_nothing(
    tmp_path: Path, server: str
) -> None:
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    done = run_cli(["install", "claude", "--server", server, "--token", "yl_x"], env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--server must be the server's base URL" in done.stderr
    assert not (tmp_path / "home" / ".claude" / "settings.json").exists()


def test_install_against_a_program_that_answers_but_not_in_http_is_a_warning_not_a_traceback(
    tmp_path: Path, not_http: str
) -> None:
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    done = run_cli(["install", "claude", "--server", not_http, "--token", "yl_x", "--yes"], env)
    assert "Traceback" not in done.stderr, done.stderr
    assert f"warning: could not reach {not_http} to check the token" in done.stdout


def test_the_token_check_of_rest_and_mcp_says_507_for_a_database_whose_disk_is_full_else_503() -> None:
    # f921197 gave the gate (REST) and MCP's token check the same two lines; they are one function now, and only
    # the CLI's sentence was tested.
    import psycopg

    from yullu_core.failures import DATABASE_DISK_FULL, UNAVAILABLE, database_refusal

    full = psycopg.OperationalError("connection failed: FATAL:  could not write init file: No space left on device")
    assert database_refusal(full) == (507, DATABASE_DISK_FULL)
    assert database_refusal(psycopg.OperationalError("connection refused")) == (503, UNAVAILABLE)


@pytest.mark.django_db(transaction=True)
def test_a_ttl_too_large_for_a_float_gets_its_sentence_on_rest_and_mcp_and_nothing_is_stored(
    live_server_url: str, owner_token: str
) -> None:
    # ttl_days of 1 and 400 zeros raised OverflowError in clean_ttl_days: 'Internal error' on POST, PATCH and MCP.
    import asyncio

    import httpx

    from memories.models import Memory
    from memories.write.validation import TTL_PROBLEM, TTL_UPDATE_PROBLEM
    from tests.mcp_client import call, http_session

    huge = 10**400
    api = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=60)
    fact = {"content": "Releases are cut on Thursdays.", "project_id": "acme/ttl"}
    refused = api.post("/api/memories", json={**fact, "ttl_days": huge})
    assert (refused.status_code, refused.json()) == (400, {"error": TTL_PROBLEM})
    assert not Memory.objects.exists()
    stored = api.post("/api/memories", json=fact).json()
    patched = api.patch(f"/api/memories/{stored['id']}", json={"ttl_days": huge})
    assert (patched.status_code, patched.json()) == (400, {"error": TTL_UPDATE_PROBLEM})

    async def store() -> tuple[bool, object]:
        async with http_session(live_server_url, owner_token) as session:
            return await call(session, "store_memory", content="Tags are pushed by CI.", project_id="acme/ttl",
                              ttl_days=huge)  # fmt: skip

    assert asyncio.run(store()) == (True, TTL_PROBLEM)
    assert Memory.objects.get().expires_at is None


@pytest.mark.django_db(transaction=True)
def test_doctor_names_the_disk_when_a_full_disk_is_why_the_server_is_not_ready(
    tmp_path: Path, live_server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A write that found the disk full leaves /api/status not ready for a minute; doctor said 'answers but is
    # not ready' and named no part (it listed the database, the broker and the embedder only).
    import time

    from django.contrib.auth.models import User

    from access.models import ApiToken
    from yullu_core import failures

    _, raw = ApiToken.issue(User.objects.create_user("bob"), "laptop")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], env).returncode == 0
    monkeypatch.setattr(failures, "_disk_full_at", time.monotonic())
    doctor = run_cli(["doctor"], env)
    assert f"FAIL  server    {live_server_url}/api/status answers but is not ready (disk)" in doctor.stdout, (
        doctor.stdout
    )
