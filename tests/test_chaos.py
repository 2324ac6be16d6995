"""Faults the chaos drills found (docs/reliability.md, "Chaos drills"): an event-log folder on a
full file system, and the temp files a writer that died leaves behind."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from access.bootstrap import bootstrap, token_file
from dreaming.admin import pass_status
from dreaming.models import DreamOp, DreamPass, SessionMessage
from dreaming.services import INTERRUPTED, record_messages
from memories.embedding import vector_index
from memories.models import Memory
from memories.scope import Scope, resolve
from memories.search.queries import search
from memories.write.create import store_memory
from sync.eventlog import STALE_TEMP_S, list_names, new_event, read_events, write_event
from sync.models import OutboxEvent
from sync.outbox import flush
from sync.services import APPLY_BATCH, reconcile_scope
from tests.conftest import free_port
from tests.processes import REPO, product_env, run_cli, spawn, stop, stub_env, wait_until
from tests.processes import test_database_url as database_url
from tests.stubs import StubServer
from yullu_cli.supervised import MAX_QUICK_FAILURES, Child, Database
from yullu_cli.supervised import _on_exit as on_exit
from yullu_core.locks import LockKey
from yullu_site.monitoring.health import gather

pytestmark = pytest.mark.django_db(transaction=True)


def temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


@pytest.fixture
def full_log(repo: Path) -> Iterator[Path]:
    """The repository's event-log folder on a real 64 KiB file system, filled to the last block."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(folder)], check=True)
    try:
        with open(folder / "filler", "wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"x" * 4096)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_store_into_a_full_log_folder_leaves_no_temp_file_and_is_written_once_there_is_room(
    client: Client, owner_token: str, repo: Path, full_log: Path
) -> None:
    body = {"content": "the nightly export runs at 02:00 UTC", "cwd": str(repo)}
    auth = {"Authorization": f"Bearer {owner_token}"}
    r = client.post("/api/memories", body, content_type="application/json", headers=auth)
    assert r.status_code == 201, r.content  # committed; its events wait in the outbox for room
    memory = Memory.objects.get(pk=r.json()["id"])
    assert OutboxEvent.objects.filter(memory_uuid=memory.uuid).exists()
    assert temps(full_log) == [], "a failed write left its temp file (it kept the disk full)"
    assert list_names(full_log) == []
    flush()  # the sweep of the reconcile tick, while the folder is still full
    # Ten minutes on, doctor and the dashboard say which folder holds events back, and why.
    OutboxEvent.objects.update(created_at=timezone.now() - timedelta(minutes=10))
    part = gather(("sync events",)).part("sync events")
    assert len(part.problems) == 1 and str(full_log) in part.problems[0], part
    assert "(its file system is full); teammates do not see them yet." in part.problems[0], part
    (full_log / "filler").unlink()
    flush()
    assert not OutboxEvent.objects.filter(memory_uuid=memory.uuid).exists()
    assert len(list_names(full_log)) >= 1 and temps(full_log) == []
    assert gather(("sync events",)).part("sync events").ok


def test_a_reconcile_removes_the_temp_files_a_dead_writer_left(repo: Path) -> None:
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    dead = folder / f".20260601T041213.364878000Z-abcf29d8.json.{gone.pid}.tmp"
    old = folder / ".20260601T041213.364878000Z-0badc0de.json.1.tmp"  # pid 1 runs, but an hour went by
    live = folder / ".20260601T041213.364878000Z-5ca1ab1e.json.1.tmp"  # may be between its write and its link
    for temp in (dead, old, live):
        temp.write_text('{"id": "half a')
    hour_ago = time.time() - STALE_TEMP_S - 60
    os.utime(old, (hour_ago, hour_ago))
    result = reconcile_scope(Scope("github.com/acme/app", repo))
    assert result["parse_errors"] == []
    assert not dead.exists(), "left by a writer killed between its write and its link"
    assert not old.exists(), "a writer links within a second: an hour-old temp file is left over"
    assert live.exists(), "a running writer's temp file is kept"


