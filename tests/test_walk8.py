"""Defects the eighth new-user walk met, each as it was met: a store that committed while the embedded
PostgreSQL was killed answered 500 "Internal error" (Django could not name the failed on-commit flush)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from django.db import OperationalError

from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import outbox
from sync.models import OutboxEvent
from tests.processes import git_repo

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
