"""Developer tool: how far the fusion's keyword half should be trusted, replayed offline on the
codebase sets and LoCoMo dev (issue 34, round six, docs/benchmarks.md).

`dump OUT.pkl [SET.json]` stores a codebase set's memories in a throwaway project and keeps, for
every prompt, the first stage's raw candidates before fusion (cosine, keyword score and coverage,
times: what `queries.fuse` reads), whether the prompt reads as general (asking.asks_in_general) and
the cross-encoder's best-clause logit (what the gate uses) for the fused top 10 and the cosine top 10.

`eval LOCOMO.pkl OURS.pkl A.pkl [B.pkl]` replays through the product's own `queries.fuse` and the
shipped gate (`gates.JUDGED`, over the first 3), with the keyword weight scaled by
min(1, the best candidate's coverage / FULL) (floored at FLOOR), and the gate's threshold, for each
variant in VARIANTS:
codebase rank-1 / top-3 of what the tool returns, the same ungated, long prompts found among what
the gate passes, unrelated prompts answered with nothing; and LoCoMo dev (a `bench.rerank_study`
dump) recall@5 / @10 and its hard negatives. Choose on `tune` and A only.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings):
     python -m bench.rerank_study dump /tmp/locomo.pkl /work/shared/bench/locomo_dev.json
     python -m bench.fusion_study dump /tmp/cb_ours.pkl
     python -m bench.fusion_study dump /tmp/cb_a.pkl bench/data/codebase_other_a.json
     python -m bench.fusion_study eval /tmp/locomo.pkl /tmp/cb_ours.pkl /tmp/cb_a.pkl
Not part of the product path.
"""

from __future__ import annotations

import copy
import pickle
import statistics
import sys
from pathlib import Path
from typing import Any

DEPTH = 10
# (FULL, FLOOR, the gate's threshold); FULL 0 is the shipped fusion
VARIANTS = (
    (0.0, 0.0, 0.7),
    (0.3, 0.0, 0.7),
    (0.5, 0.0, 0.7),
    (0.7, 0.0, 0.7),
    (1.0, 0.0, 0.7),
    (0.5, 0.5, 0.7),
    (0.5, 0.7, 0.7),
    (0.0, 0.0, 0.75),
    (0.3, 0.0, 0.75),
    (0.5, 0.5, 0.77),
    (0.5, 0.0, 0.8),
)
KINDS = ("question", "paraphrase")


def dump(out: str, data: str | None = None) -> None:
    import django

    django.setup()
    from bench import codebase
    from memories.embedding.embedders import get_embedder
    from memories.models import Memory
    from memories.search import gates, queries
    from memories.search.asking import asks_in_general

    dev = codebase.load_set(data)
    label = Path(data).stem.removeprefix("codebase_") if data else None
    embedder = get_embedder()
    rows: list[dict[str, Any]] = []
    with codebase.throwaway("fusion-study", dev) as (project, ids):
        content = {m.pk: m.content for m in Memory.objects.filter(project_id=project)}
        for kind, text, answers, split in codebase.prompts(dev):
            spelled = queries.search_text(text)
            vec = embedder.embed([spelled], kind="query")[0]
            ranked = {c.memory_id: c for c in queries.rank(project, spelled, vec, embedder.id, [], "hybrid")}
            queries.second_look(project, text, vec, embedder.id, [], ranked)
            fused = [c.memory_id for c in queries.fuse(copy.deepcopy(ranked), "hybrid")][:DEPTH]
            near = sorted(ranked, key=lambda m: -(ranked[m].similarity or 0.0))[:DEPTH]
            judged = list(dict.fromkeys(fused + near))
            logits = gates.judged_logits(spelled, [content[m] for m in judged])  # as the gate reads it
            rows.append(
                {
                    "kind": kind,
                    "q": text,
                    "split": label or split,
                    "answers": answers,
                    "cands": ranked,
                    "logits": dict(zip(judged, logits, strict=True)),
                    "general": asks_in_general(text),
                    "names": {m: ids[m] for m in ranked if m in ids},
                }
            )
    Path(out).write_bytes(pickle.dumps(rows))
    print(f"wrote {len(rows)} prompts to {out}")


