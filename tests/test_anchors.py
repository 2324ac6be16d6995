"""Code anchors (docs/contract.md §12) end to end: real git repositories, real commits, the REST API and the MCP
tools of the live server, the `yullu anchors check` command, and anchors travelling in sync events."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.anchors import checks, pins, stale, store, symbols
from memories.anchors.refs import AnchorRef
from memories.anchors.repo import open_repo
from memories.models import Memory, MemoryAnchor
from memories.scope import resolve
from memories.write import create, edit
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope
from tests.mcp_client import call, http_session
from tests.processes import git, product_env, run_cli
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)

CLOCK = """import time


class Clock:
    def now(self):
        return time.time()

    def later(self, seconds):
        return self.now() + seconds


def helper():
    return 1
"""


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A", "app")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    checks.forget_cache()
    yield
    checks.forget_cache()


@pytest.fixture
def checkout(repo: Path) -> Path:
    (repo / "app").mkdir()
    (repo / "app" / "clock.py").write_text(CLOCK)
    commit(repo, "clock")
    return repo


def rewrite(repo: Path, old: str, new: str, path: str = "app/clock.py") -> None:
    f = repo / path
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new))
    commit(repo)


def by_path(anchors: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {a["path"] + (f"::{a['symbol']}" if a["symbol"] else ""): a for a in anchors}


# --- through REST: ok, changed, and what build_context says --------------------------------


def test_rest_walk_ok_then_changed_with_the_context_note(
    checkout: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    auth = {"Authorization": f"Bearer {owner_token}"}
    cwd = str(checkout)
    with httpx.Client(base_url=live_server_url, headers=auth, timeout=60) as rest:
        stored = rest.post(
            "/api/memories",
            json={
                "content": "vec:1,0,0 Clock.now reads the wall clock",
                "cwd": cwd,
                "anchors": ["app/clock.py::Clock.now"],
            },
        )
        assert stored.status_code == 201, stored.text
        assert stored.json()["anchors"][0]["status"] == "ok"

        def recall() -> dict[str, Any]:
            r = rest.post("/api/memories/recall", json={"query": "vec:1,0,0 clock", "cwd": cwd, "min_similarity": 0})
            assert r.status_code == 200, r.text
            return r.json()["results"][0]

        hit = recall()
        assert (hit["stale"], hit["anchors"][0]["status"], hit["anchors"][0]["lines"]) == (False, "ok", [5, 6])
        rewrite(checkout, "return time.time()", "return time.monotonic()")
        hit = recall()
        assert (hit["stale"], hit["anchors"][0]["status"]) == (True, "changed")
        context = rest.post("/api/context", json={"query": "vec:1,0,0 clock", "cwd": cwd}).json()["context"]
        assert "cited code changed since this was written: app/clock.py" in context


def test_a_duplicate_store_says_its_anchors_were_not_attached(
    checkout: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    # (walk 18: the answer was `created: false, duplicate_of` and the memory stayed unanchored, without a word)
    body = {"content": "vec:1,0,0 Clock.now reads the wall clock", "cwd": str(checkout)}
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=60) as rest:
        first = rest.post("/api/memories", json=body)
        assert first.status_code == 201, first.text
        again = rest.post("/api/memories", json=body | {"anchors": ["app/clock.py::Clock.now"]})
        plain = rest.post("/api/memories", json=body)
    answer = again.json()
    assert (again.status_code, answer["duplicate_of"]) == (200, first.json()["id"]), again.text
    assert f"update_memory(id={answer['duplicate_of']}, anchors=" in answer["anchors_not_attached"]
    assert "anchors_not_attached" not in plain.json()  # nothing asked, nothing said
    assert not MemoryAnchor.objects.exists()  # the existing memory was not changed


def test_formatting_and_code_added_elsewhere_keep_anchors_ok_or_moved(
    checkout: Path, stub_embedder: StubServer
) -> None:
    scope = resolve(None, str(checkout))
    create.store_memory(
        scope, "vec:1,0,0 how the clock works", anchors=["app/clock.py::Clock.now", "app/clock.py:12-13"]
    )
    rewrite(checkout, "import time\n", "import time\nimport os\n\n\ndef added():\n    return os.sep\n")
    rewrite(checkout, "    def later(self, seconds):", "    def later(self,   seconds):  # reformatted")
    result = checks.check_project(scope.project_id, scope.git_root)
    statuses = {a["path"] + (a["symbol"] or ""): a for a in _all_anchors(scope.project_id)}
    assert not result.stale
    now = statuses["app/clock.pyClock.now"]
    assert (now["status"], now["current_lines"]) == ("moved", [10, 11])
    helper = statuses["app/clock.py"]
    assert (helper["status"], helper["current_lines"]) == ("moved", [17, 18])


def _all_anchors(project_id: str) -> list[Any]:
    return [checks.anchor_out(a) for a in MemoryAnchor.objects.filter(project_id=project_id)]


# --- through MCP: moved (a rename), missing ---------------------------------------------------


def test_mcp_walk_moved_by_a_rename_then_missing(
    checkout: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    cwd = str(checkout)

    async def walk() -> list[Any]:
        seen = []
        async with http_session(live_server_url, owner_token) as s:
            err, stored = await call(
                s,
                "store_memory",
                content="vec:0,1,0 helper() always answers one",
                category="domain",
                cwd=cwd,
                anchors=["app/clock.py::helper", "app/clock.py:1-1"],
            )
            assert not err, stored
            retrieve = {"query": "vec:0,1,0 helper", "cwd": cwd, "min_similarity": 0}
            git(checkout, "mv", "app/clock.py", "app/timekeeping.py")
            commit(checkout, "rename")
            seen.append(await call(s, "retrieve_memories", **retrieve))
            (checkout / "app" / "timekeeping.py").write_text(CLOCK.replace("def helper():\n    return 1\n", ""))
            commit(checkout, "helper removed")
            seen.append(await call(s, "retrieve_memories", **retrieve))
        return seen

    (err1, renamed), (err2, removed) = asyncio.run(walk())
    assert not err1 and not err2
    hit = renamed["results"][0]
    helper = by_path(hit["anchors"])["app/clock.py::helper"]
    assert (hit["stale"], helper["status"], helper["current_path"]) == (False, "moved", "app/timekeeping.py")
    hit = removed["results"][0]
    anchors = by_path(hit["anchors"])
    assert (hit["stale"], anchors["app/clock.py::helper"]["status"]) == (True, "missing")
    assert anchors["app/clock.py"]["status"] == "moved"  # line 1 is still there, in the renamed file


def test_a_deleted_file_is_missing(checkout: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(checkout))
    m = create.store_memory(scope, "vec:1,0,0 the clock module", anchors=["app/clock.py"]).memory
    (checkout / "app" / "clock.py").unlink()
    commit(checkout, "gone")
    found = checks.for_memories(scope.project_id, {m.pk: m.updated_at.timestamp()})
    assert [a["status"] for a in found[m.pk]] == ["missing"]


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "anchor", ["/etc/passwd", "../outside.py", "app/../../outside.py", "C:/x.py", "link/secret.py", "app/nope.py"]
)
def test_anchors_outside_the_repository_are_refused_over_rest(
    checkout: Path, tmp_path: Path, anchor: str, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.py").write_text("x = 1\n")
    (checkout / "link").symlink_to(outside)  # a symlink leaving the repository
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {owner_token}"}, timeout=60) as rest:
        r = rest.post("/api/memories", json={"content": "vec:1,0,0 x", "cwd": str(checkout), "anchors": [anchor]})
    assert r.status_code == 400, r.text
    assert "anchor" in r.json()["error"] and "Traceback" not in r.text
    assert not Memory.objects.exists()


def test_an_anchor_outside_the_repository_is_a_tool_error(
    checkout: Path, live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    async def go() -> tuple[bool, Any]:
        async with http_session(live_server_url, owner_token) as s:
            return await call(s, "store_memory", content="vec:1,0,0 x", cwd=str(checkout), anchors=["../../etc/passwd"])

    err, text = asyncio.run(go())
    assert err and "outside the repository" in text
    assert not Memory.objects.exists()


def test_paths_written_in_the_content_that_exist_become_anchors(checkout: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(checkout))
    stored = create.store_memory(
        scope, "vec:1,0,0 The clock lives in app/clock.py:4-6 (not in lib/clock.py), see e.g. v1.2 notes"
    )
    assert [(a["path"], a["lines"]) for a in stored.anchors] == [("app/clock.py", [4, 6])]


def test_a_symbol_written_after_its_file_in_the_content_cites_the_symbol(
    checkout: Path, stub_embedder: StubServer
) -> None:
    """Walk 23: "Totals round per line in billing/invoice.py::total_cents" cited the whole file, so renaming another
    function of it marked the memory stale. Written as an anchor is, it cites the symbol; a symbol the file does
    not define still cites the file."""
    scope = resolve(None, str(checkout))
    cited = create.store_memory(scope, "vec:1,0,0 app/clock.py::Clock.now reads the wall clock, in seconds.")
    assert [(a["path"], a.get("symbol")) for a in cited.anchors] == [("app/clock.py", "Clock.now")]
    typo = create.store_memory(scope, "vec:0,1,0 see app/clock.py::Clock.never for the helper")
    assert [(a["path"], a.get("symbol")) for a in typo.anchors] == [("app/clock.py", None)]
    rewrite(checkout, "def helper():", "def renamed_helper():")  # (and commits)
    m = cited.memory
    found = checks.for_memories(scope.project_id, {m.pk: m.updated_at.timestamp()})
    assert [a["status"] for a in found[m.pk]] == ["ok"]


# --- symbols in Go and TypeScript --------------------------------------------------------------


def test_symbols_are_found_in_go_typescript_and_javascript() -> None:
    go = b"package clock\n\ntype Clock struct{}\n\nfunc (c *Clock) Now() int {\n\treturn 1\n}\n\n"
    go += b"func New() *Clock {\n\treturn nil\n}\n"
    assert symbols.find("c.go", go, "Clock.Now") == (5, 7)
    assert symbols.find("c.go", go, "New") == (9, 11)
    assert symbols.find("c.go", go, "Clock") == (3, 3)
    ts = b"export class Clock {\n  now(): number {\n    return 1\n  }\n}\n\nexport const later = (s: number) => s\n"
    assert symbols.find("c.ts", ts, "Clock.now") == (2, 4)
    assert symbols.find("c.ts", ts, "later") == (7, 7)
    assert symbols.find("c.js", b"function f() {\n}\n", "f") == (1, 2)
    assert symbols.find("c.ts", ts, "Clock.gone") is None


def test_a_pin_and_its_check_in_a_go_file(checkout: Path) -> None:
    (checkout / "app" / "clock.go").write_text("package app\n\nfunc Now() int {\n\treturn 1\n}\n")
    commit(checkout, "go")
    repo = open_repo(checkout)
    assert repo is not None
    head = repo.head() or ""
    p = pins.pin(repo, head, AnchorRef("app/clock.go", symbol="Now"))
    (checkout / "app" / "clock.go").write_text("package app\n\n// Now is now.\nfunc Now() int {\n    return 1\n}\n")
    commit(checkout, "comment above, spaces inside")
    assert pins.check(repo, repo.head() or "", p).status == "moved"
    (checkout / "app" / "clock.go").write_text("package app\n\nfunc Now() int {\n\treturn 2\n}\n")
    commit(checkout, "edit")
    assert pins.check(repo, repo.head() or "", p).status == "changed"


RATES = """from decimal import Decimal

