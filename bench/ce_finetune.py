"""Developer tool: fine-tune the relevance judge (the cross-encoder of memories/search/rerank.py) on
our codebase sets, leave-one-codebase-out (issue 34, round nine, docs/benchmarks.md).

The shipped model is an int8 ONNX export (MatMulInteger + DynamicQuantizeLinear): there are no
float weights to train. `rebuild` recovers them: each quantised matrix is dequantised
((value - zero point) x scale, the scale and zero point being the initialisers beside its
MatMulInteger / Gather node) into a transformers BertForSequenceClassification, and the biases,
LayerNorms and the classifier bias are the float initialisers of the same names. `verify` compares
the rebuilt model's logits with the ONNX model's on real (question, memory) pairs of the tuning data.

`pairs` writes the training pairs of each codebase: (prompt as the gate reads it, memory) labelled 1
for the answer and 0 for the codebase's other memories among the prompt's MiniLM-cosine top 10
(hard negatives) and for a no-answer prompt's top candidates. A long prompt is read as the gate
reads it (rerank.clauses: the clause closest to the memory by cosine, the one the gate's max over
clauses most likely picks); the thesaurus hint is appended as gates.judged_logits appends it.

`loco` trains on all codebases but one (the pairs of the 12 training codebases, bench/data/train/,
and of the other tuning codebases) and replays the gate on the left-out codebase's calibrate dump
(bench/calibrate.py dump) rescored by the new model (the gate's best-clause logit with its hint,
and the entity feature's masked logit, for the best 3): the shipped weights with the new logit,
and refitted on the other tuning codebases' dumps rescored by the same model (in-sample for the
model: it trained on them). Only the top FROZEN.. layers, the pooler and the classifier are trained:
the bottom is the shipped int8 model, run once per pair and cached (Split); a full fine-tune cost
~2 s of CPU per batch of 16 here. `save:DIR` writes the left-out codebase's rescored dump (oof_NAME.json).
`oof NAME=PATH ...` refits the gate on such out-of-fold dumps (fit on the others, score each).

`train` trains on every codebase and writes the shipped graph with the trained top's initialisers
replaced (`export`: the bottom stays bit-identical), then compares the int8 file with the float top.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings, HF_HUB_OFFLINE=1; docs/benchmarks.md round nine):
     python -m bench.ce_finetune rebuild /tmp/ce6/base
     python -m bench.ce_finetune verify /tmp/ce6/base
     python -m bench.ce_finetune pairs /tmp/ce6/pairs
     python -m bench.ce_finetune loco /tmp/ce6/base /tmp/ce6/pairs tune=/tmp/calib.json a=/tmp/calib_a.json \
         i=/tmp/calib_i.json j=/tmp/calib_j.json epochs:1 lr:5e-5 ratio:2 depth:5 [folds:a,tune] [save:DIR]
     python -m bench.ce_finetune oof tune=DIR/oof_tune.json a=DIR/oof_a.json
     python -m bench.ce_finetune train /tmp/ce6/base /tmp/ce6/pairs OUTDIR
Not part of the product path.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ONNX_DIR = Path(__file__).resolve().parent.parent / "memories" / "model_data" / "ms-marco-MiniLM-L-12-v2"
DATA = Path(__file__).resolve().parent / "data"
TRAIN_DIR = DATA / "train"  # the 12 codebases written for training (round nine)
# The tuning codebases (RULES6.md): ours' tune split, A, I, J; their dumps are the LOCO folds.
TUNING = {
    "tune": None,
    "a": DATA / "codebase_other_a.json",
    "i": DATA / "codebase_other_i.json",
    "j": DATA / "codebase_other_j.json",
}
MAX_LENGTH = 128
TOP = 10  # hard negatives: the codebase's other memories among the prompt's cosine top TOP
SEED = 34


def config() -> Any:
    from transformers import BertConfig

    shape: dict[str, Any] = {"num_labels": 1}  # one logit, as the shipped model's classifier
    return BertConfig(
        **shape,
        vocab_size=30522,
        hidden_size=384,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=512,
        type_vocab_size=2,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
    )


def dequantised(path: Path) -> dict[str, np.ndarray]:
    """The float state dict of the int8 ONNX model, in transformers' parameter names."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}

    def deq(base: str) -> np.ndarray:
        q, scale, zero = init[base + "_quantized"], init[base + "_scale"], init[base + "_zero_point"]
        return ((q.astype(np.float32) - zero.astype(np.float32)) * scale).astype(np.float32)

    state = {
        k: v
        for k, v in init.items()
        if v.dtype == np.float32 and v.ndim >= 1 and k.startswith(("bert.", "classifier."))
    }
    state = {k: v for k, v in state.items() if not k.endswith("_scale")}
    for emb in ("word", "position", "token_type"):
        state[f"bert.embeddings.{emb}_embeddings.weight"] = deq(f"bert.embeddings.{emb}_embeddings.weight")
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        base = node.input[1].removesuffix("_quantized")
        # "/bert/encoder/layer.0/attention/self/query/MatMul_quant" -> bert.encoder.layer.0.attention.self.query
        module = ".".join(node.name.strip("/").split("/")[:-1])
        # ONNX multiplies x @ W (in, out); torch's Linear keeps W as (out, in)
        state[f"{module}.weight"] = deq(base).T.copy()
    return state


