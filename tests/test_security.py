"""Security checks: every /api route needs a token, keys never leave the server, hostile logs are contained."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from sync.eventlog import EventLogError, logs_dir, read_events
from tests.stubs import StubServer

PUBLIC = {"api/status"}


def api_routes() -> list[str]:
    routes: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                routes.append(prefix + str(p.pattern))

    walk(get_resolver().url_patterns, "")
    return [r for r in routes if r.startswith("api/")]


def concrete(route: str) -> str:
    return "/" + route.replace("<int:pk>", "1")


def test_the_url_conf_is_enumerated() -> None:
    routes = api_routes()
    assert "api/memories/recall" in routes and "api/reconcile" in routes and len(routes) >= 15


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post", "patch", "delete"])
def test_every_api_route_but_status_requires_a_token(client: Client, method: str) -> None:
    for route in api_routes():
        if route in PUBLIC:
            continue
        response = getattr(client, method)(concrete(route), content_type="application/json")
        assert response.status_code in (401, 405), f"{method.upper()} /{route} answered {response.status_code}"
        if response.status_code == 401:
            assert "token" in response.content.decode()


@pytest.mark.django_db
def test_keys_never_appear_in_api_responses(
    client: Client, owner_token: str, stub_embedder: StubServer, monkeypatch: Any
) -> None:
    from django.conf import settings

    secret = "sk-live-should-never-leave-1234567890"
    monkeypatch.setitem(settings.YULLU, "openai", {**settings.YULLU["openai"], "api_key": secret})
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    memory = {"content": "vec:1,0,0 Deploys go through the blue/green script", "project_id": "acme/keys"}
    stored = client.post("/api/memories", memory, content_type="application/json", **auth)
    assert stored.status_code == 201, stored.content
    recall = {"query": "vec:1,0,0 how do deploys work?", "project_id": "acme/keys"}
    recalled = client.post("/api/memories/recall", recall, content_type="application/json", **auth)
    assert recalled.status_code == 200 and recalled.json()["results"], recalled.content
    # The key is really in play: every embedding call carried it to the provider.
    assert stub_embedder.embed_calls() >= 2
    assert {r["auth"] for r in stub_embedder.requests} == {f"Bearer {secret}"}
    bodies = [
        stored.content,
        recalled.content,
        client.get("/api/status").content,
        client.get("/api/memories?project_id=acme/keys", **auth).content,
        client.get("/api/usage", **auth).content,
        client.get("/api/stats", **auth).content,
        client.get("/api/schema", **auth).content,
    ]
    assert all(secret.encode() not in body and secret[-10:].encode() not in body for body in bodies)


def test_a_sync_dir_escaping_the_repo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="outside the repository"):
        logs_dir(tmp_path, "../elsewhere")


def test_hostile_log_entries_are_skipped_with_parse_errors(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"type": "forget", "id": "x", "memory_id": "y"}))
    os.symlink(outside, logs / "20260101T000000.000000000Z-aaaaaaaa.json")
    (logs / "20260101T000001.000000000Z-bbbbbbbb.json").write_bytes(b"\xff\xfe not utf-8")
    (logs / "20260101T000002.000000000Z-cccccccc.json").write_text(
        json.dumps(
            {
                "type": "remember",
                "id": "11111111-1111-4111-8111-111111111111",
                "memory_id": "22222222-2222-4222-8222-222222222222",
                "ts": "2026-01-01T00:00:02Z",
                "content": "x",
                "vectors": {"m": "nope"},
            }
        )
    )
    (logs / "20260101T000003.000000000Z-dddddddd.json").write_text("[" * 100000)
    result = read_events(logs)
    assert result.events == []
    assert len(result.parse_errors) == 4
    assert "symlink" in result.parse_errors[0]["error"]


@pytest.mark.django_db
def test_repeated_bad_tokens_are_rate_limited_but_a_working_client_is_not(client: Client, owner_token: str) -> None:
    from access import ratelimit

    good: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    assert client.get("/api/memories", **good).status_code == 200  # verified before the attack
    for _ in range(ratelimit.MAX_FAILURES):
        assert client.get("/api/memories", HTTP_AUTHORIZATION="Bearer yl_guess").status_code == 401
    limited = client.get("/api/memories", HTTP_AUTHORIZATION="Bearer yl_guess")
    assert limited.status_code == 429 and "Too many failed token attempts" in limited.json()["error"]
    assert client.get("/api/memories", **good).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_mcp_rate_limits_bad_tokens(live_server_url: str) -> None:
    import httpx

    from access import ratelimit

    headers = {"authorization": "Bearer yl_guess", "accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    codes = [
        httpx.post(f"{live_server_url}/mcp", json=body, headers=headers).status_code
        for _ in range(ratelimit.MAX_FAILURES + 1)
    ]
    assert codes[:-1] == [401] * ratelimit.MAX_FAILURES and codes[-1] == 429


def test_a_rejected_key_is_echoed_neither_to_the_client_nor_to_the_logs(
    client: Client, owner_token: str, stub_embedder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from django.conf import settings

    secret = "sk-live-should-never-leave-0987654321"
    settings.YULLU["openai"] = {**settings.YULLU["openai"], "api_key": secret}  # stub_embedder restores the cache
    stub_embedder.embed_status = 401
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    with caplog.at_level(logging.DEBUG):
        response = client.post(
            "/api/memories", {"content": "a fact", "project_id": "acme/keys"}, content_type="application/json", **auth
        )
    assert response.status_code in (502, 503) and "error" in response.json()
    assert stub_embedder.requests[-1]["auth"] == f"Bearer {secret}"  # the key did go to the provider
    assert secret not in response.content.decode()
    assert secret not in caplog.text and secret[-10:] not in caplog.text
