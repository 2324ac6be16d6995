"""A `cwd` is a path on the server's machine sent by a token holder: confined to `[server].allowed_roots`,
never recorded by a read, never a personal scope (issue 33); docs/contract.md §2's rules for HTTP, missing folders
and same-named folders outside git (issue 31); look-alike project ids (issue 33)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from access.policy import is_personal
from memories.models import Memory, ProjectLocation
from memories.scope import NO_PROJECT, OUTSIDE_ROOTS, allowed_roots, resolve, resolve_path
from memories.write import create
from sync.eventlog import new_event, read_events, write_event
from sync.services import reconcile_scope
from tests.mcp_client import call, http_session
from tests.processes import git_repo
from tests.stubs import StubServer
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server accepts cwds under tmp_path/allowed only."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    monkeypatch.setitem(settings.YULLU, "server", {**settings.YULLU["server"], "allowed_roots": [str(allowed)]})
    return allowed


def mcp(url: str, token: str, tool: str, **args: Any) -> tuple[bool, Any]:
    async def go() -> tuple[bool, Any]:
        async with http_session(url, token) as s:
            return await call(s, tool, **args)

    return asyncio.run(go())


def test_a_cwd_outside_the_roots_reveals_nothing_and_changes_nothing(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, roots: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    repo = git_repo(outside / "repo", "git@github.com:secret/origin.git")
    (outside / "plain").mkdir()
    probes = [repo, repo / "src", outside / "plain", outside / "missing", Path("/etc"), roots / ".." / "outside"]
    answers = set()
    for cwd in probes:
        for tool, args in [("store_memory", {"content": "a fact"}), ("list_memories", {}), ("reconcile_memories", {})]:
            is_error, text = mcp(live_server_url, owner_token, tool, cwd=str(cwd), **args)
            assert is_error, (tool, cwd, text)
            answers.add(text)
    assert answers == {OUTSIDE_ROOTS}  # one answer: exists or not, repository or not, origin never named
    assert not (repo / ".yullu").exists() and ProjectLocation.objects.count() == 0 and Memory.objects.count() == 0


def test_with_an_explicit_project_id_a_refused_cwd_is_ignored(roots: Path, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "outside", "git@github.com:acme/named.git")
    for cwd in (repo, roots / "missing"):  # a laptop's path sent to a team server, say
        assert resolve("github.com/acme/named", str(cwd)) == resolve("github.com/acme/named", None)
    assert ProjectLocation.objects.count() == 0 and not (repo / ".yullu").exists()


def test_a_symlink_inside_the_roots_does_not_lead_out(roots: Path, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "elsewhere", "git@github.com:secret/linked.git")
    (roots / "link").symlink_to(repo)
    with pytest.raises(UserError, match=r"allowed_roots"):
        resolve(None, str(roots / "link"))


def test_a_repository_above_the_root_is_not_used(roots: Path, tmp_path: Path) -> None:
    git_repo(tmp_path, "git@github.com:secret/above.git")  # tmp_path itself is a checkout holding the root
    folder = roots / "notes"
    folder.mkdir()
    scope = resolve(None, str(folder))
    assert scope.git_root is None and scope.project_id.startswith("notes@")


def test_a_missing_cwd_inside_the_roots_is_an_error(roots: Path) -> None:
    with pytest.raises(UserError, match=r"does not exist"):
        resolve(None, str(roots / "not-there"))
    assert ProjectLocation.objects.count() == 0


def test_roots_default_to_home_locally_and_to_nothing_on_a_team_server(monkeypatch: pytest.MonkeyPatch) -> None:
    server = {**settings.YULLU["server"], "allowed_roots": []}
    monkeypatch.setitem(settings.YULLU, "server", server)
    assert allowed_roots() == [Path.home().resolve()]
    for team in ({"host": "0.0.0.0"}, {"host": "yullu.internal"}, {"trusted_proxies": ["10.0.0.0/8"]}):
        monkeypatch.setitem(settings.YULLU, "server", {**server, **team})
        assert allowed_roots() == [], team
        with pytest.raises(UserError, match=r"accepts no cwd until \[server\].allowed_roots is set"):
            resolve(None, str(Path.home()))
    monkeypatch.setitem(settings.YULLU, "server", server)
    monkeypatch.setattr(settings, "DATABASE_URL", "postgresql://team-db/yullu")
    assert allowed_roots() == []


def test_reads_never_record_a_location(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, roots: Path
) -> None:
    import httpx

    repo = git_repo(roots / "repo", "git@github.com:acme/readonly.git")
    for tool, args in [
        ("list_memories", {}),
        ("retrieve_memories", {"query": "how do we deploy?"}),
        ("build_context", {"query": "how do we deploy?"}),
    ]:
        is_error, result = mcp(live_server_url, owner_token, tool, cwd=str(repo), **args)
        assert not is_error, result
    auth = {"authorization": f"Bearer {owner_token}"}
    for path, body in [("/api/memories/recall", {"query": "deploy?"}), ("/api/context", {"query": "deploy?"})]:
        response = httpx.post(f"{live_server_url}{path}", json={**body, "cwd": str(repo)}, headers=auth)
        assert response.status_code == 200, response.text
    assert ProjectLocation.objects.count() == 0  # beat reconciles recorded locations: reads add none
    assert not mcp(live_server_url, owner_token, "store_memory", content="We deploy with make ship", cwd=str(repo))[0]
    assert ProjectLocation.objects.get().project_id == "github.com/acme/readonly"


def test_over_http_a_call_naming_no_project_is_an_error(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    server_logs = Path(os.getcwd()) / ".yullu" / "logs"  # the in-process server's own folder
    files_before = set(server_logs.glob("*")) if server_logs.exists() else set()
    before = Memory.objects.count()
    for tool, args in [("store_memory", {"content": "a fact"}), ("list_memories", {}), ("reconcile_memories", {})]:
        is_error, text = mcp(live_server_url, owner_token, tool, **args)
        assert is_error and text == NO_PROJECT, (tool, text)
    assert Memory.objects.count() == before
    assert (set(server_logs.glob("*")) if server_logs.exists() else set()) == files_before


def test_same_named_folders_outside_git_do_not_share_memories(roots: Path, stub_embedder: StubServer) -> None:
    one, two = roots / "a" / "notes", roots / "b" / "notes"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    first, second = resolve(None, str(one)), resolve(None, str(two))
    assert first.project_id != second.project_id
    assert first.project_id.startswith("notes@") and second.project_id.startswith("notes@")
    create.store_memory(first, "vec:1,0,0 the notes folder keeps meeting minutes")
    assert resolve(None, str(one)).project_id == first.project_id  # stable
    assert not Memory.objects.filter(project_id=second.project_id).exists()


def test_an_existing_bare_name_project_keeps_resolving(roots: Path, stub_embedder: StubServer) -> None:
    folder = roots / "scratch"
    folder.mkdir()
    create.store_memory(resolve("scratch", None), "vec:0,1,0 stored before ids were qualified")
    assert resolve(None, str(folder)).project_id == "scratch"


@pytest.mark.parametrize("name", ["~user", "~user:1"])
def test_a_path_never_names_the_personal_scope(roots: Path, name: str) -> None:
    folder = roots / name
    folder.mkdir()
    repo = git_repo(roots / "r" / name, None)
    for path in (folder, repo):
        assert not is_personal(resolve(None, str(path)).project_id)
        assert not is_personal(resolve_path(path).project_id)


def test_reconcile_of_a_folder_named_like_the_personal_scope_publishes_no_personal_memory(
    roots: Path, stub_embedder: StubServer, owner: Any
) -> None:
    from memories.scope import user_scope

    create.store_memory(user_scope(), "vec:0,0,1 I prefer pytest over unittest")
    repo = git_repo(roots / "~user", None)
    reconcile_scope(resolve(None, str(repo)))
    logs = repo / ".yullu" / "logs"
    texts = [p.read_text() for p in logs.glob("*.json")] if logs.exists() else []
    assert not any("prefer pytest" in t for t in texts)


def test_reconcile_writes_no_event_for_another_projects_memory(roots: Path, stub_embedder: StubServer) -> None:
    other = create.store_memory(resolve("acme/other", None), "vec:1,1,0 the other project's fact").memory
    repo = git_repo(roots / "this", "git@github.com:acme/this.git")
    scope = resolve(None, str(repo))
    logs = repo / ".yullu" / "logs"
    logs.mkdir(parents=True)
    # A file naming the other project's memory arrives in this repository (copied, or crafted).
    write_event(logs, new_event("create", str(other.uuid), content="the other project's fact", tags=[]))
    reconcile_scope(scope)
    events = read_events(logs).events
    assert [e.type for _, e in events if str(e.memory_id) == str(other.uuid)] == ["create"]  # no embedding event
    assert Memory.objects.get(pk=other.pk).project_id == "acme/other"


def test_project_ids_are_normalised_and_look_alikes_refused(stub_embedder: StubServer) -> None:
    assert resolve("ｇｉｔｈｕｂ.ｃｏｍ/acme/app", None).project_id == "github.com/acme/app"  # full-width
    assert resolve("github.com/acme\u200b/app", None).project_id == "github.com/acme/app"  # zero-width space
    create.store_memory(resolve("github.com/acme/app", None), "vec:1,0,1 we deploy with make ship")
    for lookalike in ("github.com/\u0430cme/app", "github.com/acme/\u0430pp", "github.c\u03bfm/acme/app"):
        with pytest.raises(UserError, match="look-alike"):
            resolve(lookalike, None)
    assert resolve("проект", None).project_id == "проект"  # non-Latin names imitating nothing stay allowed


def test_the_event_log_lists_no_look_alike_project(stub_embedder: StubServer) -> None:
    create.store_memory(resolve("acme/pay", None), "vec:1,0,0 payments retry three times")
    with pytest.raises(UserError):
        create.store_memory(resolve("\u0430cme/pay", None), "vec:0,1,0 payments never retry")
    assert sorted(set(Memory.objects.values_list("project_id", flat=True))) == ["acme/pay"]
