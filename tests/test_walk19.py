"""Defects the nineteenth walk (a team's first day with a team server and code anchors) met, each as it was
met: with bob's grant on the project revoked, every hook in his checkout went silent while `yullu doctor`
there said every check was ok (it asked the team server whether it takes the token, not whether the token may
read the folder's project); after src/billing.py was renamed and then changed, the prompt hook's note named the
old path, a file no longer there; anchored stores made before the team server had a checkout of the project
answered `"status": null` and nothing more; bob re-anchored a memory with update_memory and its answer did not
say whether the anchors were pinned. (record-turn losing a session's offline turns: tests/test_hook_offline.py.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User

from access.models import ApiToken, Grant, Project
from memories.scope import resolve
from memories.search.context import build_context
from memories.write import create
from tests.mcp_client import call, http_session
from tests.processes import REPO, git, git_repo, product_env, run_cli
from tests.stubs import StubServer
from tests.test_anchors import CLOCK, _fresh_cache, checkout, commit  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def _folder_check(env: dict[str, str], cwd: Path) -> dict[str, object]:
    ran = subprocess.run(
        [sys.executable, "-m", "yullu_cli.main", "doctor", "--json"],
        env={**env, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return next(c for c in json.loads(ran.stdout)["checks"] if c["check"] == "folder")


def test_doctor_in_a_checkout_says_the_team_server_gives_no_role_on_its_project(
    tmp_path: Path, live_server_url: str
) -> None:
    project = Project.objects.create(project_id="github.com/walk19/app")
    bob = User.objects.create_user("bob")
    _, raw = ApiToken.issue(bob, "laptop")
    env = product_env(tmp_path / "laptop", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert run_cli(["install", "claude", "--server", live_server_url, "--token", raw], env).returncode == 0
    repo = git_repo(tmp_path / "app", "git@github.com:walk19/app.git")

    folder = _folder_check(env, repo)  # no grant (or one revoked): the hooks are refused here
    assert folder["status"] == "warn", folder
    assert "this folder is github.com/walk19/app" in str(folder["detail"])
    assert "you have no role on it" in str(folder["detail"]) and "hooks are silent" in str(folder["fix"])

    Grant.objects.create(project=project, user=bob, role="read")
    folder = _folder_check(env, repo)
    assert folder["status"] == "ok" and "github.com/walk19/app, which your token may read" in str(folder["detail"])
    assert _folder_check(env, tmp_path)["status"] == "ok"  # outside a checkout: no project to ask about


def test_the_context_note_names_where_renamed_code_is_now(
    checkout: Path,  # noqa: F811 (the fixture)
    stub_embedder: StubServer,
) -> None:
    scope = resolve(None, str(checkout))
    create.store_memory(scope, "vec:1,0,0 Clock.now reads the wall clock", anchors=["app/clock.py::Clock.now"])
    git(checkout, "mv", "app/clock.py", "app/timing.py")
    commit(checkout, "rename")
    (checkout / "app" / "timing.py").write_text(CLOCK.replace("return time.time()", "return time.monotonic()"))
    commit(checkout, "monotonic")
    block = build_context(scope.project_id, "vec:1,0,0 what does Clock.now read")["context"]
    assert "(cited code changed since this was written: app/timing.py) vec:1,0,0 Clock.now" in block, block


def test_a_store_whose_anchors_cannot_be_pinned_says_why(
    checkout: Path,  # noqa: F811 (the fixture)
    stub_embedder: StubServer,
) -> None:
    # A team server before its admin gave it a checkout: the laptop sends project_id and anchors.
    away = create.store_memory(resolve("github.com/walk19/lib", None), "vec:1,0,0 f is pure", anchors=["src/x.py::f"])
    answer = away.as_dict()
    assert [a["status"] for a in answer["anchors"]] == [None]  # type: ignore[typeddict-item]
    assert "no checkout of github.com/walk19/lib" in answer["anchors_unpinned"]  # type: ignore[typeddict-item]
    assert "yullu anchors check --cwd" in answer["anchors_unpinned"]  # type: ignore[typeddict-item]
    here = create.store_memory(resolve(None, str(checkout)), "vec:0,1,0 now", anchors=["app/clock.py::Clock.now"])
    assert "anchors_unpinned" not in here.as_dict()  # pinned: nothing to say


def test_an_update_given_anchors_answers_them_as_pinned(
    checkout: Path,  # noqa: F811 (the fixture)
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
) -> None:
    cwd = str(checkout)
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=60) as rest:
        stored = rest.post("/api/memories", json={"content": "vec:1,0,0 the clock reads time", "cwd": cwd})
        pk = stored.json()["id"]
        patched = rest.patch(f"/api/memories/{pk}", json={"cwd": cwd, "anchors": ["app/clock.py::Clock.now"]})
        assert patched.status_code == 200, patched.text
        assert [(a["path"], a["symbol"], a["status"]) for a in patched.json()["anchors"]] == [
            ("app/clock.py", "Clock.now", "ok")
        ]
        assert "anchors" not in rest.patch(f"/api/memories/{pk}", json={"cwd": cwd, "tags": ["t"]}).json()

    async def over_mcp() -> object:
        async with http_session(live_server_url, owner_token) as session:
            err, out = await call(session, "update_memory", id=pk, cwd=cwd, anchors=["app/clock.py::helper"])
            assert not err, out
            return out

    answer = asyncio.run(over_mcp())
    assert [(a["symbol"], a["status"]) for a in answer["anchors"]] == [("helper", "ok")]  # type: ignore[index]
