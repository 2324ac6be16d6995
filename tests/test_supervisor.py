"""`yullu serve` as a new user runs it (`-m slow`): a fresh YULLU_HOME on the embedded Postgres, as
root a PostgreSQL system user that does not exist yet, then children killed with -9 and brought back
while the rest of the site keeps serving, and a task whose worker dies mid-run completing anyway.
The embedded PostgreSQL is a child too: its postmaster or one backend killed with -9 during a
burst of stores, its postmaster sent SIGTERM (a smart shutdown), the supervisor killed with -9
(its server adopted by the next start), and a server that cannot start again. The last two tests
end the module's site."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest

from tests.conftest import free_port
from tests.processes import REPO, is_ready, stub_env, wait_until
from tests.stubs import StubServer
from yullu_core.locks import LockKey

pytestmark = pytest.mark.slow

DEADLINE = 120.0  # generous: two cores shared by everything else running


@dataclass
class Site:
    proc: subprocess.Popen[bytes]
    url: str
    env: dict[str, str]
    log: Path
    stub: StubServer
    system_user: str | None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def token(self) -> str:
        return (Path(self.env["YULLU_HOME"]) / "token").read_text().strip()

    def child(self, kind: str) -> psutil.Process:
        """The supervisor's direct child running `kind` (uvicorn, worker or beat: one of its arguments)."""
        for proc in psutil.Process(self.proc.pid).children():
            if kind in proc.cmdline():
                return proc
        raise LookupError(f"no {kind} child:\n{self.output()[-2000:]}")

    def pgdata(self) -> Path:
        """The embedded PostgreSQL's data folder (where plan() puts it for this env)."""
        where = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)"
        return Path(subprocess.run([sys.executable, "-c", where], env=self.env, cwd=REPO, capture_output=True,
                                   text=True, check=True, timeout=60).stdout.strip())  # fmt: skip

    def postmaster(self) -> psutil.Process:
        return psutil.Process(int((self.pgdata() / "postmaster.pid").read_text().split()[0]))

    def restart(self) -> None:
        """Start the supervisor again (after a test killed or stopped it), output appended to the log."""
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", "serve"], env=self.env, cwd=REPO,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        wait_for(lambda: is_ready(self.url), self, "the supervisor started again to be ready")

    def pid(self, kind: str) -> int | None:
        try:
            return self.child(kind).pid
        except (LookupError, psutil.Error):
            return None  # between an exit and its restart