VAT = Decimal("0.20")


def gross(net):
    return net * (1 + VAT)


def rounded(amount):
    return amount.quantize(Decimal("0.01"))
"""


def test_a_small_file_renamed_with_a_few_edits_is_followed_not_missing(checkout: Path) -> None:
    # git's default 50 % similarity called this rename (33 % similar to libgit2: a new import, a new rate, a
    # helper renamed) "deleted + added", and an anchor on the untouched `gross` said `missing`.
    (checkout / "app" / "rates.py").write_text(RATES)
    commit(checkout, "rates")
    repo = open_repo(checkout)
    assert repo is not None
    on_gross = pins.pin(repo, repo.head() or "", AnchorRef("app/rates.py", symbol="gross"))
    on_file = pins.pin(repo, repo.head() or "", AnchorRef("app/rates.py"))
    git(checkout, "mv", "app/rates.py", "app/tax.py")
    tax = RATES.replace("import Decimal", "import ROUND_HALF_UP, Decimal").replace("def rounded", "def to_cents")
    tax = tax.replace('"0.20"', '"0.21"')
    (checkout / "app" / "tax.py").write_text(tax.replace('"0.01"))', '"0.01"), rounding=ROUND_HALF_UP)'))
    commit(checkout, "rates.py -> tax.py")
    head = repo.head() or ""
    assert pins.check(repo, head, on_gross) == pins.Verdict("moved", "app/tax.py", 6, 7)
    assert pins.check(repo, head, on_file) == pins.Verdict("changed", "app/tax.py")  # followed, and edited


def test_code_split_off_into_new_files_is_followed_to_where_it_went(checkout: Path) -> None:
    repo = open_repo(checkout)
    assert repo is not None
    later = pins.pin(repo, repo.head() or "", AnchorRef("app/clock.py", symbol="Clock.later"))
    helper = pins.pin(repo, repo.head() or "", AnchorRef("app/clock.py", symbol="helper"))
    lines = pins.pin(repo, repo.head() or "", AnchorRef("app/clock.py", start=8, end=9))
    cls, rest = CLOCK.split("\n\n\ndef helper")
    (checkout / "app" / "timing.py").write_text(cls.replace("import time", "import time  # the clock") + "\n")
    (checkout / "app" / "util.py").write_text("# small helpers\nVERSION = 2\n\n\ndef helper" + rest)
    (checkout / "app" / "clock.py").unlink()
    commit(checkout, "split clock.py")
    head = repo.head() or ""
    assert pins.check(repo, head, later) == pins.Verdict("moved", "app/timing.py", 8, 9)
    assert pins.check(repo, head, helper) == pins.Verdict("moved", "app/util.py", 5, 6)
    assert pins.check(repo, head, lines) == pins.Verdict("moved", "app/timing.py", 8, 9)


PAYOUT_WORKER = """defmodule Payouts.Worker do
  def perform(payout) do
    if Disputes.open?(payout.merchant_id) do
      {:hold, :dispute}
    end
    Bank.send(payout)
  end
