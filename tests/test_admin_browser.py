"""The review flows in a real browser: headless system Chromium driven by Playwright, against the real
ASGI server. Each page is checked for horizontal overflow at 1280 px and screenshotted. On CI (CI set)
a missing Chromium fails loudly instead of skipping."""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from dreaming.models import DreamOp, DreamPass
from dreaming.services import record_messages
from memories import lifecycle
from memories.models import Memory, RejectedMemory
from memories.scope import Scope, resolve
from memories.search import queries
from memories.write import create
from memories.write.validation import NewMemory
from tests.stubs import StubServer

CHROMIUM = "/usr/bin/chromium"
# Screenshots go to a temporary folder unless YULLU_SCREENSHOTS names one (the README's are made with
# YULLU_SCREENSHOTS=docs/screenshots), so a test run leaves the work tree clean.
SHOTS = Path(os.environ.get("YULLU_SCREENSHOTS") or tempfile.mkdtemp(prefix="yullu-shots-"))
WIDTH = 1280

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing: `make test` installs it as root (apt-get install chromium)."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls made by the tests here are
    # plain synchronous ones, so Django's async-safety guard does not apply.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        chromium.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(browser: Any, live_server_url: str, django_user_model: Any) -> Iterator[Any]:
    django_user_model.objects.create_superuser("reviewer", password="reviewer-pass-123")
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, base_url=live_server_url)
    context.set_default_timeout(60_000)
    tab = context.new_page()
    tab.goto("/admin/login/?next=/admin/")
    tab.fill("input[name=username]", "reviewer")
    tab.fill("input[name=password]", "reviewer-pass-123")
    tab.click("button[type=submit]")
    tab.wait_for_url(re.compile(r"/admin/$"))
    yield tab
    context.close()


def no_overflow_and_shoot(page: Any, name: str) -> None:
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, f"{name} overflows: scrollWidth {width} > {WIDTH}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def seed(n: int = 3) -> list[Memory]:
    scope = resolve("acme/shop", None)
    facts = [
        ("vec:1,0,0 Deploys go through `make release`, never by hand", "process"),
        ("vec:0,1,0 We chose Postgres over MySQL for pgvector and JSONB", "decision"),
        ("vec:0,0,1 The billing webhook retries for 72 hours: handlers must be idempotent", "gotcha"),
    ]
    return [create.store_memory(scope, c, cat, ["seed"], source="mcp").memory for c, cat in facts[:n]]


def unrated_total_is(page: Any, n: int) -> None:
    page.wait_for_function(f"document.getElementById('unrated-total').textContent === '{n}'")


def test_a_reviewer_works_through_30_memories_from_the_keyboard(stub_embedder: StubServer, page: Any) -> None:
    extra = [NewMemory(f"Module {i} owns the {i}th queue and retries {i} times", "process") for i in range(27)]
    create.store_memories(resolve("acme/shop", None), extra, source="dream")
    newest_first = list(reversed(seed()))
    queries.search("acme/shop", "vec:1,0,0 how do we deploy?", min_similarity=0.1)
    page.goto("/admin/memories/memory/review/")
    unrated_total_is(page, 30)
    no_overflow_and_shoot(page, "review-queue")
    page.keyboard.press("c")  # a comment, then the rating: Enter leaves the field without submitting
    page.keyboard.type("clear and current")
    page.keyboard.press("Enter")
    page.keyboard.press("8")  # keep the focused (newest) memory
    page.wait_for_selector("text=rated 8: kept")
    kept = Memory.objects.get(pk=newest_first[0].pk)
    assert (kept.rating, kept.rating_comment) == (8, "clear and current")
    page.keyboard.press("3")  # reject the next one: a confirmation first
    page.wait_for_selector("dialog[open]")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=archived to rejected memories")
    assert not Memory.objects.filter(pk=newest_first[1].pk).exists()
    assert RejectedMemory.objects.get().content == newest_first[1].content
    page.keyboard.press("u")  # undo: the memory is back, unrated
    page.wait_for_selector("text=Restored 1 memory")
    assert RejectedMemory.objects.count() == 0
    assert Memory.objects.get(content=newest_first[1].content).rating is None
    for left in range(29, 0, -1):  # and the rest, one key each
        unrated_total_is(page, left)
        page.keyboard.press("0" if left % 2 else "7")
    unrated_total_is(page, 0)
    assert Memory.objects.filter(rating=None).count() == 0 and Memory.objects.count() == 30


