"""THE access matrix (docs/contract.md §11, issue 28): every REST route of the URL conf and every MCP tool of
the server, called by five people over real HTTP (uvicorn, the MCP SDK client):

    nobody   a user with no grant on the project
    reader   read        writer   write        padmin   admin
    readonly a read-only token of a user who is admin on the project

The routes and tools are read from the URL conf and the server, not listed by hand: a route or tool
missing from ROUTES / TOOLS below fails the suite, so a new endpoint cannot ship without saying
what role it needs (and this test then checks that it enforces it). Expected: allowed when the
person's role reaches the need (a read-only token: reads only); otherwise refused, and a project the
person may not read answers exactly like a missing one (404 / "not found"), never 403.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver

from access import services as access_services
from access.models import ApiToken
from memories.lifecycle import link_memories
from memories.scope import Scope
from memories.search.merged import search_merged
from memories.write import create, edit
from tests.mcp_client import call, http_session

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

P = "acme/matrix"
RANK = {"nobody": 0, "reader": 1, "writer": 2, "padmin": 3, "readonly": 3}
NEED = {"read": 1, "write": 2, "admin": 3}
PERSONAS = list(RANK)
_seq = itertools.count()


@dataclass
class World:
    """Fresh rows of project P for one call (writes change or delete them)."""

    mem: int
    mem2: int
    conflict: int
    recall_id: str
    rejected: int
    word: str
    token: int


def make_world() -> World:
    word = f"matrixword{next(_seq)}"
    scope = Scope(P, None)
    a = create.store_memory(scope, f"The {word} service deploys with make ship.", "process").memory
    b = create.store_memory(scope, f"The {word} service never deploys on Fridays at all.", "decision").memory
    c = create.store_memory(scope, f"Old {word} note about the staging database host.", "domain").memory
    link = link_memories(a.pk, b.pk, "contradicts", source="api")
    found = search_merged(P, word, limit=5)
    edit.rate_memory(c.pk, 2, "wrong")
    from memories.models import RejectedMemory

    rejected = RejectedMemory.objects.get(uuid=c.uuid)
    assert found.recall_id, "the world needs a recall to rate"
    spare_user, _ = get_user_model().objects.get_or_create(username="spare")
    spare = ApiToken.issue(spare_user, "spare")[0]
    return World(a.pk, b.pk, link.pk, found.recall_id, rejected.pk, word, spare.pk)


# --- REST ----------------------------------------------------------------------------------------

Request = tuple[str, dict[str, Any]]  # path, and {"json": …} or {"params": …}
# need: read | write | admin (of project P); "superuser" (install-wide); "auth" (any valid token,
# nothing of a project); "public" (no token); "never" (refused to everyone, 403).
ROUTES: dict[tuple[str, str], tuple[str, Callable[[World], Request]]] = {
    ("", "GET"): ("public", lambda w: ("/", {})),  # a redirect to the admin
    **{("", method): ("never", lambda w: ("/", {})) for method in ("POST", "PUT", "PATCH", "DELETE")},  # CSRF
    ("api/status", "GET"): ("public", lambda w: ("/api/status", {})),
    ("api/schema", "GET"): ("auth", lambda w: ("/api/schema", {})),
    ("api/memories", "GET"): ("read", lambda w: ("/api/memories", {"params": {"project_id": P}})),
    ("api/memories", "POST"): (
        "write",
        lambda w: ("/api/memories", {"json": {"project_id": P, "content": f"{w.word} uses pytest for every test."}}),
    ),
    ("api/memories/unrated", "GET"): ("read", lambda w: ("/api/memories/unrated", {"params": {"project_id": P}})),
    ("api/memories/rejected", "GET"): ("read", lambda w: ("/api/memories/rejected", {"params": {"project_id": P}})),
    ("api/memories/recall", "POST"): (
        "read",
        lambda w: ("/api/memories/recall", {"json": {"project_id": P, "query": w.word}}),
    ),
    ("api/memories/<int:pk>", "GET"): ("read", lambda w: (f"/api/memories/{w.mem}", {})),
    ("api/memories/<int:pk>", "PATCH"): ("write", lambda w: (f"/api/memories/{w.mem}", {"json": {"tags": ["x"]}})),
    ("api/memories/<int:pk>", "DELETE"): ("write", lambda w: (f"/api/memories/{w.mem}", {})),
    ("api/memories/<int:pk>/rate", "POST"): (
        "write",
        lambda w: (f"/api/memories/{w.mem}/rate", {"json": {"rating": 8}}),
    ),
    ("api/context", "POST"): ("read", lambda w: ("/api/context", {"json": {"project_id": P, "query": w.word}})),
    ("api/memories/<int:pk>/history", "GET"): ("read", lambda w: (f"/api/memories/{w.mem}/history", {})),
    ("api/memories/<int:pk>/links", "POST"): (
        "write",
        lambda w: (f"/api/memories/{w.mem}/links", {"json": {"to": w.mem2, "kind": "related"}}),
    ),
    ("api/conflicts", "GET"): ("admin", lambda w: ("/api/conflicts", {"params": {"project_id": P}})),
    ("api/conflicts/<int:pk>/resolve", "POST"): (
        "admin",
        lambda w: (f"/api/conflicts/{w.conflict}/resolve", {"json": {"resolution": "keep_both"}}),
    ),
    ("api/recalls/feedback", "POST"): (
        "write",
        lambda w: ("/api/recalls/feedback", {"json": {"recall_id": w.recall_id, "memory_id": w.mem, "useful": True}}),
    ),
    ("api/projects", "GET"): ("auth", lambda w: ("/api/projects", {})),
    ("api/stats", "GET"): ("read", lambda w: ("/api/stats", {"params": {"project_id": P}})),
    ("api/retrievals", "GET"): ("read", lambda w: ("/api/retrievals", {"params": {"project_id": P}})),
    ("api/usage", "GET"): ("superuser", lambda w: ("/api/usage", {})),
    ("api/usage/daily", "GET"): ("superuser", lambda w: ("/api/usage/daily", {})),
    ("api/messages", "POST"): (
        "write",
        lambda w: (
            "/api/messages",
            {"json": {"project_id": P, "session_id": "s1", "messages": [{"role": "user", "content": "hello"}]}},
        ),
    ),
    ("api/dream", "POST"): ("write", lambda w: ("/api/dream", {"json": {"project_id": P}})),
    ("api/dream/passes", "GET"): ("read", lambda w: ("/api/dream/passes", {"params": {"project_id": P}})),
    ("api/reconcile", "POST"): ("write", lambda w: ("/api/reconcile", {"json": {"project_id": P}})),
    ("metrics", "GET"): ("auth", lambda w: ("/metrics", {})),
    ("favicon.ico", "GET"): ("public", lambda w: ("/favicon.ico", {})),  # a redirect to the static icon
    **{
        ("favicon.ico", method): ("never", lambda w: ("/favicon.ico", {}))
        for method in ("POST", "PUT", "PATCH", "DELETE")
    },
    ("api/access/users", "POST"): ("superuser", lambda w: ("/api/access/users", {"json": {"name": f"u{w.word}"}})),
    ("api/access/tokens", "GET"): ("superuser", lambda w: ("/api/access/tokens", {})),
    ("api/access/tokens", "POST"): ("superuser", lambda w: ("/api/access/tokens", {"json": {"user": "reader"}})),
    ("api/access/tokens/<int:pk>", "DELETE"): ("superuser", lambda w: (f"/api/access/tokens/{w.token}", {})),
    ("api/access/grants", "GET"): ("admin", lambda w: ("/api/access/grants", {"params": {"project_id": P}})),
    ("api/access/grants", "POST"): (
        "admin",
        lambda w: ("/api/access/grants", {"json": {"user": "nobody", "project_id": P, "role": "read"}}),
    ),
    ("api/access/grants/revoke", "POST"): (
        "admin",
        lambda w: ("/api/access/grants/revoke", {"json": {"user": "writer", "project_id": P}}),
    ),
}
# Lists that span projects when no project is named: P's rows appear only to those who may read it.
LISTS = {
    "/api/memories": "read",
    "/api/memories/unrated": "read",
    "/api/memories/rejected": "read",
    "/api/projects": "read",
    "/api/stats": "read",
    "/api/retrievals": "read",
    "/api/conflicts": "admin",
    "/api/dream/passes": "read",
    "/metrics": "read",
}
METHODS = ("get", "post", "put", "patch", "delete")


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


def url_conf_routes() -> set[tuple[str, str]]:
    """(route, METHOD) of every view outside the admin (which has its own test)."""
    out = set()
    for route, callback in _walk(get_resolver().url_patterns):
        if route.startswith("admin/"):
            continue
        view = getattr(callback, "view_class", None)
        methods = [m for m in METHODS if view is not None and hasattr(view, m)]
        if view is None:  # a function view: the methods it declares (require_GET & co.) or GET
            methods = ["get"]
        out |= {(route, m.upper()) for m in methods}
    return out


def test_every_route_of_the_url_conf_is_in_the_matrix() -> None:
    missing = url_conf_routes() - set(ROUTES)
    assert not missing, f"routes without an access matrix entry (add them to ROUTES with their need): {missing}"
    stale = set(ROUTES) - url_conf_routes()
    assert not stale, f"matrix entries for routes that no longer exist: {stale}"


@pytest.fixture
def tokens(keyword_only: None) -> dict[str, str]:
    """A user per persona with their grant on P, and a token each."""
    out = {}
    for persona in PERSONAS:
        user = access_services.add_user(persona)
        role = {"reader": "read", "writer": "write", "padmin": "admin", "readonly": "admin"}.get(persona)
        if role:
            access_services.grant(persona, P, role, create=True)
        out[persona] = access_services.create_token(user, "matrix", read_only=persona == "readonly").raw
    return out


def allowed(persona: str, need: str) -> bool:
    if need in ("public", "auth"):
        return True
    if need in ("superuser", "never"):
        return False
    return RANK[persona] >= NEED[need] and not (persona == "readonly" and NEED[need] > 1)


def rest_outcome(persona: str, need: str, response: httpx.Response) -> str | None:
    """None when the response is what the matrix expects, else what is wrong."""
    code, text = response.status_code, response.text
    if allowed(persona, need):
        return None if code < 400 else f"expected success, got {code} {text[:200]}"
    if persona == "nobody" and need in NEED:
        return None if code == 404 else f"expected 404 (hidden like a missing project), got {code} {text[:200]}"
    if persona == "readonly" and need in NEED:
        return None if code == 403 and "read-only" in text else f"expected 403 read-only, got {code} {text[:200]}"
    return None if code == 403 else f"expected 403, got {code} {text[:200]}"


@pytest.mark.parametrize("persona", PERSONAS)
def test_rest_routes_enforce_their_role(persona: str, live_server_url: str, tokens: dict[str, str]) -> None:
    wrong = []
    headers = {"Authorization": f"Bearer {tokens[persona]}"}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=60) as client:
        for (route, method), (need, build) in sorted(ROUTES.items()):
            path, kwargs = build(make_world())
            response = client.request(method, path, **kwargs)
            if problem := rest_outcome(persona, need, response):
                wrong.append(f"{method} {route}: {problem}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("persona", PERSONAS)
def test_lists_across_projects_show_only_readable_ones(
    persona: str, live_server_url: str, tokens: dict[str, str]
) -> None:
    from dreaming.models import DreamPass

    world = make_world()
    DreamPass.objects.create(project_id=P, trigger="manual")
    wrong = []
    with httpx.Client(
        base_url=live_server_url, headers={"Authorization": f"Bearer {tokens[persona]}"}, timeout=60
    ) as client:
        for path, need in LISTS.items():
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[:200])
            shows = P in response.text or world.word in response.text
            if shows != (RANK[persona] >= NEED[need]):
                wrong.append(f"{path}: {'shows' if shows else 'hides'} project {P}")
    assert not wrong, "\n".join(wrong)


# --- MCP -----------------------------------------------------------------------------------------

TOOLS: dict[str, tuple[str, Callable[[World], dict[str, Any]]]] = {
    "store_memory": ("write", lambda w: {"content": f"{w.word} builds with make all.", "project_id": P}),
    "retrieve_memories": ("read", lambda w: {"query": w.word, "project_id": P}),
    "build_context": ("read", lambda w: {"query": w.word, "project_id": P}),
    "update_memory": ("write", lambda w: {"id": w.mem, "tags": ["y"]}),
    "delete_memory": ("write", lambda w: {"id": w.mem}),
    "list_memories": ("read", lambda w: {"project_id": P}),
    "rate_recall": ("write", lambda w: {"recall_id": w.recall_id, "memory_id": w.mem, "useful": True}),
    "get_usage": ("superuser", lambda w: {}),
    "reconcile_memories": ("write", lambda w: {"project_id": P}),
    "record_messages": (
        "write",
        lambda w: {"session_id": "s1", "messages": [{"role": "user", "content": "hello"}], "project_id": P},
    ),
    "dream_now": ("write", lambda w: {"project_id": P}),
    "get_memory": ("read", lambda w: {"id": w.mem, "project_id": P}),
    "link_memories": ("write", lambda w: {"from_id": w.mem, "to_id": w.mem2, "kind": "related", "project_id": P}),
    "list_conflicts": ("admin", lambda w: {"project_id": P}),
    "resolve_conflict": (
        "admin",
        lambda w: {"conflict_id": w.conflict, "resolution": "keep_both", "project_id": P},
    ),
}


def tool_outcome(persona: str, need: str, is_error: bool, payload: Any) -> str | None:
    text = str(payload)
    if allowed(persona, need):
        return None if not is_error else f"expected success, got {text[:200]}"
    if not is_error:
        return f"expected a refusal, got {text[:200]}"
    if persona == "nobody" and need in NEED:
        return None if re.search(r"not found|unknown recall_id", text) else f"expected 'not found', got {text[:200]}"
    if persona == "readonly" and need in NEED:
        return None if "read-only" in text else f"expected read-only, got {text[:200]}"
    return None if re.search(r"access to project|superuser", text) else f"expected a role refusal, got {text[:200]}"


def test_every_mcp_tool_is_in_the_matrix() -> None:
    from yullu_site.mcp.server import build_server

    names = {t.name for t in asyncio.run(build_server().list_tools())}
    assert names == set(TOOLS), f"tools without a matrix entry: {names - set(TOOLS)}; stale: {set(TOOLS) - names}"


@pytest.mark.parametrize("persona", PERSONAS)
def test_mcp_tools_enforce_their_role(persona: str, live_server_url: str, tokens: dict[str, str]) -> None:
    worlds = {name: make_world() for name in TOOLS}

    async def go() -> list[str]:
        wrong = []
        async with http_session(live_server_url, tokens[persona]) as s:
            for name, (need, build) in sorted(TOOLS.items()):
                is_error, payload = await call(s, name, **build(worlds[name]))
                if problem := tool_outcome(persona, need, is_error, payload):
                    wrong.append(f"{name}: {problem}")
        return wrong

    wrong = asyncio.run(go())
    assert not wrong, "\n".join(wrong)


def test_a_revoked_or_expired_token_is_refused_at_once(live_server_url: str, tokens: dict[str, str]) -> None:
    with httpx.Client(base_url=live_server_url, timeout=60) as client:
        auth = {"Authorization": f"Bearer {tokens['reader']}"}
        assert client.get("/api/projects", headers=auth).status_code == 200
        ApiToken.objects.filter(user__username="reader").update(expires_at="2000-01-01T00:00:00Z")
        assert client.get("/api/projects", headers=auth).status_code == 401
        assert client.post("/mcp", headers=auth, json={}).status_code == 401
