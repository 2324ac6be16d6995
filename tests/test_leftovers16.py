"""The last note's leftovers (lane fixes16): REST's malformed bodies in the product's words, a silent
database answered within its timeout, the outbox's hook without a traceback, a lost port race in one
sentence. Real HTTP, the real embedded PostgreSQL."""

from __future__ import annotations

import logging
import os
import re
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db import connection, transaction

from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import outbox
from sync.models import OutboxEvent
from tests.conftest import free_port
from tests.mcp_client import MCP_HEADERS, MCP_HELLO
from tests.processes import git_repo, product_env, spawn, stop, up_database, wait_ready, wait_until
from tests.tcp_gate import TcpGate

pytestmark = pytest.mark.django_db(transaction=True)
NOT_ANSWERING = "The database is not answering (nothing back within 5 s); try again shortly."


# The people and access endpoints, left out of the OpenAPI schema (yullu's own CLI is their client).
ACCESS = [("post", f"/api/access/{what}") for what in ("users", "tokens", "grants", "grants/revoke")]


def _bodied_operations(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of every operation that takes a JSON body, its path's ids made 1."""
    return [
        (method, re.sub(r"\{[^}]+\}", "1", path))
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation
    ]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("{", "the body is not JSON: expecting property name enclosed in double quotes at line 1 column 2."),
        ("[1, ]", "the body is not JSON: expecting value at line 1 column 5."),
        (b'{"content": "caf\xe9"}', "the body is not JSON: it is not UTF-8 text (byte 17)."),
        ("[1, 2]", "the body must be a JSON object, got a list."),
        ('"a fact"', "the body must be a JSON object, got a string."),
        ("null", "the body must be a JSON object, got null."),
        ("7", "the body must be a JSON object, got a number."),
    ],
)
def test_every_endpoint_that_takes_a_body_says_a_malformed_one_in_one_sentence(
    live_server_url: str, owner_token: str, body: str | bytes, said: str
) -> None:
    """DRF said "JSON parse error - Expecting value: line 1 column 2 (char 1)" and "Expected a dictionary, but
    got list.", in its words and not the ones the tools use."""
    headers = {"Authorization": f"Bearer {owner_token}"}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=60) as api:
        operations = _bodied_operations(api.get("/api/schema", params={"format": "json"}).json())
        assert {("post", "/api/memories"), ("patch", "/api/memories/1"), ("post", "/api/reconcile")} <= set(operations)
        operations += ACCESS
        answers = {
            f"{method.upper()} {path}": api.request(
                method, path, content=body, headers={"Content-Type": "application/json"}
            )
            for method, path in operations
        }
    wrong = {
        op: (r.status_code, r.text) for op, r in answers.items() if (r.status_code, r.json()) != (400, {"error": said})
    }
    assert wrong == {}


