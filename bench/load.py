"""Load benchmark: N concurrent MCP clients (official SDK, Streamable HTTP) against a running server.

Run (server started with `yullu serve`, same YULLU_HOME):
    yullu bench load --clients 1,10,20,50 --duration 30 [--mix retrieve=70,store=30] [--inject 30]
    yullu bench load --clients 20 --rate 60 --duration 30 [--schedule-seed 1] [--inject 20]

Two modes (the JSON says which ran: `mode`):

- Closed loop (default): each level runs N clients for `duration` seconds with no think time, each
  sending its next call as soon as the previous one answers. A saturation test: it measures the
  throughput the server sustains, and by Little's law its mean latency is N / throughput, so
  latency there says how long the queue is, not what one assistant waits.
- Paced (`--rate R`, open loop): N sessions offer R operations per second in all, each on a
  Poisson schedule of R/N per second (seeded by `--schedule-seed`), as assistants that pause while
  their model writes. Each operation's latency counts from its scheduled start, so a client still
  busy with its previous call counts the wait (no coordinated omission). Reported besides the
  closed-loop fields: `offered_ops` (R), `scheduled_ops` (the arrivals drawn, per second),
  `achieved_ops` (completed per second) and `not_started` (arrivals the window closed on: the server
  fell behind, and the latency percentiles understate). Latency at a given offered load.

Default mix: 70 % retrieve_memories, 30 % store_memory; `other=` adds list/update/delete. Queries
are drawn from ~25,000 wordings, so the server's query-embedding cache rarely helps (as with real
assistants asking new questions). Before the first level a few clients store `--seed` memories
(not measured), so retrieval searches a non-empty project. Reported per level: ops/s, p50/p95/p99
per tool, CPU milliseconds per operation of the web processes, PostgreSQL, the Celery worker and
this load generator, and how busy the whole machine was (other users of the CPU show up there).
`--inject N` runs the real inject hook (the command `yullu install` writes) N times, one after
another, while the clients run (process start to printed block). Afterwards every acknowledged
store is checked in the database. Loopback only; bounded by duration and request count.

A server that drops a session's connection (it stopped, restarted or crashed) ends that client: MCP clients do
not reconnect. Each level says so in one line on stderr (how many sessions, the first cause), its call in flight
counts as an error (paced: also its arrivals left in the window, as `connection_dropped`), the level's report and
the summary carry `dropped_sessions`, and the run goes on: what it measured is kept, a later level that cannot
connect counts its sessions as dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcp import ClientSession

from bench.cpu import CpuMeter
from bench.mcp_client import mcp_session
from memories.models import Memory
from yullu_cli.hooks import hook_argv

TOPICS = ["deploy", "migration", "cache", "retry", "auth", "queue", "index", "release", "logging", "config"]
WORDS = [
    *[
        "service",
        "worker",
        "database",
        "schema",
        "token",
        "client",
        "server",
        "build",
        "test",
        "lint",
        "branch",
        "review",
        "staging",
    ],
    *[
        "production",
        "backup",
        "restore",
        "timeout",
        "limit",
        "header",
        "session",
        "cookie",
        "payload",
        "webhook",
        "cron",
        "scheduler",
    ],
    *[
        "container",
        "image",
        "volume",
        "secret",
        "certificate",
        "proxy",
        "gateway",
        "router",
        "handler",
        "parser",
        "encoder",
        "metric",
    ],
    *[
        "alert",
        "dashboard",
        "report",
        "export",
        "import",
        "upgrade",
        "rollback",
        "feature",
        "flag",
        "tenant",
        "account",
        "invoice",
    ],
]


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.acked: list[str] = []
        self.deleted: set[str] = set()  # acknowledged deletes (another client's duplicate store may name one)
        self.requests = 0
        self.dropped = 0  # sessions whose connection the server dropped (or that could not connect)
        self.drop_reason = ""

    def drop(self, exc: BaseException) -> None:
        """A session ended by its connection: MCP clients do not reconnect, so the client stops here."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the SDK's task group wraps the cause
            exc = exc.exceptions[0]
        self.dropped += 1
        self.drop_reason = self.drop_reason or f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no detail'}"

    def fail(self, tool: str, count: int = 1) -> None:
        self.errors[tool] = self.errors.get(tool, 0) + count


def parse_mix(text: str) -> dict[str, float]:
    mix = {"retrieve": 0.0, "store": 0.0, "other": 0.0}
    for part in text.split(","):
        name, _, share = part.partition("=")
        if name.strip() not in mix:
            raise SystemExit(f"--mix: unknown operation {name!r} (retrieve, store, other).")
        mix[name.strip()] = float(share)
    total = sum(mix.values()) or 1.0
    return {k: v / total for k, v in mix.items()}


