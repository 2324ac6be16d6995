"""What every app's MCP tools share: run a sync service call off the event loop and turn its outcome
into a tool result. Results are structured JSON plus the same JSON as text. Failures are tool results
with isError and one sentence; unexpected exceptions are logged with an id the message mentions, and
no traceback or SQL reaches the client.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from . import outage
from .env import env_int
from .errors import UserError
from .failures import UNAVAILABLE, DiskFull, NotAnswering, translate

log = logging.getLogger("yullu.mcp")
T = TypeVar("T")

ProjectId = Annotated[
    str | None, Field(description="Project scope. Usually omit it and pass `cwd`; the server derives the project.")
]
Cwd = Annotated[
    str | None, Field(description="Absolute path of your current working directory; picks the project (git origin).")
]


def ok(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))], structured_content=payload
    )


def error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def with_fresh_connections(fn: Callable[[], T]) -> T:
    """Call `fn` (in a worker thread) with stale DB connections closed before and after:
    connections opened outside Django's request cycle are not closed for us."""
    close_old_connections()
    try:
        return fn()
    finally:
        close_old_connections()


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def tool_threads() -> int:
    """YULLU_TOOL_THREADS, or when 0 (the default) as many as the event loop's own executor: min(32, cores + 4).
    24 on two cores let 20 clients' calls run at once but did not raise the closed loop's throughput on a quiet
    machine, while stores waited longer on the project's write lock and the prompt hook's p50 rose 40–100 %
    (docs/benchmarks.md, issue 34 round twenty): the hook is the product's main moment, so the default stays."""
    configured = env_int("YULLU_TOOL_THREADS")
    return configured if configured > 0 else min(32, (os.cpu_count() or 1) + 4)


def tool_pool() -> ThreadPoolExecutor:
    """The threads tool calls run on, tool_threads() of them (read when the pool is made, on the first call).

    A pool of its own, so its size is a setting: with the event loop's 6 threads on two cores, at 20 clients 14
    calls waited ~300 ms for a thread while the 6 running mostly waited on the embedding batcher, whose passes
    then held ~2.3 texts (~5 with 24 threads). A tool call mostly waits (the model, PostgreSQL), so more threads
    than cores cost little; each keeps its database connection (CONN_MAX_AGE), well under the embedded server's
    max_connections. docs/benchmarks.md, issue 34 round twenty."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=tool_threads(), thread_name_prefix="yullu-tool")
        return _pool


async def run(fn: Callable[[], dict[str, Any]]) -> CallToolResult:
    """Run a sync service call on a tool thread and turn its outcome into a tool result."""
    try:
        call = sync_to_async(with_fresh_connections, thread_sensitive=False, executor=tool_pool())
        return ok(await call(fn))
    except UserError as exc:
        return error(str(exc))
    except DatabaseError as exc:
        said = translate(exc)
        if said is None or isinstance(said, NotAnswering):
            outage.DATABASE.failed(exc)  # one line for the outage, not one per call (yullu_core.outage)
        elif isinstance(said, DiskFull):
            outage.DISK.failed(exc)
        return error(str(said) if said is not None else UNAVAILABLE)
    except Exception as exc:
        if (said := translate(exc)) is not None:  # a full disk
            if isinstance(said, DiskFull):
                outage.DISK.failed(exc)
            return error(str(said))
        error_id = uuid.uuid4().hex[:12]
        log.exception("unexpected error in MCP tool (id %s)", error_id)
        return error(f"Internal error (id {error_id}); see the server log.")
