"""Codebase retrieval benchmark: does `retrieve_memories` answer short natural questions about a
codebase, and stay silent on prompts the project knows nothing about?

Run: `yullu bench codebase [--out docs/results/codebase_dev.json]`

The set (`yullu_cli/bench/data/codebase_dev.json`) holds 45 memories of a fictional codebase across the five
categories, 104 short questions with the memories that answer them, 45 unrelated prompts and 20
near-miss codebase questions the project has no memory for. Memories are stored through the real
write path into a throwaway project; every prompt goes through the same search as
`retrieve_memories` (tool defaults: limit 5, the calibrated gate), without the recall log. Questions
about every third memory, and every third unrelated / near-miss prompt, are held out: tune on
`tune`, report both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memories import queries, services
from memories.embedders import get_embedder
from memories.models import Memory, MemoryEvent
from memories.scope import Scope

DATA = Path(__file__).resolve().parent / "data" / "codebase_dev.json"
SPLITS = ("tune", "held_out")


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())


def ingest(prefix: str, dev: dict[str, Any]) -> tuple[str, dict[int, str]]:
    """Store the set's memories in a throwaway project; returns it and memory pk → set id."""
    project = f"{prefix}/codebase"
    items = [services.NewMemory(m["content"], m["category"], [], None) for m in dev["memories"]]
    created = services.create_memories(Scope(project, None), items, source="bench")
    return project, {m.pk: d["id"] for m, d in zip(created, dev["memories"], strict=True)}


def split_of(index: int) -> str:
    return "held_out" if index % 3 == 2 else "tune"


def prompts(dev: dict[str, Any]) -> Iterator[tuple[str, str, list[str], str]]:
    """(kind, text, answer ids, split): questions split by their first answer's memory."""
    order = {m["id"]: i for i, m in enumerate(dev["memories"])}
    for q in dev["questions"]:
        yield "question", q["q"], q["a"], split_of(order[q["a"][0]])
    for kind in ("unrelated", "near_miss"):
        for i, text in enumerate(dev[kind]):
            yield kind, text, [], split_of(i)


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def run(dev: dict[str, Any], limit: int = 5, min_similarity: float | None = None) -> dict[str, Any]:
    embedder = get_embedder()
    started = time.perf_counter()
    embedder.embed(["load the model"], kind="query")  # a cold embedder loads here
    load_s = time.perf_counter() - started
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    rows: list[dict[str, Any]] = []
    embed_ms, search_ms = [], []
    try:
        project, ids = ingest(prefix, dev)
        for kind, text, answers, split in prompts(dev):
            started = time.perf_counter()
            vec = embedder.embed([text], kind="query")[0]
            embed_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            found = queries.search(
                project,
                text,
                limit=limit,
                min_similarity=min_similarity,
                log=False,
                embedded=queries.Embedded(embedder, vec),
            )
            search_ms.append((time.perf_counter() - started) * 1000)
            got = [ids.get(h["id"], "") for h in found.results]
            rows.append({"kind": kind, "q": text, "split": split, "answers": answers, "got": got})
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    report: dict[str, Any] = {
        "embedder": embedder.id,
        "limit": limit,
        "min_similarity": min_similarity,
        "splits": {split: summarise([r for r in rows if r["split"] == split]) for split in SPLITS},
        "all": summarise(rows),
        "load_s": round(load_s, 2),
        "query_embed_ms": {"p50": pct(embed_ms, 0.5), "p95": pct(embed_ms, 0.95)},
        "search_ms": {"p50": pct(search_ms, 0.5), "p95": pct(search_ms, 0.95)},
        "misses": [r for r in rows if miss(r)],
    }
    return report


def miss(row: dict[str, Any]) -> bool:
    if row["kind"] == "question":
        return not row["got"] or row["got"][0] not in row["answers"]
    return row["kind"] == "unrelated" and bool(row["got"])


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    qs = [r for r in rows if r["kind"] == "question"]

    def share(values: list[bool]) -> float:
        return round(statistics.fmean(values), 4) if values else 0.0

    return {
        "questions": len(qs),
        "rank1": share([bool(r["got"]) and r["got"][0] in r["answers"] for r in qs]),
        "top3": share([bool(set(r["got"][:3]) & set(r["answers"])) for r in qs]),
        "empty_on_questions": share([not r["got"] for r in qs]),
        "unrelated": sum(r["kind"] == "unrelated" for r in rows),
        "unrelated_empty": share([not r["got"] for r in rows if r["kind"] == "unrelated"]),
        "near_miss": sum(r["kind"] == "near_miss" for r in rows),
        "near_miss_empty": share([not r["got"] for r in rows if r["kind"] == "near_miss"]),
    }


def print_report(report: dict[str, Any]) -> None:
    floor = "calibrated gate" if report["min_similarity"] is None else f"min_similarity {report['min_similarity']}"
    print(f"codebase dev set, embedder {report['embedder']}, limit {report['limit']}, {floor}")
    print(f"{'split':<9} {'n':>4} {'rank-1':>7} {'top-3':>7} {'unrelated empty':>16} {'near-miss empty':>16}")
    for name, s in [*report["splits"].items(), ("all", report["all"])]:
        print(
            f"{name:<9} {s['questions']:>4} {s['rank1']:>7.3f} {s['top3']:>7.3f} "
            f"{s['unrelated_empty']:>10.3f} (n={s['unrelated']:<2}) {s['near_miss_empty']:>10.3f} (n={s['near_miss']})"
        )
    print(
        f"model load {report['load_s']} s; query embed p50 {report['query_embed_ms']['p50']} ms; "
        f"search p50 {report['search_ms']['p50']} ms (p95 {report['search_ms']['p95']})"
    )
    for r in report["misses"]:
        print(f"  miss [{r['split']}] {r['kind']}: {r['q']!r} → {r['got'][:3]} (want {r['answers']})")


def main(args: argparse.Namespace) -> dict[str, Any]:
    report = run(load(Path(args.data) if args.data else DATA), limit=args.limit, min_similarity=args.min_similarity)
    print_report(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    return report
