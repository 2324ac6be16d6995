"""Developer tool: the relevance gate with a memory's best sentence cosine as its own feature (issue 34, round
twenty-four). Works on bench/calibrate.py dumps of TUNING sets only (never a set of bench/blind.py).

`aug DUMP...` adds to each dumped candidate `sent`: the best cosine of the prompt (as the dump embedded it:
queries.search_text) to one of the memory's sentences (None for a memory of one sentence), and `clause`, the
same over its clauses (split also after ":" and ";" and around a dash). The product-path prototype (the gate's
`w_sentence`, sentence vectors per process) is docs/results/issue34_r24_sentence_gate.patch: not kept.
`folds DUMP...` leave one codebase out, as calibrate.folds, with the feature `gap` = max(0, sent − cosine)
beside the shipped ones, for several families of refits; `grid DUMP...` the shipped weights with w_gap and the
threshold on a grid, every tuning codebase pooled (counts as calibrate.counts).

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings):
     python -m bench.sentence_gate aug /tmp/calib_a.json ...
     python -m bench.sentence_gate folds /tmp/calib_a.json ...
     SENTENCE_FIELD=clause python -m bench.sentence_gate gridfolds /tmp/calib_a.json ...
Not part of the product path.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import numpy as np

from bench import calibrate
from bench.blind import BLIND

MIN_WORDS = 4  # a shorter piece joins the one before it
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`(\"'])|\n+")  # round twenty-three's split
_CLAUSE = re.compile(r"(?<=[.!?;:])\s+|\s+[—–]\s+|\n+")  # a memory is often one sentence of parts

GAP = 6  # its place after calibrate.features()' six
KEYS = (
    "question r1",
    "question top3",
    "question empty",
    "paraphrase r1",
    "paraphrase top3",
    "paraphrase empty",
    "long found",
    "unrelated leak",
    "near_miss leak",
    "long_unrelated leak",
)


def _refuse_blind(paths: tuple[str, ...]) -> None:
    for p in paths:
        with open(p) as fh:
            splits = {r["split"] for r in json.load(fh)["rows"]}
        if splits & BLIND:
            raise SystemExit(f"{p} holds a blind set")


def split(content: str, pattern: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    for piece in (p.strip() for p in pattern.split(content)):
        if not piece:
            continue
        if out and len(piece.split()) < MIN_WORDS:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def best_cosines(qvec: np.ndarray, texts: dict[int, str], embedder: Any, pattern: re.Pattern[str]) -> dict[int, float]:
    """Key → the best cosine of `qvec` to one of the text's pieces (texts of several pieces only)."""
    q = np.asarray(qvec, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    best: dict[int, float] = {}
    for key, content in texts.items():
        parts = split(content, pattern)
        if len(parts) > 1:
            mat = np.asarray(_embedded(embedder, tuple(parts)), dtype=np.float32)
            mat = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-9)
            best[key] = float(np.max(mat @ q))
    return best


_vectors: dict[tuple[str, ...], Any] = {}


def _embedded(embedder: Any, parts: tuple[str, ...]) -> Any:
    if parts not in _vectors:
        _vectors[parts] = embedder.embed(list(parts), kind="document")
    return _vectors[parts]


def aug(*paths: str) -> None:
    import django

    django.setup()
    from memories.embedding.embedders import get_embedder
    from memories.search import queries

    _refuse_blind(paths)
    embedder = get_embedder()
    for path in paths:
        with open(path) as fh:
            dump = json.load(fh)
        for r in dump["rows"]:
            if not r["cands"]:
                continue
            vec = embedder.embed([queries.search_text(r["q"])], kind="query")[0]
            texts = {i: c["text"] for i, c in enumerate(r["cands"])}
            best = best_cosines(vec, texts, embedder, _SENTENCE)
            by_clause = best_cosines(vec, texts, embedder, _CLAUSE)
            for i, c in enumerate(r["cands"]):
                c["sent"], c["clause"] = best.get(i), by_clause.get(i)
        with open(path, "w") as fh:
            json.dump(dump, fh)
        print(f"augmented {path}")


FIELD = os.environ.get("SENTENCE_FIELD", "sent")  # or "clause"


def gap(c: dict[str, Any]) -> float:
    s = c.get(FIELD)
    return max(0.0, s - (c["cosine"] or 0.0)) if s is not None else 0.0


def feat(floor: float = calibrate.ENTITY_FLOOR) -> Any:
    def f(r: dict[str, Any], c: dict[str, Any]) -> list[float]:
        return [*calibrate.features(r, c, "best", floor), gap(c)]

    return f


def start() -> tuple[np.ndarray, float, float]:
    shipped, t, floor = calibrate.shipped_weights()
    return np.append(shipped, 0.0), t, floor


def counts(rows: list[dict[str, Any]], w: np.ndarray, t: float, floor: float, sent_floor: bool) -> dict[str, int]:
    """calibrate.counts_by with the gap feature; `sent_floor`: the cosine floor read on max(cosine, sent)."""
    f = feat(floor)
    out: dict[str, int] = {}
    for r in rows:
        passing = []
        for c in r["cands"][:3]:
            cos = c["cosine"] or 0.0
            if sent_floor and c.get(FIELD) is not None:
                cos = max(cos, c[FIELD])
            if cos >= calibrate.min_cosine(r) and 1.0 / (1.0 + np.exp(-np.dot(f(r, c), w))) >= t:
                passing.append(c["id"])
        calibrate.tally(out, r, passing)
    return out


