"""A child that dies because the embedded PostgreSQL's new cluster is not migrated yet is not a crash loop.

CI (stop 52): the data folder deleted under a `--role worker` supervisor, the worker died four times on
its missing queue table while the new cluster was being brought up to date, and the supervisor ended
the site as a crash loop."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from yullu_cli import supervised


class _Up(supervised.Database):
    """The supervisor's database, up (no embedded cluster to look at)."""

    def reachable(self) -> bool:
        return True


def _dies_at_once() -> supervised.Child:
    child = supervised.Child("worker", [sys.executable, "-c", "raise SystemExit(1)"], dict(os.environ))
    child.start()
    assert child.proc is not None
    child.proc.wait(timeout=60)
    return child


def _exits(child: supervised.Child, database: supervised.Database, times: int) -> None:
    for _ in range(times):
        supervised._on_exit(child, time.monotonic(), database)
        child.start()
        assert child.proc is not None
        child.proc.wait(timeout=60)


def test_exits_while_the_new_cluster_is_not_up_to_date_are_not_a_crash_loop(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    database = _Up(tmp_path, None, owned=False, owner_role=False, unprepared=True)
    child = _dies_at_once()
    _exits(child, database, supervised.MAX_QUICK_FAILURES + 2)
    assert child.quick_failures == 0
    assert "the new database was not yet up to date; restarting it in" in capfd.readouterr().err


def test_an_exit_of_a_child_started_before_the_migration_finished_is_not_counted(tmp_path: Path) -> None:
    """The migration runs in the supervisor's loop: the worker's exit during it is seen only afterwards."""
    database = _Up(tmp_path, None, owned=False, owner_role=False)
    child = _dies_at_once()
    database.prepared_at = time.monotonic()  # brought up to date after this child started
    supervised._on_exit(child, time.monotonic(), database)
    assert child.quick_failures == 0 and child.db_waits == 1


def test_the_same_exits_on_an_up_to_date_database_still_end_the_site(tmp_path: Path) -> None:
    """The excuse is narrow: a child that keeps dying on a database that is ready is a crash loop."""
    database = _Up(tmp_path, None, owned=False, owner_role=False)
    child = _dies_at_once()
    with pytest.raises(supervised.CrashLoop, match="4 times in a row"):
        _exits(child, database, supervised.MAX_QUICK_FAILURES)
