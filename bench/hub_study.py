"""Developer tool: a memory's BACKGROUND in the relevance gate (issue 34, round ten; offline, no database).

The gate cannot tell a paraphrase's answer from the best memory of a prompt with no answer: both get
similar cosines and cross-encoder logits. Query-side relative features were tried (round six). This is
the MEMORY side: some memories are hubs (a general one, "we use PostgreSQL 16 for everything", is the
nearest memory of many unrelated prompts), a specific one is rarely near what it does not answer. Each
memory's background is measured once against a fixed corpus of generic prompts the product would ship
(bench/data/background_prompts.json, written by bench/background_corpus.py), and the score normalised by it:

- `minus`: cos(q, m) − α · r_m, r_m the mean of the memory's top-k cosines against the background (α = 1:
  CSLS's memory half; α chosen leave-one-codebase-out);
- `csls`: 2 cos(q, m) − r_q − r_m (r_q: the prompt's own top-k mean against the background);
- `pvalue`: −log10 of the share of background prompts reaching this cosine on this memory ((n + 1) / (N + 1));
- `z`: (cos − mean) / sd of the memory's cosines against the background.

`vectors DIR` embeds the training / tuning codebases (bench.adapter_study.dump: our `tune` split, A, I, J,
t01..t12; the product's LocalEmbedder and queries.search_text) and the background corpus (DIR/background.npy).
`auc DIR` leaves one codebase out: per codebase, the AUC of a paraphrase's answer (and of questions, long
prompts) against the best candidate of the no-answer prompts, and paraphrase rank-1 over all memories, raw
cosine against each normalised score (α fitted on the other 15).
`gate CALIB_DIR DIR` replays the gate (bench/calibrate.py dumps of the same 16 codebases, `dump OUT "" tune`
for ours): the shipped weights, the gate refitted on 15 codebases without and with the new feature, scored
on the one left out; pooled rates at the shipped threshold and at the threshold where short no-answer
prompts stay as silent as with the shipped gate (matched), and the gate's AUC (a paraphrase's answer against
a no-answer prompt's best candidate, by the fitted probability). `gate CALIB_DIR DIR genre` runs only the
families whose label holds "genre": the background is then the no-answer prompts of the OTHER codebases
(never the left-out one's; "other writers": nor those of its writer), for the memory side and the prompt side.
`folds DIR LABEL…` prints the per-fold table of the last `gate` run.

Issue 34, round ten (docs/benchmarks.md): no memory-side variant separates better left-one-out; not kept. The
prompt side against the other codebases' no-answer prompts separates a little better (gate AUC .762 -> .782)
for a small, uneven gain (paraphrases first at equal silence .689 -> .700): a lead, not wired.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1):
     python -m bench.background_corpus bench/data/background_prompts.json
     python -m bench.hub_study vectors /tmp/hub7/vec
     python -m bench.hub_study auc /tmp/hub7/vec
     python -m bench.calibrate dump /tmp/hub7/calib/tune.json "" tune
     python -m bench.calibrate dump /tmp/hub7/calib/X.json SET.json   # X = other_a, other_i, …, train_t12
     python -m bench.hub_study gate /tmp/hub7/calib /tmp/hub7/vec
Not part of the product path.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import adapter_study as ad

CORPUS = Path(__file__).resolve().parent / "data" / "background_prompts.json"
KS = (10, 50)
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)


def embed_background(folder: str) -> np.ndarray:
    """The corpus' prompts as the product embeds a query (cached in DIR/background.npy)."""
    target = Path(folder) / "background.npy"
    if target.exists():
        return np.asarray(np.load(target))
    from memories.embedding.embedders import get_embedder
    from memories.search import queries

    prompts = json.loads(CORPUS.read_text())["prompts"]
    vecs = np.asarray(get_embedder().embed([queries.search_text(p) for p in prompts], kind="query"), dtype=np.float32)
    np.save(target, vecs)
    return vecs