def wait_for(condition: Callable[[], Any], site: Site, what: str, timeout: float = DEADLINE) -> Any:
    return wait_until(condition, what, timeout, alive=site.proc, output=site.output)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    base = Path(tempfile.mkdtemp(prefix="yullu-serve-"))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach the data folder
    system_user = f"yullu-pg-{secrets.token_hex(3)}" if os.geteuid() == 0 else None
    if system_user:
        with pytest.raises(KeyError):
            pwd.getpwnam(system_user)  # a fresh machine: the user does not exist yet
    (base / "config.toml").write_text("[dreaming]\nenabled = false\n")  # only the passes a test queues
    stub = StubServer().__enter__()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    port = free_port()
    env.update(
        YULLU_HOME=str(base / "home"),
        YULLU_CONFIG=str(base / "config.toml"),
        YULLU_ROOT_PG_BASE=str(base / "pg"),
        YULLU_PORT=str(port),
        YULLU_LOG_LEVEL="warning",
        YULLU_SCHEDULER_TICK_SECONDS="3600",
        **stub_env(stub.url, reasoning=True),
    )
    if system_user:
        env["YULLU_PG_SYSTEM_USER"] = system_user
    log = base / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yullu_cli.main", "serve"],
            env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    site = Site(proc, f"http://127.0.0.1:{port}", env, log, stub, system_user)
    try:
        wait_for(lambda: is_ready(site.url), site, "the first start", timeout=300)
        yield site
    finally:
        proc = site.proc  # a test may have started the supervisor again
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the supervisor stops its children and the Postgres it started
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        stop_pg = "from yullu_core import paths, postgres as pg; pg.stop(paths.ensure_home())"
        subprocess.run([sys.executable, "-c", stop_pg], env=env, cwd=REPO, timeout=120, check=False)
        stub.__exit__(None, None, None)
        if system_user:
            subprocess.run(["userdel", system_user], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_serve_on_a_fresh_machine_creates_the_postgres_system_user_first(site: Site) -> None:
    if site.system_user is None:
        pytest.skip("only root runs PostgreSQL as a separate system user")
    assert pwd.getpwnam(site.system_user).pw_shell.endswith("nologin")
    assert "Traceback" not in site.output()


def test_a_worker_killed_with_9_is_restarted_while_the_web_keeps_serving(site: Site) -> None:
    web, worker = site.child("uvicorn"), site.child("worker")
    worker.kill()
    line = f"the worker process (pid {worker.pid}) was killed by SIGKILL; restarting it"
    wait_for(lambda: line in site.output(), site, "the restart log line")
    assert site.child("uvicorn").pid == web.pid and is_ready(site.url)  # never went down
    wait_for(lambda: site.pid("worker") not in (None, worker.pid), site, "a new worker")
    wait_for(lambda: is_ready(site.url), site, "/api/status ready")


def test_the_web_process_killed_with_9_comes_back(site: Site) -> None:
    web = site.child("uvicorn")
    web.kill()
    wait_for(lambda: f"the web process (pid {web.pid}) was killed by SIGKILL" in site.output(), site, "the log line")
    wait_for(lambda: is_ready(site.url), site, "/api/status ready after the web restart", timeout=90)
    assert site.pid("uvicorn") not in (None, web.pid)


def test_a_worker_killed_while_the_config_file_is_broken_waits_for_the_fix_not_the_end(site: Site) -> None:
    """Walk 13: config.toml saved with a typo while the site runs, then the worker killed (the OOM killer):
    the restarted worker died at import with celery's traceback, four times, and the supervisor ended the
    whole site. Its restart now waits for the file, saying so in one line; the web keeps serving."""
    config = Path(site.env["YULLU_CONFIG"])
    good = config.read_text()
    mark = len(site.output())
    worker = site.child("worker")
    config.write_text(good + "garbage = [\n")
    try:
        worker.kill()
        wait_for(lambda: "starts again once it is fixed" in site.output()[mark:], site, "the line saying it waits")
        assert "not valid TOML" in site.output()[mark:] and str(config) in site.output()[mark:]
        assert is_ready(site.url) and site.pid("worker") is None
    finally:
        config.write_text(good)
    wait_for(lambda: site.pid("worker") not in (None, worker.pid), site, "a new worker once the file is fixed")
    assert "the config file reads again; starting the worker process" in site.output()[mark:]
    assert "Traceback" not in site.output()[mark:] and site.proc.poll() is None


def test_beat_back_with_its_lock_after_a_postgres_restart_waits_for_a_broken_config_file_too(site: Site) -> None:
    """Walk 13: the same typo, then the postmaster killed: the beat lock claimed again started beat
    straight into Celery's traceback and an exit (its restart after that waited for the file). (A worker
    still starting from the test before may read the broken file: only beat's exit is judged here.)"""
    config = Path(site.env["YULLU_CONFIG"])
    good = config.read_text()
    mark = len(site.output())
    postmaster, beat = site.postmaster(), site.child("beat")
    config.write_text(good + "oops =\n")
    try:
        postmaster.kill()
        wait_for(lambda: "holding the beat lock again" in site.output()[mark:], site, "the beat lock claimed again")
        wait_for(lambda: "The beat process starts again once it is fixed" in site.output()[mark:], site, "beat waiting")
        assert not re.search(r"the beat process \(pid \d+\) exited", site.output()[mark:]), site.output()[mark:]
    finally:
        config.write_text(good)
    wait_for(lambda: site.pid("beat") not in (None, beat.pid), site, "beat started once the file is fixed")
    wait_for(lambda: is_ready(site.url), site, "/api/status ready")


def test_a_task_whose_worker_is_killed_mid_run_completes_after_the_restart(site: Site) -> None:
    auth = {"authorization": f"Bearer {site.token()}"}
    project = "acme/killed-mid-task"
    turns = [{"role": "user", "content": "we release with make release, never by hand"}]
    recorded = httpx.post(f"{site.url}/api/messages", headers=auth, timeout=30,
                          json={"project_id": project, "session_id": "s1", "messages": turns})  # fmt: skip
    assert recorded.status_code == 201, recorded.text
    reply = json.dumps(
        {"operations": [{"op": "create", "content": "Release with make release", "category": "process"}]}
    )
    site.stub.chat_replies += [reply, reply]
    site.stub.chat_delay = 60.0  # the reasoner is still "thinking" when the worker dies
    asked = len([r for r in site.stub.requests if r["path"].endswith("/chat/completions")])
    queue = f"import django; django.setup(); from dreaming.tasks import dream_project; dream_project.delay({project!r})"
    subprocess.run([sys.executable, "-c", queue], env={**site.env, "DJANGO_SETTINGS_MODULE": "yullu_site.settings"},
                   cwd=REPO, check=True, timeout=120)  # fmt: skip
    chats = lambda: len([r for r in site.stub.requests if r["path"].endswith("/chat/completions")])  # noqa: E731
    wait_for(lambda: chats() > asked, site, "the task reaching the reasoner")
    worker = site.child("worker")
    worker.kill()
    site.stub.chat_delay = 0.0

    def created() -> bool:
        page = httpx.get(f"{site.url}/api/memories", params={"project_id": project}, headers=auth, timeout=10)
        return page.status_code == 200 and any(
            m["content"] == "Release with make release" for m in page.json()["results"]
        )

    def passes() -> list[dict[str, Any]]:
        page = httpx.get(f"{site.url}/api/dream/passes", params={"project_id": project}, headers=auth, timeout=10)
        return [p for p in page.json()["passes"] if p["ops_created"] == 1] if page.status_code == 200 else []

    wait_for(created, site, "the memory from the redelivered task")
    wait_for(passes, site, "the redelivered pass to finish")  # its row is written after its memories
    assert site.pid("worker") not in (None, worker.pid)
    assert chats() >= asked + 2  # the task ran a second time, on the new worker
    assert [p["trigger"] for p in passes()] == ["manual"]


def test_metrics_from_every_process_count_a_restarted_beat(site: Site) -> None:
    beat = site.child("beat")
    beat.kill()
    wait_for(lambda: site.pid("beat") not in (None, beat.pid), site, "a new beat")
    auth = {"authorization": f"Bearer {site.token()}"}

    def restarts() -> str:
        page = httpx.get(f"{site.url}/metrics", headers=auth, timeout=10)
        found = 'yullu_child_restarts_total{child="beat"} 1.0' in page.text
        return page.text if found else ""

    text = wait_for(restarts, site, "the beat restart in /metrics")  # written by the supervisor process
    assert 'yullu_http_requests_total{method="GET",route="/api/status",status="200"}' in text  # the web's own


def stores_during(site: Site, kill: Callable[[], None], count: int = 60) -> tuple[dict[int, str], int]:
    """`count` REST stores from 8 threads; `kill()` runs once a sixth of them are acknowledged, while
    the rest are in flight. Returns the acknowledged stores (id → content) and how many failed."""
    auth = {"authorization": f"Bearer {site.token()}"}
    acked: dict[int, str] = {}
    failed = 0
    killed = False

    def store(i: int) -> None:
        nonlocal failed, killed
        content = f"fault burst {secrets.token_hex(4)} fact number {i}"
        try:
            answer = httpx.post(f"{site.url}/api/memories", headers=auth, timeout=30,
                                json={"project_id": "acme/faults", "content": content})  # fmt: skip
            if answer.status_code in (200, 201):
                acked[answer.json()["id"]] = answer.json().get("content", content)  # a duplicate names its memory
            else:
                failed += 1
        except httpx.HTTPError:
            failed += 1
        if len(acked) >= count // 6 and not killed:
            killed = True
            kill()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(store, range(count)))
    assert killed, f"too few stores were acknowledged to kill during the burst: {len(acked)}"
    return acked, failed


