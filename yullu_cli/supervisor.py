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

Here: starting and stopping. What is kept running and how (children, the database, the beat lock,
the supervision loop): yullu_cli/supervised.py; the start-up banner: yullu_cli/banner.py.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

from yullu_core.env import env_is_set, env_str
from yullu_core.pids import pid_exists

from .banner import print_banner
from .django_setup import fail, not_on_a_team_servers_client, serving, setup_django
from .output import guard_output
from .ports import wait_to_listen
from .supervised import BeatLock, Child, Database, remember_the_stop, room_in, say, stop_all, supervise

if TYPE_CHECKING:
    from access.bootstrap import BootstrapResult


_claimed: list[IO[str]] = []  # the open pid file whose lock says this process serves the home


def _pidfile_claim(path: Path) -> None:
    """Refuse to start twice on one $YULLU_HOME. The pid file stays locked (flock) for this
    process's life, so two starts at the same moment cannot both claim it (reading then writing
    it could) and a dead server's lock is gone with it (its stale file is taken over). A live `yullu
    serve` named in the file also refuses: a server of a version that did not lock it (any other
    program there holds a pid reused since a reboot)."""
    fh = _lock_the_file_at(path)
    fh.seek(0)
    try:
        pid = int(fh.read().strip() or "0")
    except ValueError:
        pid = 0
    if pid and pid != os.getpid() and serving(pid):  # a server of a version that did not lock it
        fh.close()
        fail(f"a server is already running for this YULLU_HOME (pid {pid}); stop it first or set YULLU_HOME.")
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    _claimed.append(fh)
    with contextlib.suppress(OSError):  # a stopping mark left by a server killed while it stopped
        _stopping_mark(path).unlink(missing_ok=True)


def _lock_the_file_at(path: Path) -> IO[str]:
    """`path` opened and locked, or `fail`. A stopping server unlinks its pid file while it still holds
    the lock: a start that opened the file just before got the lock of that unlinked file once the
    server exited, and a third start then created and locked a new one (two servers, and no pid file
    naming the first). So the lock counts only while `path` is still the file locked; else, again."""
    deadline: float | None = None
    while True:
        fh = open(path, "a+")  # noqa: SIM115 - kept open (and locked) until the process exits
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            held_by = fh.read().strip() or "?"
            fh.close()
            deadline = _wait_for_a_stop(path, held_by, deadline)
            continue
        if _same_file(fh, path):
            return fh
        fh.close()  # unlinked by the server that held it, which has stopped since: try the file there now


STOP_WAIT = 120.0  # seconds a start waits for a server of the same home that is stopping


def _stopping_mark(pidfile: Path) -> Path:
    return pidfile.with_suffix(".stopping")


def _stopping(pidfile: Path, held_by: str) -> bool:
    """Whether the server holding `pidfile` said it is stopping (a mark left by a killed one names another pid)."""
    try:
        return _stopping_mark(pidfile).read_text().strip() == held_by
    except OSError:
        return False


def _wait_for_a_stop(path: Path, held_by: str, deadline: float | None) -> float:
    """The pid file is locked: a server that is stopping is waited for (saying so once); any other refuses.
    Walk 19: `yullu serve` run again right after Ctrl-C said "already running" for the ~13 s the old one took
    to stop its worker and PostgreSQL, and the user had to guess when to try again."""
    if not _stopping(path, held_by):
        fail(f"a server is already running for this YULLU_HOME (pid {held_by}); stop it first or set YULLU_HOME.")
    now = time.monotonic()
    if deadline is None:
        say(f"yullu: the server for this YULLU_HOME (pid {held_by}) is stopping; starting once it has stopped.")
        deadline = now + STOP_WAIT
    elif now >= deadline:
        fail(f"the server for this YULLU_HOME (pid {held_by}) is still stopping after {STOP_WAIT:.0f} s; "
             "stop it first (or end it: `kill` that pid) or set YULLU_HOME.")  # fmt: skip
    time.sleep(0.5)
    return deadline


def _same_file(fh: IO[str], path: Path) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fh.fileno())
    return (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino)