def vectors(folder: str) -> None:
    import django

    django.setup()
    ad.dump(folder, [])
    print(f"background: {embed_background(folder).shape}")


class Background:
    """Per memory (rows of `mem`): its cosines against the background corpus, sorted descending."""

    def __init__(self, mem: np.ndarray, bg: np.ndarray) -> None:
        self.sims = -np.sort(-(mem @ bg.T), axis=1)
        self.n = bg.shape[0]
        self.bg = bg

    def r(self, k: int) -> np.ndarray:
        return np.asarray(self.sims[:, :k].mean(axis=1))

    def pvalue(self, cos: np.ndarray) -> np.ndarray:
        """−log10((#background prompts with cosine ≥ cos on that memory + 1) / (N + 1)), cos: prompts × memories."""
        asc = self.sims[:, ::-1]
        reach = np.stack([self.n - np.searchsorted(asc[m], cos[:, m], side="left") for m in range(asc.shape[0])], 1)
        return np.asarray(-np.log10((reach + 1) / (self.n + 1)))

    def z(self, cos: np.ndarray) -> np.ndarray:
        return np.asarray((cos - self.sims.mean(axis=1)) / self.sims.std(axis=1))

    def rq(self, q: np.ndarray, k: int) -> np.ndarray:
        s = -np.sort(-(q @ self.bg.T), axis=1)
        return np.asarray(s[:, :k].mean(axis=1))


def scored(cb: ad.Codebase, bg: np.ndarray, variant: str, k: int, alpha: float = 1.0) -> np.ndarray:
    """prompts × memories: the score `variant` gives."""
    cos = cb.q @ cb.mem.T
    b = Background(cb.mem, bg)
    if variant == "raw":
        return cos
    if variant == "minus":
        return np.asarray(cos - alpha * b.r(k)[None, :])
    if variant == "csls":
        return np.asarray(2 * cos - b.rq(cb.q, k)[:, None] - b.r(k)[None, :])
    if variant == "query":  # the prompt's own background only (how generic the prompt reads)
        return np.asarray(cos - alpha * b.rq(cb.q, k)[:, None])
    if variant == "pvalue":
        return b.pvalue(cos)
    if variant == "z":
        return b.z(cos)
    raise ValueError(variant)


def measures(cb: ad.Codebase, s: np.ndarray) -> dict[str, float]:
    """Rank-1 / top-3 by `s` over all memories and the AUCs (as adapter_study.score, any score)."""
    out: dict[str, float] = {}
    ans: dict[str, list[float]] = {"short": [], "para": [], "long": []}
    silent: dict[str, list[float]] = {"short": [], "long": []}
    for i, kind in enumerate(cb.kinds):
        if kind in ad.ANSWERED:
            order = np.argsort(-s[i])
            out.setdefault(f"{kind}_r1", 0.0)
            out[f"{kind}_r1"] += order[0] in cb.answers[i]
            out[f"{kind}_t3"] = out.get(f"{kind}_t3", 0.0) + bool(set(order[:3]) & set(cb.answers[i]))
            best = float(s[i, cb.answers[i]].max())
            ans["long" if kind == "long" else "short"].append(best)
            if kind == "paraphrase":
                ans["para"].append(best)
        elif kind in ad.SILENT:
            silent["long" if kind == "long_unrelated" else "short"].append(float(s[i].max()))
    for kind in ad.ANSWERED:
        n = sum(k == kind for k in cb.kinds)
        for m in ("r1", "t3"):
            if n:
                out[f"{kind}_{m}"] /= n
    out["auc_short"] = ad.auc(ans["short"], silent["short"])
    out["auc_para"] = ad.auc(ans["para"], silent["short"])
    out["auc_long"] = ad.auc(ans["long"], silent["long"])
    return out


COLS = ("paraphrase_r1", "paraphrase_t3", "question_r1", "long_r1", "auc_short", "auc_para", "auc_long")


