"""Where a codebase set's questions and paraphrases are lost: for each, the answer's place by cosine among the
first stage's candidates, its place in the fused order, and whether the gate passed it first (issue 34, round
twenty-one); with `--places`, also its place by BM25, by the cross-encoder (the gate's logit, over the fused best
10) and among what the gate passed, and which stage put another memory first (round twenty-four). Tuning sets
only: the blind ones are refused by name.

    DJANGO_SETTINGS_MODULE=yullu_site.settings python -m bench.paraphrase_misses other_a other_i other_ak … [--places]

Categories: ok (answered first); order (the answer passed, another passed memory was returned first);
gate-empty (the answer in the gate's three slots, nothing passed); gate-other-first (the answer in the slots,
refused, another memory passed); fusion-dropped (the answer first or in the first three by cosine, out of the
three slots once the keyword half is added); model (not in the first three by cosine either). Round
twenty-one's table counted `order` within gate-other-first."""

from __future__ import annotations

import argparse
import collections
import statistics
from pathlib import Path

import django

from bench.blind import BLIND

SLOTS = 3  # the gate judges the fused order's first three (gates.Judged.depth)
JUDGED = 10  # --places: the fused candidates the cross-encoder reads for the study (pairs the product never runs)
NOWHERE = 99  # a place for an answer a list does not hold


def category(dense_place: int, fused_place: int, passed: list[str], answers: list[str]) -> str:
    if passed and passed[0] in answers:
        return "ok"
    if any(p in answers for p in passed):
        return "order"
    if fused_place < SLOTS:
        return "gate-other-first" if passed else "gate-empty"
    if dense_place < SLOTS:
        return "fusion-dropped"
    return "model"


def place(order: list[str], answers: list[str]) -> int:
    return min((order.index(a) for a in answers if a in order), default=NOWHERE)


def tally(
    name: str, counts: collections.Counter[tuple[str, str]], places: dict[tuple[str, str], list[dict[str, int]]] | None
) -> None:
    from bench import codebase
    from memories.search import gates, queries

    dev = codebase.load_set(f"bench/data/codebase_{name}.json")
    with codebase.throwaway("misses", dev) as (project, ids):
        for kind, prompt, answers, _split in codebase.prompts(dev):
            if kind not in ("question", "paraphrase"):
                continue
            found = queries._ranked(project, prompt, 5, None, None, "hybrid", None)
            if found is None:
                continue
            final = found.ordered  # the fused order, what the gate passed reordered among its places (closest_first)
            fused = sorted(final, key=lambda c: (-c.score, -(c.similarity or 0.0), -c.memory_id))
            dense = sorted(final, key=lambda c: -(c.similarity or 0.0))
            passed = [ids[c.memory_id] for c in final if found.relevant(c)]
            dense_place = place([ids[c.memory_id] for c in dense], answers)
            fused_place = place([ids[c.memory_id] for c in fused], answers)
            cat = category(dense_place, fused_place, passed, answers)
            counts[(kind, cat)] += 1
            if places is None or cat == "ok":
                continue
            keyword = sorted((c for c in final if c.keyword_rank), key=lambda c: c.keyword_rank or 0)
            top = fused[:JUDGED]
            logit = gates.logits_of(queries.search_text(prompt), top)
            judged = sorted(top, key=lambda c: -logit.get(c.memory_id, -99.0))
            places[(kind, cat)].append(
                {
                    "cosine": dense_place,
                    "bm25": place([ids[c.memory_id] for c in keyword], answers),
                    "fused": fused_place,
                    "cross-encoder": place([ids[c.memory_id] for c in judged], answers),
                    "passed": place(passed, answers),
                }
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+", help="set names as in bench/data/codebase_NAME.json (other_a, walk17 …)")
    parser.add_argument("--places", action="store_true", help="each miss's place by every stage (median, share first)")
    args = parser.parse_args()
    if blind := BLIND.intersection(args.sets):
        raise SystemExit(f"blind sets are not read here: {sorted(blind)}")
    missing = [s for s in args.sets if not Path(f"bench/data/codebase_{s}.json").exists()]
    if missing:
        raise SystemExit(f"no such set: {missing}")
    django.setup()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    places: dict[tuple[str, str], list[dict[str, int]]] | None = collections.defaultdict(list) if args.places else None
    for name in args.sets:
        tally(name, counts, places)
    for (kind, cat), n in sorted(counts.items()):
        print(f"{kind:11} {cat:17} {n}")
    if places:
        print("\nplaces of the answer (0 = first; median, then the share where that stage put it first, in its top 3):")
        for (kind, cat), rows in sorted(places.items()):
            cells = []
            for stage in ("cosine", "bm25", "fused", "cross-encoder"):
                got = [r[stage] for r in rows]
                first, top3 = sum(g == 0 for g in got), sum(g < SLOTS for g in got)
                cells.append(f"{stage} {statistics.median(got):g} ({first}/{top3})")
            print(f"{kind:11} {cat:17} n {len(rows):3}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
