"""What `yullu serve` keeps running: its children (web, worker, beat) restarted with backoff, the
embedded PostgreSQL started again when its postmaster dies, and the beat lock held on the
supervisor's own connection. `yullu_cli.supervisor` starts them and stops them."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yullu_core.env import env_str

from .last_words import LastWords
from .ports import taken_since


def _spawn(cmd: list[str], env: dict[str, str], stderr: int | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, env=env, stderr=stderr, start_new_session=True, preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    """Linux: the kernel kills the child when this supervisor dies, even by SIGKILL. Otherwise an
    orphaned beat would keep sending tasks after its lock (held here) was released to a standby,
    and an orphaned web process would keep the port."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def stop_all(supervised: list[Child]) -> None:
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
    for c in supervised:  # the web process's last lines, read through this process, are passed on before it exits
        if c.last_words is not None:
            c.last_words.finish()


def _connect(timeout: int = 5) -> Any:
    """A connection of the supervisor's own to Django's database (autocommit)."""
    import psycopg
    from django.db import connection

    # Its own bound wins over the settings' connect_timeout (a keyword given twice is a TypeError).
    return psycopg.connect(**{**connection.get_connection_params(), "connect_timeout": timeout}, autocommit=True)


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
            say("yullu: another beat is running; waiting as a standby.")
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
    killed_starts: int = 0  # starts in a row whose server was killed before it was ready (backoff only)
    retry_at: float = 0.0
    stopping_since: float | None = None  # when the running server was first seen shutting down
    disk_full: bool = False  # its last start failed for want of space (said once; not a crash loop)
    emptying: bool = False  # its data folder is being deleted: the new cluster waits for it (said once)
    unseen: int = 0  # starts in a row that succeeded without a postmaster in the watched folder
    # After a start that made a new, empty cluster (its data folder was deleted): migrate and bootstrap it as
    # `yullu serve`'s start does, returning the line to say, or None when another supervisor of the home did it
    # (every role sets it; prepare None: nothing to prepare).
    prepare: Callable[[], str | None] | None = None
    unprepared: bool = False  # a new cluster not yet brought up to date (tried again every PREPARE_RETRY s)
    prepare_failures: int = 0  # tries in a row that failed with the database up and space left
    prepared_at: float = 0.0  # when a new cluster was last brought up to date (monotonic)
    back_at: float = 0.0  # when the embedded server was last started again after it went (monotonic)

    def adopt(self) -> None:
        """Take note of the running postmaster (and mark it ours when this supervisor owns it)."""
        from yullu_core import postgres as pg

        if self.cluster is None:
            return
        self.server = pg.postmaster(self.cluster)
        if self.server is not None and self.owned:
            try:
                pg.mark_owner(self.home, self.server, os.getpid())
            except OSError as exc:
                # $YULLU_HOME turned read-only while serving (a disk remounted after errors): the mark's write
                # raised out of the supervisor at the postmaster's restart, and the site ended (round 23).
                say(f"yullu: could not write {exc.filename or self.home / 'run'} ({exc.strerror}); the embedded "
                    "PostgreSQL serves on, but should this `yullu serve` be killed, the next start will not "
                    "know it was its own (stop it then with `pg_ctl stop`).", "WARNING")  # fmt: skip

    def watch(self, now: float, on_gone: Callable[[], None] = lambda: None) -> None:
        """Start the embedded server again if its postmaster is gone (`on_gone` runs first, once per
        outage: starting it blocks for seconds). Raises CrashLoop when it could not start
        MAX_QUICK_FAILURES times in a row."""
        from yullu_core import postgres as pg

        if self.cluster is None:
            return
        running = pg.postmaster(self.cluster)
        if running is not None:
            if running != self.server:  # started again meanwhile by a child's ensure_running()
                self.adopt()
            self._hurry_a_stop(now, running)
            if self.unprepared and now >= self.retry_at:
                self._prepare()
            return
        if self.down_since is None:
            self.down_since = now
            gone = f" (pid {self.server.pid})" if self.server else ""
            # A stop request (pg_ctl stop -m smart/fast, SIGTERM) was said as "crash recovery" (round 22).
            how = "was shut down" if pg.shut_down_cleanly(self.cluster) else "is gone"
            recovery = "" if how == "was shut down" else " (crash recovery)"
            say(f"yullu: the embedded PostgreSQL{gone} {how}; starting it again{recovery}.", "WARNING")
            _count_restart("postgres")
            on_gone()
        if now < self.retry_at:
            return
        if not pg.initialised(self.cluster):  # its data folder deleted: the start below runs initdb
            if self.server is not None and pg.end_orphan(self.cluster, self.server):
                say(f"yullu: ended the embedded PostgreSQL (pid {self.server.pid}) whose data folder was deleted "
                    "under it; it would have removed the new server's socket when it noticed.", "WARNING")  # fmt: skip
            self.unprepared = self.prepare is not None  # kept should this start fail after initdb
            if pg.being_emptied(self.cluster):
                self._wait_until_empty()
                return
        try:
            # The cluster this supervisor watches, not plan(home)'s: that follows the home's mode, and a
            # home recreated 0755 (its cluster had been under /var/lib/yullu) got a fresh server in the
            # home while this watched the old folder: "gone … back (pid ?)" twice a second (walk 11).
            pg.ensure_running(self.home, self.cluster)
        except Exception as exc:
            reason = " ".join(str(exc).split())[:600]
            if isinstance(exc, pg.NoSpaceToStart):
                self._wait_for_space(exc.reason[:600])
                return
            if pg.failed_for_space(self.cluster.pgdata, reason):
                self._wait_for_space(reason)
                return
            killed = isinstance(exc, pg.StartKilled)  # not a reason it cannot start: retried, never counted
            self.killed_starts += killed
            self.failures += not killed
            if self.failures >= MAX_QUICK_FAILURES:
                raise CrashLoop(
                    f"yullu: the embedded PostgreSQL could not be started again, {self.failures} times in a row "
                    f"({reason}); stopping everything."
                ) from exc
            delay = min(MAX_BACKOFF, 2.0 ** (self.failures + self.killed_starts - 1))
            self.retry_at = time.monotonic() + delay
            said = reason if reason.startswith("PostgreSQL did not start") else f"PostgreSQL did not start ({reason})"
            say(f"yullu: {said}; trying again in {delay:.0f} s.", "WARNING")
            return
        self.owned = self.owned or self.owner_role
        self.adopt()
        if self.server is None:  # started, yet not where this supervisor looks: never a loop without pause
            self._not_seen()
            return
        say(f"yullu: the embedded PostgreSQL is back (pid {self.server.pid}) "
             f"{time.monotonic() - self.down_since:.1f} s after it went.")  # fmt: skip
        self.down_since, self.failures, self.killed_starts, self.disk_full, self.unseen = None, 0, 0, False, 0
        self.emptying, self.back_at = False, time.monotonic()
        if self.unprepared:  # before beat claims its lock again and children restart (this loop's next steps)
            self._prepare()

    def _prepare(self) -> None:
        """A new cluster has no tables: the site answered errors and the worker and beat died on missing
        tables until they were a crash loop that stopped `yullu serve`. Migrate it (and bootstrap: a new
        admin account and token) with the code the start runs; on failure, try again in PREPARE_RETRY s.
        Raises CrashLoop after MAX_QUICK_FAILURES failures in a row with the database up and space left (a
        migration that cannot apply): its children's exits were excused for ever, and the site never ended."""
        from django.db import connections

        if self.prepare is None:
            return
        connections.close_all()  # this process's connection went with the old server
        try:
            said = self.prepare()
        except Exception as exc:
            self._not_prepared(exc)
            return
        self.unprepared, self.prepared_at, self.prepare_failures = False, time.monotonic(), 0
        if said:
            say(said)

    def _not_prepared(self, exc: Exception) -> None:
        from yullu_core.failures import short_of_space

        reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}"
        passing = short_of_space(self.home) or not self.reachable()  # these pass by themselves: never counted
        self.prepare_failures += not passing
        if self.prepare_failures >= MAX_QUICK_FAILURES:
            raise CrashLoop(
                f"yullu: could not bring the new database up to date, {self.prepare_failures} times in a row "
                f"({reason}); stopping everything."
            ) from exc
        self.retry_at = time.monotonic() + PREPARE_RETRY
        say(f"yullu: could not bring the new database up to date ({reason}); trying again in {PREPARE_RETRY:.0f} s.",
            "WARNING")  # fmt: skip

    def _wait_until_empty(self) -> None:
        """A data folder still being deleted is no crash loop: initdb refused it ("exists but is not empty")
        four times while a `rm -rf` that took over 7 s ran, and the supervisor ended the site, which then stayed
        down. Now it waits, not ready, and makes the new cluster once the folder is empty; said once."""
        if not self.emptying:
            say(f"yullu: the embedded PostgreSQL's data folder {self.cluster.pgdata} holds no database but is not "
                "empty (still being deleted?); a new, empty one is made there once it is empty (looked at every "
                f"{EMPTYING_RETRY:.0f} s; files put there by mistake: move them away).",
                "WARNING")  # fmt: skip
        self.emptying, self.failures = True, 0
        self.retry_at = time.monotonic() + EMPTYING_RETRY

    def _not_seen(self) -> None:
        """A start that succeeded but left no postmaster.pid in the watched folder: tried again with
        backoff (1 s, 2 s, 4 s … MAX_BACKOFF), said once until it is back."""
        self.unseen += 1
        self.retry_at = time.monotonic() + min(MAX_BACKOFF, 2.0 ** (self.unseen - 1))
        if self.unseen == 1:
            say(f"yullu: the embedded PostgreSQL started but its postmaster.pid is not in {self.cluster.pgdata}; "
                f"trying again with backoff (up to every {MAX_BACKOFF:.0f} s).", "WARNING")  # fmt: skip

    def _wait_for_space(self, reason: str) -> None:
        """A full disk is no crash loop: PostgreSQL stops when it cannot write its WAL (a large import
        filling the disk) and cannot finish crash recovery until space is freed. Giving up after four
        tries ended the site, which then stayed down once space was freed; now it waits, not ready,
        and starts again by itself."""
        if not self.disk_full:
            from yullu_core import postgres as pg

            say(f"yullu: {pg.no_space_to_start(self.cluster.pgdata, reason)}. The site answers 'database "
                f"unavailable' until space is freed there, then starts it again by itself (tried every "
                f"{DISK_FULL_RETRY:.0f} s).", "WARNING")  # fmt: skip
        self.disk_full, self.failures = True, 0
        self.retry_at = time.monotonic() + DISK_FULL_RETRY

    def _hurry_a_stop(self, now: float, running: Any) -> None:
        """A smart shutdown (`kill -TERM` of the postmaster, `pg_ctl stop -m smart`) waits for every
        session to end, and this site's processes keep theirs open: it never ends, and the site
        stays not ready for good. Past STOP_GRACE it is made a fast one; the server exits and is
        started again as after any other stop."""
        from yullu_core import postgres as pg

        if not pg.stopping(self.cluster):
            self.stopping_since = None
            return
        if self.stopping_since is None:
            self.stopping_since = now
        elif now - self.stopping_since >= STOP_GRACE:
            say(f"yullu: the embedded PostgreSQL (pid {running.pid}) is shutting down but waits for connections "
                 "this site keeps open; making it a fast shutdown.", "WARNING")  # fmt: skip
            pg.stop_fast(running)
            self.stopping_since = None

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
    kills: int = 0  # SIGKILLs in a row within START_GRACE of starting (from outside: never a crash loop)
    restart_at: float | None = None
    paused: bool = False  # stopped on purpose (beat without its lock): not restarted
    config_wait: bool = False  # its restart waits for a broken config file to be fixed (said once)
    listens_on: tuple[str, int] | None = None  # the web process's host and port (a port taken meanwhile ends it)
    last_words: LastWords | None = None  # the web process's stderr, through this supervisor
    # Beat's pid file, removed before each start: beat runs only while this supervisor holds the beat lock, so a
    # file there is a dead beat's. After a reboot its pid was another program's, Celery refused to start ("Pidfile
    # … already exists. Seems we're already running?"), and four such exits ended the site (chaos drill, round 24).
    pidfile: Path | None = None
    metrics_off: bool = False  # started without the shared metrics folder (it had no room)
    recycling: bool = False  # asked to stop so that it starts again with its metrics (not a failure)

    def start(self) -> None:
        cmd = self.cmd if self.pidfile is None else self._without_a_stale_pidfile()
        self.metrics_off, self.recycling = not room_for_metrics(), False
        env = _metrics_off(self.env, self.name) if self.metrics_off else self.env
        if self.listens_on is None:
            self.proc = _spawn(cmd, env)
        else:
            self.proc = _spawn(cmd, env, stderr=subprocess.PIPE)
            assert self.proc.stderr is not None
            self.last_words = LastWords(self.proc.stderr)
        self.started_at = time.monotonic()
        self.restart_at = None

    def _without_a_stale_pidfile(self) -> list[str]:
        """The command, its pid file removed first; without `--pidfile` while that folder is not writable. With
        $YULLU_HOME read-only, Celery's pid file check printed a 50-line traceback (OSError: Read-only file
        system) at each of beat's restarts, and beat never ran until the home was writable (round 23's leftover).
        The beat lock, not the file, keeps beat single; the file is there again at the first start that can."""
        assert self.pidfile is not None
        with contextlib.suppress(OSError):
            self.pidfile.unlink(missing_ok=True)
        if os.access(self.pidfile.parent, os.W_OK):
            return self.cmd
        say(f"yullu: {self.pidfile.parent} is not writable (read-only?); the {self.name} process starts without "
            f"its pid file {self.pidfile.name}.", "WARNING")  # fmt: skip
        at = self.cmd.index("--pidfile") if "--pidfile" in self.cmd else len(self.cmd)
        return self.cmd[:at] + self.cmd[at + 2 :]

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
# Not one killed with SIGKILL: that came from outside (the OOM killer, an operator, a drill).
START_GRACE = 20.0
MAX_QUICK_FAILURES = 4
MAX_BACKOFF = 30.0
DISK_FULL_RETRY = 10.0  # seconds between starts of a PostgreSQL whose disk is full
PREPARE_RETRY = 5.0  # seconds between tries to migrate a new cluster
EMPTYING_RETRY = 1.0  # seconds between looks at a data folder still being deleted
STOP_GRACE = 2.0  # seconds a shutdown of the embedded server may wait for sessions before it is made fast


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
    while the database is unreachable, or while $YULLU_HOME's disk is full, is no sign of a broken
    child: it never counts towards CrashLoop, and the restart waits (backoff) for it to pass. (Beat
    cannot write its pid file on a full disk: after a restart of PostgreSQL there it died four times
    and the supervisor ended the site, round eight.)"""
    from yullu_core.failures import short_of_space

    assert child.proc is not None
    code = child.proc.returncode
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.proc.pid, signal.SIGKILL)  # pool processes the dead parent left behind
    if child.listens_on is not None and (taken := taken_since(*child.listens_on, ours=child.proc.pid)):
        kept = child.last_words.taken(database.home / "run") if child.last_words else None
        where = f"; the web process's last lines are in {kept}" if kept else ""
        raise CrashLoop(f"yullu: {taken}{where}; stopping everything.")  # no restart takes the port back
    if child.last_words is not None:
        child.last_words.finish()  # its last lines before ours, as they came
    if child.recycling:  # stopped on purpose to count its metrics again (said then): started at once, not counted
        child.recycling, child.restart_at = False, now
        return
    quick = now - child.started_at < START_GRACE
    full = quick and short_of_space(database.home)
    # Beat writes its pid file there: with $YULLU_HOME read-only it died at once, four times, and ended the site.
    read_only = quick and (run := database.home / "run").is_dir() and not os.access(run, os.W_OK)
    # A child started before a new cluster was migrated dies on its missing tables: not a broken child.
    # Counted, four such exits (the worker's queue table missing while the migration ran) ended the site (CI).
    unready = quick and (database.unprepared or child.started_at < database.prepared_at)
    # Exits while the embedded server was down are seen only once its restart returns (it blocks this loop for
    # seconds): by then it answers, yet the child died of its going, not of a fault of its own.
    went = quick and child.started_at < database.back_at
    excused = full or read_only or unready or went or (quick and not database.reachable())
    if excused:
        child.db_waits += 1
        delay = min(MAX_BACKOFF, 2.0 ** min(child.db_waits, 5))
        why = "the database went away after it started; " if went else "the database is unreachable; "
        why = "the new database was not yet up to date; " if unready else why
        why = f"{database.home / 'run'} is not writable (read-only?); " if read_only else why
        why = f"the disk of {database.home} is full; " if full else why
    elif quick and code == -signal.SIGKILL:
        # Killed from outside (the OOM killer, an operator), not a start that fails by itself: never a
        # crash loop, restarted with backoff. Four kills of the web process, each once it was ready
        # (ready 10-15 s after its start on a loaded machine), ended the whole site (round nine).
        child.kills += 1
        delay = min(MAX_BACKOFF, 2.0 ** min(child.kills - 1, 5))
        why = ""
    else:
        child.kills = 0
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
    say(
        f"yullu: the {child.name} process (pid {child.proc.pid}) {_describe_exit(code)}; "
        f"{why}restarting it in {delay:.0f} s (restart {child.restarts}).",
        "WARNING",
    )
    _count_restart(child.name)


CONFIG_RETRY = 2.0  # seconds between looks at a broken config file a restart waits for


METRICS_ROOM = 4 * 1024 * 1024  # bytes: a process's metric files are sparse 1 MiB maps, a few pages written


def room_for_metrics() -> bool:
    """Whether the metrics folder's file system has room. prometheus_client maps its files into memory, and a
    process that writes a new page of one on a full file system dies of SIGBUS: with /dev/shm full, the
    supervisor died at its first restart count, silently, its children with it and the embedded PostgreSQL
    left with no owner (chaos drill, round 23; round eight's was $YULLU_HOME's disk)."""
    folder = env_str(MULTIPROC_ENV)
    return not folder or room_in(folder)


def room_in(folder: str | Path) -> bool:
    """Whether `folder`'s file system has METRICS_ROOM free (unreadable: no)."""
    try:
        return shutil.disk_usage(folder).free >= METRICS_ROOM
    except OSError:
        return False


