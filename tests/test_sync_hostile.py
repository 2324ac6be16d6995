"""A log no file can block (issue 32): a teammate's checkout holding every kind of hostile entry,
committed with real git and reconciled through the real REST path on a loopback port."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.models import Memory
from memories.scope import resolve
from memories.write import create
from sync import services as sync_services
from sync.eventlog import new_event, write_event
from sync.fold import fold
from sync.schema import Event
from sync.services import reconcile_scope
from sync.tasks import reconcile_due
from tests.processes import git_repo, product_env, run_cli, stub_env
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = "git@github.com:acme/hostile.git"
GOOD, FUTURE, DUP, OTHERS = (f"00000000-0000-4000-8000-00000000000{n}" for n in range(1, 5))


def event(n: int, memory: str, kind: str = "create", ts: str = "2026-06-01T00:00:00Z", **fields: Any) -> bytes:
    body = {"id": f"10000000-0000-4000-8000-{n:012d}", "type": kind, "memory_id": memory, "ts": ts, **fields}
    return json.dumps(body).encode()


def git(cwd: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *who, *args], cwd=cwd, env=env, check=True, capture_output=True)


def teammate_log(tmp_path: Path, others_memory: str) -> tuple[Path, dict[bytes, bytes]]:
    """A teammate's repository whose committed log holds the hostile set; returns our clone of it."""
    theirs = git_repo(tmp_path / "theirs", ORIGIN)
    logs = theirs / ".yullu" / "logs"
    logs.mkdir(parents=True)
    files: dict[bytes, bytes] = {
        b"good.json": event(1, GOOD, content="the good fact still arrives"),
        b"\xff\xfe-not-utf8.json": event(2, GOOD, "update", content="from a name that is not UTF-8"),
        b"future.json": event(3, FUTURE, ts="9999-12-31T23:59:59.999999999Z", content="a clock far ahead"),
        b"dup-a.json": event(4, DUP, content="duplicate id, version A"),
        b"dup-b.json": event(4, DUP, content="duplicate id, version B"),
        b"deep.json": b"[" * 200_000 + b"]" * 200_000,
        b"empty.json": b"",
        b"..json": event(5, GOOD, "update", content="hidden"),
        b"..\\..\\escape.json": event(6, GOOD, "update", content="traversal-looking"),
        b"ansi-\x1b]52;c;aGk=\x07.json": event(7, GOOD, "update", content="escape in the name"),
        b"steal.json": event(8, others_memory, "delete", ts="2026-06-02T00:00:00Z"),
        # valid JSON, a list for a type: a TypeError failed every pass of the log with a 500 (round eight)
        b"listed-type.json": event(9, GOOD, ["update"], content="a list for a type"),  # type: ignore[arg-type]
    }
    for name, data in files.items():
        (logs / os.fsdecode(name)).write_bytes(data)
    with open(logs / "big.json", "wb") as fh:  # 50 MB: refused before a byte is read
        fh.write(b" " * (50 * 1024 * 1024))
    (logs / "x.json").mkdir()
    (logs / "x.json" / "inner.txt").write_text("a directory named like an event\n")
    (logs / "link.json").symlink_to("/etc/passwd")
    git(theirs, "add", "-A")
    git(theirs, "commit", "-q", "-m", "hostile log")
    ours = tmp_path / "ours"
    git(tmp_path, "clone", "-q", str(theirs), str(ours))
    git(ours, "remote", "set-url", "origin", ORIGIN)
    os.mkfifo(ours / ".yullu" / "logs" / "pipe.json")  # not from git: must not hang the reader
    return ours, files


