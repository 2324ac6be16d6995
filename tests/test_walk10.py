"""What the tenth walk met on a small team's first day (a team server, two teammates' laptops installed with
`yullu install --server URL --token T`, code anchors, a solo teammate's event log): on a laptop that is a
team server's client, `yullu memories list` created an embedded PostgreSQL and said "0 shown" beside the
team's four memories, and `yullu reconcile` and `yullu dream` ran against that empty database; `yullu
doctor` said a token was "revoked, expired or mistyped" where the server had said "revoked on <date>"; a
teammate's `contradicts` link, applied by reconcile, was attributed in history to whoever ran the reconcile;
`yullu grant ana https://github.com/acme/app.git write` gave a role on a project no checkout ever names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from access.actor import acting_as, actor_for_user
from access.models import ApiToken, Grant
from access.services import add_user, grant, project_key, revoke_grant, revoke_token
from memories import lifecycle
from memories.anchors import stale
from memories.models import Memory, MemoryAnchor, MemoryChange
from memories.scope import resolve
from memories.write import create
from sync.services import reconcile_scope
from tests.conftest import free_port
from tests.processes import git_repo, run_cli
from tests.test_anchors import _fresh_cache, checkout, rewrite  # noqa: F401 (fixtures; the first autouse)
from tests.test_first_hour import fresh_home, postgres_running_under  # noqa: F401 (a fixture)
from yullu_cli.access_commands import _typed_as
from yullu_cli.team_server import client_of

pytestmark = pytest.mark.django_db(transaction=True)


def _laptop(fresh_home: dict[str, str], tmp_path: Path, server: str, token: str) -> dict[str, str]:  # noqa: F811
    laptop = {**fresh_home, "HOME": str(tmp_path / "home"), "YULLU_EMBED_PROVIDER": "none"}
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    (tmp_path / "home" / ".codex").mkdir(parents=True)
    installed = run_cli(["install", "--server", server, "--token", token], laptop)
    assert installed.returncode == 0, installed.stderr
    return laptop


def test_a_team_servers_client_refuses_database_commands_and_creates_no_local_database(
    fresh_home: dict[str, str],  # noqa: F811
    live_server_url: str,
    tmp_path: Path,
) -> None:
    _, raw = ApiToken.issue(User.objects.create_user("ana"), "laptop")
    laptop = _laptop(fresh_home, tmp_path, live_server_url, raw)
    app = git_repo(tmp_path / "app", "git@github.com:acme/app.git")
    here = ["--cwd", str(app)]
    commands = (["memories", "list", *here], ["reconcile", *here], ["dream"], ["serve", "--port", str(free_port())])
    for command in commands:
        refused = run_cli(command, laptop, timeout=180)
        assert refused.returncode == 1, command
        assert refused.stderr.startswith(f"yullu: this install is a client of the team server {live_server_url} ")
        assert f"{live_server_url}/admin/" in refused.stderr and "Traceback" not in refused.stderr
        assert refused.stdout == "" and "creating the database" not in refused.stderr
        assert "stopping" not in refused.stderr, "nothing was started"
    base = Path(fresh_home["YULLU_HOME"]).parent
    assert not list(base.rglob("pgdata")), "no local cluster was created"
    assert not postgres_running_under(str(base))

    # Another YULLU_HOME on the same laptop is a server of its own: the client's hooks do not name it.
    assert client_of(tmp_path / "home", Path(laptop["YULLU_HOME"])) == live_server_url
    assert client_of(tmp_path / "home", tmp_path / "own-server") == ""


def test_doctor_says_the_token_was_revoked_and_when(
    fresh_home: dict[str, str],  # noqa: F811
    live_server_url: str,
    tmp_path: Path,
) -> None:
    token, raw = ApiToken.issue(User.objects.create_user("bo"), "laptop")
    laptop = _laptop(fresh_home, tmp_path, live_server_url, raw)
    with acting_as(actor_for_user(User.objects.create_superuser("lead"))):
        revoke_token(token.pk)  # `yullu tokens revoke ID` on the server: the audit trail knows when
    doctor = run_cli(["doctor"], laptop, timeout=180)
    assert doctor.returncode == 1
    assert f"FAIL  server    {live_server_url} refuses this token (it was revoked on 20" in doctor.stdout, doctor.stdout
    assert "UTC): its admin makes a new one" in doctor.stdout


def _event(repo: Path, n: int, kind: str, memory: str, **fields: Any) -> None:
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    event = {"id": f"00000000-0000-4000-8000-{n:012d}", "type": kind, "memory_id": memory, **fields}
    (folder / f"teammate-{n}.json").write_text(json.dumps({**event, "ts": f"2026-06-01T00:00:{n:02d}Z"}))


def test_a_teammates_link_and_supersede_are_theirs_in_history_not_the_reconcilers(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    first, second, third = (f"3333333{i}-3333-4333-8333-333333333333" for i in range(3))
    _event(repo, 1, "create", first, content="Local() is our context-local storage.", tags=[], author="Ana")
    _event(repo, 2, "create", second, content="Use threading.local for request state.", tags=[], author="Bo Berg")
    _event(repo, 3, "update", second, links=[{"kind": "contradicts", "to": first}], author="Bo Berg")
    _event(repo, 4, "create", third, content="Local() replaces threading.local everywhere.", tags=[], author="Cy")
    _event(repo, 5, "update", third, supersedes=[first], author="Cy")
    ana = add_user("ana")
    grant("ana", resolve(None, str(repo)).project_id, "write", create=True)
    with acting_as(actor_for_user(ana)):  # a team server's user runs the reconcile
        assert reconcile_scope(resolve(None, str(repo)))["created"] == 3

    def who(uuid: str, action: str) -> list[str]:
        rows = MemoryChange.objects.filter(memory_uuid=uuid, action=action)
        return [r.author or (r.user.get_username() if r.user else "") for r in rows]

    assert who(second, "linked") == ["Bo Berg"]
    assert who(third, "supersedes") == ["Cy"] and who(first, "superseded") == ["Cy"]
    recent = lifecycle.history_summary(Memory.objects.get(uuid=second))["recent"]
    assert [r["by"] for r in recent] == ["Bo Berg", "Bo Berg"]


@pytest.mark.parametrize(
    ("typed", "project"),
    [
        ("https://github.com/acme/minipkg.git", "github.com/acme/minipkg"),
        ("git@github.com:acme/minipkg.git", "github.com/acme/minipkg"),
        ("ssh://git@git.acme.internal:2222/team/app.git", "git.acme.internal:2222/team/app"),
        ("github.com/acme/minipkg", "github.com/acme/minipkg"),
        ("notes@1a2b3c4d", "notes@1a2b3c4d"),  # a folder's id outside git is no URL
        ("/srv/git/app", "/srv/git/app"),
    ],
)
def test_a_grant_on_a_clone_url_is_on_the_project_its_checkouts_name(typed: str, project: str, owner: Any) -> None:
    add_user("ana")
    assert grant("ana", typed, "write", create=True)["project_id"] == project
    assert list(Grant.objects.values_list("project__project_id", flat=True)) == [project]
    assert project_key(typed) == project
    assert _typed_as(typed, project) == ("" if typed == project else f" (the project id of {typed})")
    assert revoke_grant("ana", typed)["project_id"] == project and not Grant.objects.exists()


def test_a_store_through_a_granted_clone_url_reaches_the_project(
    repo: Path, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The walk's order: the lead grants first (typing the URL), the teammate's checkout then stores; with
    # open_projects off only that grant opens the project.
    monkeypatch.setitem(settings.YULLU, "access", {**settings.YULLU["access"], "open_projects": False})
    ana = add_user("ana")
    grant("ana", "git@github.com:acme/app.git", "write", create=True)
    with acting_as(actor_for_user(ana)):
        stored = create.store_memory(resolve(None, str(repo)), "Releases are cut on Thursdays.", "process")
    assert stored.memory.project_id == "github.com/acme/app"


def test_the_stale_diff_of_a_cited_span_names_the_files_lines(
    checkout: Path,  # noqa: F811
    keyword_only: None,
) -> None:
    # The walk: AsyncToSync.__call__ (sync.py:261-376) edited; the Stale page's hunk said "@@ -1,4 +1,7 @@".
    scope = resolve(None, str(checkout))
    stored = create.store_memory(
        scope, "Clock.later adds seconds to now", "domain", anchors=["app/clock.py::Clock.later"]
    )
    rewrite(checkout, "return self.now() + seconds", "# seconds may be negative\n        return self.now() + seconds")
    (anchor,) = MemoryAnchor.objects.filter(memory=stored.memory)
    assert (anchor.line_start, anchor.line_end) == (8, 9)
    hunk = next(line for line in stale.diff(anchor).splitlines() if line.startswith("@@"))
    assert hunk == "@@ -8,2 +8,3 @@", stale.diff(anchor)


def test_the_conflicts_queue_says_who_wrote_each_side(repo: Path, owner: Any, keyword_only: None) -> None:
    first, second = (f"4444444{i}-4444-4444-8444-444444444444" for i in range(2))
    _event(repo, 1, "create", first, content="Local() is our context-local storage.", tags=[], author="Ana")
    _event(repo, 2, "create", second, content="Use threading.local for request state.", tags=[], author="Bo Berg")
    _event(repo, 3, "update", second, links=[{"kind": "contradicts", "to": first}], author="Bo Berg")
    assert reconcile_scope(resolve(None, str(repo)))["created"] == 2
    client = Client()
    client.force_login(owner)
    page = client.get("/admin/memories/memory/conflicts/").content.decode()
    assert "Use threading.local for request state." in page
    assert '<span class="y-muted">· Bo Berg · 20' in page and '<span class="y-muted">· Ana · 20' in page, page
