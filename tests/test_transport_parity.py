"""MCP and REST tell the same thing (docs/contract.md §3: "MCP can do nothing REST cannot with the same
token, and the reverse"): each tool against its endpoint, through the real MCP SDK client and real HTTP, with
the same arguments, the same sentence for the same mistake and the same fields in the answer."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories import lifecycle
from memories.scope import resolve
from memories.write import create, edit
from tests.mcp_client import call, http_session

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT = "acme/parity"
DEPLOY = "To deploy, run `make deploy` from a clean main; it builds the image and rolls staging first."
WIPED = "Staging's database is wiped every night at 02:00, so never keep test data there."
POSTGRES = "We chose Postgres with pgvector over a separate vector database so writes stay transactional."


def _mcp(url: str, token: str, tool: str, **args: Any) -> tuple[bool, Any]:
    async def ask() -> tuple[bool, Any]:
        async with http_session(url, token) as session:
            return await call(session, tool, **args)

    return asyncio.run(ask())


def _rest(url: str, token: str, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, f"{url}{path}", headers={"authorization": f"Bearer {token}"}, timeout=60, **kw)


def _seed() -> None:
    scope = resolve(PROJECT)
    for text, category in ((DEPLOY, "process"), (WIPED, "gotcha"), (POSTGRES, "decision")):
        create.store_memory(scope, text, category, source="cli")


@pytest.mark.parametrize(
    "narrowing",
    [{"categories": ["gotcha"]}, {"prefer_categories": ["gotcha"]}, {"categories": ["style"]}],
    ids=["categories", "prefer_categories", "an-empty-category"],
)
def test_build_context_takes_the_categories_rest_takes_and_gives_the_same_block(
    narrowing: dict[str, Any], live_server_url: str, owner_token: str, keyword_only: None
) -> None:
    """MCP's build_context had no `categories` (nor the hook's `prefer_categories`): a misspelt-argument error."""
    _seed()
    args = {"project_id": PROJECT, "query": "how do we deploy to staging?", **narrowing}
    is_error, over_mcp = _mcp(live_server_url, owner_token, "build_context", **args)
    assert not is_error, over_mcp
    over_rest = _rest(live_server_url, owner_token, "post", "/api/context", json=args)
    assert over_rest.status_code == 200, over_rest.text
    assert {**over_mcp, "recall_id": None} == {**over_rest.json(), "recall_id": None}  # each ask is its own recall
    block = over_mcp["context"]
    if "categories" in narrowing:  # a filter: only its category
        assert DEPLOY not in block and (WIPED in block) == (narrowing["categories"] == ["gotcha"])
    else:  # a hint: its category next after the most relevant memory, nothing hidden
        assert WIPED in block and DEPLOY in block and block.index(DEPLOY) < block.index(WIPED)


def test_build_context_refuses_categories_with_prefer_categories_in_one_sentence_on_both(
    live_server_url: str, owner_token: str, keyword_only: None
) -> None:
    args = {"project_id": PROJECT, "query": "deploy", "categories": ["process"], "prefer_categories": ["style"]}
    is_error, said = _mcp(live_server_url, owner_token, "build_context", **args)
    over_rest = _rest(live_server_url, owner_token, "post", "/api/context", json=args)
    assert is_error and over_rest.status_code == 400
    assert said == over_rest.json()["error"]
    assert said.startswith("give categories or prefer_categories, not both")


class _CountedScopes(tuple[str, ...]):
    """memories.scope.SCOPES, counting how often clean_scope looks a `scope` up in it."""

    looked_up = 0

    def __contains__(self, item: object) -> bool:
        type(self).looked_up += 1
        return super().__contains__(item)


@pytest.mark.parametrize("transport", ["mcp", "rest"])
def test_a_stores_scope_is_judged_once_by_the_service_on_both_transports(
    transport: str, live_server_url: str, owner_token: str, keyword_only: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REST judged it in its serializer, then again in the view (clean_scope twice per store)."""
    from memories import scope

    monkeypatch.setattr(scope, "SCOPES", _CountedScopes(scope.SCOPES))
    monkeypatch.setattr(_CountedScopes, "looked_up", 0)
    args = {"content": "I prefer pytest's plain asserts over unittest's methods.", "scope": "user"}
    if transport == "mcp":
        is_error, stored = _mcp(live_server_url, owner_token, "store_memory", **args)
        assert not is_error, stored
    else:
        answer = _rest(live_server_url, owner_token, "post", "/api/memories", json=args)
        assert answer.status_code == 201, answer.text
        stored = answer.json()
    assert stored["project_id"].startswith("~user:") and stored["created"] is True
    assert _CountedScopes.looked_up == 1


