"""`yullu bench load --rate`: the paced (open-loop) mode against the real ASGI server. No timing is
asserted here (a loaded machine makes any bound flaky): only what the schedule and the counts say."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from bench import load
from tests.stubs import StubServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_paced_level_offers_the_rate_asked_for_and_says_so(
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
    tmp_path: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    due: dict[int, list[float]] = {}  # per session: the scheduled starts its operations were given
    real_call = load.timed_call

    async def watched(session: Any, tool: str, args: dict[str, Any], started: float, *rest: Any) -> None:
        due.setdefault(id(session), []).append(started)
        await real_call(session, tool, args, started, *rest)

    monkeypatch.setattr(load, "timed_call", watched)
    settings.YULLU_HOME = tmp_path
    (tmp_path / "token").write_text(owner_token)
    args = argparse.Namespace(
        url=f"{live_server_url}/mcp",
        project="paced-load",
        clients="2",
        mix="retrieve=50,store=50",
        prefill=0,
        seed=0,
        inject=0,
        duration=4.0,
        max_requests=1000,
        rate=4.0,
        schedule_seed=1,
        out=None,
    )
    summary = load.main(args)
    (level,) = summary["levels"]
    assert summary["mode"] == level["mode"] == "paced"
    assert level["offered_ops"] == 4.0
    assert len(due) == 2 and all(times == sorted(set(times)) for times in due.values())  # one schedule each
    assert sum(len(times) for times in due.values()) == level["requests"] > 0
    assert level["requests"] == level["scheduled"] - level["not_started"]
    assert summary["errors"] == 0 and summary["lost_writes"] == 0
    assert summary["acknowledged_stores"] > 0
