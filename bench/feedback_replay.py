"""Does feedback make ranking better? A replay on the codebase question set.

Run: yullu bench feedback [--out docs/results/feedback_replay.json]

The 45 memories of bench/data/codebase_dev.json go into a throwaway project. Questions are
grouped by their answer; groups alternate between "rated" and "held out". In a rated group the
first phrasing is asked once and every memory it returns or considered gets a verdict (useful =
it is an answer), as a reviewer on the admin's Retrievals page would; its other phrasings are then
measured. Held-out groups
get no verdicts and show that feedback elsewhere does no harm. Half the near-miss prompts (on
topics the project has no memory for) are asked and every memory they return is marked not
useful; the other half measure whether such unhelpful memories now sink out of the results.

Variants: no feedback; verdicts (memories.search.feedback W_VERDICT); verdicts + review ratings
(reviewers rated the memories that got a useful verdict 8); verdicts + recall counts.
Metrics: MRR and hit@1 over the measured phrasings; for near-miss prompts, results returned
above the relevance floor (fewer is better).
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "codebase_dev.json"


def _groups(questions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by_answer: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for q in questions:
        by_answer.setdefault(tuple(sorted(q["a"])), []).append(q)
    return [g for g in by_answer.values() if len(g) >= 2]


def _rank_metrics(project: str, asked: list[dict[str, Any]], ids: dict[str, int]) -> dict[str, float]:
    from memories.search import queries

    rr, hit1 = 0.0, 0
    for q in asked:
        found = queries.search(project, q["q"], limit=10, min_similarity=0.0, log=False)
        gold = {ids[a] for a in q["a"]}
        ranks = [h["rank"] for h in found.results if h["id"] in gold]
        rr += 1 / min(ranks) if ranks else 0.0
        hit1 += bool(ranks and min(ranks) == 1)
    n = max(1, len(asked))
    return {"mrr": round(rr / n, 4), "hit@1": round(hit1 / n, 4), "n": len(asked)}


def _sunk(project: str, rated: list[list[dict[str, Any]]], unhelpful: dict[int, set[int]]) -> int:
    """Top-3 slots of each rated group's other phrasings held by memories judged unhelpful for
    that group's rated phrasing (fewer is better)."""
    from memories.search import queries

    total = 0
    for n, g in enumerate(rated):
        for q in g[1:]:
            found = queries.search(project, q["q"], limit=3, min_similarity=0.0, log=False)
            total += sum(1 for h in found.results if h["id"] in unhelpful[n])
    return total


def _returned(project: str, prompts: list[str]) -> int:
    from memories.search import queries

    return sum(len(queries.search(project, p, limit=5, log=False).results) for p in prompts)


def _give_verdicts(project: str, asks: list[tuple[str, set[int]]], rate: bool) -> int:
    """Ask each question once (logged, so it has a recall_id) and judge every returned memory."""
    from memories import lifecycle
    from memories.search import queries
    from memories.write import edit

    given = 0
    for text, gold in asks:
        found = queries.search(project, text, limit=5)
        for hit in found.results + found.considered:  # the admin's Retrievals page shows both
            useful = hit["id"] in gold
            lifecycle.rate_recall(found.recall_id, hit["id"], useful, source="bench")
            if rate and useful:
                edit.rate_memory(hit["id"], 8, source="bench")
            given += 1
    return given


def _unhelpful(project: str, rated: list[list[dict[str, Any]]], ids: dict[str, int]) -> dict[int, set[int]]:
    """Per rated group, the memories its rated phrasing returns or considers that are not its
    answer (they get `useful: false`); found without logging so every variant measures the same."""
    from memories.search import queries

    out: dict[int, set[int]] = {}
    for n, g in enumerate(rated):
        found = queries.search(project, g[0]["q"], limit=5, log=False)
        gold = {ids[a] for a in g[0]["a"]}
        out[n] = {h["id"] for h in found.results + found.considered if h["id"] not in gold}
    return out


def run_variant(name: str, weights: dict[str, float], data: dict[str, Any]) -> dict[str, Any]:

    from memories.models import Memory, MemoryEvent, RecallFeedback
    from memories.scope import Scope
    from memories.search import feedback
    from memories.write import create, validation

    project = f"bench-feedback/{uuid.uuid4().hex[:8]}"
    items = [validation.NewMemory(m["content"], m["category"]) for m in data["memories"]]
    created = [s.memory for s in create.store_memories(Scope(project, None), items, source="bench", dedupe=False)]
    ids = {m["id"]: c.pk for m, c in zip(data["memories"], created, strict=True)}
    saved = {k: getattr(feedback, k) for k in weights}
    try:
        for key, value in weights.items():
            setattr(feedback, key, value)
        groups = _groups(data["questions"])
        rated, held = groups[0::2], groups[1::2]
        near = data["near_miss"]
        near_train, near_test = near[0::2], near[1::2]
        given, unhelpful = 0, _unhelpful(project, rated, ids)
        if name != "no feedback":
            asks = [(g[0]["q"], {ids[a] for a in g[0]["a"]}) for g in rated]
            asks += [(p, set()) for p in near_train]
            given = _give_verdicts(project, asks, rate="ratings" in name)
            if "recall counts" in name:  # the set asked a few times more, as a busy project would
                _give_verdicts(project, asks, rate=False)
        return {
            "variant": name,
            "verdicts": given,
            "rated groups, other phrasings": _rank_metrics(project, [q for g in rated for q in g[1:]], ids),
            "rated groups, the rated phrasing asked again": _rank_metrics(project, [g[0] for g in rated], ids),
            "held-out groups, all phrasings": _rank_metrics(project, [q for g in held for q in g], ids),
            "top-3 slots of other phrasings held by memories judged unhelpful": _sunk(project, rated, unhelpful),
            "near-miss prompts (held out): results returned": _returned(project, near_test),
        }
    finally:
        for key, value in saved.items():
            setattr(feedback, key, value)
        RecallFeedback.objects.filter(project_id=project).delete()
        MemoryEvent.objects.filter(project_id=project).delete()
        Memory.objects.filter(project_id=project).delete()


def main(args: argparse.Namespace) -> list[dict[str, Any]]:
    from memories.search import feedback

    data = json.loads(DATA.read_text())
    w, tau = feedback.W_VERDICT, feedback.SIMILAR_QUERY
    # Review ratings and recall counts were measured here too and gained nothing (docs/benchmarks.md,
    # "Feedback in ranking"); they are no longer ranking signals.
    variants = [
        ("no feedback", {"W_VERDICT": 0.0}),
        (f"verdicts w={w} tau={tau}", {"W_VERDICT": w, "SIMILAR_QUERY": tau}),
    ]
    for pair in args.grid.split(",") if args.grid else []:
        gw, gt = (float(x) for x in pair.split(":"))
        variants.append((f"verdicts w={gw} tau={gt}", {"W_VERDICT": gw, "SIMILAR_QUERY": gt}))
    rows = [run_variant(name, weights, data) for name, weights in variants]
    for row in rows:
        print(json.dumps(row))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    return rows
