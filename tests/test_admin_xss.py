"""Stored content is never markup (issue 33): XSS payloads stored through MCP (the official client over
HTTP) and arriving in a teammate's event file are shown on every admin page, which is walked in
headless Chromium; no payload may run, and every page carries the Content Security Policy without
tripping it. The pages come from the admin's URL patterns, so a new page is walked too (or this test
fails asking how to fill its URL)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from dreaming.models import DreamOp, DreamPass
from memories import lifecycle
from memories.models import Memory, ProjectLocation, RejectedMemory
from memories.scope import resolve
from memories.search import queries
from memories.write import edit
from sync.eventlog import new_event, write_event
from sync.services import reconcile_scope
from tests.mcp_client import call, http_session
from tests.stubs import StubServer
from tests.test_admin_browser import CHROMIUM

pytestmark = pytest.mark.django_db(transaction=True)

# Each payload calls window.__xss(name) if it ever runs (the test exposes that function).
PAYLOADS = {
    "img": "<img src=x onerror=\"__xss('img')\">",
    "script": "<script>__xss('script')</script>",
    "svg": "<svg onload=\"__xss('svg')\"></svg>",
    "attribute": "\"><script>__xss('attribute')</script><a title=\"",
    "single-quote": "'><img src=x onerror=__xss('single-quote')>",
    "json breakout": "</script><script>__xss('json breakout')</script>",
    "alpine": "<div x-data x-init=\"__xss('alpine')\">alpine</div>",
    "href": '<a href="javascript:__xss(\'href\')" id="xss-href">link</a>',
    "details": "<details open ontoggle=\"__xss('details')\"><summary>s</summary></details>",
    "iframe": "<iframe srcdoc=\"<script>parent.__xss('iframe')</script>\"></iframe>",
    "mutation": "<math><mtext><table><mglyph><style><img src=x onerror=\"__xss('mutation')\">",
    "template": "{{constructor.constructor('__xss(\"template\")')()}}",
}
PROJECT = "acme/xss"
# Parameters of admin URL patterns this test knows how to fill; anything else fails the test.
SKIPPED = {"logout", "view_on_site"}  # logout only accepts POST; view_on_site redirects off the admin


def _payload_text(i: int, name: str) -> str:
    return f"vec:{i + 1},1,0 {PAYLOADS[name]} ({name})"


def store_payloads(base_url: str, token: str, repo: Path) -> list[int]:
    """Payloads as memory content, tags, recall queries, links, ratings and dream output, through MCP;
    more in a teammate's committed event file, applied by reconcile."""

    async def through_mcp() -> list[int]:
        ids = []
        async with http_session(base_url, token) as s:
            for i, name in enumerate(PAYLOADS):
                _, stored = await call(
                    s, "store_memory", content=_payload_text(i, name), tags=[PAYLOADS[name][:90]], project_id=PROJECT
                )
                ids.append(stored["id"])
            for name in ("img", "alpine", "script"):
                await call(s, "retrieve_memories", query=f"vec:1,1,0 {PAYLOADS[name]}", project_id=PROJECT)
        return ids

    ids = asyncio.run(through_mcp())
    scope = resolve(None, str(repo))
    for i, name in enumerate(PAYLOADS):
        event = new_event(
            "create", f"00000000-0000-4000-8000-{i:012d}", content=f"vec:0,{i + 1},1 teammate {PAYLOADS[name]}", tags=[]
        )
        write_event(repo / ".yullu" / "logs", event)
    assert reconcile_scope(scope)["created"] == len(PAYLOADS)
    lifecycle.link_memories(ids[0], ids[1], "contradicts", note=PAYLOADS["img"])
    edit.rate_memory(ids[2], 3, PAYLOADS["svg"], source="admin")
    edit.rate_memory(ids[3], 8, PAYLOADS["alpine"], source="admin")
    queries.search(PROJECT, f"vec:1,1,0 {PAYLOADS['details']}", min_similarity=0)
    dream = DreamPass.objects.create(project_id=PROJECT, phase="done", errors=[PAYLOADS["img"], PAYLOADS["script"]])
    DreamOp.objects.create(
        dream_pass=dream, op="create", content=PAYLOADS["alpine"], reasoning=PAYLOADS["svg"], outcome="skipped"
    )
    return ids


def _admin_patterns() -> list[tuple[str, list[str]]]:
    """(name, parameter names) of every named URL pattern in the admin namespace."""
    out: list[tuple[str, list[str]]] = []

    def walk(patterns: list[Any], namespace: str | None) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, p.namespace or namespace)
            elif isinstance(p, URLPattern) and namespace == "admin" and p.name:
                out.append((p.name, list(p.pattern.regex.groupindex)))

    walk(get_resolver().url_patterns, None)
    return out


def _object_id(name: str, memory_ids: list[int]) -> Any:
    app_model = name.rsplit("_", 1)[0]
    for model in admin.site._registry:
        if f"{model._meta.app_label}_{model._meta.model_name}" == app_model:
            if model is Memory:
                return memory_ids[0]
            row = model._default_manager.order_by("pk").first()
            return row.pk if row is not None else None
    return None


