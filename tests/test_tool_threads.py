"""MCP tool calls run on their own pool, YULLU_TOOL_THREADS threads a web process (by default as many as the
event loop's own executor, min(32, cores + 4); docs/benchmarks.md, issue 34 round twenty)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import pytest

from yullu_core import mcp


def _most_at_once(calls: int) -> tuple[int, set[str], list[Any]]:
    """Starts `calls` tool calls that each wait until released; how many ran at once, on which threads."""
    lock = threading.Lock()
    release = threading.Event()
    running = most = 0
    names: set[str] = set()

    def body() -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            names.add(threading.current_thread().name)
        release.wait(30)
        with lock:
            running -= 1
        return {"ok": True}

    async def main() -> list[Any]:
        tasks = [asyncio.create_task(mcp.run(body)) for _ in range(calls)]
        deadline = time.monotonic() + 30
        while most < min(calls, mcp.tool_threads()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)  # room for any call beyond the pool's size to start, if it could
        release.set()
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(main())
    return most, names, results


@pytest.fixture
def fresh_pool(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(mcp, "_pool", None)
    yield
    if mcp._pool is not None:
        mcp._pool.shutdown(wait=True)


def test_tool_calls_run_on_as_many_threads_as_the_setting(monkeypatch: pytest.MonkeyPatch, fresh_pool: Any) -> None:
    monkeypatch.setenv("YULLU_TOOL_THREADS", "3")
    most, names, results = _most_at_once(8)
    assert most == 3
    assert all(name.startswith("yullu-tool") for name in names)
    assert [r.is_error for r in results] == [False] * 8 and results[0].structured_content == {"ok": True}


def test_by_default_the_pool_is_as_large_as_the_event_loops_own(
    monkeypatch: pytest.MonkeyPatch, fresh_pool: Any
) -> None:
    """The default keeps the event loop's executor size (min(32, cores + 4)): 24 threads did not raise the closed
    loop's throughput on a quiet machine and slowed the prompt hook (docs/benchmarks.md, issue 34 round twenty)."""
    monkeypatch.delenv("YULLU_TOOL_THREADS", raising=False)
    expected = min(32, (os.cpu_count() or 1) + 4)
    assert mcp.tool_threads() == expected
    most, _names, results = _most_at_once(expected + 3)
    assert most == expected
    assert not any(r.is_error for r in results)
