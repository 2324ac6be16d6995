"""A big team's year: how each cost grows from 10k to 1M memories.

Run (on a throwaway home: it adds up to a million memories to the database it finds):

    YULLU_HOME=/tmp/yullu-scale YULLU_CONFIG=/tmp/yullu-scale/config.toml \
        yullu bench scale [--sizes 10000,100000,1000000] [--logs 1000,10000,100000] \
        [--out docs/results/scale.json] [--chart docs/scale.png]

For each size the corpus grows to that many memories: one large project (half the corpus, at most
100,000 memories) and the rest spread over 300 projects with a skew (a few big, a long tail), dated
over the last year, each with its `created` activity row and, per ten memories, one logged search
of ten candidates (the recall log). Text is drawn from a 20,000-word vocabulary with a Zipf-like
skew and vectors clustered by topic (as `yullu bench latency`); the bulk is written with COPY, so
the scale curve measures the product at that size, not the loader. Then, at that size:

- search p50/p95 in the large project (server side, query vector given: no embedding);
- store p50/p95, one client, through the product's write path with the real embedder;
- server time of the admin's pages (dashboard, memories list, review queue, retrievals, stats,
  projects, graph) for a logged-in superuser, median of 3;
- database size per memory: table (+ TOAST), HNSW index, BM25 postings, recall log;
- resident memory of this process and of PostgreSQL's processes.

Separately (`--logs`): the first reconcile of a team log of N event files (memories as `create` +
`embedding`, vectors reused), a no-op reconcile of the same log, and `yullu sync compact` of it.
Import throughput (`yullu import`, with and without vectors) is measured at 2,000 memories.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from django.db import connection

from bench.scale_corpus import BIG, grow, settle

PAGES = {
    "dashboard": "/admin/",
    "memories list": "/admin/memories/memory/",
    "memories list (big project)": "/admin/memories/memory/?project_id={big}",
    "review queue": "/admin/memories/memory/review/",
    "retrievals": "/admin/memories/memory/retrievals/",
    "stats": "/admin/memories/memory/stats/",
    "projects": "/admin/memories/memory/projects/",
    "graph page": "/admin/memories/memory/graph/?project_id={big}",
    "graph data (big project)": "/admin/memories/memory/graph.json?project_id={big}",
}


def percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "p50": round(statistics.median(samples), 2),
        "p95": round(samples[max(0, int(0.95 * len(samples)) - 1)], 2),
        "n": len(samples),
    }


def timed_ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def search_latency(embedder: Any, dim: int, n: int) -> dict[str, float]:
    from bench.latency import clustered, sample_queries
    from memories.search import queries

    qvecs, texts = list(clustered(50, dim, seed=99)), sample_queries(50)

    def one(i: int) -> None:
        queries.search(
            BIG,
            texts[i % 50],
            limit=5,
            min_similarity=0.0,
            log=False,
            embedded=queries.Embedded(embedder, qvecs[i % 50]),
        )

    for i in range(20):
        one(i)
    return percentiles([timed_ms(partial(one, i)) for i in range(n)])


def store_latency(n: int) -> dict[str, float]:
    """One client storing into the large project through the write path, real embedder included."""
    from memories.scope import Scope
    from memories.write import create

    scope = Scope(BIG, None)
    run = uuid.uuid4().hex[:6]
    facts = team_facts(n)
    return percentiles([timed_ms(partial(create.store_memory, scope, f"{fact} ({run})")) for fact in facts])


def admin_pages() -> dict[str, float]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="scale-bench", defaults={"is_staff": True})
    user.is_staff = user.is_superuser = True
    user.save()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    out = {}
    for name, url in PAGES.items():
        path = url.format(big=BIG)
        status = client.get(path).status_code  # warm
        if status != 200:
            out[name] = -1.0
            print(f"  {name}: HTTP {status} for {path}", flush=True)
            continue
        out[name] = round(statistics.median(timed_ms(partial(client.get, path)) for _ in range(3)), 1)
    return out


def sizes_per_memory(n: int) -> dict[str, float]:
    from memories.embedding.embedders import get_embedder
    from memories.embedding.vector_index import index_name

    embedder = get_embedder()
    dim = len(embedder.embed(["probe"])[0])
    parts = {
        "table": "pg_total_relation_size('memories_memory') - pg_indexes_size('memories_memory')",
        "table indexes": "pg_indexes_size('memories_memory')",
        "vectors (heap)": "pg_table_size('memories_memoryvector')",
        "HNSW index": f"coalesce(pg_relation_size(to_regclass('{index_name(embedder.id, dim)}')), 0)",
        "BM25 postings": "pg_total_relation_size('memories_term')",
        "activity + recall log": "pg_total_relation_size('memories_memoryevent')",
        "database": "pg_database_size(current_database())",
    }
    with connection.cursor() as cur:
        out = {}
        for name, expr in parts.items():
            cur.execute(f"SELECT {expr}")
            out[name] = round(cur.fetchone()[0] / n, 1)
    return out


def resident_mb() -> dict[str, float]:
    import psutil

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        backend = psutil.Process(cur.fetchone()[0])
    postmaster = backend.parent() or backend
    pg = [postmaster, *postmaster.children()]
    return {
        "this process (web-like: Django, embedder, searches)": round(psutil.Process().memory_info().rss / 2**20, 1),
        "PostgreSQL, all processes (RSS, shared buffers counted once per process)": round(
            sum(p.memory_info().rss for p in pg if p.is_running()) / 2**20, 1
        ),
    }


def serve_rss(searches: int = 40, stores: int = 10) -> dict[str, Any]:
    """Resident memory of each process `yullu serve` runs (web, worker, beat), after it served
    searches and stores in the large project over HTTP. The worker's pool children are summed
    with it (prefork: they share pages with it, so the sum overstates)."""
    import signal
    import sys

    import httpx
    import psutil

    from yullu_cli.hooks import token

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "YULLU_PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "yullu_cli.main", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"yullu serve on port {port} did not become ready")
            time.sleep(1)
        headers = {"Authorization": f"Bearer {token()}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            for i, fact in enumerate(team_facts(searches)):
                client.post("/api/memories/recall", json={"query": fact, "project_id": BIG}).raise_for_status()
                if i < stores:
                    client.post("/api/memories", json={"content": f"{fact} (rss {i})", "project_id": BIG})
        time.sleep(5)  # the worker's after-commit tasks
        return _tree_rss(psutil.Process(proc.pid))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def _ready(url: str) -> bool:
    import httpx

    try:
        response = httpx.get(f"{url}/api/status", timeout=5)
        return response.status_code == 200 and response.json().get("ready") is True
    except (httpx.HTTPError, ValueError):
        return False


def _tree_rss(supervisor: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"supervisor": round(supervisor.memory_info().rss / 2**20, 1)}
    for child in supervisor.children():
        line = " ".join(child.cmdline())
        role = (
            "web" if "uvicorn" in line else "beat" if " beat" in line else "worker" if " worker" in line else line[:40]
        )
        mine = [child, *child.children(recursive=True)]
        out[role] = {
            "MB": round(sum(p.memory_info().rss for p in mine) / 2**20, 1),
            "processes": len(mine),
        }
    return out


def corpus_size() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM memories_memory")
        return int(cur.fetchone()[0])


def at_size(size: int, embedder: Any, dim: int, queries_n: int) -> dict[str, Any]:
    have = corpus_size()
    growth: dict[str, float] = {}
    if have < size:
        print(f"growing the corpus {have:,} → {size:,} memories", flush=True)
        from bench.latency import rebuild_index

        rebuild_index(embedder.id, dim, drop=True)
        growth["rows and vectors s"] = round(timed_ms(lambda: grow(size, have, embedder.id, dim)) / 1000, 1)
        growth["HNSW build and analyse s"] = round(timed_ms(lambda: settle(embedder.id, dim)) / 1000, 1)
        print(f"  grown: {growth}", flush=True)
    n = corpus_size()
    big = statistics_big()
    row = {
        "memories": n,
        "large project": big,
        "growth": growth,
        "search ms (large project)": search_latency(embedder, dim, queries_n),
        "store ms (one client)": store_latency(100),  # 40 left p95 to the 2nd-slowest store
        "admin page ms": admin_pages(),
        "bytes per memory": sizes_per_memory(n),
        "resident MB": resident_mb(),
        "yullu serve resident MB": serve_rss(),
    }
    print(json.dumps(row, indent=2), flush=True)
    return row


def statistics_big() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM memories_memory WHERE project_id = %s", [BIG])
        return int(cur.fetchone()[0])


def log_steps(files: int, embedder: Any, dim: int) -> dict[str, Any]:
    """First reconcile, no-op reconcile and compaction of a log of `files` event files."""
    import numpy as np

    from bench.reconcile import timed, write_memories
    from memories.models import Memory
    from memories.scope import Scope
    from sync.compact import compact

    project = f"scale/log-{uuid.uuid4().hex[:6]}"
    out: dict[str, Any] = {"files": files}
    with tempfile.TemporaryDirectory(prefix="yullu-scale-log-") as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        write_memories(repo / ".yullu" / "logs", files, embedder.id, dim, np.random.default_rng(5))
        try:
            first = timed(project, repo, embedder)
            out["first reconcile s"] = first["seconds"]
            out["memories/s"] = round(first["created"] / max(first["seconds"], 1e-9), 1)
            out["embed calls"] = first["embed_calls"]
            out["no-op reconcile s"] = timed(project, repo, embedder)["seconds"]
            started = time.perf_counter()
            compact(Scope(project, repo))
            out["compaction s"] = round(time.perf_counter() - started, 2)
        finally:
            Memory.objects.filter(project_id=project).delete()
    print(f"log of {files:,} files: {json.dumps(out)}", flush=True)
    return out


SUBJECTS = (
    "the billing service",
    "the nightly export",
    "our CI pipeline",
    "the auth middleware",
    "the search indexer",
    "the mobile client",
    "the payments webhook",
    "the admin dashboard",
    "the feature-flag loader",
    "the cache layer",
    "the migration runner",
    "the email worker",
    "the rate limiter",
    "the audit log",
    "the GraphQL gateway",
    "the invoice generator",
    "the staging cluster",
    "the docs site",
    "the onboarding flow",
    "the metrics exporter",
)
VERBS = (
    "must be restarted after",
    "breaks when it meets",
    "reads its settings from",
    "is deployed together with",
    "times out unless you raise",
    "logs every failure to",
    "was moved away from",
    "depends on a pinned",
    "retries three times against",
    "is tested only against",
    "caches the result of",
    "should never call",
)
OBJECTS = (
    "the Redis sentinel",
    "a schema change",
    "the vault secrets path",
    "the blue-green switch",
    "the S3 bucket policy",
    "the Kafka consumer group",
    "a daylight-saving shift",
    "the Postgres read replica",
    "the legacy SOAP API",
    "the Stripe sandbox",
    "the cron scheduler",
    "an empty locale file",
    "the OpenTelemetry collector",
    "the release branch",
    "the load balancer health check",
    "a UTF-8 BOM",
    "the Terraform state lock",
)


def team_facts(count: int) -> list[str]:
    """Distinct sentences that read like a team's memories (subject, verb, object, and a ticket)."""
    rng = random.Random(count)
    return [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (see ticket OPS-{1000 + i})."
        for i in range(count)
    ]


