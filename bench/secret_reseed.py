"""Other fillings of a fixed-text secret set: how many of its forms a value other than the first run's slips past.

Run: .venv/bin/python -m bench.secret_reseed [--module bench.secret_forms_18] [--fillings 40] [--show]

The sets since the seventeenth draw each text once from one seeded generator (`random.Random(<seed>)` or
`Filler(<seed>)` in the file), so `bench.secret_scan --seeds N` sends the same text N times. This runs the set's file
again with the generator seeded 5000, 5001, … (its forms and words unchanged, its random values new) and counts the
secret texts the scanner does not refuse and the keepers it refuses. A form that passes on its first values and fails
on others was passed by luck (a symbol some shape rule reads), not by the rule meant for it.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import types

from memories.secrets import find_secret

FIRST_SEED = 5000
# The set's generator: `random.Random(2222)`, or `Filler(2222)` since bench/secret_fill.py (sets 19 to 22 moved to it
# and were no longer reseeded: every filling was the first).
SEEDED = re.compile(r"(?m)^(\w+ = (?:random\.Random|Filler)\()[\d_]+\)")


def _filling(source: str, seed: int) -> types.ModuleType:
    module = types.ModuleType(f"reseeded_{seed}")
    exec(
        compile(SEEDED.sub(rf"\g<1>{seed})", source, count=1), "<set>", "exec"),
        vars(module),
    )  # noqa: S102 (our own bench file)
    return module


def _named(items: list[tuple[str, str]] | list[str]) -> list[tuple[str, str]]:
    """(name, text) pairs; a set whose list holds texts alone (sets 14, 15's keepers) is named by its texts' starts."""
    return [item if isinstance(item, tuple) else (item[:40], item) for item in items]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", default="bench.secret_forms_18")
    parser.add_argument("--fillings", type=int, default=40)
    parser.add_argument("--show", action="store_true", help="print one missed text per form")
    args = parser.parse_args()
    spec = importlib.util.find_spec(args.module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"no module {args.module}")
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()
    missed: dict[str, list[str]] = {}
    refused: dict[str, list[str]] = {}
    secrets = keepers = 0
    for i in range(args.fillings):
        module = _filling(source, FIRST_SEED + i)
        for name, text in _named(module.SECRET_TEXTS):
            secrets += 1
            if not find_secret(text):
                missed.setdefault(name, []).append(text)
        for name, text in _named(module.KEEP_TEXTS):
            keepers += 1
            if find_secret(text):
                refused.setdefault(name, []).append(text)
    print(f"{args.module}, {args.fillings} fillings: secrets stored {sum(map(len, missed.values()))} of {secrets}")
    print(f"{args.module}, {args.fillings} fillings: keepers refused {sum(map(len, refused.values()))} of {keepers}")
    if args.show:
        for label, found in (("missed", missed), ("refused", refused)):
            for name, texts in sorted(found.items(), key=lambda item: -len(item[1])):
                print(f"   {label} {len(texts)}x [{name}] {texts[0][:160]!r}")


if __name__ == "__main__":
    main()
