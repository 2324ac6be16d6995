"""`yullu bench load --rate`: the paced (open-loop) mode against the real ASGI server."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest

from tests.stubs import StubServer
from yullu_cli.bench import load

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_paced_level_offers_the_rate_asked_for_and_says_so(
    live_server_url: str,
    owner_token: str,
    stub_embedder: StubServer,
    tmp_path: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    early: list[float] = []  # how long before its scheduled start an operation was sent
    real_call = load.timed_call

    async def watched(session: Any, tool: str, args: dict[str, Any], started: float, *rest: Any) -> None:
        if time.perf_counter() < started - 0.005:  # timers may round by a millisecond
            early.append(started - time.perf_counter())
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
    assert 2.0 <= level["achieved_ops"] <= 6.0, level
    assert early == []  # each operation waits for its arrival, and its latency counts from there
    assert level["requests"] == level["scheduled"] - level["not_started"]
    assert summary["errors"] == 0 and summary["lost_writes"] == 0
    assert summary["acknowledged_stores"] > 0