"""


def test_a_small_file_is_changed_when_any_of_its_lines_is_gone(checkout: Path) -> None:
    # "payouts are held during disputes" cites payout_worker.ex whole: removing the 3 lines of the dispute
    # logic kept 4 of 7 lines (over half) and the anchor stayed `ok`.
    worker = checkout / "app" / "payout_worker.ex"
    worker.write_text(PAYOUT_WORKER)
    commit(checkout, "worker")
    repo = open_repo(checkout)
    assert repo is not None
    p = pins.pin(repo, repo.head() or "", AnchorRef("app/payout_worker.ex"))
    worker.write_text(PAYOUT_WORKER + "\n  def retry(payout), do: perform(payout)\n")
    commit(checkout, "a line added")
    assert pins.check(repo, repo.head() or "", p).status == "ok"
    rewrite(
        checkout,
        "    if Disputes.open?(payout.merchant_id) do\n      {:hold, :dispute}\n    end\n",
        "",
        path=str(worker),
    )
    assert pins.check(repo, repo.head() or "", p).status == "changed"


def test_a_large_file_with_a_few_lines_gone_stays_ok(checkout: Path) -> None:
    # Past SMALL_FILE lines a memory that names the file says little of any one part: half must go.
    big = checkout / "app" / "big.py"
    big.write_text("".join(f"def f{i}():\n    return {i}\n\n" for i in range(15)))
    commit(checkout, "big")
    repo = open_repo(checkout)
    assert repo is not None
    p = pins.pin(repo, repo.head() or "", AnchorRef("app/big.py"))
    rewrite(checkout, "def f3():\n    return 3\n", "", path=str(big))
    assert pins.check(repo, repo.head() or "", p).status == "ok"


# --- the command for CI ------------------------------------------------------------------------


def test_cli_check_exits_1_only_when_memories_are_stale(
    checkout: Path, tmp_path: Path, stub_embedder: StubServer
) -> None:
    scope = resolve(None, str(checkout))
    create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"])
    env = product_env(tmp_path / "home")
    clean = run_cli(["anchors", "check", "--cwd", str(checkout), "--json"], env)
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["stale_memories"] == []
    rewrite(checkout, "return self.now() + seconds", "return self.now() + 2 * seconds")
    stale = run_cli(["anchors", "check", "--cwd", str(checkout), "--json"], env)
    assert stale.returncode == 1, stale.stderr
    out = json.loads(stale.stdout)
    assert [a["status"] for m in out["stale_memories"] for a in m["anchors"]] == ["changed"]
    human = run_cli(["anchors", "check", "--cwd", str(checkout)], env)
    assert human.returncode == 1 and "changed: app/clock.py::Clock.later\n" in human.stdout
    # Walk (lane team23): renamed, the code is elsewhere; the line said only the path it was pinned at.
    git(checkout, "mv", "app/clock.py", "app/timing.py")
    commit(checkout, "rename")
    renamed = run_cli(["anchors", "check", "--cwd", str(checkout)], env)
    assert "changed: app/clock.py::Clock.later (now in app/timing.py)\n" in renamed.stdout, renamed.stdout


def test_cli_show_lists_anchors_with_their_status(checkout: Path, tmp_path: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(checkout))
    m = create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"]).memory
    env = product_env(tmp_path / "home")
    rewrite(checkout, "return self.now() + seconds", "return self.now() + 2 * seconds")
    shown = run_cli(["memories", "show", str(m.pk), "--json"], env)
    assert shown.returncode == 0, shown.stderr
    out = json.loads(shown.stdout)
    assert [(a["symbol"], a["status"]) for a in out["anchors"]] == [("Clock.later", "changed")] and out["stale"]
    human = run_cli(["memories", "show", str(m.pk)], env).stdout
    assert "anchors: app/clock.py::Clock.later (changed)" in human and "stale: True" in human, human


# --- team: anchors travel in events; each checkout judges them ----------------------------------


def test_anchors_and_repins_travel_in_sync_events_and_are_checked_against_each_checkout(
    checkout: Path, tmp_path: Path, stub_embedder: StubServer
) -> None:
    scope = resolve(None, str(checkout))
    memory = create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"]).memory
    pinned = store.wire_of(memory)
    # A teammate's clone, on a branch where Clock.later was rewritten.
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(checkout), str(teammate))
    git(teammate, "remote", "set-url", "origin", git(checkout, "remote", "get-url", "origin").strip())
    git(teammate, "checkout", "-q", "-b", "feature")
    (teammate / "app" / "clock.py").write_text(CLOCK.replace("return self.now() + seconds", "return seconds"))
    commit(teammate, "feature: later is relative")
    shutil.copytree(checkout / ".yullu", teammate / ".yullu")

    def as_teammate() -> Memory:
        """The teammate's server: it knows nothing but the log (no row, empty ledger)."""
        Memory.objects.all().delete()
        LedgerEntry.objects.all().delete()
        ProjectSyncState.objects.all().delete()
        checks.forget_cache()
        result = reconcile_scope(resolve(None, str(teammate)))
        assert result["parse_errors"] == []
        return Memory.objects.get(uuid=memory.uuid)

    theirs = as_teammate()
    assert store.wire_of(theirs) == pinned  # commit, blob and text hash as pinned by the writer
    found = checks.for_memories(scope.project_id, {theirs.pk: theirs.updated_at.timestamp()})[theirs.pk]
    assert [a["status"] for a in found] == ["changed"]  # stale on this branch, not deleted
    assert Memory.objects.filter(pk=theirs.pk).exists()

    # Back on the writer's side: the code changes, the writer keeps the memory (re-pin = an event).
    Memory.objects.all().delete()
    LedgerEntry.objects.all().delete()
    ProjectSyncState.objects.all().delete()
    back = reconcile_scope(resolve(None, str(checkout)))
    assert back["created"] == 1, back
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    mine = Memory.objects.get(uuid=memory.uuid)
    edit.repin_memory(mine.pk, source="admin")
    repinned = store.wire_of(Memory.objects.get(uuid=memory.uuid))
    assert repinned[0]["commit"] != pinned[0]["commit"]
    shutil.rmtree(teammate / ".yullu")
    shutil.copytree(checkout / ".yullu", teammate / ".yullu")
    theirs = as_teammate()
    assert store.wire_of(theirs) == repinned
    found = checks.for_memories(scope.project_id, {theirs.pk: theirs.updated_at.timestamp()})[theirs.pk]
    assert [a["status"] for a in found] == ["ok"]  # the same text is on the teammate's branch


