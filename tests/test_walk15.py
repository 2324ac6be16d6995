"""Walk 15's small findings (a fresh clone, a clean HOME, the real CLIs), each red without its fix."""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client

from memories.models import Memory
from yullu_cli import main
from yullu_cli.supervised import MAX_QUICK_FAILURES, CrashLoop, Database
from yullu_core import postgres

# What pg_ctl printed when the postmaster it had just started was killed before it was ready (a second kill -9
# a moment after the first): a stale postmaster.pid, then no server.
KILLED_START = (
    "pg_ctl: another server might be running; trying to start server anyway\n"
    "pg_ctl: could not start server\n"
    "Examine the log output.\n"
)


def test_a_start_killed_midway_is_not_said_to_be_another_server(tmp_path: Path) -> None:
    """The supervisor said "PostgreSQL did not start …: pg_ctl: another server might be running; trying to start
    server anyway pg_ctl: could not start server Examine the log output." after two quick kill -9s: pg_ctl's
    routine words, and no other server ran. It now says the server went while starting, with no FATAL line."""
    log = tmp_path / "server.log"
    log.write_text("2026-11-27 11:17:41.256 UTC [21206] LOG:  checkpoint starting: time\n")
    since = log.stat().st_size  # this start's lines only: it wrote none before it was killed
    with log.open("a") as fh:
        fh.write("2026-11-27 11:18:54.570 UTC [29639] LOG:  could not send data to client: Broken pipe\n")
    why = postgres._why(log, KILLED_START, since)
    assert "another server" not in why and "Examine the log output" not in why, why
    assert why.startswith("it exited while starting without a FATAL line in its log (was it killed?)"), why
    assert why.endswith("its log ends: [29639] LOG:  could not send data to client: Broken pipe"), why
    # A start with a reason keeps it: the server's own FATAL line, or pg_ctl's words that are not routine.
    with log.open("a") as fh:
        fh.write('2026-11-27 11:19:00.000 UTC [29700] FATAL:  lock file "postmaster.pid" already exists\n')
    assert postgres._why(log, KILLED_START, since) == '[29700] FATAL:  lock file "postmaster.pid" already exists'
    timed_out = "pg_ctl: server did not start in time\n"
    assert postgres._why(log, timed_out, log.stat().st_size) == "server did not start in time"


def test_a_start_killed_midway_is_its_own_kind_of_failure(tmp_path: Path) -> None:
    """The supervisor acts on the kind: a killed start is tried again without counting (next test)."""
    log = tmp_path / "server.log"
    log.write_text("")
    killed = postgres.start_failure(tmp_path, log, KILLED_START, 0)
    assert isinstance(killed, postgres.StartKilled), killed
    assert str(killed).startswith(f"PostgreSQL did not start (see {log}): it exited while starting"), killed
    log.write_text('2026-11-27 11:19:00.000 UTC [29700] LOG:  invalid value for parameter "port": "x"\n')
    refused = postgres.start_failure(tmp_path, log, KILLED_START, 0)
    assert type(refused) is postgres.EmbeddedPostgresError and 'parameter "port"' in str(refused), refused


class _Cluster:
    pgdata = Path("/nonexistent/pgdata")


def _watch_failing_starts(monkeypatch: pytest.MonkeyPatch, error: Exception, starts: int) -> list[str]:
    """`starts` rounds of the supervisor's watch over a postmaster that is gone and whose start fails with
    `error` (no backoff waited out), then one that succeeds; the lines it said."""
    said: list[str] = []
    monkeypatch.setattr("yullu_cli.supervised.say", lambda line, *_: said.append(line))
    monkeypatch.setattr("yullu_cli.supervised._count_restart", lambda _: None)
    up = {"now": False}
    monkeypatch.setattr(postgres, "postmaster", lambda _: postgres.Postmaster(4242, "1") if up["now"] else None)
    monkeypatch.setattr(postgres, "initialised", lambda _: True)

    def start(home: Path, cluster: Any) -> None:
        if len([line for line in said if "trying again" in line]) < starts:
            raise error
        up["now"] = True

    monkeypatch.setattr(postgres, "ensure_running", start)
    database = Database(Path("/nonexistent/home"), _Cluster(), owned=False, owner_role=False)
    for _ in range(starts + 1):
        database.retry_at = 0.0
        database.watch(time.monotonic())
    return said