def test_a_call_naming_no_project_gets_the_same_sentence_on_both_transports(
    live_server_url: str, owner_token: str
) -> None:
    """REST said "project_id or cwd is required: …", MCP "name the project: …" (and a blank id differently)."""
    from memories.scope import NO_PROJECT

    for where, sentence in (({}, NO_PROJECT), ({"project_id": " "}, "project_id must not be empty.")):
        for tool, method, path, args in (
            ("store_memory", "post", "/api/memories", {"content": DEPLOY}),
            ("retrieve_memories", "post", "/api/memories/recall", {"query": "deploy"}),
            ("build_context", "post", "/api/context", {}),
            ("record_messages", "post", "/api/messages", {"session_id": "s", "messages": []}),
        ):
            is_error, said = _mcp(live_server_url, owner_token, tool, **args, **where)
            answer = _rest(live_server_url, owner_token, method, path, json={**args, **where})
            assert (is_error, said) == (True, sentence), (tool, where)
            assert (answer.status_code, answer.json()["error"]) == (400, sentence), (path, where)


def test_one_memory_is_the_same_answer_from_get_memory_and_rest_get(
    repo: Path, live_server_url: str, owner_token: str, keyword_only: None
) -> None:
    """REST's GET /api/memories/<id> answered the memory alone; MCP's get_memory added anchors, links, history."""
    (repo / "app").mkdir()
    (repo / "app" / "clock.py").write_text("import time\n\n\ndef now():\n    return time.time()\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "c"], check=True
    )
    scope = resolve(None, str(repo))
    memory = create.store_memory(scope, "Time comes from app/clock.py:4-5, never datetime.now", "gotcha").memory
    other = create.store_memory(scope, "Timestamps are stored in UTC and shown in local time", "domain").memory
    lifecycle.link_memories(memory.pk, other.pk, "related", note="both about time")
    edit.update_memory(memory.pk, tags=["time"])
    for where in ({}, {"project_id": scope.project_id}, {"cwd": str(repo)}):
        is_error, over_mcp = _mcp(live_server_url, owner_token, "get_memory", id=memory.pk, **where)
        assert not is_error, over_mcp
        over_rest = _rest(live_server_url, owner_token, "get", f"/api/memories/{memory.pk}", params=where)
        assert over_rest.status_code == 200, over_rest.text
        assert over_rest.json() == over_mcp, where
    assert [(a["path"], a["lines"], a["status"]) for a in over_mcp["anchors"]] == [("app/clock.py", [4, 5], "ok")]
    assert [(link["to_id"], link["kind"]) for link in over_mcp["links"]] == [(other.pk, "related")]
    assert over_mcp["history"]["changes"] >= 2 and over_mcp["tags"] == ["time"]


def test_an_expired_and_a_revoked_token_are_told_apart_alike_on_rest_and_mcp(live_server_url: str) -> None:
    """Both got "Invalid, expired, revoked or missing API token", as a typo does: nobody could tell why."""
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.utils import timezone

    from access import services
    from access.models import ApiToken
    from yullu_core.api_errors import TOKEN_HELP

    carol = User.objects.create_user("carol")
    expired, raw_expired = ApiToken.issue(carol, "old laptop", expires_at=timezone.now() - timedelta(days=2))
    revoked, raw_revoked = ApiToken.issue(carol, "lost laptop")
    services.revoke_token(revoked.pk)  # as `yullu tokens revoke`, the admin and DELETE /api/access/tokens/<id> do
    told: dict[str, str] = {}
    for name, raw in (("expired", raw_expired), ("revoked", raw_revoked), ("unknown", "yl_" + "x" * 43)):
        auth = {"Authorization": f"Bearer {raw}"}
        with httpx.Client(base_url=live_server_url, headers=auth, timeout=60) as client:
            answers = [
                client.get("/api/projects"),  # Django's check (access.auth)
                client.post("/api/memories", json={"content": "x"}),  # the front gate, before the body
                client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}),  # the MCP endpoint's
            ]
        assert {a.status_code for a in answers} == {401}, name
        rest, gate, mcp = (a.json() for a in answers)
        # /mcp answers a JSON-RPC error, which MCP clients show (the SDK drops any other body): walk 10
        assert mcp["jsonrpc"] == "2.0" and mcp["id"] is None, mcp
        said = {rest["error"], gate["error"], mcp["error"]["message"]}
        assert len(said) == 1, (name, said)
        (told[name],) = said
        assert raw not in told[name] and raw[3:12] not in told[name]
    assert told["expired"].startswith(f"This API token expired on {expired.expires_at:%Y-%m-%d} ")
    assert told["revoked"].startswith(f"This API token was revoked on {timezone.now():%Y-%m-%d} ")
    assert told["unknown"] == TOKEN_HELP
    assert all("yullu tokens create --user NAME" in sentence for sentence in told.values())  # where a new one is


