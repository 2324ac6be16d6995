"""The last note's small leftovers (lane fixes13): each test is red without its fix."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from access.actor import acting_as, actor_for_user
from access.models import Project
from dreaming.models import DreamSchedule
from memories import admin_views, lifecycle
from memories.anchors import checks, stale
from memories.models import Memory, MemoryAnchor, MemoryChange
from memories.scope import resolve
from memories.search import stats
from memories.search.stats import LIST_LIMIT
from memories.write import create, edit
from memories.write.validation import NewMemory
from tests.processes import is_ready, product_env, run_cli
from tests.test_anchors import _fresh_cache, checkout, commit, rewrite  # noqa: F401 (fixtures; the first autouse)
from tests.test_supervisor import DEADLINE as SITE_DEADLINE
from tests.test_supervisor import Site, site, wait_for  # noqa: F401 (a fixture: a `yullu serve` of this module's)
from yullu_core.errors import UserError
from yullu_core.text import refuse_id_control

pytestmark = pytest.mark.django_db


def _conflict(scope: Any, n: int) -> tuple[Memory, Memory]:
    one = create.store_memory(scope, f"Queue {n} retries three times before it gives up", "process").memory
    two = create.store_memory(scope, f"Queue {n} never retries: a failure goes to the dead letters", "process").memory
    lifecycle.link_memories(one.pk, two.pk, "contradicts")
    return one, two


def test_the_conflicts_page_names_who_last_wrote_each_text_however_much_came_after(
    django_user_model: Any, keyword_only: None
) -> None:
    """With five or more later changes (ratings) the last write fell out of history_summary's five, and the
    page named no writer (fixes13 kept that; fixes14: the newest write, wherever it is in the history)."""
    ana, bo, cy = (actor_for_user(django_user_model.objects.create_superuser(n)) for n in ("ana", "bo", "cy"))
    scope = resolve("acme/conflicts", None)
    with acting_as(ana):
        buried, rated_twice = _conflict(scope, 1)
        unrated, untouched = _conflict(scope, 2)
    with acting_as(bo):
        edit.update_memory(buried.pk, content="Queue 1 retries five times before it gives up")
        edit.update_memory(rated_twice.pk, content="Queue 1 never retries at all")
        for i in range(6):  # six later edits: the newest is bo's
            edit.update_memory(unrated.pk, content=f"Queue 2 retries {i + 3} times before it gives up")
    with acting_as(cy):
        for rating in (6, 7, 8, 9, 10, 7):  # six later changes: bo's update is not among the last five
            edit.rate_memory(buried.pk, rating)
        for rating in (6, 7):
            edit.rate_memory(rated_twice.pk, rating)
    assert not [r for r in lifecycle.history_summary(buried)["recent"] if r["action"] in ("created", "updated")]
    conflicts = admin_views._with_writers(lifecycle.open_conflicts("acme/conflicts"))
    said = {c[f"{side}_id"]: c[f"{side}_by"] for c in conflicts for side in ("from", "to")}
    wrote = {pk: by.split(" · ")[0] for pk, by in said.items()}
    assert wrote == {buried.pk: "bo", rated_twice.pk: "bo", unrated.pk: "bo", untouched.pk: "ana"}, said
    edited = MemoryChange.objects.filter(memory_uuid=buried.uuid, action="updated").get().created_at
    assert said[buried.pk] == f"bo · {edited.isoformat()[:16].replace('T', ' ')}"


def test_the_conflicts_pages_queries_do_not_grow_with_its_conflicts(django_user_model: Any, keyword_only: None) -> None:
    """Three queries and the user lookups per side of each conflict (history_summary each)."""
    scope = resolve("acme/many-conflicts", None)
    for n in range(6):
        with acting_as(actor_for_user(django_user_model.objects.create_superuser(f"writer{n}"))):
            _conflict(scope, n)
    conflicts = lifecycle.open_conflicts("acme/many-conflicts")

    def queries(listed: list[dict[str, Any]]) -> int:
        with CaptureQueriesContext(connection) as captured:
            written = admin_views._with_writers([dict(c) for c in listed])
        assert all(c["from_by"] and c["to_by"] for c in written)
        return len(captured.captured_queries)

    one, six = queries(conflicts[:1]), queries(conflicts)
    assert six == one <= 3, (one, six)


# --- 2. the admin's forms refuse a control character in a project id -------------------------------------------

# Each admin form that takes a project id (or a clone URL), with the fields a save needs besides it.
ADMIN_FORMS = {
    "project": (
        "/admin/access/project/add/",
        {"created_at_0": "2026-11-27", "created_at_1": "02:30:00"}
        | {"grants-TOTAL_FORMS": "0", "grants-INITIAL_FORMS": "0"},
    ),
    "memory": (
        "/admin/memories/memory/add/",
        {"content": "Queue retries back off", "category": "", "importance": "", "tags_text": "", "ttl_days": ""},
    ),
    "dream schedule": ("/admin/dreaming/dreamschedule/add/", {"enabled": "on"}),
}
CREATED: dict[str, Any] = {"project": Project, "memory": Memory, "dream schedule": DreamSchedule}


@pytest.mark.parametrize("pasted", ["acme/app\x07", "acme/app\n", "https://github.com/acme/app.git\t"])
@pytest.mark.parametrize("form", list(ADMIN_FORMS))
def test_the_admins_forms_refuse_a_control_character_in_a_project_id_as_every_path_does(
    client: Client, owner: Any, keyword_only: None, form: str, pasted: str
) -> None:
    """A pasted bell (or a trailing newline, trimmed unseen) made a project that no checkout names; the CLI,
    REST and MCP refuse it with refuse_id_control's sentence."""
    client.force_login(owner)
    url, fields = ADMIN_FORMS[form]
    answer = client.post(url, {**fields, "project_id": pasted, "_save": "Save"})
    assert answer.status_code == 200, f"saved: {answer.status_code} {answer.get('Location')}"
    with pytest.raises(UserError) as said:
        refuse_id_control(pasted)
    errors = answer.context["adminform"].form.errors
    assert errors.get("project_id") == [str(said.value)], errors
    assert CREATED[form].objects.count() == 0
    assert not Project.objects.exists()