def assert_nothing_acknowledged_is_lost(site: Site, acked: dict[int, str]) -> None:
    auth = {"authorization": f"Bearer {site.token()}"}
    for pk, content in acked.items():
        found = httpx.get(f"{site.url}/api/memories/{pk}", headers=auth, timeout=30)
        assert found.status_code == 200 and found.json()["content"] == content, (pk, found.text)


def test_the_postgres_postmaster_killed_with_9_during_stores_is_started_again(site: Site) -> None:
    postmaster = site.postmaster()
    acked, _ = stores_during(site, postmaster.kill)
    wait_for(lambda: f"the embedded PostgreSQL (pid {postmaster.pid}) is gone" in site.output(), site, "the log line")
    wait_for(lambda: is_ready(site.url), site, "/api/status ready after PostgreSQL came back")
    assert site.postmaster().pid != postmaster.pid
    assert_nothing_acknowledged_is_lost(site, acked)
    # beat stopped with its lock's connection, and runs again holding it
    wait_for(lambda: "holding the beat lock again; starting beat" in site.output(), site, "the beat lock")
    wait_for(lambda: site.pid("beat"), site, "beat running again")
    assert site.proc.poll() is None and "stopping" not in site.output()
    # stopped as soon as the postmaster was seen gone, not after the seconds of crash recovery (when
    # beat logged a traceback for every task falling due meanwhile)
    outage = site.output().split(f"(pid {postmaster.pid}) is gone", 1)[1]
    assert outage.index("lost the database connection holding the beat lock") < outage.index("PostgreSQL is back")


