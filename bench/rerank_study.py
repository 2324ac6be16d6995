"""Developer tool: choose `[retrieval].rerank_depth` and the gate's depth on LoCoMo dev offline.

`dump OUT.json` ingests LoCoMo dev (60 s spacing, session tags, as `yullu bench locomo`), then for
every question keeps the first stage's best DEPTH candidates (fused order, no gate) with their fused
score, cosine, keyword coverage and the cross-encoder's logit, and for the same question asked in
the next conversation's project (the hard negatives) the first stage's best 5 likewise.

`eval OUT.json` replays, without the database or the model: the protocol's recall@5 / @10 (10
results, gate off) when the first N candidates are reordered by score + λ × logit, and the tool's
defaults (limit 5, the calibrated gate) for the gate's depth, on the tuning two thirds of the
questions and the held-out third (every third question of each conversation, as
explore_retrieval.py). Choose on `tune`, report both.

Run: python -m bench.rerank_study dump /tmp/locomo_rerank.json [LOCOMO_PATH]
     python -m bench.rerank_study eval /tmp/locomo_rerank.json
Not part of the product path.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

DEPTH = 40
NEGATIVE_DEPTH = 5
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"


def candidates(
    embedder: Any, project: str, text: str, vec: Any, depth: int, ids: dict[int, str]
) -> list[dict[str, Any]]:
    """The first stage's best `depth` candidates of a question, each with the cross-encoder's logits."""
    from memories.models import Memory
    from memories.search import queries, rerank

    found = queries._ranked(project, text, depth, None, 0.0, "hybrid", queries.Embedded(embedder, vec))
    cands = found.ordered[:depth] if found else []
    content = dict(Memory.objects.filter(pk__in=[c.memory_id for c in cands]).values_list("pk", "content"))
    cands = [c for c in cands if c.memory_id in content]
    texts = [content[c.memory_id] for c in cands]
    logits = rerank.judge.logits(text, texts) if cands else []
    best = rerank.judge.best_logits(text, texts[:5]) if cands else []
    return [
        {
            "id": ids.get(c.memory_id, ""),
            "score": c.score,
            "cosine": c.similarity,
            "coverage": c.coverage,
            "logit": logit,
            "best": best[n] if n < len(best) else logit,
        }
        for n, (c, logit) in enumerate(zip(cands, logits, strict=True))
    ]


def dump(out: str, path: str | None = None) -> None:
    from yullu_cli.django_setup import setup_django

    setup_django()
    from bench.locomo import ingest, questions
    from memories.embedding.embedders import get_embedder
    from memories.models import Memory, MemoryEvent
    from memories.search import queries, rerank

    embedder = get_embedder()
    convs = json.loads(Path(path or LOCOMO).read_text())
    prefix = f"rerank-study-{uuid.uuid4().hex[:8]}"
    per_conv: list[dict[str, Any]] = []

    try:
        for conv in convs:
            project, ids, _, n = ingest(prefix, conv)
            qs = questions(conv, set(ids.values()))
            vecs = embedder.embed([queries.search_text(q["question"]) for q in qs], kind="query")
            per_conv.append({"project": project, "ids": ids, "qs": qs, "vecs": vecs, "id": conv["sample_id"]})
            print(f"{conv['sample_id']}: {n} turns, {len(qs)} questions", flush=True)
        rows: list[dict[str, Any]] = []
        for k, conv in enumerate(per_conv):
            other = per_conv[(k + 1) % len(per_conv)]
            for i, (q, vec) in enumerate(zip(conv["qs"], conv["vecs"], strict=True)):
                if i % 50 == 0:
                    print(f"{conv['id']}: question {i}, {rerank.judge.pairs_scored} pairs so far", flush=True)
                rows.append(
                    {
                        "conv": conv["id"],
                        "split": "held_out" if i % 3 == 2 else "tune",
                        "category": q["category"],
                        "gold": q["gold"],
                        "cands": candidates(embedder, conv["project"], q["question"], vec, DEPTH, conv["ids"]),
                        "negative": candidates(
                            embedder, other["project"], q["question"], vec, NEGATIVE_DEPTH, other["ids"]
                        ),
                    }
                )
            print(f"{conv['id']}: dumped, {rerank.judge.pairs_scored} pairs so far", flush=True)
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    Path(out).write_text(json.dumps({"embedder": embedder.id, "rows": rows}))
    print(f"wrote {len(rows)} questions to {out}")


def reorder(cands: list[dict[str, Any]], depth: int, weight: float) -> list[dict[str, Any]]:
    top = sorted(cands[:depth], key=lambda c: -(c["score"] + weight * c["logit"]))
    return top + cands[depth:]


def passes(c: dict[str, Any], gate: Any) -> bool:
    z = gate.w_logit * c["best"] + gate.w_cosine * (c["cosine"] or 0.0) + gate.w_coverage * c["coverage"] + gate.bias
    return (c["cosine"] or 0.0) >= gate.min_cosine and 1.0 / (1.0 + math.exp(-z)) >= gate.threshold


def gated(cands: list[dict[str, Any]], gate: Any, depth: int, settled_beyond: int, limit: int = 5) -> list[str]:
    """The ids the tool would return: the first `depth` candidates that pass the gate, and (the
    variant) those ranked up to `settled_beyond` that pass on cosine and coverage alone."""
    from memories.search import rerank

    low = rerank.LOGIT_RANGE[0]
    out = []
    for n, c in enumerate(cands[: max(depth, settled_beyond)]):
        ok = passes(c, gate) if n < depth else passes({**c, "best": low}, gate)
        if ok:
            out.append(c["id"])
    return out[:limit]


def recall(ranked: list[str], gold: list[str], k: int) -> float:
    return len(set(gold) & set(ranked[:k])) / len(gold)


def protocol(part: list[dict[str, Any]], depth: int, weight: float) -> str:
    ranked = [[c["id"] for c in reorder(r["cands"], depth, weight)] for r in part]
    r5 = statistics.fmean(recall(x, r["gold"], 5) for x, r in zip(ranked, part, strict=True))
    r10 = [recall(x, r["gold"], 10) for x, r in zip(ranked, part, strict=True)]
    cats = [statistics.fmean(v for v, r in zip(r10, part, strict=True) if r["category"] == cat) for cat in (1, 3)]
    return f"{r5:.3f} / {statistics.fmean(r10):.3f}  ({cats[0]:.3f}, {cats[1]:.3f})"


def tool(part: list[dict[str, Any]], gate: Any, rerank: tuple[int, float], depth: int, beyond: int) -> str:
    on = [recall(gated(reorder(r["cands"], *rerank), gate, depth, beyond), r["gold"], 5) for r in part]
    # The negatives keep the first stage's best 5 only: the gate without the reorder.
    off = [not gated(r["negative"], gate, depth, beyond) for r in part]
    return f"{statistics.fmean(on):.3f}, {statistics.fmean(off):.1%}"


def evaluate(path: str) -> None:
    from memories.search.gates import JUDGED

    gate = JUDGED["local:all-MiniLM-L6-v2"]
    rows = json.loads(Path(path).read_text())["rows"]
    for split in ("tune", "held_out"):
        part = [r for r in rows if r["split"] == split]
        print(f"== {split} ({len(part)} questions): protocol recall@5 / @10 (multi-hop, open-domain @10)")
        for depth, weight in [(0, 0.0)] + [(d, w) for d in (10, 20, 30, 40) for w in (0.02, 0.05, 0.1, 0.2)]:
            print(f"  N {depth:>2} λ {weight:<4}: {protocol(part, depth, weight)}")
        print("   tool defaults (limit 5, gate): recall@5, hard negatives empty")
        for rerank in ((0, 0.0), (20, 0.05), (30, 0.05), (40, 0.05)):
            for depth, beyond in ((3, 0), (3, 5), (5, 0)):
                found = tool(part, gate, rerank, depth, beyond)
                print(f"  rerank {rerank}, gate depth {depth}, settled to {beyond:>2}: {found}")


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        evaluate(sys.argv[2])
