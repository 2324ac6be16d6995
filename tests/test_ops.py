"""Operating the server: Origin checks on /api, log level and format, /metrics."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tests.mcp_client import call, http_session
from tests.processes import REPO, product_env, spawn, stop, wait_until
from tests.stubs import StubServer
from tests.tcp_gate import TcpGate
from yullu_site.models import BrokerMessage

pytestmark = pytest.mark.django_db(transaction=True)


def auth(token: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **extra}


def test_api_requests_from_a_foreign_origin_are_refused(live_server_url: str, owner_token: str) -> None:
    evil = httpx.get(f"{live_server_url}/api/memories", headers=auth(owner_token, origin="http://evil.example"))
    assert evil.status_code == 403
    assert "allowed_origins" in evil.json()["error"]
    assert httpx.get(f"{live_server_url}/api/status", headers={"origin": "http://evil.example"}).status_code == 403
    own = httpx.get(f"{live_server_url}/api/memories", headers=auth(owner_token, origin=live_server_url))
    assert own.status_code == 200
    assert httpx.get(f"{live_server_url}/api/memories", headers=auth(owner_token)).status_code == 200  # curl, hooks


def django_says(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = f"import django; django.setup()\n{code}"
    return subprocess.run([sys.executable, "-c", script], env=product_env(tmp_path / "home", **env), cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_log_level_warn_is_accepted_as_warning(tmp_path: Path) -> None:
    ran = django_says(tmp_path, "from django.conf import settings; print(settings.LOG_LEVEL)", YULLU_LOG_LEVEL="warn")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "WARNING"


def test_json_log_format_writes_one_object_per_line(tmp_path: Path) -> None:
    code = (
        "import logging\n"
        "logging.getLogger('yullu.check').warning('first line\\nsecond line')\n"
        "from yullu_cli.supervised import say\n"
        "say('yullu: the worker process exited; restarting it', 'WARNING')\n"
    )
    ran = django_says(tmp_path, code, YULLU_LOG_FORMAT="json", YULLU_LOG_LEVEL="warn")
    assert ran.returncode == 0, ran.stderr
    entries = [json.loads(line) for line in ran.stderr.splitlines() if line.strip()]  # each line is one object
    messages = {e["message"]: e for e in entries}
    assert messages["first line\nsecond line"]["level"] == "WARNING"
    assert messages["first line\nsecond line"]["logger"] == "yullu.check"
    assert "yullu: the worker process exited; restarting it" in messages


def test_metrics_need_the_token_and_count_requests_tools_recalls_and_memories(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    assert httpx.get(f"{live_server_url}/metrics").status_code == 401
    memory = {"content": "vec:1,0,0 Deploys use make deploy", "project_id": "acme/metrics"}
    stored = httpx.post(f"{live_server_url}/api/memories", headers=auth(owner_token), json=memory)
    assert stored.status_code == 201, stored.text
    recall = {"query": "vec:1,0,0 how do we deploy", "project_id": "acme/metrics"}
    assert httpx.post(f"{live_server_url}/api/memories/recall", headers=auth(owner_token), json=recall).is_success

    async def tools() -> None:
        async with http_session(live_server_url, owner_token) as session:
            await call(session, "list_memories", project_id="acme/metrics")
            await call(session, "no_such_tool")

    asyncio.run(tools())
    page = httpx.get(f"{live_server_url}/metrics", headers=auth(owner_token))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    text = page.text
    assert 'yullu_http_requests_total{method="POST",route="/api/memories",status="201"}' in text
    assert 'yullu_http_request_seconds_count{route="/api/memories/recall"}' in text
    assert 'yullu_mcp_tool_calls_total{outcome="ok",tool="list_memories"}' in text
    assert 'yullu_mcp_tool_calls_total{outcome="error",tool="unknown"}' in text
    assert "yullu_recall_seconds_count" in text
    assert 'yullu_memories{project_id="acme/metrics"} 1.0' in text
    assert "yullu_dream_passes_total" in text or "# TYPE yullu_dream_passes counter" in text
    assert "yullu_queue_depth" in text


def test_a_not_ready_status_is_not_logged_as_a_server_error(tmp_path: Path) -> None:
    # A fresh process has not loaded the local embedder yet: not ready, as during every start-up.
    code = "from django.test import Client\nprint(Client().get('/api/status').status_code)\n"
    ran = django_says(tmp_path, code, YULLU_LOG_LEVEL="info", YULLU_EMBED_PROVIDER="local")
    assert ran.stdout.strip() == "503", ran.stderr
    assert "Service Unavailable" not in ran.stderr


def test_beat_losing_the_database_logs_one_line_without_a_traceback(tmp_path: Path) -> None:
    """During a PostgreSQL restart (README: beat reconnects), django-celery-beat's schedule check logged
    two chained tracebacks at ERROR per check. The real check, against a database that does not answer."""
    code = (
        "from django_celery_beat.models import PeriodicTasks\n"
        "from django_celery_beat.schedulers import DatabaseScheduler\n"
        "class Beat:\n"
        "    _last_timestamp = None\n"
        "    Changes = PeriodicTasks\n"
        "print(DatabaseScheduler.schedule_changed(Beat()))\n"
    )
    ran = django_says(tmp_path, code, DATABASE_URL="postgresql://nobody@127.0.0.1:9/none", YULLU_LOG_LEVEL="info")
    assert ran.stdout.strip() == "False", ran.stderr
    assert "Traceback" not in ran.stderr and " ERROR " not in ran.stderr, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if "the database" in line]
    assert len(lines) == 1 and " WARNING " in lines[0] and "beat: the database is not answering: " in lines[0], lines


def test_a_database_outage_is_one_line_from_beat_and_one_when_it_is_back(tmp_path: Path) -> None:
    """A real beat against the real test database behind a gate that is cut and restored: every
    schedule check logged 'the database is unavailable' (three lines within a millisecond at the
    start) and every heartbeat it could not send a ~100-line traceback, ~400 lines for a 16 s outage,
    and nothing said when the database was back."""
    db = settings.DATABASES["default"]
    host, port = db["HOST"], int(db["PORT"] or 5432)
    gate = TcpGate(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port))
    url = f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@127.0.0.1:{gate.port}/{connection.settings_dict['NAME']}"
    env = product_env(tmp_path / "home", DATABASE_URL=url, YULLU_HEARTBEAT_SECONDS="1")
    log = tmp_path / "beat.log"
    with log.open("w") as out:
        beat = spawn(["-m", "celery", "-A", "yullu_site", "beat", "--loglevel", "warning",
                      "--pidfile", str(tmp_path / "beat.pid")], env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    said = log.read_text
    try:
        wait_until(BrokerMessage.objects.exists, "beat sending a heartbeat", alive=beat, output=said)
        gate.cut()
        wait_until(lambda: "the database is not answering" in said(), "the outage's line", alive=beat, output=said)
        time.sleep(6)  # beat ticks every second here: several more checks and heartbeats fail meanwhile
        gate.restore()
        wait_until(lambda: "the database answers again" in said(), "the line saying so", alive=beat, output=said)
    finally:
        stop(beat)
        gate.cut()
    text = said()
    lines = [line for line in text.splitlines() if line.startswith("20")]  # log lines start with the date
    assert len(lines) == 2, text
    assert "beat: the database is not answering: " in lines[0] and "(1 request failed since " in lines[0], text
    assert re.search(r"beat: the database answers again after \d+ s, \d+ requests? failed$", lines[1]), text
    assert "Traceback" not in text and " ERROR " not in text, text