def serve(port: int | None, workers: int = 1, role: str = "all") -> None:
    """Run one role (or all of them). Several `web`/`worker` processes may share a database and
    broker; only one `beat` runs at a time (others wait on a database lock as standbys)."""
    from yullu_core import postgres as pg
    from yullu_core.config import load as load_config
    from yullu_core.paths import ensure_home

    guard_output()  # a reader of its output that goes away must not end the site
    server_cfg = load_config()["server"]  # the same file and variables settings read, without Django yet
    not_on_a_team_servers_client()  # before PostgreSQL starts or is created in a home that keeps no memories
    port, host = port or server_cfg["port"], server_cfg["host"]
    try:
        home = ensure_home()
        run_dir = home / "run"
        run_dir.mkdir(exist_ok=True)
        pidfile = run_dir / ("serve.pid" if role == "all" else f"serve-{role}-{port}.pid")
        _pidfile_claim(pidfile)
        remember_the_stop(run_dir, None, role, port)  # a line from a run before this one is no longer the news
    except OSError as exc:  # EACCES / EPERM: another user's folder, or chmod'ed read-only; EROFS: a read-only mount
        if not isinstance(exc, PermissionError) and exc.errno != errno.EROFS:
            raise
        fail(_home_not_writable(exc))
    if role in ("all", "web") and (problem := wait_to_listen(host, port)):
        pidfile.unlink(missing_ok=True)  # before Postgres or any child starts: nothing to stop
        fail(problem)
    embedded = not env_is_set("DATABASE_URL")
    orphan = pg.left_by_dead_owner(home, pg.plan(home)) if embedded else None
    if orphan is not None:
        say(f"yullu: adopting the embedded PostgreSQL (pid {orphan.pid}) left by a `yullu serve` that was killed.")
    owns_pg = embedded and role == "all" and (orphan is not None or not pg.is_running(pg.plan(home)))
    metrics_dir = _metrics_dir(run_dir)  # before anything imports prometheus_client
    routes = _route_dir() if workers > 1 and role in ("all", "web") else None
    children: list[Child] = []
    beat_lock: BeatLock | None = None
    database: Database | None = None
    ended: str | None = None  # the line a crash loop stopped everything with
    # Ctrl-C or SIGTERM while starting (a first migration, waiting for the beat lock) stops the start
    # and still runs the clean-up below: before, it ended the process there and then, leaving the
    # embedded PostgreSQL it had started running with no owner.
    signal.signal(signal.SIGINT, _stop_the_start)
    signal.signal(signal.SIGTERM, _stop_the_start)
    try:
        try:
            setup_django(migrate=False)  # web nodes migrate below, under a lock
            from django.conf import settings

            database = Database(home, pg.plan(home) if embedded else None, owns_pg, role == "all")
            # Whichever role starts a new, empty cluster again migrates it: a worker or beat supervisor on the
            # machine's embedded server restarts it too, and left it unmigrated (only the web role prepared it).
            database.prepare = _prepare_new_database
            database.adopt()
            prepared = _prepare_database() if role in ("all", "web") else None
            beat_lock = BeatLock() if role in ("all", "beat") else None
            if beat_lock is not None:
                beat_lock.wait()
            children = _start_children(role, home, host, port, workers, server_cfg["trusted_proxies"], routes)
            if prepared is not None:
                print_banner(host, port, *prepared, settings.YULLU_HOME, database.cluster)
            else:
                print(f"Yul'lu {role} started (pid {os.getpid()}); press Ctrl-C to stop.", flush=True)
            ended = supervise(children, beat_lock, database)  # from here on its own handlers stop it
        except StopStarting:
            pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the clean-up runs to its end
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        say("yullu: stopping…")
        _mark_stopping(pidfile)
        stop_all(children)
        if beat_lock is not None:
            _forget(run_dir / "beat.pid")
            beat_lock.close()
        stops_pg = embedded and (database.owned if database is not None else owns_pg)
        if stops_pg:
            pg.stop(home, database.cluster if database is not None else None)
        remember_the_stop(run_dir, ended, role, port)
        _forget(pidfile)
        _forget(_stopping_mark(pidfile))
        shutil.rmtree(metrics_dir, ignore_errors=True)
        if routes is not None:
            shutil.rmtree(routes, ignore_errors=True)
        with contextlib.suppress(OSError):  # the home's folder in /dev/shm too, unless another server uses it
            metrics_dir.parent.rmdir()
        # After "stopping…" the worker's warm shutdown and PostgreSQL's took ~9 s in silence, and nothing said
        # when it was over (walk 9).
        say(f"yullu: stopped{' (the embedded PostgreSQL too)' if stops_pg else ''}.")
    if ended:
        raise SystemExit(1)  # so `make run`, systemd and scripts see that it did not stop by request


