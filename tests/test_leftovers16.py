"""The last note's leftovers (lane fixes16): REST's malformed bodies in the product's words, a silent
database answered within its timeout, the outbox's hook without a traceback, a lost port race in one
sentence. Real HTTP, the real embedded PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


# The people and access endpoints, left out of the OpenAPI schema (yullu's own CLI is their client).
ACCESS = [("post", f"/api/access/{what}") for what in ("users", "tokens", "grants", "grants/revoke")]


def _bodied_operations(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of every operation that takes a JSON body, its path's ids made 1."""
    return [
        (method, re.sub(r"\{[^}]+\}", "1", path))
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation
    ]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("{", "the body is not JSON: expecting property name enclosed in double quotes at line 1 column 2."),
        ("[1, ]", "the body is not JSON: expecting value at line 1 column 5."),
        (b'{"content": "caf\xe9"}', "the body is not JSON: it is not UTF-8 text (byte 17)."),
        ("[1, 2]", "the body must be a JSON object, got a list."),
        ('"a fact"', "the body must be a JSON object, got a string."),
        ("null", "the body must be a JSON object, got null."),
        ("7", "the body must be a JSON object, got a number."),
    ],
)
def test_every_endpoint_that_takes_a_body_says_a_malformed_one_in_one_sentence(
    live_server_url: str, owner_token: str, body: str | bytes, said: str
) -> None:
    """DRF said "JSON parse error - Expecting value: line 1 column 2 (char 1)" and "Expected a dictionary, but
    got list.", in its words and not the ones the tools use."""
    headers = {"Authorization": f"Bearer {owner_token}"}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=60) as api:
        operations = _bodied_operations(api.get("/api/schema", params={"format": "json"}).json())
        assert {("post", "/api/memories"), ("patch", "/api/memories/1"), ("post", "/api/reconcile")} <= set(operations)
        operations += ACCESS
        answers = {
            f"{method.upper()} {path}": api.request(
                method, path, content=body, headers={"Content-Type": "application/json"}
            )
            for method, path in operations
        }
    wrong = {
        op: (r.status_code, r.text) for op, r in answers.items() if (r.status_code, r.json()) != (400, {"error": said})
    }
    assert wrong == {}
