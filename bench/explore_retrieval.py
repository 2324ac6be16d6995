"""Developer tool: score retrieval variants on LoCoMo dev (tune / held-out questions) and the
codebase dev set through the product's own `queries.search`, with the corpora ingested once.

    python -m bench.explore_retrieval ingest [LOCOMO_PATH]   # once: LoCoMo + codebase projects, kept
    python -m bench.explore_retrieval run NAME [KEY=VALUE …]  # a variant: module settings of memories.search.queries
    python -m bench.explore_retrieval drop                   # delete the kept projects

A variant is a set of `memories.search.queries` module settings (e.g. `W_DATE=0.1`). Every third
question of each LoCoMo conversation is held out (as in the codebase set); tune on `tune`, check
`held_out` and the codebase set do not regress. LoCoMo is asked like `yullu bench locomo`'s hybrid
mode (limit 10, gate off); the codebase set like `yullu bench codebase` (limit 5, calibrated gate).
Not part of the product path.
"""

from __future__ import annotations

import json
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from yullu_cli.django_setup import setup_django

setup_django()  # migrates; stops an embedded PostgreSQL it started when the run ends

from bench import codebase  # noqa: E402
from bench.locomo import CATEGORIES, ingest, metrics, questions  # noqa: E402
from memories.embedding.embedders import get_embedder  # noqa: E402
from memories.models import Memory, MemoryEvent  # noqa: E402
from memories.search import bm25, queries  # noqa: E402

PREFIX = "explore-retrieval"
CACHE = Path(__file__).resolve().parents[1] / ".explore-retrieval.pkl"  # the repository root
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"


def do_ingest(path: str | None) -> None:
    embedder = get_embedder()
    convs = json.loads(Path(path or LOCOMO).read_text())
    state: dict[str, Any] = {"locomo": [], "codebase": None}
    for conv in convs:
        project, ids, secs, n = ingest(PREFIX, conv)
        qs = questions(conv, set(ids.values()))
        vecs = embedder.embed([q["question"] for q in qs], kind="query")
        state["locomo"].append({"project": project, "ids": ids, "qs": qs, "vecs": vecs})
        print(f"{conv['sample_id']}: {n} turns in {secs:.0f}s, {len(qs)} questions", flush=True)
    dev = codebase.load()
    project, ids = codebase.ingest(PREFIX, dev)
    prompts = list(codebase.prompts(dev))
    vecs = embedder.embed([p[1] for p in prompts], kind="query")
    state["codebase"] = {"project": project, "ids": ids, "prompts": prompts, "vecs": vecs}
    CACHE.write_bytes(pickle.dumps(state))
    print(f"wrote {CACHE}")


def run_locomo(state: dict[str, Any], embedder: Any) -> dict[str, Any]:
    rows, lat = [], []
    for conv in state["locomo"]:
        for i, (q, vec) in enumerate(zip(conv["qs"], conv["vecs"], strict=True)):
            started = time.perf_counter()
            found = queries.search(
                conv["project"],
                q["question"],
                limit=10,
                min_similarity=0.0,
                log=False,
                embedded=queries.Embedded(embedder, vec),
            )
            lat.append((time.perf_counter() - started) * 1000)
            ranked = [conv["ids"].get(h["id"], "") for h in found.results]
            rows.append(
                {"split": "held_out" if i % 3 == 2 else "tune", "cat": q["category"], **metrics(ranked, q["gold"])}
            )
    out: dict[str, Any] = {"p50_ms": round(statistics.median(lat), 1)}
    for split in ("tune", "held_out"):
        part = [r for r in rows if r["split"] == split]
        out[split] = {k: round(statistics.fmean(r[k] for r in part), 4) for k in ("recall@5", "recall@10")}
        out[split]["n"] = len(part)
    out["per_category_r10"] = {
        name: round(statistics.fmean(r["recall@10"] for r in rows if r["cat"] == cat), 3)
        for cat, name in CATEGORIES.items()
    }
    return out


def run_codebase(state: dict[str, Any], embedder: Any) -> dict[str, Any]:
    cb = state["codebase"]
    rows = []
    for (kind, text, answers, split), vec in zip(cb["prompts"], cb["vecs"], strict=True):
        found = queries.search(cb["project"], text, limit=5, log=False, embedded=queries.Embedded(embedder, vec))
        got = [cb["ids"].get(h["id"], "") for h in found.results]
        rows.append({"kind": kind, "q": text, "split": split, "answers": answers, "got": got})
    return {s: codebase.summarise([r for r in rows if r["split"] == s]) for s in codebase.SPLITS}


def do_run(name: str, settings: list[str]) -> None:
    for setting in settings:
        key, value = setting.split("=", 1)
        module = bm25 if key.startswith("bm25.") else queries
        key = key.removeprefix("bm25.")
        if not hasattr(module, key):
            raise SystemExit(f"{module.__name__} has no {key}")
        setattr(module, key, type(getattr(module, key))(json.loads(value)))
    state = pickle.loads(CACHE.read_bytes())
    embedder = get_embedder()
    lo = run_locomo(state, embedder)
    cb = run_codebase(state, embedder)
    t, h = lo["tune"], lo["held_out"]
    ct, ch = cb["tune"], cb["held_out"]
    line = (
        f"| {name} | {t['recall@5']:.3f} / {t['recall@10']:.3f} | {h['recall@5']:.3f} / {h['recall@10']:.3f} | "
        f"{ct['question']['rank1']:.3f}/{ct['question']['top3']:.3f} · "
        f"{ch['question']['rank1']:.3f}/{ch['question']['top3']:.3f} | "
        f"{ct['unrelated']['empty']:.0%}/{ch['unrelated']['empty']:.0%} | {lo['p50_ms']} |"
    )
    print(line)
    print("  per category R@10:", lo["per_category_r10"], flush=True)
    with (CACHE.parent / ".explore-retrieval.log").open("a") as f:
        f.write(json.dumps({"name": name, "settings": settings, "locomo": lo, "codebase": cb}) + "\n")


def drop() -> None:
    Memory.objects.filter(project_id__startswith=PREFIX + "/").delete()
    MemoryEvent.objects.filter(project_id__startswith=PREFIX + "/").delete()
    CACHE.unlink(missing_ok=True)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "ingest":
        do_ingest(sys.argv[2] if len(sys.argv) > 2 else None)
    elif command == "run":
        do_run(sys.argv[2], sys.argv[3:])
    elif command == "drop":
        drop()
