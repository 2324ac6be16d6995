"""Team sync end to end, the way teams use it: two real servers (uvicorn processes, each with its own
database and home), two git clones of one bare repository, real commits, pushes, pulls and merges.

Each test uses its own bare repository (so its own project id); the two servers are shared by the module.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.conf import settings

from tests.conftest import free_port
from tests.processes import REPO, git, product_env, run_cli, stop, stub_env, wait_ready
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
FIXTURES = Path(__file__).parent / "fixtures" / "go_log"


def commit_and_push(clone: Path, message: str) -> None:
    git(clone, "add", "-A", ".yullu")
    git(clone, "commit", "-q", "-m", message)
    git(clone, "push", "-q", "origin", "HEAD:main")


def pull(clone: Path) -> None:
    git(clone, "pull", "-q", "--no-edit", "origin", "main")  # a merge when both sides committed


def conninfo(dbname: str) -> str:
    db = settings.DATABASES["default"]
    if db["HOST"].startswith("/"):
        return f"postgresql://{db['USER']}@/{dbname}?host={db['HOST']}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{dbname}"


class Machine:
    """One teammate: a server process with its own database and home."""

    def __init__(self, name: str, stub: StubServer, base: Path) -> None:
        self.name, self.db = name, f"yullu_git_{name.lower()}"
        with psycopg.connect(conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.db}"')
        home = base / f"home-{name}"
        self.env = {**product_env(home), "DATABASE_URL": conninfo(self.db), **stub_env(stub.url)}
        (home / "config.toml").write_text("[sync]\nauto_reconcile_on_startup = false\n")
        self.env["YULLU_CONFIG"] = str(home / "config.toml")
        out = run_cli(["token"], self.env, timeout=180)  # migrates the new database, issues a token
        assert out.returncode == 0, out.stderr[-2000:]
        self.token = out.stdout.strip().splitlines()[-1]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "yullu_site.asgi:application", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning"],
            env=self.env, cwd=REPO, start_new_session=True, text=True,
        )  # fmt: skip
        wait_ready(self.url, self.proc)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = httpx.request(
            method, f"{self.url}/api/{path}", json=body, headers={"authorization": f"Bearer {self.token}"}, timeout=60
        )
        assert response.status_code < 300, response.text
        return response.json()

    def store(self, clone: Path, content: str, **fields: Any) -> dict[str, Any]:
        return self.call("POST", "memories", {"content": content, "cwd": str(clone), **fields})

    def reconcile(self, clone: Path) -> dict[str, Any]:
        return self.call("POST", "reconcile", {"cwd": str(clone)})

    def memories(self, project_id: str) -> dict[str, dict[str, Any]]:
        page = self.call("GET", f"memories?project_id={project_id}&limit=100")
        return {m["uuid"]: m for m in page["results"]}

    def close(self) -> None:
        stop(self.proc)
        with psycopg.connect(conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as s:
        yield s


@pytest.fixture(scope="module")
def machines(
    django_db_setup: Any, django_db_blocker: Any, stub: StubServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Machine, Machine]]:
    base = tmp_path_factory.mktemp("machines")
    with django_db_blocker.unblock():
        a = Machine("A", stub, base)
        try:
            b = Machine("B", stub, base)
        except BaseException:
            a.close()
            raise
        yield a, b
        a.close()
        b.close()


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, str]:
    """A bare repository with one commit, cloned twice; and the project id both clones resolve to."""
    bare = tmp_path / "team.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("team repo\n")
    git(seed, "add", "README.md")
    git(seed, "commit", "-q", "-m", "init")
    git(seed, "push", "-q", "origin", "HEAD:main")
    a, b = tmp_path / "alice", tmp_path / "bob"
    for clone in (a, b):
        git(tmp_path, "clone", "-q", "-b", "main", str(bare), str(clone))
    return a, b, str(bare.with_suffix(""))


def contents(machine: Machine, project_id: str) -> set[str]:
    return {m["content"] for m in machine.memories(project_id).values()}


def test_an_older_teammate_file_that_arrives_late_is_applied(
    machines: tuple[Machine, Machine], clones: tuple[Path, Path, str]
) -> None:
    a, b = machines
    alice, bob, project = clones
    a.store(alice, "Alice: the CI cache key includes the lockfile hash", category="gotcha")
    git(alice, "add", "-A", ".yullu")
    git(alice, "commit", "-q", "-m", "alice's memory, not pushed yet")
    b.store(bob, "Bob: integration tests need the docker compose stack", category="process")
    commit_and_push(bob, "bob's memory")
    assert b.reconcile(bob)["created"] == 0  # B has only its own, newer file
    pull(alice)  # a merge: Alice's older file and Bob's newer one
    git(alice, "push", "-q", "origin", "HEAD:main")
    pull(bob)  # Alice's file arrives, older than everything B has reconciled
    result = b.reconcile(bob)
    assert (result["created"], result["parse_errors"]) == (1, [])
    assert "Alice: the CI cache key includes the lockfile hash" in contents(b, project)
    assert a.reconcile(alice)["created"] == 1
    assert contents(a, project) == contents(b, project)


def test_concurrent_offline_edits_end_with_the_later_edit_on_both(
    machines: tuple[Machine, Machine], clones: tuple[Path, Path, str]
) -> None:
    a, b = machines
    alice, bob, project = clones
    stored = a.store(alice, "Releases are cut on Tuesdays", category="process", tags=["release"])
    commit_and_push(alice, "a memory")
    pull(bob)
    assert b.reconcile(bob)["created"] == 1
    on_b = b.memories(project)[stored["uuid"]]
    # Both edit offline; Bob's edit is the later one.
    a.call("PATCH", f"memories/{stored['id']}", {"content": "Releases are cut on Wednesdays"})
    b.call("PATCH", f"memories/{on_b['id']}", {"content": "Releases are cut on Thursdays", "tags": ["release", "ops"]})
    commit_and_push(alice, "alice edits")
    git(bob, "add", "-A", ".yullu")
    git(bob, "commit", "-q", "-m", "bob edits")
    pull(bob)  # merge commit
    git(bob, "push", "-q", "origin", "HEAD:main")
    pull(alice)
    ra, rb = a.reconcile(alice), b.reconcile(bob)
    assert (ra["updated"], rb["updated"]) == (1, 0)  # B already shows the later edit
    for machine in (a, b):
        memory = machine.memories(project)[stored["uuid"]]
        assert (memory["content"], memory["tags"]) == ("Releases are cut on Thursdays", ["release", "ops"])
    assert a.memories(project)[stored["uuid"]]["updated_at"] == b.memories(project)[stored["uuid"]]["updated_at"]


def test_a_poison_file_among_good_ones_is_listed_once_and_blocks_nothing(
    machines: tuple[Machine, Machine], clones: tuple[Path, Path, str]
) -> None:
    a, b = machines
    alice, bob, project = clones
    a.store(alice, "Migrations must be backwards compatible for one release", category="decision")
    logs = alice / ".yullu" / "logs"
    poison = {
        "id": "9f000001-0000-4000-8000-000000000001",
        "type": "create",
        "memory_id": "9f000001-0000-4000-8000-0000000000ff",
        "ts": "2026-06-01T00:00:00Z",
        "content": "too many tags",
        "tags": [f"t{n}" for n in range(25)],
    }
    (logs / "20260601T000000.000000000Z-9f000001.json").write_text(json.dumps(poison))
    (logs / "20260601T000001.000000000Z-9f000002.json").write_text('{"id": "9f000002-", "type": ')
    a.store(alice, "The admin lives under /admin/ behind a login", category="domain")
    commit_and_push(alice, "good and bad files")
    pull(bob)
    first = b.reconcile(bob)
    assert first["created"] == 2
    assert sorted(p["file"] for p in first["parse_errors"]) == [
        "20260601T000000.000000000Z-9f000001.json",
        "20260601T000001.000000000Z-9f000002.json",
    ]
    assert "20" in first["parse_errors"][0]["error"]  # says what is wrong: at most 20 tags
    b.store(bob, "Feature flags are read once per request", category="process")
    commit_and_push(bob, "a later memory")
    pull(alice)
    again = b.reconcile(bob)
    assert again["parse_errors"] == first["parse_errors"] and again["created"] == 0  # not retried, kept listed
    assert a.reconcile(alice)["created"] == 1
    assert contents(a, project) == contents(b, project) and len(contents(a, project)) == 3


def test_a_log_written_by_the_go_program_is_read(
    machines: tuple[Machine, Machine], clones: tuple[Path, Path, str], stub: StubServer
) -> None:
    a, b = machines
    alice, bob, project = clones
    logs = alice / ".yullu" / "logs"
    logs.mkdir(parents=True)
    for fixture in FIXTURES.glob("*.json"):
        shutil.copy(fixture, logs / fixture.name)
    commit_and_push(alice, "history from the Go version")
    pull(bob)
    calls = stub.embed_calls()
    result = b.reconcile(bob)
    assert (result["created"], result["deleted"], result["parse_errors"]) == (2, 0, [])
    assert (result["embeddings_reused"], result["embeddings_computed"]) == (1, 1)
    assert stub.embed_calls() == calls + 1  # only the memory that came without a vector
    memories = b.memories(project)
    deploy = memories["a1b2c3d4-0000-4000-8000-000000000001"]
    assert deploy["content"] == "vec:0,1,0 Deploys run through make release" and deploy["tags"] == ["deploy"]
    assert deploy["created_at"].startswith("2026-06-01T04:12:13.364878")
    assert deploy["updated_at"].startswith("2026-06-02T09:00:00")
    assert memories["a1b2c3d4-0000-4000-8000-000000000002"]["tags"] == []
    assert "a1b2c3d4-0000-4000-8000-000000000003" not in memories  # created, then deleted
    # B's own edit is written in the Go format, so the Go teammate can read it back.
    b.call("PATCH", f"memories/{deploy['id']}", {"tags": ["deploy", "ci"]})
    commit_and_push(bob, "bob edits")
    pull(alice)
    mine = [json.loads(p.read_text()) for p in (alice / ".yullu" / "logs").glob("*.json")]
    assert {e["type"] for e in mine} <= {"create", "update", "delete", "embedding"}
    assert a.reconcile(alice)["created"] == 2
    assert a.memories(project)[deploy["uuid"]]["tags"] == ["deploy", "ci"]
