"""Developer tool (issue 34, round twenty-five): the gate's threshold, and a fourth slot for the cosine winner with a
threshold of its own, chosen leave-one-codebase-out over the tuning dumps (bench/calibrate.py dump).

For each configuration (`t`: the threshold of the fused best 3; `t4`: the threshold of the cosine's best candidate
when it is outside them and the prompt is read whole, None for no fourth slot; `t2`: when nothing passes, the
likeliest of the three passes at this lower threshold, None for no second chance) the shipped weights are replayed over
each tuning codebase's dump (calibrate.counts' counting, the slot's candidate after the best 3). Leave one codebase
out: on the others, the configuration answering most paraphrases first among those that let no kind of prompt with
no answer through more often and answer no fewer questions or long prompts (allowed); scored on the one left out.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings): python -m bench.gate_grid /tmp/gate25/dumps/*.json
It refuses a dump of a blind set (bench/blind.py). Not part of the product path.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bench import calibrate
from bench.blind import BLIND

THRESHOLDS = (0.64, 0.66, 0.67, 0.68, 0.69, 0.7, 0.72)
SLOT_THRESHOLDS: tuple[float | None, ...] = (None, 0.7, 0.8, 0.9, 0.95)
# When nothing passes, the likeliest of the three passes at this lower threshold (the shipped threshold elsewhere).
SECOND_CHANCE = (0.5, 0.55, 0.6, 0.62, 0.64, 0.66, 0.68)
LEAKS = ("unrelated leak", "near_miss leak", "long_unrelated leak")
KEYS = ("paraphrase r1", "paraphrase top3", "paraphrase empty", "question r1", "question top3", "long found") + LEAKS


Config = tuple[float, float | None, float | None]  # t, t4, t2


def counts(
    rows: list[dict[str, Any]], w: np.ndarray, floor: float, t: float, t4: float | None, t2: float | None = None
) -> dict[str, int]:
    out: dict[str, int] = {}

    def p(r: dict[str, Any], c: dict[str, Any]) -> float:
        return float(1.0 / (1.0 + np.exp(-np.dot(calibrate.features(r, c, "best", floor), w))))

    for r in rows:
        floor_cos = calibrate.min_cosine(r)
        slots = [c for c in r["cands"][:3] if (c["cosine"] or 0.0) >= floor_cos]
        passing = [c["id"] for c in slots if p(r, c) >= t]
        if t2 is not None and not passing and slots:  # a second chance for the likeliest when nothing passed
            likeliest = max(slots, key=lambda c: p(r, c))
            passing = [likeliest["id"]] if p(r, likeliest) >= t2 else []
        if t4 is not None and floor_cos >= calibrate.MIN_COSINE:  # read whole: a prompt read by clauses keeps 3
            passing += [
                c["id"]
                for c in r["cands"][3:]
                if c["dense_rank"] == 1 and (c["cosine"] or 0.0) >= floor_cos and p(r, c) >= t4
            ]
        calibrate.tally(out, r, passing)
    return out


def total(parts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + v
    return out


def allowed(c: dict[str, int], base: dict[str, int]) -> bool:
    """No kind of prompt with no answer let through more often, no fewer questions first or in the top 3, no
    fewer long prompts found."""
    guards = ("question r1", "question top3", "long found")
    return all(c.get(k, 0) <= base.get(k, 0) for k in LEAKS) and all(c.get(k, 0) >= base.get(k, 0) for k in guards)


def main(paths: list[str]) -> None:
    import django

    django.setup()
    sets = calibrate.tuning_sets(tuple(paths))
    blind = [name for name in sets if name in BLIND]
    if blind:
        raise SystemExit(f"refused: blind sets {blind}")
    shipped, threshold, floor = calibrate.shipped_weights()
    configs: list[Config] = [(t, t4, None) for t in THRESHOLDS for t4 in SLOT_THRESHOLDS]
    configs += [(threshold, None, t2) for t2 in SECOND_CHANCE]
    grid = {cfg: {name: counts(rows, shipped, floor, *cfg) for name, rows in sets.items()} for cfg in configs}
    base_cfg: Config = (threshold, None, None)
    print("codebases:", {k: len(v) for k, v in sets.items()})
    print("t t4 t2 | " + " | ".join(KEYS))
    for cfg in configs:
        s = total(list(grid[cfg].values()))
        print(f"{cfg[0]} {cfg[1]} {cfg[2]} | " + " | ".join(str(s.get(k, 0)) for k in KEYS))
    held_total, base_total, gains, drops = [], [], 0, 0
    for held in sets:
        train = {cfg: total([c for name, c in grid[cfg].items() if name != held]) for cfg in configs}
        ok = [cfg for cfg in configs if allowed(train[cfg], train[base_cfg])]
        best = max(ok, key=lambda cfg: (train[cfg]["paraphrase r1"], train[cfg]["paraphrase top3"], cfg == base_cfg))
        h, b = grid[best][held], grid[base_cfg][held]
        held_total.append(h)
        base_total.append(b)
        delta = {k: h.get(k, 0) - b.get(k, 0) for k in KEYS if h.get(k, 0) != b.get(k, 0)}
        gains += delta.get("paraphrase r1", 0) > 0
        drops += delta.get("paraphrase r1", 0) < 0
        print(f"fold {held}: chose t {best[0]} t4 {best[1]} t2 {best[2]}; held-out change {delta}")
    s, b = total(held_total), total(base_total)
    print(f"folds gaining paraphrase r1 {gains}, losing {drops}, of {len(sets)}")
    print("summed held-out folds, shipped -> chosen: " + ", ".join(f"{k} {b.get(k, 0)}->{s.get(k, 0)}" for k in KEYS))


if __name__ == "__main__":
    main(sys.argv[1:])