def _metrics_off(env: dict[str, str], name: str) -> dict[str, str]:
    """`env` without the shared metrics folder (its file system is full): the child counts in its own memory
    (missing from the scrape) rather than die of SIGBUS at its first count."""
    say(f"yullu: the metrics folder {env.get(MULTIPROC_ENV)} has no room (its file system is full); the {name} "
        "process starts with its metrics kept to itself (missing from /metrics) until space is freed there.",
        "WARNING")  # fmt: skip
    return {k: v for k, v in env.items() if k != MULTIPROC_ENV}


MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # yullu_core.metrics.MULTIPROC_ENV (not imported: it imports prometheus)


METRICS_CHECK_EVERY = 10.0  # seconds between looks for room in a metrics folder a child started without


def _metrics_back(children: list[Child]) -> None:
    """A child started while the metrics folder was full (/dev/shm) counted in its own memory for the rest of its
    life: missing from /metrics long after space came back (round 23's leftover). Once there is room it is asked to
    stop (SIGTERM: uvicorn drains, Celery finishes its tasks) and started again at once with the shared folder."""
    running = [c for c in children if c.proc is not None and c.proc.poll() is None]
    waiting = [c for c in running if c.metrics_off and not c.recycling]
    if not waiting or not room_for_metrics():
        return
    for child in waiting:
        assert child.proc is not None
        say(f"yullu: the metrics folder has room again; restarting the {child.name} process (pid {child.proc.pid}) so "
            "that it counts there.")  # fmt: skip
        child.recycling = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.proc.pid, signal.SIGTERM)