def test_a_data_folder_owned_by_someone_else_is_named_with_its_fix() -> None:
    """The embedded cluster's data folder chowned to another user: one sentence naming the folder,
    both users and the command that gives it back (it quoted an earlier run's last FATAL line:
    'terminating connection due to administrator command')."""
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="yullu-owned-"))
    base.chmod(0o755)  # PostgreSQL's system user must reach the data folder
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_"))}
    env |= {"YULLU_HOME": str(base / "home"), "YULLU_ROOT_PG_BASE": str(base / "pg")}

    def server(action: str) -> subprocess.CompletedProcess[str]:
        code = f"from yullu_core import paths, postgres as pg; print(pg.{action}(paths.ensure_home()))"
        return subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=180, check=False)  # fmt: skip

    assert server("ensure_running").returncode == 0
    pgdata = Path(server("plan").stdout.split("pgdata=PosixPath('")[1].split("'")[0])
    owner = pgdata.stat().st_uid
    assert server("stop").returncode == 0
    subprocess.run(["chown", "-R", "nobody", str(pgdata)], check=True)
    try:
        started = server("ensure_running")
        assert started.returncode != 0
        last = started.stderr.strip().splitlines()[-1]
        assert f"the PostgreSQL data folder {pgdata} belongs to nobody" in last, last
        assert f"give it back with: chown -R {pwd.getpwuid(owner).pw_name} {pgdata}" in last, last
    finally:
        subprocess.run(["chown", "-R", str(owner), str(pgdata)], check=True)
        server("stop")
        shutil.rmtree(base, ignore_errors=True)


def test_a_token_file_others_can_read_is_made_private_at_start(caplog: pytest.LogCaptureFixture) -> None:
    bootstrap()
    token = token_file()
    token.chmod(0o644)
    with caplog.at_level("WARNING"):
        result = bootstrap()
    assert not result.token_created, "the token itself is kept"
    assert token.stat().st_mode & 0o777 == 0o600
    assert f"{token} could be read by other users (mode 644); made it private (0600)." in caplog.text


def test_a_token_file_that_cannot_be_made_private_is_a_warning_not_a_failed_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A token file other users may read and we may not chmod (another user's, restored by root; here a
    read-only bind mount, which refuses even root): the start went down with PermissionError's traceback."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root (CI runs as root)")
    bootstrap()
    token = token_file()
    token.chmod(0o644)
    subprocess.run(["mount", "--bind", str(token), str(token)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(token)], check=True)
        with caplog.at_level("WARNING"):
            result = bootstrap()
    finally:
        subprocess.run(["umount", str(token)], check=False)
    assert not result.token_created, "the token itself is kept"
    assert f"{token} can be read by other users (mode 644) and could not be made private" in caplog.text
    assert f"run: chmod 600 {token}" in caplog.text


class JudgeWaits(StubServer):
    """The extraction is answered at once with two facts, the second close to the first; the
    reasoner's judgement of the second (its nearest neighbour is the first) waits for `release`."""

    OPS = [
        {
            "op": "create",
            "content": "vec:1,0,0 The billing worker retries invoices three times.",
            "category": "process",
        },
        {"op": "create", "content": "vec:0.8,0.6,0 The billing worker retries refunds twice.", "category": "process"},
    ]

    def __init__(self) -> None:
        super().__init__()
        self.extractions = 0
        self.judging = threading.Event()
        self.release = threading.Event()

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "operations" in json.dumps(body["messages"][0]):  # the extraction prompt asks for operations
            self.extractions += 1
            self.chat_replies = [json.dumps({"operations": self.OPS})]
        else:
            self.judging.set()
            self.release.wait(120)
            self.chat_replies = ['{"decision": "create"}']
        return super()._chat(body)


