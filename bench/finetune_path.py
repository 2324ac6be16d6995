"""Developer tool: the fine-tuned all-MiniLM-L6-v2 (bench/finetune_study.py `full --save DIR`) through the
PRODUCT path: hybrid search, the calibrated gate, the prompt hook's block, exactly as `yullu bench codebase`
runs them (bench/codebase.run), with that model as the embedder (issue 34, round nine; docs/benchmarks.md
"Issue 34, round nine: the fine-tuned MiniLM through the product path (study)"). A study: the product is
not changed; the swap lives in this process only.

The swap: the embedder get_embedder() returns is replaced by one that embeds with the fine-tuned model
(sentence-transformers in torch, the same pipeline ending in Normalize) under a NEW embedder id
(`local:all-MiniLM-L6-v2-ft-study`), so no stored vector of the shipped model is mixed with its vectors
(every run stores its codebase afresh in a throwaway project). That id gets:
- the gate: the shipped JUDGED weights as they are (`--gate shipped`), or the ones in a JSON file written by
  `refit` (`--gate FILE`);
- the shipped model's duplicate thresholds (memories/write/duplicates.py), so the same facts are stored.

`run` (no --model: the shipped embedder, "before") reports per kind for each set named by --sets:
`tune` (the dev set's tune split, with codebase_tune_extra.json), `a`, `i`, `j` (codebase_other_X.json:
tuning data, all their prompts); `held` runs the HELD-OUT sets (the dev set's held_out and fresh splits,
B–H) and prints and writes their AGGREGATE only (RULES34: no item, miss or per-codebase line).

`fold --hold a,j --save DIR`: the model trained as `full` trains it but without the codebases named (the
full model trained on all four tuning codebases, so its tuning numbers are in-sample); `run --model DIR
--sets a,j` then scores them unseen.

`refit --model DIR --out W.json`: bench/calibrate.py's dump (the first stage's best 10 with their features)
of the four tuning codebases with the fine-tuned embedder, then calibrate.fit_some on all four pooled:
the cosine's and the bias's weights refitted (the `cosine+bias` family of calibrate.folds: the model moved
the cosine's scale), the others and the threshold kept. The dumps stay next to W.json for calibrate.folds.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1, a throwaway YULLU_HOME; nice):
    nice -n 10 python -m bench.finetune_path run --sets tune,a,i,j --out /tmp/before.json
    nice -n 10 python -m bench.finetune_path run --model /tmp/ft --sets tune,a,i,j --out /tmp/after.json
    nice -n 10 python -m bench.finetune_path refit --model /tmp/ft --out /tmp/refit.json
    nice -n 10 python -m bench.finetune_path run --model /tmp/ft --gate /tmp/refit.json --sets tune,a,i,j
    nice -n 10 python -m bench.finetune_path run --model /tmp/ft --sets held --out /tmp/held.json
    nice -n 10 python -m bench.finetune_path fold --hold a,j --save /tmp/ft_no_aj   # A and J unseen
    nice -n 10 python -m bench.finetune_path run --model /tmp/ft_no_aj --sets a,j
    nice -n 10 python -m bench.finetune_path locomo --model /tmp/ft --out /tmp/locomo_after.json
Not part of the product path.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
STUDY_ID = "local:all-MiniLM-L6-v2-ft-study"
SHIPPED_ID = "local:all-MiniLM-L6-v2"
TUNING = ("tune", "a", "i", "j")
HELD_OUT = ("b", "c", "d", "e", "f", "g", "h")
LOCOMO_DEV = Path("/work/shared/bench/locomo_dev.json")


class FineTuned:
    """The fine-tuned model as an Embedder (memories.embedding.embedders.Embedder): unit vectors."""

    provider = "local"

    def __init__(self, folder: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = STUDY_ID.removeprefix("local:")
        self.id = STUDY_ID
        self._st = SentenceTransformer(folder, device="cpu")

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        if not texts:
            return []
        vecs = self._st.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
        return list(np.asarray(vecs, dtype=np.float32))


def install(folder: str, gate: str) -> None:
    """Make get_embedder() return the fine-tuned model, with the gate named by `gate`."""
    from memories.embedding import embedders
    from memories.search import gates
    from memories.write import duplicates

    embedders._cache[embedders.active_spec()] = FineTuned(folder)
    judged = gates.JUDGED[SHIPPED_ID]
    if gate != "shipped":
        judged = dataclasses.replace(judged, **json.loads(Path(gate).read_text())["weights"])
    gates.JUDGED[STUDY_ID] = judged
    duplicates.MEASURED[STUDY_ID] = duplicates.MEASURED[SHIPPED_ID]


def data_path(name: str) -> str:
    return str(BENCH / "data" / f"codebase_other_{name}.json")


def tuning_run(name: str) -> dict[str, Any]:
    """Per kind on one tuning codebase: ours' tune split, or all of another's prompts."""
    from bench import codebase

    if name == "tune":
        report = codebase.run(codebase.load(extras=(codebase.TUNE_EXTRA,)))
        return {"summary": report["splits"]["tune"], "misses": report["misses"], "pairs": report["pairs_scored"]}
    report = codebase.run(codebase.load_set(data_path(name)))
    return {"summary": report["all"], "misses": report["misses"], "pairs": report["pairs_scored"]}


def held_run() -> dict[str, Any]:
    """The held-out sets pooled: counts only; nothing about an item is kept (RULES34)."""
    from bench import codebase

    parts = [codebase.run(codebase.load())["splits"][s] for s in ("held_out", "fresh")]
    parts += [codebase.run(codebase.load_set(data_path(x)))["all"] for x in HELD_OUT]
    return {"summary": pooled(parts)}


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-kind shares of several summaries (bench/codebase.summarise) pooled over their prompts."""
    out: dict[str, Any] = {}
    for kind in parts[0]:
        n = sum(p[kind]["n"] for p in parts)
        out[kind] = {"n": n}
        for metric in (m for m in parts[0][kind] if m != "n"):
            hits = sum(round(p[kind][metric] * p[kind]["n"]) for p in parts)
            out[kind][metric] = round(hits / n, 4) if n else 0.0
    return out


