"""Team sync across "machines": A is this test process, B and C are `yullu reconcile` processes,
each with its own database on the same server, all sharing one temporary git repository."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings

from memories.models import Memory, MemoryVector
from memories.scope import resolve
from memories.write import create, edit
from sync.eventlog import new_event, read_events, write_event
from sync.fold import fold
from sync.schema import Event
from sync.services import ReconcileResult, reconcile_scope
from tests.conftest import free_port
from tests.processes import REPO, product_env, run_cli, spawn, stop, stub_env, wait_ready, wait_until
from tests.stubs import StubServer
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = "git@github.com:acme/teamsync.git"
PROJECT = "github.com/acme/teamsync"


def server_conninfo(dbname: str) -> dict[str, Any]:
    db = settings.DATABASES["default"]
    info = {"user": db["USER"], "dbname": dbname, "host": db["HOST"], "password": db["PASSWORD"]}
    if db["PORT"]:
        info["port"] = db["PORT"]
    return info


def database_url(dbname: str) -> str:
    db = settings.DATABASES["default"]
    if db["HOST"].startswith("/"):
        return f"postgresql://{db['USER']}@/{dbname}?host={db['HOST']}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{dbname}"


@pytest.fixture(scope="session")
def machine_dbs(django_db_setup: Any, django_db_blocker: Any) -> Iterator[dict[str, str]]:
    """Two extra migrated databases, standing for teammates B and C."""
    names = {"B": "yullu_machine_b", "C": "yullu_machine_c"}
    with django_db_blocker.unblock(), psycopg.connect(**server_conninfo("postgres"), autocommit=True) as conn:
        for name in names.values():
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    migrations = [  # both at once: each is mostly a process importing Django and waiting on PostgreSQL
        subprocess.Popen(
            [sys.executable, "manage.py", "migrate", "-v", "0"],
            env={**product_env(Path(settings.YULLU_HOME) / f"home-{name}"), "DATABASE_URL": database_url(name)},
            cwd=REPO,
        )
        for name in names.values()
    ]
    assert [m.wait(timeout=600) for m in migrations] == [0, 0]
    yield {k: database_url(v) for k, v in names.items()}
    with django_db_blocker.unblock(), psycopg.connect(**server_conninfo("postgres"), autocommit=True) as conn:
        for name in names.values():
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def repo_origin() -> str:
    return ORIGIN


class Machine:
    def __init__(self, name: str, url: str, stub: StubServer, model: str, home: Path) -> None:
        self.name, self.url, self.stub, self.model, self.home = name, url, stub, model, home
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "TRUNCATE memories_memory, memories_keyvalue, memories_projectlocation, sync_ledgerentry, "
                "sync_outboxevent, sync_projectsyncstate CASCADE"
            )

    def reconcile(self, repo: Path, **env: str) -> ReconcileResult:
        environ = {
            **product_env(self.home),
            "DATABASE_URL": self.url,
            **stub_env(self.stub.url),
            "YULLU_EMBED_MODEL": self.model,
            **env,
        }
        out = run_cli(["reconcile", "--cwd", str(repo)], environ, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout)

    def rows(self) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url) as conn:
            return conn.execute(
                "SELECT m.uuid::text, m.content, m.tags, m.category, "
                "array(SELECT v.embedder FROM memories_memoryvector v WHERE v.memory_id = m.id ORDER BY 1) "
                "FROM memories_memory m ORDER BY m.id"
            ).fetchall()

    def vector(self, memory_uuid: str) -> list[float]:
        with psycopg.connect(self.url) as conn:
            row = conn.execute(
                "SELECT v.vector::text FROM memories_memoryvector v JOIN memories_memory m "
                "ON m.id = v.memory_id WHERE m.uuid = %s",
                [memory_uuid],
            ).fetchone()
        assert row is not None, f"no vector for {memory_uuid}"
        return json.loads(row[0])


@pytest.fixture
def machines(machine_dbs: dict[str, str], stub_embedder: StubServer, tmp_path: Path) -> dict[str, Machine]:
    return {
        "B": Machine("B", machine_dbs["B"], stub_embedder, "stub-embed", tmp_path / "home-b"),
        "C": Machine("C", machine_dbs["C"], stub_embedder, "stub-embed-c", tmp_path / "home-c"),
    }


def test_the_two_machine_scenario(repo: Path, machines: dict[str, Machine], stub_embedder: StubServer) -> None:
    b = machines["B"]
    scope = resolve(None, str(repo))
    assert scope.project_id == PROJECT
    m = create.store_memory(scope, "vec:1,0,0 Releases are cut from main", "process", ["release"]).memory
    calls = stub_embedder.embed_calls()
    r = b.reconcile(repo)
    assert (r["created"], r["embeddings_reused"], r["embeddings_computed"]) == (1, 1, 0)
    assert stub_embedder.embed_calls() == calls  # zero embed calls on B
    assert b.rows() == [(str(m.uuid), m.content, ["release"], "process", ["openai:stub-embed"])]
    again = b.reconcile(repo)
    counters = ("created", "updated", "deleted", "embeddings_reused", "embeddings_computed", "local_only_logged",
                "events_new")  # fmt: skip
    assert {k: again.get(k) for k in counters} == dict.fromkeys(counters, 0)
    edit.update_memory(m.id, content="vec:0,1,0 Releases are cut from release branches")
    r = b.reconcile(repo)
    assert (r["updated"], r["embeddings_reused"]) == (1, 1)
    assert b.rows()[0][1] == "vec:0,1,0 Releases are cut from release branches"
    assert b.vector(str(m.uuid))[:2] == pytest.approx([0.0, 1.0], abs=1e-5)
    edit.delete_memory(m.id)
    assert b.reconcile(repo)["deleted"] == 1
    assert b.rows() == []


def test_a_different_embedder_computes_and_publishes_its_vector(
    repo: Path, machines: dict[str, Machine], stub_embedder: StubServer
) -> None:
    c = machines["C"]
    m = create.store_memory(resolve(None, str(repo)), "Use the staging DB for load tests", "gotcha").memory
    calls = stub_embedder.embed_calls()
    r = c.reconcile(repo)
    assert (r["created"], r["embeddings_computed"], r["embeddings_reused"]) == (1, 1, 0)
    assert stub_embedder.embed_calls() == calls + 1
    events = read_events(repo / ".yullu" / "logs").events
    ours = [e for _, e in events if e.type == "embedding" and e.embedder == "openai:stub-embed-c"]
    assert len(ours) == 1 and set(ours[0].to_wire()) == {
        "id", "type", "memory_id", "ts", "embedder", "vector", "content_sha256"
    }  # fmt: skip
    before = MemoryVector.objects.count()
    r = reconcile_scope(resolve(None, str(repo)))
    assert (r["created"], r["updated"], r["embeddings_reused"], r["embeddings_computed"]) == (0, 0, 0, 0)
    assert Memory.objects.filter(pk=m.pk).exists() and MemoryVector.objects.count() == before


def test_local_only_rows_are_published_and_picked_up(
    repo: Path, machines: dict[str, Machine], stub_embedder: StubServer
) -> None:
    b = machines["B"]
    with psycopg.connect(b.url) as conn:  # B had a memory before it knew the repo: no event for it
        conn.execute(
            "INSERT INTO memories_memory (uuid, project_id, content, tags, category, created_at, updated_at, "
            "rating_comment) VALUES (gen_random_uuid(), %s, 'vec:0,0,1 B knows this', '{}', 'domain', now(), "
            "now(), '')",
            [PROJECT],
        )
    r = b.reconcile(repo)
    assert r["local_only_logged"] == 1
    r = reconcile_scope(resolve(None, str(repo)))
    assert r["created"] == 1
    assert Memory.objects.get().content == "vec:0,0,1 B knows this"


def _write(repo: Path, name: str, event: dict[str, Any] | str) -> None:
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(event if isinstance(event, str) else json.dumps(event))


U1 = "11111111-1111-4111-8111-111111111111"


def _ev(n: int, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """Event n of memory U1, at second n of a fixed day, in a file named anyhow."""
    event_id = f"00000000-0000-4000-8000-{n:012d}"
    event = {"id": event_id, "type": kind, "memory_id": U1, "ts": f"2026-06-01T00:00:{n:02d}Z", **fields}
    return f"teammate-{n}.json", event


def test_log_edge_cases_apply_safely(repo: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(repo))
    _write(repo, *_ev(1, "update", tags=["orphan"]))  # tags-only update for a memory with no create: skipped
    _write(repo, "bad.json", "{ not json")
    _write(repo, ".20260601T000003.tmp", "partial")
    _write(repo, "README.txt", "not an event")
    r = reconcile_scope(scope)
    assert r["created"] == 0 and Memory.objects.count() == 0
    assert [p["file"] for p in r["parse_errors"]] == ["bad.json"]
    assert reconcile_scope(scope)["parse_errors"] == r["parse_errors"]  # recorded as bad: not retried, kept listed
    _write(repo, *_ev(4, "create", content="wrong-dim vector", tags=[]))
    _write(repo, *_ev(5, "embedding", embedder="openai:stub-embed", vector=[0.1] * 3))
    MemoryVector.objects.all().delete()
    create.store_memory(resolve("other/p", None), "seed so our dimension is known")
    calls = stub_embedder.embed_calls()
    r = reconcile_scope(scope)
    assert (r["created"], r["embeddings_reused"], r["embeddings_computed"]) == (1, 0, 1)
    assert stub_embedder.embed_calls() == calls + 1
    memory = Memory.objects.get(uuid=U1)
    assert MemoryVector.objects.get(memory=memory).dim == 8
    assert memory.tags == [] and memory.created_at.isoformat() == "2026-06-01T00:00:01+00:00"  # from event 1
    _write(repo, *_ev(6, "delete"))
    assert reconcile_scope(scope)["deleted"] == 1
    _write(repo, *_ev(7, "create", content="back again", tags=["x"]))
    r = reconcile_scope(scope)
    assert r["created"] == 1 and Memory.objects.get(uuid=U1).content == "back again"
    again = reconcile_scope(scope)
    assert (again["created"], again["updated"], again["deleted"], again["embeddings_computed"]) == (0, 0, 0, 0)
    assert again["events_new"] == 0


def test_a_teammates_tag_with_a_newline_from_an_earlier_version_applies_with_a_space(
    repo: Path, stub_embedder: StubServer
) -> None:
    """Walk 13: a tag holding a newline or tab is refused on every write now; an event an earlier version
    wrote with one is not a bad file: it applies, the newline read as a space."""
    _write(repo, *_ev(1, "create", content="deploys go through make ship", tags=["release\nflow", "ci\tjob", "ok"]))
    r = reconcile_scope(resolve(None, str(repo)))
    assert (r["created"], r["parse_errors"]) == (1, [])
    assert Memory.objects.get(uuid=U1).tags == ["release flow", "ci job", "ok"]


def test_reuse_off_forces_a_local_embed(repo: Path, stub_embedder: StubServer, tmp_path: Path) -> None:
    (repo / ".yullu").mkdir()
    (repo / ".yullu" / "config.toml").write_text("[sync]\nreuse_embeddings = false\n")
    create.store_memory(resolve("other/p", None), "seed")
    _write(repo, *_ev(1, "create", content="hello", tags=[]))
    _write(repo, *_ev(2, "embedding", embedder="openai:stub-embed", vector=[1.0] + [0.0] * 7))
    r = reconcile_scope(resolve(None, str(repo)))
    assert (r["embeddings_reused"], r["embeddings_computed"]) == (0, 1)


def test_fold_resurrects_and_keeps_vectors_of_the_current_content() -> None:
    events = [
        _ev(1, "create", content="a", tags=["t"]),
        _ev(2, "embedding", embedder="x:1", vector=[1.0]),
        _ev(3, "delete"),
        _ev(4, "update", tags=[]),
        _ev(5, "embedding", embedder="y:2", vector=[2.0]),
    ]
    target = fold([Event.model_validate(e) for _, e in reversed(events)])
    assert target.exists and target.fields["tags"] == [] and target.content == "a"
    assert target.vector_for("x:1") == [1.0] and target.vector_for("y:2") == [2.0]
    changed = fold([Event.model_validate(e) for _, e in [*events, _ev(6, "update", content="b")]])
    assert changed.vector_for("x:1") is None  # older than the content it would describe


def test_events_are_pretty_atomic_files_with_sortable_names(repo: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(repo))
    for i in range(3):
        create.store_memory(scope, f"fact {i}", "decision")
    folder = repo / ".yullu" / "logs"
    names = sorted(p.name for p in folder.iterdir() if json.loads(p.read_text())["type"] == "create")
    assert len(names) == 3 and all(n.endswith(".json") and "T" in n for n in names)
    text = (folder / names[0]).read_text()
    assert text.startswith("{\n  ") and json.loads(text)["category"] == "decision"
    assert [json.loads((folder / n).read_text())["content"] for n in names] == ["fact 0", "fact 1", "fact 2"]


def test_secrets_never_reach_the_log_or_the_database(repo: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(repo))
    with pytest.raises(UserError, match="aws-access-token"):
        create.store_memory(scope, "deploy with AKIA" + "Q3ZKX7LM2VPB4TJW as the key")
    m = create.store_memory(scope, "fine fact").memory
    with pytest.raises(UserError, match="private key"):
        edit.update_memory(m.id, content="-----BEGIN RSA PRIVATE KEY-----\nabc")
    assert Memory.objects.get().content == "fine fact"
    assert sorted(e.type for _, e in read_events(repo / ".yullu" / "logs").events) == ["create", "embedding"]


def test_a_log_of_the_earlier_event_types_is_read_as_create_update_delete_and_embedding(
    repo: Path, stub_embedder: StubServer
) -> None:
    # SPEC §5: files of earlier versions (remember/revise/forget, vectors in a `vectors` map) still apply.
    scope = resolve(None, str(repo))
    unit = [1.0] + [0.0] * 7
    _write(repo, *_ev(1, "remember", content="Deploys go through make ship", tags=["ops"],
                      vectors={"openai:stub-embed": unit}))  # fmt: skip
    calls = stub_embedder.embed_calls()
    r = reconcile_scope(scope)
    assert (r["created"], r["embeddings_reused"], r["embeddings_computed"], r["parse_errors"]) == (1, 1, 0, [])
    assert stub_embedder.embed_calls() == calls, "the logged vector is reused, not computed"
    memory = Memory.objects.get(uuid=U1)
    assert (memory.content, memory.tags) == ("Deploys go through make ship", ["ops"])
    assert MemoryVector.objects.get(memory=memory).dim == 8
    _write(repo, *_ev(2, "revise", content="Deploys go through make release"))
    r = reconcile_scope(scope)
    assert (r["updated"], r["embeddings_computed"]) == (1, 1), "the old vector is of the old content"
    assert Memory.objects.get(uuid=U1).content == "Deploys go through make release"
    _write(repo, *_ev(3, "forget"))
    assert reconcile_scope(scope)["deleted"] == 1
    assert not Memory.objects.filter(uuid=U1).exists()
    read = read_events(repo / ".yullu" / "logs")
    assert sorted(e.type for name, e in read.events if name.startswith("teammate-")) == [
        "create", "delete", "embedding", "update"]  # fmt: skip


@pytest.mark.slow
def test_a_web_process_starting_reconciles_every_known_project(
    repo: Path, stub_embedder: StubServer, tmp_path: Path
) -> None:
    # SPEC §5: reconcile runs on server start ([sync].auto_reconcile_on_startup, default on). No beat
    # runs here: only the start can apply the teammate's file.
    create.store_memory(resolve(None, str(repo)), "Our own fact, so the checkout is a known location")
    teammate = "22222222-2222-4222-8222-222222222222"
    write_event(repo / ".yullu" / "logs", new_event("create", teammate, content="A teammate's fact", tags=[]))
    env = product_env(tmp_path / "home", **stub_env(stub_embedder.url))
    worker = spawn(["-m", "celery", "-A", "yullu_site", "worker", "--concurrency", "1", "--loglevel", "WARNING",
                    "-n", f"startup-{tmp_path.name}@%h"], env)  # fmt: skip
    port = free_port()
    web = spawn(["-m", "uvicorn", "yullu_site.asgi:application", "--host", "127.0.0.1", "--port", str(port),
                 "--log-level", "warning"], env)  # fmt: skip
    try:
        wait_ready(f"http://127.0.0.1:{port}", web)
        wait_until(lambda: Memory.objects.filter(uuid=teammate).exists(), "the start-up reconcile", alive=[worker, web])
        assert Memory.objects.get(uuid=teammate).content == "A teammate's fact"
    finally:
        stop(web)
        stop(worker)


def _write_many(folder: str, count: int) -> None:
    for n in range(count):
        write_event(
            Path(folder), new_event("create", f"00000000-0000-4000-8000-{n:012d}", content=f"fact {n}", tags=[])
        )


@pytest.mark.django_db(transaction=False)
def test_two_writers_at_the_same_moment_never_clobber_each_other(tmp_path: Path) -> None:
    import multiprocessing

    folder = tmp_path / "logs"
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_write_many, args=(str(folder), 200)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    result = read_events(folder)
    assert len(result.events) == 400 and result.parse_errors == []
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_compact_folds_the_log_into_snapshots_a_fresh_teammate_reads_to_the_same_state(
    repo: Path, machines: dict[str, Machine], stub_embedder: StubServer
) -> None:
    from sync.compact import compact

    b = machines["B"]
    scope = resolve(None, str(repo))
    kept = create.store_memory(scope, "vec:1,0,0 Deploys go through make deploy", "process", ["deploy"]).memory
    edit.update_memory(kept.id, content="vec:0,1,0 Deploys go through make release", tags=["deploy", "ci"])
    gone = create.store_memory(scope, "A fact that will be deleted", "gotcha").memory
    edit.delete_memory(gone.id)
    assert b.reconcile(repo)["created"] == 1  # B has applied the history before the compaction
    folder = repo / ".yullu" / "logs"
    before = len(list(folder.iterdir()))
    dry = compact(scope, dry_run=True)
    assert len(list(folder.iterdir())) == before and dry["dry_run"]
    result = compact(scope)
    assert (result["memories"], result["tombstones"], result["files_before"]) == (1, 1, before)
    kinds = sorted(e.type for _, e in read_events(folder).events)
    assert kinds == ["create", "delete", "embedding"] and result["files_after"] == 3
    again = reconcile_scope(scope)
    assert (again["created"], again["updated"], again["deleted"], again["embeddings_computed"]) == (0, 0, 0, 0)
    kept.refresh_from_db()
    on_b = b.reconcile(repo)  # B folds the snapshots to what it already had
    assert (on_b["created"], on_b["updated"], on_b["deleted"]) == (0, 0, 0)
    machines["C"].reconcile(repo)  # a teammate who never saw the old files
    c_rows = machines["C"].rows()
    assert [(r[0], r[1], r[2]) for r in c_rows] == [(str(kept.uuid), kept.content, ["deploy", "ci"])]
    assert [(r[0], r[1], r[2]) for r in b.rows()] == [(str(kept.uuid), kept.content, ["deploy", "ci"])]
    assert compact(scope)["files_after"] == 4  # + C's embedding for its model, kept as a snapshot vector
    names = sorted(p.name for p in folder.iterdir())
    assert compact(scope)["files_after"] == 4 and sorted(p.name for p in folder.iterdir()) == names  # a fixpoint


def test_a_rolled_back_write_leaves_no_event_and_a_flush_lost_in_a_crash_is_swept(
    repo: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from sync import outbox
    from sync.models import OutboxEvent
    from sync.tasks import sweep_outbox

    scope = resolve(None, str(repo))
    logs = repo / ".yullu" / "logs"
    with pytest.raises(RuntimeError), transaction.atomic():
        create.store_memory(scope, "A fact whose transaction fails later")
        raise RuntimeError("the caller's transaction rolls back")
    assert not logs.exists() and OutboxEvent.objects.count() == 0 and Memory.objects.count() == 0
    # The process dies right after the commit, before its on-commit flush writes the file.
    monkeypatch.setattr(outbox.transaction, "on_commit", lambda *args, **kwargs: None)
    m = create.store_memory(scope, "A fact committed just before a crash").memory
    monkeypatch.undo()
    assert not logs.exists() and OutboxEvent.objects.count() == 2  # create + embedding, owed to the log
    assert sweep_outbox() == 0  # a fresh row may still be flushed by its own process
    OutboxEvent.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert sweep_outbox() == 2 and OutboxEvent.objects.count() == 0
    assert {str(e.memory_id) for _, e in read_events(logs).events} == {str(m.uuid)}


def test_the_cli_takes_a_relative_cwd_and_answers_a_user_error_in_one_sentence(
    repo: Path, machines: dict[str, Machine], tmp_path: Path
) -> None:
    import os

    b = machines["B"]
    env = {**product_env(b.home), "DATABASE_URL": b.url}
    out = run_cli(["reconcile", "--cwd", os.path.relpath(repo, REPO)], env, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout)["project_id"] == PROJECT
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    out = run_cli(["reconcile", "--cwd", str(outside)], env, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"{outside} is not inside a git repository" in out.stderr


def test_the_cli_exits_3_naming_each_refused_file_while_the_log_holds_it(
    repo: Path, machines: dict[str, Machine]
) -> None:
    """`yullu reconcile` exited 0 when it refused files (only its JSON's parse_errors named them): a CI job or
    a script could not tell. The good file still applies; a second run, whose ledger already has the files as
    bad, answers the same; once they are gone, exit 0."""
    b = machines["B"]
    env = {**product_env(b.home), "DATABASE_URL": b.url, **stub_env(b.stub.url), "YULLU_EMBED_MODEL": b.model}
    _write(repo, *_ev(1, "create", content="vec:1,0,0 Releases are cut from main", tags=[]))
    _write(repo, "bad.json", "{ not json")
    _write(repo, "evil\x1b[2J.json", "[]")
    for run in ("first", "second"):
        out = run_cli(["reconcile", "--cwd", str(repo)], env, timeout=120)
        assert out.returncode == 3, (run, out.returncode, out.stderr[-2000:])
        result = json.loads(out.stdout)
        assert result["created"] == (1 if run == "first" else 0), result  # the good file applied once
        said = out.stderr.strip().splitlines()
        named = [line.split(": ", 2) for line in said]  # the file (its escape shown, not run) and the reason
        assert [n[:2] for n in named] == [["yullu", "refused bad.json"], ["yullu", "refused evil\\x1b[2J.json"]]
        assert [n[2] for n in named] == [e["error"] for e in result["parse_errors"]], said
        assert "Traceback" not in out.stderr
    assert b.rows()[0][1] == "vec:1,0,0 Releases are cut from main"
    for name in ("bad.json", "evil\x1b[2J.json"):
        (repo / ".yullu" / "logs" / name).unlink()
    out = run_cli(["reconcile", "--cwd", str(repo)], env, timeout=120)
    assert (out.returncode, out.stderr, json.loads(out.stdout)["parse_errors"]) == (0, "", [])
    described = run_cli(["reconcile", "--help"], env)
    assert "the exit code is 3" in " ".join(described.stdout.split()), described.stdout


def test_an_edit_made_while_the_checkout_is_gone_reaches_the_log_from_its_new_place(
    repo: Path, tmp_path: Path, stub_embedder: StubServer
) -> None:
    """Seen on a walk: the checkout moved; an edit through REST (by id, no cwd) wrote no event, so it
    never reached teammates and their next event for the memory silently undid it here."""
    m = create.store_memory(resolve(None, str(repo)), "vec:1,0,0 the nightly job runs at 03:00").memory
    moved = tmp_path / "moved"
    repo.rename(moved)
    edit.update_memory(m.pk, content="vec:1,0,0 the nightly job runs at 04:00")
    assert not any("04:00" in f.read_text() for f in (moved / ".yullu" / "logs").glob("*.json"))
    result = reconcile_scope(resolve(None, str(moved)))
    assert result["updated"] == 0 and Memory.objects.get(pk=m.pk).content.endswith("04:00")
    events = read_events(moved / ".yullu" / "logs").events
    logged = [e for _, e in events if str(e.memory_id) == str(m.uuid) and e.type == "update"]
    assert [e.content for e in logged] == ["vec:1,0,0 the nightly job runs at 04:00"]
