"""A team log that has grown enough for compaction to help is pointed out, by `yullu doctor` and on
the admin's dashboard, and no longer once it is compacted."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memories.models import Memory
from memories.scope import Scope
from sync import hygiene
from sync.compact import compact
from sync.eventlog import new_event, write_event
from sync.models import ProjectSyncState
from sync.services import reconcile_scope
from tests.processes import product_env, run_cli

pytestmark = pytest.mark.django_db(transaction=True)
PROJECT = "github.com/acme/hygiene"
EDITS = 40


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The product advises from 5,000 files; the same rule on a log of a few dozen."""
    monkeypatch.setattr(hygiene, "COMPACT_MIN_FILES", 20)


def edited_log(repo: Path) -> None:
    """One memory created, then edited EDITS times: EDITS + 1 files for one memory."""
    folder = repo / ".yullu" / "logs"
    memory = str(uuid.uuid4())
    ts = 1_700_000_000 * 10**9
    write_event(folder, new_event("create", memory, ts, content="we deploy with make ship", tags=[]))
    for n in range(EDITS):
        write_event(folder, new_event("update", memory, ts + (n + 1) * 10**9, content=f"we deploy with make ship{n}"))


def test_a_log_of_many_edits_to_few_memories_is_pointed_out_until_compacted(repo: Path, small_threshold: None) -> None:
    edited_log(repo)
    scope = Scope(PROJECT, repo)
    reconcile_scope(scope)
    state = ProjectSyncState.objects.get(project_id=PROJECT)
    assert state.log_memories == 1 and state.log_files >= EDITS + 1
    [advice] = hygiene.all_advice()
    assert PROJECT in advice and "yullu sync compact" in advice
    compact(scope)
    reconcile_scope(scope)
    assert hygiene.all_advice() == []
    assert Memory.objects.get(project_id=PROJECT).content == f"we deploy with make ship{EDITS - 1}"


def test_a_log_with_a_file_or_two_per_memory_is_left_alone(repo: Path, small_threshold: None) -> None:
    folder = repo / ".yullu" / "logs"
    for n in range(30):
        write_event(folder, new_event("create", str(uuid.uuid4()), content=f"fact number {n} about the build"))
    reconcile_scope(Scope(PROJECT, repo))
    # each create, and the `embedding` event this machine published for it: two files a memory
    assert ProjectSyncState.objects.get(project_id=PROJECT).log_files == 60
    assert hygiene.all_advice() == []


def test_the_dashboard_shows_the_advice(repo: Path, small_threshold: None, client: Client, owner: Any) -> None:
    edited_log(repo)
    reconcile_scope(Scope(PROJECT, repo))
    client.force_login(owner)
    page = client.get("/admin/").content.decode()
    assert "yullu sync compact" in page and PROJECT in page


def test_doctor_reports_a_large_log_as_a_warning(repo: Path, tmp_path: Path) -> None:
    """Through the real command, at the product's own threshold: the state a reconcile of a
    5,000-file log of 100 memories records."""
    ProjectSyncState.objects.create(project_id=PROJECT, log_files=5_000, log_memories=100)
    result = run_cli(["doctor", "--json"], product_env(tmp_path / "home", YULLU_EMBED_PROVIDER="none"))
    checks = {c["check"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["team log"]["status"] == "warn"
    assert PROJECT in checks["team log"]["detail"]


def test_a_log_compacted_twice_still_counts_its_memories(repo: Path, small_threshold: None) -> None:
    """Compacting an already compacted log (or reconciling after a compaction that was cut short)
    leaves no file new to the ledger; the memory count must survive that (found by the chaos drills:
    doctor advised compacting a just-compacted log of 5,000 memories as one of '1 memories')."""
    folder = repo / ".yullu" / "logs"
    ts = 1_700_000_000 * 10**9
    for n in range(15):
        memory = str(uuid.uuid4())
        write_event(folder, new_event("create", memory, ts + n * 10**9, content=f"fact {n} about the build", tags=[]))
        for edit in range(2):
            write_event(
                folder, new_event("update", memory, ts + n * 10**9 + edit + 1, content=f"fact {n}, edit {edit}")
            )
    scope = Scope(PROJECT, repo)
    for _ in range(2):
        compact(scope)
        reconcile_scope(scope)
    state = ProjectSyncState.objects.get(project_id=PROJECT)
    assert state.log_memories == 15, (state.log_files, state.log_memories)
    assert hygiene.all_advice() == []
