"""Developer tool: the learned query map's cosine as one more gate feature (issue 34, round ten; offline).

Round nine's query adapter (bench/adapter_study.py: q' = normalise(W q)) REPLACED the query vector: the
product went quieter on prompts with no answer but the cosine of prompts unlike its training data fell
under the gate's floor. Here the first stage, the floors and the gate's cosine stay plain, and the gate
gets `w_mapped × cos(W q, m)` beside them, fitted like the shipped gate's weights, so the map can only add
evidence where it helps.

`gate CALIB_DIR VEC_DIR [OUT.json]` leaves one codebase out over the 16 training / tuning codebases: for
each, W is trained on the other 15 (bench.adapter_study.train, VEC_DIR its dumps, round nine's chosen
setting), the gate is refitted on the same 15 (bench/calibrate.py dumps in CALIB_DIR, ours `dump OUT ""
tune`: its tune split only) with and without the feature, and the one left out is scored through a replay
of the gate (the first stage's best 3, the plain cosine floors, threshold 0.7). Families: which weights are
fitted (`bias` alone, `cosine+bias`, `all`), each without and with the mapped cosine (its weight fitted
too). Pooled rates at the shipped threshold and at the threshold where short no-answer prompts are as
silent as with the refit without the feature (matched), the per-codebase table of the chosen family.

`final CALIB_DIR W.npy` fits the chosen family on all 16 codebases with the map trained on all 16 (the
product's weights, branch adapt7-integration).

Issue 34, round ten (docs/benchmarks.md): left one codebase out the feature beside a refitted plain cosine
(mapped+cosine+bias) beats the shipped gate on every short kind at one threshold, but its weights read the
plain cosine negatively (-21 beside +81 on the mapped one): the issue's own deploy prompt (plain 0.32, mapped
0.19) and "what datastore do we use" are answered with nothing and 8 gate tests go red. Not kept.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1):
     python -m bench.adapter_study dump /tmp/adapt7/vec
     python -m bench.calibrate dump /tmp/adapt7/calib/tune.json "" tune
     python -m bench.calibrate dump /tmp/adapt7/calib/X.json SET.json   # X = other_a, other_i, …, train_t12
     python -m bench.mapped_study gate /tmp/adapt7/calib /tmp/adapt7/vec /tmp/adapt7/mapped_folds.json
     python -m bench.adapter_study train /tmp/adapt7/vec W16.npy rank=0 l2=0.003 w_silent=1.0 epochs=100 lr=0.01
     python -m bench.mapped_study final /tmp/adapt7/calib W16.npy
Not part of the product path.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import adapter_study as ad

# Round nine's chosen map (docs/benchmarks.md: best paraphrase rank-1 and AUC left one codebase out).
SETTINGS = ad.Settings(rank=0, l2=0.003, w_silent=1.0, epochs=100, lr=0.01)
THRESHOLD = 0.7
# Chosen on the pooled left-one-out curve of mapped+cosine+bias (docs/benchmarks.md, round ten): at 0.05 every
# short kind beats the shipped gate (questions, paraphrases, no-answer prompts silent) at a point of long found.
CHOSEN = 0.05
CURVE = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
FINE = tuple(round(float(x), 2) for x in np.arange(0.01, 0.96, 0.01))
KEYS: tuple[str, ...] = ("question r1", "question top3", "paraphrase r1", "paraphrase top3", "long found")
KEYS += ("unrelated empty", "near_miss empty", "long_unrelated empty")
Feat = Callable[[dict[str, Any], dict[str, Any]], list[float]]


def calib_sets(folder: str) -> dict[str, list[dict[str, Any]]]:
    """The calibrate dumps by codebase, named as adapter_study names its vectors (ours: `dev_tune`, its
    tune split only)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        rows = json.loads(path.read_text())["rows"]
        out["dev_tune" if path.stem == "tune" else path.stem] = [
            r for r in rows if r["split"] not in ("held_out", "fresh")
        ]
    return out


def vectors(sets: dict[str, list[dict[str, Any]]], cache: Path) -> None:
    """Each prompt's plain query vector (`qv`) and each candidate's memory vector (`mv`), as the product
    embeds them (queries.search_text, kind="query"; memories plain), cached in `cache`."""
    if not cache.exists():
        from memories.embedding.embedders import get_embedder
        from memories.search import queries

        embedder = get_embedder()
        texts = sorted({c["text"] for rows in sets.values() for r in rows for c in r["cands"]})
        prompts = sorted({queries.search_text(r["q"]) for rows in sets.values() for r in rows})
        np.savez(
            cache,
            texts=np.asarray(texts),
            mem=np.asarray(embedder.embed(texts), dtype=np.float32),
            prompts=np.asarray(prompts),
            q=np.asarray(embedder.embed(prompts, kind="query"), dtype=np.float32),
        )
    z = np.load(cache)
    mem = dict(zip((str(t) for t in z["texts"]), z["mem"], strict=True))
    qv = dict(zip((str(p) for p in z["prompts"]), z["q"], strict=True))
    from memories.search import queries

    worst = 0.0
    for rows in sets.values():
        for r in rows:
            r["qv"] = qv[queries.search_text(r["q"])]
            for c in r["cands"]:
                c["mv"] = mem[c["text"]]
                if c["cosine"] is not None:  # the dump's cosine (clipped at 0) is the product's: they must agree
                    worst = max(worst, abs(max(float(r["qv"] @ c["mv"]), 0.0) - c["cosine"]))
    print(f"largest |cos(q, m) - dumped cosine|: {worst:.5f}")