def _token_check_backends() -> set[int]:
    """The pids of the MCP token check's connections to this test's database (access.token_check)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
            ["yullu-mcp-token-check"],
        )
        return {row[0] for row in cur.fetchall()}


def test_a_frozen_database_is_told_not_answering_without_the_cancel_wait_and_the_site_recovers(
    tmp_path: Path, owner_token: str
) -> None:
    """Walk 15, PostgreSQL stopped with SIGSTOP: a store (REST or MCP) answered 503 after 15 s, a GET after 5 s.
    The token check's statement timed out at 5 s, then psycopg's cancellation of it waited 5 s for the cancel
    request and 5 s for the statement ("query cancellation failed: cancellation timeout expired" in the log).
    Here the real web process reaches the test database through a gate that freezes as SIGSTOP does."""
    db = settings.DATABASES["default"]
    host, port = db["HOST"], int(db["PORT"] or 5432)
    gate = TcpGate(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port))
    url = f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@127.0.0.1:{gate.port}/{connection.settings_dict['NAME']}"
    env = product_env(tmp_path / "yhome", DATABASE_URL=url, YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    before = _token_check_backends()  # a live server's of earlier tests, in this process
    log = tmp_path / "serve.log"
    site = f"http://127.0.0.1:{free_port()}"
    with log.open("w") as out:
        web = spawn(["-m", "yullu_cli.main", "serve", "--role", "web", "--port", site.rsplit(":", 1)[1]], env,
                    stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    api = httpx.Client(base_url=site, headers={"Authorization": f"Bearer {owner_token}"}, timeout=60)
    project = {"project_id": "acme/frozen"}
    try:
        wait_ready(site, web, output=log.read_text)
        assert api.post("/api/memories", json={"content": "Deploys run from CI only", **project}).status_code == 201
        assert api.post("/mcp", json=MCP_HELLO, headers=MCP_HEADERS).status_code == 200  # MCP's check connects
        checks = wait_until(lambda: (_token_check_backends() - before) or None, "the web's token checks")
        gate.freeze()
        try:
            frozen = {
                "store": api.post("/api/memories", json={"content": "Releases are tagged from main", **project}),
                "mcp": api.post("/mcp", json=MCP_HELLO, headers=MCP_HEADERS),
                "read": api.get("/api/memories", params=project),
            }
        finally:
            gate.thaw()
        said = {name: (r.status_code, NOT_ANSWERING in r.text) for name, r in frozen.items()}
        assert said == {name: (503, True) for name in frozen}, {name: r.text for name, r in frozen.items()}

        def stores() -> bool:
            r = api.post("/api/memories", json={"content": "Hotfixes branch from the release tag", **project})
            return r.status_code == 201

        wait_until(stores, "a store once the database answers again", alive=web, output=log.read_text)
        # The checks left behind end once the database answers, and close their connections: only new ones stay.
        wait_until(lambda: not (_token_check_backends() & checks), "the checks left behind to end", alive=web)
    finally:
        stop(web)
        api.close()
        gate.cut()
    text = log.read_text()
    assert "query cancellation" not in text and "Traceback" not in text, text  # the 10 s cancel path, or a crash
    stored = sorted(Memory.objects.filter(project_id="acme/frozen").values_list("content", flat=True))
    assert stored == ["Deploys run from CI only", "Hotfixes branch from the release tag"]


def test_an_event_flush_that_finds_the_database_gone_after_the_commit_is_one_line_and_sent_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The sync outbox's on-commit flush met a database that went away after the store committed (the postmaster
    killed under stores): Django logged the robust hook's failure with its traceback. Here this test's own backend
    is ended (pg_terminate_backend, from another connection) by an on-commit hook that runs just before the flush."""
    import psycopg

    repo = git_repo(tmp_path / "harbor", "git@github.com:tidewater/harbor.git")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)

    def end_this_backend() -> None:
        pid = connection.connection.info.backend_pid
        with psycopg.connect(**params, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])

    with caplog.at_level(logging.INFO), transaction.atomic():
        transaction.on_commit(end_this_backend)  # registered first: runs before the store's flush
        stored = create.store_memory(resolve(None, str(repo)), "the harbor tides are read from NOAA", "process")
    connection.close()  # the ended backend's connection; the next query opens a new one
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.exc_info) for r in said] == [("sync.outbox", None)], caplog.text
    line = said[0].getMessage()
    kept = OutboxEvent.objects.filter(project_id=stored.memory.project_id).count()  # its create (and vector) events
    assert line.startswith(f"sync: {kept} team-log event(s) of a committed write were not written"), line
    assert "the reconcile tick's sweep writes them once they are 30 s old" in line and "\n" not in line, line
    assert Memory.objects.filter(pk=stored.memory.pk).exists() and kept >= 1
    written = outbox.flush(older_than=timedelta(0))  # the sweep, without its 30 s wait
    assert [project for project, _folder, _name in written] == [stored.memory.project_id] * kept
    assert not OutboxEvent.objects.exists()
    assert len(list((repo / ".yullu" / "logs").rglob("*.json"))) == kept


def test_a_web_process_that_fails_to_bind_for_another_reason_still_shows_its_last_lines_first(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The lines after uvicorn's bind error are held until the supervisor knows why the process ended: with no
    other process on the port (here a bind refused for another reason), they are printed, in their order, before
    the supervisor's own line; nothing goes to the file."""
    import sys
    import time

    from yullu_cli import supervised

    port = free_port()  # free: nobody took it
    fails = (
        "import sys; print('INFO:     Application startup complete.', file=sys.stderr, flush=True);"
        f"print(\"ERROR:    [Errno 99] error while attempting to bind on address ('10.9.9.9', {port}): cannot assign "
        "requested address\", file=sys.stderr, flush=True); print('terminate called', file=sys.stderr); sys.exit(1)"
    )
    web = supervised.Child("web", [sys.executable, "-c", fails], dict(os.environ), listens_on=("127.0.0.1", port))
    web.start()
    assert web.proc is not None
    web.proc.wait(timeout=60)
    supervised._on_exit(web, time.monotonic(), up_database(tmp_path))
    err = capfd.readouterr().err
    startup, bind, abort = err.index("startup complete"), err.index("[Errno 99]"), err.index("terminate called")
    ours = err.index("yullu: the web process (pid")
    assert startup < bind < abort < ours, err
    assert "exited with code 1" in err[ours:] and "restarting it" in err[ours:], err
    assert not (tmp_path / "run").exists()
