"""Two runs of the blind sets side by side (round twenty-six: main against lane int8q26's int8 embedder), from the
tables issue34_r26_blind_agg.py wrote (aggregates only: no prompt, no miss). Pooled rows and every set, each kind's
shares A | B | B - A.

Run: python docs/results/issue34_r26_blind_cmp.py A.json B.json [LABEL_A LABEL_B]
"""

import json
import sys
from pathlib import Path
from typing import Any

METRICS = {
    "question": ("rank1", "top3", "empty"),
    "paraphrase": ("rank1", "top3", "empty"),
    "long": ("rank1", "top3", "found"),
    "unrelated": ("empty",),
    "near_miss": ("empty",),
    "long_unrelated": ("empty",),
}


def lines(name: str, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = [f"{name}  (pairs {a['pairs']} | {b['pairs']})"]
    for kind, metrics in METRICS.items():
        cells = [f"{m} {a[kind][m]:.3f} | {b[kind][m]:.3f} | {b[kind][m] - a[kind][m]:+.3f}" for m in metrics]
        out.append(f"  {kind:<15} n={a[kind]['n']:<4} " + "   ".join(cells))
    return out


def main() -> None:
    a, b = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    labels = sys.argv[3:5] if len(sys.argv) > 4 else ["A", "B"]
    if sorted(a) != sorted(b):
        raise SystemExit(f"different rows: {sorted(set(a) ^ set(b))}")
    pooled = [k for k in a if " " in k]
    print(f"columns: {labels[0]} | {labels[1]} | difference")
    for name in [*reversed(pooled), *(k for k in a if k not in pooled)]:
        print("\n".join(lines(name, a[name], b[name])))


if __name__ == "__main__":
    main()
