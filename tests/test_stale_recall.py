"""A stale memory (docs/contract.md §12: the code it cites changed) ranks lower and is flagged, never hidden,
when it answers the question asked: with the real local embedder and cross-encoder, over MCP. Demoted
before the relevance gate, it fell behind memories the gate never passes, out of the few the gate
judges, so its own question returned nothing (walk 7)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memories.anchors import checks
from tests.mcp_client import call, http_session

pytestmark = pytest.mark.django_db(transaction=True)

CLOCK = """import time


class Clock:
    def now(self):
        return time.time()

    def later(self, seconds):
        return self.now() + seconds
"""
GIT = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
STALE = "Clock.later(seconds) returns the current time plus the given number of seconds."
# Memories about neighbouring things, as a project holds them: close enough to the question to rank
# above the stale answer once it is demoted, none an answer to it.
NEIGHBOURS = [
    "Clock.earlier(seconds) returns the current time minus the given number of seconds.",
    "Clock.now() returns the current time as seconds since the epoch.",
    "Clock.today() returns the current date in UTC.",
    "Clock.sleep(seconds) waits for the given number of seconds.",
]
QUESTION = "What does Clock.later return?"


def _commit(repo: Path) -> None:
    subprocess.run(["git", "-C", str(repo), *GIT, "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *GIT, "commit", "-qm", "clock"], check=True)


def _ask(url: str, token: str, repo: Path) -> tuple[bool, Any]:
    async def go() -> tuple[bool, Any]:
        async with http_session(url, token) as s:
            return await call(s, "retrieve_memories", query=QUESTION, cwd=str(repo))

    return asyncio.run(go())


def test_a_stale_memory_is_still_returned_for_its_own_question_and_flagged(
    repo: Path, live_server_url: str, owner_token: str
) -> None:
    (repo / "app").mkdir()
    (repo / "app" / "clock.py").write_text(CLOCK)
    _commit(repo)

    async def store() -> int:
        async with http_session(live_server_url, owner_token) as s:
            for fact in NEIGHBOURS:
                err, out = await call(s, "store_memory", content=fact, category="domain", cwd=str(repo))
                assert not err and out["created"], out
            err, out = await call(
                s,
                "store_memory",
                content=STALE,
                category="domain",
                anchors=["app/clock.py::Clock.later"],
                cwd=str(repo),
            )
            assert not err and out["created"], out
            return int(out["id"])

    stale_id = asyncio.run(store())
    err, before = _ask(live_server_url, owner_token, repo)
    assert not err and [(h["id"], h["stale"]) for h in before["results"]][:1] == [(stale_id, False)], before

    (repo / "app" / "clock.py").write_text(CLOCK.replace("return self.now() + seconds", "return seconds"))
    _commit(repo)
    checks.forget_cache()
    err, after = _ask(live_server_url, owner_token, repo)
    assert not err, after
    hits = {h["id"]: h for h in after["results"]}
    assert stale_id in hits, after  # ranked lower, perhaps, but returned
    assert hits[stale_id]["stale"] is True
    assert [a["status"] for a in hits[stale_id]["anchors"]] == ["changed"]
