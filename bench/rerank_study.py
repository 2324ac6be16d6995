"""Developer tool: choose `[retrieval].rerank_depth` and how the cross-encoder's logit joins the
fusion, on LoCoMo dev offline.

`dump OUT.pkl` ingests LoCoMo dev (60 s spacing, session tags, as `yullu bench locomo`), then for
every question keeps the first stage's raw candidates (cosine, keyword score and coverage, times,
session and place in it, date flag: what `queries.fuse` reads) and the cross-encoder's logit for
the fused order's best DEPTH; for the same question asked in the next conversation's project (the
hard negatives) likewise, with the best NEGATIVE_DEPTH judged.

`eval OUT.pkl` replays through the product's own `queries.fuse`, without the database or the
model: the protocol's recall@5 / @10 (10 results, gate off) and the tool's defaults (limit 5, the
calibrated gate over the top 3: recall@5, and hard negatives answered with nothing) for
- the first stage alone;
- the first N reordered by fused score + λ × logit after the fusion (the reorder issue 34 shipped first);
- the logit inside the fusion, before the session share (`queries.rejudged`, what ships),
on the tuning two thirds of the questions, the held-out third (every third question of each
conversation, as explore_retrieval.py) and all. Choose on `tune`, report both.

Run: python -m bench.rerank_study dump /tmp/locomo_rerank.pkl [LOCOMO_PATH]
     python -m bench.rerank_study eval /tmp/locomo_rerank.pkl
Not part of the product path.
"""

from __future__ import annotations

import copy
import pickle
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEPTH = 40
NEGATIVE_DEPTH = 20
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
Variant = Callable[[dict[int, Any], dict[int, float]], list[int]]


def raw_candidates(project: str, text: str, vec: Any, embedder_id: str, judge: int) -> dict[str, Any]:
    """The first stage's candidates before fusion, and the model's logit for the fused order's best `judge`."""
    from memories.models import Memory
    from memories.search import queries, rerank

    ranked = {c.memory_id: c for c in queries.rank(project, text, vec, embedder_id, [], "hybrid")}
    queries.second_look(project, text, vec, embedder_id, [], ranked)
    queries._place_in_sessions(project, ranked)
    raw = copy.deepcopy(ranked)
    top = [c.memory_id for c in queries.fuse(ranked, "hybrid")[:judge]]
    content = dict(Memory.objects.filter(pk__in=top).values_list("pk", "content"))
    top = [m for m in top if m in content]
    logits = rerank.judge.logits(text, [content[m] for m in top]) if top else []
    return {"cands": raw, "logits": dict(zip(top, logits, strict=True))}


def dump(out: str, path: str | None = None) -> None:
    import json

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
                text = queries.search_text(q["question"])
                rows.append(
                    {
                        "split": "held_out" if i % 3 == 2 else "tune",
                        "category": q["category"],
                        "gold": q["gold"],
                        "ids": conv["id"],
                        "own": raw_candidates(conv["project"], text, vec, embedder.id, DEPTH),
                        "negative": raw_candidates(other["project"], text, vec, embedder.id, NEGATIVE_DEPTH),
                    }
                )
            print(f"{conv['id']}: dumped, {rerank.judge.pairs_scored} pairs so far", flush=True)
    finally:
        Memory.objects.filter(project_id__startswith=prefix + "/").delete()
        MemoryEvent.objects.filter(project_id__startswith=prefix + "/").delete()
    ids = {c["id"]: c["ids"] for c in per_conv}
    Path(out).write_bytes(pickle.dumps({"embedder": embedder.id, "rows": rows, "ids": ids}))
    print(f"wrote {len(rows)} questions to {out}")


def first_stage() -> Variant:
    from memories.search import queries

    return lambda cands, logits: [c.memory_id for c in queries.fuse(copy.deepcopy(cands), "hybrid")]


def reordered_after(depth: int, weight: float) -> Variant:
    from memories.search import queries

    def order(cands: dict[int, Any], logits: dict[int, float]) -> list[int]:
        fused = queries.fuse(copy.deepcopy(cands), "hybrid")
        top = sorted(
            (c for c in fused[:depth] if c.memory_id in logits),
            key=lambda c: -(c.score + weight * logits[c.memory_id]),
        )
        return [c.memory_id for c in top + fused[depth:]]

    return order


def rejudged(depth: int, weight: float) -> Variant:
    from memories.search import queries

    def order(cands: dict[int, Any], logits: dict[int, float]) -> list[int]:
        cands = copy.deepcopy(cands)
        top = [c.memory_id for c in queries.fuse(cands, "hybrid")[:depth] if c.memory_id in logits]
        if not top:
            return [c.memory_id for c in queries.fuse(cands, "hybrid")]
        lowest = min(logits[m] for m in top)
        for c in cands.values():
            c.judged = logits[c.memory_id] if c.memory_id in top else lowest
        saved, queries.W_RERANK = queries.W_RERANK, weight
        try:
            return [c.memory_id for c in queries.fuse(cands, "hybrid")]
        finally:
            queries.W_RERANK = saved

    return order


