"""get_memory, link_memories, list_conflicts and resolve_conflict through the real MCP client over
Streamable HTTP; update_memory and delete_memory accept `cwd` (docs/contract.md §2); a conflict closes when one
side is superseded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memories import lifecycle
from memories.models import MemoryLink
from memories.scope import Scope
from memories.write import create, edit
from tests.mcp_client import call, http_session
from tests.processes import git_repo
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)
P = "acme/links-mcp"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_get_memory_returns_full_text_links_anchors_and_a_history_summary(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    memory = create.store_memory(Scope(P, None), "vec:1,0,0 We deploy with make ship " + "x" * 300, "process").memory
    edit.update_memory(memory.pk, tags=["ops"])

    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, got = await call(s, "get_memory", id=memory.pk)
            assert not err, got
            assert got["content"] == memory.content and got["tags"] == ["ops"]
            assert got["anchors"] == [] and got["links"] == []
            assert got["history"]["changes"] >= 2 and got["history"]["recent"][0]["action"]
            err, missing = await call(s, "get_memory", id=999999)
            assert err and missing == "memory 999999 not found"
            err, typo = await call(s, "get_memory", id=memory.pk, ful=True)
            assert err and "unknown argument 'ful'" in typo and "\n" not in typo

    run(go())


def test_link_list_and_resolve_a_conflict_over_mcp(
    live_server_url: str, owner_token: str, stub_embedder: StubServer
) -> None:
    old = create.store_memory(Scope(P, None), "vec:1,0,0 The API listens on port 8000", "process").memory
    new = create.store_memory(Scope(P, None), "vec:0,1,0 The API listens on port 9000", "process").memory

    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, link = await call(s, "link_memories", from_id=new.pk, to_id=old.pk, kind="contradicts", note="ports")
            assert not err and link["kind"] == "contradicts" and link["note"] == "ports"
            err, bad = await call(s, "link_memories", from_id=new.pk, to_id=old.pk, kind="contradict")
            assert err and bad == "kind must be one of: supersedes, contradicts, related."
            err, listed = await call(s, "list_conflicts", project_id=P)
            assert not err and [c["id"] for c in listed["conflicts"]] == [link["id"]]
            assert listed["conflicts"][0]["from_content"] == new.content
            err, refused = await call(s, "resolve_conflict", conflict_id=link["id"], resolution="merge")
            assert err and refused == "merge needs the merged text."
            err, done = await call(s, "resolve_conflict", conflict_id=link["id"], resolution="keep_from")
            assert not err and done["resolution"] == "keep_from"
            _, after = await call(s, "list_conflicts", project_id=P)
            assert after["conflicts"] == []
            _, got = await call(s, "get_memory", id=old.pk)
            assert got["superseded_by"] == new.pk

    run(go())


def test_a_conflict_closes_when_one_side_is_superseded() -> None:
    a = create.store_memory(Scope(P, None), "vec:1,0,0 Builds run on Jenkins", "process").memory
    b = create.store_memory(Scope(P, None), "vec:0,1,0 Builds run on GitHub Actions", "process").memory
    link = lifecycle.link_memories(a.pk, b.pk, "contradicts")
    assert [c["id"] for c in lifecycle.open_conflicts(P)] == [link.pk]
    create.store_memory(
        Scope(P, None), "vec:0,0,1 Builds run on Buildkite since May", "process", supersedes=a.pk, source="mcp"
    )
    assert lifecycle.open_conflicts(P) == []
    link.refresh_from_db()
    assert link.resolved_at is not None and link.resolution == "superseded"
    assert MemoryLink.objects.filter(pk=link.pk).exists()


def test_update_and_delete_accept_cwd_and_refuse_a_memory_of_another_project(
    live_server_url: str, owner_token: str, stub_embedder: StubServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "svc", origin="git@github.com:acme/svc.git")
    mine = create.store_memory(Scope("github.com/acme/svc", None), "vec:1,0,0 Lint with make lint", "process").memory
    other = create.store_memory(Scope("acme/other", None), "vec:0,1,0 Lint with tox -e lint", "process").memory

    async def go() -> None:
        async with http_session(live_server_url, owner_token) as s:
            err, updated = await call(s, "update_memory", id=mine.pk, tags=["lint"], cwd=str(repo))
            assert not err and updated["tags"] == ["lint"]
            err, refused = await call(s, "update_memory", id=other.pk, tags=["x"], cwd=str(repo))
            assert err and refused == f"memory {other.pk} not found in project github.com/acme/svc"
            err, refused = await call(s, "delete_memory", id=other.pk, cwd=str(repo))
            assert err and "not found in project" in refused
            err, deleted = await call(s, "delete_memory", id=mine.pk, cwd=str(repo))
            assert not err and deleted["deleted"] is True

    run(go())
