"""What the twelfth walk met on a small team's first day (two solo sites synced through git, then a team server
with users, tokens and grants, code anchors): a teammate's edit applied by reconcile kept `updated_by` naming
whoever had edited the memory here before (the admin said "Updated by admin" beside bob's text); `yullu grant
alice /tmp/origin.git write` (a bare repository's path, the checkouts' origin) opened a project no checkout
names; `yullu users add` made people nobody could log in to the admin as, and a staff reviewer with a `write`
grant read "2 to review" on the dashboard and "Nothing to review" in the queue (a project admin's); a
truncated event file was "bad JSON: Unterminated string starting at at line 5"; `yullu anchors check` said
"changed: asgiref/timeout.py" for a cited line range, which two ranges of one file could not tell apart."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from access.actor import acting_as, actor_for_user
from access.models import Grant
from access.services import add_user, grant, project_key
from memories import lifecycle
from memories.anchors import checks
from memories.models import Memory
from memories.scope import resolve
from memories.wire import memory_to_wire
from memories.write import create
from sync.schema import EventError, parse_bytes
from sync.services import reconcile_scope
from tests.processes import git_repo, product_env, run_cli
from tests.test_anchors import _fresh_cache, checkout, rewrite  # noqa: F401 (fixtures; the first autouse)

pytestmark = pytest.mark.django_db(transaction=True)


def _teammate_event(repo: Path, kind: str, memory: str, **fields: Any) -> None:
    """A teammate's event, dated after everything this machine wrote (a minute from now: not clamped)."""
    folder = repo / ".yullu" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    ts = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    event = {"id": "00000000-0000-4000-8000-000000000012", "type": kind, "memory_id": memory, "ts": ts, **fields}
    (folder / "teammate-12.json").write_text(json.dumps(event))