def _restart(child: Child, now: float) -> None:
    """Start `child` again, unless the config file is broken now (a typo, an editor's half-saved file):
    the child would die at import with a traceback, and four such exits ended the whole site (walk 13:
    one `kill -9` of the worker while config.toml held a typo). It waits for the fix instead, saying so once."""
    if problem := _config_problem():
        if not child.config_wait:
            say(f"yullu: {problem} The {child.name} process starts again once it is fixed.", "ERROR")
        child.config_wait, child.restart_at = True, now + CONFIG_RETRY
        return
    if child.config_wait:
        say(f"yullu: the config file reads again; starting the {child.name} process.")
        child.config_wait = False
    child.start()


def _config_problem() -> str | None:
    """The sentence a child would die with at start over the config (file or environment), or None."""
    from yullu_core.config import ConfigError, load

    try:
        load(write_default=False)
    except ConfigError as exc:
        return str(exc)
    return None


def _count_restart(name: str) -> None:
    if not room_for_metrics():
        return  # a count lost, not the supervisor (SIGBUS is no exception to suppress)
    with contextlib.suppress(Exception):  # metrics are never a reason to stop supervising
        from yullu_core.metrics import CHILD_RESTARTS

        CHILD_RESTARTS.labels(child=name).inc()


LOCK_CHECK_EVERY = 2.0  # seconds: how long a beat may run after the lock's connection was lost


