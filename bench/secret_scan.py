"""How well does the secret scanner refuse credentials and keep ordinary memories, and at what cost?

Run: .venv/bin/python -m bench.secret_scan [--seeds 3] [--show]
         [--split tune|held-out|held-out-2|held-out-3|held-out-4|held-out-5|held-out-6|held-out-7|held-out-8
                  |held-out-9|held-out-10|held-out-11|held-out-12|held-out-13|held-out-14|held-out-15|held-out-16|held-out-17|held-out-18|held-out-19|held-out-20|held-out-21|held-out-22|held-out-23|fake|review-6|review-7|review-8|review-9
                  |tune-walk8|all]

Credentials: the forms of bench/secret_forms.py (TUNE, HELD_OUT, HELD_OUT_2 … HELD_OUT_23
reported apart), each filled with `--seeds` different random values; FAKE (bench/secret_forms_fake.py: hand-typed
fake values, `ghp_abcdef…`, `password: password123`, fixed texts) with its keepers FAKE_KEEP;
HELD_OUT_2_KEEP … HELD_OUT_23_KEEP,
REVIEW_6_KEEP … REVIEW_9_KEEP and TUNE_WALK8_KEEP (memories that must be stored) are reported with them.
Ordinary: every LoCoMo turn of ../shared/bench/locomo_dev.json (chat about daily life), the codebase set's
memories, questions and prompts, the duplicate-pair memories, and secret_talk.json (memories *about*
secrets, hashes, ids).
Cost: microseconds per `find_secret` call over all texts (the store path calls it once per content
and once per tag), median and p99, on this machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench import secret_forms, secret_forms_fake
from memories.secrets import find_secret

DATA = Path(__file__).parent / "data"
LOCOMO = Path("../shared/bench/locomo_dev.json")  # beside the repository (docs: protocol)


def ordinary_texts(locomo: Path) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    if not locomo.exists():
        raise SystemExit(f"{locomo} does not exist: pass --locomo PATH to the LoCoMo dev split.")
    turns: list[str] = []
    for conv in json.loads(locomo.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(t["text"] for t in session if t.get("text"))
    sets["locomo turns"] = turns
    code = json.loads((DATA / "codebase_dev.json").read_text())
    sets["codebase set"] = (
        [m["content"] for m in code["memories"]]
        + [q["q"] for q in code["questions"]]
        + code["unrelated"]
        + code["near_miss"]
    )
    pairs = json.loads((DATA / "duplicate_pairs.json").read_text())
    sets["duplicate pairs"] = [t for key in ("same", "near_miss", "distinct") for pair in pairs[key] for t in pair]
    sets["about secrets"] = json.loads((DATA / "secret_talk.json").read_text())["memories"]
    return sets


def timed(text: str) -> tuple[str | None, float]:
    """The kind found and the CPU microseconds it took (CPU, not wall: the machine is shared)."""
    start = time.thread_time_ns()
    kind = find_secret(text)
    return kind, (time.thread_time_ns() - start) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3, help="random fillings per credential form")
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--show", action="store_true", help="print what was missed / wrongly refused")
    parser.add_argument(
        "--split",
        choices=[
            "tune",
            "held-out",
            "held-out-2",
            "held-out-3",
            "held-out-4",
            "held-out-5",
            "held-out-6",
            "held-out-7",
            "held-out-8",
            "held-out-9",
            "held-out-10",
            "held-out-11",
            "held-out-12",
            "held-out-13",
            "held-out-14",
            "held-out-15",
            "held-out-16",
            "held-out-17",
            "held-out-18",
            "held-out-19",
            "held-out-20",
            "held-out-21",
            "held-out-22",
            "held-out-23",
            "fake",
            "review-6",
            "review-7",
            "review-8",
            "review-9",
            "tune-walk8",
            "all",
        ],
        default="all",
    )
    args = parser.parse_args()
    find_secret("warm up: load the rules and the confusables table (а)")
    costs: list[float] = []

    splits = (
        ("tune", secret_forms.TUNE),
        ("held-out", secret_forms.HELD_OUT),
        ("held-out-2", secret_forms.HELD_OUT_2),
        ("held-out-3", secret_forms.HELD_OUT_3),
        ("held-out-4", secret_forms.HELD_OUT_4),
        ("held-out-5", secret_forms.HELD_OUT_5),
        ("held-out-6", secret_forms.HELD_OUT_6),
        ("held-out-7", secret_forms.HELD_OUT_7),
        ("held-out-8", secret_forms.HELD_OUT_8),
        ("held-out-9", secret_forms.HELD_OUT_9),
        ("held-out-10", secret_forms.HELD_OUT_10),
        ("held-out-11", secret_forms.HELD_OUT_11),
        ("held-out-12", secret_forms.HELD_OUT_12),
        ("held-out-13", secret_forms.HELD_OUT_13),
        ("held-out-14", secret_forms.HELD_OUT_14),
        ("held-out-15", secret_forms.HELD_OUT_15),
        ("held-out-16", secret_forms.HELD_OUT_16),
        ("held-out-17", secret_forms.HELD_OUT_17),
        ("held-out-18", secret_forms.HELD_OUT_18),
        ("held-out-19", secret_forms.HELD_OUT_19),
        ("held-out-20", secret_forms.HELD_OUT_20),
        ("held-out-21", secret_forms.HELD_OUT_21),
        ("held-out-22", secret_forms.HELD_OUT_22),
        ("held-out-23", secret_forms.HELD_OUT_23),
        ("fake", secret_forms_fake.FAKE_SECRETS),
        ("tune-walk8", secret_forms.TUNE_WALK8),
    )
    for label, forms in splits:
        if args.split not in (label, "all"):
            continue
        missed: list[tuple[str, str]] = []
        total = 0
        for seed in range(args.seeds):
            for name, text in secret_forms.texts(forms, seed=1000 + seed):
                kind, us = timed(text)
                costs.append(us)
                total += 1
                if kind is None:
                    missed.append((name, text))
        refused = total - len(missed)
        print(
            f"credentials {label:9s} {len(forms):3d} forms x {args.seeds}: refused {refused}/{total} "
            f"({100 * refused / total:.1f}%)"
        )
        if args.show:
            for name, text in missed:
                print(f"   missed [{name}] {text!r}")
    keepers = (
        ("held-out-2", secret_forms.HELD_OUT_2_KEEP),
        ("held-out-3", secret_forms.HELD_OUT_3_KEEP),
        ("held-out-4", secret_forms.HELD_OUT_4_KEEP),
        ("held-out-5", secret_forms.HELD_OUT_5_KEEP),
        ("held-out-6", secret_forms.HELD_OUT_6_KEEP),
        ("held-out-7", secret_forms.HELD_OUT_7_KEEP),
        ("held-out-8", secret_forms.HELD_OUT_8_KEEP),
        ("held-out-9", secret_forms.HELD_OUT_9_KEEP),
        ("held-out-10", secret_forms.HELD_OUT_10_KEEP),
        ("held-out-11", secret_forms.HELD_OUT_11_KEEP),
        ("held-out-12", secret_forms.HELD_OUT_12_KEEP),
        ("held-out-13", secret_forms.HELD_OUT_13_KEEP),
        ("held-out-14", secret_forms.HELD_OUT_14_KEEP),
        ("held-out-15", secret_forms.HELD_OUT_15_KEEP),
        ("held-out-16", secret_forms.HELD_OUT_16_KEEP),
        ("held-out-17", secret_forms.HELD_OUT_17_KEEP),
        ("held-out-18", secret_forms.HELD_OUT_18_KEEP),
        ("held-out-19", secret_forms.HELD_OUT_19_KEEP),
        ("held-out-20", secret_forms.HELD_OUT_20_KEEP),
        ("held-out-21", secret_forms.HELD_OUT_21_KEEP),
        ("held-out-22", secret_forms.HELD_OUT_22_KEEP),
        ("held-out-23", secret_forms.HELD_OUT_23_KEEP),
        ("fake", secret_forms_fake.FAKE_KEEP),
        ("review-6", secret_forms.REVIEW_6_KEEP),
        ("review-7", secret_forms.REVIEW_7_KEEP),
        ("review-8", secret_forms.REVIEW_8_KEEP),
        ("review-9", secret_forms.REVIEW_9_KEEP),
        ("tune-walk8", secret_forms.TUNE_WALK8_KEEP),
    )
    for label, forms in keepers:
        if args.split not in (label, "all"):
            continue
        keep = [
            (name, text) for seed in range(args.seeds) for name, text in secret_forms.texts(forms, seed=1000 + seed)
        ]
        wrongly = [(name, kind, text) for name, text in keep if (kind := timed(text)[0])]
        print(f"keepers   {label} {len(forms):3d} forms x {args.seeds}: refused {len(wrongly)}/{len(keep)}")
        if args.show:
            for name, kind, text in wrongly:
                print(f"   refused [{name}] as {kind}: {text!r}")

    all_ordinary = 0
    all_refused = 0
    for label, items in ordinary_texts(args.locomo).items():
        wrong = []
        for text in items:
            kind, us = timed(text)
            costs.append(us)
            if kind is not None:
                wrong.append((kind, text))
        all_ordinary += len(items)
        all_refused += len(wrong)
        print(
            f"ordinary {label:16s} {len(items):5d} texts: refused {len(wrong)} ({100 * len(wrong) / len(items):.2f}%)"
        )
        if args.show:
            for kind, text in wrong:
                print(f"   refused as {kind}: {text[:160]!r}")
    print(f"ordinary total {all_ordinary} texts: refused {all_refused} ({100 * all_refused / all_ordinary:.2f}%)")
    costs.sort()
    print(
        f"CPU per find_secret: median {statistics.median(costs):.0f} us, "
        f"p99 {costs[int(0.99 * (len(costs) - 1))]:.0f} us, max {costs[-1]:.0f} us over {len(costs)} texts"
    )


if __name__ == "__main__":
    main()
