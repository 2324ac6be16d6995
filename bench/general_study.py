"""Developer tool: the general-question cue and the clauses' cosine for long prompts (issue 34, round twelve).

`dump OUT.json [DATA]` records every long and long unrelated prompt of a codebase set (DATA, or our `tune`
split) with the first stage's best 3 as the gate reads them (cosine, coverage, the best clause's logit) and,
for a prompt read by its clauses, each candidate's best cosine to one of the clauses.
`replay 'GLOB'` replays the shipped gate over the dumps (the prompts of the sets' own `tune` split, or all of a
set without splits) and variants: the general cue's weight for a prompt read by its clauses (-6), the gate's
cosine as the best of the whole prompt's and the clauses' (`max`), or their mean when higher (`avg`).

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, YULLU_HOME set):
    python -m bench.general_study dump /tmp/gs_a.json bench/data/codebase_other_a.json
    python -m bench.general_study replay '/tmp/gs_*.json'
Not part of the product path.
"""

from __future__ import annotations

import glob
import json
import math
import os
import sys
from typing import Any

import numpy as np

KINDS = ("long", "long_unrelated")
VARIANTS: tuple[tuple[str, float | None], ...] = (("base", None), ("max", None), ("avg", None), ("base", -6.0))


def dump(out: str, data: str = "") -> None:
    import django

    django.setup()
    from bench import codebase
    from memories.embedding.embedders import get_embedder
    from memories.models import Memory
    from memories.search import gates, queries, rerank
    from memories.search.focus import focus

    dev = codebase.load_set(data) if data else codebase.load(extras=(codebase.TUNE_EXTRA,))
    embedder = get_embedder()
    rows: list[dict[str, Any]] = []
    with codebase.throwaway("general", dev) as (project, ids):
        content = {m.pk: m.content for m in Memory.objects.filter(project_id=project)}
        vectors = dict(zip(content, embedder.embed(list(content.values())), strict=True))
        for kind, text, answers, split in codebase.prompts(dev):
            if kind not in KINDS or (not data and split != "tune"):
                continue
            words = queries.search_text(text)
            vec = embedder.embed([words], kind="query")[0]
            found = queries._ranked(project, text, 5, None, 0.0, "hybrid", queries.Embedded(embedder, vec))
            cands = found.ordered[:3] if found else []
            logits = gates.judged_logits(words, [content[c.memory_id] for c in cands]) if cands else []
            parts = rerank.clauses(queries.search_text(focus(text)))
            parts_v = embedder.embed(parts, kind="query") if parts else []
            rows.append(
                {
                    "kind": kind,
                    "q": text,
                    "split": split,
                    "answers": answers,
                    "nclauses": len(parts),
                    "cands": [
                        {
                            "id": ids[c.memory_id],
                            "cosine": c.similarity,
                            "coverage": c.coverage,
                            "best": logit,
                            "clause_cos": max((float(np.dot(v, vectors[c.memory_id])) for v in parts_v), default=None),
                        }
                        for c, logit in zip(cands, logits, strict=True)
                    ],
                }
            )
    with open(out, "w") as fh:
        json.dump({"rows": rows}, fh)
    print(f"wrote {len(rows)} prompts to {out}")


def _passed(row: dict[str, Any], variant: str, w_clauses: float | None) -> list[str]:
    from memories.search import asking
    from memories.search.focus import focus
    from memories.search.gates import JUDGED

    gate = JUDGED["local:all-MiniLM-L6-v2"]
    by_clause = row["nclauses"] > 0
    general = asking.asks_in_general(focus(row["q"]))
    w_general = w_clauses if by_clause and w_clauses is not None else gate.w_general
    floor = gate.clause_min_cosine if by_clause else gate.min_cosine
    got = []
    for c in row["cands"]:
        cosine = c["cosine"]
        if by_clause and c["clause_cos"] is not None and variant != "base":
            cosine = max(cosine, c["clause_cos"] if variant == "max" else (cosine + c["clause_cos"]) / 2)
        if c["cosine"] < floor:
            continue
        z = gate.w_logit * c["best"] + gate.w_cosine * cosine + gate.w_coverage * c["coverage"] + gate.bias
        if 1.0 / (1.0 + math.exp(-(z + w_general * general))) >= gate.threshold:
            got.append(c["id"])
    return got


def _score(rows: list[dict[str, Any]], variant: str, w_clauses: float | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for row in rows:
        if row["split"] in ("held_out", "fresh"):
            continue
        got = _passed(row, variant, w_clauses)
        right = bool(set(got) & set(row["answers"])) if row["answers"] else not got
        tally = out.setdefault(row["kind"], [0, 0])
        tally[0] += 1
        tally[1] += right
    return out


def replay(pattern: str) -> None:
    import django

    django.setup()
    files = sorted(glob.glob(pattern))
    dumps = {}
    for f in files:
        with open(f) as fh:
            dumps[os.path.basename(f)] = json.load(fh)["rows"]
    for variant, w_clauses in VARIANTS:
        total: dict[str, list[int]] = {}
        per = []
        for name, rows in dumps.items():
            got, base = _score(rows, variant, w_clauses), _score(rows, "base", None)
            for kind, (n, right) in got.items():
                t = total.setdefault(kind, [0, 0])
                t[0] += n
                t[1] += right
            gained = got["long"][1] - base["long"][1]
            lost = got["long_unrelated"][1] - base["long_unrelated"][1]
            per.append(f"{name}:{gained:+d}/{lost:+d}")
        shares = {k: f"{r}/{n} = {r / n:.3f}" for k, (n, r) in total.items()}
        print(variant, w_clauses, shares, " ".join(per))


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(*sys.argv[2:4])
    else:
        replay(sys.argv[2])