def test_after_a_rating_the_focus_stays_where_the_reviewer_was(stub_embedder: StubServer, page: Any) -> None:
    # Found on the walk: rating the second card reloaded the queue focused on the first, so a reviewer who
    # skipped one with j was sent back to it after every rating.
    third, second, first = seed()  # the queue lists the newest first
    page.goto("/admin/memories/memory/review/")
    page.keyboard.press("j")
    page.keyboard.press("8")
    page.wait_for_selector("text=rated 8: kept")
    assert Memory.objects.get(pk=second.pk).rating == 8
    focused = "document.activeElement.closest('.y-item') && document.activeElement.closest('.y-item').textContent"
    assert third.content.removeprefix("vec:1,0,0 ") in page.evaluate(focused)


def test_cancelling_a_rejection_changes_nothing(stub_embedder: StubServer, page: Any) -> None:
    (memory,) = seed(1)
    page.goto("/admin/memories/memory/review/")
    page.click("article.y-item button[value='2']")
    page.wait_for_selector("dialog[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("dialog[open]", state="detached")
    assert Memory.objects.get(pk=memory.pk).rating is None


def test_an_edit_saves_through_the_service_and_the_search_preview_ranks(stub_embedder: StubServer, page: Any) -> None:
    memory = seed()[0]
    page.goto(f"/admin/memories/memory/{memory.pk}/change/")
    no_overflow_and_shoot(page, "memory-edit")
    page.fill("textarea[name=content]", "vec:1,0,0 Deploys go through `make release` on the CI runner")
    page.click("button[name=_save]")
    page.wait_for_url(re.compile(r"/admin/memories/memory/(\?.*)?$"))
    assert Memory.objects.get(pk=memory.pk).content.endswith("on the CI runner")
    page.goto("/admin/memories/memory/?project_id__exact=acme/shop&q=vec:1,0,0+deploy")
    no_overflow_and_shoot(page, "memories-search-preview")
    assert "#1 ·" in page.inner_text("#result_list") and "sent" in page.inner_text("#result_list")


def test_dream_now_shows_the_pass_and_its_operations(
    stub_embedder: StubServer, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from yullu_site.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)  # the pass runs in the request: no worker here
    monkeypatch.setitem(
        settings.YULLU, "reasoning", {"provider": "openai", "model": "stub-chat", "timeout_seconds": 10}
    )
    record_messages("acme/shop", "s1", [{"role": "user", "content": "remember: staging deploys need the VPN"}])
    ops = [{"op": "create", "content": "Staging deploys need the VPN", "category": "gotcha", "reasoning": "stated"}]
    stub_embedder.chat_replies.append(json.dumps({"operations": ops}))
    page.goto("/admin/dreaming/dreampass/dreaming/")
    before = page.evaluate("history.length")
    page.click("text=Dream now")
    # The queued page (?watch=…) polls the pass's status and reloads the plain page once it finished.
    page.wait_for_function(f"history.length >= {before + 2} && location.search === ''")
    page.wait_for_selector("#passes span[data-phase]:has-text('done')")
    no_overflow_and_shoot(page, "dreaming")
    dream = DreamPass.objects.get()
    assert DreamOp.objects.get(dream_pass=dream).outcome == "created"
    page.goto(f"/admin/dreaming/dreampass/{dream.pk}/change/")
    no_overflow_and_shoot(page, "dream-pass")
    assert "Staging deploys need the VPN" in page.content() and "stated" in page.content()


def test_settings_are_saved_to_config_toml_with_comments_kept(stub_embedder: StubServer, page: Any) -> None:
    path = Path(os.environ["YULLU_CONFIG"])
    before = path.read_text()
    original = settings.YULLU["dreaming"]["min_messages"]
    try:
        page.goto("/admin/memories/memory/settings/")
        no_overflow_and_shoot(page, "settings")
        assert "api_key" in page.content() and "sk-test-not-real" not in page.content()
        page.fill("input[name='dreaming.min_messages']", "7")
        page.click("#save-settings")
        page.wait_for_selector("text=Saved [dreaming].min_messages")
        text = path.read_text()
        assert tomllib.loads(text)["dreaming"]["min_messages"] == 7
        assert "# Yul'lu configuration" in text and settings.YULLU["dreaming"]["min_messages"] == 7
        page.fill("input[name='dreaming.min_messages']", "-3")
        page.click("#save-settings")
        page.wait_for_selector("text=must be between")
        assert tomllib.loads(path.read_text())["dreaming"]["min_messages"] == 7
    finally:
        path.write_text(before)
        settings.YULLU["dreaming"]["min_messages"] = original


def test_every_page_fits_1280_px_and_is_screenshotted(stub_embedder: StubServer, page: Any) -> None:
    seed()
    found = queries.search("acme/shop", "vec:1,0,0 how do we deploy?", min_similarity=0.1)
    assert found.results
    fridays = create.store_memory(resolve("acme/shop", None), "vec:0,0.7,0.7 We deploy on Fridays", "process").memory
    lifecycle.link_memories(fridays.pk, found.results[0]["id"], "contradicts", source="dream")
    pages = {
        "dashboard": "/admin/",
        "memories": "/admin/memories/memory/",
        "retrievals": "/admin/memories/memory/retrievals/",
        "stats": "/admin/memories/memory/stats/",
        "usage": "/admin/memories/memory/usage/",
        "projects": "/admin/memories/memory/projects/",
        "conflicts": "/admin/memories/memory/conflicts/",
        "graph": "/admin/memories/memory/graph/?project_id=acme/shop&threshold=0",
        "rejected": "/admin/memories/rejectedmemory/",
        "dream-passes": "/admin/dreaming/dreampass/",
    }
    for name, url in pages.items():
        page.goto(url)
        if name == "graph":
            page.wait_for_selector("#graph canvas")
        no_overflow_and_shoot(page, name)
    page.goto("/admin/")
    assert page.locator("canvas[data-chart]").count() >= 1  # real charts once there is data
    assert "Crontabs" not in page.inner_text("body")  # scheduler internals are not in the sidebar


def _anchored_then_changed(
    repo: Path, anchored: dict[str, str], *rewrites: tuple[str, str]
) -> tuple[Scope, list[create.Stored]]:
    """Memories anchored in the test clock's app/clock.py (text -> symbol name), then the file rewritten (old -> new)
    and the project's anchors checked: a stale queue."""
    from memories.anchors import checks
    from tests.test_anchors import CLOCK, commit, rewrite

    (repo / "app").mkdir()
    (repo / "app" / "clock.py").write_text(CLOCK)
    commit(repo, "clock")
    scope = resolve(None, str(repo))
    stored = [create.store_memory(scope, text, anchors=[f"app/clock.py::{name}"]) for text, name in anchored.items()]
    for old, new in rewrites:
        rewrite(repo, old, new)
    checks.forget_cache()
    checks.check_project(scope.project_id, scope.git_root)
    return scope, stored


def test_the_stale_queue_shows_the_diff_and_keeps_or_rejects_from_the_keyboard(
    stub_embedder: StubServer, page: Any, repo: Path
) -> None:
    from memories.anchors import stale

    scope, (first, second) = _anchored_then_changed(
        repo,
        {"vec:1,0,0 Clock.now reads wall time": "Clock.now", "vec:0,1,0 helper answers one": "helper"},
        ("return time.time()", "return time.monotonic()"),
        ("    return 1\n", "    return 2\n"),
    )
    page.goto("/admin/")
    assert page.text_content("#stale-count") == "2"
    page.goto("/admin/memories/memory/stale/")
    page.wait_for_selector("text=-        return time.time()")
    page.wait_for_selector("text=+        return time.monotonic()")
    no_overflow_and_shoot(page, "stale-queue")
    newest = page.get_attribute("article.y-item", "data-id")
    page.keyboard.press("p")  # keep the focused memory: its anchors are pinned to HEAD again
    page.wait_for_selector("text=kept: its anchors are pinned to HEAD again")
    kept = Memory.objects.get(pk=newest)
    assert stale.stale_count(scope.project_id) == 1
    other = second.memory if kept.pk == first.memory.pk else first.memory
    page.keyboard.press("r")
    page.wait_for_selector("dialog[open]")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=rejected (archived")
    assert not Memory.objects.filter(pk=other.pk).exists() and stale.stale_count(scope.project_id) == 0


def test_s_in_the_stale_queue_replaces_the_old_text_with_what_is_typed(
    stub_embedder: StubServer, page: Any, repo: Path
) -> None:
    # Found on the walk: `s` focused the supersede box with the caret before the old text, so the corrected
    # memory read "<what was typed><the old text>".
    _, (old,) = _anchored_then_changed(
        repo, {"vec:1,0,0 Clock.now reads wall time": "Clock.now"}, ("return time.time()", "return time.monotonic()")
    )
    page.goto("/admin/memories/memory/stale/")
    page.wait_for_selector("article.y-item")
    page.keyboard.press("s")
    page.keyboard.type("vec:1,0,0 Clock.now reads the monotonic clock")
    page.click("text=Supersede memory")
    page.wait_for_selector("text=superseded by memory")
    new = Memory.objects.get(pk=old.memory.pk).superseded_by
    assert new is not None and new.content == "vec:1,0,0 Clock.now reads the monotonic clock"


def test_on_a_phone_every_rating_button_is_inside_its_card(stub_embedder: StubServer, page: Any) -> None:
    # Found on walk 18: at 390 px the row of ten fixed-width buttons ran past the card, and "10" was cut off.
    seed(1)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/admin/memories/memory/review/")
    page.wait_for_selector("article.y-item button[value='10']")
    card = page.locator("article.y-item").first.bounding_box()
    ten = page.locator("article.y-item button[value='10']").first.bounding_box()
    assert ten["x"] + ten["width"] <= card["x"] + card["width"], (ten, card)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "review-queue-phone.png"))