def gated(order: list[int], part: dict[str, Any], depth: int = 3, limit: int = 5) -> list[int]:
    """What the tool returns: those of the first `depth` the calibrated gate passes (a logit the dump
    lacks counts as the model's lowest)."""
    from memories.search import rerank
    from memories.search.gates import JUDGED

    gate = JUDGED["local:all-MiniLM-L6-v2"]
    out = []
    for m in order[:depth]:
        c = part["cands"][m]
        logit = part["logits"].get(m, rerank.LOGIT_RANGE[0])
        if c.similarity is None or (c.similarity >= gate.min_cosine and gate.probability(logit, c) >= gate.threshold):
            out.append(m)
    return out[:limit]


def recall(ranked: list[str], gold: list[str], k: int) -> float:
    return len(set(gold) & set(ranked[:k])) / len(gold)


def score(rows: list[dict[str, Any]], ids: dict[str, dict[int, str]], variant: Variant) -> str:
    r5, r10, tool, empty, cats = [], [], [], [], {1: [], 3: []}  # type: ignore[var-annotated]
    for r in rows:
        names = ids[r["ids"]]
        order = variant(r["own"]["cands"], r["own"]["logits"])
        ranked = [names.get(m, "") for m in order]
        r5.append(recall(ranked, r["gold"], 5))
        r10.append(recall(ranked, r["gold"], 10))
        if r["category"] in cats:
            cats[r["category"]].append(r10[-1])
        tool.append(recall([names.get(m, "") for m in gated(order, r["own"])], r["gold"], 5))
        negative = variant(r["negative"]["cands"], r["negative"]["logits"])
        empty.append(not gated(negative, r["negative"]))
    f = statistics.fmean
    return (
        f"{f(r5):.3f} / {f(r10):.3f} (multi-hop {f(cats[1]):.3f}, open-domain {f(cats[3]):.3f}); "
        f"tool {f(tool):.3f}, hard negatives empty {f(empty):.1%}"
    )


def evaluate(path: str) -> None:
    from yullu_cli.django_setup import setup_django

    setup_django()
    data = pickle.loads(Path(path).read_bytes())
    variants: list[tuple[str, Variant]] = [("first stage", first_stage())]
    variants += [(f"after, N {d} λ {w}", reordered_after(d, w)) for d, w in ((20, 0.05), (20, 0.1), (40, 0.05))]
    variants += [(f"rejudged, N {d} λ {w}", rejudged(d, w)) for d in (10, 20, 30, 40) for w in (0.05, 0.1, 0.2)]
    for split in ("tune", "held_out", "all"):
        part = [r for r in data["rows"] if split == "all" or r["split"] == split]
        print(f"== {split} ({len(part)} questions): recall@5 / @10; tool defaults recall@5, hard negatives")
        for name, variant in variants:
            print(f"  {name:<22} {score(part, data['ids'], variant)}", flush=True)


# `sweep`: the same questions through the product's own `queries.search` (explore_retrieval's
# ingested projects), one process for every variant, with the model's judgements kept in a file
# between runs, so a variant costs only the pairs no earlier one asked for.
JUDGEMENTS = Path(__file__).resolve().parents[1] / ".rerank-judgements.pkl"  # the repository root


STUDY_KEYS = ("depth", "cut", "cut_weight")


def judged_at_the_cut(windows: str, weight: float, asked: list[str]) -> Callable[..., Any]:
    """A stand-in for `queries.with_feedback` (which runs on the fused order, after the hop): the
    cross-encoder judges only the candidates at `windows` ("3-8 8-12": 0-based places, end excluded)
    of the fused order, which are reordered among themselves by score + `weight` × logit; the rest
    keeps its place. Issue 34 round eight's "partial rerank at the cut" (not kept)."""
    from memories.models import Memory
    from memories.search import queries, rerank

    with_feedback = queries.with_feedback

    def patched(ordered: list[Any], embedder_id: str, qvec: Any) -> list[Any]:
        ordered = list(ordered)
        for start, end in (map(int, w.split("-")) for w in windows.split()):
            window = ordered[start:end]
            texts = dict(Memory.objects.filter(pk__in=[c.memory_id for c in window]).values_list("pk", "content"))
            if len(window) < 2 or any(c.memory_id not in texts for c in window):
                continue
            logits = rerank.judge.logits(queries.search_text(asked[0]), [texts[c.memory_id] for c in window])
            moved = sorted(zip(window, logits, strict=True), key=lambda cl: -(cl[0].score + weight * cl[1]))
            ordered[start : start + len(window)] = [c for c, _ in moved]
        return with_feedback(ordered, embedder_id, qvec)

    return patched