def test_the_beat_task_checks_known_projects_and_records_the_verdict(checkout: Path, stub_embedder: StubServer) -> None:
    from memories.tasks import check_anchors
    from yullu_site.celery import app

    assert app.conf.beat_schedule["anchors-tick"]["task"] == check_anchors.name
    scope = resolve(None, str(checkout))
    create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"])
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    check_anchors()
    row = MemoryAnchor.objects.get()
    assert (row.status, row.checked_head) == ("changed", open_repo(checkout).head())  # type: ignore[union-attr]
    assert stale.stale_count(scope.project_id) == 1


# --- every write path: update, supersede, dreaming, export and import ----------------------------


def test_new_content_re_pins_and_a_supersede_carries_the_anchors(checkout: Path, stub_embedder: StubServer) -> None:
    scope = resolve(None, str(checkout))
    m = create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"]).memory
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    assert checks.check_project(scope.project_id, scope.git_root).stale
    edit.update_memory(m.pk, content="vec:1,0,0 later returns the seconds it is given")
    assert not checks.check_project(scope.project_id, scope.git_root).stale  # rewritten against HEAD
    rewrite(checkout, "return seconds", "return 2 * seconds")
    new = edit.update_memory(m.pk, content="vec:0,1,0 later doubles the seconds", supersede=True)
    assert [a["symbol"] for a in store.wire_of(new)] == ["Clock.later"]
    assert not checks.check_project(scope.project_id, scope.git_root).stale  # the old one is superseded


