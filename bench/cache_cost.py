"""What the per-process caches save (docs/benchmarks.md, "Per-process caches").

Run: `python manage.py shell -c "from bench.cache_cost import main; main()"` on a development
database. Loads a throwaway project to 10k and 100k memories (bench.latency.populate) and times
the BM25 statistics with and without their cache, the bare count, and the MCP token check.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import connection

from access.models import ApiToken
from bench.latency import populate, sample_queries
from memories.models import Memory
from memories.search import bm25
from yullu_site.mcp.http import TokenAuth


def p50(fn: Callable[[], object], n: int = 100) -> float:
    ms = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(ms), 2)


def bm25_costs(project: str) -> dict[str, float]:
    lexemes = [sorted(set(bm25.query_lexemes(q))) for q in sample_queries(100)]
    out = {}
    for label, cached in (("uncached", False), ("cached", True)):
        stats, dfs = [], []
        for lex in lexemes:
            if not cached:
                bm25.forget(project)
            started = time.perf_counter()
            bm25.project_stats(project)
            stats.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            bm25.document_frequencies(project, lex)
            dfs.append((time.perf_counter() - started) * 1000)
        out[f"stats_{label}"] = round(statistics.median(stats), 2)
        out[f"df_{label}"] = round(statistics.median(dfs), 2)

    def count() -> None:
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM memories_memory WHERE project_id = %s", [project])

    out["count_only"] = p50(count)
    return out


def token_check() -> float:
    user, _ = get_user_model().objects.get_or_create(username=f"cache-cost-{uuid.uuid4().hex[:6]}")
    token, raw = ApiToken.issue(user, name="cache-cost")
    auth = TokenAuth(lambda scope, receive, send: None)  # type: ignore[arg-type,return-value]  # never called

    async def go() -> list[float]:
        ms = []
        for _ in range(300):
            started = time.perf_counter()
            await auth.tokens.is_valid(raw)
            ms.append((time.perf_counter() - started) * 1000)
        return ms

    try:
        return round(statistics.median(asyncio.run(go())), 2)
    finally:
        token.delete()
        user.delete()


def main() -> None:
    project = f"cache-cost-{uuid.uuid4().hex[:6]}"
    have = 0
    try:
        for size in (10_000, 100_000):
            populate(project, size, 8, "cache-cost:x", have)
            have = size
            print(size, bm25_costs(project), flush=True)
    finally:
        Memory.objects.filter(project_id=project).delete()
    print("token check p50 ms", token_check())
