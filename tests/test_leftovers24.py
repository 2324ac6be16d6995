"""Round 24's left-overs (authors, turns and duplicates): each test was red before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from access.actor import acting_as, actor_for_user
from memories.models import Memory, RejectedMemory
from memories.scope import resolve
from memories.write import create
from sync.compact import compact
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope
from tests import team_log
from tests.mcp_client import call
from tests.processes import REPO, git_repo, product_env, run_cli, stub_env
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_memory_the_cli_stores_names_the_owner_as_its_writer_as_their_tokens_stores_do(tmp_path: Path) -> None:
    # `yullu memories add` acted as the system: created_by null in the admin and `memories list`, while an MCP or
    # REST store with the owner's token said "admin" (and the team log named the git user for both).
    owner = get_user_model().objects.create_superuser("admin", password="x")
    repo = git_repo(tmp_path / "repo", "git@github.com:acme/cli24.git")
    env = product_env(tmp_path / "yhome", YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))
    add = ["memories", "add", "Releases are tagged from the release branch only.", "--cwd", str(repo), "--json"]
    out = run_cli(add, env)
    assert out.returncode == 0, out.stderr
    memory = Memory.objects.get(pk=json.loads(out.stdout)["id"])
    assert (memory.created_by_id, memory.updated_by_id) == (owner.pk, owner.pk)
    listed = json.loads(run_cli(["memories", "list", "--cwd", str(repo), "--json"], env).stdout)["memories"]
    assert [(m["created_by"], m["updated_by"]) for m in listed] == [("admin", "admin")]


# --- an undone rejection after a compaction ----------------------------------------------------------------------
U1 = "33333333-3333-4333-8333-333333333333"
REVIEW = "/admin/memories/memory/review/"


def _reject_compact_and_undo(repo: Path, owner: Any, memory: Memory) -> None:
    staff = Client()
    staff.force_login(owner)
    staff.post(REVIEW, {"action": "rate", "memory_id": memory.pk, "rating": "2"})
    compact(resolve(None, str(repo)))  # the memory's history is one `delete` now
    staff.post(REVIEW, {"action": "restore", "rejected_id": RejectedMemory.objects.get().pk})


def _a_fresh_teammate_reads(repo: Path, uuid: str) -> Memory:
    Memory.objects.all().delete()
    _forget_the_log()
    reconcile_scope(resolve(None, str(repo)))
    return Memory.objects.get(uuid=uuid)


@pytest.mark.django_db(transaction=True)
def test_a_teammates_memory_restored_after_a_compaction_still_names_its_writer(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    # The restore's create carries created_at, so a reader takes its writer from created_by alone; it had none,
    # and a teammate whose log held only the compacted tombstone and the restore knew no writer.
    team_log.teammate_event(repo, U1, 1, "create", content="The deploy key rotates monthly.", tags=[], author="Dana")
    reconcile_scope(resolve(None, str(repo)))
    _reject_compact_and_undo(repo, owner, Memory.objects.get(uuid=U1))
    assert Memory.objects.get(uuid=U1).created_author == "Dana"
    assert _a_fresh_teammate_reads(repo, U1).created_author == "Dana"


@pytest.mark.django_db(transaction=True)
def test_the_owners_memory_restored_after_a_compaction_names_them_as_their_events_do(
    repo: Path, owner: Any, keyword_only: None
) -> None:
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "Sam Okafor"], check=True)
    with acting_as(actor_for_user(owner)):
        stored = create.store_memory(resolve(None, str(repo)), "Invoices are numbered per year.")
    uuid = str(stored.memory.uuid)
    assert [e.get("author") for e in team_log.events(repo) if e["type"] == "create"] == ["Sam Okafor"]
    _reject_compact_and_undo(repo, owner, stored.memory)
    assert Memory.objects.get(uuid=uuid).created_by_id == owner.pk
    assert _a_fresh_teammate_reads(repo, uuid).created_author == "Sam Okafor"


# --- a compaction by an older version ----------------------------------------------------------------------------


def _an_older_version_compacts(repo: Path) -> None:
    """What a version before 940e8cd's compaction leaves of the history: one create naming no one."""
    for path in (repo / ".yullu" / "logs").glob("*.json"):
        path.unlink()
    team_log.teammate_event(
        repo, U1, 2, "create", content="The deploy key rotates monthly.", tags=["ops"],
        created_at="2026-06-01T00:00:01Z",
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_newer_peer_that_knew_the_authors_writes_them_back_over_an_older_versions_compaction(
    repo: Path, keyword_only: None
) -> None:
    scope = resolve(None, str(repo))
    team_log.teammate_event(repo, U1, 1, "create", content="The deploy key rotates monthly.", tags=[], author="Dana")
    team_log.teammate_event(repo, U1, 2, "update", tags=["ops"], author="Sam Okafor")
    reconcile_scope(scope)
    _an_older_version_compacts(repo)
    reconcile_scope(scope)
    memory = Memory.objects.get(uuid=U1)
    assert (memory.created_author, memory.updated_author) == ("Dana", "Sam Okafor")  # this machine still knows
    compact(scope)  # ... and writes them back into the log
    assert [(e.get("created_by"), e.get("updated_by")) for e in team_log.events(repo) if e["type"] == "create"] == [
        ("Dana", "Sam Okafor")
    ]
    # A teammate who applied the older snapshot (knowing no one) learns them; so does one who clones now.
    Memory.objects.filter(uuid=U1).update(created_author="", updated_author="")
    _forget_the_log()
    reconcile_scope(scope)
    assert _authors(Memory.objects.get(uuid=U1)) == ("Dana", "Sam Okafor")
    assert _authors(_a_fresh_teammate_reads(repo, U1)) == ("Dana", "Sam Okafor")
    compact(scope)  # and compacting again changes nothing
    assert len(team_log.events(repo)) == 1


def _forget_the_log() -> None:
    LedgerEntry.objects.all().delete()
    ProjectSyncState.objects.all().delete()


def _authors(memory: Memory) -> tuple[str, str]:
    return memory.created_author, memory.updated_author


@pytest.mark.slow
def test_a_memory_stored_over_stdio_names_the_owner_too(tmp_path: Path, stub_api: StubServer) -> None:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    get_user_model().objects.create_superuser("admin", password="x")
    env = product_env(tmp_path / "home", **stub_env(stub_api.url))
    params = StdioServerParameters(command=sys.executable, args=["-m", "yullu_cli.main", "stdio"], env=env, cwd=REPO)

    async def go() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            err, _ = await call(s, "store_memory", content="vec:1,0,0 Refunds settle in two days.", project_id="r24/io")
            assert not err
            err, listed = await call(s, "list_memories", project_id="r24/io")
            return [(m["created_by"], m["updated_by"]) for m in listed["memories"]]

    assert asyncio.run(go()) == [("admin", "admin")]