def test_a_teammates_edit_is_not_attributed_to_whoever_edited_it_here(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    scope = resolve(None, str(repo))
    with acting_as(actor_for_user(owner)):
        stored = create.store_memory(scope, "Releases are cut on Thursdays.", "process").memory
    assert stored.updated_by_id == owner.pk
    _teammate_event(repo, "update", str(stored.uuid), content="Releases are cut on Fridays.", author="bob")
    assert reconcile_scope(scope)["updated"] == 1
    stored = Memory.objects.get(pk=stored.pk)
    assert stored.content == "Releases are cut on Fridays."
    assert stored.updated_by_id is None, "bob's text is no local user's: null, the teammate is in history"
    assert stored.created_by_id == owner.pk
    assert memory_to_wire(stored)["updated_by"] == "bob", "the teammate's name from the log (walk 17), not admin"


@pytest.mark.parametrize(
    ("typed", "project"),
    [
        ("/srv/git/app.git", "/srv/git/app"),
        ("/srv/git/app.git/", "/srv/git/app"),
        ("/srv/git/app", "/srv/git/app"),
        ("notes.git", "notes.git"),  # a bare name may be a folder's own id: left alone
    ],
)
def test_a_grant_on_a_bare_repositorys_path_is_on_the_project_its_checkouts_name(
    typed: str, project: str, owner: Any
) -> None:
    add_user("ana")
    assert grant("ana", typed, "write", create=True)["project_id"] == project
    assert list(Grant.objects.values_list("project__project_id", flat=True)) == [project]


def test_a_checkout_of_a_bare_repository_is_the_project_granted_by_its_path(tmp_path: Path, owner: Any) -> None:
    app = git_repo(tmp_path / "app", "/srv/git/app.git")
    assert resolve(None, str(app)).project_id == project_key("/srv/git/app.git") == "/srv/git/app"


def test_a_truncated_event_file_says_bad_json_once() -> None:
    with pytest.raises(EventError) as said:
        parse_bytes(b'{\n  "id": "x",\n  "content": "Releases are cut')
    assert str(said.value) == "bad JSON: Unterminated string starting at line 3"


def test_anchors_check_names_the_cited_lines_of_a_stale_range(
    checkout: Path,  # noqa: F811
    keyword_only: None,
) -> None:
    scope = resolve(None, str(checkout))
    create.store_memory(scope, "Clock.later adds seconds to now", "domain", anchors=["app/clock.py:8-9"])
    create.store_memory(scope, "helper returns one", "domain", anchors=["app/clock.py:12-13"])
    rewrite(checkout, "return self.now() + seconds", "return self.now() + 2 * seconds")
    said = checks.describe(checks.check_project(scope.project_id, checkout))
    assert "  changed: app/clock.py:8-9" in said.splitlines(), said
    assert "12-13" not in said, "the unchanged range is not stale"


def test_a_write_reviewer_is_told_the_review_queue_is_the_project_admins(repo: Path, keyword_only: None) -> None:
    scope = resolve(None, str(repo))
    create.store_memory(scope, "Releases are cut on Thursdays.", "process")  # unrated: for review
    ana = add_user("ana", staff=True)
    grant("ana", scope.project_id, "write", create=True)
    client = Client()
    client.force_login(ana)
    assert client.get("/admin/memories/memory/").status_code == 200, "the reviewers group opens the pages"
    assert '<div class="y-num" id="to-review">0</div>' in client.get("/admin/").content.decode()
    queue = client.get("/admin/memories/memory/review/").content.decode()
    assert "Releases are cut on Thursdays." not in queue
    assert 'id="not-yours">1 unrated memory of projects you may read but are not an admin of' in queue, queue
    first = create.store_memory(scope, "Releases are cut on Fridays.", "process").memory
    lifecycle.link_memories(first.pk, Memory.objects.get(content="Releases are cut on Thursdays.").pk, "contradicts")
    conflicts = client.get("/admin/memories/memory/conflicts/").content.decode()
    assert 'id="not-yours">1 open conflict of projects you may read but are not an admin of' in conflicts
    grant("ana", scope.project_id, "admin", create=True)
    conflicts = client.get("/admin/memories/memory/conflicts/").content.decode()
    assert "Releases are cut on Fridays." in conflicts and "not-yours" not in conflicts
    assert '<div class="y-num" id="to-review">2</div>' in client.get("/admin/").content.decode()
    queue = client.get("/admin/memories/memory/review/").content.decode()
    assert "Releases are cut on Thursdays." in queue and "not-yours" not in queue


@pytest.mark.slow
def test_users_add_staff_prints_a_password_the_admins_login_takes(tmp_path: Path) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    plain = run_cli(["users", "add", "bob"], env)
    assert plain.returncode == 0 and "admin login" not in plain.stdout, plain.stderr
    added = run_cli(["users", "add", "carol", "--staff"], env)
    assert added.returncode == 0, added.stderr
    assert "added staff reviewer carol" in added.stdout
    line = next(line for line in added.stdout.splitlines() if line.startswith("admin login: carol / "))
    password = line.removeprefix("admin login: carol / ").split(" ", 1)[0]
    carol = User.objects.get(username="carol")
    assert carol.is_staff and not carol.is_superuser and carol.check_password(password)
    assert password not in carol.password, "stored hashed"
    assert carol.has_perm("memories.view_memory") and not carol.has_perm("access.view_apitoken")
    login = Client().post("/admin/login/", {"username": "carol", "password": password, "next": "/admin/"})
    assert login.status_code == 302 and login["Location"] == "/admin/", login.content.decode()[:500]


def test_a_team_server_keeps_its_checkout_for_anchors_only_with_sync_off(
    checkout: Path,  # noqa: F811
    keyword_only: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # README's Code anchors: the server's checkout (known from `yullu anchors check --cwd`) is also its team
    # log for the project, unless [sync].enabled = false: then anchors are pinned and no file is written.
    scope = resolve(None, str(checkout))
    create.store_memory(scope, "helper returns one", "domain", anchors=["app/clock.py:12-13"])
    logs = checkout / ".yullu" / "logs"
    assert len(list(logs.glob("*.json"))) == 1, "on: the store's event is written into the checkout"
    monkeypatch.setitem(settings.YULLU, "sync", {**settings.YULLU["sync"], "enabled": False})
    remote = resolve(scope.project_id, None)  # a laptop names the project; the server pins it to its checkout
    stored = create.store_memory(remote, "Clock.later adds seconds to now", "domain", anchors=["app/clock.py:8-9"])
    assert len(list(logs.glob("*.json"))) == 1, "off: nothing more is written"
    (anchor,) = stored.memory.anchors.all()
    assert anchor.commit and anchor.status == "ok"


@pytest.mark.slow
def test_users_staff_lets_an_existing_user_in_with_a_new_password(tmp_path: Path) -> None:
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    assert run_cli(["users", "add", "alice"], env).returncode == 0  # the README before --staff: no admin login
    passwords = []
    for _ in range(2):  # again: a new password (a forgotten one)
        made = run_cli(["users", "staff", "alice"], env)
        assert made.returncode == 0, made.stderr
        assert "alice is a staff reviewer" in made.stdout
        line = next(line for line in made.stdout.splitlines() if line.startswith("admin login: alice / "))
        passwords.append(line.removeprefix("admin login: alice / ").split(" ", 1)[0])
    alice = User.objects.get(username="alice")
    assert (
        passwords[0] != passwords[1] and alice.check_password(passwords[1]) and not alice.check_password(passwords[0])
    )
    assert alice.is_staff and alice.has_perm("memories.change_memory")
    nobody = run_cli(["users", "staff", "nobody"], env)
    assert nobody.returncode == 1 and "no user named 'nobody'" in nobody.stderr and "Traceback" not in nobody.stderr