def _home_not_writable(exc: OSError) -> str:
    """The data folder, not the pid file inside it, is the problem to name (walk 8: the one line named
    `run/serve.pid`, and a user could not tell that the whole folder was read-only)."""
    from yullu_core.paths import yullu_home

    why = "is on a read-only file system" if exc.errno == errno.EROFS else "is not writable by this user"
    return (
        f"the data folder {yullu_home()} {why}, and `yullu serve` writes there (its pid file, the database, logs): "
        "make it writable (remount it read-write, or fix its owner and mode), or set YULLU_HOME to a writable folder."
    )


def _mark_stopping(pidfile: Path) -> None:
    """Say, beside the pid file this process holds, that it is stopping: a start meanwhile waits, not refuses."""
    if not _claimed:
        return
    with contextlib.suppress(OSError):
        _stopping_mark(pidfile).write_text(str(os.getpid()))


def _forget(path: Path) -> None:
    """Remove a pid file on the way out. A home that turned read-only (a disk remounted after errors)
    must not end the clean-up there: it left the embedded PostgreSQL running with no owner (walk 8)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        say(f"yullu: could not remove {path} ({exc.strerror}); the next start replaces it.")


class StopStarting(BaseException):  # noqa: N818 - a request, like KeyboardInterrupt, not an error
    """Ctrl-C or SIGTERM arrived while `yullu serve` was still starting."""


def _stop_the_start(signum: int, frame: object) -> None:
    raise StopStarting


def _start_children(
    role: str, home: Path, host: str, port: int, workers: int, proxies: list[str], routes: Path | None = None
) -> list[Child]:
    """Start the children `role` runs (web, worker, beat, or all three); `routes`: the web workers' sockets' folder."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "yullu_site.settings", "YULLU_HOME": str(home)}
    # Their output is written as it comes: beat prints its banner, and with stdout a file or a pipe
    # (journald, `> serve.log`) it sat in the buffer until shutdown (walk 11).
    env["PYTHONUNBUFFERED"] = "1"
    if routes is not None:
        env["YULLU_MCP_ROUTE_DIR"] = str(routes)  # a session reaching a worker that did not open it is handed on
    py = sys.executable
    commands = {
        "web": _web_cmd(py, host, port, workers, proxies),
        "worker": _worker_cmd(py, f"yullu-{port}-{os.getpid()}"),
        "beat": _beat_cmd(py, home / "run"),
    }
    children = [
        Child(
            name,
            cmd,
            env,
            listens_on=(host, port) if name == "web" else None,
            pidfile=home / "run" / "beat.pid" if name == "beat" else None,
        )  # fmt: skip
        for name, cmd in commands.items()
        if role in ("all", name)
    ]
    for child in children:
        child.start()
    return children


def _metrics_dir(run_dir: Path) -> Path:
    """A fresh folder for this supervisor's processes' metrics (prometheus_client multiprocess mode);
    folders left by supervisors that died without cleaning up are removed."""
    base = _metrics_base(run_dir)
    for old in base.iterdir():
        if not (old.name.isdigit() and pid_exists(int(old.name))):
            shutil.rmtree(old, ignore_errors=True)
    folder = base / str(os.getpid())
    folder.mkdir(parents=True, exist_ok=True)  # (a server stopping on this home may have just removed base)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    return folder


ROUTES_PREFIX = "yullu-mcp-"


def _route_dir() -> Path:
    """A private folder (0700) for the web workers' unix sockets (yullu_site.mcp.routing), short enough for a
    socket's path (108 bytes) whatever $YULLU_HOME is; removed when this supervisor stops. Its name holds this
    supervisor's pid, so that a start removes the folders of supervisors that were killed: each `kill -9` of
    `yullu serve` left one in /tmp for good (chaos round 26)."""
    base = Path(tempfile.gettempdir())
    for old in base.glob(f"{ROUTES_PREFIX}*-*"):
        pid = old.name.removeprefix(ROUTES_PREFIX).split("-", 1)[0]
        with contextlib.suppress(OSError):
            mine = old.lstat().st_uid == os.geteuid() and stat.S_ISDIR(old.lstat().st_mode)
            if mine and pid.isdigit() and not pid_exists(int(pid)):
                shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{ROUTES_PREFIX}{os.getpid()}-"))


