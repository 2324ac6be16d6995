"""Caches that outlive a request answer as the database and the files do now: a write (by any
process) or a config edit shows at the next call, not after a timeout."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from memories.scope import Scope
from memories.search import queries
from memories.search.merged import project_retrieval
from memories.write import create
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db

P = Scope("acme/caches", None)


def test_a_word_searched_before_any_memory_held_it_is_found_once_one_does(stub_embedder: StubServer) -> None:
    create.store_memory(P, "Lunch is at noon on Fridays")
    question = "where is the flux capacitor configured"
    assert queries.search(P.project_id, question, mode="keyword", log=False).results == []
    create.store_memory(P, "The flux capacitor config lives in settings/flux.toml")
    found = queries.search(P.project_id, question, mode="keyword", log=False).results
    assert [h["content"] for h in found] == ["The flux capacitor config lives in settings/flux.toml"]


def test_a_project_config_edit_applies_to_the_next_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    from yullu_core.config import project_user_file

    path = project_user_file("acme/caches")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_text("[retrieval]\nmin_similarity = 0.9\n")
        assert project_retrieval("acme/caches")["min_similarity"] == 0.9
        path.write_text("[retrieval]\nmin_similarity = 0.25\n")
        assert project_retrieval("acme/caches")["min_similarity"] == 0.25
        path.unlink()
        edited: dict[str, Any] = {**settings.YULLU["retrieval"], "min_similarity": 0.3}
        monkeypatch.setitem(settings.YULLU, "retrieval", edited)  # as the admin's settings page does
        assert project_retrieval("acme/caches")["min_similarity"] == 0.3
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.django_db(transaction=True)
def test_a_deleted_token_is_refused_by_mcp_at_once(live_server_url: str, owner: Any) -> None:
    import httpx

    from access.models import ApiToken

    token, raw = ApiToken.issue(owner)
    request: dict[str, Any] = {
        "url": f"{live_server_url}/mcp",
        "json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        "headers": {"accept": "application/json, text/event-stream", "authorization": f"Bearer {raw}"},
    }
    assert httpx.post(**request).status_code != 401  # past the token check (the SDK then wants a session)
    token.delete()  # `yullu token` rotation, or the admin, possibly in another process
    assert httpx.post(**request).status_code == 401