def product_scores(variant: dict[str, Any]) -> dict[str, Any]:
    """Protocol recall (10 results, gate off), the tool's defaults (limit 5, the gate) and the hard
    negatives (the question in the next conversation's project: nothing returned) for one variant:
    `depth` is `[retrieval].rerank_depth`, `cut` / `cut_weight` the windows judged at the cut
    (`judged_at_the_cut`), every other key a `memories.search.queries` setting."""
    from django.conf import settings

    from bench.explore_retrieval import CACHE
    from bench.locomo import metrics
    from memories.embedding.embedders import get_embedder
    from memories.search import queries, rerank

    state = pickle.loads(CACHE.read_bytes())
    embedder = get_embedder()
    saved = {k: getattr(queries, k) for k in variant if k not in STUDY_KEYS}
    question = [""]
    if variant.get("cut"):
        saved["with_feedback"] = queries.with_feedback
        queries.with_feedback = judged_at_the_cut(variant["cut"], variant.get("cut_weight", 0.3), question)
    retrieval = settings.YULLU["retrieval"]
    saved_depth = retrieval.get("rerank_depth")
    asked = [0]
    logits_many = rerank.judge.logits_many

    def counted(pairs: list[tuple[str, str]]) -> list[float]:
        asked[0] += len(pairs)
        return logits_many(pairs)

    rerank.judge.logits_many = counted  # type: ignore[method-assign]
    for k, v in variant.items():
        if k == "depth":
            retrieval["rerank_depth"] = v
        elif k not in STUDY_KEYS:
            setattr(queries, k, v)
    rows: list[dict[str, Any]] = []
    convs = state["locomo"]
    try:
        for n, conv in enumerate(convs):
            other = convs[(n + 1) % len(convs)]
            for i, (q, vec) in enumerate(zip(conv["qs"], conv["vecs"], strict=True)):
                question[0] = q["question"]
                emb = queries.Embedded(embedder, vec)
                found = queries.search(
                    conv["project"], q["question"], limit=10, min_similarity=0.0, log=False, embedded=emb
                )
                tool = queries.search(conv["project"], q["question"], limit=5, log=False, embedded=emb)
                off = queries.search(other["project"], q["question"], limit=5, log=False, embedded=emb)
                m = metrics([conv["ids"].get(h["id"], "") for h in found.results], q["gold"])
                rows.append(
                    {
                        "split": "held_out" if i % 3 == 2 else "tune",
                        "cat": q["category"],
                        "r5": m["recall@5"],
                        "r10": m["recall@10"],
                        "tool": metrics([conv["ids"].get(h["id"], "") for h in tool.results], q["gold"])["recall@5"],
                        "empty": not off.results,
                    }
                )
    finally:
        rerank.judge.logits_many = logits_many  # type: ignore[method-assign]
        retrieval["rerank_depth"] = saved_depth
        for k, v in saved.items():
            setattr(queries, k, v)
    f = statistics.fmean
    out: dict[str, Any] = {"pairs_per_question": round(asked[0] / len(rows), 1)}
    for split in ("tune", "held_out", "all"):
        part = [r for r in rows if split == "all" or r["split"] == split]
        out[split] = {k: round(f(r[k] for r in part), 5) for k in ("r5", "r10", "tool", "empty")}
    out["r10_by_category"] = {c: round(f(r["r10"] for r in rows if r["cat"] == c), 3) for c in (1, 2, 3, 4)}
    return out


def sweep(specs: list[str]) -> None:
    """Each spec is NAME:KEY=VALUE,KEY=VALUE (values JSON), e.g. hop10:depth=20,NEIGHBOUR_HOP=10 or
    cut:cut=\"3-8\",cut_weight=0.3."""
    import json

    from yullu_cli.django_setup import setup_django

    setup_django()
    from memories.search import rerank

    rerank.CACHE_SIZE = 10**7
    if JUDGEMENTS.exists():
        rerank.judge._cache.update(pickle.loads(JUDGEMENTS.read_bytes()))
    for spec in specs:
        name, _, body = spec.partition(":")
        variant = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in body.split(",") if kv)}
        scores = product_scores(variant)
        JUDGEMENTS.write_bytes(pickle.dumps(dict(rerank.judge._cache)))
        print(name, json.dumps(variant), json.dumps(scores), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif sys.argv[1] == "sweep":
        sweep(sys.argv[2:])
    else:
        evaluate(sys.argv[2])