def test_a_dream_pass_killed_while_applying_leaves_its_operations_to_the_next_pass(repo: Path, tmp_path: Path) -> None:
    """kill -9 of a pass after the reasoner answered, between its two operations: the messages
    are consumed with the answer kept, the next pass applies the operation left over without
    asking the reasoner again (a second reading would phrase the facts anew and store them twice),
    and the dead pass is shown as failed, not running."""
    scope = resolve(None, str(repo))
    record_messages(scope.project_id, "s1", [{"role": "user", "content": f"turn {n} about billing"} for n in range(3)])
    stub = JudgeWaits()
    with stub:
        env = product_env(tmp_path / "home", **stub_env(stub.url, reasoning=True))
        proc = spawn(["-m", "yullu_cli.main", "dream", "--cwd", str(repo)], env)
        try:
            wait_until(stub.judging.is_set, "the second operation to be judged", alive=proc)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        [dead] = DreamPass.objects.filter(project_id=scope.project_id)
        assert not SessionMessage.objects.filter(session_id="s1").exists(), "consumed with the answer kept"
        assert list(DreamOp.objects.filter(dream_pass=dead).values_list("outcome", flat=True).order_by("id")) == [
            "created",
            "pending",
        ]
        assert dead.finished_at is None and not pass_status(dead)["running"], "its process is gone"
        stub.release.set()
        result = run_cli(["dream", "--cwd", str(repo)], env)
    assert result.returncode == 0, result.stderr
    contents = sorted(Memory.objects.filter(project_id=scope.project_id).values_list("content", flat=True))
    assert contents == sorted(op["content"] for op in JudgeWaits.OPS)
    assert stub.extractions == 1, "the messages were read by the reasoner once"
    dead.refresh_from_db()
    assert dead.phase == "failed" and dead.finished_at is not None and INTERRUPTED in dead.errors
    assert not DreamOp.objects.filter(outcome="pending").exists()


