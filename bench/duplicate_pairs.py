"""Where should "the same fact" start? Precision/recall of the duplicate rule on labelled pairs.

Run: DJANGO_SETTINGS_MODULE=yullu_site.settings HF_HUB_OFFLINE=1 .venv/bin/python -m bench.duplicate_pairs
     [--embedder local:all-MiniLM-L6-v2]

Positives are restatements ("same"); negatives are one-fact near-misses and distinct facts on the
same topic. Even-indexed pairs tune, odd-indexed are held out. For each threshold it prints
precision (merged pairs that were restatements) and recall (restatements merged), with the
guard of memories.write.duplicates (differing numbers/identifiers never merge) on and off. Picks the
lowest threshold with no false merge on the tuning half and reports it on the held-out half.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import django

django.setup()

import numpy as np  # noqa: E402

from memories.embedding.embedders import get_embedder  # noqa: E402
from memories.write.duplicates import same_fact_tokens, thresholds  # noqa: E402

DATA = Path(__file__).parent / "data" / "duplicate_pairs.json"
Pair = tuple[str, str, bool, float]  # a, b, is_same, cosine


def load() -> dict[str, list[list[str]]]:
    return json.loads(DATA.read_text())


def scored(pairs: list[list[str]], same: bool) -> list[Pair]:
    embedder = get_embedder()
    a = embedder.embed([p[0] for p in pairs])
    b = embedder.embed([p[1] for p in pairs])
    out = []
    for (x, y), va, vb in zip(pairs, a, b, strict=True):
        cos = float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))
        out.append((x, y, same, cos))
    return out


def same_fact(a: str, b: str) -> bool:
    """Either text stored first: the guard lets a shorter copy of a memory merge into it, not the reverse,
    and a pair counts as merged when either order merges (the stricter count for false merges)."""
    return same_fact_tokens(a, b) or same_fact_tokens(b, a)


def measure(pairs: list[Pair], threshold: float, guard: bool) -> tuple[float, float, int]:
    merged = [p for p in pairs if p[3] >= threshold and (not guard or same_fact(p[0], p[1]))]
    true = sum(1 for p in merged if p[2])
    positives = sum(1 for p in pairs if p[2])
    precision = true / len(merged) if merged else 1.0
    return precision, true / positives if positives else 0.0, len(merged) - true


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", default=None, help="override [embedding] provider:model")
    args = parser.parse_args()
    if args.embedder:
        from django.conf import settings

        provider, model = args.embedder.split(":", 1)
        settings.YULLU["embedding"] = {**settings.YULLU["embedding"], "provider": provider, "model": model}
    data = load()
    pairs = scored(data["same"], True) + scored(data["near_miss"], False) + scored(data["distinct"], False)
    halves: dict[str, list[Pair]] = {"tune": [], "held-out": []}
    for kind in ("same", "near_miss", "distinct"):
        chunk = [p for p in pairs if (p[0], p[1]) in {(x, y) for x, y in data[kind]}]
        halves["tune"] += chunk[0::2]
        halves["held-out"] += chunk[1::2]
    print(
        f"embedder {get_embedder().id}; pairs: {len(data['same'])} same, {len(data['near_miss'])} near-miss, "
        f"{len(data['distinct'])} distinct"
    )
    for kind in ("same", "near_miss", "distinct"):
        keys = {(x, y) for x, y in data[kind]}
        sims = sorted(p[3] for p in pairs if (p[0], p[1]) in keys)
        print(f"  cosine of {kind}: min {sims[0]:.3f} median {sims[len(sims) // 2]:.3f} max {sims[-1]:.3f}")
    for guard in (False, True):
        best = None
        for t in np.arange(0.70, 1.0001, 0.01):
            p, r, false = measure(halves["tune"], float(t), guard)
            if false == 0:
                best = float(t)
                break
        assert best is not None
        print(
            f"guard {'on ' if guard else 'off'}: lowest threshold with no false merge on the tuning half = {best:.2f}"
        )
        for name, part in halves.items():
            p, r, false = measure(part, best, guard)
            print(f"  {name:9s} precision {p:.3f} recall {r:.3f} false merges {false}")
        chosen = thresholds(get_embedder().id).duplicate
        for name, part in halves.items():
            p, r, false = measure(part, chosen, guard)
            print(f"  shipped threshold {chosen:.2f}, {name:9s}: precision {p:.3f} recall {r:.3f} false merges {false}")
        for t in (0.75, 0.80, 0.85, 0.90, 0.95):
            p, r, false = measure(pairs, t, guard)
            print(f"  all pairs at {t:.2f}: precision {p:.3f} recall {r:.3f} false merges {false}")


if __name__ == "__main__":
    main()