def supervise(children: list[Child], beat_lock: BeatLock | None, database: Database) -> str | None:
    """Keep every child (and the embedded PostgreSQL) running until Ctrl-C/SIGTERM (then None). A
    child that exits is restarted (the others keep serving); one that keeps dying right at start,
    or a PostgreSQL that cannot start again, stops everything with one line saying why (returned)."""
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    # The terminal `make run` ran in closed: a hang-up is a stop, with its clean-up. By default it killed this
    # supervisor at once, its children with it (they die with their parent) and the embedded PostgreSQL left
    # running with no owner (chaos drill, round 22). Under nohup (ignored) it stays ignored.
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, on_signal)
    checked = metrics_checked = time.monotonic()
    beat = next((c for c in children if c.name == "beat"), None)
    while not stopping:
        now = time.monotonic()
        try:
            database.watch(now, on_gone=lambda: _drop_beat_lock(beat_lock, beat))
            for child in children:
                if child.paused:
                    continue
                if child.restart_at is not None:
                    if now >= child.restart_at:
                        _restart(child, now)
                elif child.proc is not None and child.proc.poll() is not None:
                    _on_exit(child, now, database)
        except CrashLoop as exc:
            say(str(exc), "ERROR")
            return str(exc)
        if beat_lock is not None and now - checked > LOCK_CHECK_EVERY:
            checked = now
            _keep_beat_lock(beat_lock, beat)
        if now - metrics_checked > METRICS_CHECK_EVERY:
            metrics_checked = now
            _metrics_back(children)
        time.sleep(0.5)
    return None


