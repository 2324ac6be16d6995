"""Long-lived threads for the hooks' REST requests.

Django runs each request's sync code in a thread of its own (asgiref's ThreadSensitiveContext makes
a one-thread executor per request), so every request opens a PostgreSQL connection and drops it
when its thread ends: CONN_MAX_AGE cannot keep a connection of a thread that is gone. The prompt
hook pays that on every prompt — under the 20-client load, 11–17 ms to connect and a cold backend
for its first queries (docs/benchmarks.md, "paced load"). The hooks' paths instead run on one of
LANES long-lived threads, each keeping its connection between requests (Django still closes it
per CONN_MAX_AGE and after errors, as with any persistent connection).

A lane runs one request at a time (a thread-sensitive context needs a one-thread executor); a
request takes the lane with the fewest requests in flight, so hook requests queue only when
LANES of them run at once. Everything else keeps Django's thread per request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext

HOOK_PATHS = frozenset({"/api/context", "/api/messages"})  # yullu_cli/hooks.py: prompt, turns, primer
LANES = 4

_lock = threading.Lock()


class _Lane(ThreadPoolExecutor):
    """One thread; `busy` counts the work submitted to it and not finished. Counted here, not by
    the request: a hook that hangs up cancels its request at once, while the view it started runs
    on in the lane's thread, and the lane must not look free meanwhile."""

    def __init__(self, n: int) -> None:
        super().__init__(max_workers=1, thread_name_prefix=f"hook-lane-{n}")
        self.busy = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with _lock:
            self.busy += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future[Any]) -> None:
        with _lock:
            self.busy -= 1


_lanes = [_Lane(n) for n in range(LANES)]
_in_flight = [0] * LANES  # requests that chose the lane and have not submitted their work yet, or are waiting on it


def is_hook_request(scope: dict[str, Any]) -> bool:
    return scope["type"] == "http" and scope["path"] in HOOK_PATHS


class lane:
    """`async with lane():` runs the thread-sensitive (Django) code inside on a hook lane."""

    def __init__(self) -> None:
        with _lock:
            self.n = min(range(LANES), key=lambda n: _in_flight[n] + _lanes[n].busy)
            _in_flight[self.n] += 1
        self.context = ThreadSensitiveContext(executor=_lanes[self.n])

    async def __aenter__(self) -> None:
        await self.context.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.context.__aexit__(*exc)
        finally:
            with _lock:
                _in_flight[self.n] -= 1
