"""REST input the API refuses with one clear sentence: oversized bodies, unknown categories, no project."""

from typing import Any

import pytest
from django.test import Client

from dreaming.models import SessionMessage
from memories.models import Memory
from memories.scope import NO_PROJECT
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client: Client, owner_token: str) -> Any:
    def call(method: str, path: str, data: Any = None) -> Any:
        return getattr(client, method)(
            path, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {owner_token}"
        )

    return call


def test_a_ten_megabyte_body_gets_413_with_a_sentence(api: Any) -> None:
    r = api("post", "/api/memories", {"content": "x" * 10_000_000, "project_id": "acme/big"})
    assert r.status_code == 413
    assert "too large" in r.json()["error"] and "MB" in r.json()["error"]
    assert Memory.objects.count() == 0


@pytest.mark.parametrize("category", ["convention", "architecture"])
def test_an_unknown_category_is_400_naming_the_five(api: Any, category: str) -> None:
    r = api("post", "/api/memories", {"content": "We use tabs", "category": category, "project_id": "acme/c"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert category in error and all(c in error for c in ("process", "decision", "gotcha", "domain", "style"))
    assert Memory.objects.count() == 0


def test_a_patch_with_an_unknown_category_changes_nothing(api: Any, stub_embedder: StubServer) -> None:
    pk = api("post", "/api/memories", {"content": "We use tabs", "category": "Style", "project_id": "acme/c"}).json()[
        "id"
    ]
    assert Memory.objects.get(pk=pk).category == "style"
    r = api("patch", f"/api/memories/{pk}", {"category": "convention"})
    assert r.status_code == 400 and "convention" in r.json()["error"]
    assert Memory.objects.get(pk=pk).category == "style"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/memories", {"content": "We deploy on Fridays"}),
        ("/api/memories/recall", {"query": "how do we deploy?"}),
        ("/api/messages", {"session_id": "s1", "messages": [{"role": "user", "content": "hi"}]}),
        ("/api/dream", {}),
        ("/api/reconcile", {}),  # walk 22: "project_id: give project_id or cwd.", its own words
        ("/api/context", {"query": "how do we deploy?"}),
    ],
)
def test_rest_without_project_id_or_cwd_is_400(api: Any, path: str, body: dict[str, Any]) -> None:
    # The sentences MCP's tools give (memories.scope): a blank id is the id's own error, none at all NO_PROJECT.
    blank = api("post", path, {**body, "project_id": "  "})
    assert (blank.status_code, blank.json()["error"]) == (400, "project_id must not be empty.")
    missing = api("post", path, body)
    assert (missing.status_code, missing.json()["error"]) == (400, NO_PROJECT)
    assert Memory.objects.count() == 0 and SessionMessage.objects.count() == 0