def rebuild(out: str) -> None:
    import torch
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification(config())
    state = {k: torch.from_numpy(v) for k, v in dequantised(ONNX_DIR / "model.onnx").items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    print(f"loaded {len(state)} tensors; missing {missing}; unexpected {unexpected}")
    if missing or unexpected:
        raise SystemExit("the ONNX graph does not map onto BertForSequenceClassification")
    model.save_pretrained(out)
    print(f"wrote {out}")


class Torch:
    """A transformers cross-encoder scored like rerank.CrossEncoder (the shipped tokenizer.json,
    longest-first truncation)."""

    def __init__(self, directory: str | Path, max_tokens: int = 160) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import BertForSequenceClassification

        self.torch = torch
        self.model = BertForSequenceClassification.from_pretrained(str(directory))
        self.model.eval()
        self.tokenizer = Tokenizer.from_file(str(ONNX_DIR / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens, strategy="longest_first")
        self.tokenizer.no_padding()

    def batch(self, pairs: list[tuple[str, str]]) -> dict[str, Any]:
        from memories.search import rerank

        feeds = rerank.padded(self.tokenizer.encode_batch(pairs))
        return {name: self.torch.from_numpy(array) for name, array in feeds.items()}

    def logits(self, pairs: list[tuple[str, str]], size: int = 16) -> np.ndarray:
        self.model.eval()
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.zeros(len(pairs), dtype=np.float32)
        with self.torch.no_grad():
            for start in range(0, len(order), size):
                rows = order[start : start + size]
                out[rows] = self.model(**self.batch([pairs[i] for i in rows])).logits[:, 0].numpy()
        return out


def tuning_pairs(n: int = 200) -> list[tuple[str, str]]:
    """`n` real (question, memory) pairs of the tuning codebases: each answered prompt with its answer
    and with another memory of its codebase."""
    rng = random.Random(SEED)
    pairs = []
    for name, path in TUNING.items():
        data = load(name, path)
        mems = {m["id"]: m["content"] for m in data["memories"]}
        for _kind, q, answers in data["prompts"]:
            if answers:
                pairs.append((q, mems[answers[0]]))
            pairs.append((q, mems[rng.choice(sorted(mems))]))
    rng.shuffle(pairs)
    return pairs[:n]


def verify(directory: str) -> None:
    """The rebuilt float model, and the int8 bottom + float top (Split), against the shipped ONNX."""
    from memories.search import rerank

    pairs = tuning_pairs()
    onnx = rerank.CrossEncoder(ONNX_DIR, max_tokens=MAX_LENGTH).logits(pairs)
    for label, model in (("rebuilt", Torch(directory, max_tokens=MAX_LENGTH)), ("split", Split(directory))):
        rebuilt = model.logits(pairs)
        r = float(np.corrcoef(onnx, rebuilt)[0, 1])
        diff = np.abs(onnx - rebuilt)
        print(
            f"{label}, {len(pairs)} pairs: Pearson {r:.4f}, max |diff| {diff.max():.3f}, mean |diff| {diff.mean():.3f}"
        )
        print(f"  onnx range {onnx.min():.2f}..{onnx.max():.2f}, {label} {rebuilt.min():.2f}..{rebuilt.max():.2f}")


def load(name: str, path: Path | None) -> dict[str, Any]:
    """A codebase's memories and prompts [(kind, text, answers)]: for ours only its `tune` split, and
    only the memories that split's questions are about (held-out memories stay unread)."""
    from bench import codebase

    data = codebase.load_set(str(path) if path else None)
    prompts = [(k, t, a, s) for k, t, a, s in codebase.prompts(data)]
    if path is None:
        order = {m["id"]: i for i, m in enumerate(data["memories"])}
        memories = [m for m in data["memories"] if codebase.split_of(order[m["id"]]) == "tune"]
        keep = {m["id"] for m in memories}
        prompts = [p for p in prompts if p[3] == "tune" and all(a in keep for a in p[2])]
        data = {**data, "memories": memories}
    return {"memories": data["memories"], "prompts": [(k, t, a) for k, t, a, _ in prompts]}


def codebases() -> dict[str, dict[str, Any]]:
    out = {name: load(name, path) for name, path in TUNING.items()}
    for path in sorted(TRAIN_DIR.glob("codebase_train_t*.json")):
        out[path.stem.removeprefix("codebase_train_")] = load(path.stem, path)
    return out


def gate_text(
    query: str, memory: str, words: set[str], clause_vecs: list[tuple[str, np.ndarray]], mvec: np.ndarray
) -> str:
    """The prompt side of the pair as gates.judged_logits builds it: the clause (of a long prompt) closest
    to the memory, with the thesaurus words the memory holds appended."""
    from memories.search import synonyms

    text = max(clause_vecs, key=lambda cv: float(cv[1] @ mvec))[0] if clause_vecs else query
    hint = synonyms.hint(words, memory) if words else ""
    return f"{text} ({hint})" if hint else text


def pairs(out: str, negatives: int = TOP) -> None:
    """Per codebase, the labelled pairs (json lines of [prompt, memory, label, kind])."""
    import django

    django.setup()
    from memories.embedding.embedders import get_embedder
    from memories.search import bm25, queries, rerank, synonyms

    embedder = get_embedder()
    Path(out).mkdir(parents=True, exist_ok=True)
    for name, data in codebases().items():
        mems = [m["content"] for m in data["memories"]]
        ids = [m["id"] for m in data["memories"]]
        mvecs = np.asarray(embedder.embed(mems, kind="document"), dtype=np.float32)
        rows = []
        for kind, text, answers in data["prompts"]:
            query = queries.search_text(text)
            qvec = np.asarray(embedder.embed([query], kind="query")[0], dtype=np.float32)
            parts = rerank.clauses(query)
            clause_vecs = (
                list(zip(parts, np.asarray(embedder.embed(parts, kind="query"), dtype=np.float32), strict=True))
                if parts
                else []
            )
            words = synonyms.words_for(set(bm25.query_lexemes(query)))
            order = np.argsort(-(mvecs @ qvec))[:negatives]
            chosen = {int(i) for i in order} | {ids.index(a) for a in answers}
            for i in sorted(chosen, key=lambda i: -float(mvecs[i] @ qvec)):
                label = int(ids[i] in answers)
                rank = int(np.where(order == i)[0][0]) + 1 if i in order else negatives + 1
                rows.append([gate_text(query, mems[i], words, clause_vecs, mvecs[i]), mems[i], label, kind, rank])
        with open(Path(out) / f"{name}.json", "w") as fh:
            json.dump(rows, fh)
        print(f"{name}: {len(rows)} pairs, {sum(r[2] for r in rows)} positive")


FROZEN = 10  # the bottom layers, run by the shipped int8 ONNX model; the top ones are trained


class Split:
    """The shipped int8 ONNX model up to layer FROZEN (its hidden states, one array per pair) and the
    rebuilt float model's top layers, pooler and classifier on them: the bottom is computed once per
    pair and cached, so training costs the top layers only (2 cores shared: a full fine-tune ran
    ~2 s of CPU per batch of 16)."""

    def __init__(self, base: str | Path) -> None:
        import onnx
        import onnxruntime as ort
        import torch
        from tokenizers import Tokenizer
        from transformers import BertForSequenceClassification

        self.torch = torch
        graph = onnx.load(str(ONNX_DIR / "model.onnx"))
        name = f"/bert/encoder/layer.{FROZEN - 1}/output/LayerNorm/Add_1_output_0"
        graph.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(graph.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self.hidden_name = name
        self.tokenizer = Tokenizer.from_file(str(ONNX_DIR / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_LENGTH, strategy="longest_first")
        self.tokenizer.no_padding()
        self.net = BertForSequenceClassification.from_pretrained(str(base), attn_implementation="eager")
        self.net.eval()
        self.cache: dict[tuple[str, str], np.ndarray] = {}

    def bottom(self, pairs: list[tuple[str, str]]) -> list[np.ndarray]:
        """Each pair's hidden states after layer FROZEN (int8 ONNX), cached."""
        from memories.search import rerank

        todo = sorted({p for p in pairs if p not in self.cache}, key=lambda p: len(p[0]) + len(p[1]))
        for start in range(0, len(todo), 16):
            chunk = todo[start : start + 16]
            encodings = self.tokenizer.encode_batch(chunk)
            feeds = rerank.padded(encodings)
            hidden = self.session.run([self.hidden_name], feeds)[0]
            for row, (pair, enc) in enumerate(zip(chunk, encodings, strict=True)):
                self.cache[pair] = hidden[row, : len(enc.ids)].astype(np.float16)
        return [self.cache[p] for p in pairs]

    def top(self, hidden: list[np.ndarray]) -> Any:
        """The logits (a tensor) of the top layers on a batch of cached hidden states."""
        torch = self.torch
        width = max(len(h) for h in hidden)
        x = torch.zeros((len(hidden), width, 384))
        mask = torch.zeros((len(hidden), width))
        for row, h in enumerate(hidden):
            x[row, : len(h)] = torch.from_numpy(h.astype(np.float32))
            mask[row, : len(h)] = 1.0
        ext = (1.0 - mask)[:, None, None, :] * -1e4
        for layer in self.net.bert.encoder.layer[FROZEN:]:
            out = layer(x, attention_mask=ext)
            x = out[0] if isinstance(out, tuple) else out
        pooler: Any = self.net.bert.pooler
        dropout: Any = self.net.dropout
        return self.net.classifier(dropout(pooler(x)))[:, 0]

    def logits(self, pairs: list[tuple[str, str]], size: int = 32) -> np.ndarray:
        hidden = self.bottom(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(hidden[i]))
        out = np.zeros(len(pairs), dtype=np.float32)
        self.net.eval()
        with self.torch.no_grad():
            for start in range(0, len(order), size):
                rows = order[start : start + size]
                out[rows] = self.top([hidden[i] for i in rows]).numpy()
        return out

    def trainable(self) -> list[Any]:
        parts = [*self.net.bert.encoder.layer[FROZEN:], self.net.bert.pooler, self.net.classifier]
        return [p for m in parts for p in m.parameters()]


def select(rows: list[list[Any]], ratio: int, depth: int) -> list[list[Any]]:
    """Positives, and negatives whose cosine rank is within `depth`; a no-answer prompt keeps its best
    `ratio` candidates, an answered one its best `ratio` non-answers."""
    out: list[list[Any]] = []
    seen: dict[str, int] = {}
    for r in rows:
        key = r[0]
        if r[2] == 1:
            out.append(r)
        elif r[4] <= depth and seen.get(key, 0) < ratio:
            seen[key] = seen.get(key, 0) + 1
            out.append(r)
    return out


def finetune(
    base: str,
    rows: list[list[Any]],
    epochs: float,
    lr: float,
    batch: int = 16,
    log: str = "",
    split: Split | None = None,
) -> Split:
    """BCE on the logit of the top layers (the bottom cached, Split), AdamW, linear warm-up and decay."""
    import torch

    torch.manual_seed(SEED)
    model = split or Split(base)
    started, cpu = time.monotonic(), time.process_time()
    hidden = model.bottom([(r[0], r[1]) for r in rows])
    print(
        f"  {log} bottom of {len(rows)} pairs: {time.monotonic() - started:.0f}s wall, "
        f"{time.process_time() - cpu:.0f}s CPU",
        flush=True,
    )
    model.net.train()
    rng = random.Random(SEED)
    steps = int(len(rows) * epochs / batch)
    opt = torch.optim.AdamW(model.trainable(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    order: list[int] = []
    started, cpu = time.monotonic(), time.process_time()
    for step in range(steps):
        if len(order) < batch:
            more = list(range(len(rows)))
            rng.shuffle(more)
            order += more
        picked, order = order[:batch], order[batch:]
        labels = torch.tensor([float(rows[i][2]) for i in picked])
        loss = loss_fn(model.top([hidden[i] for i in picked]), labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.trainable(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0:
            print(f"  {log} step {step}/{steps} loss {loss.item():.3f} ({time.monotonic() - started:.0f}s)", flush=True)
    model.net.eval()
    print(
        f"  {log} {steps} steps: {time.monotonic() - started:.0f}s wall, {time.process_time() - cpu:.0f}s CPU",
        flush=True,
    )
    return model


def rescored(rows: list[dict[str, Any]], model: Any) -> list[dict[str, Any]]:
    """`rows` (a calibrate dump) with the best 3 candidates' `best` and `masked` logits read by `model`
    as the gate reads them (gates.judged_logits, gates.entity_logits)."""
    from memories.search import gates, queries, rerank

    saved = rerank.judge.logits_many
    rerank.judge.logits_many = lambda pairs: [float(x) for x in model.logits(pairs)] if pairs else []  # type: ignore[method-assign]
    try:
        out = []
        for r in rows:
            query = queries.search_text(r["q"])
            top = r["cands"][:3]
            best = gates.judged_logits(query, [c["text"] for c in top])
            masked = gates.entity_logits(query, [(c["text"], c["names"]) for c in top])
            cands = [{**c, "best": b, "masked": m} for c, b, m in zip(top, best, masked, strict=True)]
            out.append({**r, "cands": cands + r["cands"][3:]})
        return out
    finally:
        rerank.judge.logits_many = saved  # type: ignore[method-assign]


KEYS: tuple[str, ...] = ("question r1", "question top3", "question empty", "paraphrase r1", "paraphrase top3")
KEYS += ("paraphrase empty",)
KEYS += ("long found", "unrelated leak", "near_miss leak", "long_unrelated leak")


def show(label: str, c: dict[str, int]) -> str:
    """Counts as shares: answered kinds over their prompts; leaks as the share returning nothing."""
    out = []
    for k in KEYS:
        kind, what = k.split()
        n = c.get(f"{kind} n", 0) or 1
        v = c.get(k, 0) / n
        out.append(f"{kind[:4]} nothing {1 - v:.3f}" if what == "leak" else f"{kind[:4]} {what} {v:.3f}")
    return f"{label}: " + ", ".join(out)


def loco(
    base: str,
    pairs_dir: str,
    *dumps: str,
    epochs: float = 1.0,
    lr: float = 3e-5,
    ratio: int = 3,
    depth: int = TOP,
    folds: tuple[str, ...] = (),
    save: str = "",
) -> None:
    """Leave one tuning codebase out: train on every other codebase's pairs, replay the gate on the
    left-out codebase's dump (NAME=PATH) before / after, shipped weights and refitted."""
    from bench import calibrate

    dumped = {}
    for arg in dumps:
        name, path = arg.split("=")
        with open(path) as fh:
            dumped[name] = [r for r in json.load(fh)["rows"] if r["split"] not in ("held_out", "fresh")]
    pairs_of = {p.stem: json.loads(p.read_text()) for p in sorted(Path(pairs_dir).glob("*.json"))}
    shipped, threshold, floor = calibrate.shipped_weights()
    totals: dict[str, dict[str, int]] = {}
    print(f"== epochs {epochs} lr {lr} ratio {ratio} depth {depth}")
    import copy

    split = Split(base)
    initial = copy.deepcopy(split.net.state_dict())
    for held in folds or tuple(dumped):
        rows = [r for name, p in pairs_of.items() if name != held for r in select(p, ratio, depth)]
        print(f"fold {held}: {len(rows)} training pairs, {sum(r[2] for r in rows)} positive", flush=True)
        split.net.load_state_dict(initial)
        model = finetune(base, rows, epochs, lr, log=held, split=split)
        scored = {name: rescored(d, model) for name, d in dumped.items()}
        if save:  # the left-out codebase's dump as this fold's model reads it (an out-of-fold refit)
            with open(Path(save) / f"oof_{held}.json", "w") as fh:
                json.dump({"rows": scored[held]}, fh)
        train = [r for name, d in scored.items() if name != held for r in d]
        refit = calibrate.fit_some(train, shipped, (0, 1, 2, calibrate.GENERAL, calibrate.ENTITY, 5), floor)
        before = calibrate.counts(dumped[held], shipped, threshold, floor)
        after = calibrate.counts(scored[held], shipped, threshold, floor)
        print(show(f"  {held} before", before))
        print(show(f"  {held} after, shipped weights", after))
        print("  refit " + " ".join(f"{x:.3f}" for x in refit))
        for t in (0.5, 0.6, 0.7, 0.8):
            c = calibrate.counts(scored[held], refit, t, floor)
            print(show(f"  {held} after, refit t {t}", c))
            tag = f"refit {t}"
            totals.setdefault(tag, {})
            for k, v in c.items():
                totals[tag][k] = totals[tag].get(k, 0) + v
        for tag, c in (("before", before), ("after shipped", after)):
            totals.setdefault(tag, {})
            for k, v in c.items():
                totals[tag][k] = totals[tag].get(k, 0) + v
    for tag, c in totals.items():
        print(show(f"ALL {tag}", c))


REFITS: dict[str, tuple[int, ...]] = {"logit+bias": (0, 5), "all": (0, 1, 2, 3, 4, 5)}


def oof(*dumps: str) -> None:
    """The gate refitted on out-of-fold logits: each OOF dump (NAME=PATH, `loco save:`) holds a
    codebase's candidates as the model that never saw it reads them; the weights are fitted on the
    other OOF dumps and scored on this one, beside the shipped weights at several thresholds."""
    from bench import calibrate

    sets = {}
    for arg in dumps:
        name, path = arg.split("=")
        with open(path) as fh:
            sets[name] = [r for r in json.load(fh)["rows"] if r["split"] not in ("held_out", "fresh")]
    shipped, threshold, floor = calibrate.shipped_weights()
    totals: dict[str, dict[str, int]] = {}

    def add(tag: str, c: dict[str, int]) -> None:
        totals.setdefault(tag, {})
        for k, v in c.items():
            totals[tag][k] = totals[tag].get(k, 0) + v

    for held, rows in sets.items():
        train = [r for name, other in sets.items() if name != held for r in other]
        for t in (0.7, 0.8, 0.9, 0.95):
            add(f"shipped weights t {t}", calibrate.counts(rows, shipped, t, floor))
        for family, indices in REFITS.items():
            w = calibrate.fit_some(train, shipped, indices, floor)
            print(f"{held} {family}: " + " ".join(f"{x:.3f}" for x in w))
            for t in (0.5, 0.6, 0.7, 0.8):
                add(f"refit {family} t {t}", calibrate.counts(rows, w, t, floor))
    for tag, c in totals.items():
        print(show(tag, c))


def trained(name: str) -> bool:
    """Whether a parameter is one of the fine-tuned top's (Split.trainable)."""
    if name.startswith(("bert.pooler.", "classifier.")):
        return True
    parts = name.split(".")
    return name.startswith("bert.encoder.layer.") and int(parts[3]) >= FROZEN


def requantised(w: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A float matrix as the shipped graph stores one: quantised values, scale, zero point (per tensor;
    int8 symmetric, uint8 asymmetric, as the initialiser it replaces)."""
    if dtype == np.int8:
        scale = np.float32(np.abs(w).max() / 127.0)
        return np.clip(np.round(w / scale), -127, 127).astype(np.int8), np.array(scale), np.array(0, np.int8)
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = np.float32((hi - lo) / 255.0)
    zero = np.uint8(round(-lo / scale))
    return np.clip(np.round(w / scale) + zero, 0, 255).astype(np.uint8), np.array(scale), np.array(zero)


def export(split: Split, out: Path) -> None:
    """The shipped int8 graph with the fine-tuned top's initialisers replaced (the bottom stays
    bit-identical: training read its hidden states), and its tokenizer."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(ONNX_DIR / "model.onnx"))
    init = {i.name: i for i in model.graph.initializer}
    state = {k: v.detach().numpy() for k, v in split.net.state_dict().items()}

    def put(name: str, value: np.ndarray) -> None:
        init[name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(value), name))

    replaced = 0
    for node in model.graph.node:
        if node.op_type != "MatMulInteger":
            continue
        module = ".".join(node.name.strip("/").split("/")[:-1])
        if not trained(f"{module}.weight"):
            continue
        base = node.input[1].removesuffix("_quantized")
        dtype = numpy_helper.to_array(init[base + "_quantized"]).dtype
        q, scale, zero = requantised(state[f"{module}.weight"].T, dtype)
        put(base + "_quantized", q)
        put(base + "_scale", scale.astype(np.float32))
        put(base + "_zero_point", zero.astype(dtype))
        replaced += 1
    for name, value in state.items():
        if trained(name) and name in init:
            put(name, value.astype(np.float32))
            replaced += 1
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out / "model.onnx"))
    shutil.copy(ONNX_DIR / "tokenizer.json", out / "tokenizer.json")
    print(f"wrote {out / 'model.onnx'}: {replaced} initialisers replaced")


def train(
    base: str, pairs_dir: str, out: str, epochs: float = 1.0, lr: float = 5e-5, ratio: int = 2, depth: int = 5
) -> None:
    """Train on every codebase's pairs, export (export) and compare the int8 file with the float top."""
    from memories.search import rerank

    rows = [r for p in sorted(Path(pairs_dir).glob("*.json")) for r in select(json.loads(p.read_text()), ratio, depth)]
    print(f"all codebases: {len(rows)} training pairs, {sum(r[2] for r in rows)} positive", flush=True)
    split = finetune(base, rows, epochs, lr, log="all")
    export(split, Path(out))
    pairs = tuning_pairs()
    shipped = rerank.CrossEncoder(Path(out), max_tokens=MAX_LENGTH).logits(pairs)
    floating = split.logits(pairs)
    r = float(np.corrcoef(shipped, floating)[0, 1])
    diff = np.abs(shipped - floating)
    print(f"int8 file vs float top, {len(pairs)} pairs: Pearson {r:.4f}, max |diff| {diff.max():.3f}")
    print(f"  range {shipped.min():.2f}..{shipped.max():.2f}")


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yullu_site.settings")
    django.setup()
    command, args = sys.argv[1], sys.argv[2:]
    if command == "rebuild":
        rebuild(*args)
    elif command == "verify":
        verify(*args)
    elif command == "pairs":
        pairs(args[0])
    elif command == "oof":
        oof(*args)
    elif command == "train":
        train(args[0], args[1], args[2])
    elif command == "loco":
        opts = dict(a.split(":") for a in args if a.count(":") == 1 and "=" not in a)
        loco(
            *[a for a in args if a.count(":") != 1 or "=" in a],
            epochs=float(opts.get("epochs", 1)),
            lr=float(opts.get("lr", 3e-5)),
            ratio=int(opts.get("ratio", 3)),
            depth=int(opts.get("depth", TOP)),
            folds=tuple(opts["folds"].split(",")) if "folds" in opts else (),
            save=opts.get("save", ""),
        )
    else:
        raise SystemExit(f"unknown command {command}")