def test_one_backend_killed_with_9_during_stores_costs_a_reconnect_not_the_site(site: Site) -> None:
    postmaster = site.postmaster()

    def kill_one_backend() -> None:  # PostgreSQL then resets every backend
        for backend in postmaster.children():
            with contextlib.suppress(psutil.Error):  # a request's connection may just have ended
                if " yullu " in " ".join(backend.cmdline()):
                    backend.kill()
                    return
        raise AssertionError("no client backend of the yullu database to kill")

    lost_lock = site.output().count("lost the database connection holding the beat lock")
    acked, _ = stores_during(site, kill_one_backend)
    wait_for(lambda: site.output().count("lost the database connection holding the beat lock") > lost_lock,
             site, "the beat lock's connection to go with the reset")  # fmt: skip
    wait_for(lambda: is_ready(site.url), site, "/api/status ready after the reset")
    assert site.postmaster().pid == postmaster.pid  # PostgreSQL recovered by itself
    assert_nothing_acknowledged_is_lost(site, acked)
    wait_for(lambda: site.pid("beat"), site, "beat running again")
    assert site.proc.poll() is None


def test_a_postmaster_asked_to_stop_with_sigterm_is_not_left_waiting_for_the_sites_connections(site: Site) -> None:
    # SIGTERM is PostgreSQL's smart shutdown: it waits for every session to end, and the site's
    # processes keep theirs open, so without the supervisor the site stayed not ready for good.
    postmaster = site.postmaster()
    postmaster.terminate()
    wait_for(lambda: "is shutting down but waits for connections this site keeps open" in site.output(), site,
             "the supervisor to make the shutdown a fast one")  # fmt: skip
    # A stop request, said as one (it was "is gone; … (crash recovery)", chaos drill round 23)
    said = f"the embedded PostgreSQL (pid {postmaster.pid}) was shut down; starting it again."
    wait_for(lambda: said in site.output(), site, "the stop")
    wait_for(lambda: is_ready(site.url), site, "/api/status ready after PostgreSQL was started again")
    assert site.postmaster().pid != postmaster.pid and site.proc.poll() is None


def gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_supervisor_killed_with_9_leaves_a_server_the_next_start_adopts_and_stops(site: Site) -> None:
    postmaster, web = site.postmaster(), site.child("uvicorn")
    os.kill(site.proc.pid, signal.SIGKILL)  # its children die with it (PR_SET_PDEATHSIG); PostgreSQL does not
    site.proc.wait(timeout=30)
    wait_until(lambda: gone(web), "the web child to die with its supervisor", output=site.output)
    assert not gone(postmaster)
    site.restart()
    assert f"adopting the embedded PostgreSQL (pid {postmaster.pid})" in site.output()
    assert site.postmaster().pid == postmaster.pid
    site.proc.send_signal(signal.SIGTERM)
    assert site.proc.wait(timeout=90) == 0
    assert gone(postmaster), "the adopted server was left running"  # pg_ctl stop -w returned before the exit


def test_sigterm_while_starting_stops_the_postgres_the_start_owns(site: Site) -> None:
    """SIGTERM (or Ctrl-C) while `yullu serve` is still starting, here waiting for the migration
    lock another process holds, stops the start and the embedded PostgreSQL it owns (found by the
    chaos drills: the process ended there and then, leaving its server running with no owner)."""
    if site.proc.poll() is not None:
        site.restart()
    postmaster = site.postmaster()
    os.kill(site.proc.pid, signal.SIGKILL)  # the server is left to the next start, which adopts and owns it
    site.proc.wait(timeout=30)
    where = "from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).socket_dir)"
    socket_dir = subprocess.run([sys.executable, "-c", where], env=site.env, cwd=REPO, capture_output=True,
                                text=True, check=True, timeout=60).stdout.strip()  # fmt: skip
    with psycopg.connect(host=socket_dir, user="postgres", dbname="yullu", autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [LockKey.MIGRATE])
        with open(site.log, "ab") as out:
            site.proc = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", "serve"], env=site.env, cwd=REPO,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

        def waiting() -> bool:
            row = holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()
            return row is not None and row[0] > 0

        wait_for(waiting, site, "the new start to wait for the migration lock")
        site.proc.send_signal(signal.SIGTERM)
        assert site.proc.wait(timeout=DEADLINE) == 0, site.output()[-3000:]
    assert f"adopting the embedded PostgreSQL (pid {postmaster.pid})" in site.output()
    wait_until(lambda: gone(postmaster), "the PostgreSQL the start owned to be stopped", output=site.output)
    run = Path(site.env["YULLU_HOME"]) / "run"
    assert not (run / "serve.pid").exists()
    metrics = f"yullu-metrics-{os.geteuid()}-{hashlib.sha256(str(run.resolve()).encode()).hexdigest()[:12]}"
    assert not (Path("/dev/shm") / metrics).exists(), "the home's metrics folder in shared memory is removed"


def test_a_postgres_that_cannot_start_again_stops_everything_with_one_line(site: Site) -> None:
    """Ends the module's site."""
    if site.proc.poll() is not None:
        site.restart()
    postmaster = site.postmaster()
    with open(site.pgdata() / "postgresql.auto.conf", "a") as conf:  # read at the next start only
        conf.write("shared_buffers = 'not a size'\n")
    before = len(site.output())
    postmaster.kill()
    assert site.proc.wait(timeout=DEADLINE) == 1, site.output()[-3000:]
    output = site.output()[before:]
    lines = [line for line in output.splitlines() if line.startswith("yullu: ")]
    assert lines[-3:] == [
        "yullu: the embedded PostgreSQL could not be started again, 4 times in a row (PostgreSQL did not start "
        + lines[-3].partition("(PostgreSQL did not start ")[2],
        "yullu: stopping…",
        "yullu: stopped (the embedded PostgreSQL too).",
    ], lines
    assert "invalid value for parameter" in lines[-3] and "shared_buffers" in lines[-3]
    assert [line.split("; trying again in ")[1] for line in lines if "; trying again in " in line] == [
        "1 s.",
        "2 s.",
        "4 s.",
    ], lines
    assert not site.pid("uvicorn") and not is_ready(site.url)


