"""Web-process CPU per MCP call: N official-SDK clients call one tool a fixed number of times each
against a running server; reported is the web (uvicorn) process's CPU milliseconds per call
(psutil `cpu_times()` before and after / calls), not wall-clock time, so neighbours on a shared
machine move it little.

    python -m bench.mcp_floor --home $YULLU_HOME --url http://127.0.0.1:PORT/mcp \
        --tool list --tool retrieve --clients 10 --calls 150

`list` is `list_memories(limit=1)`: the framework floor (HTTP, ASGI, auth, MCP SDK, one trivial
query). `retrieve` is `retrieve_memories` with 8 fixed queries, so after the first round the
query vectors come from the server's cache and the model is out of the measurement. The project
gets 20 memories first (not measured). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil

from bench.mcp_client import mcp_session

QUERIES = [f"how do we handle the {t} for the staging service?" for t in ("deploy", "cache", "retry", "queue")] + [
    f"why does the {t} use a timeout?" for t in ("worker", "proxy", "scheduler", "webhook")
]


def arguments(tool: str, project: str, n: int) -> tuple[str, dict[str, Any]]:
    if tool == "list":
        return "list_memories", {"project_id": project, "limit": 1}
    if tool == "retrieve":
        return "retrieve_memories", {"query": QUERIES[n % len(QUERIES)], "project_id": project}
    if tool == "store":
        return "store_memory", {
            "content": f"Floor fact {n}: the {QUERIES[n % 8][7:]}",
            "category": "process",
            "project_id": project,
        }
    raise SystemExit(f"unknown --tool {tool!r} (list, retrieve).")


async def client(url: str, token: str, tool: str, project: str, calls: int, offset: int) -> int:
    done = 0
    async with mcp_session(url, token) as session:
        for n in range(calls):
            name, args = arguments(tool, project, offset + n)
            result = await session.call_tool(name, args)
            if result.is_error:
                raise SystemExit(f"{name} failed: {result.content}")
            done += 1
    return done


async def level(url: str, token: str, tool: str, project: str, clients: int, calls: int) -> int:
    counts = await asyncio.gather(*(client(url, token, tool, project, calls, c * calls) for c in range(clients)))
    return sum(counts)


def web_processes(home: Path) -> list[psutil.Process]:
    """The uvicorn process(es) of `yullu serve` on this home (as bench.load finds them)."""
    serve = psutil.Process(int((home / "run" / "serve.pid").read_text().strip()))
    return [p for p in serve.children(recursive=True) if "uvicorn" in " ".join(p.cmdline())]


def cpu_seconds(procs: list[psutil.Process]) -> float:
    return sum(t.user + t.system for t in (p.cpu_times() for p in procs))


def measure(home: Path, url: str, token: str, tool: str, project: str, clients: int, calls: int) -> dict[str, Any]:
    asyncio.run(level(url, token, tool, project, clients, 2))  # warm: sessions, query-vector cache
    web = web_processes(home)
    if not web:
        raise SystemExit(f"no web process found for {home} (is `yullu serve` running on it?)")
    before = cpu_seconds(web)
    started = time.perf_counter()
    done = asyncio.run(level(url, token, tool, project, clients, calls))
    wall = time.perf_counter() - started
    used = cpu_seconds(web) - before
    return {
        "tool": tool,
        "calls": done,
        "web_cpu_ms_per_call": round(1000 * used / done, 2),
        "calls_per_s": round(done / wall, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--tool", action="append", default=[])
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--calls", type=int, default=150, help="calls per client")
    p.add_argument("--project", default="mcp-floor")
    args = p.parse_args()
    if urlparse(args.url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("loopback only.")
    token = (args.home / "token").read_text().strip()
    asyncio.run(level(args.url, token, "store", args.project, 4, 5))
    for tool in args.tool or ["list", "retrieve"]:
        print(json.dumps(measure(args.home, args.url, token, tool, args.project, args.clients, args.calls)), flush=True)


if __name__ == "__main__":
    main()