def attach_mapped(rows: list[dict[str, Any]], w: np.ndarray) -> None:
    """cos(normalise(W q), m) for every candidate of `rows`."""
    for r in rows:
        q = w @ r["qv"]
        q = q / (np.linalg.norm(q) or 1.0)
        for c in r["cands"]:
            c["mapped"] = float(q @ c["mv"])


def featurise(mapped: bool) -> Feat:
    """The shipped gate's features (bench.calibrate.features: logit, cosine, coverage, general, entity),
    the mapped cosine when `mapped`, then the bias."""
    from bench import calibrate as cal

    def f(r: dict[str, Any], c: dict[str, Any]) -> list[float]:
        if "base" not in c:  # the same in every fold
            c["base"] = cal.features(r, c, "best")
        return c["base"][:-1] + ([c["mapped"]] if mapped else []) + [1.0]

    return f


def fit(rows: list[dict[str, Any]], start: np.ndarray, free: list[int], feat: Feat, l2: float = 1e-2) -> np.ndarray:
    """The weights at `free` fitted (L2 logistic regression, Newton with step halving), the others kept
    (bench.calibrate.fit_some, any features: bench.calibrate.fit_free)."""
    from bench import calibrate as cal

    xs, ys = cal.examples(rows, 3, feat)
    return cal.fit_free(xs, ys, start, free, l2)


def probabilities(rows: list[dict[str, Any]], w: np.ndarray, feat: Feat) -> list[list[tuple[str, float]]]:
    """Per prompt, its best 3 candidates over the product's plain cosine floor (bench.calibrate.min_cosine)
    with the gate's probability."""
    from bench import calibrate as cal

    return [
        [
            (c["id"], float(1.0 / (1.0 + np.exp(-np.dot(feat(r, c), w)))))
            for c in r["cands"][:3]
            if (c["cosine"] or 0.0) >= cal.min_cosine(r)
        ]
        for r in rows
    ]


def counts(rows: list[dict[str, Any]], probs: list[list[tuple[str, float]]], t: float) -> dict[str, int]:
    """As bench.calibrate.counts: what the gate at threshold `t` returns for each prompt."""
    out: dict[str, int] = {}

    def add(key: str, value: bool = True) -> None:
        out[key] = out.get(key, 0) + int(value)

    for r, ps in zip(rows, probs, strict=True):
        passing = [i for i, p in ps if p >= t]
        kind = r["kind"]
        add(f"{kind} n")
        if kind == "long":
            add("long found", bool(set(passing) & set(r["answers"])))
        elif kind in ("question", "paraphrase"):
            add(f"{kind} r1", bool(passing) and passing[0] in r["answers"])
            add(f"{kind} top3", bool(set(passing) & set(r["answers"])))
        else:
            add(f"{kind} empty", not passing)
    return out


def rate(total: dict[str, int], key: str) -> float:
    n = total.get(key.split()[0] + " n", 0)
    return total.get(key, 0) / n if n else float("nan")


def silent_empty(total: dict[str, int]) -> float:
    """Short prompts with no answer (unrelated and near misses) answered with nothing, pooled."""
    n = total.get("unrelated n", 0) + total.get("near_miss n", 0)
    return (total.get("unrelated empty", 0) + total.get("near_miss empty", 0)) / n