def auc(folder: str) -> None:
    sets = ad.load(folder)
    bg = np.load(Path(folder) / "background.npy")
    print("codebases:", ", ".join(f"{c.name} ({len(c.mem)}/{len(c.kinds)})" for c in sets))
    print(f"{'variant':<36} " + " ".join(c.replace("paraphrase", "para").replace("question", "q") for c in COLS))
    variants: list[tuple[str, str, int]] = [("raw", "raw", 0)]
    for k in KS:
        variants += [(f"minus a=1 k={k}", "minus", k), (f"csls k={k}", "csls", k), (f"query a=1 k={k}", "query", k)]
    variants += [("pvalue", "pvalue", 0), ("z", "z", 0)]
    per: dict[str, list[dict[str, float]]] = {}
    for label, variant, k in variants:
        per[label] = [measures(cb, scored(cb, bg, variant, k)) for cb in sets]
    # cos − α r_m with α chosen on the other 15 codebases (mean paraphrase AUC), scored on the one left out
    for k in KS:
        grid = {a: [measures(cb, scored(cb, bg, "minus", k, a))["auc_para"] for cb in sets] for a in ALPHAS}
        rows, chosen = [], []
        for n, cb in enumerate(sets):
            a = max(ALPHAS, key=lambda x: float(np.nanmean([v for i, v in enumerate(grid[x]) if i != n])))
            chosen.append(a)
            rows.append(measures(cb, scored(cb, bg, "minus", k, a)))
        per[f"minus LOCO-a k={k}"] = rows
        print(f"# k={k}: alpha chosen per fold {chosen}")
    # The same with, as background, the no-answer prompts of the other 15 codebases (the very genre the gate must
    # stay silent on; never the left-out codebase's own): does any background make the memory side work?
    for k in KS:
        for variant in ("minus", "csls"):
            rows = []
            for n, cb in enumerate(sets):
                own = [o.q[i] for j, o in enumerate(sets) if j != n for i, kd in enumerate(o.kinds) if kd in ad.SILENT]
                fold_bg = np.asarray(own)
                alpha = 1.0
                if variant == "minus":  # α chosen on the other 15 (their background excludes the left-out one too)
                    alpha = max(
                        ALPHAS,
                        key=lambda a: float(
                            np.nanmean(
                                [
                                    measures(o, scored(o, fold_bg, "minus", k, a))["auc_para"]
                                    for j, o in enumerate(sets)
                                    if j != n
                                ]
                            )
                        ),
                    )
                rows.append(measures(cb, scored(cb, fold_bg, variant, k, alpha)))
            per[f"{variant} k={k} bg=others' no-answer"] = rows
    for label, rows in per.items():
        m = ad.mean(rows)
        print(f"{label:<36} " + " ".join(f"{m[c]:.3f}" for c in COLS))
    print(
        "\nper left-out codebase: AUC paraphrases (raw -> minus LOCO-a k=10 / csls k=10 / pvalue), paraphrase r1 (same)"
    )
    for n, cb in enumerate(sets):
        r = per["raw"][n]
        o = [per[x][n] for x in ("minus LOCO-a k=10", "csls k=10", "pvalue")]
        print(
            f"{cb.name:<14} {r['auc_para']:.3f} -> "
            + " / ".join(f"{x['auc_para']:.3f}" for x in o)
            + f"   r1 {r['paraphrase_r1']:.3f} -> "
            + " / ".join(f"{x['paraphrase_r1']:.3f}" for x in o)
        )
    hubs(sets, bg)