def _drop_beat_lock(lock: BeatLock | None, beat: Child | None) -> None:
    """The postmaster is gone, and the beat lock with it: stop beat now rather than after the restart
    (crash recovery takes seconds, during which beat logged a traceback for every task falling due)."""
    if lock is not None and lock.held:
        lock.close()
        _beat_lock_lost(beat)


def _beat_lock_lost(beat: Child | None) -> None:
    say("yullu: lost the database connection holding the beat lock; beat waits until it holds the lock again.",
         "WARNING")  # fmt: skip
    if beat is not None:
        beat.pause()


def _keep_beat_lock(lock: BeatLock, beat: Child | None) -> None:
    """Beat runs only while this supervisor holds the beat lock. A lost lock (its connection went
    with a PostgreSQL restart or a killed backend) stops beat until the lock is claimed again, so a
    standby that took it meanwhile is never joined by a second beat."""
    if lock.held:
        if lock.still_held():
            return
        _beat_lock_lost(beat)
    if lock.claim() and beat is not None and beat.paused:
        say("yullu: holding the beat lock again; starting beat.")
        beat.paused = False
        _restart(beat, time.monotonic())  # not into a config file broken meanwhile (walk 13)


def remember_the_stop(run_dir: Path, line: str | None, role: str = "all", port: int | None = None) -> None:
    """Keep the line a supervisor ended with (None: a start, or a stop by request, forgets it): `yullu doctor`
    says it beside "connection refused" (a crash loop's line was only in a log the user may not have). Each
    role's supervisor (`yullu serve --role web|worker|beat`) keeps its own: they wrote none (round 23)."""
    file = run_dir / _ended_name(role, port)
    # An all-in-one start runs every role: a role supervisor's line from before (the home ran split) is no longer
    # the news, and doctor warned of a stopped worker for good (review 24).
    forgotten = [file] if role != "all" else [file, *run_dir.glob(f"{ENDED_BECAUSE}-*")]
    with contextlib.suppress(OSError):
        if line is None:
            for old in forgotten:
                old.unlink(missing_ok=True)
        else:
            file.write_text(line.removeprefix("yullu: ") + "\n")