def test_postgres_killed_while_starting_again_and_again_does_not_end_the_site(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five quick kill -9s of the embedded PostgreSQL (each new postmaster killed before it was ready) ended the
    whole site: each killed start counted as one of the four failed starts that stop everything. A postmaster
    killed while starting is now tried again with the same backoff and not counted, as a child killed with
    SIGKILL is; a start that fails for a reason still ends the site after four."""
    killed = postgres.StartKilled("PostgreSQL did not start (see server.log): it exited while starting …")
    said = _watch_failing_starts(monkeypatch, killed, MAX_QUICK_FAILURES + 2)
    delays = [line.rsplit("trying again in ", 1)[1] for line in said if "trying again in" in line]
    assert delays == ["1 s.", "2 s.", "4 s.", "8 s.", "16 s.", "30 s."], said
    assert said[-1].startswith("yullu: the embedded PostgreSQL is back (pid 4242)"), said
    refused = postgres.EmbeddedPostgresError("PostgreSQL did not start (see server.log): FATAL: bad setting")
    with pytest.raises(CrashLoop, match=f"could not be started again, {MAX_QUICK_FAILURES} times in a row"):
        _watch_failing_starts(monkeypatch, refused, MAX_QUICK_FAILURES)


def test_a_database_lost_mid_command_is_told_as_the_embedded_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`yullu dream` when the embedded PostgreSQL was killed under it said "cannot reach the database (…); start
    it, or check DATABASE_URL.": there is no DATABASE_URL, and `yullu serve` starts the server again by itself."""

    def lost() -> None:
        raise OperationalError("terminating connection due to unexpected postmaster exit")

    with pytest.raises(SystemExit) as stopped:
        main.run_guarded(lost)
    assert stopped.value.code == 1
    said = capsys.readouterr().err.strip()
    assert said == (
        "yullu: lost the embedded PostgreSQL (terminating connection due to unexpected postmaster exit); a running "
        "`yullu serve` starts it again within seconds: run this command again (`yullu doctor` says whether the "
        "database answers)."
    ), said


def test_an_external_database_lost_mid_command_still_names_database_url(settings: Any) -> None:
    settings.DATABASE_KIND = "external"
    assert main.unreachable("connection refused") == (
        "cannot reach the database (connection refused); start it, or check DATABASE_URL."
    )


@pytest.mark.django_db
def test_the_admin_add_form_says_an_empty_project_id_once(client: Client, owner: Any) -> None:
    """An empty project id got two sentences under the field, Django's and ours: "This field is required." and
    "project_id must not be empty."; content already had only its rule's."""
    client.force_login(owner)
    form = {"project_id": "", "content": "Deploys go through make ship", "category": "", "importance": ""}
    answer = client.post("/admin/memories/memory/add/", {**form, "tags_text": "", "ttl_days": "", "anchors_text": ""})
    assert answer.status_code == 200, answer.status_code
    assert answer.context["adminform"].form.errors == {"project_id": ["project_id must not be empty."]}
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_a_database_outage_is_a_line_not_two_lines_a_request(
    client: Client, owner_token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every request answered 503 during an outage logged "WARNING yullu.api: database error: <the driver's whole
    message>" and "ERROR django.request: Service Unavailable": 548 lines for walk 15's 35 s of kill -9s. Now one
    line for the outage, and one every 30 s after it with how many requests were answered 503 meanwhile."""
    from memories import api
    from yullu_core import api_errors, outage

    def lost(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("connection failed: FATAL:  the database system is in recovery mode\nDETAIL: …")

    monkeypatch.setattr(api.MemoryList, "get", lost)
    monkeypatch.setattr(outage, "DATABASE", outage.Outage(logging.getLogger("yullu.database")))
    caplog.set_level(logging.INFO)
    for _ in range(5):
        answer = client.get("/api/memories?project_id=acme/app", HTTP_AUTHORIZATION=f"Bearer {owner_token}")
        assert answer.status_code == 503 and answer.json() == {"error": api_errors.UNAVAILABLE}
    names = ("yullu.api", "yullu.database", "django.request")
    lines = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name in names]
    assert len(lines) == 1 and lines[0][:2] == ("yullu.database", "WARNING"), lines
    said = "the database is not answering: connection failed: FATAL:  the database system is in recovery mode "
    assert re.fullmatch(re.escape(said) + r"\(1 request failed since \d\d:\d\d:\d\d\)", lines[0][2]), lines
    outage.DATABASE.said_at = time.monotonic() - outage.REMIND_EVERY_S  # 30 s later
    client.get("/api/memories?project_id=acme/app", HTTP_AUTHORIZATION=f"Bearer {owner_token}")
    assert "(6 requests failed since " in caplog.records[-1].getMessage(), caplog.records[-1]


def test_a_command_over_a_frozen_embedded_postgres_says_so_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    """With the embedded PostgreSQL stopped (SIGSTOP), `yullu memories list` and `yullu doctor` printed nothing
    and never returned: every command's start connects to create the database if it is missing, with no timeout,
    and a stopped server takes the connection and says nothing. The connection now gives up after 5 s, which the
    command says as "The database is not answering …" (yullu_core.failures)."""
    import psycopg

    from yullu_core.failures import translate

    silent = socket.socket(socket.AF_UNIX)
    silent.bind(str(tmp_path / ".s.PGSQL.5432"))
    silent.listen(8)  # takes the connection, never answers: a stopped postmaster
    cluster = postgres.Cluster(tmp_path, tmp_path, tmp_path, None)
    outcome: list[BaseException] = []

    def start() -> None:
        try:
            postgres._create_database(cluster)
        except BaseException as exc:  # noqa: BLE001 (what the start raised, judged below)
            outcome.append(exc)

    worker = threading.Thread(target=start, daemon=True)
    worker.start()
    worker.join(timeout=60)  # far above the 5 s; without the timeout it never returns
    silent.close()
    assert not worker.is_alive(), "the start still waits on a server that says nothing"
    assert outcome and isinstance(outcome[0], psycopg.errors.ConnectionTimeout), outcome
    assert str(translate(outcome[0])).startswith("The database is not answering"), translate(outcome[0])


def test_a_frozen_embedded_postgres_is_one_sentence_at_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """The start's connection timing out (above) is psycopg's ConnectionTimeout, not Django's OperationalError:
    `yullu memories list` and `yullu doctor` over a stopped server printed its traceback."""
    import psycopg

    def frozen() -> None:
        raise psycopg.errors.ConnectionTimeout("connection timeout expired")

    with pytest.raises(SystemExit) as stopped:
        main.run_guarded(frozen)
    assert stopped.value.code == 1
    assert capsys.readouterr().err.strip() == (
        "yullu: the embedded PostgreSQL runs but does not answer (connection timeout expired): stopped (SIGSTOP) "
        "or the machine overloaded; run this command again once it answers."
    )