def hubs(sets: list[ad.Codebase], bg: np.ndarray) -> None:
    """Is r_m what makes a memory the best candidate of no-answer prompts? Spearman-free check: the
    mean r_m of memories that are some no-answer prompt's nearest against the others."""
    near, other = [], []
    for cb in sets:
        r = Background(cb.mem, bg).r(10)
        cos = cb.q @ cb.mem.T
        top = {int(np.argmax(cos[i])) for i, k in enumerate(cb.kinds) if k in ad.SILENT}
        near += [float(r[m]) for m in top]
        other += [float(r[m]) for m in range(len(cb.mem)) if m not in top]
    from scipy.stats import spearmanr  # type: ignore[import-untyped]

    shares, rhos = [], []
    for cb in sets:
        cos = cb.q @ cb.mem.T
        nearest = [int(np.argmax(cos[i])) for i, k in enumerate(cb.kinds) if k in ad.SILENT]
        tally = np.bincount(nearest, minlength=len(cb.mem))
        shares.append(sum(sorted(tally, reverse=True)[:3]) / len(nearest))
        rhos.append(float(spearmanr(Background(cb.mem, bg).r(10), tally).statistic))
    print(
        "\nSpearman of r_m (k=10) with how many no-answer prompts have the memory nearest: "
        f"{statistics.fmean(rhos):.3f}"
    )
    print(
        "share of no-answer prompts whose nearest memory is one of the codebase's 3 most frequent: "
        f"{statistics.fmean(shares):.3f}"
    )
    print(
        f"r_m (k=10): memories that are a no-answer prompt's nearest {statistics.fmean(near):.3f} (n={len(near)}), "
        f"the others {statistics.fmean(other):.3f} (n={len(other)}); AUC {ad.auc(near, other):.3f}"
    )


# ---- the gate replay -------------------------------------------------------------------------------------------


def calib_sets(folder: str) -> dict[str, list[dict[str, Any]]]:
    """The calibrate dumps by codebase (ours: its `tune` split only)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        rows = json.loads(path.read_text())["rows"]
        out[path.stem] = [r for r in rows if r["split"] not in ("held_out", "fresh")]
    return out


Vectors = dict[str, tuple[np.ndarray, np.ndarray, dict[str, int]]]  # codebase: prompts, memories, text -> row


def attach(sets: dict[str, list[dict[str, Any]]], bg: np.ndarray) -> Vectors:
    """Each candidate gets its memory's background reads (r10, r50, pvalue of its cosine, z), each prompt
    its r_q, from the product's own vectors of the memory text and the prompt (returned, for genre())."""
    from memories.embedding.embedders import get_embedder
    from memories.search import queries

    embedder = get_embedder()
    vecs: Vectors = {}
    for name, rows in sets.items():
        texts = sorted({c["text"] for r in rows for c in r["cands"]})
        mem = np.asarray(embedder.embed(texts), dtype=np.float32)
        b = Background(mem, bg)
        at = {t: i for i, t in enumerate(texts)}
        r10, r50 = b.r(10), b.r(50)
        qv = np.asarray(embedder.embed([queries.search_text(r["q"]) for r in rows], kind="query"), dtype=np.float32)
        rq = b.rq(qv, 10)
        vecs[name] = (qv, mem, at)
        for r, q in zip(rows, rq, strict=True):
            r["rq10"] = float(q)
            for c in r["cands"]:
                i = at[c["text"]]
                cos = float(c["cosine"] or 0.0)
                c["r10"], c["r50"] = float(r10[i]), float(r50[i])
                reach = int((b.sims[i] >= cos).sum())
                c["pvalue"] = float(-np.log10((reach + 1) / (b.n + 1)))
                c["z"] = float((cos - b.sims[i].mean()) / b.sims[i].std())
    return vecs


def author(name: str) -> str:
    """Who wrote a codebase, as far as the sets tell (their `about` styles): t01-t04, t05-t08, t09-t12 each one
    writer, I and J one (round eight), ours and A one each."""
    if name.startswith("train_t"):
        return f"train{(int(name[-2:]) - 1) // 4}"
    return "other_ij" if name in ("other_i", "other_j") else name


