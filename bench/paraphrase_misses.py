"""Where a codebase set's questions and paraphrases are lost: for each, the answer's place by cosine among the
first stage's candidates, its place in the fused order, and whether the gate passed it first (issue 34, round
twenty-one). Tuning sets only: the blind ones are refused by name.

    DJANGO_SETTINGS_MODULE=yullu_site.settings python -m bench.paraphrase_misses other_a other_i other_ak …

Categories: ok (answered first); gate-empty (the answer in the gate's three slots, nothing passed);
gate-other-first (another memory passed first); fusion-dropped (the answer first or in the first three by cosine,
out of the three slots once the keyword half is added); model (not in the first three by cosine either)."""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import django

from bench.blind import BLIND

SLOTS = 3  # the gate judges the fused order's first three (gates.Judged.depth)


def category(dense_place: int, fused_place: int, passed: list[str], answers: list[str]) -> str:
    if passed and passed[0] in answers:
        return "ok"
    if fused_place < SLOTS:
        return "gate-other-first" if passed else "gate-empty"
    if dense_place < SLOTS:
        return "fusion-dropped"
    return "model"


def tally(name: str, counts: collections.Counter[tuple[str, str]]) -> None:
    from bench import codebase
    from memories.search import queries

    dev = codebase.load_set(f"bench/data/codebase_{name}.json")
    with codebase.throwaway("misses", dev) as (project, ids):
        for kind, prompt, answers, _split in codebase.prompts(dev):
            if kind not in ("question", "paraphrase"):
                continue
            found = queries._ranked(project, prompt, 5, None, None, "hybrid", None)
            if found is None:
                continue
            fused = [ids[c.memory_id] for c in found.ordered]
            dense = [ids[c.memory_id] for c in sorted(found.ordered, key=lambda c: -(c.similarity or 0.0))]
            passed = [ids[c.memory_id] for c in found.ordered if found.relevant(c)]
            place = {m: i for i, m in enumerate(dense)}
            dense_place = min((place[a] for a in answers if a in place), default=len(dense))
            fused_place = min((fused.index(a) for a in answers if a in fused), default=len(fused))
            counts[(kind, category(dense_place, fused_place, passed, answers))] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+", help="set names as in bench/data/codebase_NAME.json (other_a, walk17 …)")
    args = parser.parse_args()
    if blind := BLIND.intersection(args.sets):
        raise SystemExit(f"blind sets are not read here: {sorted(blind)}")
    missing = [s for s in args.sets if not Path(f"bench/data/codebase_{s}.json").exists()]
    if missing:
        raise SystemExit(f"no such set: {missing}")
    django.setup()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for name in args.sets:
        tally(name, counts)
    for (kind, cat), n in sorted(counts.items()):
        print(f"{kind:11} {cat:17} {n}")


if __name__ == "__main__":
    main()