def test_the_admins_project_form_reads_a_clone_url_as_yullu_grant_does(client: Client, owner: Any) -> None:
    client.force_login(owner)
    url, fields = ADMIN_FORMS["project"]
    answer = client.post(url, {**fields, "project_id": "git@github.com:acme/app.git", "_save": "Save"})
    assert answer.status_code == 302, answer.context["adminform"].form.errors
    assert list(Project.objects.values_list("project_id", flat=True)) == ["github.com/acme/app"]


# --- 3. a data folder deleted under a running supervisor ------------------------------------------------------


@pytest.mark.slow
def test_a_data_folder_deleted_under_a_running_supervisor_comes_back_migrated_and_stores(
    site: Site,  # noqa: F811
) -> None:
    """The supervisor started a fresh, empty cluster (initdb) and never migrated it: the site answered
    errors (and /api/status 503, migrations pending) until `yullu serve` was restarted."""
    old = site.postmaster()
    old_token = site.token()
    shutil.rmtree(site.pgdata())
    try:
        wait_for(lambda: f"the embedded PostgreSQL (pid {old.pid}) is gone" in site.output(), site, "the log line")

        days = iter(("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays") * 40)
        facts = ({"project_id": "acme/refilled", "content": f"Deploys of the {n} service go out on {d}"}
                 for n, d in enumerate(days))  # fmt: skip

        def a_store_works() -> bool:
            if not is_ready(site.url):
                return False
            auth = {"authorization": f"Bearer {site.token()}"}  # a new database: bootstrap issued a new token
            stored = httpx.post(f"{site.url}/api/memories", headers=auth, json=next(facts), timeout=30)
            return stored.status_code == 201  # a new memory (the same text again would be its duplicate: 200)

        wait_for(a_store_works, site, "/api/status ready and a REST store answered 201", timeout=SITE_DEADLINE)
        assert site.postmaster().pid != old.pid
        # The old postmaster, left running, removed the new server's socket when it noticed (within a minute):
        # the site then stayed unreachable. It is ended before the new cluster starts.
        assert not old.is_running() or old.status() == psutil.STATUS_ZOMBIE
        wait_for(a_store_works, site, "a second store")
        assert site.token() != old_token
        assert "brought the new database up to date" in site.output(), site.output()[-3000:]
        assert site.proc.poll() is None
    finally:  # its folder deleted, the old postmaster would notice only at its next check of postmaster.pid
        with contextlib.suppress(psutil.Error):
            old.kill()


