"""`yullu serve`: migrate, bootstrap, then run uvicorn + a Celery worker + beat until Ctrl-C/SIGTERM.

Every child runs in its own process group so one signal stops it and its children. A child that
exits is restarted with backoff while the others keep serving; only Ctrl-C/SIGTERM, or a child
that keeps dying right after it starts, stops everything. A child that dies while the database is
unreachable is restarted once it answers, and that never counts as a crash loop.

The embedded PostgreSQL is supervised too: when its postmaster dies (kill -9, the OOM killer) it
is started again (PostgreSQL's crash recovery), and only one that cannot start again, several
times in a row, stops everything. The children reconnect by themselves; the beat lock lost with
its connection is claimed again (beat is stopped meanwhile, so two beats never run).
The embedded PostgreSQL is stopped on exit if this command started it, or adopted it from a
`yullu serve` that was killed (the owner mark in $YULLU_HOME/run, yullu_core.postgres).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yullu_core.env import env_is_set, env_str

from .django_setup import alive, fail, setup_django

if TYPE_CHECKING:
    from access.bootstrap import BootstrapResult


def _pidfile_claim(path: Path) -> None:
    """Refuse to start twice on one $YULLU_HOME; a stale pid file (dead process) is replaced."""
    if path.exists():
        try:
            pid = int(path.read_text().strip() or "0")
        except ValueError:
            pid = 0
        if pid and pid != os.getpid() and alive(pid):
            fail(f"a server is already running for this YULLU_HOME (pid {pid}); stop it first or set YULLU_HOME.")
    path.write_text(str(os.getpid()))


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    """Linux: the kernel kills the child when this supervisor dies, even by SIGKILL. Otherwise an
    orphaned beat would keep sending tasks after its lock (held here) was released to a standby,
    and an orphaned web process would keep the port."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _stop_all(supervised: list[Child]) -> None:
    children = [c.proc for c in supervised if c.proc is not None]
    # SIGTERM to each main process: Celery then shuts its pool down warmly, uvicorn drains.
    for child in children:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
    for child in children:  # anything a child left behind in its process group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)


def serve(port: int | None, workers: int = 1, role: str = "all") -> None:
    """Run one role (or all of them). Several `web`/`worker` processes may share a database and
    broker; only one `beat` runs at a time (others wait on a database lock as standbys)."""
    from yullu_core import postgres as pg
    from yullu_core.config import load as load_config
    from yullu_core.paths import ensure_home

    home = ensure_home()
    run_dir = home / "run"
    run_dir.mkdir(exist_ok=True)
    server_cfg = load_config()["server"]  # the same file and variables settings read, without Django yet
    port, host = port or server_cfg["port"], server_cfg["host"]
    pidfile = run_dir / ("serve.pid" if role == "all" else f"serve-{role}-{port}.pid")
    _pidfile_claim(pidfile)
    if role in ("all", "web") and (problem := _wait_to_listen(host, port)):
        pidfile.unlink(missing_ok=True)  # before Postgres or any child starts: nothing to stop
        fail(problem)
    embedded = not env_is_set("DATABASE_URL")
    orphan = pg.left_by_dead_owner(home, pg.plan(home)) if embedded else None
    if orphan is not None:
        _say(f"yullu: adopting the embedded PostgreSQL (pid {orphan.pid}) left by a `yullu serve` that was killed.")
    owns_pg = embedded and role == "all" and (orphan is not None or not pg.is_running(pg.plan(home)))
    metrics_dir = _metrics_dir(run_dir)  # before anything imports prometheus_client
    setup_django(migrate=False)  # web nodes migrate below, under a lock
    from django.conf import settings

    database = Database(home, pg.plan(home) if embedded else None, owns_pg, role == "all")
    database.adopt()
    result = _prepare_database() if role in ("all", "web") else None
    beat_lock = BeatLock() if role in ("all", "beat") else None
    if beat_lock is not None:
        beat_lock.wait()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "yullu_site.settings", "YULLU_HOME": str(home)}
    if workers > 1:
        env["YULLU_MCP_STATELESS"] = "1"  # a session would hit a worker that does not know it
    py = sys.executable
    commands = {
        "web": _web_cmd(py, host, port, workers, server_cfg["trusted_proxies"]),
        "worker": _worker_cmd(py, f"yullu-{port}-{os.getpid()}"),
        "beat": _beat_cmd(py, run_dir),
    }
    children = [Child(name, cmd, env) for name, cmd in commands.items() if role in ("all", name)]
    for child in children:
        child.start()
    if result is not None:
        _print_banner(host, port, result, settings.YULLU_HOME)
    else:
        print(f"Yul'lu {role} started (pid {os.getpid()}); press Ctrl-C to stop.", flush=True)
    healthy = True
    try:
        healthy = _supervise(children, beat_lock, database)
    finally:
        _say("yullu: stopping…")
        _stop_all(children)
        if beat_lock is not None:
            (run_dir / "beat.pid").unlink(missing_ok=True)
            beat_lock.close()
        if settings.DATABASE_KIND == "embedded" and database.owned:
            pg.stop(home)
        pidfile.unlink(missing_ok=True)
        shutil.rmtree(metrics_dir, ignore_errors=True)
    if not healthy:
        raise SystemExit(1)  # so `make run`, systemd and scripts see that it did not stop by request


