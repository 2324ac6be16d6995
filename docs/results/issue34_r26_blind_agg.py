"""Round twenty-six's blind aggregates (round twenty-five's script, the new pair AS and AT): per set and pooled, from
reports already cut to their `all` and `pairs_scored` by issue34_r25_blind_runner.sh (no prompt or miss is in them).
Pooled shares are weighted by n.

Run: python docs/results/issue34_r26_blind_agg.py OUTDIR [OUT.json]
"""

import json
import sys
from pathlib import Path
from typing import Any

ASKED = ("question", "paraphrase", "long")
SILENT = ("unrelated", "near_miss", "long_unrelated")
NEW = ("other_as", "other_at")


def pool(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares over several sets' prompts, as if one set."""
    out: dict[str, Any] = {"pairs": sum(r["pairs_scored"] for r in reports)}
    for kind in (*ASKED, *SILENT):
        n = sum(r["all"][kind]["n"] for r in reports)
        metrics = ("rank1", "top3", "found", "empty") if kind in ASKED else ("empty",)
        out[kind] = {"n": n} | {
            m: round(sum(r["all"][kind][m] * r["all"][kind]["n"] for r in reports) / n, 3) for m in metrics
        }
    return out


def row(name: str, a: dict[str, Any]) -> str:
    q, p, lp = a["question"], a["paraphrase"], a["long"]
    cells = [
        f"{q['rank1']:.3f} / {q['top3']:.3f}",
        f"{p['rank1']:.3f} / {p['top3']:.3f} / {p['empty']:.3f}",
        f"{lp['rank1']:.3f} / {lp['top3']:.3f} / {lp['found']:.3f}",
        *(f"{a[k]['empty']:.3f}" for k in SILENT),
        str(a["pairs"]),
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    folder = Path(sys.argv[1])
    reports = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("other_*.json"))}
    if failed := [name for name, r in reports.items() if "all" not in r]:
        raise SystemExit(f"runs failed: {failed}")
    new = [r for name, r in reports.items() if name in NEW]
    old = [r for name, r in reports.items() if name not in NEW]
    table = {name.removeprefix("other_").upper(): pool([r]) for name, r in reports.items()}
    table |= {
        "AS + AT": pool(new),
        f"the {len(old)} earlier, pooled": pool(old),
        f"all {len(reports)}": pool([*old, *new]),
    }
    for name, a in table.items():
        print(row(name, a))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