def pick(rng: random.Random, mix: dict[str, float], project: str, mine: list[int]) -> tuple[str, dict[str, Any]]:
    roll = rng.random()
    topic = rng.choice(TOPICS)
    if roll < mix["retrieve"]:
        words = " ".join(rng.sample(WORDS, 2))
        return "retrieve_memories", {"query": f"how do we handle {topic} for the {words}?", "project_id": project}
    if roll < mix["retrieve"] + mix["store"]:
        fact = f"Load test fact {uuid.uuid4().hex[:8]}: the {' '.join(rng.sample(WORDS, 3))} {topic} uses retries"
        return "store_memory", {"content": fact, "category": "process", "project_id": project}
    if mine and rng.random() < 0.5:
        return "update_memory", {"id": rng.choice(mine), "tags": [topic]}
    if mine:
        return "delete_memory", {"id": mine.pop()}
    return "list_memories", {"project_id": project, "limit": 10}


async def client_loop(
    url: str,
    token: str,
    project: str,
    deadline: float,
    budget: list[int],
    stats: Stats,
    seed: int,
    mix: dict[str, float],
) -> None:
    rng = random.Random(seed)
    mine: list[int] = []
    try:
        async with mcp_session(url, token) as session:
            while time.monotonic() < deadline and budget[0] > 0:
                budget[0] -= 1
                tool, args = pick(rng, mix, project, mine)
                await timed_call(session, tool, args, time.perf_counter(), stats, mine)
    except Exception as exc:  # the connection dropped (the call in flight is counted): this client is done
        stats.drop(exc)


async def timed_call(
    session: ClientSession, tool: str, args: dict[str, Any], started: float, stats: Stats, mine: list[int]
) -> None:
    """Call one tool and record its latency from `started` (a perf_counter reading), its error or
    what it acknowledged."""
    try:
        result = await session.call_tool(tool, args)
        ok = not result.is_error
    except Exception:
        ok, result = False, None
    except asyncio.CancelledError:  # the session's task group ended: the server dropped the connection
        stats.requests += 1
        stats.fail(tool)
        raise
    stats.latency.setdefault(tool, []).append((time.perf_counter() - started) * 1000)
    stats.requests += 1
    if not ok:
        stats.fail(tool)
    elif tool == "store_memory" and result is not None:
        stats.acked.append(result.structured_content["uuid"])
        mine.append(result.structured_content["id"])
    elif tool == "delete_memory" and result is not None:
        stats.deleted.add(result.structured_content["uuid"])


# --- open loop (paced) ---------------------------------------------------------------------------


class Pace:
    """The shared clock of a paced level: every client's schedule starts at `start`, once all
    sessions are initialized (so slow handshakes do not eat into the schedule)."""

    def __init__(self, clients: int, duration: float) -> None:
        self.clients = clients
        self.duration = duration
        self.ready = 0
        self.go = asyncio.Event()
        self.start = 0.0
        self.scheduled = 0  # arrivals drawn inside the window
        self.not_started = 0  # arrivals still waiting for their client when the window closed
        self.finished = 0.0  # when the last operation ended

    def arrived(self) -> None:
        self.ready += 1
        if self.ready == self.clients:
            self.start = time.perf_counter()
            self.go.set()


async def paced_client_loop(
    url: str,
    token: str,
    project: str,
    pace: Pace,
    rate: float,
    budget: list[int],
    stats: Stats,
    seed: int,
    mix: dict[str, float],
) -> None:
    """One assistant: operations arrive on a Poisson schedule at `rate` per second (exponential
    gaps, seeded) and are issued one at a time on one session. Latency counts from the scheduled
    start, so an operation that waits for its client's previous one counts that wait (no
    coordinated omission). Arrivals after the window are not drawn; arrivals inside it that the
    client has not started when the window closes are counted in `pace.not_started` (the server
    did not keep up) and dropped."""
    rng = random.Random(seed)
    mine: list[int] = []
    arrived, due = False, 0.0
    try:
        async with mcp_session(url, token) as session:
            pace.arrived()
            arrived = True
            await pace.go.wait()
            end = pace.start + pace.duration
            due = pace.start + rng.expovariate(rate)
            while due < end and budget[0] > 0:
                pace.scheduled += 1
                now = time.perf_counter()
                if now >= end:
                    pace.not_started += 1
                else:
                    if due > now:
                        await asyncio.sleep(due - now)
                    budget[0] -= 1
                    tool, args = pick(rng, mix, project, mine)
                    await timed_call(session, tool, args, due, stats, mine)
                due += rng.expovariate(rate)
    except Exception as exc:  # the connection dropped (the call in flight is counted): this client is done
        stats.drop(exc)
        if not arrived:  # the others wait for every session before the clock starts
            pace.arrived()
            await pace.go.wait()
        due = max(due, pace.start) + rng.expovariate(rate)  # the arrivals this session would still have had
        while due < pace.start + pace.duration:
            pace.scheduled += 1
            stats.fail("connection_dropped")
            due += rng.expovariate(rate)
    pace.finished = max(pace.finished, time.perf_counter())