def _line(total: dict[str, int]) -> str:
    return " | ".join(str(total.get(k, 0)) for k in KEYS)


def _sum(
    sets: dict[str, list[dict[str, Any]]], weights: dict[str, np.ndarray], t: float, floor: float, sf: bool
) -> dict[str, int]:
    total: dict[str, int] = {}
    for held, rows in sets.items():
        for k, v in counts(rows, weights[held], t, floor, sf).items():
            total[k] = total.get(k, 0) + v
    return total


FAMILIES: dict[str, tuple[int, ...]] = {
    "gap": (GAP,),
    "gap+bias": (GAP, 5),
    "gap+cosine+bias": (GAP, 1, 5),
    "gap+cosine+coverage+bias": (GAP, 1, 2, 5),
    "gap+all": (0, 1, 2, calibrate.GENERAL, calibrate.ENTITY, 5, GAP),
}
THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8)


def folds(*paths: str) -> None:
    import django

    django.setup()
    _refuse_blind(paths)
    sets = calibrate.tuning_sets(paths)
    w0, t0, floor = start()
    print("codebases:", {k: len(v) for k, v in sets.items()})
    print("family sent_floor t | " + " | ".join(KEYS))
    base = _sum(sets, {h: w0 for h in sets}, t0, floor, False)
    print(f"shipped False {t0} | {_line(base)}")
    print("n: " + " | ".join(str(base.get(k.split()[0] + " n", 0)) for k in KEYS))
    for family, indices in FAMILIES.items():
        weights = {}
        for held in sets:
            train = [r for name, rows in sets.items() if name != held for r in rows]
            xs, ys = calibrate.examples(train, 3, feat(floor))
            weights[held] = calibrate.fit_free(xs, ys, w0, indices)
        for sf in (False, True):
            for t in THRESHOLDS:
                print(f"{family} {sf} {t} | {_line(_sum(sets, weights, t, floor, sf))}")
        print("  weights: " + "; ".join(f"{h} " + " ".join(f"{x:.3f}" for x in w) for h, w in weights.items()))
    xs, ys = calibrate.examples([r for rows in sets.values() for r in rows], 3, feat(floor))
    for family, indices in FAMILIES.items():
        w = calibrate.fit_free(xs, ys, w0, indices)
        print(f"fitted on all, {family}: " + " ".join(f"{x:.3f}" for x in w))


def grid(*paths: str) -> None:
    import django

    django.setup()
    _refuse_blind(paths)
    sets = calibrate.tuning_sets(paths)
    w0, t0, floor = start()
    print("w_gap sent_floor t | " + " | ".join(KEYS))
    for g in (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 14.0, 20.0):
        w = w0.copy()
        w[GAP] = g
        for sf in (False, True):
            for t in (0.7, 0.72, 0.75, 0.78, 0.8):
                print(f"{g} {sf} {t} | {_line(_sum(sets, {h: w for h in sets}, t, floor, sf))}")


GRID_W = (0.0, 4.0, 8.0, 14.0, 20.0, 30.0)
GRID_T = (0.68, 0.7, 0.72, 0.75, 0.78)


def _gain(total: dict[str, int], base: dict[str, int]) -> tuple[bool, int]:
    """Whether no more prompts without an answer get something (short, near-miss, long unrelated), and the
    relevant prompts gained (questions and paraphrases answered first, long prompts found)."""
    leaks = ("unrelated leak", "near_miss leak", "long_unrelated leak")
    ok = all(total.get(k, 0) <= base.get(k, 0) for k in leaks)
    gained = ("question r1", "paraphrase r1", "long found")
    return ok, sum(total.get(k, 0) - base.get(k, 0) for k in gained)


def gridfolds(*paths: str) -> None:
    """Leave one codebase out for the grid: on the other codebases the (w_gap, threshold) gaining the most
    relevant prompts without letting more unrelated ones through (ties: the smaller weight, the shipped
    threshold's neighbour); scored on the held-out one; the folds summed."""
    import django

    django.setup()
    _refuse_blind(paths)
    sets = calibrate.tuning_sets(paths)
    w0, t0, floor = start()
    table: dict[tuple[float, float], dict[str, dict[str, int]]] = {}
    for g in GRID_W:
        w = w0.copy()
        w[GAP] = g
        for t in GRID_T:
            table[(g, t)] = {name: counts(rows, w, t, floor, False) for name, rows in sets.items()}

    def pooled(key: tuple[float, float], names: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in names:
            for k, v in table[key][n].items():
                out[k] = out.get(k, 0) + v
        return out

    base_key = (0.0, t0)
    held_total: dict[str, int] = {}
    for held in sets:
        train = [n for n in sets if n != held]
        base = pooled(base_key, train)
        best = max(table, key=lambda k: (*_gain(pooled(k, train), base), -k[0], -abs(k[1] - t0)))
        for k, v in table[best][held].items():
            held_total[k] = held_total.get(k, 0) + v
        print(f"held {held}: chose w_gap {best[0]} t {best[1]} (train gain {_gain(pooled(best, train), base)})")
    print("shipped | " + _line(pooled(base_key, list(sets))))
    print("folds   | " + _line(held_total))
    for key in table:
        print(f"all {key} | {_line(pooled(key, list(sets)))}")


if __name__ == "__main__":
    {"aug": aug, "folds": folds, "grid": grid, "gridfolds": gridfolds}[sys.argv[1]](*sys.argv[2:])