def test_dreaming_cites_code_and_sees_what_changed(checkout: Path, stub_embedder: StubServer) -> None:
    from dreaming.operations import apply_operations
    from dreaming.services import _context

    scope = resolve(None, str(checkout))
    op = {"op": "create", "content": "vec:1,0,0 Clock.later adds seconds to now", "category": "domain"}
    apply_operations(scope, [op | {"anchors": ["app/clock.py::Clock.later", "../escape.py", "app/nope.py"]}])
    m = Memory.objects.get()
    assert [a["path"] for a in store.wire_of(m)] == ["app/clock.py"]  # a reasoner's bad anchors are dropped
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    checks.check_project(scope.project_id, scope.git_root)
    memories, _ = _context(scope.project_id, 10)
    note = memories[0]["cited_code_changed"][0]
    assert note["status"] == "changed" and "-        return self.now() + seconds" in note["diff"]


def test_export_and_import_keep_the_pins(checkout: Path, tmp_path: Path, stub_embedder: StubServer) -> None:
    from memories.transfer import export, importer

    scope = resolve(None, str(checkout))
    m = create.store_memory(scope, "vec:1,0,0 later adds seconds", anchors=["app/clock.py::Clock.later"]).memory
    pinned = store.wire_of(m)
    out = tmp_path / "export.jsonl"
    with out.open("w") as fh:
        export.export_json(scope.project_id, fh)
    Memory.objects.all().delete()
    result = importer.import_rows(importer.read_yullu(out, None), importer.ImportResult("yullu"))
    assert result.created == 1
    assert store.wire_of(Memory.objects.get()) == pinned