def test_one_reconcile_of_a_hostile_log_applies_the_good_and_lists_every_bad_file(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    others = create.store_memory(resolve("acme/other-project", None), "another project's memory").memory
    ours, files = teammate_log(tmp_path, str(others.uuid))
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as api:
        r = api.post("/api/reconcile", json={"cwd": str(ours)}, timeout=120)
        assert r.status_code == 200, r.text
        result = r.json()
        bad = {e["file"] for e in result["parse_errors"]}
        assert bad == {
            "\\xff\\xfe-not-utf8.json",
            "big.json",
            "deep.json",
            "empty.json",
            "x.json",
            "link.json",
            "pipe.json",
            "..json",
            "..\\..\\escape.json",
            "ansi-\\x1b]52;c;aGk=\\x07.json",
            "steal.json",
            "listed-type.json",
        }
        assert len(result["parse_errors"]) == len(bad)  # each once
        errors = {e["file"]: e["error"] for e in result["parse_errors"]}
        assert "another project" in errors["steal.json"]
        assert errors["listed-type.json"] == "unknown event type: a list, not a string"
        assert [c["file"] for c in result["clamped"]] == ["future.json"]
        assert result["created"] == 3
        assert Memory.objects.get(uuid=GOOD).content == "the good fact still arrives"
        assert Memory.objects.filter(pk=others.pk).exists()  # the delete naming it was refused
        expected = max((b"dup-a.json", b"dup-b.json"), key=lambda n: digest(files[n]))
        assert Memory.objects.get(uuid=DUP).content == json.loads(files[expected])["content"]

        again = api.post("/api/reconcile", json={"cwd": str(ours)}, timeout=120).json()
        assert again["parse_errors"] == result["parse_errors"]  # kept listed, not re-read
        assert (again["created"], again["updated"], again["deleted"]) == (0, 0, 0)

        future = Memory.objects.get(uuid=FUTURE)
        assert future.updated_at.year < 9999
        r = api.patch(f"/api/memories/{future.pk}", json={"content": "edited after the future event"})
        assert r.status_code == 200, r.text
        third = api.post("/api/reconcile", json={"cwd": str(ours)}, timeout=120).json()
        assert third["parse_errors"] == result["parse_errors"] and third["updated"] == 0
        assert Memory.objects.get(uuid=FUTURE).content == "edited after the future event"  # no event wins forever
        assert api.post(f"/api/memories/{future.pk}/rate", json={"rating": 8}).status_code == 200
        assert api.delete(f"/api/memories/{future.pk}").status_code in (200, 204)


def digest(data: bytes) -> str:
    """The tiebreak of two events sharing an id and a time, computed here independently of sync.fold."""
    return hashlib.sha256(json.dumps(json.loads(data), sort_keys=True).encode()).hexdigest()


def test_duplicate_ids_with_different_content_fold_the_same_whatever_the_file_order() -> None:
    a = Event.model_validate(json.loads(event(1, DUP, content="A")))
    b = Event.model_validate(json.loads(event(1, DUP, content="B")))
    assert fold([a, b]).content == fold([b, a]).content


def test_a_pass_that_fails_writes_no_file(
    tmp_path: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path / "repo", ORIGIN)
    logs = repo / ".yullu" / "logs"
    write_event(logs, new_event("create", GOOD, content="needs an embedding", tags=[]))
    before = sorted(os.listdir(logs))

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("the database went away mid-pass")

    for name in ("apply_remote_state", "create_remote_many"):  # after the embedding, before any row
        monkeypatch.setattr(sync_services.remote, name, broken)
    for _ in range(3):
        with pytest.raises(RuntimeError):
            reconcile_scope(resolve(None, str(repo)))
    assert sorted(os.listdir(logs)) == before  # no embedding event per failed pass
    monkeypatch.undo()
    result = reconcile_scope(resolve(None, str(repo)))
    assert result["created"] == 1 and len(os.listdir(logs)) == len(before) + 1  # now its embedding


def test_a_bad_committed_config_or_an_escaping_yullu_folder_is_one_sentence_on_every_path(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    repo = git_repo(tmp_path / "repo", ORIGIN)
    (repo / ".yullu").mkdir()
    config = repo / ".yullu" / "config.toml"
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as api:
        config.write_text("[sync]\nfrom_a_newer_version = 1\n[telepathy]\nenabled = true\n")
        r = api.post("/api/memories", json={"content": "stored despite a newer config", "cwd": str(repo)})
        assert r.status_code in (200, 201), r.text
        assert api.post("/api/reconcile", json={"cwd": str(repo)}).status_code == 200

        config.write_text('[sync]\nlog_embeddings = "yes"\n')
        for path, body in [("/api/memories", {"content": "a fact", "cwd": str(repo)}), ("/api/reconcile", {})]:
            r = api.post(path, json=body | {"cwd": str(repo)})
            assert r.status_code == 400, r.text
            said = r.json()["error"]
            assert "[sync].log_embeddings must be true or false" in said and str(config) in said

        outside = tmp_path / "elsewhere"
        outside.mkdir()
        shutil.rmtree(repo / ".yullu")
        (repo / ".yullu").symlink_to(outside)
        for path, body in [("/api/memories", {"content": "a fact"}), ("/api/reconcile", {})]:
            r = api.post(path, json=body | {"cwd": str(repo)})
            assert r.status_code == 400 and "outside the repository" in r.json()["error"], r.text
    assert not list(outside.iterdir())  # nothing written through the symlink
    env = product_env(tmp_path / "home", **stub_env(stub_embedder.url))
    out = run_cli(["reconcile", "--cwd", str(repo)], env)
    assert out.returncode == 1 and "outside the repository" in out.stderr and "Traceback" not in out.stderr

    # A log folder that is a loop of symbolic links (round eight: a RuntimeError, 'Internal error' on
    # every store and reconcile of the project), and a committed config that is not UTF-8.
    (repo / ".yullu").unlink()
    (repo / ".yullu").mkdir()
    (repo / ".yullu" / "logs").symlink_to("loop")
    (repo / ".yullu" / "loop").symlink_to("logs")
    loop = f"the sync folder '.yullu' is a loop of symbolic links; make {repo / '.yullu' / 'logs'} a folder."
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as api:
        for path, body in [("/api/memories", {"content": "a fact"}), ("/api/reconcile", {})]:
            r = api.post(path, json=body | {"cwd": str(repo)})
            assert r.status_code == 400 and r.json()["error"] == loop, r.text
        out = run_cli(["reconcile", "--cwd", str(repo)], env)
        assert out.returncode == 1 and out.stderr.strip() == f"yullu: {loop}", out.stderr
        config.write_bytes(b"[sync]\n# caf\xe9\n")
        r = api.post("/api/memories", json={"content": "a fact", "cwd": str(repo)})
        assert r.status_code == 400 and r.json()["error"] == f"{config}: not UTF-8 text; save it as UTF-8 or delete it."
    assert not Memory.objects.filter(content="a fact").exists()


def test_a_scheduled_reconcile_of_a_checkout_with_a_bad_committed_config_is_one_warning_line(
    tmp_path: Path, stub_embedder: StubServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The reconcile tick met a committed config that is not UTF-8 and logged a 30-line traceback,
    once a tick, for a problem of the checkout (round eight); it is one warning naming it."""
    repo = git_repo(tmp_path / "repo", ORIGIN)
    create.store_memory(resolve(None, str(repo)), "the deploy freeze starts on Fridays")  # its location is known
    (repo / ".yullu").mkdir(exist_ok=True)
    (repo / ".yullu" / "config.toml").write_bytes(b"[sync]\n# caf\xe9\n")
    with caplog.at_level("WARNING", logger="sync.tasks"):
        reconcile_due()
    [said] = [r for r in caplog.records if r.name == "sync.tasks"]
    assert said.exc_info is None and said.levelname == "WARNING", said
    assert said.getMessage().endswith("config.toml: not UTF-8 text; save it as UTF-8 or delete it.")
