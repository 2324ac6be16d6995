"""A child that dies because the embedded PostgreSQL's new cluster is not migrated yet is not a crash loop.

CI (stop 52): the data folder deleted under a `--role worker` supervisor, the worker died four times on
its missing queue table while the new cluster was being brought up to date, and the supervisor ended
the site as a crash loop."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.processes import up_database
from yullu_cli import supervised


def _dies_at_once() -> supervised.Child:
    child = supervised.Child("worker", [sys.executable, "-c", "raise SystemExit(1)"], dict(os.environ))
    child.start()
    assert child.proc is not None
    child.proc.wait(timeout=60)
    _died_at_once(child)
    return child


def _died_at_once(child: supervised.Child) -> None:
    """The exit counts as quick (within START_GRACE of the start) however long the loaded machine took to run the
    process: two CPU burners made one start take over 20 s, and the exits were not quick (a flake)."""
    child.started_at = time.monotonic() - 1


def _exits(child: supervised.Child, database: supervised.Database, times: int) -> None:
    for _ in range(times):
        supervised._on_exit(child, time.monotonic(), database)
        child.start()
        assert child.proc is not None
        child.proc.wait(timeout=60)
        _died_at_once(child)


def test_exits_while_the_new_cluster_is_not_up_to_date_are_not_a_crash_loop(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    database = up_database(tmp_path, unprepared=True)
    child = _dies_at_once()
    _exits(child, database, supervised.MAX_QUICK_FAILURES + 2)
    assert child.quick_failures == 0
    assert "the new database was not yet up to date; restarting it in" in capfd.readouterr().err


def test_an_exit_of_a_child_started_before_the_migration_finished_is_not_counted(tmp_path: Path) -> None:
    """The migration runs in the supervisor's loop: the worker's exit during it is seen only afterwards."""
    database = up_database(tmp_path)
    child = _dies_at_once()
    database.prepared_at = child.started_at + 0.5  # brought up to date after this child started
    supervised._on_exit(child, time.monotonic(), database)
    assert child.quick_failures == 0 and child.db_waits == 1


def test_the_same_exits_on_an_up_to_date_database_still_end_the_site(tmp_path: Path) -> None:
    """The excuse is narrow: a child that keeps dying on a database that is ready is a crash loop."""
    database = up_database(tmp_path)
    child = _dies_at_once()
    with pytest.raises(supervised.CrashLoop, match="4 times in a row"):
        _exits(child, database, supervised.MAX_QUICK_FAILURES)


def _refusing_initdb(started: list[Path]) -> object:
    """pg.ensure_running as initdb answers a data folder without PG_VERSION: refused while it holds anything."""
    from yullu_core import postgres as pg

    def ensure_running(home: Path, cluster: pg.Cluster) -> pg.Cluster:
        if any(cluster.pgdata.iterdir()):
            raise pg.EmbeddedPostgresError(f'initdb failed in {cluster.pgdata}: directory "…" exists but is not empty')
        started.append(cluster.pgdata)
        return cluster

    return ensure_running


def test_a_data_folder_still_being_deleted_is_waited_for_not_a_crash_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Drill (chaos lane): postmaster.pid and PG_VERSION deleted first, the rest of the folder over the next
    seconds (a `rm -rf` of a large cluster): initdb refused the folder four times in 7 s and the supervisor
    ended the site. Now it waits, says so once, and makes the new cluster once the folder is empty."""
    from yullu_core import postgres as pg

    pgdata = tmp_path / "pgdata"
    (pgdata / "base" / "16384").mkdir(parents=True)
    (pgdata / "base" / "16384" / "2619").write_bytes(b"not yet deleted")
    cluster = pg.Cluster(pgdata, pgdata, tmp_path / "bin", None)
    started: list[Path] = []
    monkeypatch.setattr(pg, "ensure_running", _refusing_initdb(started))
    database = supervised.Database(tmp_path, cluster, owned=True, owner_role=True)
    for _ in range(supervised.MAX_QUICK_FAILURES * 2):
        database.retry_at = 0.0  # each look as if its wait were over
        database.watch(time.monotonic())
    assert not started and database.failures == 0
    said = capfd.readouterr().err
    assert said.count(f"data folder {pgdata} holds no database but is not empty") == 1, said
    shutil.rmtree(pgdata / "base")  # the deletion ends
    database.retry_at = 0.0
    database.watch(time.monotonic())
    assert started == [pgdata]


def test_an_exit_seen_after_the_embedded_server_came_back_is_not_counted(tmp_path: Path) -> None:
    """The supervisor starts a killed postmaster again inside its loop (seconds of crash recovery); a child that
    died meanwhile is looked at only afterwards, when the database answers again: it died of the outage."""
    database = up_database(tmp_path)
    child = _dies_at_once()
    database.back_at = child.started_at + 0.5  # the server was started again after this child started
    supervised._on_exit(child, time.monotonic(), database)
    assert child.quick_failures == 0 and child.db_waits == 1