def test_the_admin_form_sets_anchors_and_refuses_an_escape(
    checkout: Path, admin_client: Any, stub_embedder: StubServer
) -> None:
    scope = resolve(None, str(checkout))
    m = create.store_memory(scope, "vec:1,0,0 the clock", anchors=["app/clock.py"]).memory
    url = f"/admin/memories/memory/{m.pk}/change/"
    form = {"content": m.content, "category": "", "importance": "normal", "tags_text": "", "ttl_days": ""}
    page = admin_client.get(url)
    assert "app/clock.py" in page.content.decode()  # the current anchors, one per line
    admin_client.post(url, form | {"anchors_text": "app/clock.py::Clock.now\napp/clock.py:12-13"})
    assert store.cited(Memory.objects.get(pk=m.pk)) == ["app/clock.py::Clock.now", "app/clock.py:12-13"]
    refused = admin_client.post(url, form | {"anchors_text": "../../etc/passwd"})
    assert "outside the repository" in refused.content.decode()
    assert store.cited(Memory.objects.get(pk=m.pk)) == ["app/clock.py::Clock.now", "app/clock.py:12-13"]


def test_keeping_a_stale_memory_in_the_admin_says_which_anchors_were_dropped(
    checkout: Path, admin_client: Any, stub_embedder: StubServer
) -> None:
    scope = resolve(None, str(checkout))
    cites = ["app/clock.py::Clock.now", "app/clock.py::helper"]
    m = create.store_memory(scope, "vec:1,0,0 now and helper", anchors=cites).memory
    rewrite(checkout, "def helper():\n    return 1\n", "")  # helper is gone: its anchor cannot be re-pinned
    page = admin_client.post("/admin/memories/memory/stale/", {"action": "keep", "memory_id": m.pk}, follow=True)
    said = page.content.decode()
    assert f"Memory {m.pk} kept: 1 whose code is gone was dropped; its anchors are pinned to HEAD again." in said
    assert store.cited(Memory.objects.get(pk=m.pk)) == ["app/clock.py::Clock.now"]


