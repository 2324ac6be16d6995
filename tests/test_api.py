"""REST API status codes and shapes (Django test client, token auth)."""

from typing import Any

import pytest
from django.test import Client

from memories.models import Memory
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client: Client, owner_token: str) -> Any:
    def call(method: str, path: str, data: Any = None, raw: str | None = None) -> Any:
        fn = getattr(client, method)
        body = raw if raw is not None else data
        kwargs = {"content_type": "application/json"} if method != "get" else {}
        return fn(path, body, HTTP_AUTHORIZATION=f"Bearer {owner_token}", **kwargs)

    return call


def test_create_then_get_patch_delete(api: Any, stub_embedder: StubServer) -> None:
    r = api("post", "/api/memories", {"content": "We pin torch", "category": "decision", "project_id": "acme/r"})
    assert r.status_code == 201
    pk = r.json()["id"]
    assert api("get", f"/api/memories/{pk}").json()["category"] == "decision"
    r = api("patch", f"/api/memories/{pk}", {"tags": ["deps"]})
    assert r.status_code == 200 and r.json()["tags"] == ["deps"]
    r = api("delete", f"/api/memories/{pk}")
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert api("get", f"/api/memories/{pk}").status_code == 404


def test_listing_is_cursor_paginated(api: Any, stub_embedder: StubServer) -> None:
    for i in range(5):
        api("post", "/api/memories", {"content": f"fact {i}", "project_id": "acme/p"})
    first = api("get", "/api/memories?project_id=acme/p&limit=2").json()
    assert len(first["results"]) == 2 and first["next"]
    second = api("get", first["next"].split("testserver")[-1]).json()
    assert {m["id"] for m in first["results"]}.isdisjoint(m["id"] for m in second["results"])


def test_recall_returns_ranked_hits_with_a_recall_id(api: Any, stub_embedder: StubServer) -> None:
    api("post", "/api/memories", {"content": "vec:1,0,0 tests need the embedded postgres", "project_id": "acme/q"})
    r = api("post", "/api/memories/recall", {"query": "vec:1,0,0 how do tests run?", "project_id": "acme/q"})
    body = r.json()
    assert r.status_code == 200 and body["recall_id"] and body["results"][0]["rank"] == 1
    retrievals = api("get", "/api/retrievals?project_id=acme/q").json()["retrievals"]
    assert retrievals[0]["recall_id"] == body["recall_id"] and len(retrievals[0]["sent"]) == 1


@pytest.mark.parametrize(
    ("method", "path", "data", "raw", "status", "fragment"),
    [
        ("post", "/api/memories/recall", {"project_id": "x"}, None, 400, "query"),
        ("post", "/api/memories/recall", None, "{not json", 400, "JSON"),
        ("post", "/api/memories/recall", {"query": "x", "limit": 99}, None, 400, "limit"),
        ("post", "/api/memories", {"content": "", "project_id": "x"}, None, 400, "content"),
        ("patch", "/api/memories/999999", {"content": "x"}, None, 404, "not found"),
        ("patch", "/api/memories/999999", {}, None, 400, "nothing to update"),
        ("delete", "/api/memories/999999", None, None, 404, "not found"),
        ("get", "/api/stats?days=0", None, None, 400, "days"),
        ("get", "/api/memories?limit=abc", None, None, 400, "limit"),
    ],
)
def test_bad_input_gets_one_json_error(
    api: Any, method: str, path: str, data: Any, raw: str | None, status: int, fragment: str
) -> None:
    r = api(method, path, data, raw)
    assert r.status_code == status
    assert fragment in r.json()["error"]
    assert Memory.objects.count() == 0


def test_rating_8_keeps_3_archives_and_0_or_11_are_400(api: Any, stub_embedder: StubServer) -> None:
    a = api("post", "/api/memories", {"content": "keep me", "project_id": "acme/r"}).json()["id"]
    b = api("post", "/api/memories", {"content": "drop me", "project_id": "acme/r"}).json()["id"]
    assert api("get", "/api/memories/unrated?project_id=acme/r").json()["memories"][0]["id"] == b
    assert api("post", f"/api/memories/{a}/rate", {"rating": 8}).json()["archived"] is False
    assert api("post", f"/api/memories/{b}/rate", {"rating": 3, "comment": "vague"}).json()["archived"] is True
    for bad in (0, 11):
        r = api("post", f"/api/memories/{a}/rate", {"rating": bad})
        assert r.status_code == 400 and "1 to 10" in r.json()["error"]
    rejected = api("get", "/api/memories/rejected").json()["rejected"][0]
    assert (rejected["rating_comment"], rejected["reason"], rejected["source"]) == ("vague", "rejected", "rest")
    assert rejected["created_at"] and rejected["written_by"]  # where it came from (review 19)