def admin_urls(memory_ids: list[int], user_id: int) -> list[str]:
    urls: list[str] = []
    for name, params in _admin_patterns():
        if name in SKIPPED:
            continue
        if not params:
            urls.append(reverse(f"admin:{name}"))
        elif params == ["app_label"]:
            labels = {m._meta.app_label for m in admin.site._registry}
            urls.extend(reverse(f"admin:{name}", kwargs={"app_label": a}) for a in sorted(labels))
        elif params == ["object_id"] or params == ["id"]:
            pk = user_id if name.startswith("auth_user_") else _object_id(name, memory_ids)
            if pk is None:
                continue  # a model with no rows here: its changelist is walked, it has no object page
            urls.append(reverse(f"admin:{name}", kwargs={params[0]: pk}))
        else:
            pytest.fail(f"admin URL {name!r} takes {params}: teach tests/test_admin_xss.py to fill them")
    # The memories changelist in its other modes: a project filter with the semantic preview search.
    urls.append(reverse("admin:memories_memory_changelist") + f"?project_id__exact={PROJECT}&q=vec:1,1,0+img")
    urls.append(reverse("admin:memories_graph") + f"?project_id={PROJECT}&threshold=0")
    teammates = ProjectLocation.objects.get().project_id  # the repo whose event file brought payloads
    urls.append(reverse("admin:memories_graph") + f"?project_id={teammates}&threshold=0")
    return urls


@pytest.fixture
def stored(live_server_url: str, owner_token: str, repo: Path, stub_embedder: StubServer) -> list[int]:
    """The payloads' memory ids (stored before the browser starts: Playwright's sync API holds an event loop)."""
    return store_payloads(live_server_url, owner_token, repo)


@pytest.fixture
def xss_page(
    stored: list[int], live_server_url: str, django_user_model: Any
) -> Iterator[tuple[Any, list[str], list[str]]]:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium).")
        pytest.skip(f"{CHROMIUM} is missing")
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the ORM calls here are synchronous; see test_admin_browser
    django_user_model.objects.create_superuser("reviewer", password="reviewer-pass-123")
    ran: list[str] = []
    violations: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server_url)
        context.set_default_timeout(60_000)
        context.expose_function("__xss", lambda name: ran.append(str(name)))
        context.expose_function("__csp", lambda text: violations.append(str(text)))
        # Playwright's init script is not subject to the page's CSP: it only reports violations.
        context.add_init_script(
            "document.addEventListener('securitypolicyviolation', e => window.__csp("
            "location.pathname + ': ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));"
        )
        tab = context.new_page()

        def on_dialog(dialog: Any) -> None:  # alert() from a payload
            ran.append(f"dialog {dialog.message}")
            dialog.dismiss()

        tab.on("dialog", on_dialog)
        tab.goto("/admin/login/?next=/admin/")
        tab.fill("input[name=username]", "reviewer")
        tab.fill("input[name=password]", "reviewer-pass-123")
        tab.click("button[type=submit]")
        tab.wait_for_url(re.compile(r"/admin/$"))
        yield tab, ran, violations
        context.close()
        browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def hover_graph(page: Any) -> list[str]:
    """Point the mouse at every node of the graph once its layout has settled; the tooltips' texts."""
    page.wait_for_selector("#graph[data-settled]", state="attached")
    points = page.evaluate(
        """() => { const el = document.getElementById('graph'), g = el.yulluGraph;
          const box = el.querySelector('canvas').getBoundingClientRect();
          return g.graphData().nodes.map(n => { const p = g.graph2ScreenCoords(n.x, n.y);
            return [box.left + p.x, box.top + p.y]; }); }"""
    )
    seen = []
    tooltip = page.locator(".float-tooltip-kap")
    for x, y in points:
        page.mouse.move(x, y)
        if tooltip.count() and tooltip.first.is_visible():
            seen.append(tooltip.first.inner_text())
    return seen


# Inline code the policy would refuse, whether or not an event ever fires it: on* attributes, scripts
# without src (json_script's application/json data blocks are data), javascript: URLs.
INLINE_CODE = """() => [...document.querySelectorAll('*')].flatMap(e => [
    ...[...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name),
    ...(e.tagName === 'SCRIPT' && !e.src && e.type !== 'application/json' ? ['inline <script>'] : []),
    ...(/^\\s*javascript:/i.test(e.getAttribute('href') || '') ? ['javascript: link'] : []),
])"""


def csp_directives(header: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in header.split(";") if d.strip()}


def test_no_payload_runs_on_any_admin_page_and_each_has_the_csp(
    stored: list[int], xss_page: tuple[Any, list[str], list[str]], django_user_model: Any
) -> None:
    page, ran, violations = xss_page
    memory_ids = stored
    assert RejectedMemory.objects.exists() and ProjectLocation.objects.exists()
    user_id = django_user_model.objects.get(username="reviewer").pk
    urls = admin_urls(memory_ids, user_id)
    assert len(urls) >= 20, urls
    missing_csp: list[str] = []
    inline: list[str] = []
    tooltips: list[str] = []
    for url in urls:
        response = page.goto(url)
        assert response is not None and response.status < 500, f"{url}: {response and response.status}"
        policy = csp_directives(response.headers.get("content-security-policy", ""))
        script = policy.get("script-src", [])
        if "'self'" not in script or "'unsafe-inline'" in script or policy.get("object-src") != ["'none'"]:
            missing_csp.append(url)
        page.wait_for_load_state("networkidle")
        if url.startswith(reverse("admin:memories_graph") + "?"):
            tooltips.extend(hover_graph(page))
        inline.extend(f"{url}: {found}" for found in page.evaluate(INLINE_CODE))
        if page.locator("#xss-href").count():
            page.locator("#xss-href").first.click()
    assert ran == [], f"payloads ran: {ran}"
    assert violations == [], (
        f"CSP violations (an injected element or a page needing more than the policy): {violations}"
    )
    assert missing_csp == [], f"pages without the strict policy: {missing_csp}"
    assert inline == [], f"inline script or event handlers in the markup: {inline}"
    # The graph's tooltips showed stored text as text: the hover really exercised them.
    assert any("<img" in t for t in tooltips), tooltips