def line(name: str, s: dict[str, Any]) -> str:
    asked = " ".join(
        f"{k} {s[k]['rank1']:.3f}/{s[k]['top3']:.3f}" if k != "long" else f"long {s[k]['found']:.3f}"
        for k in ("question", "paraphrase", "long")
    )
    silent = " ".join(f"{k} {s[k]['empty']:.3f}" for k in ("unrelated", "near_miss", "long_unrelated"))
    return f"{name:<8} {asked} | empty: {silent}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from memories.embedding.embedders import get_embedder

    if args.model:
        install(args.model, args.gate)
    print(f"embedder {get_embedder().id}, gate {args.gate if args.model else 'shipped'}", flush=True)
    if args.sets == "held":
        result = {"held": held_run()}
        print("held out (dev held_out+fresh, B-H), aggregate: " + line("held", result["held"]["summary"]))
        return result
    result = {}
    for name in args.sets.split(","):
        result[name] = tuning_run(name)
        print(line(name, result[name]["summary"]) + f" | pairs {result[name]['pairs']}", flush=True)
    print(line("pooled", pooled([r["summary"] for r in result.values()])))
    return result


def refit(args: argparse.Namespace) -> dict[str, Any]:
    from bench import calibrate

    install(args.model, "shipped")
    folder = Path(args.out).parent
    dumps = []
    for name in TUNING:
        path = folder / f"calib_ft_{name}.json"
        if not path.exists():
            calibrate.dump(str(path), None if name == "tune" else data_path(name))
        dumps.append(str(path))
    sets = calibrate.tuning_sets(tuple(dumps))
    rows = [r for part in sets.values() for r in part]
    shipped, threshold, floor = calibrate.shipped_weights()
    w = calibrate.fit_some(rows, shipped, (1, 5), floor)  # the cosine's weight and the bias
    weights = {"w_cosine": round(float(w[1]), 3), "bias": round(float(w[5]), 3)}
    print(f"refitted on {', '.join(sets)} ({len(rows)} prompts): {weights}")
    print(f"  shipped: w_cosine {shipped[1]:.3f}, bias {shipped[5]:.3f}")
    for name, part in sets.items():
        print(f"  {name}: shipped {calibrate.counts(part, shipped, threshold, floor)}")
        print(f"  {name}: refit   {calibrate.counts(part, w, threshold, floor)}")
    return {"weights": weights, "dumps": dumps}


def fold(args: argparse.Namespace) -> dict[str, Any]:
    """The model trained as `finetune_study full` trains it (one epoch, 5e-5, batch 32, seed 0) on every
    tuning codebase but those named by --hold, saved to --save: the left-out ones are then unseen
    through the product path (`run --model`), unlike with the full model, which trained on all four."""
    from bench import finetune_study

    left_out = {name if name == "tune" else f"other_{name}" for name in args.hold.split(",")}
    sets = finetune_study.tuning_codebases()
    model = finetune_study.load_model()
    times = finetune_study.train(model, [c for n, c in sets.items() if n not in left_out], 1, 5e-5, 32, 0)
    model.save(args.save)
    return {"left_out": sorted(left_out), "trained_on": [n for n in sets if n not in left_out], "times": times}


def locomo(args: argparse.Namespace) -> dict[str, Any]:
    """`yullu bench locomo --data LOCOMO_DEV --modes hybrid` with the fine-tuned model (or, without --model,
    the shipped one): does a model tuned on codebase facts lose conversations through the product?"""
    from bench import locomo as bench_locomo

    if args.model:
        install(args.model, args.gate)
    run_args = argparse.Namespace(
        data=str(LOCOMO_DEV), limit_conversations=0, modes="hybrid", without_sessions=False, out=""
    )
    report: dict[str, Any] = bench_locomo.main(run_args)
    return report


def main() -> None:
    from yullu_cli.django_setup import setup_django

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "refit", "fold", "locomo"))
    parser.add_argument("--model", default="", help="the folder finetune_study `full --save` wrote")
    parser.add_argument("--gate", default="shipped", help="run: `shipped` or a JSON file `refit` wrote")
    parser.add_argument("--sets", default=",".join(TUNING), help="run: tuning sets (tune,a,i,j) or `held`")
    parser.add_argument("--hold", default="a,j", help="fold: the tuning codebases left out of training")
    parser.add_argument("--save", default="", help="fold: a folder for the model")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    parser.add_argument("--out", default="", help="the results as JSON")
    args = parser.parse_args()
    setup_django()
    import torch

    torch.set_num_threads(args.threads)
    result = {"run": run, "refit": refit, "fold": fold, "locomo": locomo}[args.command](args)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
