"""LoCoMo retrieval benchmark (protocol: ../shared/bench/README.md).

Run: `yullu bench locomo --data ../shared/bench/locomo_dev.json --out docs/results/locomo_dev.json`

Every turn is ingested as one memory through the real write path (services, real
embedder) into a throwaway project per conversation; questions go through the
same retrieval as `retrieve_memories` (without the recall log). The throwaway
projects are deleted at the end, so real data is never touched.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memories.embedding.embedders import get_embedder
from memories.models import SESSION_TAG, Memory, MemoryEvent
from memories.scope import Scope
from memories.search import gates, queries
from memories.write import create, validation

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
GOLD_RE = re.compile(r"D:?(\d+):(\d+)")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
# Seconds between consecutive turns of a session (protocol: ../shared/bench/README.md). A 1 s pace
# made a wall-clock neighbour bonus look useful; 60 s is a realistic conversation pace.
TURN_SPACING_S = 60


def session_turns(conv: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    """(dia_id, content, created_at) for every turn."""
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}" in c:
        when = datetime.strptime(c[f"session_{n}_date_time"], DATE_FORMAT).replace(tzinfo=UTC)
        for i, turn in enumerate(c[f"session_{n}"]):
            out.append(
                (turn["dia_id"], f"{turn['speaker']}: {turn['text']}", when + timedelta(seconds=i * TURN_SPACING_S))
            )
        n += 1
    return out


def questions(conv: dict[str, Any], real_ids: set[str]) -> list[dict[str, Any]]:
    out = []
    for qa in conv["qa"]:
        if qa.get("category") == 5:
            continue
        gold = []
        for ev in qa.get("evidence", []):
            for a, b in GOLD_RE.findall(str(ev)):
                gid = f"D{int(a)}:{int(b)}"
                if gid in real_ids and gid not in gold:
                    gold.append(gid)
        if gold:
            out.append({"question": qa["question"], "gold": gold, "category": qa["category"]})
    return out


def metrics(ranked: list[str], gold: list[str]) -> dict[str, float]:
    g = set(gold)
    rr = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in g), 0.0)
    return {
        "recall@1": len(g & set(ranked[:1])) / len(g),
        "recall@5": len(g & set(ranked[:5])) / len(g),
        "recall@10": len(g & set(ranked[:10])) / len(g),
        "hit@10": 1.0 if g & set(ranked[:10]) else 0.0,
        "mrr": rr,
    }


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    return {"n": len(rows), **{k: round(statistics.fmean(r[k] for r in rows), 4) for k in rows[0]}}


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def session_tag(sample_id: str, dia: str) -> str:
    """The tag a client recording this conversation would give each turn: one per LoCoMo session."""
    return f"{SESSION_TAG}{sample_id}-{dia.split(':')[0]}"


def ingest(prefix: str, conv: dict[str, Any], sessions: bool = True) -> tuple[str, dict[int, str], float, int]:
    project = f"{prefix}/{conv['sample_id']}"
    turns = session_turns(conv)
    started = time.perf_counter()
    ids: dict[int, str] = {}
    batch = 128
    for start in range(0, len(turns), batch):
        chunk = turns[start : start + batch]
        items = [
            validation.NewMemory(
                content, None, [dia, *([session_tag(conv["sample_id"], dia)] if sessions else [])], when
            )
            for dia, content, when in chunk
        ]
        created = [s.memory for s in create.store_memories(Scope(project, None), items, source="bench", dedupe=False)]
        for m, (dia, _, _) in zip(created, chunk, strict=True):
            ids[m.id] = dia
    return project, ids, time.perf_counter() - started, len(turns)


def run_mode(
    mode: str,
    project: str,
    qs: list[dict[str, Any]],
    ids: dict[int, str],
    qvecs: list[Any],
    limit: int = 10,
    floor: float | None = 0.0,
) -> tuple[list[dict[str, Any]], list[float]]:
    rows, latencies = [], []
    embedder = get_embedder()
    for q, qvec in zip(qs, qvecs, strict=False):
        started = time.perf_counter()
        found = queries.search(
            project,
            q["question"],
            limit=limit,
            min_similarity=floor,
            mode=mode,
            log=False,
            embedded=queries.Embedded(embedder, qvec),
        )
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [ids.get(h["id"], "") for h in found.results]
        rows.append(
            {
                "category": q["category"],
                "m": metrics(ranked, q["gold"]),
                "n_results": len(found.results),
                "words": sum(len(h["content"].split()) for h in found.results[:5]),
            }
        )
    return rows, latencies


def summarise(mode: str, rows: list[dict[str, Any]], latencies: list[float]) -> dict[str, Any]:
    per_cat = {name: average([r["m"] for r in rows if r["category"] == cat]) for cat, name in CATEGORIES.items()}
    return {
        "mode": mode,
        "overall": average([r["m"] for r in rows]),
        "per_category": per_cat,
        "search_ms": {"p50": pct(latencies, 0.5), "p95": pct(latencies, 0.95)},
        "context_words_top5": round(statistics.fmean(r["words"] for r in rows), 1) if rows else 0,
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text())
    if args.limit_conversations:
        data = data[: args.limit_conversations]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    embedder = get_embedder()
    print(f"LoCoMo: {len(data)} conversations, embedder {embedder.id}, modes {modes}", flush=True)
    per_conv = []
    ingest_s, ingest_n = 0.0, 0
    try:
        for conv in data:
            project, ids, secs, n = ingest(prefix, conv, sessions=not args.without_sessions)
            ingest_s += secs
            ingest_n += n
            qs = questions(conv, set(ids.values()))
            started = time.perf_counter()
            qvecs = embedder.embed([queries.search_text(q["question"]) for q in qs], kind="query") if qs else []
            embed_ms = (time.perf_counter() - started) * 1000 / max(1, len(qs))
            per_conv.append((conv, project, ids, qs, qvecs, embed_ms))
            print(f"  {conv['sample_id']}: {n} turns in {secs:.1f}s, {len(qs)} questions", flush=True)
        results = evaluate(per_conv, modes)
        defaults = tool_default(per_conv)
        single = one_at_a_time_rate(prefix, data[0]) if data else 0.0
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    report = {
        **results["hybrid" if "hybrid" in results else modes[0]],
        "modes": results,
        "ingest_per_s": round(ingest_n / ingest_s, 1) if ingest_s else 0,
        "ingest_one_at_a_time_per_s": single,
        "embedder": embedder.id,
        "turn_spacing_s": TURN_SPACING_S,
        "session_tags": not args.without_sessions,
        "questions": sum(len(p[3]) for p in per_conv),
        "embed_ms": {"mean_per_query_batched": round(statistics.fmean(p[5] for p in per_conv), 2)},
    }
    report["embed_ms"].update(single_query_embed_ms(embedder))
    report["tool_default"] = defaults
    print_table(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    return report


def evaluate(per_conv: list[Any], modes: list[str]) -> dict[str, Any]:
    results = {}
    for mode in modes:
        rows, lat = [], []
        for _, project, ids, qs, qvecs, _ in per_conv:
            r, l_ = run_mode(mode, project, qs, ids, qvecs)
            rows += r
            lat += l_
        results[mode] = summarise(mode, rows, lat)
    return results


def tool_default(per_conv: list[Any]) -> dict[str, Any]:
    """As the tool answers: limit 5, default floor; off-topic = questions asked in the next conversation."""
    on_rows, off_empty, off_n = [], 0, 0
    for i, (_, project, ids, qs, qvecs, _) in enumerate(per_conv):
        rows, _ = run_mode("hybrid", project, qs, ids, qvecs, limit=5, floor=default_floor())
        on_rows += rows
        if len(per_conv) > 1:
            _, next_project, next_ids, _, _, _ = per_conv[(i + 1) % len(per_conv)]
            off, _ = run_mode("hybrid", next_project, qs, next_ids, qvecs, limit=5, floor=default_floor())
            off_empty += sum(1 for r in off if r["n_results"] == 0)
            off_n += len(off)
    return {
        "min_similarity": default_floor(),
        "recall@5": round(statistics.fmean(r["m"]["recall@5"] for r in on_rows), 4) if on_rows else 0,
        "on_topic_empty_rate": round(sum(1 for r in on_rows if r["n_results"] == 0) / max(1, len(on_rows)), 4),
        "offtopic_empty_rate": round(off_empty / off_n, 4) if off_n else None,
        "context_words_top5": round(statistics.fmean(r["words"] for r in on_rows), 1) if on_rows else 0,
    }


def default_floor() -> float | None:
    """The configured cosine floor, or None: the embedder's calibrated gate (the tool's default)."""
    return gates.configured_floor()


def one_at_a_time_rate(prefix: str, conv: dict[str, Any], n: int = 100) -> float:
    """Memories/s when storing one per call (as an assistant would), to compare with batched ingest."""
    turns = session_turns(conv)[:n]
    scope = Scope(f"{prefix}/single", None)
    started = time.perf_counter()
    for dia, content, when in turns:
        create.store_memory(scope, content, None, [dia], created_at=when, source="bench")
    return round(len(turns) / (time.perf_counter() - started), 1)


def single_query_embed_ms(embedder: Any, n: int = 50) -> dict[str, float]:
    times = []
    for i in range(n):
        started = time.perf_counter()
        embedder.embed([f"when did the team decide to move the deploy {i}?"], kind="query")
        times.append((time.perf_counter() - started) * 1000)
    return {"p50": pct(times, 0.5), "p95": pct(times, 0.95)}


def print_table(report: dict[str, Any]) -> None:
    print(
        f"\n{'mode':<9} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'hit@10':>7} {'MRR':>6} {'p50ms':>6} {'p95ms':>6}"
    )
    for mode, r in report["modes"].items():
        o = r["overall"]
        print(
            f"{mode:<9} {o['n']:>4} {o['recall@1']:>6.3f} {o['recall@5']:>6.3f} {o['recall@10']:>6.3f} "
            f"{o['hit@10']:>7.3f} {o['mrr']:>6.3f} {r['search_ms']['p50']:>6} {r['search_ms']['p95']:>6}"
        )
    hybrid = report["modes"].get("hybrid")
    if hybrid:
        print("\nhybrid per category:")
        for name, c in hybrid["per_category"].items():
            if c.get("n"):
                print(f"  {name:<12} n={c['n']:>3} R@5={c['recall@5']:.3f} R@10={c['recall@10']:.3f}")
    td = report["tool_default"]
    print(
        f"\ntool default (limit 5, floor {td['min_similarity'] or 'calibrated gate'}): recall@5={td['recall@5']} "
        f"off-topic empty={td['offtopic_empty_rate']} on-topic empty={td['on_topic_empty_rate']}"
    )
    print(
        f"ingest: {report['ingest_per_s']}/s batched vs {report['ingest_one_at_a_time_per_s']}/s one at a time; "
        f"query embed p50 {report['embed_ms']['p50']} ms"
    )
