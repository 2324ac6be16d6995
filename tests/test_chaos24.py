"""Chaos drills, round 24: what the supervisor leaves behind, and says, through outside faults (docs/reliability.md,
"Chaos drills (round 24)"): a role's supervisor that gives up, a metrics folder that had no room, a read-only home
under Celery, pid files whose pids were reused after a reboot."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.processes import REPO, product_env


@pytest.mark.django_db(transaction=True)
def test_a_role_supervisor_that_gives_up_says_why_to_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`yullu serve --role worker` whose worker dies at each start (a typo in the broker URL) ended the worker role
    with its line in its own output only: no run/ended-because (the all-in-one supervisor writes it), so `yullu
    doctor` said "ok server … ready" for a site whose tasks no longer ran (round 23's leftover)."""
    from yullu_cli import hooks, memory_commands

    home, port = tmp_path / "home", free_port()
    env = product_env(home, YULLU_PORT=str(port), YULLU_EMBED_PROVIDER="none",
                      CELERY_BROKER_URL="reddis://127.0.0.1:9/0")  # fmt: skip
    ran = subprocess.run([sys.executable, "-m", "yullu_cli.main", "serve", "--role", "worker"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert ran.returncode == 1 and "4 times in a row; stopping everything" in ran.stderr, ran.stderr[-3000:]
    monkeypatch.delenv("YULLU_SERVER", raising=False)
    monkeypatch.setattr(hooks, "yullu_home", lambda: home)
    said = memory_commands._roles_ended()
    assert said is not None and re.match(
        rf"the last `yullu serve --role worker` \(port {port}\) stopped by itself: the worker process exited with "
        r"code 1 within 20 s of starting, 4 times in a row", said), said  # fmt: skip
    monkeypatch.setattr(hooks, "server_url", lambda: f"http://127.0.0.1:{free_port()}")  # nothing answers there
    ok, detail, fix = memory_commands._server()
    assert not ok and detail.endswith(said) and fix == memory_commands.STOPPED_FIX


def test_an_all_in_one_start_forgets_what_a_role_supervisor_ended_with(tmp_path: Path) -> None:
    """Review 24: a worker role's line stayed after its home moved to the all-in-one `yullu serve` (its worker runs
    the tasks again), and doctor warned "the last `yullu serve --role worker` … stopped by itself" for good."""
    from yullu_cli.supervised import ended_because, remember_the_stop

    remember_the_stop(tmp_path, "yullu: the worker process exited with code 1, 4 times in a row", "worker", 8000)
    assert ended_because(tmp_path, roles_only=True)
    remember_the_stop(tmp_path, None, "web", 8000)  # another role's start: the worker's line is still the news
    assert ended_because(tmp_path, roles_only=True)
    remember_the_stop(tmp_path, None)  # `yullu serve`: every role runs under it
    assert ended_because(tmp_path) is None


@pytest.fixture
def another_program() -> Iterator[int]:
    """A live process that is no `yullu serve` and no PostgreSQL: what holds a pid file's pid after a reboot."""
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        yield sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_serve_pid_file_naming_another_program_after_a_reboot_is_taken_over(
    tmp_path: Path, another_program: int
) -> None:
    """`yullu serve` after a reboot refused to start: "a server is already running for this YULLU_HOME (pid N)",
    N the pid its killed predecessor had, now a shell's or a browser's."""
    from yullu_cli import django_setup, supervisor

    pidfile = tmp_path / "serve.pid"
    pidfile.write_text(str(another_program))
    supervisor._pidfile_claim(pidfile)
    try:
        assert pidfile.read_text() == str(os.getpid())
        assert not django_setup.server_running(tmp_path.parent)  # nor "a server is running" for the CLI commands
    finally:
        supervisor._claimed.pop().close()


def test_a_postmaster_pid_file_naming_another_program_after_a_reboot_is_removed_before_the_start(
    tmp_path: Path, another_program: int
) -> None:
    """The same pid file of the embedded PostgreSQL (a pid then held by a process of the user it runs as): pg_ctl
    said "server is running", nothing started it, and `yullu serve` ended with "lost the embedded PostgreSQL …
    Connection refused"; PostgreSQL itself would have refused the lock file."""
    from yullu_core import postgres as pg

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    cluster = pg.Cluster(pgdata, pgdata, tmp_path / "bin", None)
    for lock in (pgdata / "postmaster.pid", pgdata / ".s.PGSQL.5432.lock"):
        lock.write_text(f"{another_program}\n{pgdata}\n1795841127\n5432\n")
    assert pg.postmaster(cluster) is None and not pg.is_running(cluster)
    pg._forget_a_stale_pid(cluster)
    assert not (pgdata / "postmaster.pid").exists() and not (pgdata / ".s.PGSQL.5432.lock").exists()
    (pgdata / "postmaster.pid").write_text(f"{os.getpid()}\n{pgdata}\n")  # a live process that is no postmaster
    pg._forget_a_stale_pid(cluster)
    assert not (pgdata / "postmaster.pid").exists()
    # A postmaster started under another spelling of the path (a symbolic link) works in its data folder: its own,
    # never removed (a second postmaster on one data folder would follow).
    (tmp_path / "link").symlink_to(pgdata)
    postmaster = subprocess.Popen(["sleep", "300"], cwd=tmp_path / "link")
    try:
        (pgdata / "postmaster.pid").write_text(f"{postmaster.pid}\n{tmp_path / 'link'}\n1795841127\n")
        pg._forget_a_stale_pid(cluster)
        assert (pgdata / "postmaster.pid").exists() and pg.postmaster(cluster) == pg.Postmaster(
            postmaster.pid, "1795841127"
        )
    finally:
        postmaster.kill()
        postmaster.wait()


def test_beat_starts_over_a_pid_file_a_dead_beat_left(tmp_path: Path, another_program: int) -> None:
    """Celery beat refuses a pid file naming a live process ("Seems we're already running?"): after a reboot that
    pid was another program's, beat exited at each start, and the fourth exit ended the site."""
    from yullu_cli import supervised

    pidfile = tmp_path / "beat.pid"
    pidfile.write_text(f"{another_program}\n")
    refuses = f"import os, sys; sys.exit(3 if os.path.exists({str(pidfile)!r}) else 0)"  # as Celery's check does
    child = supervised.Child("beat", [sys.executable, "-c", refuses], dict(os.environ), pidfile=pidfile)
    child.start()
    assert child.proc is not None and child.proc.wait(timeout=60) == 0


CELERY_PIDFILE_CHECK = """
import sys
if "--pidfile" in sys.argv:  # as Celery's create_pidlock does on a read-only folder
    raise OSError(30, "Read-only file system", sys.argv[sys.argv.index("--pidfile") + 1])
print("beat runs", sys.argv[1:])
"""


def test_beat_on_a_read_only_home_starts_without_its_pid_file_not_with_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Drill: $YULLU_HOME bind-mounted read-only under a serving site, beat killed: each restart printed Celery's
    50-line traceback (OSError: [Errno 30] Read-only file system: '…/run/beat.pid') and beat never ran."""
    from yullu_cli import supervised

    (run := tmp_path / "run").mkdir()
    monkeypatch.setattr(supervised.os, "access", lambda path, mode: Path(path) != run)
    cmd = [sys.executable, "-c", CELERY_PIDFILE_CHECK, "beat", "--pidfile", str(run / "beat.pid"), "--quiet"]
    child = supervised.Child("beat", cmd, dict(os.environ), pidfile=run / "beat.pid")
    child.start()
    assert child.proc is not None and child.proc.wait(timeout=60) == 0
    out, err = capfd.readouterr()
    assert "Traceback" not in err and out.strip() == "beat runs ['beat', '--quiet']"
    assert err.strip() == f"yullu: {run} is not writable (read-only?); the beat process starts without its pid file " \
        "beat.pid."  # fmt: skip


def test_a_child_started_while_the_metrics_folder_was_full_counts_there_once_room_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drill: /dev/shm filled, the web and beat killed: restarted without the shared metrics folder (round 23's fix),
    they stayed without it for the rest of their lives, missing from /metrics long after space was freed."""
    import signal
    import threading
    import time

    from tests.processes import up_database
    from yullu_cli import supervised

    (metrics := tmp_path / "metrics").mkdir()
    said = tmp_path / "said"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics))
    monkeypatch.setattr(supervised, "METRICS_ROOM", shutil.disk_usage(metrics).total + 1)  # no room
    monkeypatch.setattr(supervised, "METRICS_CHECK_EVERY", 0.5)
    tell = f"import os, time; open({str(said)!r}, 'a').write(os.environ.get('{supervised.MULTIPROC_ENV}', 'none') " \
        "+ '\\n'); time.sleep(120)"  # fmt: skip
    child = supervised.Child("worker", [sys.executable, "-c", tell], dict(os.environ))
    child.start()

    def lines() -> list[str]:
        return said.read_text().split() if said.exists() else []

    def then_room_then_stop() -> None:
        deadline = time.monotonic() + 90
        while not lines() and time.monotonic() < deadline:
            time.sleep(0.2)
        monkeypatch.setattr(supervised, "METRICS_ROOM", 0)  # space freed
        while len(lines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)  # what stops `yullu serve`

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    helper = threading.Thread(target=then_room_then_stop, daemon=True)
    helper.start()
    try:
        assert supervised.supervise([child], None, up_database(tmp_path)) is None
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        supervised.stop_all([child])
    assert lines() == ["none", str(metrics)] and child.restarts == 0 and child.quick_failures == 0


def test_a_log_folder_that_cannot_be_written_is_one_line_not_one_per_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Drill: a checkout's .yullu/logs on a full 64 KiB tmpfs under two writers: every store was acknowledged and its
    events waited in the outbox, as designed, but the web logged one warning per event (485 in 40 s)."""
    import logging
    from types import SimpleNamespace

    from sync import outbox

    def full(folder: Path, event: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outbox, "write_event", full)
    monkeypatch.setattr(outbox, "Event", SimpleNamespace(model_validate=lambda payload: payload))
    rows: list[Any] = [SimpleNamespace(payload={}, folder=str(tmp_path)) for _ in range(outbox.BULK_FROM - 1)]
    with caplog.at_level(logging.INFO, logger=outbox.log.name):
        for _ in range(4):
            assert outbox._write_group(tmp_path, rows) == []  # each kept for the sweep
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"could not write sync events to {tmp_path} (kept for the next sweep): [Errno 28] No space left "
                    f"on device (1 event failed since {said[0].rsplit(' ', 1)[-1]}"]  # fmt: skip
