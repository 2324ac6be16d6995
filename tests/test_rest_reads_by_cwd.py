"""REST names its project as MCP tools do, by `project_id` or `cwd` (docs/contract.md §2): the lists are
narrowed to the checkout's project, a memory or conflict addressed with a checkout must be its project's,
and a read records no location. Real HTTP (uvicorn) with the product's token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.models import Memory, ProjectLocation
from tests.processes import git_repo
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

OURS = "github.com/acme/bycwd"
THEIRS = "github.com/acme/elsewhere"
LISTS = [
    ("/api/memories", "results"),
    ("/api/memories/unrated", "memories"),
    ("/api/memories/rejected", "rejected"),
    ("/api/conflicts", "conflicts"),
    ("/api/retrievals", "retrievals"),
    ("/api/dream/passes", "passes"),
]


@pytest.fixture
def http(live_server_url: str, owner_token: str) -> Any:
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}) as client:
        yield client


def _store(http: httpx.Client, project_id: str, content: str) -> int:
    r = http.post("/api/memories", json={"content": content, "project_id": project_id, "category": "process"})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def test_every_list_and_stats_take_a_cwd_and_show_only_its_project(
    http: httpx.Client, stub_embedder: StubServer, tmp_path: Path
) -> None:
    checkout = git_repo(tmp_path / "bycwd", "git@github.com:acme/bycwd.git")
    ours = _store(http, OURS, "Deploys run `make ship` from main.")
    _store(http, THEIRS, "The other project's migrations run nightly.")
    for path, key in LISTS:
        r = http.get(path, params={"cwd": str(checkout)})
        assert r.status_code == 200, (path, r.text)
        rows = r.json()[key]
        assert all(row["project_id"] == OURS for row in rows), (path, rows)
    listed = http.get("/api/memories", params={"cwd": str(checkout)}).json()["results"]
    assert [m["id"] for m in listed] == [ours]
    stats = http.get("/api/stats", params={"cwd": str(checkout)}).json()
    assert stats["project_id"] == OURS and stats["totals"]["memories"] == 1
    preview = http.get("/api/memories", params={"cwd": str(checkout), "q": "deploy"}).json()
    assert preview["project_id"] == OURS
    assert not ProjectLocation.objects.filter(project_id=OURS).exists(), "a read records no location"


def test_a_memory_read_or_deleted_with_a_cwd_must_be_its_projects(
    http: httpx.Client, stub_embedder: StubServer, tmp_path: Path
) -> None:
    checkout = git_repo(tmp_path / "bycwd", "git@github.com:acme/bycwd.git")
    ours = _store(http, OURS, "Deploys run `make ship` from main.")
    theirs = _store(http, THEIRS, "The other project's migrations run nightly.")
    where = {"cwd": str(checkout)}
    assert http.get(f"/api/memories/{ours}", params=where).json()["id"] == ours
    for method in ("GET", "DELETE"):
        r = http.request(method, f"/api/memories/{theirs}", params=where)
        assert r.status_code == 404 and r.json()["error"] == f"memory {theirs} not found in project {OURS}"
        r = http.request(method, f"/api/memories/{theirs}", params={"project_id": OURS})
        assert r.status_code == 404
    assert Memory.objects.filter(pk=theirs).exists()
    r = http.delete(f"/api/memories/{ours}", params=where)
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert not Memory.objects.filter(pk=ours).exists()


def test_a_cwd_that_does_not_exist_is_one_sentence_on_a_list(http: httpx.Client, tmp_path: Path) -> None:
    r = http.get("/api/memories", params={"cwd": str(tmp_path / "gone")})
    assert r.status_code == 400 and "does not exist" in r.json()["error"]


@pytest.mark.parametrize("path", [path for path, _ in LISTS])
def test_a_malformed_project_id_is_one_sentence_on_a_list(http: httpx.Client, path: str) -> None:
    """It listed as 200 and empty, where MCP's list tools refuse it (review 8)."""
    r = http.get(path, params={"project_id": "x" * 2000})
    assert r.status_code == 400 and "project_id must be" in r.json()["error"], r.text


def test_a_link_a_resolution_or_a_history_addressed_with_a_cwd_must_be_its_projects(
    http: httpx.Client, stub_embedder: StubServer, tmp_path: Path
) -> None:
    # As MCP's link_memories, resolve_conflict and get_memory take project_id/cwd.
    checkout = git_repo(tmp_path / "bycwd", "git@github.com:acme/bycwd.git")
    a = _store(http, THEIRS, "vec:1,0,0 Releases are cut on Thursdays.")
    b = _store(http, THEIRS, "vec:0,1,0 Releases are cut on Fridays.")
    where = {"cwd": str(checkout)}
    r = http.post(f"/api/memories/{a}/links", json={"to": b, "kind": "contradicts", **where})
    assert r.status_code == 404 and r.json()["error"] == f"memory {a} not found in project {OURS}"
    conflict = http.post(f"/api/memories/{a}/links", json={"to": b, "kind": "contradicts", "project_id": THEIRS})
    assert conflict.status_code == 201, conflict.text
    pk = conflict.json()["id"]
    r = http.post(f"/api/conflicts/{pk}/resolve", json={"resolution": "keep_from", **where})
    assert r.status_code == 404 and r.json()["error"] == f"conflict {pk} not found in project {OURS}"
    assert http.get("/api/conflicts", params={"project_id": THEIRS}).json()["conflicts"], "still open"
    assert http.get(f"/api/memories/{a}/history", params=where).status_code == 404
    assert http.get(f"/api/memories/{a}/history", params={"project_id": THEIRS}).json()["id"] == a
    r = http.post(f"/api/conflicts/{pk}/resolve", json={"resolution": "keep_both", "project_id": THEIRS})
    assert r.status_code == 200, r.text
