"""The admin graph at scale: time to compute nodes and edges for a project of N memories.

Run: `YULLU_HOME=… .venv/bin/python -m bench.admin_graph --memories 2000`

Inserts N memories with clustered random unit vectors (50 topics) for the active embedder into a
throwaway project, builds the graph the Graph page fetches (each memory's 5 nearest neighbours
above the threshold, through the HNSW index), reports seconds, nodes and edges, and cleans up.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import django


def main(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from memories.embedding.embedders import get_embedder
    from memories.embedding.vector_index import ensure_index
    from memories.models import Memory, MemoryVector
    from memories.search.admin_queries import graph

    embedder = get_embedder()
    dim = len(embedder.embed(["dimension probe"])[0])
    project = "bench/admin-graph"
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(50, dim))
    Memory.objects.filter(project_id=project).delete()
    try:
        rows = Memory.objects.bulk_create(
            [Memory(project_id=project, content=f"bench memory {n}") for n in range(args.memories)]
        )
        vectors = []
        for n, memory in enumerate(rows):
            v = centres[n % 50] + rng.normal(scale=0.6, size=dim)
            vectors.append(
                MemoryVector(
                    memory=memory, project_id=project, embedder=embedder.id, dim=dim, vector=v / np.linalg.norm(v)
                )
            )
        MemoryVector.objects.bulk_create(vectors)
        ensure_index(embedder.id, dim)
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            data = graph(project, threshold=args.threshold)
            timings.append(time.perf_counter() - started)
        return {
            "memories": args.memories,
            "threshold": args.threshold,
            "nodes": len(data["nodes"]),
            "edges": len(data["edges"]),
            "seconds_best_of_3": round(min(timings), 3),
            "embedder": embedder.id,
        }
    finally:
        Memory.objects.filter(project_id=project).delete()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--threshold", type=float, default=0.5)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    django.setup()
    print(json.dumps(main(parser.parse_args()), indent=2))