def test_an_index_a_killed_import_left_dropped_is_built_again_by_a_running_process(
    stub_embedder: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large import drops the embedder's vector index and builds it once at the end; kill -9 of
    the import between the two left it missing, and a running process that had seen it trusted its
    cache for good (every search scanned every vector until a restart)."""
    project = "github.com/acme/killed-import"
    store_memory(Scope(project, None), "the invoices are numbered per tenant and year")  # the index, seen here
    name = vector_index.index_name("openai:stub-embed", stub_embedder.dim)
    assert exists(name)
    rows = tmp_path / "export.jsonl"
    with rows.open("w") as out:
        out.write(json.dumps({"format": "yullu-memories", "version": 1, "project_id": project}) + "\n")
        for n in range(2_500):  # more than one batch: the import drops the index first
            out.write(json.dumps({"project_id": project, "content": f"imported fact number {n} about billing"}) + "\n")
    env = product_env(tmp_path / "home", **stub_env(stub_embedder.url))
    # The import's first batch waits for the project's write lock, held here.
    with psycopg.connect(database_url(), autocommit=True) as holder, holder.transaction():
        holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LockKey.PROJECT_WRITE, project])
        proc = spawn(["-m", "yullu_cli.main", "import", str(rows)], env)

        def waiting() -> bool:
            row = holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            return bool(row.fetchone()[0])  # type: ignore[index]

        wait_until(waiting, "the import's first batch to wait for the lock", alive=proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert not exists(name), "the killed import dropped the index and never built it again"
    monkeypatch.setattr(vector_index, "RECHECK_S", 0.0)  # the minute a process trusts what it saw, gone by
    found = search(project, "how are invoices numbered", min_similarity=0.0)
    assert found.results, "the search still answers"
    assert exists(name), "the search found the index missing and built it"


def exists(name: str) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return bool(cur.fetchone()[0])


def test_a_start_while_another_start_holds_the_home_is_refused(tmp_path: Path) -> None:
    """Two `yullu serve` on one home at the same moment: the pid file is locked while a server
    claims it, so the second is refused even before the first has written its pid (a read of the
    file, then a write, let both through)."""
    env = product_env(tmp_path / "home", YULLU_PORT=str(free_port()), YULLU_EMBED_PROVIDER="none")
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True)
    with open(run / "serve.pid", "a+") as claimed:
        fcntl.flock(claimed, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a start that has not written its pid yet
        proc = spawn(["-m", "yullu_cli.main", "serve"], env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            stop(proc)
            raise AssertionError("a second server started on the same home") from None
    assert proc.returncode == 1, out
    assert out.strip().splitlines()[-1] == (
        "yullu: a server is already running for this YULLU_HOME (pid ?); stop it first or set YULLU_HOME."
    ), out


CLAIM = """
import fcntl, sys
from pathlib import Path
from yullu_cli import supervisor
if sys.argv[2] == "pause":  # stop between opening the pid file and locking it, until told to go on
    real = fcntl.flock
    def flock(fh, how):
        print("opened", flush=True)
        sys.stdin.readline()
        fcntl.flock = real
        return real(fh, how)
    fcntl.flock = flock
supervisor._pidfile_claim(Path(sys.argv[1]))
print("claimed", flush=True)
sys.stdin.readline()
Path(sys.argv[1]).unlink(missing_ok=True)  # what a stopping `yullu serve` does last, still holding the lock
"""


def test_two_starts_racing_a_stop_end_with_one_server_and_a_pid_file_naming_it(tmp_path: Path) -> None:
    """A server stops (it unlinks its pid file, then its lock goes with it) while a second start has
    opened that file and not locked it yet, and a third start comes after: the second got the lock of
    the unlinked file and the third created a new one, so both served and no pid file named the second
    (yullu_cli/supervisor.py, the race the round-seven review left)."""
    pidfile = tmp_path / "serve.pid"

    def claim(mode: str = "") -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", CLAIM, str(pidfile), mode], cwd=REPO, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip

    def said(proc: subprocess.Popen[str], word: str) -> None:
        assert proc.stdout is not None and proc.stdout.readline().strip() == word, proc.communicate()

    def go(proc: subprocess.Popen[str]) -> None:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()

    first = claim()
    said(first, "claimed")
    second = claim("pause")
    said(second, "opened")  # the file the first server locks, opened
    go(first)  # the first server stops: its pid file unlinked, then its lock released as it exits
    assert first.wait(timeout=30) == 0
    go(second)
    said(second, "claimed")
    third = claim()
    try:
        _, refused = third.communicate(timeout=30)
        assert third.returncode == 1, "a third server started beside the second"
        running = f"a server is already running for this YULLU_HOME (pid {second.pid})"
        assert refused.strip() == f"yullu: {running}; stop it first or set YULLU_HOME.", refused
        assert pidfile.read_text() == str(second.pid), "the pid file names the server that runs"
    finally:
        for proc in (second, third):
            proc.kill()
            proc.communicate()


def test_a_reconcile_killed_between_batches_still_publishes_the_embeddings_it_stored(
    repo: Path, stub_embedder: StubServer, tmp_path: Path
) -> None:
    """kill -9 of `yullu reconcile` after its first batch committed: the vectors it computed for that
    batch are stored and its files are in the ledger, so no later pass embeds those memories again;
    their `embedding` events were to be written at the end of the pass and were never published (a
    teammate with the same model embedded them itself). Every memory has its event after the next pass."""
    logs = repo / ".yullu" / "logs"
    scope = resolve(None, str(repo))
    memories = sorted(str(uuid.uuid4()) for _ in range(APPLY_BATCH + 40))
    held = memories[APPLY_BATCH + 10]  # in the pass's second batch
    write_event(logs, new_event("create", held, content="the deploy freeze starts on Fridays at noon", tags=[]))
    reconcile_scope(scope)  # this machine has it; a teammate's edit of it comes with the new files
    write_event(logs, new_event("update", held, content="the deploy freeze starts on Thursdays at noon"))
    for n, memory in enumerate(m for m in memories if m != held):
        write_event(logs, new_event("create", memory, content=f"teammate fact {n} about the billing queue", tags=[]))
    env = product_env(tmp_path / "home", **stub_env(stub_embedder.url))
    with psycopg.connect(database_url(), autocommit=True) as holder, holder.transaction():
        holder.execute(f"SELECT 1 FROM {Memory._meta.db_table} WHERE uuid = %s FOR UPDATE", [held])
        proc = spawn(["-m", "yullu_cli.main", "reconcile", "--cwd", str(repo)], env)

        def second_batch_waits() -> bool:
            row = holder.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")  # (pg_stat_activity: a snapshot)
            return bool(row.fetchone()[0])  # type: ignore[index]

        wait_until(second_batch_waits, "the reconcile's second batch to wait for the held row", alive=proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert Memory.objects.filter(project_id=scope.project_id).count() == APPLY_BATCH + 1, "the first batch committed"
    result = run_cli(["reconcile", "--cwd", str(repo)], env)
    assert result.returncode == 0, result.stderr
    assert Memory.objects.filter(project_id=scope.project_id).count() == len(memories)
    embedded = [str(e.memory_id) for _, e in read_events(logs).events if e.type == "embedding"]
    assert set(embedded) == set(memories), f"{len(set(memories) - set(embedded))} memories have no embedding event"
    assert len(embedded) == len(memories) + 1, "one event per vector: the held memory's two contents, the rest once"
    assert not OutboxEvent.objects.exists()


WATCH_A_FULL_DISK = """
import sys, time
from pathlib import Path
from yullu_cli.supervised import CrashLoop, Database
from yullu_core import paths, postgres as pg
home, filler = paths.yullu_home(), Path(sys.argv[1])
db = Database(home, pg.plan(home), owned=True, owner_role=True)
try:
    for _ in range(6):  # more than the four failed starts that end the site
        db.retry_at = 0.0  # no backoff to wait out here
        db.watch(time.monotonic())
except CrashLoop as exc:
    sys.exit(str(exc))
print("waiting" if db.disk_full and pg.postmaster(db.cluster) is None else "?", flush=True)
filler.unlink()  # space comes back
db.retry_at = 0.0
db.watch(time.monotonic())
print("back" if pg.postmaster(db.cluster) is not None else "still down", flush=True)
"""


def test_a_full_disk_under_the_embedded_postgres_is_said_and_waited_out(tmp_path: Path) -> None:
    """The embedded PostgreSQL's disk filled (round eight: a large import): every command wrote a
    secret-key temp file first and failed on it, leaving it behind; new sessions were refused ("could
    not write init file") and said as "cannot reach the database … start it"; and PostgreSQL, which
    stops when it cannot write its WAL and cannot start again until space is freed, was given four
    tries: the supervisor ended the site, which stayed down once space came back."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    disk = Path(tempfile.mkdtemp(prefix="yullu-fulldisk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m,mode=0755", "tmpfs", str(disk)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_"))}
    env |= {"YULLU_HOME": str(disk / "home"), "YULLU_ROOT_PG_BASE": str(disk / "pg"), "YULLU_EMBED_PROVIDER": "none",
            "YULLU_CONFIG": str(disk / "config.toml")}  # fmt: skip

    def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=180, check=False)  # fmt: skip

    try:
        started = python(
            "from yullu_core import paths, postgres as pg; print(pg.ensure_running(paths.ensure_home()));"
            "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'yullu_site.settings';"
            "import yullu_site.settings"
        )  # fmt: skip (the settings make the secret key)
        assert started.returncode == 0, started.stderr
        pgdata = Path(python("from yullu_core import paths, postgres as pg; print(pg.plan(paths.yullu_home()).pgdata)")
                      .stdout.strip())  # fmt: skip
        for cache in pgdata.glob("**/pg_internal.init"):  # PostgreSQL writes it again on the next session
            cache.unlink()
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"x" * 4096)
        said = run_cli(["memories", "list", "--project", "acme/full"], env)
        assert said.returncode == 1 and "Traceback" not in said.stderr, said.stderr
        assert said.stderr.strip().splitlines()[-1] == (
            "yullu: The database's disk is full, so it takes no new connections; free some space on the server "
            "and try again."
        ), said.stderr
        assert not list((disk / "home").glob(".*.tmp")), "a failed write left its temp file"
        python("from yullu_core import paths, postgres as pg; pg.stop(paths.yullu_home())")
        # A command that starts the server itself says what the supervisor says (walk 11: "PostgreSQL
        # did not start (see …): … No space left on device").
        said = run_cli(["memories", "list", "--project", "acme/full"], env)
        assert said.returncode == 1 and "Traceback" not in said.stderr, said.stderr
        last = said.stderr.strip().splitlines()[-1]
        said_so = f"yullu: the embedded PostgreSQL cannot start: the disk holding {pgdata} is full ("
        assert last.startswith(said_so), last
        assert last.endswith("; free some space there and try again."), last
        watched = python(WATCH_A_FULL_DISK, str(filler))
        assert watched.returncode == 0, f"the site ended: {watched.stderr[-1500:]}"
        assert watched.stdout.split() == ["waiting", "back"], watched.stdout + watched.stderr
        assert f"the disk holding {pgdata} is full" in watched.stdout + watched.stderr
    finally:
        python("from yullu_core import paths, postgres as pg; pg.stop(paths.yullu_home())")
        subprocess.run(["umount", str(disk)], check=False)
        shutil.rmtree(disk, ignore_errors=True)