async def run_paced_level(
    url: str,
    token: str,
    project: str,
    clients: int,
    rate: float,
    duration: float,
    max_requests: int,
    mix: dict[str, float],
    seed: int,
) -> tuple[Stats, Pace]:
    """`clients` sessions offering `rate` operations per second in all (rate / clients each)."""
    stats = Stats()
    pace = Pace(clients, duration)
    budget = [max_requests]
    per_client = rate / clients
    await asyncio.gather(
        *(
            paced_client_loop(url, token, project, pace, per_client, budget, stats, seed * 1000 + n, mix)
            for n in range(clients)
        )
    )
    return stats, pace


def pace_report(rate: float, stats: Stats, pace: Pace) -> dict[str, Any]:
    window = max(pace.duration, pace.finished - pace.start)
    return {
        "offered_ops": rate,
        "scheduled_ops": round(pace.scheduled / pace.duration, 1),
        "achieved_ops": round(stats.requests / window, 1),
        "scheduled": pace.scheduled,
        "not_started": pace.not_started,
        "last_end_s": round(pace.finished - pace.start, 1),  # when the last operation ended
    }


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1) if values else 0.0


async def run_level(
    url: str, token: str, project: str, clients: int, duration: float, max_requests: int, mix: dict[str, float]
) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + duration
    budget = [max_requests]
    seeds = [random.randrange(1 << 30) for _ in range(clients)]
    await asyncio.gather(
        *(client_loop(url, token, project, deadline, budget, stats, seeds[n], mix) for n in range(clients))
    )
    return stats


# --- the inject hook under load -----------------------------------------------------------------

PROMPTS = [
    "How do we handle the deploy retries for the staging database?",
    "Why did we choose this cache timeout for the session service?",
    "What does the queue scheduler do when the webhook payload fails?",
    "How should I run the migration for the tenant schema?",
]


def time_injects(count: int, project: str, port: int, delay: float, out: list[float], floor: list[float]) -> None:
    """Run the inject hook as `yullu install` wires it (`python -I -S hook_entry.py inject`)
    `count` times in a folder named like the project (no git: the folder name is the project) under
    the home folder,
    timing process start to exit. Each run is followed by one with a trivial prompt ("ok"), which
    the hook skips before any request: its time is the floor set by starting Python on this
    machine at this moment, whatever the server does."""
    time.sleep(delay)
    hook = hook_argv("inject")
    # In the home folder, the server's default allowed root: a folder under /tmp is refused, and the
    # hook then asks again with the project id, so the timing would be a refusal's plus a second request.
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        cwd = Path(tmp) / project
        cwd.mkdir()
        env = {**os.environ, "YULLU_PORT": str(port)}
        for n in range(count):
            # A fresh wording each time (a ticket number), so the query-embedding cache never answers:
            # a real prompt is new text, and its embedding waits its turn under load.
            prompt = f"{PROMPTS[n % len(PROMPTS)]} (ticket {uuid.uuid4().hex[:6]})"
            payload = json.dumps({"prompt": prompt, "cwd": str(cwd)})
            started = time.perf_counter()
            subprocess.run(hook, input=payload.encode(), capture_output=True, env=env, check=False)
            out.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            subprocess.run(hook, input=b'{"prompt": "ok"}', capture_output=True, env=env, check=False)
            floor.append((time.perf_counter() - started) * 1000)


# --- driver --------------------------------------------------------------------------------------


def level_report(
    clients: int, stats: Stats, elapsed: float, cpu: CpuMeter, injects: list[float], floor: list[float]
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": stats.requests,
        "throughput_ops": round(stats.requests / elapsed, 1),
        "errors": stats.errors,
        "dropped_sessions": stats.dropped,
        "per_tool_ms": {
            tool: {
                "n": len(v),
                "p50": pct(v, 0.5),
                "p95": pct(v, 0.95),
                "p99": pct(v, 0.99),
                "mean": round(statistics.fmean(v), 1),
            }
            for tool, v in sorted(stats.latency.items())
        },
        **cpu.report(stats.requests),
    }
    if injects:
        report["inject_ms"] = {"n": len(injects), "p50": pct(injects, 0.5), "p95": pct(injects, 0.95)}
        report["inject_trivial_prompt_ms"] = {"n": len(floor), "p50": pct(floor, 0.5), "p95": pct(floor, 0.95)}
    return report