def _keys(answer: Any) -> Any:
    """An answer's shape: its keys, and the keys of the first item of each list of objects."""
    if not isinstance(answer, dict):
        return type(answer).__name__
    shape: dict[str, Any] = {}
    for key, value in answer.items():
        first = value[0] if isinstance(value, list) and value else None
        shape[key] = sorted(first) if isinstance(first, dict) else type(value).__name__
    return shape


# Where a tool and its endpoint differ on purpose (docs/contract.md §3 says why): the tool's answer → REST's.
ON_PURPOSE = {
    # REST pages a list with a cursor (next, previous, results) where the tool returns one page of up to 200.
    "list_memories": lambda mcp: {"next": "a page's URL", "previous": None, "results": mcp["memories"]},
}


def test_every_tool_and_its_endpoint_answer_the_same_fields(
    live_server_url: str, owner_token: str, keyword_only: None
) -> None:
    from memories.models import Usage

    for n in range(3):
        Usage.objects.create(provider="local", model="m", kind="embed", input_tokens=n)
    _seed()
    both: dict[str, tuple[Any, Any]] = {}

    def ask(
        tool: str, mcp_args: dict[str, Any], method: str, path: str, rest_args: dict[str, Any] | None = None
    ) -> Any:
        is_error, over_mcp = _mcp(live_server_url, owner_token, tool, **mcp_args)
        assert not is_error, (tool, over_mcp)
        rest_args = mcp_args if rest_args is None else rest_args
        where = {"params": rest_args} if method in ("get", "delete") else {"json": rest_args}
        over_rest = _rest(live_server_url, owner_token, method, path, **where)
        assert over_rest.status_code in (200, 201), (path, over_rest.text)
        both[tool] = (over_mcp, over_rest.json())
        return over_mcp, over_rest.json()

    p = {"project_id": PROJECT}
    thursdays, fridays = (
        {**p, "content": "Releases are cut on Thursdays."},
        {**p, "content": "Nobody deploys on Fridays."},
    )
    a, b = ask("store_memory", thursdays, "post", "/api/memories", fridays)
    ask("store_memory", thursdays, "post", "/api/memories", fridays)  # near-duplicates: created false
    found = ask("retrieve_memories", {**p, "query": "how do we deploy?"}, "post", "/api/memories/recall")
    ask("build_context", {**p, "query": "how do we deploy?"}, "post", "/api/context")
    ask("list_memories", {**p, "limit": 3}, "get", "/api/memories")
    ask("update_memory", {"id": a["id"], "tags": ["release"]}, "patch", f"/api/memories/{a['id']}", {"tags": ["x"]})
    ask("get_memory", {"id": a["id"]}, "get", f"/api/memories/{a['id']}", {})
    ask("link_memories", {"from_id": a["id"], "to_id": b["id"], "kind": "contradicts"}, "post",
        f"/api/memories/{b['id']}/links", {"to": a["id"], "kind": "contradicts"})  # fmt: skip
    conflicts = ask("list_conflicts", p, "get", "/api/conflicts")
    first, second = (c["id"] for c in conflicts[0]["conflicts"][:2])
    ask("resolve_conflict", {"conflict_id": first, "resolution": "keep_both"}, "post",
        f"/api/conflicts/{second}/resolve", {"resolution": "keep_both"})  # fmt: skip
    memory = found[0]["results"][0]["id"]
    ask("rate_recall", {"recall_id": found[0]["recall_id"], "memory_id": memory, "useful": True}, "post",
        "/api/recalls/feedback", {"recall_id": found[1]["recall_id"], "memory_id": memory, "useful": True})  # fmt: skip
    usage = ask("get_usage", {"recent": True, "recent_limit": 2}, "get", "/api/usage", {"recent": 1, "recent_limit": 2})
    messages = [{"role": "user", "content": "we ship on Thursdays"}]
    ask("record_messages", {**p, "session_id": "s1", "messages": messages}, "post", "/api/messages")
    ask("dream_now", {**p, "session_id": "nobody"}, "post", "/api/dream")
    ask("reconcile_memories", p, "post", "/api/reconcile")
    ask("delete_memory", {"id": a["id"]}, "delete", f"/api/memories/{b['id']}", {})

    differ = {
        tool: (_keys(ON_PURPOSE.get(tool, dict)(over_mcp)), _keys(over_rest))
        for tool, (over_mcp, over_rest) in both.items()
        if _keys(ON_PURPOSE.get(tool, dict)(over_mcp)) != _keys(over_rest)
    }
    assert not differ, differ  # list_conflicts over REST had no project_id
    assert len(usage[0]["recent"]) == len(usage[1]["recent"]) == 2  # REST took no recent_limit: 3


