"""Two people on one server (docs/contract.md §11): attribution of memories, history, verdicts and sync events;
personal memories that stay their owner's on every transport; the audit of admin logins."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from access import services as access_services
from access.models import AuditEntry, Grant
from memories.models import Memory, MemoryChange, RecallFeedback
from tests.mcp_client import call, http_session
from tests.processes import git_repo

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def people(keyword_only: None) -> dict[str, str]:
    """alice and bob, both writers on the project of `repo`, a token each."""
    out = {}
    for name in ("alice", "bob"):
        user = access_services.add_user(name)
        access_services.grant(name, "github.com/acme/team", "write", create=True)
        out[name] = access_services.create_token(user, "laptop").raw
    return out


def test_who_did_what_and_whose_personal_memories(tmp_path: Path, live_server_url: str, people: dict[str, str]) -> None:
    repo = git_repo(tmp_path / "team", "git@github.com:acme/team.git")

    async def as_alice() -> tuple[Any, Any]:
        async with http_session(live_server_url, people["alice"]) as s:
            team = await call(s, "store_memory", content="Deploys run through make ship on Tuesdays.", cwd=str(repo))
            mine = await call(
                s, "store_memory", content="Answer me in British English, always.", scope="user", cwd=str(repo)
            )
            return team, mine

    (team_err, team), (mine_err, mine) = asyncio.run(as_alice())
    assert not team_err and not mine_err, (team, mine)
    assert team["project_id"] == "github.com/acme/team" and mine["project_id"].startswith("~user:")

    async def as_person(name: str) -> tuple[Any, Any, Any]:
        async with http_session(live_server_url, people[name]) as s:
            found = await call(s, "retrieve_memories", query="British English deploys ship", cwd=str(repo))
            block = await call(s, "build_context", query="British English deploys ship", cwd=str(repo))
            listed = await call(s, "list_memories", cwd=str(repo))
            return found[1], block[1], listed[1]

    found, block, listed = asyncio.run(as_person("bob"))
    contents = [h["content"] for h in found["results"]]
    assert "Deploys run through make ship on Tuesdays." in contents
    assert "Answer me in British English, always." not in contents, "alice's personal memory is hers"
    assert "British English" not in block["context"]
    assert listed["memories"][0]["created_by"] == "alice" and listed["memories"][0]["updated_by"] == "alice"
    alice_found, alice_block, _ = asyncio.run(as_person("alice"))
    assert "Answer me in British English, always." in [h["content"] for h in alice_found["results"]]
    assert "British English" in alice_block["context"]

    with httpx.Client(
        base_url=live_server_url, headers={"Authorization": f"Bearer {people['bob']}"}, timeout=60
    ) as bob:
        assert bob.get(f"/api/memories/{mine['id']}").status_code == 404, "like a memory that does not exist"
        assert (
            bob.post("/api/memories/recall", json={"project_id": mine["project_id"], "query": "x"}).status_code == 404
        )
        changed = bob.patch(f"/api/memories/{team['id']}", json={"tags": ["deploy"]}).json()
        assert (changed["created_by"], changed["updated_by"]) == ("alice", "bob")
        history = bob.get(f"/api/memories/{team['id']}/history").json()["history"]
        assert [(h["action"], h["user"]) for h in history] == [("created", "alice"), ("updated", "bob")]
        recall = bob.post("/api/memories/recall", json={"cwd": str(repo), "query": "deploys make ship"}).json()
        verdict = {"recall_id": recall["recall_id"], "memory_id": team["id"], "useful": True}
        assert bob.post("/api/recalls/feedback", json=verdict).status_code == 200
    assert RecallFeedback.objects.filter(user__username="bob").count() == 1
    assert MemoryChange.objects.filter(user__username="bob").exists()

    events = [json.loads(p.read_text()) for p in sorted((repo / ".yullu" / "logs").glob("*.json"))]
    assert {(e["type"], e.get("author")) for e in events} >= {("create", "alice"), ("update", "bob")}
    assert not any("British" in json.dumps(e) for e in events), "personal memories never reach a team log"
    assert Memory.objects.filter(project_id=mine["project_id"]).count() == 1


def test_an_admin_login_is_audited(owner: Any) -> None:
    client = Client()
    response = client.post("/admin/login/", {"username": "owner", "password": "owner-pass-123", "next": "/admin/"})
    assert response.status_code == 302
    entry = AuditEntry.objects.get(action="admin.login")
    assert entry.actor == owner and entry.target == "owner"


def test_a_staff_member_sees_only_the_projects_they_have_a_role_on(keyword_only: None) -> None:
    from memories.scope import Scope
    from memories.write.create import store_memory

    store_memory(Scope("acme/granted", None), "Granted project: builds run on Jenkins.", "process")
    hidden = store_memory(Scope("acme/hidden", None), "Hidden project: the VPN key rotates monthly.", "process").memory
    reviewer = access_services.add_user("reviewer")
    reviewer.is_staff = True
    reviewer.save()
    from django.contrib.auth.models import Permission

    # Django's model permissions open the memory pages; the grant decides which projects they show.
    reviewer.user_permissions.add(*Permission.objects.filter(content_type__app_label="memories"))
    access_services.grant("reviewer", "acme/granted", "admin", create=True)
    client = Client()
    client.force_login(reviewer)
    listing = client.get("/admin/memories/memory/").content.decode()
    assert "Jenkins" in listing and "VPN" not in listing
    assert client.get(f"/admin/memories/memory/{hidden.pk}/change/").status_code in (302, 404)
    dashboard = client.get("/admin/")
    assert dashboard.status_code == 200 and "acme/hidden" not in dashboard.content.decode()
    review = client.get("/admin/memories/memory/review/").content.decode()
    assert "Jenkins" in review and "VPN" not in review


def test_a_writer_has_no_review_queue_and_only_a_superuser_edits_the_settings_file(keyword_only: None) -> None:
    from memories.scope import Scope
    from memories.write.create import store_memory

    store_memory(Scope("acme/written", None), "Written project: lint runs in pre-commit.", "process")
    writer = access_services.add_user("writer")
    writer.is_staff = True
    writer.save()
    access_services.grant("writer", "acme/written", "write", create=True)
    client = Client()
    client.force_login(writer)
    assert "pre-commit" not in client.get("/admin/memories/memory/review/").content.decode()
    refused = client.post("/admin/memories/memory/settings/", {"retrieval.max_content_chars": "9000"})
    assert refused.status_code == 403 and "superuser" in refused.content.decode()


def test_tokens_grants_and_the_audit_trail_in_the_admin(owner: Any, keyword_only: None) -> None:
    from access.models import ApiToken

    alice = access_services.add_user("alice")
    client = Client()
    client.force_login(owner)
    for page in ("/admin/", "/admin/access/apitoken/", "/admin/access/project/", "/admin/access/auditentry/"):
        assert client.get(page).status_code == 200, page
    made = client.post(
        "/admin/access/apitoken/add/", {"user": alice.pk, "name": "ci", "read_only": "on"}, follow=True
    ).content.decode()
    token = ApiToken.objects.get(user=alice)
    assert token.read_only and "shown once" in made
    client.post(f"/admin/access/apitoken/{token.pk}/delete/", {"post": "yes"})
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    audit = client.get("/admin/access/auditentry/").content.decode()
    assert "token.create" in audit and "token.revoke" in audit


def test_with_open_projects_off_only_a_grant_opens_a_new_project(
    live_server_url: str, people: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC §11: `[access].open_projects` (default true) lets a user create a project by using it and
    # makes them its admin; with false, only grants apply.
    from django.conf import settings

    def store(project_id: str) -> httpx.Response:
        fact = {"content": "Releases are cut on Thursdays.", "project_id": project_id}
        with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {people['alice']}"}) as api:
            return api.post("/api/memories", json=fact)

    monkeypatch.setitem(settings.YULLU, "access", {**settings.YULLU["access"], "open_projects": False})
    refused = store("acme/closed")
    assert refused.status_code == 404 and refused.json()["error"] == (
        "project 'acme/closed' not found, or you have no role on it: one of its admins gives you one "
        "(`yullu grant alice acme/closed read`)."
    )
    assert not Memory.objects.filter(project_id="acme/closed").exists()
    assert not Grant.objects.filter(project__project_id="acme/closed").exists()
    monkeypatch.setitem(settings.YULLU, "access", {**settings.YULLU["access"], "open_projects": True})
    assert store("acme/opened").status_code == 201
    grants = Grant.objects.filter(project__project_id="acme/opened")
    assert [(g.user.get_username() if g.user else None, g.role) for g in grants] == [("alice", "admin")]