def test_stats_projects_and_usage(api: Any, stub_embedder: StubServer) -> None:
    api("post", "/api/memories", {"content": "one", "project_id": "acme/s", "category": "gotcha"})
    stats = api("get", "/api/stats?project_id=acme/s").json()
    assert stats["totals"]["memories"] == 1 and stats["totals"]["by_category"] == {"gotcha": 1}
    assert stats["per_day"][0]["created"] == 1
    assert api("get", "/api/projects").json()["projects"][0]["project_id"] == "acme/s"
    usage = api("get", "/api/usage").json()
    assert usage["total_calls"] == 1
    assert api("get", "/api/usage/daily").json()["days"][0]["calls"] == 1


def test_the_openapi_schema_needs_a_token(client: Client, api: Any) -> None:
    assert client.get("/api/schema").status_code == 401
    assert api("get", "/api/schema").status_code == 200


def test_unknown_paths_mangled_cursors_and_absurd_windows_are_json_errors(api: Any) -> None:
    missing = api("get", "/api/memories/-4")
    assert missing.status_code == 404 and missing["content-type"] == "application/json"
    assert "no such API endpoint" in missing.json()["error"]
    cursor = api("get", "/api/memories?cursor=%C3%8D%22")
    assert cursor.status_code == 400 and cursor.json()["error"].startswith("cursor:")
    usage = api("get", "/api/usage?since_hours=4.7e16")
    assert usage.status_code == 400 and "since_hours" in usage.json()["error"]
    assert api("get", "/admin/no-such-page/").status_code in (302, 404)  # the admin keeps Django's pages
    nul = api("get", "/api/dream/passes?project_id=acme%00x")  # found by schemathesis: was a 500
    assert nul.status_code == 400 and "NUL" in nul.json()["error"]
    assert api("get", "/admin/memories/memory/?q=a%00b").status_code == 400


def test_a_duplicate_post_answers_200_with_duplicate_of(api: Any, stub_embedder: StubServer) -> None:
    body = {"content": "vec:1,0,0 We pin torch", "project_id": "acme/d", "importance": "high", "ttl_days": 30}
    first = api("post", "/api/memories", body)
    again = api("post", "/api/memories", body)
    assert first.status_code == 201 and first.json()["created"] is True
    assert again.status_code == 200 and again.json()["duplicate_of"] == first.json()["id"]
    assert api("get", f"/api/memories/{first.json()['id']}").json()["importance"] == "high"


def test_superseded_memories_are_listed_only_on_request_and_keep_their_history(
    api: Any, stub_embedder: StubServer
) -> None:
    old = api("post", "/api/memories", {"content": "vec:1,0,0 use make ship", "project_id": "acme/h"}).json()["id"]
    r = api("patch", f"/api/memories/{old}", {"content": "vec:1,0.6,0 use make release", "supersede": True})
    assert r.status_code == 200 and r.json()["id"] != old
    listed = api("get", "/api/memories?project_id=acme/h").json()["results"]
    assert [m["id"] for m in listed] == [r.json()["id"]]
    assert len(api("get", "/api/memories?project_id=acme/h&all=1").json()["results"]) == 2
    # a flag in a query string is 1 or true everywhere (docs/contract.md §3); anything else is one sentence
    assert len(api("get", "/api/memories?project_id=acme/h&all=true").json()["results"]) == 2
    wrong = api("get", "/api/memories?project_id=acme/h&all=maybe")
    assert wrong.status_code == 400 and "all must be true or false" in wrong.text
    history = api("get", f"/api/memories/{old}/history").json()
    assert [c["action"] for c in history["history"]] == ["created", "superseded"]
    assert history["links"][0]["kind"] == "supersedes"


def test_links_conflicts_and_recall_feedback_over_rest(api: Any, stub_embedder: StubServer) -> None:
    a = api("post", "/api/memories", {"content": "vec:1,0,0 deploy Tuesdays", "project_id": "acme/c"}).json()["id"]
    b = api("post", "/api/memories", {"content": "vec:0,1,0 deploy Thursdays", "project_id": "acme/c"}).json()["id"]
    assert api("post", f"/api/memories/{b}/links", {"to": a, "kind": "contradicts"}).status_code == 201
    conflicts = api("get", "/api/conflicts?project_id=acme/c").json()["conflicts"]
    assert len(conflicts) == 1
    r = api("post", f"/api/conflicts/{conflicts[0]['id']}/resolve", {"resolution": "keep_from"})
    assert r.status_code == 200 and api("get", f"/api/memories/{a}").json()["superseded_by"] == b
    recall = api("post", "/api/memories/recall", {"query": "vec:0,1,0 when?", "project_id": "acme/c"}).json()
    ok = api("post", "/api/recalls/feedback", {"recall_id": recall["recall_id"], "memory_id": b, "useful": False})
    assert ok.status_code == 200 and ok.json()["recorded"] is True
    unknown = {"recall_id": "00000000-0000-4000-8000-000000000000", "memory_id": b, "useful": True}
    assert api("post", "/api/recalls/feedback", unknown).status_code == 404
