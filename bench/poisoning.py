"""How well does the poisoning hold (memories/write/poisoning.py) tell instructions aimed at the assistant
from a team's ordinary imperative conventions?

Run: .venv/bin/python -m bench.poisoning [--locomo ../shared/bench/locomo_dev.json] [--show]

Labelled set: bench/data/poisoning.json ('poisoned' must be held, 'conventions' must not),
plus each poisoned text's first sentence hidden in Unicode tag characters after an innocent one
(must be held). Ordinary texts (must not be held): the secret benchmark's ordinary sets (LoCoMo turns,
the codebase set, the duplicate pairs, memories about secrets).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.secret_scan import LOCOMO, ordinary_texts
from memories.write.poisoning import hold_reason

DATA = Path(__file__).parent / "data" / "poisoning.json"


def tag_hidden(text: str) -> str:
    """`text` spelled in invisible Unicode tag characters after a harmless visible sentence."""
    return "Use tabs in Makefiles." + "".join(chr(0xE0000 + ord(c)) for c in text if ord(c) < 0x80)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--show", action="store_true", help="print the texts classified wrongly")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    sets = {
        "poisoned (held?)": (data["poisoned"], True),
        "tag-hidden (held?)": ([tag_hidden(t) for t in data["poisoned"]], True),
        "conventions (kept?)": (data["conventions"], False),
        "held-out poisoned (held?)": (data["held_out_poisoned"], True),
        "held-out conventions (kept?)": (data["held_out_conventions"], False),
        **{f"ordinary: {k} (kept?)": (v, False) for k, v in ordinary_texts(args.locomo).items()},
    }
    for label, (texts, poisoned) in sets.items():
        wrong = [(t, hold_reason(t)) for t in texts if bool(hold_reason(t)) != poisoned]
        right = len(texts) - len(wrong)
        print(f"{label:36s} {right}/{len(texts)} right ({100 * right / len(texts):.1f}%)")
        if args.show:
            for text, reason in wrong:
                print(f"   {'missed' if poisoned else 'held: ' + reason}: {text[:150]!r}")


if __name__ == "__main__":
    main()
