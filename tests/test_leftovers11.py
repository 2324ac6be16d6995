"""Leftovers of the last stop (lane fixes11), each red without its fix."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from access.models import Project
from dreaming.models import DreamPass, DreamSchedule
from tests.mcp_client import call, http_session

pytestmark = pytest.mark.django_db(transaction=True)


def _nothing_made() -> bool:
    return not (Project.objects.exists() or DreamPass.objects.exists() or DreamSchedule.objects.exists())


def _dream_over_mcp(url: str, token: str, **args: Any) -> tuple[bool, Any]:
    async def ask() -> tuple[bool, Any]:
        async with http_session(url, token) as session:
            return await call(session, "dream_now", **args)

    return asyncio.run(ask())


def _dream_over_rest(url: str, token: str, **args: Any) -> httpx.Response:
    return httpx.post(f"{url}/api/dream", json=args, headers={"authorization": f"Bearer {token}"}, timeout=60)


@pytest.mark.parametrize("naming", ["cwd", "project_id"])
def test_dream_over_rest_and_mcp_refuses_what_the_cli_refuses_and_makes_nothing(
    naming: str, tmp_path: Path, live_server_url: str, owner_token: str
) -> None:
    """`yullu dream --cwd /tmp` was refused; POST /api/dream and dream_now with the same folder opened a
    pass, a schedule and a project row for it. Now the one check in dreaming.services refuses all three."""
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    args = {"cwd": str(outside)} if naming == "cwd" else {"project_id": "nobody/never"}
    said = f"{outside} is not inside a git repository" if naming == "cwd" else "project 'nobody/never' not found"

    over_rest = _dream_over_rest(live_server_url, owner_token, **args)
    assert over_rest.status_code == 404, over_rest.text
    assert over_rest.json()["error"].startswith(said), over_rest.text
    is_error, over_mcp = _dream_over_mcp(live_server_url, owner_token, **args)
    assert is_error and over_mcp == over_rest.json()["error"], over_mcp
    assert _nothing_made(), list(Project.objects.values_list("project_id", flat=True))


def test_dream_over_rest_and_mcp_in_a_checkout_still_runs(repo: Path, live_server_url: str, owner_token: str) -> None:
    over_rest = _dream_over_rest(live_server_url, owner_token, cwd=str(repo))
    assert over_rest.status_code == 200, over_rest.text
    is_error, over_mcp = _dream_over_mcp(live_server_url, owner_token, cwd=str(repo))
    assert not is_error and over_mcp["project_id"] == over_rest.json()["project_id"], over_mcp
    assert DreamPass.objects.filter(project_id=over_mcp["project_id"]).count() == 2
