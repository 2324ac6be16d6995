"""Defects the eighth new-user walk met, each as it was met: a store that committed while the embedded
PostgreSQL was killed answered 500 "Internal error" (Django could not name the failed on-commit flush); a
teammate's `yullu install --server URL --token T` with a revoked token installed without a word, and
`yullu doctor` then said every check was ok while the server refused every MCP call and hook; a team
server bound to 0.0.0.0 printed http://0.0.0.0:PORT/admin/ as its admin, a URL its Host check refuses
(421); a team server told an assistant that sent `cwd` (as the skill says) to "pass project_id
instead" without saying what a project id is; two facts that differ only in their subject ("The admin
panel keeps its cache for 367 minutes" / "The session store …") were one fact to the duplicate rule, so
an import of 3,000 dropped 17 as repeats and a store answered duplicate_of; with the home made read-only
under a running site every command failed naming a temp file or pg.lock, and SIGTERM left the embedded
PostgreSQL running with no owner (the clean-up stopped at the first pid file it could not remove); a POST
to /api/status answered Django's HTML CSRF page where every /api error is JSON; get_memory's history
named no one where the admin said "mcp (alice)"."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import OperationalError

from access.models import ApiToken
from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import outbox
from sync.models import OutboxEvent
from tests.conftest import free_port
from tests.mcp_client import call, http_session
from tests.processes import git_repo, product_env, run_cli, spawn, stop, wait_until
from tests.test_first_hour import fresh_home, postgres_running_under  # noqa: F401 (a fixture)
from yullu_cli.banner import site_base
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_store_whose_event_flush_fails_after_the_commit_answers_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The walk: kill -9 of the postmaster under three writers; the commit went through, then the
    # on-commit flush met the dead server and Django's own error report raised AttributeError.
    repo = git_repo(tmp_path / "harbor", "git@github.com:tidewater/harbor.git")

    def database_gone(**_: object) -> None:
        raise OperationalError("terminating connection due to unexpected postmaster exit")

    monkeypatch.setattr(outbox, "flush", database_gone)
    with caplog.at_level(logging.WARNING):
        stored = create.store_memory(resolve(None, str(repo)), "the harbor tides are read from NOAA at 6am", "process")
    assert Memory.objects.filter(pk=stored.memory.pk).exists()
    assert OutboxEvent.objects.filter(project_id=stored.memory.project_id).exists(), "left for the sweep"
    assert "they wait in the outbox" in caplog.text  # one line (tests/test_leftovers16.py), no hook traceback


def test_a_team_token_the_server_refuses_stops_the_install_and_fails_doctor(
    tmp_path: Path, live_server_url: str
) -> None:
    bob = User.objects.create_user("bob")
    token, raw = ApiToken.issue(bob, "laptop")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], env).returncode == 0
    token.delete()  # `yullu tokens revoke` on the server

    # The shell has no YULLU_SERVER: the server is the one the installed hooks pin.
    doctor = run_cli(["doctor"], env)
    assert doctor.returncode == 1, doctor.stdout
    assert f"FAIL  server    {live_server_url} refuses this token (revoked, expired or mistyped)" in doctor.stdout

    other = product_env(tmp_path / "other", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home2"))
    (tmp_path / "home2" / ".claude").mkdir(parents=True)
    again = run_cli(["install", "claude", "--server", live_server_url, "--token", raw], other)
    assert again.returncode == 1 and "refuses this token" in again.stderr, again.stderr
    assert "nothing was installed" in again.stderr and "Traceback" not in again.stderr
    assert not (tmp_path / "home2" / ".claude" / "settings.json").exists()


@pytest.mark.parametrize(
    ("host", "allowed", "base", "warned"),
    [
        ("0.0.0.0", ["yullu.acme.internal", "127.0.0.1"], "http://yullu.acme.internal:47823", False),
        ("::", [".acme.internal", "localhost"], "http://localhost:47823", False),
        ("127.0.0.1", ["127.0.0.1", "localhost", "[::1]"], "http://127.0.0.1:47823", False),
        ("192.0.2.2", ["127.0.0.1", "localhost", "[::1]"], "http://192.0.2.2:47823", True),
    ],
)
def test_the_banner_names_a_url_the_host_check_accepts(
    settings: Any, host: str, allowed: list[str], base: str, warned: bool
) -> None:
    settings.ALLOWED_HOSTS = [*allowed, "testserver"]
    shown, warning = site_base(host, 47823)
    assert shown == base
    assert (warning is not None) == warned
    if warning:
        assert "192.0.2.2 is not in [server].allowed_hosts" in warning and "421" in warning


def test_a_team_server_that_refuses_cwd_says_what_project_id_to_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "envloader", "git@github.com:walk8/envloader.git")
    team = {**django_settings.YULLU["server"], "host": "0.0.0.0", "allowed_roots": []}
    monkeypatch.setitem(django_settings.YULLU, "server", team)
    with pytest.raises(UserError) as refused:
        resolve(None, str(repo))
    said = str(refused.value)
    assert said.startswith("this server accepts no cwd") and "git remote get-url origin" in said
    assert "git@github.com:acme/app.git is github.com/acme/app" in said


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The admin panel keeps its cache for 367 minutes.", "The session store keeps its cache for 367 minutes."),
        (
            "The feature flag service uses the quartz85 queue in Celery.",
            "The admin panel uses the quartz85 queue in Celery.",
        ),
        (
            "The report builder retries failed jobs 299 times with exponential backoff.",
            "The billing worker retries failed jobs 299 times with exponential backoff.",
        ),
    ],
)
def test_a_fact_about_another_subject_is_stored_not_merged(first: str, second: str) -> None:
    scope = resolve("walk8/subjects", None)
    assert create.store_memory(scope, first, "domain").created
    again = create.store_memory(scope, second, "domain")
    assert again.created, f"merged into {again.memory.content!r}"


@pytest.mark.slow
def test_a_home_made_read_only_under_a_running_site_still_serves_commands_and_stops_cleanly(
    fresh_home: dict[str, str],  # noqa: F811
) -> None:
    home = Path(fresh_home["YULLU_HOME"])
    out = home.parent / "serve.out"
    with out.open("w") as fh:
        serve = spawn(["-m", "yullu_cli.main", "serve", "--port", str(free_port())], fresh_home, stdout=fh, stderr=fh)
    try:
        wait_until(lambda: "Press Ctrl-C" in out.read_text(), "the banner", 180, serve, out.read_text)
        if subprocess.run(["mount", "--bind", str(home), str(home)], capture_output=True).returncode:
            pytest.skip("needs mount (root)")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(home)], check=True)
            added = run_cli(["memories", "add", "The harbor closes at dusk.", "--project", "walk8/ro"], fresh_home)
            assert added.returncode == 0, added.stderr
            stop(serve)
            assert "could not remove" in out.read_text()
            assert not postgres_running_under(str(home.parent)), "the clean-up went on to stop PostgreSQL"
        finally:
            subprocess.run(["umount", str(home)], check=False)
    finally:
        stop(serve)


@pytest.mark.parametrize("method", ["post", "delete", "put"])
def test_another_method_on_the_status_probe_is_a_json_405(method: str) -> None:
    from django.test import Client

    answer = getattr(Client(enforce_csrf_checks=True), method)("/api/status")
    assert answer.status_code == 405 and answer["Allow"] == "GET, HEAD"
    assert answer.json() == {"error": f"{method.upper()} is not allowed here; use GET."}


def test_get_memory_says_who_made_each_recent_change(live_server_url: str) -> None:
    _, raw = ApiToken.issue(User.objects.create_user("alice"), "laptop")

    async def go() -> dict[str, Any]:
        async with http_session(live_server_url, raw) as session:
            err, stored = await call(
                session, "store_memory", content="The harbor opens at six.", project_id="acme/port"
            )
            assert not err, stored
            err, got = await call(session, "get_memory", id=stored["id"], project_id="acme/port")
            assert not err, got
            return dict(got)

    recent = asyncio.run(go())["history"]["recent"]
    assert [(r["action"], r["source"], r["by"]) for r in recent] == [("created", "mcp", "alice")]