def test_a_comment_appended_to_a_cited_line_is_a_change_not_a_move(checkout: Path) -> None:
    repo = open_repo(checkout)
    assert repo is not None
    p = pins.pin(repo, repo.head() or "", AnchorRef("app/clock.py", start=12, end=13))
    rewrite(checkout, "def helper():\n    return 1\n", "def helper():\n    return 1  # type: ignore\n")
    assert pins.check(repo, repo.head() or "", p).status == "changed"
    rewrite(checkout, "import time\n", "import time\nimport os\n")
    rewrite(checkout, "    return 1  # type: ignore\n", "    return 1\n")
    assert pins.check(repo, repo.head() or "", p) == pins.Verdict("moved", "app/clock.py", 13, 14)


def test_a_stale_memory_ranks_below_a_current_one_but_is_still_returned(
    checkout: Path, stub_embedder: StubServer
) -> None:
    from memories.search import queries

    scope = resolve(None, str(checkout))
    stale = create.store_memory(scope, "vec:1,0,0 later adds seconds to now", anchors=["app/clock.py::Clock.later"])
    fresh = create.store_memory(scope, "vec:0.95,0.3,0 later returns the seconds it is given")
    found = queries.search(scope.project_id, "vec:1,0,0 what does later do?", min_similarity=0.5, log=False)
    assert [h["id"] for h in found.results] == [stale.memory.pk, fresh.memory.pk]  # closer, so first
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    checks.forget_cache()
    found = queries.search(scope.project_id, "vec:1,0,0 what does later do?", min_similarity=0.5, log=False)
    assert [(h["id"], h["stale"]) for h in found.results] == [(fresh.memory.pk, False), (stale.memory.pk, True)]