COUNT_ON_A_FULL_DISK = """
import sys
from pathlib import Path
from yullu_cli.supervisor import _metrics_dir
run = Path(sys.argv[1])
folder = _metrics_dir(run)  # before prometheus_client is imported, as `yullu serve` does
try:
    with open(run / "filler", "wb", buffering=0) as fh:
        while True:
            fh.write(b"x" * 4096)
except OSError:
    pass
from yullu_cli.supervised import _count_restart
_count_restart("postgres")  # what the supervisor does first when the embedded PostgreSQL is gone
print(folder, flush=True)
"""


def test_the_supervisor_counting_a_restart_on_a_full_home_disk_does_not_die(tmp_path: Path) -> None:
    """prometheus_client maps its metric files into memory: with the files under $YULLU_HOME/run
    and that disk full, the supervisor's first restart count wrote a new page and died of SIGBUS,
    silently, with every child (found killing the postmaster on a full disk, round eight)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    run = Path(tempfile.mkdtemp(prefix="yullu-fullrun-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(run)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    try:
        counted = subprocess.run([sys.executable, "-c", COUNT_ON_A_FULL_DISK, str(run)], env=env, cwd=REPO,
                                 capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert counted.returncode == 0, f"exit {counted.returncode} (-7: SIGBUS) {counted.stderr[-2000:]}"
        folder = Path(counted.stdout.strip())
        assert folder.is_relative_to("/dev/shm") and list(folder.glob("counter_*.db")), folder
    finally:
        subprocess.run(["umount", str(run)], check=False)
        shutil.rmtree(run, ignore_errors=True)
        if "folder" in locals():
            shutil.rmtree(folder.parent, ignore_errors=True)


def test_a_child_that_cannot_start_on_a_full_home_disk_is_waited_for_not_a_crash_loop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With $YULLU_HOME's disk full, beat cannot write its pid file and exits at once: after the
    embedded PostgreSQL was restarted there (beat is stopped meanwhile), four such exits ended the
    site (round eight). They are waited out, as exits while the database is unreachable are."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    home = Path(tempfile.mkdtemp(prefix="yullu-fullhome-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(home)], check=True)
    try:
        with open(home / "filler", "wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"x" * 4096)
        pidfile = home / "beat.pid"
        write = f"import pathlib; pathlib.Path({str(pidfile)!r}).write_text('1234')"  # as beat writes its pid file
        beat = Child("beat", [sys.executable, "-c", write], dict(os.environ))
        database = Database(home, None, owned=False, owner_role=False)  # reachable: the test database
        for _ in range(MAX_QUICK_FAILURES + 1):
            beat.start()
            assert beat.proc is not None and beat.proc.wait(timeout=60) == 1  # OSError: no space left
            on_exit(beat, time.monotonic(), database)  # CrashLoop: the supervisor stops everything
        assert f"exited with code 1; the disk of {home} is full; restarting it in" in capsys.readouterr().err
    finally:
        subprocess.run(["umount", str(home)], check=False)
        shutil.rmtree(home, ignore_errors=True)


def test_a_child_killed_with_9_soon_after_each_start_is_restarted_not_a_crash_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Round nine: `kill -9` of the web process each time /api/status was ready again (10-15 s after
    its start on a loaded machine, inside START_GRACE) ended the whole site at the fourth kill, "killed
    by SIGKILL within 20 s of starting, 4 times in a row; stopping everything". A SIGKILL comes from
    outside (the OOM killer, an operator): restarted with backoff, never a crash loop."""
    from yullu_cli.supervised import CrashLoop

    database = Database(tmp_path, None, owned=False, owner_role=False)  # reachable: the test database
    web = Child("web", [sys.executable, "-c", "import time; time.sleep(120)"], dict(os.environ))
    for _ in range(MAX_QUICK_FAILURES + 1):
        web.start()
        assert web.proc is not None
        web.proc.kill()
        assert web.proc.wait(timeout=60) == -signal.SIGKILL
        on_exit(web, time.monotonic(), database)  # CrashLoop: the supervisor stops everything
    said = capsys.readouterr().err
    assert f"was killed by SIGKILL; restarting it in 16 s (restart {MAX_QUICK_FAILURES + 1})" in said, said
    # The guard is kept for a child that fails by itself at each start (a bad config, a taken port).
    broken = Child("web", [sys.executable, "-c", "raise SystemExit(1)"], dict(os.environ))
    with pytest.raises(CrashLoop, match="exited with code 1 within 20 s of starting, 4 times in a row"):
        for _ in range(MAX_QUICK_FAILURES):
            broken.start()
            assert broken.proc is not None and broken.proc.wait(timeout=60) == 1
            on_exit(broken, time.monotonic(), database)