# (tool, REST method and path, the arguments both need); where the tool's arguments and the endpoint's have the
# same names (docs/contract.md §3 lists where they differ), the whole sentence is the same.
CALLS = [
    ("store_memory", "post", "/api/memories", {"project_id": PROJECT, "content": DEPLOY}),
    ("retrieve_memories", "post", "/api/memories/recall", {"project_id": PROJECT, "query": "deploy"}),
    ("build_context", "post", "/api/context", {"project_id": PROJECT}),
    ("rate_recall", "post", "/api/recalls/feedback", {}),
    ("record_messages", "post", "/api/messages", {"project_id": PROJECT, "session_id": "s", "messages": []}),
    ("dream_now", "post", "/api/dream", {"project_id": PROJECT}),
    ("reconcile_memories", "post", "/api/reconcile", {"project_id": PROJECT}),
    ("list_conflicts", "get", "/api/conflicts", {"project_id": PROJECT}),
    ("get_usage", "get", "/api/usage", {}),
]


@pytest.mark.parametrize(("tool", "method", "path", "args"), CALLS, ids=[c[0] for c in CALLS])
def test_an_unknown_argument_gets_the_same_sentence_from_the_tool_and_its_endpoint(
    tool: str, method: str, path: str, args: dict[str, Any], live_server_url: str, owner_token: str
) -> None:
    """REST said "limt: is not a field this endpoint takes." (or "unknown query parameter limt; it takes …")."""
    from memories.models import Memory

    is_error, said = _mcp(live_server_url, owner_token, tool, **args, limt=5)
    where = {"params": {**args, "limt": 5}} if method == "get" else {"json": {**args, "limt": 5}}
    answer = _rest(live_server_url, owner_token, method, path, **where)
    assert is_error and answer.status_code == 400
    assert said == answer.json()["error"]
    assert said.startswith("unknown argument 'limt'; this call takes: ")
    assert not Memory.objects.exists()


# Each tool's endpoint, and the tool's arguments REST names otherwise (docs/contract.md §3): None = in the path.
ENDPOINTS = {
    "store_memory": ("post", "/api/memories", {}),
    "retrieve_memories": ("post", "/api/memories/recall", {}),
    "build_context": ("post", "/api/context", {}),
    "update_memory": ("patch", "/api/memories/{id}", {}),
    "delete_memory": ("delete", "/api/memories/{id}", {}),
    "list_memories": ("get", "/api/memories", {}),
    "get_memory": ("get", "/api/memories/{id}", {}),
    "link_memories": ("post", "/api/memories/{id}/links", {"from_id": "id", "to_id": "to"}),
    "list_conflicts": ("get", "/api/conflicts", {}),
    "resolve_conflict": ("post", "/api/conflicts/{id}/resolve", {"conflict_id": "id"}),
    "rate_recall": ("post", "/api/recalls/feedback", {}),
    "get_usage": ("get", "/api/usage", {}),
    "record_messages": ("post", "/api/messages", {}),
    "dream_now": ("post", "/api/dream", {}),
    "reconcile_memories": ("post", "/api/reconcile", {}),
}
REST_ONLY = {"list_memories": {"all", "cursor", "q"}}  # a cursor's pages, history, the unlogged preview search


def _rest_arguments(schema: dict[str, Any], method: str, path: str) -> set[str]:
    operation = schema["paths"][path][method]
    names = {parameter["name"] for parameter in operation.get("parameters", [])}
    if body := operation.get("requestBody"):
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        names |= set(schema["components"]["schemas"][ref]["properties"])
    return names


def test_every_tool_takes_the_arguments_its_endpoint_takes(live_server_url: str, owner_token: str) -> None:
    """From the tools' input schemas (the MCP SDK client's list_tools) and the OpenAPI schema. get_usage took
    recent_limit, GET /api/usage did not."""

    async def listed() -> dict[str, set[str]]:
        async with http_session(live_server_url, owner_token) as session:
            return {t.name: set(t.input_schema.get("properties", {})) for t in (await session.list_tools()).tools}

    tools = asyncio.run(listed())
    schema = _rest(live_server_url, owner_token, "get", "/api/schema", params={"format": "json"}).json()
    assert set(tools) == set(ENDPOINTS)  # a new tool needs its endpoint here
    differ = {}
    for tool, (method, path, renamed) in ENDPOINTS.items():
        over_mcp = {renamed.get(name, name) for name in tools[tool]}
        over_rest = _rest_arguments(schema, method, path) - REST_ONLY.get(tool, set())
        if over_mcp != over_rest:
            differ[tool] = (sorted(over_mcp - over_rest), sorted(over_rest - over_mcp))
    assert not differ, differ  # tool: (only the tool takes, only the endpoint takes)