# --- 4. a cited range's last line swapped with the next one ---------------------------------------------------

STEPS = "def steps():\n    one()\n    two()\n    three()\n    four()\n"


def test_a_cited_last_line_swapped_with_the_next_shows_as_moved_out_and_the_next_in(
    checkout: Path,  # noqa: F811
    keyword_only: None,
) -> None:
    """Lines 1-3 cited, the third and fourth swapped: the diff followed the cited line down a line and said the
    fourth was added inside the span (`+    three()`), as if new code had come in and the cited line stayed.
    A swap moves both lines by one: the span keeps its numbers, the cited line moved out, its neighbour in."""
    (checkout / "app" / "steps.py").write_text(STEPS)
    commit(checkout, "steps")
    scope = resolve(None, str(checkout))
    stored = create.store_memory(scope, "steps() runs one then two", "domain", anchors=["app/steps.py:1-3"])
    rewrite(checkout, "    two()\n    three()\n", "    three()\n    two()\n", path="app/steps.py")
    checks.check_project(stored.memory.project_id, checkout, force=True)
    (anchor,) = MemoryAnchor.objects.filter(memory=stored.memory)
    assert anchor.status == "changed"
    body = stale.diff(anchor).splitlines()[2:]
    assert body == ["@@ -1,3 +1,3 @@", " def steps():", "     one()", "-    two()", "+    three()"], stale.diff(anchor)


@pytest.mark.parametrize(
    ("after", "span"),
    [
        (["x", "a", "b", "y", "c", "z"], (2, 4)),  # the last cited line and the next swapped
        (["a", "x", "b", "c", "y", "z"], (2, 4)),  # the first cited line and the one before swapped
        (["x", "a", "c", "b", "y", "z"], (2, 4)),  # two cited lines swapped: the span is the same lines
        (["x", "a", "b", "y", "w", "c", "z"], (2, 6)),  # two lines moved up past the cited last line: they joined
    ],
    ids=["last-swapped", "first-swapped", "inside-swapped", "two-moved-in"],
)
def test_a_cited_span_keeps_its_place_when_its_edge_line_swaps_with_its_neighbour(
    after: list[str], span: tuple[int, int]
) -> None:
    assert stale.follow(["x", "a", "b", "c", "y", "z"], after, 2, 4) == span


# --- 5. `yullu memories list` pages ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_memories_list_pages_with_offset_in_the_order_of_the_rest_list(tmp_path: Path, keyword_only: None) -> None:
    """A list stopped at 200 and pointed to an export: a terminal user could not see the 201st memory."""
    many = [NewMemory(f"Module {i} owns queue number {i} and retries it {i} times", "process") for i in range(205)]
    create.store_memories(resolve("acme/paged", None), many, source="cli")
    newest_first = [m["id"] for m in stats.list_memories("acme/paged", LIST_LIMIT.hi)]
    newest_first += [m.pk for m in Memory.objects.filter(project_id="acme/paged").order_by("-updated_at", "-id")[200:]]
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))

    def listed(*args: str) -> tuple[list[int], str, str]:
        ran = run_cli(["memories", "list", "--project", "acme/paged", "--json", *args], env)
        assert ran.returncode == 0, ran.stderr
        return [m["id"] for m in json.loads(ran.stdout)["memories"]], ran.stdout, ran.stderr

    first, _, said = listed("--limit", "500")
    assert first == newest_first[:200]
    assert "`--offset 200` shows the next" in said, said
    rest, _, said = listed("--limit", "500", "--offset", "200")
    assert rest == newest_first[200:] and "showing" not in said, said
    middle, _, _ = listed("--limit", "3", "--offset", "100")
    assert middle == newest_first[100:103]
    assert listed("--offset", "205")[0] == []
    bad = run_cli(["memories", "list", "--project", "acme/paged", "--offset", "-1"], env)
    assert bad.returncode == 2 and "--offset" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
