"""Developer tool: what the prompt hook's category hints do to the block's ORDER (walk 15).

`yullu bench codebase` counts a hook prompt as answered when the block holds a wanted memory anywhere, so
it cannot see the hints' one remaining effect since round five made them order-only: `prefer_categories`
lists the hinted categories' relevant memories first, however far behind in relevance. Walk 15's own
prompts through the installed hook put a less relevant memory first for 4 of 30 ("how do we render
templates async?": the `process` hint from "how do" put "Templates are compiled to Python source…" ahead of
"Async rendering needs Environment(enable_async=True)…", which leads without the hint).

Each set's memories go into a throwaway project (bench.codebase.throwaway); each question, paraphrase and
long prompt is asked through `build_context` with the hook's budget, once with the hook's hints
(`yullu_cli.hooks.category_hints`) and once without; a prompt counts as first when the block's first memory
answers it, as anywhere when any does.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1):
     python -m bench.hint_order bench/data/codebase_dev.json bench/data/codebase_other_*.json \
         bench/data/codebase_walk1*.json
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

KINDS = ("question", "paraphrase", "long")
MODES = ("hints", "plain")


def block_ids(project: str, text: str, ids: dict[int, str], hinted: bool) -> list[str]:
    """The set ids of the memories in the hook's block for `text`, best first."""
    from memories.search import context
    from yullu_cli.hooks import INJECT_BUDGET, category_hints

    prefer = (category_hints(text) or None) if hinted else None
    block = context.build_context(project, text, INJECT_BUDGET, prefer_categories=prefer)
    return [ids.get(pk, "") for pk in [*block["full"], *block["brief"]]]


def measure(dev: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per mode: prompts asked, answered by the first memory, answered anywhere in the block."""
    from bench import codebase

    counts = {mode: {"asked": 0, "first": 0, "anywhere": 0} for mode in MODES}
    with codebase.throwaway("hint-order", dev) as (project, ids):
        for kind, text, answers, _split in codebase.prompts(dev):
            if kind not in KINDS:
                continue
            for mode in MODES:
                got = block_ids(project, text, ids, hinted=mode == "hints")
                counts[mode]["asked"] += 1
                counts[mode]["first"] += bool(got) and got[0] in answers
                counts[mode]["anywhere"] += any(g in answers for g in got)
    return counts


def line(name: str, counts: dict[str, dict[str, int]]) -> str:
    said = (f"{m}: first {c['first']}/{c['asked']}, anywhere {c['anywhere']}/{c['asked']}" for m, c in counts.items())
    return f"{name}  " + "; ".join(said)


def main(paths: list[str]) -> dict[str, dict[str, int]]:
    import django

    django.setup()  # before bench.codebase, which imports the models
    from bench import codebase

    total = {mode: {"asked": 0, "first": 0, "anywhere": 0} for mode in MODES}
    for path in paths:
        dev = codebase.load(Path(path)) if path.endswith("codebase_dev.json") else codebase.load(Path(path), ())
        counts = measure(dev)
        for mode in MODES:
            for key, value in counts[mode].items():
                total[mode][key] += value
        print(line(Path(path).name, counts), flush=True)
    print(line("TOTAL", total))
    return total


if __name__ == "__main__":
    main(sys.argv[1:])