def test_a_stale_memory_ranks_below_its_correction_through_the_calibrated_gate(checkout: Path) -> None:
    """With the real models the gate passes both and orders what it passed by closeness to the question
    (queries.closest_first): the stale memory, closer in words, had come back first again (walk 12)."""
    from memories.search import queries

    scope = resolve(None, str(checkout))
    question = "what does Clock.later return?"
    stale = create.store_memory(
        scope,
        "Clock.later returns what Clock.now returns plus the seconds it is given.",
        "gotcha",
        anchors=["app/clock.py::Clock.later"],
    ).memory
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    checks.forget_cache()
    fresh = create.store_memory(
        scope,
        "Clock.later now hands back only the seconds passed to it; now() is no longer added.",
        "gotcha",
        anchors=["app/clock.py::Clock.later"],
    ).memory
    found = queries.search(scope.project_id, question, log=False).results
    assert [(h["id"], h["stale"]) for h in found] == [(fresh.pk, False), (stale.pk, True)]


def test_get_memory_says_stale_as_a_recall_result_does(checkout: Path, stub_embedder: StubServer) -> None:
    from memories import lifecycle

    scope = resolve(None, str(checkout))
    memory = create.store_memory(scope, "vec:1,0,0 later adds seconds to now", anchors=["app/clock.py::Clock.later"])
    assert lifecycle.memory_detail(memory.memory.pk)["stale"] is False
    rewrite(checkout, "return self.now() + seconds", "return seconds")
    checks.forget_cache()
    from memories.search import queries

    found = queries.search(scope.project_id, "vec:1,0,0 what does later do?", min_similarity=0.5, log=False)
    assert found.results[0]["stale"] is True  # the recall checks the anchor and records its status
    assert lifecycle.memory_detail(memory.memory.pk)["stale"] is True  # walk 12: get_memory had no such flag


def test_a_search_pays_no_git_cost_twice_at_one_head(
    checkout: Path, stub_embedder: StubServer, monkeypatch: pytest.MonkeyPatch, django_assert_max_num_queries: Any
) -> None:
    # SPEC §12: checked against HEAD on retrieval, cached per HEAD, so a search pays no git cost twice.
    from memories.search import queries

    scope = resolve(None, str(checkout))
    memory = create.store_memory(scope, "vec:1,0,0 later adds seconds to now", anchors=["app/clock.py::Clock.later"])
    real, checked = checks._safe_check, []

    def counted(repo: Any, head: str, a: MemoryAnchor) -> bool:
        checked.append(a.pk)
        return real(repo, head, a)

    monkeypatch.setattr(checks, "_safe_check", counted)

    def search() -> Any:
        return queries.search(scope.project_id, "vec:1,0,0 what does later do?", min_similarity=0.5).results[0]

    rewrite(checkout, "def helper():", "def helper_renamed():")  # HEAD moves; the cited method is untouched
    assert (search()["id"], search()["stale"], len(checked)) == (memory.memory.pk, False, 1)
    with django_assert_max_num_queries(0, info="anchor rows"):
        checks.for_memories(scope.project_id, {memory.memory.pk: checks.stamp(memory.memory.updated_at)})
    rewrite(checkout, "return self.now() + seconds", "return seconds")  # a new HEAD is checked once more
    assert (search()["stale"], search()["stale"], len(checked)) == (True, True, 2)