def genre(sets: dict[str, list[dict[str, Any]]], vecs: Vectors, held: str, by_author: bool = False) -> None:
    """The background of exactly the genre the gate must stay silent on: for each codebase, the no-answer
    prompts of the other codebases but the left-out one (`held`); `by_author`: of the codebases by other
    writers than both (no shared style). Sets each candidate's `r_g` (its memory's top-10 mean against it) and
    each prompt's `rq_g`."""
    silent = {n: vecs[n][0][[i for i, r in enumerate(rows) if r["kind"] in ad.SILENT]] for n, rows in sets.items()}
    for name, rows in sets.items():
        if by_author:
            out = {n for n in sets if author(n) in (author(name), author(held))}
        else:
            out = {name, held}
        bg = np.concatenate([v for n, v in silent.items() if n not in out])
        qv, mem, at = vecs[name]
        b = Background(mem, bg)
        r_g, rq_g = b.r(10), b.rq(qv, 10)
        for r, q in zip(rows, rq_g, strict=True):
            r["rq_g"] = float(q)
            for c in r["cands"]:
                c["r_g"] = float(r_g[at[c["text"]]])


FEATURES: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[float]]] = {
    "none": lambda r, c: [],
    "r10": lambda r, c: [c["r10"]],
    "r50": lambda r, c: [c["r50"]],
    "pvalue": lambda r, c: [c["pvalue"]],
    "z": lambda r, c: [c["z"]],
    "rq": lambda r, c: [r["rq10"]],
    "r10+rq": lambda r, c: [c["r10"], r["rq10"]],
    "r_g": lambda r, c: [c["r_g"]],
    "rq_g": lambda r, c: [r["rq_g"]],
    "r_ga": lambda r, c: [c["r_g"]],
    "rq_ga": lambda r, c: [r["rq_g"]],
}


def featurise(extra: str) -> Callable[[dict[str, Any], dict[str, Any]], list[float]]:
    from bench import calibrate as cal

    def f(r: dict[str, Any], c: dict[str, Any]) -> list[float]:
        base = cal.features(r, c, "best")
        return base[:-1] + FEATURES[extra](r, c) + [1.0]

    return f


def fit(rows: list[dict[str, Any]], start: np.ndarray, free: list[int], feat: Callable[..., list[float]]) -> np.ndarray:
    """The weights at `free` fitted (L2 logistic regression, Newton with step halving), the others kept."""
    from bench import calibrate as cal

    xs, ys = cal.examples(rows, 3, feat)
    return cal.fit_free(xs, ys, start, free)


def counts(rows: list[dict[str, Any]], w: np.ndarray, t: float, feat: Callable[..., list[float]]) -> dict[str, int]:
    """As bench.calibrate.counts, any features, and prompts with no answer counted by those that get nothing."""
    from bench import calibrate as cal

    out = cal.counts_by(rows, w, t, feat)
    for kind in {r["kind"] for r in rows} - {"long", *cal.KINDS_ANSWERED}:
        out[f"{kind} empty"] = out[f"{kind} n"] - out[f"{kind} leak"]
    return out


KEYS: tuple[str, ...] = ("question r1", "question top3", "paraphrase r1", "paraphrase top3", "long found")
KEYS += ("unrelated empty", "near_miss empty", "long_unrelated empty")
# (label, extra feature, which weights are fitted: indices into [logit, cos, cov, general, entity, *extra, bias])
FAMILIES: list[tuple[str, str, str]] = [
    ("shipped", "none", ""),
    ("refit all, no new feature", "none", "all"),
    ("r10: its weight + bias", "r10", "new+bias"),
    ("r10: all", "r10", "all"),
    ("r50: its weight + bias", "r50", "new+bias"),
    ("r50: all", "r50", "all"),
    ("pvalue: its weight + bias", "pvalue", "new+bias"),
    ("pvalue: all", "pvalue", "all"),
    ("z: its weight + bias", "z", "new+bias"),
    ("z: all", "z", "all"),
    ("rq (prompt side): its weight + bias", "rq", "new+bias"),
    ("rq (prompt side): all", "rq", "all"),
    ("r10+rq: all", "r10+rq", "all"),
    ("r_m vs genre: its weight + bias", "r_g", "new+bias"),
    ("r_m vs genre: all", "r_g", "all"),
    ("rq vs genre: its weight + bias", "rq_g", "new+bias"),
    ("rq vs genre: all", "rq_g", "all"),
    ("r_m vs genre, other writers: its weight + bias", "r_ga", "new+bias"),
    ("rq vs genre, other writers: its weight + bias", "rq_ga", "new+bias"),
    ("rq vs genre, other writers: all", "rq_ga", "all"),
]


