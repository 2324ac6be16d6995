"""Chaos drills, round 23: what the supervisor says and does when the embedded PostgreSQL is stopped on
purpose, when a new cluster's migration keeps failing, and with three supervisors (one per role) on one home."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.processes import REPO, up_database
from yullu_cli import supervised

PG_CONTROL_STATE_AT = 16  # where pg_control keeps the cluster's state (DBState)


def _failing_migration() -> str:
    raise RuntimeError('relation "memories_memory" already exists')


def test_a_migration_that_keeps_failing_on_a_new_cluster_ends_the_site_with_one_line(tmp_path: Path) -> None:
    """Its children's exits were excused for as long as the new cluster was not up to date, so a migration that
    could never apply kept the site half up for ever (round 22's leftover): now four failures in a row end it."""
    database = up_database(tmp_path, unprepared=True, prepare=_failing_migration)
    for _ in range(supervised.MAX_QUICK_FAILURES - 1):
        database._prepare()
    said = r"up to date, 4 times in a row \(RuntimeError: relation .memories_memory. already exists\); stopping"
    with pytest.raises(supervised.CrashLoop, match=said):
        database._prepare()


def test_a_migration_failing_while_the_database_is_down_is_tried_again_without_end(tmp_path: Path) -> None:
    """The server going again during the migration is the supervisor's restart's business, not a broken migration."""

    class Down(supervised.Database):
        def reachable(self) -> bool:
            return False

    database = Down(tmp_path, None, owned=False, owner_role=False, unprepared=True, prepare=_failing_migration)
    for _ in range(supervised.MAX_QUICK_FAILURES * 2):
        database._prepare()
    assert database.unprepared and database.prepare_failures == 0


def test_a_supervisor_whose_new_cluster_another_one_prepared_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Three supervisors (`--role web|worker|beat`) on one home each said "brought the new database up to date",
    two of them "(0 migrations)" with a token "new" that the first one had made (round 22)."""
    from access.bootstrap import BootstrapResult
    from yullu_cli import supervisor

    nothing_new = BootstrapResult(False, tmp_path / "admin-password", tmp_path / "token", False)
    monkeypatch.setattr(supervisor, "_prepare_database", lambda: (nothing_new, []))
    assert supervisor._prepare_new_database() is None
    database = up_database(tmp_path, unprepared=True, prepare=supervisor._prepare_new_database)
    database._prepare()
    assert not database.unprepared and capfd.readouterr().err == ""


def _stopped_cluster(tmp_path: Path, state: int) -> object:
    """A data folder whose postmaster has exited, its control file in `state` (1 shut down, 6 in production)."""
    from yullu_core import postgres as pg

    pgdata = tmp_path / "pgdata"
    (pgdata / "global").mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("17\n")
    control = bytearray(8192)
    control[PG_CONTROL_STATE_AT : PG_CONTROL_STATE_AT + 4] = state.to_bytes(4, "little")
    (pgdata / "global" / "pg_control").write_bytes(bytes(control))
    return pg.Cluster(pgdata, pgdata, tmp_path / "bin", None)


@pytest.mark.parametrize(("state", "said"), [(1, "was shut down; starting it again."),
                                             (6, "is gone; starting it again (crash recovery).")])  # fmt: skip
def test_a_stop_request_is_said_as_a_shutdown_and_a_kill_as_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], state: int, said: str
) -> None:
    """`pg_ctl stop -m smart` of the embedded PostgreSQL was reported as "crash recovery" (round 22)."""
    from yullu_core import postgres as pg

    cluster = _stopped_cluster(tmp_path, state)
    monkeypatch.setattr(pg, "ensure_running", lambda home, cluster: cluster)
    database = supervised.Database(tmp_path, cluster, owned=True, owner_role=True)
    database.server = pg.Postmaster(4242, "1")
    database.watch(time.monotonic())
    assert f"yullu: the embedded PostgreSQL (pid 4242) {said}" in capfd.readouterr().err


def test_doctor_says_why_the_last_serve_ended_by_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The crash loop's line was only in `yullu serve`'s log; doctor said "connection refused", "start it"."""
    from yullu_cli import hooks, memory_commands

    port = free_port()
    monkeypatch.setattr(hooks, "server_url", lambda: f"http://127.0.0.1:{port}")
    monkeypatch.setattr(hooks, "yullu_home", lambda: tmp_path)
    (tmp_path / "run").mkdir()
    supervised.remember_the_stop(tmp_path / "run", "yullu: could not bring the new database up to date, 4 times")
    ok, detail, fix = memory_commands._server()
    assert not ok and detail.endswith("the last `yullu serve` stopped by itself: could not bring the new "
                                      "database up to date, 4 times")  # fmt: skip
    assert fix == memory_commands.STOPPED_FIX
    supervised.remember_the_stop(tmp_path / "run", None)  # a start, or a stop by request
    assert memory_commands._server()[2].startswith("start it with `yullu serve`")


@pytest.mark.django_db(transaction=True)
def test_doctor_fails_when_this_machines_server_refuses_the_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, live_server_url: str, owner_token: str
) -> None:
    """Drill: the token file written again with another value while `yullu serve` ran. Every hook was refused
    (silently: a hook never holds up a prompt) and doctor said "ok server … ready", "ok hooks"."""
    from yullu_cli import memory_commands

    monkeypatch.delenv("YULLU_SERVER", raising=False)
    monkeypatch.setenv("YULLU_HOME", str(tmp_path))
    (tmp_path / "token").write_text("yl_" + "0" * 43 + "\n")
    ok, detail, fix = memory_commands._team_token(f"{live_server_url}/api/status")
    assert not ok and detail == f"{live_server_url} refuses the token in {tmp_path / 'token'}"
    assert fix.startswith("run `yullu token`")
    (tmp_path / "token").write_text(owner_token + "\n")
    assert memory_commands._team_token(f"{live_server_url}/api/status") == (
        True,
        f"{live_server_url}/api/status ready",
        "",
    )