@pytest.mark.django_db(transaction=True)
def test_a_child_that_keeps_dying_at_start_stops_everything_once_with_the_reason(tmp_path: Path) -> None:
    from tests.processes import product_env

    # A typo in the broker URL: only Celery knows its transports, so the supervisor and the web
    # start and the worker and beat exit at start, every time. (A taken port is refused up front:
    # tests/test_first_hour.py.)
    env = product_env(tmp_path / "home", YULLU_PORT=str(free_port()), YULLU_EMBED_PROVIDER="none",
                      CELERY_BROKER_URL="reddis://127.0.0.1:9/0")  # fmt: skip
    ran = subprocess.run([sys.executable, "-m", "yullu_cli.main", "serve"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=240, check=False)  # fmt: skip
    output = ran.stdout + ran.stderr
    assert ran.returncode == 1, output[-3000:]
    assert output.count("4 times in a row; stopping everything") == 1, output[-3000:]
    assert "No such transport: reddis" in output
    assert re.search(r"the (worker|beat) process exited with code 1 within 20 s of starting, 4 times", output)
    assert not list((tmp_path / "home" / "run").glob("serve*.pid")), "stopped and cleaned up"


def test_with_an_external_database_the_site_waits_for_it_and_recovers(tmp_path: Path) -> None:
    """DATABASE_URL names a server the supervisor cannot restart (here an embedded one of another
    home, stopped and started by hand): the site says not ready while it is gone, keeps running,
    and serves again, beat lock held again, once it is back."""
    base = Path(tempfile.mkdtemp(prefix="yullu-external-"))
    base.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_"))}
    env.update(YULLU_ROOT_PG_BASE=str(base / "pg"), YULLU_EMBED_PROVIDER="none", YULLU_LOG_LEVEL="warning",
               YULLU_CONFIG=str(base / "config.toml"), YULLU_SCHEDULER_TICK_SECONDS="3600")  # fmt: skip
    (base / "config.toml").write_text("[dreaming]\nenabled = false\n")
    db_env = {**env, "YULLU_HOME": str(base / "db-home")}

    def server(action: str) -> str:
        code = f"from yullu_core import paths, postgres as pg; print(pg.{action}(paths.ensure_home()))"
        return subprocess.run([sys.executable, "-c", code], env=db_env, cwd=REPO, capture_output=True, text=True,
                              check=True, timeout=180).stdout.strip()  # fmt: skip

    server("ensure_running")
    socket_dir = server("plan").split("socket_dir=PosixPath('")[1].split("'")[0]
    port = free_port()
    site_env = {**env, "YULLU_HOME": str(base / "home"), "YULLU_PORT": str(port),
                "DATABASE_URL": f"postgresql://postgres@/yullu?host={socket_dir}"}  # fmt: skip
    log = base / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "yullu_cli.main", "serve"], env=site_env, cwd=REPO,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def output() -> str:
        return log.read_text(errors="replace")

    try:
        wait_until(lambda: is_ready(url), "the first start", 300, alive=proc, output=output)
        server("stop")
        wait_until(lambda: "lost the database connection holding the beat lock" in output(), "the lock loss",
                   alive=proc, output=output)  # fmt: skip
        status = httpx.get(f"{url}/api/status", timeout=10)
        assert status.status_code == 503 and status.json()["ready"] is False
        server("ensure_running")
        wait_until(lambda: is_ready(url), "ready again once the database is back", alive=proc, output=output)
        wait_until(lambda: "holding the beat lock again" in output(), "the beat lock", alive=proc, output=output)
        assert "embedded PostgreSQL" not in output()  # nothing tried to start a server it does not own
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        server("stop")
        shutil.rmtree(base, ignore_errors=True)