def rate(total: dict[str, int], key: str) -> float:
    n = total.get(key.split()[0] + " n", 0)
    return total.get(key, 0) / n if n else float("nan")


FINE = tuple(round(x, 2) for x in np.arange(0.05, 0.96, 0.01))


def silent_empty(total: dict[str, int]) -> float:
    """Short prompts with no answer (unrelated and near misses) answered with nothing, pooled."""
    n = total.get("unrelated n", 0) + total.get("near_miss n", 0)
    return (total.get("unrelated empty", 0) + total.get("near_miss empty", 0)) / n


def separation(
    rows: list[dict[str, Any]], w: np.ndarray, feat: Callable[..., list[float]]
) -> tuple[list[float], list[float]]:
    """The gate's probability of each paraphrase's answer (its best among the first stage's best 3 over the
    cosine floor, 0 when it is not there) and of each short no-answer prompt's best candidate (same rules)."""
    from bench import calibrate as cal

    def p(r: dict[str, Any], c: dict[str, Any]) -> float:
        if (c["cosine"] or 0.0) < cal.min_cosine(r):
            return 0.0
        return float(1.0 / (1.0 + np.exp(-np.dot(feat(r, c), w))))

    para = [
        max([p(r, c) for c in r["cands"][:3] if c["id"] in r["answers"]], default=0.0)
        for r in rows
        if r["kind"] == "paraphrase"
    ]
    silent = [
        max([p(r, c) for c in r["cands"][:3]], default=0.0) for r in rows if r["kind"] in ("unrelated", "near_miss")
    ]
    return para, silent


def diagnose(sets: dict[str, list[dict[str, Any]]]) -> None:
    """Does the memory's background tell a paraphrase's answer from a no-answer prompt's first candidate?
    r10 of the answers (among the best 3) against r10 of the first candidates of short no-answer prompts,
    and the same for the prompt side's rq10."""
    ans = [
        c
        for rows in sets.values()
        for r in rows
        if r["kind"] == "paraphrase"
        for c in r["cands"][:3]
        if c["id"] in r["answers"]
    ]
    first = [
        r["cands"][0] for rows in sets.values() for r in rows if r["kind"] in ("unrelated", "near_miss") and r["cands"]
    ]
    for key, sign in (("cosine", 1), ("r10", -1), ("r50", -1), ("z", 1), ("pvalue", 1)):
        a, f = [(c[key] or 0.0) for c in ans], [(c[key] or 0.0) for c in first]
        print(
            f"{key}: paraphrase answers {np.mean(a):.3f}, no-answer first candidates {np.mean(f):.3f}; "
            f"AUC (answer {'higher' if sign > 0 else 'lower'}) "
            f"{ad.auc([sign * x for x in a], [sign * x for x in f]):.3f}"
        )
    pq = [r["rq10"] for rows in sets.values() for r in rows if r["kind"] == "paraphrase"]
    sq = [r["rq10"] for rows in sets.values() for r in rows if r["kind"] in ("unrelated", "near_miss")]
    print(
        f"rq10: paraphrases {np.mean(pq):.3f}, short no-answer prompts {np.mean(sq):.3f}; "
        f"AUC (paraphrase lower) {ad.auc([-x for x in pq], [-x for x in sq]):.3f}"
    )


