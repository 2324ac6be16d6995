"""Does the ONNX build of the local model embed like the PyTorch one? And how fast is it?

    DJANGO_SETTINGS_MODULE=yullu_site.settings .venv/bin/python -m bench.onnx_quality [--conversations 2]

On LoCoMo dev conversations (../shared/bench/locomo_dev.json): cosine between the PyTorch and
ONNX vector of every turn and question, and dense-only retrieval of each question's evidence
among its conversation's turns (recall@10, and the overlap of the two top-10 lists). Speed:
texts per second one at a time and in passes of 16, on one thread.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np


def _recall(qv: np.ndarray, tv: np.ndarray, ids: list[str], qas: list[dict[str, Any]]) -> tuple[float, list[set]]:
    tops, hits = [], []
    for n, qa in enumerate(qas):
        top = np.argsort(-(tv @ qv[n]))[:10]
        found = {ids[i] for i in top}
        tops.append(set(int(i) for i in top))
        evidence = set(qa.get("evidence", []))
        hits.append(len(evidence & found) / max(1, len(evidence)))
    return float(np.mean(hits)), tops


def _speed(encode: Any, texts: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    for t in texts:
        encode([t])
    one = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    for i in range(0, len(texts), 16):
        encode(texts[i : i + 16])
    batched = len(texts) / (time.perf_counter() - started)
    return {"one_at_a_time_per_s": round(one, 1), "batches_of_16_per_s": round(batched, 1)}


def _variant_report(measured: dict[str, list[float]], encode: Any, sample: list[str]) -> dict[str, Any]:
    cos = np.asarray(measured["cos"])
    return {
        "cosine_vs_torch_mean": round(float(cos.mean()), 4),
        "cosine_vs_torch_min": round(float(cos.min()), 4),
        "texts": int(cos.size),
        "dense_recall@10": round(float(np.mean(measured["recall"])), 3),
        "top10_overlap_with_torch": round(float(np.mean(measured["overlap"])), 3),
        **_speed(encode, sample),
    }


def main() -> None:
    import django

    django.setup()
    import torch
    from django.conf import settings

    from bench.locomo import session_turns
    from memories.embedding.embedders import active_spec
    from memories.embedding.onnx_model import OnnxModel, ensure_build, load_torch_model

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="../shared/bench/locomo_dev.json")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = active_spec().model
    st = load_torch_model(model)
    build = ensure_build(settings.YULLU_HOME, model)
    meta = json.loads((build / "meta.json").read_text())
    variants = {name: OnnxModel(build, {**meta, "file": f"model-{name}.onnx"}, threads=1) for name in ("fp32", "int8")}

    def torch_encode(texts: list[str]) -> np.ndarray:
        return st.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)

    report: dict[str, Any] = {"model": model, "default_build": meta["file"], "variants": {}}
    data = json.loads(Path(args.data).read_text())[: args.conversations]
    per: dict[str, dict[str, list[float]]] = {v: {"cos": [], "recall": [], "overlap": []} for v in variants}
    torch_recall = []
    sample: list[str] = []
    for conv in data:
        turns = session_turns(conv)
        ids, texts = [t[0] for t in turns], [t[1] for t in turns]
        qas = [q for q in conv["qa"] if q.get("category") in (1, 2, 3, 4)]
        questions = [q["question"] for q in qas]
        sample += texts[:100]
        ref_t, ref_q = torch_encode(texts), torch_encode(questions)
        r, ref_tops = _recall(ref_q, ref_t, ids, qas)
        torch_recall.append(r)
        for name, onnx in variants.items():
            tv = np.concatenate([onnx.encode(texts[i : i + 16]) for i in range(0, len(texts), 16)])
            qv = np.concatenate([onnx.encode(questions[i : i + 16]) for i in range(0, len(questions), 16)])
            per[name]["cos"] += list(np.sum(tv * ref_t, axis=1)) + list(np.sum(qv * ref_q, axis=1))
            r, tops = _recall(qv, tv, ids, qas)
            per[name]["recall"].append(r)
            per[name]["overlap"] += [len(a & b) / 10 for a, b in zip(tops, ref_tops, strict=True)]
    report["torch"] = {"dense_recall@10": round(float(np.mean(torch_recall)), 3), **_speed(torch_encode, sample)}
    for name, onnx in variants.items():
        report["variants"][name] = _variant_report(per[name], onnx.encode, sample)
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