IMPORT_KINDS = ("embedding", "vectors", "repository")


def import_steps(count: int, kinds: tuple[str, ...] = IMPORT_KINDS) -> dict[str, Any]:
    """`yullu import` of `count` memories exported from another project: embedding them, with their
    vectors, with their vectors into a repository's project (`kinds`: which of the three). Exports keep
    uuids, so the source is deleted first, as if the import ran on a new machine."""
    from memories.models import Memory
    from memories.scope import Scope
    from memories.transfer import export, importer
    from memories.write import create, validation

    source = f"scale/import-src-{uuid.uuid4().hex[:6]}"
    facts = team_facts(count)
    for start in range(0, count, 5_000):  # the source's embedding in slices: one call of 50,000 texts holds them all
        items = [validation.NewMemory(text) for text in facts[start : start + 5_000]]
        create.store_memories(Scope(source, None), items, source="import", dedupe=False)
    out: dict[str, Any] = {"memories": count}
    with tempfile.TemporaryDirectory(prefix="yullu-scale-import-") as tmp:
        files = {vectors: Path(tmp) / f"export-{vectors}.jsonl" for vectors in (False, True)}
        for vectors, path in files.items():
            if vectors or "embedding" in kinds:
                with path.open("w", encoding="utf-8") as fh:
                    export.export_json(source, fh, vectors=vectors)
        Memory.objects.filter(project_id=source).delete()
        for vectors, path in files.items():
            key = "with vectors" if vectors else "embedding"
            if ("vectors" if vectors else "embedding") not in kinds:
                continue
            target = f"scale/import-{uuid.uuid4().hex[:6]}"
            started = time.perf_counter()
            result = importer.import_path(path, project=target, progress=sys.stderr)
            seconds = time.perf_counter() - started
            out[key] = {"created": result.created, "memories/s": round(result.created / seconds, 1)}
            Memory.objects.filter(project_id=target).delete()
        if "repository" in kinds:
            out["with vectors, into a repository's project"] = import_into_repo(files[True], Path(tmp) / "repo")
    print(f"import: {json.dumps(out)}", flush=True)
    return out


