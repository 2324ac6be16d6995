"""Reconcile of a large team log: full, no-op, and incremental on top of it.

Run: `yullu bench reconcile --base 50000 --events 1000 --events 10000 [--out PATH]`

Writes `--base` event files into a temporary git repository (memories as `create` +
`embedding` for our embedder, so no embed call is needed), reconciles them into a throwaway
project, then times a no-op reconcile over that log, then, for each `--events N`, N new files
on top followed by a reconcile (and a no-op again). Reports seconds, files read and embed calls
(expected: zero, every vector is reused). Cleans up afterwards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from memories.embedding.embedders import get_embedder
from memories.models import Memory, MemoryEvent
from memories.scope import Scope
from sync.eventlog import event_filename, new_event, render
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope


def write_memories(folder: Path, files: int, embedder_id: str, dim: int, rng: np.random.Generator) -> None:
    """`files` event files: half `create`, half `embedding` (plain writes: the bench measures reading).
    Vectors cluster by topic as real embeddings do (`yullu bench latency`): uniformly random ones
    are the HNSW index's worst case and made each insert ~5x slower than real data."""
    from bench.latency import clustered

    folder.mkdir(parents=True, exist_ok=True)
    block = clustered(files // 2, dim, seed=int(rng.integers(0, 2**31)))
    for n in range(files // 2):
        memory_uuid = str(uuid.uuid4())
        content = f"Synthetic team fact {uuid.uuid4().hex[:8]} number {n}"
        create = new_event("create", memory_uuid, content=content, tags=["bench"], category="process")
        vector = [round(float(x), 7) for x in block[n]]
        embedding = new_event("embedding", memory_uuid, create.ts_ns, embedder=embedder_id, vector=vector)
        for event in (create, embedding):
            (folder / event_filename(event)).write_bytes(render(event))


def timed(project: str, repo: Path, embedder: Any) -> dict[str, Any]:
    calls_before = getattr(type(embedder), "calls", 0)
    started = time.perf_counter()
    result = reconcile_scope(Scope(project, repo))
    seconds = time.perf_counter() - started
    keys = ("events_scanned", "events_new", "created", "embeddings_reused", "embeddings_computed")
    return {
        "seconds": round(seconds, 2),
        # mypy cannot check keys computed at run time; each is a ReconcileResult key.
        **{k: result[k] for k in keys},  # type: ignore[literal-required]
        "embed_calls": getattr(type(embedder), "calls", 0) - calls_before,
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    embedder = get_embedder()
    dim = len(embedder.embed(["dimension probe"])[0])
    rng = np.random.default_rng(3)
    steps: dict[str, Any] = {}
    project = f"reconcile-bench-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="yullu-reconcile-") as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        folder = repo / ".yullu" / "logs"
        try:
            write_memories(folder, args.base, embedder.id, dim, rng)
            steps[f"full reconcile of {args.base} files"] = timed(project, repo, embedder)
            steps[f"no-op over {args.base} files"] = timed(project, repo, embedder)
            total = args.base
            for extra in args.events or [1000]:
                write_memories(folder, extra, embedder.id, dim, rng)
                steps[f"{extra} new files on top of {total}"] = timed(project, repo, embedder)
                total += extra
                steps[f"no-op over {total} files"] = timed(project, repo, embedder)
        finally:
            Memory.objects.filter(project_id=project).delete()
            MemoryEvent.objects.filter(project_id=project).delete()
            LedgerEntry.objects.filter(project_id=project).delete()
            ProjectSyncState.objects.filter(project_id=project).delete()
    report = {"embedder": embedder.id, "base_files": args.base, "steps": steps}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return report