PORT_PATIENCE_S = 10.0  # how long a port still held by a server that is stopping may take to free


def _wait_to_listen(host: str, port: int) -> str | None:
    """`_cannot_listen`, waiting a little while the port is in use: a supervisor killed with -9
    takes its web child with it, but the child may still hold the port for a moment while it
    exits (seen under load: the next `yullu serve` refused a port that was free a second later)."""
    deadline = time.monotonic() + PORT_PATIENCE_S
    while (problem := _cannot_listen(host, port)) and "already in use" in problem and time.monotonic() < deadline:
        time.sleep(0.25)
    return problem


def _cannot_listen(host: str, port: int) -> str | None:
    """One sentence saying why the web process could not listen on host:port and what to change,
    or None. Found out by binding it once, as uvicorn will (SO_REUSEADDR, so connections left by a
    server that just stopped do not count); otherwise it only shows as the web child's crash loop."""
    from yullu_core.config import config_path

    change = f"`yullu serve --port N`, YULLU_PORT=N or [server].port in {config_path()}"
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        socket.create_server(address, family=family).close()
    except socket.gaierror as exc:
        return f"cannot listen on {host}: it does not resolve ({exc.strerror}); fix [server].host in {config_path()}."
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} on {host} is already in use; stop what uses it, or pick another port with {change}."
        return f"cannot listen on port {port} on {host} ({exc.strerror}); pick another port with {change}."
    return None


