"""The hooks' REST requests run on long-lived threads that keep their database connection."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from django.db.backends.signals import connection_created

from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_prompt_hook_requests_reuse_one_connection_on_a_hook_lane(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    opened: list[str] = []  # names of the threads that opened a database connection

    def record(**kwargs: Any) -> None:
        name = threading.current_thread().name
        if not name.endswith("-warmup"):  # the server's start-up warm-up (a fresh server: run alone), no request's
            opened.append(name)

    auth = {"Authorization": f"Bearer {owner_token}"}
    body = {"project_id": "acme/lanes", "query": "how do we deploy?", "budget_tokens": 300}
    connection_created.connect(record)
    try:
        for _ in range(6):
            response = httpx.post(f"{live_server_url}/api/context", json=body, headers=auth, timeout=30)
            assert response.status_code == 200, response.text
        lanes = [name for name in opened if name.startswith("hook-lane")]
        # Without lanes each request's thread opens its own connection (6); with them, at most one per
        # lane, and none when an earlier test in this process already connected the lanes.
        assert len(opened) <= 4 and lanes == opened, opened
        opened.clear()
        httpx.get(f"{live_server_url}/api/memories", headers=auth, timeout=30).raise_for_status()
        assert opened and not any(name.startswith("hook-lane") for name in opened)  # the rest: Django's threads
    finally:
        connection_created.disconnect(record)