COUNT_ON_A_FULL_DEV_SHM = """
import sys
from pathlib import Path
from yullu_cli.supervisor import _metrics_dir
folder = _metrics_dir(Path(sys.argv[1]))  # before prometheus_client is imported, as `yullu serve` does
try:
    with open("/dev/shm/filler", "wb", buffering=0) as fh:
        while True:
            fh.write(b"x" * 4096)
except OSError:
    pass
from yullu_cli.supervised import _count_restart
_count_restart("web")  # what the supervisor does when a child exits
print(folder, flush=True)
"""


def test_the_supervisor_counting_a_restart_with_dev_shm_full_does_not_die(tmp_path: Path) -> None:
    """Drill: /dev/shm (a small tmpfs in a private mount namespace) filled under a running site, then the web
    process killed: `yullu serve` died at once of SIGBUS writing its restart count to the metrics file mapped
    there, without a line, and the whole site with it (its PostgreSQL left with no owner)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private /dev/shm needs root and unshare (CI runs as root)")
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    private_shm = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs -o size=8m tmpfs /dev/shm && exec "$@"', "sh"]  # fmt: skip
    counted = subprocess.run([*private_shm, sys.executable, "-c", COUNT_ON_A_FULL_DEV_SHM, str(tmp_path)], env=env,
                             cwd=REPO, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    if "mount" in counted.stderr and counted.returncode == 1:
        pytest.skip(f"no private mount namespace here: {counted.stderr.strip()}")
    assert counted.returncode == 0, f"exit {counted.returncode} (-7: SIGBUS) {counted.stderr[-2000:]}"


def test_a_child_started_while_the_metrics_folder_is_full_starts_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A child writing its first metric to a full /dev/shm dies of SIGBUS, and again at every restart."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(supervised, "METRICS_ROOM", shutil.disk_usage(tmp_path).total + 1)  # never room
    code = "import os; print(os.environ.get('PROMETHEUS_MULTIPROC_DIR', 'none'))"
    child = supervised.Child("worker", [sys.executable, "-c", code], dict(os.environ))
    child.start()
    assert child.proc is not None and child.proc.wait(timeout=60) == 0
    out, err = capfd.readouterr()
    assert out.strip() == "none" and f"the metrics folder {tmp_path} has no room" in err


def test_a_start_refused_for_want_of_shared_memory_names_it_not_the_data_disk(tmp_path: Path) -> None:
    from yullu_core import postgres as pg

    fatal = 'FATAL: could not resize shared memory segment "/PostgreSQL.3541279560" to 29776 bytes: No space left'
    said = pg.no_space_to_start(tmp_path, fatal + " on device")
    assert said.startswith("the embedded PostgreSQL cannot start: its shared memory (/dev/shm) is full (FATAL")


def test_beats_ticks_go_on_when_the_wall_clock_steps_back() -> None:
    """Celery's interval waits until last run + period by the wall clock: stepped back an hour, beat sent no
    dream, reconcile or heartbeat tick for that hour (should_dream and is_due handle a last pass "in the
    future" since round nine, but got no tick to apply it). A step forward is one tick, as before."""
    import pickle
    from datetime import UTC, datetime, timedelta

    from yullu_site.celery import TICK, app

    now = datetime(2026, 11, 28, 3, 0, tzinfo=UTC)
    for name, entry in app.conf.beat_schedule.items():
        tick = pickle.loads(pickle.dumps(entry["schedule"]))  # as beat's schedule file keeps it
        tick.nowfun = lambda: now
        assert tick.is_due(now + timedelta(hours=1)).is_due, f"{name} stalls after the clock went back an hour"
        assert tick.is_due(now - timedelta(hours=1)).is_due  # the clock went forward: due (once)
        assert not tick.is_due(now).is_due  # just run: not again before its period
    assert app.conf.beat_schedule["dream-tick"]["schedule"].seconds == TICK


def test_a_home_turned_read_only_does_not_end_the_site_when_the_postmaster_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Drill: $YULLU_HOME bind-mounted read-only under a serving site, then the postmaster killed. It was started
    again, and the owner mark's write (run/postgres.owner) raised EROFS out of the supervisor: the site ended."""
    import errno

    from yullu_core import postgres as pg

    def read_only(home: Path, server: pg.Postmaster, owner_pid: int) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(home / "run" / "postgres.owner.tmp"))

    monkeypatch.setattr(pg, "postmaster", lambda cluster: pg.Postmaster(4242, "1"))
    monkeypatch.setattr(pg, "mark_owner", read_only)
    database = supervised.Database(tmp_path, object(), owned=True, owner_role=True)
    database.adopt()
    assert database.server == pg.Postmaster(4242, "1")
    said = capfd.readouterr().err
    assert f"could not write {tmp_path}/run/postgres.owner.tmp (Read-only file system); the embedded" in said


def test_beat_dying_on_a_read_only_home_is_waited_for_not_a_crash_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The same drill, after the fix above: beat, restarted with its lock, could not write run/beat.pid (EROFS),
    exited at once with code 1, and four such exits would have ended the site as a crash loop."""
    (tmp_path / "run").mkdir()
    database = up_database(tmp_path)
    monkeypatch.setattr(supervised.os, "access", lambda path, mode: Path(path) != tmp_path / "run")
    child = supervised.Child("beat", [sys.executable, "-c", "raise SystemExit(1)"], dict(os.environ))
    for _ in range(supervised.MAX_QUICK_FAILURES + 1):
        child.start()
        assert child.proc is not None
        child.proc.wait(timeout=60)
        child.started_at = time.monotonic() - 1  # quick, however slow the loaded machine was
        supervised._on_exit(child, time.monotonic(), database)
    assert child.quick_failures == 0
    assert f"{tmp_path / 'run'} is not writable (read-only?); restarting it in" in capfd.readouterr().err