def _metrics_dir(run_dir: Path) -> Path:
    """A fresh folder for this supervisor's processes' metrics (prometheus_client multiprocess mode);
    folders left by supervisors that died without cleaning up are removed."""
    base = run_dir / "metrics"
    base.mkdir(exist_ok=True)
    for old in base.iterdir():
        if not (old.name.isdigit() and alive(int(old.name))):
            shutil.rmtree(old, ignore_errors=True)
    folder = base / str(os.getpid())
    folder.mkdir(exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    return folder


def _prepare_database() -> BootstrapResult:
    """Migrate and bootstrap under the migration lock: web processes starting together take turns
    (two creating the admin account at once would collide)."""
    from access.bootstrap import bootstrap
    from yullu_core.database import migrate_if_needed, migration_lock

    with migration_lock():
        migrate_if_needed()
        return bootstrap()


def _connect(timeout: int = 5) -> Any:
    """A connection of the supervisor's own to Django's database (autocommit)."""
    import psycopg
    from django.db import connection

    return psycopg.connect(**connection.get_connection_params(), autocommit=True, connect_timeout=timeout)


def _reachable() -> bool:
    try:
        _connect(timeout=3).close()
    except Exception:
        return False
    return True


class BeatLock:
    """The beat lock, held on the supervisor's own connection for as long as beat runs: a second
    beat (another node, a restarted supervisor) waits as a standby instead of sending every task
    twice. Lost with its connection (PostgreSQL restarted, a backend killed), it is claimed again."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.held = False
        self.standby_said = False

    def claim(self) -> bool:
        from yullu_core.locks import LockKey

        try:
            if self.conn is None:
                self.conn = _connect()
            row = self.conn.execute("SELECT pg_try_advisory_lock(%s)", [LockKey.BEAT]).fetchone()
        except Exception:  # the database is down: try again on the next round
            self.close()
            return False
        if row and row[0]:
            self.held, self.standby_said = True, False
            return True
        if not self.standby_said:
            _say("yullu: another beat is running; waiting as a standby.")
            self.standby_said = True
        return False

    def wait(self) -> None:
        while not self.claim():
            time.sleep(2)

    def still_held(self) -> bool:
        try:
            self.conn.execute("SELECT 1")
        except Exception:
            self.close()
            return False
        return True

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn, self.held = None, False


@dataclass
class Database:
    """The database as the supervisor keeps it: the embedded server (cluster None with
    DATABASE_URL), started again whenever its postmaster dies."""

    home: Path
    cluster: Any  # yullu_core.postgres.Cluster, or None for an external server
    owned: bool  # stopped when this supervisor exits
    owner_role: bool  # a server this supervisor starts is its own (role "all")
    server: Any = None  # the postmaster last seen running (yullu_core.postgres.Postmaster)
    down_since: float | None = None
    failures: int = 0  # failed starts in a row
    retry_at: float = 0.0

    def adopt(self) -> None:
        """Take note of the running postmaster (and mark it ours when this supervisor owns it)."""
        from yullu_core import postgres as pg

        if self.cluster is None:
            return
        self.server = pg.postmaster(self.cluster)
        if self.server is not None and self.owned:
            pg.mark_owner(self.home, self.server, os.getpid())

    def watch(self, now: float) -> None:
        """Start the embedded server again if its postmaster is gone. Raises CrashLoop when it
        could not start MAX_QUICK_FAILURES times in a row."""
        from yullu_core import postgres as pg

        if self.cluster is None:
            return
        running = pg.postmaster(self.cluster)
        if running is not None:
            if running != self.server:  # started again meanwhile by a child's ensure_running()
                self.adopt()
            return
        if self.down_since is None:
            self.down_since = now
            gone = f" (pid {self.server.pid})" if self.server else ""
            _say(f"yullu: the embedded PostgreSQL{gone} is gone; starting it again (crash recovery).", "WARNING")
            _count_restart("postgres")
        if now < self.retry_at:
            return
        try:
            pg.ensure_running(self.home)
        except Exception as exc:
            self.failures += 1
            reason = " ".join(str(exc).split())[:600]
            if self.failures >= MAX_QUICK_FAILURES:
                raise CrashLoop(
                    f"yullu: the embedded PostgreSQL could not be started again, {self.failures} times in a row "
                    f"({reason}); stopping everything."
                ) from exc
            delay = min(MAX_BACKOFF, 2.0 ** (self.failures - 1))
            self.retry_at = time.monotonic() + delay
            _say(f"yullu: PostgreSQL did not start ({reason}); trying again in {delay:.0f} s.", "WARNING")
            return
        self.owned = self.owned or self.owner_role
        self.adopt()
        _say(f"yullu: the embedded PostgreSQL is back (pid {self.server.pid if self.server else '?'}) "
             f"{time.monotonic() - self.down_since:.1f} s after it went.")  # fmt: skip
        self.down_since, self.failures = None, 0

    def reachable(self) -> bool:
        from yullu_core import postgres as pg

        if self.cluster is not None and pg.postmaster(self.cluster) is None:
            return False
        return _reachable()


@dataclass
class Child:
    """One supervised process: how to start it and how it has behaved so far."""

    name: str
    cmd: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    quick_failures: int = 0  # exits in a row within START_GRACE of starting
    db_waits: int = 0  # exits in a row while the database was unreachable
    restart_at: float | None = None
    paused: bool = False  # stopped on purpose (beat without its lock): not restarted

    def start(self) -> None:
        self.proc = _spawn(self.cmd, self.env)
        self.started_at = time.monotonic()
        self.restart_at = None

    def pause(self) -> None:
        """Stop the process now and keep it stopped until start()."""
        self.paused, self.restart_at = True, None
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=2)  # beat has nothing to finish; it may hang on a database that is down
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


# A child that exits within START_GRACE seconds of starting, MAX_QUICK_FAILURES times in a row, is
# broken (bad config, port taken, missing dependency): restarting it forever would only hide that.
START_GRACE = 20.0
MAX_QUICK_FAILURES = 4
MAX_BACKOFF = 30.0


class CrashLoop(Exception):
    """A child keeps exiting right after it starts."""


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _on_exit(child: Child, now: float, database: Database) -> None:
    """Schedule a restart with backoff, or raise CrashLoop. Logs one line either way. An exit
    while the database is unreachable is no sign of a broken child: it never counts towards
    CrashLoop, and the restart waits (backoff) for the database."""
    assert child.proc is not None
    code = child.proc.returncode
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.proc.pid, signal.SIGKILL)  # pool processes the dead parent left behind
    quick = now - child.started_at < START_GRACE
    excused = quick and not database.reachable()
    if excused:
        child.db_waits += 1
        delay = min(MAX_BACKOFF, 2.0 ** min(child.db_waits, 5))
        why = "the database is unreachable; "
    else:
        child.db_waits = 0
        child.quick_failures = child.quick_failures + 1 if quick else 0
        if child.quick_failures >= MAX_QUICK_FAILURES:
            raise CrashLoop(
                f"yullu: the {child.name} process {_describe_exit(code)} within {START_GRACE:.0f} s of starting, "
                f"{child.quick_failures} times in a row; stopping everything (its output above says why)."
            )
        delay = min(MAX_BACKOFF, 2.0 ** max(0, child.quick_failures - 1)) if quick else 1.0
        why = ""
    child.restarts += 1
    child.restart_at = now + delay
    _say(
        f"yullu: the {child.name} process (pid {child.proc.pid}) {_describe_exit(code)}; "
        f"{why}restarting it in {delay:.0f} s (restart {child.restarts}).",
        "WARNING",
    )
    _count_restart(child.name)


def _count_restart(name: str) -> None:
    with contextlib.suppress(Exception):  # metrics are never a reason to stop supervising
        from yullu_core.metrics import CHILD_RESTARTS

        CHILD_RESTARTS.labels(child=name).inc()


LOCK_CHECK_EVERY = 2.0  # seconds: how long a beat may run after the lock's connection was lost


def _supervise(children: list[Child], beat_lock: BeatLock | None, database: Database) -> bool:
    """Keep every child (and the embedded PostgreSQL) running until Ctrl-C/SIGTERM (then True). A
    child that exits is restarted (the others keep serving); one that keeps dying right at start,
    or a PostgreSQL that cannot start again, stops everything with one line saying why (then False)."""
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    checked = time.monotonic()
    beat = next((c for c in children if c.name == "beat"), None)
    while not stopping:
        now = time.monotonic()
        try:
            database.watch(now)
            for child in children:
                if child.paused:
                    continue
                if child.restart_at is not None:
                    if now >= child.restart_at:
                        child.start()
                elif child.proc is not None and child.proc.poll() is not None:
                    _on_exit(child, now, database)
        except CrashLoop as exc:
            _say(str(exc), "ERROR")
            return False
        if beat_lock is not None and now - checked > LOCK_CHECK_EVERY:
            checked = now
            _keep_beat_lock(beat_lock, beat)
        time.sleep(0.5)
    return True


def _keep_beat_lock(lock: BeatLock, beat: Child | None) -> None:
    """Beat runs only while this supervisor holds the beat lock. A lost lock (its connection went
    with a PostgreSQL restart or a killed backend) stops beat until the lock is claimed again, so a
    standby that took it meanwhile is never joined by a second beat."""
    if lock.held:
        if lock.still_held():
            return
        _say("yullu: lost the database connection holding the beat lock; beat waits until it holds the lock again.",
             "WARNING")  # fmt: skip
        if beat is not None:
            beat.pause()
    if lock.claim() and beat is not None and beat.paused:
        _say("yullu: holding the beat lock again; starting beat.")
        beat.paused = False
        beat.start()


def _say(message: str, level: str = "INFO") -> None:
    """The supervisor's own lines on stderr: plain, or one JSON object with YULLU_LOG_FORMAT=json."""
    if env_str("YULLU_LOG_FORMAT").lower() == "json":
        import logging

        from yullu_site.monitoring.logjson import JsonFormatter

        record = logging.LogRecord("yullu.serve", getattr(logging, level), "", 0, message, None, None)
        message = JsonFormatter().format(record)
    print(message, file=sys.stderr, flush=True)


def _web_cmd(py: str, host: str, port: int, workers: int, trusted_proxies: list[str]) -> list[str]:
    from access.ratelimit import uvicorn_proxy_args

    cmd = [py, "-m", "uvicorn", "yullu_site.asgi:application", "--host", host, "--port", str(port),
           "--workers", str(workers), "--no-access-log", "--lifespan", "on",
           *uvicorn_proxy_args(trusted_proxies)]  # fmt: skip
    if env_str("YULLU_LOG_FORMAT").lower() == "json":
        cmd += ["--log-config", str(Path(__file__).with_name("uvicorn_log_json.json"))]
    return cmd


def _worker_cmd(py: str, name: str) -> list[str]:
    return [py, "-m", "celery", "-A", "yullu_site", "worker", "--loglevel", _celery_level(),
            "--concurrency", "2", "-n", f"{name}@%h"]  # fmt: skip


def _beat_cmd(py: str, run_dir: Path) -> list[str]:
    return [py, "-m", "celery", "-A", "yullu_site", "beat", "--loglevel", _celery_level(),
            "--pidfile", str(run_dir / "beat.pid")]  # fmt: skip


def _celery_level() -> str:
    return env_str("YULLU_CELERY_LOGLEVEL").upper()


def _reasoner_line() -> str:
    """The banner's part of the health model (yullu_site/monitoring/health.py): which reasoner background
    dreaming uses (detected once at start), or a visible warning."""
    from yullu_site.monitoring.health import BANNER, gather

    (reasoner,) = gather(BANNER).parts
    return f"  dreaming:   {reasoner.detail}" if reasoner.ok else f"  WARNING:    {' '.join(reasoner.problems)}"


def path_hint(bin_dir: Path, path: str) -> str | None:
    """How to put `yullu` on PATH, when the one beside this Python is not what the shell finds."""
    found = shutil.which("yullu", path=path)
    if not (bin_dir / "yullu").exists() or (found and Path(found).resolve() == (bin_dir / "yullu").resolve()):
        return None
    return f'  CLI:        `yullu` is not on your PATH; add it with:  export PATH="{bin_dir}:$PATH"'


def _stale_hook_lines() -> list[str]:
    """A banner warning per file that installed hooks run and that is gone (they fail silently)."""
    from .install import stale_hooks

    try:
        stale = stale_hooks(Path.home())
    except Exception:  # a hand-mangled settings file must not keep the server from starting
        return []
    return [
        f"  WARNING:    {', '.join(hooks)} run {gone}, which no longer exists: run `yullu install` again"
        for gone, hooks in stale.items()
    ]


def admin_password_hint(pw_file: Path) -> str:
    """Where the admin password is. The file is missing when the admin was created with another
    $YULLU_HOME (a shared DATABASE_URL, or as root a cluster kept under /var/lib/yullu for a home
    that was deleted and made again): say how to set one instead of naming a file that is not there."""
    if pw_file.exists():
        return f"password in {pw_file}"
    manage = Path(__file__).resolve().parent.parent / "manage.py"
    return f"password set elsewhere; set a new one with `{sys.executable} {manage} changepassword admin`"


def _print_banner(host: str, port: int, result: BootstrapResult, data_dir: Path) -> None:
    base = f"http://{host}:{port}"
    pw_file = result.admin_password_file
    lines = [
        "",
        f"Yul'lu is starting on {base}",
        f"  admin:      {base}/admin/  (user 'admin', {admin_password_hint(pw_file)})",
        f"  MCP:        {base}/mcp",
        f"  API token:  {result.token_file}  (or run `yullu token`)",
        f"  status:     {base}/api/status",
        f"  data:       {data_dir}",
    ]
    if result.admin_created:
        lines.append(f"  first run:  admin password is {pw_file.read_text().strip()}")
    lines.append(_reasoner_line())
    lines += _stale_hook_lines()
    if hint := path_hint(Path(sys.executable).parent, env_str("PATH")):
        lines.append(hint)
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), flush=True)
