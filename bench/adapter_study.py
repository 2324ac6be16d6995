"""Developer tool: a learned linear adapter on the QUERY side of the default embedder (issue 34, round nine).

q' = normalise(W q), W initialised to the identity and kept near it (an L2 penalty on W - I), or
W = I + U Vᵀ (low rank). Stored memory vectors do not change. Trained so a prompt's answer memory
scores above the other memories of its codebase (a softmax over all of them, the codebase's other
memories being the hard negatives) and prompts with no answer (unrelated, near miss, long unrelated)
stay low: a "null" slot joins every softmax with logit scale × tau (tau learned), and a no-answer
prompt's target is that slot.

`dump DIR [SET.json ...]` embeds, with the product's own embedder and query text
(queries.search_text, kind="query"), every prompt of each training / tuning codebase and its
memories, one DIR/<name>.npz each. Without sets: our `tune` split (codebase_dev.json with
codebase_tune_extra.json: only the prompts of split `tune`; its held-out and fresh prompts are never
read), A, I, J and bench/data/train/*.json.

`loco DIR` leaves each codebase out in turn: trains on the others, scores the one left out by plain
cosine over all its memories (no gate): rank-1 / top-3 per kind (question, paraphrase, long) and the
AUC of the answer's cosine against the best cosine of the no-answer prompts (short: questions and
paraphrases against unrelated and near misses; long against long unrelated), identity against
adapter, for a grid of settings; the average over the left-out codebases chooses.

`train DIR OUT.npy [settings]` trains on every codebase in DIR and writes W (float32, 384 × 384).

Issue 34, round nine (docs/benchmarks.md): on the left-out codebases the map ranks paraphrases' answers
first more often and separates answers from unrelated prompts better (AUC), but in the product it
lowers some answers' cosines the training sets do not resemble (the issue's own deploy prompt 0.32 ->
0.19, under the gate's floor), and seven gate tests went red: not kept.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1):
     python -m bench.adapter_study dump /tmp/adapt6/vec
     python -m bench.adapter_study loco /tmp/adapt6/vec
     python -m bench.adapter_study train /tmp/adapt6/vec memories/model_data/query_adapter_minilm.npy
Not part of the product path.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
TUNING = ("codebase_other_a.json", "codebase_other_i.json", "codebase_other_j.json")
ANSWERED = ("question", "paraphrase", "long")
SILENT = ("unrelated", "near_miss", "long_unrelated")


def training_sets() -> list[Path]:
    return [DATA / name for name in TUNING] + sorted((DATA / "train").glob("*.json"))


def dump(out: str, sets: list[str]) -> None:
    import django

    django.setup()
    from django.conf import settings

    from bench import codebase
    from memories.embedding.embedders import get_embedder
    from memories.search import queries

    # The plain vectors, which the adapter is trained on (the not-landed integration, branch adapt6-integration,
    # maps query vectors unless this key is false).
    settings.YULLU["retrieval"]["query_adapter"] = False
    embedder = get_embedder()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    todo: list[tuple[str, dict[str, Any], str | None]] = []
    if not sets:
        ours = codebase.load(extras=(codebase.TUNE_EXTRA,))
        todo.append(("dev_tune", ours, "tune"))  # the held-out split is skipped unread below
        todo += [(p.stem.removeprefix("codebase_"), codebase.load_set(str(p)), None) for p in training_sets()]
    else:
        todo += [(Path(s).stem.removeprefix("codebase_"), codebase.load_set(s), None) for s in sets]
    for name, dev, split in todo:
        target = folder / f"{name}.npz"
        if target.exists():
            continue
        order = {m["id"]: i for i, m in enumerate(dev["memories"])}
        mem = np.asarray(embedder.embed([m["content"] for m in dev["memories"]]), dtype=np.float32)
        kinds, texts, answers = [], [], []
        for kind, text, ids, where in codebase.prompts(dev):
            if split is not None and where != split:
                continue
            kinds.append(kind)
            texts.append(queries.search_text(text))
            answers.append([order[a] for a in ids])
        qvec = np.asarray(embedder.embed(texts, kind="query"), dtype=np.float32)
        np.savez(
            target, mem=mem, q=qvec, kinds=np.asarray(kinds), answers=np.asarray(json.dumps(answers)), model=embedder.id
        )
        print(f"{name}: {len(mem)} memories, {len(kinds)} prompts")


@dataclass
class Codebase:
    name: str
    mem: np.ndarray  # memories × dim, unit
    q: np.ndarray  # prompts × dim, unit
    kinds: list[str]
    answers: list[list[int]]


def load(folder: str) -> list[Codebase]:
    out = []
    for path in sorted(Path(folder).glob("*.npz")):
        z = np.load(path)
        out.append(Codebase(path.stem, z["mem"], z["q"], [str(k) for k in z["kinds"]], json.loads(str(z["answers"]))))
    return out


@dataclass(frozen=True)
class Settings:
    rank: int = 0  # 0: a full W; else W = I + U Vᵀ of this rank
    l2: float = 1.0  # penalty on ‖W - I‖² (Frobenius)
    epochs: int = 200
    lr: float = 1e-3
    scale: float = 20.0  # softmax temperature on cosines
    w_silent: float = 1.0  # weight of the no-answer prompts' null-slot loss
    w_long: float = 1.0  # weight of the long prompts
    seed: int = 0


def train(sets: list[Codebase], s: Settings) -> np.ndarray:
    """W (dim × dim, float32) fitted on `sets`."""
    import torch

    torch.manual_seed(s.seed)
    torch.set_num_threads(1)  # a shared machine: one core
    dim = sets[0].q.shape[1]
    eye = torch.eye(dim)
    if s.rank:
        u = torch.nn.Parameter(torch.zeros(dim, s.rank))
        v = torch.nn.Parameter(torch.randn(dim, s.rank) * 0.01)
        params = [u, v]

        def weight() -> Any:
            return eye + u @ v.T
    else:
        delta = torch.nn.Parameter(torch.zeros(dim, dim))
        params = [delta]

        def weight() -> Any:
            return eye + delta

    tau = torch.nn.Parameter(torch.tensor(0.35))
    opt = torch.optim.Adam([*params, tau], lr=s.lr)
    # Codebases padded into one batch: a prompt's softmax spans its own codebase's memories (the padding
    # masked out) and the null slot, the last column.
    n_mem = max(len(cb.mem) for cb in sets)
    n_q = max(len(cb.q) for cb in sets)
    mem = torch.zeros(len(sets), n_mem, dim)
    q = torch.zeros(len(sets), n_q, dim)
    own = torch.zeros(len(sets), n_q, n_mem + 1, dtype=torch.bool)
    pos = torch.zeros(len(sets), n_q, n_mem + 1, dtype=torch.bool)
    wts = torch.zeros(len(sets), n_q)
    for b, cb in enumerate(sets):
        mem[b, : len(cb.mem)] = torch.from_numpy(cb.mem)
        q[b, : len(cb.q)] = torch.from_numpy(cb.q)
        own[b, : len(cb.q), : len(cb.mem)] = True
        own[b, : len(cb.q), -1] = True
        for i, (kind, ans) in enumerate(zip(cb.kinds, cb.answers, strict=True)):
            if ans:
                pos[b, i, ans] = True
                wts[b, i] = s.w_long if kind == "long" else 1.0
            else:
                pos[b, i, -1] = True  # the null slot
                wts[b, i] = s.w_silent
    flat = q.reshape(-1, dim)
    for _ in range(s.epochs):
        opt.zero_grad()
        if s.rank:
            mapped = flat + (flat @ v) @ u.T
        else:
            mapped = flat + flat @ delta.T
        qa = torch.nn.functional.normalize(mapped, dim=1).reshape(len(sets), n_q, dim)
        sims = torch.bmm(qa, mem.transpose(1, 2))
        logits = torch.cat([sims, tau.expand(len(sets), n_q, 1)], dim=2) * s.scale
        logits = logits.masked_fill(~own, -1e9)
        lse_all = torch.logsumexp(logits, dim=2)
        lse_pos = torch.logsumexp(logits.masked_fill(~pos, -1e9), dim=2)
        penalty = (u.T @ u * (v.T @ v)).sum() if s.rank else (delta**2).sum()  # ‖W - I‖²
        loss = ((lse_all - lse_pos) * wts).sum() / wts.sum() + s.l2 * penalty
        loss.backward()
        opt.step()
    return weight().detach().numpy().astype(np.float32)


def apply(w: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    if w is None:
        return q
    out = q @ w.T
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def score(cb: Codebase, w: np.ndarray | None) -> dict[str, float]:
    sims = apply(w, cb.q) @ cb.mem.T
    out: dict[str, float] = {}
    best: dict[str, list[float]] = {"short": [], "long": []}  # answers' cosines
    silent: dict[str, list[float]] = {"short": [], "long": []}  # no-answer prompts' best cosines
    for kind in ANSWERED:
        rows = [i for i, k in enumerate(cb.kinds) if k == kind]
        if not rows:
            continue
        order = np.argsort(-sims[rows], axis=1)
        out[f"{kind}_r1"] = statistics.fmean(order[j, 0] in cb.answers[i] for j, i in enumerate(rows))
        out[f"{kind}_t3"] = statistics.fmean(bool(set(order[j, :3]) & set(cb.answers[i])) for j, i in enumerate(rows))
        for i in rows:
            best["long" if kind == "long" else "short"].append(float(sims[i, cb.answers[i]].max()))
    for i, kind in enumerate(cb.kinds):
        if kind in SILENT:
            silent["long" if kind == "long_unrelated" else "short"].append(float(sims[i].max()))
    para = [float(sims[i, cb.answers[i]].max()) for i, k in enumerate(cb.kinds) if k == "paraphrase"]
    out["auc_short"] = auc(best["short"], silent["short"])
    out["auc_para"] = auc(para, silent["short"])
    out["auc_long"] = auc(best["long"], silent["long"])
    return out


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for r in rows for k in r})
    return {k: float(np.nanmean([r[k] for r in rows if k in r])) for k in keys}


COLUMNS = ("question_r1", "question_t3", "paraphrase_r1", "paraphrase_t3", "long_r1", "long_t3")
AUCS = ("auc_short", "auc_para", "auc_long")


def line(label: str, m: dict[str, float]) -> str:
    return f"{label:<60} " + " ".join(f"{m.get(k, float('nan')):.3f}" for k in (*COLUMNS, *AUCS))


def header() -> str:
    names = (k.replace("question", "q").replace("paraphrase", "para")[:5] for k in (*COLUMNS, *AUCS))
    return f"{'':<60} " + " ".join(names)


def loco(
    sets: list[Codebase], s: Settings, groups: int = 0
) -> tuple[dict[str, float], dict[str, float], list[tuple[str, Any, Any]]]:
    """Each codebase scored by an adapter trained without it: left out alone, or (`groups` > 0, for a
    quicker grid) with the others of its group, codebase n being in group n % groups."""
    before, after, per = [], [], []
    folds = groups or len(sets)
    for g in range(folds):
        out = [n for n in range(len(sets)) if n % folds == g]
        w = train([cb for n, cb in enumerate(sets) if n not in out], s)
        for n in out:
            b, a = score(sets[n], None), score(sets[n], w)
            before.append(b)
            after.append(a)
            per.append((sets[n].name, b, a))
    return mean(before), mean(after), per


GRID = {
    "rank": (0, 16),
    "l2": (0.1, 1.0),
    "epochs": (100, 300),
    "w_silent": (0.5, 1.0),
}


def loco_grid(
    folder: str, grid: dict[str, tuple[Any, ...]] | None = None, verbose: bool = False, groups: int = 0
) -> None:
    sets = load(folder)
    print("codebases:", ", ".join(f"{c.name} ({len(c.mem)}/{len(c.kinds)})" for c in sets))
    grid = grid or GRID
    print(header())
    shown = False
    for values in itertools.product(*grid.values()):
        s = replace(Settings(), **dict(zip(grid, values, strict=True)))
        b, a, per = loco(sets, s, groups)
        if not shown:
            print(line("identity (LOCO mean)", b))
            shown = True
        label = " ".join(f"{k}={v}" for k, v in zip(grid, values, strict=True))
        print(line(label, a), flush=True)
        if verbose:
            for name, pb, pa in per:
                print(line(f"   {name} before", pb))
                print(line(f"   {name} after", pa))


def parse(args: list[str]) -> Settings:
    fields = {k: type(getattr(Settings(), k)) for k in Settings.__dataclass_fields__}
    given = dict(a.split("=", 1) for a in args)
    return Settings(**{k: fields[k](v) for k, v in given.items()})


def main() -> None:
    cmd, *args = sys.argv[1:]
    if cmd == "dump":
        dump(args[0], args[1:])
    elif cmd == "loco":
        if len(args) > 1:  # one setting, its per-codebase lines
            s = parse(args[1:])
            loco_grid(args[0], {k: (getattr(s, k),) for k in Settings.__dataclass_fields__}, verbose=True)
        else:
            loco_grid(args[0])
    elif cmd == "train":
        s = parse(args[2:])
        w = train(load(args[0]), s)
        np.save(args[1], w)
        print(f"wrote {args[1]} ({w.shape}, ‖W - I‖ = {np.linalg.norm(w - np.eye(len(w))):.3f}) with {s}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