def add_up(per: dict[str, dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in per.values():
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


# (label, with the mapped cosine, which weights are fitted: named groups of [logit, cos, cov, general,
# entity, (mapped), bias])
FAMILIES: list[tuple[str, bool, str]] = [
    ("shipped", False, ""),
    ("mapped alone", True, ""),
    ("bias", False, "bias"),
    ("mapped+bias", True, "bias"),
    ("cosine+bias", False, "cosine+bias"),
    ("mapped+cosine+bias", True, "cosine+bias"),
    ("all", False, "all"),
    ("mapped+all", True, "all"),
]


def free_of(which: str, mapped: bool, n: int) -> list[int]:
    """Indices fitted: the named group, plus the mapped cosine's weight (index 5) when it is a feature
    (`mapped alone`: only its weight, as the shipped gate's general and entity weights were added)."""
    named = {"": [], "bias": [n - 1], "cosine+bias": [1, n - 1], "all": list(range(n))}[which]
    return sorted(set(named) | ({5} if mapped else set()))


def gate(calib: str, folder: str, out: str | None = None) -> None:
    import django

    django.setup()
    from bench import calibrate as cal

    sets = calib_sets(calib)
    vectors(sets, Path(calib) / "vectors.npz")
    trainable = {cb.name: cb for cb in ad.load(folder)}
    assert set(trainable) == set(sets), (sorted(trainable), sorted(sets))
    shipped, _, _ = cal.shipped_weights()
    print("codebases:", {k: len(v) for k, v in sets.items()})
    cache = Path(calib) / "maps.npz"
    maps: dict[str, np.ndarray] = dict(np.load(cache)) if cache.exists() else {}
    for held in sets:  # one map per left-out codebase, trained on the other 15
        if held not in maps:
            maps[held] = ad.train([cb for name, cb in trainable.items() if name != held], SETTINGS)
        print(f"map without {held}: ‖W - I‖ = {np.linalg.norm(maps[held] - np.eye(len(maps[held]))):.3f}", flush=True)
    np.savez(cache, **maps)  # type: ignore[arg-type]  # numpy's stub types every keyword as allow_pickle
    print(f"{'family':<28} t    | " + " | ".join(KEYS) + " | short silent empty")
    per_family: dict[str, dict[str, dict[str, int]]] = {}
    chosen: dict[str, dict[float, dict[str, dict[str, int]]]] = {}
    reference: dict[str, float] = {}
    for label, mapped, which in FAMILIES:
        feat = featurise(mapped)
        start = np.concatenate([shipped[:-1], [0.0] if mapped else [], shipped[-1:]])
        free = free_of(which, mapped, len(start))
        weights: dict[str, np.ndarray] = {}
        curve: dict[float, dict[str, dict[str, int]]] = {}
        for held in sets:
            for rows in sets.values():  # every codebase read through the map trained without `held`
                attach_mapped(rows, maps[held])
            train = [r for name, rows in sets.items() if name != held for r in rows]
            weights[held] = fit(train, start, free, feat) if free else start
            probs = probabilities(sets[held], weights[held], feat)
            for t in FINE:
                curve.setdefault(t, {})[held] = counts(sets[held], probs, t)
        totals = {t: add_up(per) for t, per in curve.items()}
        if not mapped:
            reference[which] = silent_empty(totals[THRESHOLD])
        # the lowest threshold keeping short no-answer prompts as silent as the same refit without the map,
        # and as the shipped gate
        target = reference.get(which, silent_empty(totals[THRESHOLD]))
        matched = min((t for t in FINE if silent_empty(totals[t]) >= target), default=FINE[-1])
        as_shipped = min((t for t in FINE if silent_empty(totals[t]) >= reference[""]), default=FINE[-1])
        for t, tag in ((THRESHOLD, ""), (matched, " (matched)"), (as_shipped, " (as shipped)")):
            row = " | ".join(f"{rate(totals[t], k):.3f}" for k in KEYS)
            print(f"{label + tag:<28} {t:<4} | {row} | {silent_empty(totals[t]):.3f}", flush=True)
        print("   weights (first fold): " + " ".join(f"{x:.3f}" for x in next(iter(weights.values()))))
        if which == "cosine+bias" or not which:  # the trade-off curve
            for t in CURVE:
                row = " | ".join(f"{rate(totals[t], k):.3f}" for k in KEYS)
                print(f"   {label} at {t:<4} | {row} | {silent_empty(totals[t]):.3f}")
        per_family[label] = curve[THRESHOLD]
        chosen[label] = curve
    for label in per_family:
        print(f"== {label}, t {THRESHOLD}, per left-out codebase")
        for held, c in per_family[label].items():
            print(f"{held:<12} " + " | ".join(f"{rate(c, k):.3f}" for k in KEYS))
    if out:  # every family's per-codebase counts at every threshold
        Path(out).write_text(json.dumps({k: {str(t): per for t, per in v.items()} for k, v in chosen.items()}))


def final(calib: str, adapter: str) -> None:
    """The product's weights: the gate's cosine, mapped cosine and bias fitted on all 16 codebases (the
    chosen family, mapped+cosine+bias), the map being `adapter` (trained on all 16), the other weights
    shipped; the bias is then moved so the shipped threshold sits where the left-one-out choice put it."""
    import django

    django.setup()
    from bench import calibrate as cal

    sets = calib_sets(calib)
    vectors(sets, Path(calib) / "vectors.npz")
    rows = [r for part in sets.values() for r in part]
    attach_mapped(rows, np.load(adapter))
    shipped, threshold, _ = cal.shipped_weights()
    start = np.concatenate([shipped[:-1], [0.0], shipped[-1:]])
    w = fit(rows, start, free_of("cosine+bias", True, len(start)), featurise(True))
    shift = float(np.log(threshold / (1 - threshold)) - np.log(CHOSEN / (1 - CHOSEN)))
    print("fitted: " + " ".join(f"{x:.3f}" for x in w) + f"; bias at threshold {threshold}: {w[-1] + shift:.3f}")
    total = add_up({"all": counts(rows, probabilities(rows, w, featurise(True)), CHOSEN)})
    print("in-sample at the chosen threshold: " + " | ".join(f"{k} {rate(total, k):.3f}" for k in KEYS))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "gate":
        gate(*args)
    elif cmd == "final":
        final(*args)
    else:
        raise SystemExit(__doc__)
