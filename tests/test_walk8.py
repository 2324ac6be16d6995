"""Defects the eighth new-user walk met, each as it was met: a store that committed while the embedded
PostgreSQL was killed answered 500 "Internal error" (Django could not name the failed on-commit flush); a
teammate's `yullu install --server URL --token T` with a revoked token installed without a word, and
`yullu doctor` then said every check was ok while the server refused every MCP call and hook."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError

from access.models import ApiToken
from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import outbox
from sync.models import OutboxEvent
from tests.processes import git_repo, product_env, run_cli

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
    with caplog.at_level(logging.ERROR, logger="django.db.backends.base"):
        stored = create.store_memory(resolve(None, str(repo)), "the harbor tides are read from NOAA at 6am", "process")
    assert Memory.objects.filter(pk=stored.memory.pk).exists()
    assert OutboxEvent.objects.filter(project_id=stored.memory.project_id).exists(), "left for the sweep"
    assert "sync.outbox.flush" in caplog.text


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
