"""One rule per tool argument (yullu_core/arguments.py and the services' own checks): the same bad
argument gets the same sentence from the service, REST over HTTP and the MCP SDK client over HTTP,
and nothing is logged or buffered. An empty query was an empty result over MCP and a 400 over REST."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from dreaming.models import SessionMessage
from dreaming.services import record_messages, run_dream_pass
from memories import lifecycle
from memories.models import Memory, MemoryEvent
from memories.scope import clean_scope, resolve
from memories.search import stats
from memories.search.context import build_context
from memories.search.merged import Recall
from memories.write import create, edit, validation
from tests.mcp_client import call, http_session
from tests.processes import product_env, run_cli
from yullu_core.errors import UserError

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT = "acme/arguments"
FACT = "Deploys go through make ship"
RECALL_ID = "5b0e8a5e-8c4f-4a83-9d43-3c1f6b1a2f10"  # no recall has it


def _sentence(service: Callable[[], Any]) -> str:
    with pytest.raises(UserError) as raised:
        service()
    return str(raised.value)


def _recall(args: dict[str, Any]) -> Callable[[], Any]:
    return lambda: Recall.judged(**args).run(PROJECT)


# (MCP tool, REST method and path, the bad arguments, the service call they go to)
CASES: list[tuple[str, str, str, dict[str, Any], Callable[[dict[str, Any]], Callable[[], Any]]]] = [
    ("retrieve_memories", "post", "/api/memories/recall", {"query": ""}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "  \n "}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": 5}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "x" * 10001}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": 0}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": 51}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": 2.5}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": True}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": "five"}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "categories": "decision"}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "categories": [5]}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "min_similarity": 2}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "min_similarity": "hi"}, _recall),
    # (an integer too large for a float was an OverflowError: 'Internal error' on both transports)
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "limit": 10**400}, _recall),
    ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy", "min_similarity": 10**400}, _recall),
    ("build_context", "post", "/api/context", {"query": 5}, lambda a: lambda: build_context(PROJECT, **a)),
    ("build_context", "post", "/api/context", {"budget_tokens": 5}, lambda a: lambda: build_context(PROJECT, **a)),
    ("list_memories", "get", "/api/memories", {"limit": 0}, lambda a: lambda: stats.list_memories(PROJECT, **a)),
    ("list_memories", "get", "/api/memories", {"limit": 201}, lambda a: lambda: stats.list_memories(PROJECT, **a)),
    ("list_memories", "get", "/api/memories", {"limit": "x"}, lambda a: lambda: stats.list_memories(PROJECT, **a)),
    ("get_usage", "get", "/api/usage", {"since_hours": -1}, lambda a: lambda: stats.usage_summary(**a)),
    ("get_usage", "get", "/api/usage", {"since_hours": "x"}, lambda a: lambda: stats.usage_summary(**a)),
    ("get_usage", "get", "/api/usage", {"recent_limit": 0}, lambda a: lambda: stats.usage_summary(**a)),
    ("get_usage", "get", "/api/usage", {"recent_limit": "all"}, lambda a: lambda: stats.usage_summary(**a)),
    (
        "record_messages",
        "post",
        "/api/messages",
        {"session_id": "", "messages": [{"role": "user", "content": "hi"}]},
        lambda a: lambda: record_messages(PROJECT, **a),
    ),
    (
        "record_messages",
        "post",
        "/api/messages",
        {"session_id": "s1", "messages": "hi"},
        lambda a: lambda: record_messages(PROJECT, **a),
    ),
    (
        "rate_recall",
        "post",
        "/api/recalls/feedback",
        {"recall_id": "", "memory_id": 1, "useful": True},
        lambda a: lambda: lifecycle.rate_recall(**a),
    ),
    (
        "rate_recall",
        "post",
        "/api/recalls/feedback",
        {"recall_id": RECALL_ID, "memory_id": 1, "useful": "maybe"},
        lambda a: lambda: lifecycle.rate_recall(**a),
    ),
    (
        "rate_recall",
        "post",
        "/api/recalls/feedback",
        {"recall_id": RECALL_ID, "memory_id": 1, "useful": False, "comment": 5},
        lambda a: lambda: lifecycle.rate_recall(**a),
    ),
    (
        "store_memory",
        "post",
        "/api/memories",
        {"content": FACT, "scope": "team"},
        lambda a: lambda: clean_scope("team"),
    ),
    (
        "store_memory",
        "post",
        "/api/memories",
        {"content": FACT + " twice", "session_id": 5},
        lambda a: lambda: validation.with_session(None, 5),
    ),
    (
        "dream_now",
        "post",
        "/api/dream",
        {"session_id": 5},
        lambda a: lambda: run_dream_pass(PROJECT, reasoner=None, **a),
    ),
    (
        "link_memories",
        "post",
        "/api/memories/1/links",
        {"to_id": 2, "kind": "blocks"},
        lambda a: lambda: lifecycle.link_memories(1, 2, a["kind"]),
    ),
    (
        "resolve_conflict",
        "post",
        "/api/conflicts/1/resolve",
        {"resolution": "nah"},
        lambda a: lambda: lifecycle.resolve_conflict(1, a["resolution"]),
    ),
]
PROJECTLESS = {"get_usage", "rate_recall", "link_memories", "resolve_conflict"}
# The MCP tool's arguments that REST takes in the path (or under another name).
IN_PATH = {"link_memories": {"from_id": 1}, "resolve_conflict": {"conflict_id": 1}}
REST_NAMES = {"to_id": "to"}


def _rest(url: str, token: str, method: str, path: str, tool: str, args: dict[str, Any]) -> str:
    where = {} if tool in PROJECTLESS else {"project_id": PROJECT}
    args = {REST_NAMES.get(name, name): value for name, value in args.items()}
    headers = {"authorization": f"Bearer {token}"}
    if method == "get":
        answer = httpx.get(f"{url}{path}", params={**where, **args}, headers=headers, timeout=60)
    else:
        answer = httpx.post(f"{url}{path}", json={**where, **args}, headers=headers, timeout=60)
    assert answer.status_code == 400, answer.text
    return str(answer.json()["error"])


def _mcp(url: str, token: str, tool: str, args: dict[str, Any]) -> str:
    where = {} if tool in PROJECTLESS else {"project_id": PROJECT}

    async def ask() -> tuple[bool, Any]:
        async with http_session(url, token) as session:
            return await call(session, tool, **where, **IN_PATH.get(tool, {}), **args)

    is_error, text = asyncio.run(ask())
    assert is_error, text
    return str(text)


@pytest.mark.parametrize(
    ("tool", "method", "path", "args", "service"), CASES, ids=[f"{c[0]}:{c[3]!r:.40}" for c in CASES]
)
def test_mcp_and_rest_give_a_bad_argument_the_services_sentence_and_change_nothing(
    tool: str,
    method: str,
    path: str,
    args: dict[str, Any],
    service: Callable[[dict[str, Any]], Callable[[], Any]],
    live_server_url: str,
    owner_token: str,
    keyword_only: None,
) -> None:
    create.store_memory(resolve(PROJECT), FACT, "process", source="cli")
    events = MemoryEvent.objects.count()
    expected = _sentence(service(args))
    answers = {
        "rest": _rest(live_server_url, owner_token, method, path, tool, args),
        "mcp": _mcp(live_server_url, owner_token, tool, args),
    }
    assert answers == dict.fromkeys(answers, expected)
    assert MemoryEvent.objects.count() == events  # no recall logged
    assert not SessionMessage.objects.exists()
    assert Memory.objects.count() == 1


def test_an_empty_query_is_refused_by_the_command_too_while_a_trivial_one_finds_nothing(
    live_server_url: str, owner_token: str, keyword_only: None, tmp_path: Path
) -> None:
    create.store_memory(resolve(PROJECT), FACT, "process", source="cli")
    env = product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path))
    ran = run_cli(["memories", "search", "  ", f"--project={PROJECT}"], env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.strip() == "yullu: " + _sentence(lambda: Recall.judged("  "))

    async def ask() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as session:
            return await call(session, "retrieve_memories", query="thanks!", project_id=PROJECT)

    # The contract's trivial prompts (docs/contract.md §4) still answer nothing, without an error.
    assert asyncio.run(ask()) == (False, {"project_id": PROJECT, "recall_id": None, "results": []})


def test_mcp_and_rest_answer_a_deleted_or_another_projects_memory_alike(
    live_server_url: str, owner_token: str, keyword_only: None
) -> None:
    mine = create.store_memory(resolve(PROJECT), FACT, "process", source="cli").memory.pk
    theirs = create.store_memory(resolve("acme/other"), "Releases are cut on Thursdays", "process", source="cli")
    gone = create.store_memory(resolve(PROJECT), "The cache is warmed at boot", "process", source="cli").memory.pk
    edit.delete_memory(gone, source="cli")
    headers = {"authorization": f"Bearer {owner_token}"}
    asks = [  # (MCP tool, REST method, memory id, its project as the caller names it)
        ("get_memory", "get", gone, None),
        ("delete_memory", "delete", gone, None),
        ("get_memory", "get", theirs.memory.pk, PROJECT),
        ("delete_memory", "delete", theirs.memory.pk, PROJECT),
    ]

    async def over_mcp() -> list[tuple[bool, Any]]:
        async with http_session(live_server_url, owner_token) as s:
            named = [{"project_id": project} if project else {} for _, _, _, project in asks]
            return [await call(s, tool, id=pk, **where) for (tool, _, pk, _), where in zip(asks, named, strict=True)]

    mcp = asyncio.run(over_mcp())
    rest = []
    for _, method, pk, project in asks:
        params = {"project_id": project} if project else {}
        answer = httpx.request(method, f"{live_server_url}/api/memories/{pk}", params=params, headers=headers)
        rest.append((answer.status_code, answer.json().get("error")))
    assert [text for _, text in mcp] == [text for _, text in rest], (mcp, rest)
    assert all(is_error for is_error, _ in mcp) and {status for status, _ in rest} == {404}
    assert rest[2][1] == f"memory {theirs.memory.pk} not found in project {PROJECT}"
    assert Memory.objects.filter(pk__in=[mine, theirs.memory.pk]).count() == 2  # nothing deleted