def main(args: argparse.Namespace) -> dict[str, Any]:
    from django.conf import settings

    host = urlparse(args.url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("bench load only targets loopback addresses.")
    home = settings.YULLU_HOME
    token = (home / "token").read_text().strip()
    port = urlparse(args.url).port or settings.YULLU["server"]["port"]
    project = args.project or f"load-{uuid.uuid4().hex[:6]}"
    mix = parse_mix(args.mix)
    if args.prefill and not Memory.objects.filter(project_id=project).exists():
        prefill(project, args.prefill)
    acked: list[str] = []
    deleted: set[str] = set()
    if args.seed:
        seeded = asyncio.run(
            run_level(args.url, token, project, 4, 3600, args.seed, {"retrieve": 0, "store": 1, "other": 0})
        )
        acked += seeded.acked
        print(f"seeded {project} with {len(seeded.acked)} memories", flush=True)
    results = []
    for clients in [int(n) for n in str(args.clients).split(",")]:
        report, stats = measure_level(args, home, token, project, port, clients, mix)
        acked += stats.acked
        deleted |= stats.deleted
        print(json.dumps(report, indent=2), flush=True)
        results.append(report)
    summary = summarise(args, project, mix, results, acked, deleted)
    print(json.dumps({k: v for k, v in summary.items() if k != "levels"}, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=2))
    return summary


def measure_level(
    args: argparse.Namespace, home: Path, token: str, project: str, port: int, clients: int, mix: dict[str, float]
) -> tuple[dict[str, Any], Stats]:
    """One level: `clients` sessions, closed loop or paced, with the inject hook timed alongside."""
    injects: list[float] = []
    floor: list[float] = []
    timer = None
    if args.inject:
        timer = threading.Thread(
            target=time_injects, args=(args.inject, project, port, min(3.0, args.duration / 4), injects, floor)
        )
    with CpuMeter(home) as cpu:
        started = time.perf_counter()
        if timer:
            timer.start()
        pace = None
        if args.rate:
            stats, pace = asyncio.run(
                run_paced_level(
                    args.url,
                    token,
                    project,
                    clients,
                    args.rate,
                    args.duration,
                    args.max_requests,
                    mix,
                    args.schedule_seed,
                )
            )
        else:
            stats = asyncio.run(run_level(args.url, token, project, clients, args.duration, args.max_requests, mix))
        elapsed = time.perf_counter() - started
    if timer:
        timer.join()
    report = level_report(clients, stats, elapsed, cpu, injects, floor)
    if stats.dropped:  # one line, not the SDK's traceback; what the level measured is kept
        print(f"bench load: the server dropped {stats.dropped} of {clients} sessions at {clients} clients "
              f"({stats.drop_reason}); MCP clients do not reconnect, so each stopped there and its call in flight "
              f"(paced: its arrivals left in the window) counts as an error.", file=sys.stderr, flush=True)  # fmt: skip
    report["mode"] = "paced" if pace else "closed_loop"
    if pace:
        report |= pace_report(args.rate, stats, pace)
    return report, stats


def summarise(
    args: argparse.Namespace,
    project: str,
    mix: dict[str, float],
    results: list[dict[str, Any]],
    acked: list[str],
    deleted: set[str],
) -> dict[str, Any]:
    """The run's result, with every acknowledged store checked in the database."""
    # A store of a near-duplicate acknowledges the existing memory: count each memory once.
    expected = set(acked) - deleted
    present = {str(u) for u in Memory.objects.filter(uuid__in=expected).values_list("uuid", flat=True)}
    return {
        "project": project,
        "mode": "paced" if args.rate else "closed_loop",
        "offered_ops": args.rate or None,
        "mix": mix,
        "levels": results,
        "acknowledged_stores": len(acked),
        "acknowledged_memories": len(expected),
        "lost_writes": len(expected - present),
        "lost_uuids": sorted(expected - present)[:20],
        "errors": sum(sum(r["errors"].values()) for r in results),
        "dropped_sessions": sum(r["dropped_sessions"] for r in results),
    }


def prefill(project: str, count: int) -> None:
    from bench.latency import populate, rebuild_index
    from memories.embedding.embedders import get_embedder

    embedder = get_embedder()
    dim = len(embedder.embed(["probe"])[0])
    print(f"prefilling {project} with {count} synthetic memories…", flush=True)
    rebuild_index(embedder.id, dim, drop=True)
    populate(project, count, dim, embedder.id, 0)
    rebuild_index(embedder.id, dim, drop=False)
