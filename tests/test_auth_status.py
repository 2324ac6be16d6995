import json
import os
import stat
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from access.bootstrap import bootstrap, token_file
from access.models import ApiToken
from yullu_core.locks import LockKey


@pytest.mark.django_db
def test_status_is_public_and_reports_each_part(client: Client) -> None:
    response = client.get("/api/status")
    body = response.json()
    assert set(body) >= {"ready", "version", "database", "broker", "embedder"}
    assert body["database"]["ok"] is True and body["database"]["pgvector"]
    assert body["broker"]["ok"] is True
    assert response.status_code == (200 if body["ready"] else 503)
    assert "api_key" not in json.dumps(body)


@pytest.mark.django_db
def test_status_is_ready_once_the_embedder_is_loaded(client: Client) -> None:
    from memories.embedding.embedders import warm_up

    warm_up()
    response = client.get("/api/status")
    assert response.status_code == 200
    assert response.json()["ready"] is True


@pytest.mark.django_db
def test_api_without_a_token_is_refused(client: Client) -> None:
    response = client.get("/api/memories")
    assert response.status_code == 401
    assert "token" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db
def test_api_with_a_wrong_token_is_refused(client: Client, owner_token: str) -> None:
    response = client.get("/api/memories", HTTP_AUTHORIZATION="Bearer yl_wrong")
    assert response.status_code == 401


@pytest.mark.django_db
def test_api_with_the_token_is_accepted(client: Client, owner_token: str) -> None:
    response = client.get("/api/memories", HTTP_AUTHORIZATION=f"Bearer {owner_token}")
    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.django_db
def test_a_deactivated_users_token_stops_working(client: Client, owner: Any, owner_token: str) -> None:
    owner.is_active = False
    owner.save()
    assert client.get("/api/memories", HTTP_AUTHORIZATION=f"Bearer {owner_token}").status_code == 401


@pytest.mark.django_db
def test_bootstrap_creates_admin_password_and_token_files_privately(client: Client) -> None:
    for name in ("admin-password", "token"):
        (settings.YULLU_HOME / name).unlink(missing_ok=True)
    first = bootstrap()
    second = bootstrap()
    assert first.admin_created and first.token_created
    assert not second.admin_created and not second.token_created
    for path in (first.admin_password_file, token_file()):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    password = first.admin_password_file.read_text().strip()
    login = client.post("/admin/login/", {"username": "admin", "password": password, "next": "/admin/"})
    assert login.status_code == 302 and login["Location"] == "/admin/"
    raw = token_file().read_text().strip()
    assert ApiToken.objects.count() == 1
    owner = ApiToken.objects.get().user
    assert (owner.get_username(), owner.is_superuser) == ("admin", True), "SPEC §11: the single-user owner may do all"
    assert raw not in "".join(ApiToken.objects.values_list("key_hash", flat=True))
    assert client.get("/api/memories", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_bootstrap_does_not_wait_for_a_running_beat() -> None:
    """A running server holds the beat lock for as long as beat runs; `yullu token` (which
    bootstraps) once waited on it forever."""
    import psycopg
    from django.db import connection

    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as server:
        server.execute("SELECT pg_advisory_lock(%s)", [LockKey.BEAT])
        with connection.cursor() as cur:
            cur.execute("SET lock_timeout = '20s'")  # the bug's symptom: LockNotAvailable, not a hang
        try:
            assert bootstrap().admin_password_file.exists()
        finally:
            with connection.cursor() as cur:
                cur.execute("RESET lock_timeout")
