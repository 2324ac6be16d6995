"""CPU per MCP token check, in-process: the old way (the ORM in the thread pool, as
access.auth.user_for_token through sync_to_async) against access.token_check.TokenChecker
(one statement on the event loop's own connection). docs/benchmarks.md, "Round four (issue 16)".

Run, with the database of a home whose `token` file holds a valid token:
    YULLU_HOME=... python manage.py shell -c "from bench.token_check import main; main()"
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from django.conf import settings

from access.auth import user_for_token
from access.token_check import TokenChecker
from yullu_core.mcp import with_fresh_connections

Check = Callable[[], Awaitable[bool]]


async def _many(check: Check, count: int, concurrency: int) -> None:
    async def caller() -> None:
        for _ in range(count // concurrency):
            assert await check(), "the token was refused"

    await asyncio.gather(*(caller() for _ in range(concurrency)))


async def compare(raw: str, rounds: int = 3, count: int = 2000, concurrency: int = 10) -> None:
    checker = TokenChecker()

    async def orm() -> bool:
        return await sync_to_async(with_fresh_connections, thread_sensitive=False)(
            lambda: user_for_token(raw) is not None
        )

    async def on_loop() -> bool:
        return await checker.is_valid(raw)

    for n in range(rounds):
        for name, check in (("orm in the thread pool", orm), ("one statement on the loop", on_loop)):
            await _many(check, 200, concurrency)  # warm: connections, threads
            cpu, wall = time.process_time(), time.perf_counter()
            await _many(check, count, concurrency)
            per_cpu = 1000 * (time.process_time() - cpu) / count
            per_wall = 1000 * (time.perf_counter() - wall) / count
            print(f"round {n + 1}, {name}: {per_cpu:.3f} ms CPU, {per_wall:.3f} ms wall per check", flush=True)


def main() -> None:
    import uvloop  # what uvicorn[standard] runs the server on

    raw = (settings.YULLU_HOME / "token").read_text().strip()
    uvloop.run(compare(raw))