# A missing argument or a value of the wrong type: pydantic (MCP) and DRF (REST) each said it their way
# ("invalid arguments: to_id: Input should be a valid integer, unable to parse …" / "to: A valid integer is
# required."). (tool, REST method, path, the tool's arguments, REST's when they differ, the sentence)
MISTAKES: list[tuple[str, str, str, dict[str, Any], dict[str, Any] | None, str]] = [
    ("store_memory", "post", "/api/memories", {"project_id": PROJECT}, None, "content is required."),
    ("store_memory", "post", "/api/memories", {"project_id": PROJECT, "content": DEPLOY, "supersedes": "abc"}, None,
     "supersedes must be a whole number."),
    ("store_memory", "post", "/api/memories", {"project_id": PROJECT, "content": DEPLOY, "anchors": "app.py"}, None,
     "anchors must be a list."),
    ("retrieve_memories", "post", "/api/memories/recall", {"project_id": 5, "query": "deploy"}, None,
     "project_id must be a string."),
    ("retrieve_memories", "post", "/api/memories/recall", {"cwd": ["/srv"], "query": "deploy"}, None,
     "cwd must be a string."),
    ("update_memory", "patch", "/api/memories/1", {"id": 1, "supersede": "maybe", "content": DEPLOY},
     {"supersede": "maybe", "content": DEPLOY}, "supersede must be true or false."),
    ("link_memories", "post", "/api/memories/1/links", {"from_id": 1, "to_id": 2}, {"to": 2}, "kind is required."),
    ("link_memories", "post", "/api/memories/1/links",
     {"from_id": 1, "to_id": 2, "kind": "related", "note": "n" * 2001},
     {"to": 2, "kind": "related", "note": "n" * 2001}, "note is 2001 characters; the limit is 2000."),
    ("resolve_conflict", "post", "/api/conflicts/1/resolve", {"conflict_id": 1}, {}, "resolution is required."),
    ("record_messages", "post", "/api/messages", {"project_id": PROJECT, "messages": []}, None,
     "session_id is required."),
    ("get_usage", "get", "/api/usage", {"recent": "maybe"}, None, "recent must be true or false."),
    # A tag is a name: a newline or tab in one was stored (walk 13).
    ("store_memory", "post", "/api/memories", {"project_id": PROJECT, "content": DEPLOY, "tags": ["a\nb"]}, None,
     "tags must not contain control or bidi characters (found \\x0a at character 2)."),
    ("update_memory", "patch", "/api/memories/1", {"id": 1, "tags": ["x\ty"]}, {"tags": ["x\ty"]},
     "tags must not contain control or bidi characters (found \\x09 at character 2)."),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "method", "path", "args", "rest_args", "sentence"), MISTAKES,
                         ids=[f"{m[0]}:{m[5]}" for m in MISTAKES])  # fmt: skip
def test_a_missing_argument_or_a_wrong_type_gets_one_sentence_from_the_tool_and_its_endpoint(
    tool: str,
    method: str,
    path: str,
    args: dict[str, Any],
    rest_args: dict[str, Any] | None,
    sentence: str,
    live_server_url: str,
    owner_token: str,
    keyword_only: None,
) -> None:
    from memories.models import Memory

    scope = resolve(PROJECT)
    ids = [create.store_memory(scope, text, "process", source="cli").memory.pk for text in (WIPED, POSTGRES)]
    # Memories 1 and 2 above are these two.
    path = path.replace("/1", f"/{ids[0]}")
    mine = {"id": ids[0], "from_id": ids[0], "to_id": ids[1], "to": ids[1]}
    args = {name: mine.get(name, value) for name, value in args.items()}
    is_error, said = _mcp(live_server_url, owner_token, tool, **args)
    body = args if rest_args is None else {name: mine.get(name, value) for name, value in rest_args.items()}
    answer = _rest(
        live_server_url, owner_token, method, path, **({"params": body} if method == "get" else {"json": body})
    )
    assert (is_error, said) == (True, sentence)
    assert (answer.status_code, answer.json()["error"]) == (400, sentence)
    assert sorted(Memory.objects.values_list("pk", flat=True)) == ids and not Memory.objects.filter(tags=["x"]).exists()