def import_into_repo(path: Path, repo: Path) -> dict[str, Any]:
    """The import into a repository's project: every memory also becomes two event files (a create
    and its embedding) in the repository's team log."""
    from memories.models import Memory
    from memories.scope import remember_location, resolve_path
    from memories.transfer import importer

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", f"git@example.com:scale/{repo.name}.git"], check=True
    )
    scope = resolve_path(repo)
    remember_location(scope)
    started = time.perf_counter()
    result = importer.import_path(path, project=scope.project_id, progress=sys.stderr)
    seconds = time.perf_counter() - started
    files = sum(1 for _ in (repo / ".yullu" / "logs").glob("*.json"))
    Memory.objects.filter(project_id=scope.project_id).delete()
    return {"created": result.created, "event files": files, "memories/s": round(result.created / seconds, 1)}


def chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["sizes"]
    xs = [r["memories"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    ax.plot(xs, [r["search ms (large project)"]["p50"] for r in rows], "o-", label="search p50")
    ax.plot(xs, [r["search ms (large project)"]["p95"] for r in rows], "o--", label="search p95")
    ax.plot(xs, [r["store ms (one client)"]["p95"] for r in rows], "s-", label="store p95")
    ax.set(title="search and store (ms)", xscale="log", xlabel="memories")
    ax.legend()
    ax = axes[1]
    for page in rows[0]["admin page ms"]:
        ax.plot(xs, [r["admin page ms"].get(page, 0) for r in rows], "o-", label=page)
    ax.axhline(500, color="grey", lw=0.8, ls=":")
    ax.set(title="admin page server time (ms)", xscale="log", xlabel="memories")
    ax.legend(fontsize=7)
    ax = axes[2]
    logs = report.get("logs", [])
    if logs:
        for key, label in (("first reconcile s", "first reconcile"), ("no-op reconcile s", "no-op reconcile"),
                           ("compaction s", "compaction")):  # fmt: skip
            points = [(r["files"], r[key]) for r in logs if key in r]  # a step a run left out has no point
            ax.plot([x for x, _ in points], [y for _, y in points], "o-", label=label)
        ax.set(title="team log (s)", xscale="log", yscale="log", xlabel="event files")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"chart: {path}", flush=True)


def main(args: argparse.Namespace) -> dict[str, Any]:
    from memories.embedding.embedders import get_embedder

    embedder = get_embedder()
    dim = len(embedder.embed(["how do we deploy a hotfix release"], kind="query")[0])
    largest = max((int(s) for s in args.sizes.split(",") if s), default=0)  # --sizes "": logs and imports only
    print(
        f"note: this adds up to {largest:,} memories to the database of "
        f"YULLU_HOME={os.environ.get('YULLU_HOME', '(default)')}; use a throwaway home.",
        flush=True,
    )
    report: dict[str, Any] = {"embedder": embedder.id, "sizes": [], "logs": []}
    if args.logs:
        report["logs"] = [log_steps(int(n), embedder, dim) for n in args.logs.split(",")]
    if args.imports:
        kinds = tuple(k for k in getattr(args, "import_kinds", ",".join(IMPORT_KINDS)).split(",") if k)
        unknown = set(kinds) - set(IMPORT_KINDS)
        if unknown:
            raise SystemExit(f"--import-kinds: {', '.join(sorted(unknown))} is not one of {', '.join(IMPORT_KINDS)}.")
        report["import"] = import_steps(args.imports, kinds)
    for size in sorted(int(s) for s in args.sizes.split(",") if s):
        report["sizes"].append(at_size(size, embedder, dim, args.queries))
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))
    if args.chart and report["sizes"]:
        chart(report, Path(args.chart))
    return report