def trusted_order(cands: dict[int, Any], full: float, floor: float) -> list[int]:
    """The fused order with the keyword weight scaled by the best candidate's coverage."""
    from memories.search import queries

    best = max((c.coverage for c in cands.values()), default=0.0)
    trust = max(floor, min(1.0, best / full)) if full else 1.0
    fused = queries.fuse(copy.deepcopy(cands), "hybrid", w_keyword=queries.W_KEYWORD * trust)
    return [c.memory_id for c in fused]


def passed(row: dict[str, Any], order: list[int], threshold: float, depth: int = 3) -> list[int]:
    """What the shipped gate, at `threshold`, returns of the first `depth` (a logit the dump lacks counts
    as the lowest)."""
    from memories.search import rerank
    from memories.search.gates import JUDGED

    gate = JUDGED["local:all-MiniLM-L6-v2"]
    out = []
    for m in order[:depth]:
        c = row["cands"][m]
        logit = row["logits"].get(m, rerank.LOGIT_RANGE[0])
        if c.similarity is None or (
            c.similarity >= gate.min_cosine and gate.probability(logit, c, row["general"]) >= threshold
        ):
            out.append(m)
    return out


def codebase_scores(rows: list[dict[str, Any]], full: float, floor: float, threshold: float) -> str:
    out: dict[str, list[bool]] = {}
    for r in rows:
        order = trusted_order(r["cands"], full, floor)
        got = [r["names"].get(m, "") for m in passed(r, order, threshold)]
        ranked = [r["names"].get(m, "") for m in order]
        if r["kind"] == "long":
            out.setdefault("long", []).append(bool(set(got) & set(r["answers"])))
        elif r["answers"]:
            out.setdefault(f"{r['kind']} rank-1", []).append(bool(got) and got[0] in r["answers"])
            out.setdefault(f"{r['kind']} top-3", []).append(bool(set(got[:3]) & set(r["answers"])))
            out.setdefault(f"{r['kind']} ungated", []).append(ranked[0] in r["answers"])
            out.setdefault(f"{r['kind']} ungated top-3", []).append(bool(set(ranked[:3]) & set(r["answers"])))
        else:
            out.setdefault(f"{r['kind']} empty", []).append(not got)
    return "; ".join(f"{k} {statistics.fmean(v):.3f}" for k, v in out.items())


def evaluate(locomo: str, *sets: str) -> None:
    from yullu_cli.django_setup import setup_django

    setup_django()
    lc = pickle.loads(Path(locomo).read_bytes())
    named: dict[str, list[dict[str, Any]]] = {}
    for path in sets:
        for r in pickle.loads(Path(path).read_bytes()):
            named.setdefault(r["split"], []).append(r)
    for full, floor, threshold in VARIANTS:
        trust = f"keyword weight × max({floor}, min(1, best coverage / {full}))" if full else "fusion as shipped"
        print(f"== {trust}, gate p ≥ {threshold}")
        order = lambda cands, logits, full=full, floor=floor: trusted_order(cands, full, floor)  # noqa: E731
        print(f"  LoCoMo dev: {locomo_scores(lc, order, threshold)}")
        for split, rows in named.items():
            print(f"  {split}: {codebase_scores(rows, full, floor, threshold)}", flush=True)


def locomo_scores(lc: dict[str, Any], order: Any, threshold: float) -> str:
    """bench.rerank_study's score with the gate at `threshold`."""
    import dataclasses

    from bench import rerank_study
    from memories.search import gates

    shipped = gates.JUDGED["local:all-MiniLM-L6-v2"]
    gates.JUDGED["local:all-MiniLM-L6-v2"] = dataclasses.replace(shipped, threshold=threshold)
    try:
        return rerank_study.score(lc["rows"], lc["ids"], order)
    finally:
        gates.JUDGED["local:all-MiniLM-L6-v2"] = shipped


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        evaluate(sys.argv[2], *sys.argv[3:])