def gate(calib: str, folder: str, only: str = "") -> None:
    """`only`: the families whose label holds it (and the shipped gate)."""
    import django

    django.setup()
    from bench import calibrate as cal

    sets = calib_sets(calib)
    vecs = attach(sets, np.load(Path(folder) / "background.npy"))
    shipped, threshold, _ = cal.shipped_weights()
    print("codebases:", {k: len(v) for k, v in sets.items()})
    diagnose(sets)
    print(f"{'family':<36} t    | " + " | ".join(KEYS) + " | short silent empty")
    chosen: dict[str, dict[str, dict[str, int]]] = {}
    target = 0.0
    for label, extra, which in FAMILIES:
        if only and only not in label and label != "shipped":
            continue
        feat = featurise(extra)
        n_new = {"none": 0, "r10+rq": 2}.get(extra, 1)
        start = np.concatenate([shipped[:-1], np.zeros(n_new), shipped[-1:]])
        free = (
            [] if not which else list(range(len(start))) if which == "all" else [*range(5, 5 + n_new), len(start) - 1]
        )
        weights = {}
        per: dict[float, dict[str, dict[str, int]]] = {t: {} for t in FINE}
        aucs, pooled_p, pooled_s = [], [], []
        for held, rows in sets.items():
            if extra.endswith(("_g", "_ga")):  # the genre background excludes the left-out codebase
                genre(sets, vecs, held, by_author=extra.endswith("_ga"))
            train = [r for name, part in sets.items() if name != held for r in part]
            weights[held] = fit(train, start, free, feat) if free else start
            for t in FINE:
                per[t][held] = counts(rows, weights[held], t, feat)
            para, silent = separation(rows, weights[held], feat)
            aucs.append(ad.auc(para, silent))
            pooled_p += para
            pooled_s += silent
        curve: dict[float, dict[str, int]] = {}
        for t in FINE:
            total: dict[str, int] = {}
            for c in per[t].values():
                for k, v in c.items():
                    total[k] = total.get(k, 0) + v
            curve[t] = total
            chosen[f"{label} t={t}"] = per[t]
        if label == "shipped":
            target = silent_empty(curve[threshold])
        # the operating point: the lowest threshold keeping short no-answer prompts silent as often as shipped
        matched = min((t for t in FINE if silent_empty(curve[t]) >= target), default=FINE[-1])
        for t, tag in ((threshold, ""), (matched, " (matched)")):
            row = " | ".join(f"{rate(curve[t], k):.3f}" for k in KEYS)
            print(f"{label + tag:<36} {t:<4} | {row} | {silent_empty(curve[t]):.3f}", flush=True)
        print(
            f"   gate AUC paraphrases vs no-answer: mean of folds {np.nanmean(aucs):.3f}, "
            f"pooled {ad.auc(pooled_p, pooled_s):.3f}"
        )
        print("   weights (first fold): " + " ".join(f"{x:.3f}" for x in next(iter(weights.values()))))
    Path(folder, "gate_folds.json").write_text(json.dumps(chosen))


def folds(folder: str, *labels: str) -> None:
    """The per-fold table of settings the `gate` run saved (labels as printed, with ' t=0.7')."""
    chosen = json.loads(Path(folder, "gate_folds.json").read_text())
    for label in labels:
        print(f"== {label}")
        print(f"{'codebase':<16} " + " | ".join(KEYS))
        for held, c in chosen[label].items():
            print(f"{held:<16} " + " | ".join(f"{rate(c, k):.3f}" for k in KEYS))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "vectors":
        vectors(args[0])
    elif cmd == "auc":
        auc(args[0])
    elif cmd == "gate":
        gate(*args[:3])
    elif cmd == "folds":
        folds(args[0], *args[1:])
    else:
        raise SystemExit(__doc__)
