"""Developer tool: pick BM25 and fusion parameters on a LoCoMo-format file.

Ingests like bench/locomo.py (once), caches each question's candidates per BM25
setting, then scores fusion variants in Python. Not part of the product path.
Run: DJANGO_SETTINGS_MODULE=yullu_site.settings python -m bench.tune_fusion ../shared/bench/locomo_dev.json
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

import django

django.setup()

from bench.locomo import ingest, metrics, questions  # noqa: E402
from memories.embedding.embedders import get_embedder  # noqa: E402
from memories.models import Memory, MemoryEvent  # noqa: E402
from memories.search import bm25, queries  # noqa: E402


def collect(projects: list[Any], embedder: Any) -> list[dict[str, Any]]:
    cached = []
    for project, ids, qs, vecs in projects:
        for q, v in zip(qs, vecs, strict=False):
            cands = queries.rank(project, q["question"], v, embedder.id, [], "hybrid")
            cached.append({"q": q, "ids": ids, "cands": cands})
    return cached


def evaluate(cached: list[dict[str, Any]], **params: Any) -> dict[str, float]:
    rows = []
    for item in cached:
        cands = {c.memory_id: c for c in item["cands"]}
        ordered = queries.fuse(cands, "hybrid", **params)
        ranked = [item["ids"][c.memory_id] for c in ordered[:10]]
        rows.append(metrics(ranked, item["q"]["gold"]))
    return {k: round(statistics.fmean(r[k] for r in rows), 4) for k in ("recall@5", "recall@10", "mrr")}


def main() -> None:
    data = json.loads(Path(sys.argv[1]).read_text())
    prefix = f"tune-{uuid.uuid4().hex[:8]}"
    embedder = get_embedder()
    projects = []
    results = []
    try:
        for conv in data:
            project, ids, _, _ = ingest(prefix, conv)
            qs = questions(conv, set(ids.values()))
            vecs = embedder.embed([q["question"] for q in qs], kind="query")
            projects.append((project, ids, qs, vecs))
        for k1, b in [(1.2, 0.3), (1.2, 0.75)]:
            bm25.K1, bm25.B = k1, b
            cached = collect(projects, embedder)
            grid = itertools.product([0.4, 0.6, 0.8], [0.0, 0.05], [0.0, 0.2, 0.3, 0.4])
            for w_kw, w_rec, w_con in grid:
                m = evaluate(cached, w_keyword=w_kw, w_recency=w_rec, w_contiguity=w_con)
                results.append((m["recall@10"], m["recall@5"], k1, b, w_kw, w_rec, w_con, m["mrr"]))
            print("done", k1, b, max(r for r in results if r[2] == k1 and r[3] == b), flush=True)
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    print("r@10 r@5 k1 b w_kw w_rec w_contiguity mrr")
    for row in sorted(results, reverse=True)[:12]:
        print(row)


if __name__ == "__main__":
    main()