def _ended_name(role: str, port: int | None) -> str:
    return ENDED_BECAUSE if role == "all" else f"{ENDED_BECAUSE}-{role}-{port}"


def ended_because(run_dir: Path, roles_only: bool = False) -> str | None:
    """What the last `yullu serve` of this home, and each role's, ended with by itself ("the last `yullu serve
    --role worker` (port 8000) stopped by itself: …"; several joined by "; "), or None."""
    said = []
    for file in sorted(run_dir.glob(f"{ENDED_BECAUSE}*")):
        role, _, port = file.name.removeprefix(ENDED_BECAUSE).lstrip("-").partition("-")
        if roles_only and not role:
            continue
        try:
            line = file.read_text().strip()
        except OSError:
            continue
        who = f"`yullu serve --role {role}` (port {port})" if role else "`yullu serve`"
        said += [f"the last {who} stopped by itself: {line}"] if line else []
    return "; ".join(said) or None


ENDED_BECAUSE = "ended-because"


def say(message: str, level: str = "INFO") -> None:
    """The supervisor's own lines on stderr: plain, or one JSON object with YULLU_LOG_FORMAT=json."""
    if env_str("YULLU_LOG_FORMAT").lower() == "json":
        import logging

        from yullu_site.monitoring.logjson import JsonFormatter

        record = logging.LogRecord("yullu.serve", getattr(logging, level), "", 0, message, None, None)
        message = JsonFormatter().format(record)
    print(message, file=sys.stderr, flush=True)