def test_beat_keeps_sending_its_ticks_after_the_wall_clock_goes_back() -> None:
    """Round nine, a running site under libfaketime set back an hour: beat keeps its heap and each
    entry's last run in wall-clock time, so it slept until the clock caught up: no heartbeat,
    reconcile, dream, prune or anchors tick for an hour. Here the heap and the last runs are moved an
    hour ahead, which is what the scheduler sees when the clock goes back an hour."""
    import heapq

    from celery.beat import event_t

    from yullu_site.beat import ClockSafeScheduler
    from yullu_site.celery import app

    scheduler = ClockSafeScheduler(app=app)
    scheduler._finalize.cancel()  # its sync at exit would meet a test database dropped by then
    sent: list[str] = []
    scheduler.apply_entry = lambda entry, producer=None: sent.append(entry.name)
    scheduler.tick()  # builds the heap
    for entry in scheduler.schedule.values():
        entry.last_run_at = entry.model.last_run_at = timezone.now() + timedelta(hours=1)
    built: list[Any] = scheduler._heap or []
    heap = [event_t(when + 3600, priority, entry) for when, priority, entry in built]
    heapq.heapify(heap)
    scheduler._heap, sent[:] = heap, []  # type: ignore[assignment]  # celery's attribute, typed None
    for _ in range(3 * len(heap)):  # one due entry is sent per tick
        scheduler.tick()
    assert "heartbeat" in sent and "dream-tick" in sent and "reconcile-tick" in sent, sent
    sent.clear()
    for _ in range(3 * len(heap)):  # then each keeps its period: nothing is sent again at once
        scheduler.tick()
    assert sent == [], sent


def test_a_dream_pass_or_a_reconcile_later_than_now_was_before_the_clock_went_back(tmp_path: Path) -> None:
    """Round nine: with the clock set back an hour, a project's last pass (dream) or complete reconcile
    lay an hour ahead, and neither was due again until the clock caught up with it."""
    from dreaming.services import should_dream
    from sync.models import ProjectSyncState
    from sync.tasks import is_due

    now = timezone.now()
    later = now + timedelta(hours=1)
    assert should_dream(now, later, now, 30 * 60, 0, True)
    assert not should_dream(now, now - timedelta(minutes=5), now, 30 * 60, 0, True), "the interval still counts"
    ProjectSyncState.objects.create(project_id="acme/clock", listing_sha256="0" * 64, reconciled_at=later)
    assert is_due("acme/clock", tmp_path, now.timestamp(), 60)  # the log changed since (another listing)
