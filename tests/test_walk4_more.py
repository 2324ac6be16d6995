"""More defects the fourth new-user walk met, each as it was met: REST `PATCH /api/memories/<id>` refusing
`cwd` while MCP's update_memory takes it; `yullu memories list --limit 0`, `yullu users add 'bad/name!'` and
`--project ""` (which fell back to the current folder) all accepted; `yullu import` calling a row that repeats
an earlier row of the same file "already there"; undoing a rejection in the admin losing the memory's importance,
expiry and pinned anchors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memories.models import Memory, MemoryAnchor
from memories.scope import resolve
from tests.processes import git_repo, product_env, run_cli
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db

GIT_ENV = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture
def api(client: Client, owner_token: str) -> Any:
    def call(method: str, path: str, data: Any = None) -> Any:
        fn = getattr(client, method)
        return fn(path, data, HTTP_AUTHORIZATION=f"Bearer {owner_token}", content_type="application/json")

    return call


def checkout(path: Path, origin: str) -> Path:
    git_repo(path, origin)
    (path / "app").mkdir()
    (path / "app" / "clock.py").write_text("class Clock:\n    def now(self):\n        return 0\n")
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), *GIT_ENV, "commit", "-q", "-m", "clock"], check=True)
    return path


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_rest_patch_takes_cwd_and_pins_anchors_against_that_checkout(
    api: Any, tmp_path: Path, stub_embedder: StubServer
) -> None:
    # Found on the walk: PATCH answered "cwd: is not a field this endpoint takes." while MCP's update_memory
    # takes cwd; a memory stored by project id alone could not get anchors over REST.
    mine = checkout(tmp_path / "mine", "git@github.com:acme/app.git")
    other = checkout(tmp_path / "other", "git@github.com:acme/other.git")
    project = resolve(None, str(mine), remember=False).project_id
    pk = api("post", "/api/memories", {"content": "vec:1,0,0 the clock", "project_id": project}).json()["id"]
    r = api("patch", f"/api/memories/{pk}", {"cwd": str(mine), "anchors": ["app/clock.py::Clock.now"]})
    assert r.status_code == 200, r.content
    pinned = MemoryAnchor.objects.filter(memory_id=pk)
    assert [(a.path, a.symbol, a.commit) for a in pinned] == [("app/clock.py", "Clock.now", head(mine))]
    # Another project's checkout answers like an unknown id, and changes nothing.
    r = api("patch", f"/api/memories/{pk}", {"cwd": str(other), "tags": ["moved"]})
    assert r.status_code == 404 and Memory.objects.get(pk=pk).tags == []


def refused(args: list[str], tmp_path: Path) -> str:
    out = run_cli(args, product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path)))
    assert out.returncode == 1 and "Traceback" not in out.stderr, (args, out.stdout, out.stderr)
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr  # one sentence
    return out.stderr.strip()


@pytest.mark.parametrize("op", [["list"], ["search", "anything"]])
def test_a_limit_below_one_is_refused(tmp_path: Path, op: list[str]) -> None:
    # A usage error since fixes10 (exit 2 with the usage line, as `--limit abc` always was).
    out = run_cli(["memories", *op, "--project", "acme/app", "--limit", "0"], product_env(tmp_path / "yhome"))
    assert out.returncode == 2, out.stderr
    said = out.stderr.strip().splitlines()[-1]
    assert said.endswith("argument --limit: must be a whole number of at least 1, not '0'"), said


@pytest.mark.parametrize("option", [["memories", "list", "--project"], ["dream", "--project-id"]])
def test_an_empty_project_is_refused_like_a_blank_one(tmp_path: Path, option: list[str]) -> None:
    blank = refused([*option, "   "], tmp_path)
    assert refused([*option, ""], tmp_path) == blank == "yullu: project_id must not be empty."


@pytest.mark.django_db(transaction=True)
def test_users_add_refuses_a_name_the_admin_would_refuse(tmp_path: Path) -> None:
    said = refused(["users", "add", "bad/name!"], tmp_path)
    assert said == "yullu: 'bad/name!' is not a user name: use letters, digits and @ . + - _ only."
    assert not get_user_model().objects.filter(username="bad/name!").exists()


@pytest.mark.django_db(transaction=True)
def test_import_counts_rows_repeating_the_file_apart_from_what_was_there(tmp_path: Path, keyword_only: None) -> None:
    # Found on the walk: a file holding one fact twice said "1 already there" on an empty project.
    from memories.scope import Scope
    from memories.write import create

    create.store_memory(Scope("acme/imported", None), "Releases are cut on Tuesdays")
    rows = ["Logs go to Loki", "Releases are cut on Tuesdays", "Staging resets nightly", "Logs go to Loki"]
    export = tmp_path / "export.jsonl"
    lines = [{"format": "yullu-memories", "version": 1}, *({"project_id": "acme/imported", "content": c} for c in rows)]
    export.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    done = run_cli(["import", str(export)], env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["created"], summary["skipped"], summary["repeated"]) == (2, 1, 1)
    assert "2 new, 1 already there, 1 repeated within the file, 0 refused" in done.stderr


REVIEW = "/admin/memories/memory/review/"


def test_undoing_a_rejection_keeps_importance_expiry_and_pinned_anchors(
    client: Client, owner: Any, tmp_path: Path, stub_embedder: StubServer
) -> None:
    # Found on the walk: `u` after a rejection in the admin brought the memory back as normal importance,
    # without its expiry and without the code it cited (RejectedMemory had no fields for them).
    from memories.models import RejectedMemory
    from memories.write import create

    client.force_login(owner)
    mine = checkout(tmp_path / "mine", "git@github.com:acme/app.git")
    scope = resolve(None, str(mine))
    m = create.store_memory(
        scope, "vec:1,0,0 the clock", importance="high", ttl_days=30, anchors=["app/clock.py::Clock.now"]
    ).memory
    pinned = [(a.path, a.symbol, a.commit, a.blob, a.text_hash) for a in MemoryAnchor.objects.filter(memory=m)]
    assert pinned and pinned[0][2] == head(mine)
    client.post(REVIEW, {"action": "rate", "memory_id": m.pk, "rating": "2"})
    assert not Memory.objects.filter(pk=m.pk).exists()
    (mine / "app" / "clock.py").write_text("class Clock:\n    def now(self):\n        return 1\n")  # HEAD moves on
    subprocess.run(["git", "-C", str(mine), *GIT_ENV, "commit", "-qam", "later"], check=True)

    client.post(REVIEW, {"action": "restore", "rejected_id": RejectedMemory.objects.get().pk})

    back = Memory.objects.get(content=m.content)
    assert (back.importance, back.expires_at, back.rating) == ("high", m.expires_at, None)
    again = [(a.path, a.symbol, a.commit, a.blob, a.text_hash) for a in MemoryAnchor.objects.filter(memory=back)]
    assert again == pinned  # as pinned then, not re-pinned at today's HEAD


def test_an_expiry_that_passed_while_archived_is_not_restored(
    client: Client, owner: Any, stub_embedder: StubServer
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memories.models import RejectedMemory

    client.force_login(owner)
    row = RejectedMemory.objects.create(
        uuid="7d2f6a52-3c1e-4c55-9a43-0f3d6c1b2a10",
        project_id="acme/app",
        content="vec:0,1,0 pruned when it expired",
        importance="low",
        expires_at=timezone.now() - timedelta(days=1),
        reason="expired",
    )
    client.post(REVIEW, {"action": "restore", "rejected_id": row.pk})
    back = Memory.objects.current().get(content=row.content)
    assert (back.importance, back.expires_at) == ("low", None)


@pytest.mark.django_db(transaction=True)
def test_undoing_a_rejection_embeds_the_memory_before_its_transaction(
    stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store and the archive row's removal share a transaction; the embedding call (seconds with a
    # remote model) must not run inside it (docs STYLE: embedding happens outside transactions).
    from django.db import connection

    from memories.embedding.embedders import get_embedder
    from memories.models import RejectedMemory
    from memories.write import edit

    row = RejectedMemory.objects.create(
        uuid="0b8c3f7e-5d6a-4e2b-9c1d-2a3b4c5d6e7f",
        project_id="acme/app",
        content="vec:0,0,1 the clock",
        reason="rejected",
    )
    embedder = get_embedder()
    inside: list[bool] = []
    original = type(embedder).embed

    def spy(self: Any, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        inside.append(connection.in_atomic_block)
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(type(embedder), "embed", spy)
    back = edit.restore_rejected(row.pk)
    assert inside == [False], inside
    assert back.content == row.content and not RejectedMemory.objects.filter(pk=row.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_mcp_update_memory_with_cwd_pins_anchors_against_that_checkout(
    tmp_path: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    # Like REST's PATCH: update_memory's cwd was only checked (a read), so a memory stored by project id
    # got its new anchors unpinned ("not checked" forever) until some other write recorded the checkout.
    import asyncio

    from memories.scope import Scope
    from memories.write import create
    from tests.mcp_client import call, http_session

    mine = checkout(tmp_path / "mine", "git@github.com:acme/app.git")
    project = resolve(None, str(mine), remember=False).project_id
    m = create.store_memory(Scope(project, None), "vec:1,0,0 the clock").memory

    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(s, "update_memory", id=m.pk, cwd=str(mine), anchors=["app/clock.py::Clock.now"])

    err, out = asyncio.run(go())
    assert not err, out
    assert [(a.symbol, a.commit) for a in MemoryAnchor.objects.filter(memory=m)] == [("Clock.now", head(mine))]
