"""A git worktree of a known checkout (`git worktree add`): the same project, whose known checkout stays
the main one, and whose memories are published once. Storing from a worktree made it the project's
checkout, so later writes without a cwd went to that branch's log, and a reconcile of the other
checkout republished the memory under a second event id (walk 7)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memories.models import ProjectLocation
from tests.mcp_client import call, http_session
from tests.processes import git_repo

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT = "github.com/acme/worktrees"
GIT = ["-c", "user.email=t@example.com", "-c", "user.name=t"]


def _checkout_and_worktree(tmp_path: Path) -> tuple[Path, Path]:
    main = git_repo(tmp_path / "main", f"git@{PROJECT.replace('/', ':', 1)}.git")
    (main / "README").write_text("x\n")
    subprocess.run(["git", "-C", str(main), *GIT, "add", "README"], check=True)
    subprocess.run(["git", "-C", str(main), *GIT, "commit", "-qm", "start"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", "-b", "feature", str(tmp_path / "wt")], check=True)
    return main.resolve(), (tmp_path / "wt").resolve()


def _events_by_memory(*checkouts: Path) -> dict[str, list[tuple[str, str]]]:
    """memory uuid → (event type, event id) of every file in the checkouts' logs (one file, one event)."""
    found: dict[str, list[tuple[str, str]]] = {}
    names: set[str] = set()
    for checkout in checkouts:
        for path in sorted((checkout / ".yullu" / "logs").glob("*.json")):
            if path.name not in names:  # a file merged in from the other checkout is the same event
                names.add(path.name)
                event = json.loads(path.read_text())
                found.setdefault(event["memory_id"], []).append((event["type"], event["id"]))
    return found


def _creates(found: dict[str, list[tuple[str, str]]], uuid: str) -> int:
    return sum(1 for kind, _ in found.get(uuid, []) if kind == "create")


def test_a_worktree_store_keeps_the_main_checkout_known_and_no_reconcile_publishes_it_twice(
    live_server_url: str, owner_token: str, keyword_only: None, tmp_path: Path
) -> None:
    main, worktree = _checkout_and_worktree(tmp_path)

    async def session_work() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with http_session(live_server_url, owner_token) as s:
            err, out["main"] = await call(s, "store_memory", content="Deploys go through make ship", cwd=str(main))
            assert not err, out["main"]
            err, out["branch"] = await call(
                s, "store_memory", content="The feature branch renames the billing clock", cwd=str(worktree)
            )
            assert not err, out["branch"]
            assert out["branch"]["project_id"] == PROJECT  # a worktree of the checkout: the same project
            err, out["no_cwd"] = await call(
                s, "store_memory", content="Release notes live in docs/releases", project_id=PROJECT
            )
            assert not err, out["no_cwd"]
            out["reconciles"] = []
            for place in (main, worktree, main):  # each checkout's reconcile, then the first again
                err, result = await call(s, "reconcile_memories", cwd=str(place))
                assert not err, result
                out["reconciles"].append(result)
        return out

    out = asyncio.run(session_work())
    # The known checkout stays the main one, so a write without a cwd goes to its log, not the branch's.
    assert ProjectLocation.objects.get(project_id=PROJECT).git_root == str(main)
    found = _events_by_memory(main)
    assert _creates(found, out["no_cwd"]["uuid"]) == 1
    assert _creates(_events_by_memory(worktree), out["no_cwd"]["uuid"]) == 0
    # Each reconcile found nothing to publish: every memory already has its event in one log or the other.
    assert [r["local_only_logged"] for r in out["reconciles"]] == [0, 0, 0]

    # The branch is merged: its log's files join the main checkout's. Each memory has one create.
    for path in (worktree / ".yullu" / "logs").glob("*.json"):
        shutil.copy(path, main / ".yullu" / "logs" / path.name)

    async def after_merge() -> dict[str, Any]:
        async with http_session(live_server_url, owner_token) as s:
            err, result = await call(s, "reconcile_memories", cwd=str(main))
            assert not err, result
            return result

    result = asyncio.run(after_merge())
    assert (result["created"], result["updated"], result["local_only_logged"]) == (0, 0, 0), result
    merged = _events_by_memory(main)
    for stored in ("main", "branch", "no_cwd"):
        assert _creates(merged, out[stored]["uuid"]) == 1, (stored, merged)
