"""Load benchmark: N concurrent MCP clients (official SDK, Streamable HTTP) against a running server.

Run (server started with `yullu serve`, same YULLU_HOME):
    yullu bench load --clients 10 --duration 30 [--max-requests 5000] [--prefill 100000]

Mix per client: 70% retrieve_memories, 20% store_memory, 10% list/update/delete.
Loopback only; bounded by duration and request count. Afterwards every acknowledged
store is checked in the database (and its event file when the project has a repo).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memories.models import Memory

TOPICS = ["deploy", "migration", "cache", "retry", "auth", "queue", "index", "release", "logging", "config"]


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.acked: list[str] = []
        self.requests = 0


async def client_loop(
    url: str, token: str, project: str, deadline: float, budget: list[int], stats: Stats, seed: int
) -> None:
    rng = random.Random(seed)
    mine: list[int] = []
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 1
            roll = rng.random()
            topic = rng.choice(TOPICS)
            if roll < 0.7:
                tool, args = "retrieve_memories", {"query": f"how do we handle {topic} here?", "project_id": project}
            elif roll < 0.9:
                tool, args = (
                    "store_memory",
                    {
                        "content": f"Load test fact {uuid.uuid4().hex[:8]} about {topic}",
                        "category": "process",
                        "project_id": project,
                    },
                )
            elif mine and roll < 0.95:
                tool, args = "update_memory", {"id": rng.choice(mine), "tags": [topic]}
            elif mine:
                tool, args = "delete_memory", {"id": mine.pop()}
            else:
                tool, args = "list_memories", {"project_id": project, "limit": 10}
            started = time.perf_counter()
            try:
                result = await session.call_tool(tool, args)
                ok = not result.is_error
            except Exception:
                ok, result = False, None
            stats.latency.setdefault(tool, []).append((time.perf_counter() - started) * 1000)
            stats.requests += 1
            if not ok:
                stats.errors[tool] = stats.errors.get(tool, 0) + 1
            elif tool == "store_memory" and result is not None:
                stats.acked.append(result.structured_content["uuid"])
                mine.append(result.structured_content["id"])
            elif tool == "delete_memory" and result is not None:
                gone = result.structured_content["uuid"]
                if gone in stats.acked:
                    stats.acked.remove(gone)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1) if values else 0.0


async def run(args: argparse.Namespace, token: str, project: str) -> Stats:
    host = urlparse(args.url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("bench load only targets loopback addresses.")
    stats = Stats()
    deadline = time.monotonic() + args.duration
    budget = [args.max_requests]
    await asyncio.gather(
        *(client_loop(args.url, token, project, deadline, budget, stats, n) for n in range(args.clients))
    )
    return stats


def main(args: argparse.Namespace) -> dict[str, Any]:
    from django.conf import settings

    token = (settings.YULLU_HOME / "token").read_text().strip()
    project = args.project or f"load-{uuid.uuid4().hex[:6]}"
    if args.prefill and not Memory.objects.filter(project_id=project).exists():
        from bench.latency import populate, rebuild_index
        from memories.embedders import get_embedder

        embedder = get_embedder()
        dim = len(embedder.embed(["probe"])[0])
        print(f"prefilling {project} with {args.prefill} synthetic memories…", flush=True)
        rebuild_index(embedder.id, dim, drop=True)
        populate(project, args.prefill, dim, embedder.id, 0)
        rebuild_index(embedder.id, dim, drop=False)
    started = time.perf_counter()
    stats = asyncio.run(run(args, token, project))
    elapsed = time.perf_counter() - started
    present = Memory.objects.filter(uuid__in=stats.acked).count()
    report = {
        "clients": args.clients,
        "project": project,
        "seconds": round(elapsed, 1),
        "requests": stats.requests,
        "throughput_rps": round(stats.requests / elapsed, 1),
        "errors": stats.errors,
        "lost_writes": len(stats.acked) - present,
        "acknowledged_stores": len(stats.acked),
        "per_tool_ms": {
            tool: {
                "n": len(v),
                "p50": pct(v, 0.5),
                "p95": pct(v, 0.95),
                "p99": pct(v, 0.99),
                "mean": round(statistics.fmean(v), 1),
            }
            for tool, v in stats.latency.items()
        },
    }
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report
