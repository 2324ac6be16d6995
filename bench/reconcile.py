"""Reconcile throughput: a log of N memories (`create` + `embedding` for our embedder).

Run: `yullu bench reconcile --events 10000 [--out PATH]`

Writes the events into a temporary git repository (real event files, real writer), then
reconciles them into a throwaway project of this database and reports seconds and the
number of embed calls (expected: zero, every vector is reused). Cleans up afterwards.
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

from memories.embedders import get_embedder
from memories.models import Memory, MemoryEvent
from memories.scope import Scope
from sync.eventlog import new_event, write_event
from sync.models import LedgerEntry, ProjectSyncState
from sync.services import reconcile_scope


def main(args: argparse.Namespace) -> dict[str, Any]:
    embedder = get_embedder()
    dim = len(embedder.embed(["dimension probe"])[0])
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory(prefix="yullu-reconcile-") as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        folder = repo / ".yullu" / "logs"
        started = time.perf_counter()
        for n in range(args.events):
            vec = rng.normal(size=dim)
            vec /= np.linalg.norm(vec)
            memory_uuid = str(uuid.uuid4())
            content = f"Synthetic team fact number {n}"
            event = new_event("create", memory_uuid, content=content, tags=["bench"], category="process")
            write_event(folder, event)
            vector = [round(float(x), 7) for x in vec]
            write_event(folder, new_event("embedding", memory_uuid, event.ts_ns, embedder=embedder.id, vector=vector))
        write_s = time.perf_counter() - started
        project = f"reconcile-bench-{uuid.uuid4().hex[:6]}"
        calls_before = getattr(type(embedder), "calls", 0)
        started = time.perf_counter()
        try:
            result = reconcile_scope(Scope(project, repo))
            seconds = time.perf_counter() - started
            calls = getattr(type(embedder), "calls", 0) - calls_before
        finally:
            Memory.objects.filter(project_id=project).delete()
            MemoryEvent.objects.filter(project_id=project).delete()
            LedgerEntry.objects.filter(project_id=project).delete()
            ProjectSyncState.objects.filter(project_id=project).delete()
    report = {
        "events": args.events,
        "embedder": embedder.id,
        "write_events_s": round(write_s, 1),
        "reconcile_s": round(seconds, 1),
        "events_per_s": round(args.events / seconds, 1),
        "created": result["created"],
        "embeddings_reused": result["embeddings_reused"],
        "embeddings_computed": result["embeddings_computed"],
        "embed_calls": calls,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report
