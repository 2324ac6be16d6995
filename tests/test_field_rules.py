"""One rule per field (memories/write/validation.py), every path: the same bad value gets the same sentence
from the service, REST over HTTP, the MCP SDK client over HTTP, `yullu memories add` and the
admin's add form, and nothing is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from memories.models import Memory
from memories.scope import resolve, validate_project_id
from memories.write import create, validation
from tests.mcp_client import call, http_session
from tests.processes import product_env, run_cli
from yullu_cli import argtypes
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT = "acme/rules"
FACT = "Deploys go through make ship"
NOT_TEXT = None  # a value only JSON can carry (the admin and the CLI take text)


def _sentence(rule: Callable[[], Any]) -> str:
    with pytest.raises(UserError) as raised:
        rule()
    return str(raised.value)


# (field, the value as JSON, the same value as typed text or NOT_TEXT, the rule that judges it)
CASES: list[tuple[str, Any, str | None, Callable[[Any], Any]]] = [
    ("category", "convention", "convention", validation.clean_category),
    ("category", 7, NOT_TEXT, validation.clean_category),
    ("importance", "urgent", "urgent", validation.clean_importance),
    ("importance", 2, NOT_TEXT, validation.clean_importance),
    ("ttl_days", 0, "0", validation.clean_ttl_days),
    ("ttl_days", -5, "-5", validation.clean_ttl_days),
    ("ttl_days", 4000, "4000", validation.clean_ttl_days),
    ("ttl_days", "soon", "soon", validation.clean_ttl_days),
    ("ttl_days", True, NOT_TEXT, validation.clean_ttl_days),
    ("tags", "ci", NOT_TEXT, validation.clean_tags),
    ("tags", [5], NOT_TEXT, validation.clean_tags),
    ("tags", ["x" * 101], "x" * 101, validation.clean_tags),
    ("tags", [f"t{n}" for n in range(21)], ",".join(f"t{n}" for n in range(21)), validation.clean_tags),
    ("content", "", "", validation.clean_content),
    ("content", "   ", "   ", validation.clean_content),
    ("content", "x" * 9000, "x" * 9000, validation.clean_content),
    ("content", "red \x1b[31malert", "red \x1b[31malert", validation.clean_content),
    ("content", 5, NOT_TEXT, validation.clean_content),
    ("project_id", "acme/" + "x" * 600, "acme/" + "x" * 600, validate_project_id),
    ("project_id", "acme/\x1b[31mred", "acme/\x1b[31mred", validate_project_id),
]


def _service(field: str, value: Any) -> str:
    given = {"content": FACT, "project_id": PROJECT, field: value}
    content, project = given.pop("content"), given.pop("project_id")
    return _sentence(lambda: create.store_memory(resolve(project), content, **given, source="cli"))


def _rest(url: str, token: str, field: str, value: Any) -> str:
    body = {"project_id": PROJECT, "content": FACT, field: value}  # field may be project_id
    answer = httpx.post(f"{url}/api/memories", json=body, headers={"authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 400, answer.text
    return str(answer.json()["error"])


def _mcp(url: str, token: str, field: str, value: Any) -> str:
    async def ask() -> tuple[bool, Any]:
        async with http_session(url, token) as session:
            return await call(session, "store_memory", **{"project_id": PROJECT, "content": FACT, field: value})

    is_error, text = asyncio.run(ask())
    assert is_error, text
    return str(text)


def _cli(tmp_path: Path, field: str, text: str) -> str:
    options = {"category": "--category", "importance": "--importance", "ttl_days": "--ttl-days", "tags": "--tags"}
    options |= {"project_id": "--project"}
    args = ["memories", "add", text if field == "content" else FACT]
    if field != "content":
        args.append(f"{options[field]}={text}")
    if field != "project_id":
        args.append(f"--project={PROJECT}")
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    ran = run_cli(args, env)
    if field == "ttl_days":  # a usage error, as --limit 0 (walk 23): the usage line, then the rule's sentence
        assert ran.returncode == 2, ran.stdout + ran.stderr
        return ran.stderr.strip().rpartition("error: argument --ttl-days: ")[2]
    assert ran.returncode == 1, ran.stdout + ran.stderr
    return ran.stderr.strip().removeprefix("yullu: ")


def test_the_cli_states_the_ttl_rule_as_the_service_does() -> None:
    """yullu_cli.argtypes copies the rule (its parser loads no Django): the copy must not drift."""
    assert (argtypes.MIN_TTL_DAYS, argtypes.MAX_TTL_DAYS) == (validation.MIN_TTL_DAYS, validation.MAX_TTL_DAYS)
    assert argtypes.TTL_PROBLEM == validation.TTL_PROBLEM


def _admin(client: Client, field: str, text: str) -> str:
    form = {"project_id": PROJECT, "content": FACT, "category": "", "importance": "", "tags_text": "", "ttl_days": ""}
    form |= {{"tags": "tags_text"}.get(field, field): text, "anchors_text": "", "_save": "Save"}
    answer = client.post("/admin/memories/memory/add/", form)
    assert answer.status_code == 200, answer.status_code  # the form again, not a redirect to the saved memory
    errors = answer.context["adminform"].form.errors
    return " ".join(message for messages in errors.values() for message in messages)


@pytest.mark.parametrize(("field", "value", "text", "rule"), CASES, ids=[f"{c[0]}={c[1]!r:.20}" for c in CASES])
def test_every_path_gives_a_bad_value_the_same_sentence_and_stores_nothing(
    field: str,
    value: Any,
    text: str | None,
    rule: Callable[[Any], Any],
    live_server_url: str,
    owner: Any,
    owner_token: str,
    client: Client,
    keyword_only: None,
    tmp_path: Path,
) -> None:
    expected = _sentence(lambda: rule(value))
    answers = {
        "service": _service(field, value),
        "rest": _rest(live_server_url, owner_token, field, value),
        "mcp": _mcp(live_server_url, owner_token, field, value),
    }
    if text is not NOT_TEXT:
        client.force_login(owner)
        answers["admin"] = _admin(client, field, text)
        answers["cli"] = _cli(tmp_path, field, text)
    assert answers == dict.fromkeys(answers, expected)
    assert not Memory.objects.exists()