SHARED_MEMORY = Path("/dev/shm")


def _metrics_base(run_dir: Path) -> Path:
    """Where the metrics folders live: in shared memory, off the data's disk. prometheus_client maps
    its files into memory, and a process writing a new page of a mapped file on a full file system
    gets SIGBUS: with $YULLU_HOME's disk full, the supervisor died at its first restart count (the
    embedded PostgreSQL gone), silently and with every child. Under $YULLU_HOME/run when there is
    no /dev/shm, the folder there is not this user's own, or /dev/shm is full."""
    if SHARED_MEMORY.is_dir():
        digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
        base = SHARED_MEMORY / f"yullu-metrics-{os.geteuid()}-{digest}"
        with contextlib.suppress(FileExistsError, OSError):
            base.mkdir(mode=0o700)
        with contextlib.suppress(OSError):
            info = base.lstat()  # not a link or a folder another user made there first
            roomy = room_in(base)  # a full /dev/shm is the same SIGBUS (round 23)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077 == 0 and roomy:
                return base
    base = run_dir / "metrics"
    base.mkdir(exist_ok=True)
    return base


def _prepare_database() -> tuple[BootstrapResult, list[str]]:
    """Migrate and bootstrap under the migration lock: web processes starting together take turns
    (two creating the admin account at once would collide). Returns the migrations applied too."""
    from access.bootstrap import bootstrap
    from yullu_core.database import migrate_if_needed, migration_lock

    with migration_lock():
        migrated = migrate_if_needed()
        return bootstrap(), migrated


def _prepare_new_database() -> str | None:
    """A cluster the supervisor made again (its data folder deleted) migrated and bootstrapped, as at start;
    the line saying so (its admin password and token are new), or None when another supervisor of this home
    did it first: three (`--role web|worker|beat`) each said it, two with "0 migrations" (round 22)."""
    result, migrated = _prepare_database()
    if not (migrated or result.token_created or result.admin_created):
        return None
    return (
        f"yullu: the embedded PostgreSQL's data folder was made anew (empty): brought the new database up to "
        f"date ({len(migrated)} migrations); its admin password is in {result.admin_password_file} and its "
        f"API token in {result.token_file}, both new."
    )


def _web_cmd(py: str, host: str, port: int, workers: int, trusted_proxies: list[str]) -> list[str]:
    from access.ratelimit import uvicorn_proxy_args

    cmd = [py, "-m", "uvicorn", "yullu_site.asgi:application", "--host", host, "--port", str(port),
           "--workers", str(workers), "--no-access-log", "--lifespan", "on",
           *uvicorn_proxy_args(trusted_proxies)]  # fmt: skip
    if env_str("YULLU_LOG_FORMAT").lower() == "json":
        cmd += ["--log-config", str(Path(__file__).with_name("uvicorn_log_json.json"))]
    return cmd


def _worker_cmd(py: str, name: str) -> list[str]:
    return [py, "-m", "celery", "-A", "yullu_site", *_celery_quiet(), "worker", "--loglevel", _celery_level(),
            "--concurrency", "2", "-n", f"{name}@%h"]  # fmt: skip


def _beat_cmd(py: str, run_dir: Path) -> list[str]:
    return [py, "-m", "celery", "-A", "yullu_site", *_celery_quiet(), "beat", "--loglevel", _celery_level(),
            "--pidfile", str(run_dir / "beat.pid")]  # fmt: skip


def _celery_level() -> str:
    return env_str("YULLU_CELERY_LOGLEVEL").upper()


def _celery_quiet() -> list[str]:
    """`--quiet` (Celery's own switch: no banner) unless the Celery log level asks for detail: the worker's
    ASCII art and config dump and beat's filled `make run`'s screen between the product's lines. Only the
    banners go: warnings and errors are logged at the level above as before."""
    return [] if _celery_level() in ("DEBUG", "INFO") else ["--quiet"]
