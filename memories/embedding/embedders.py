"""Embedders behind one interface. Vectors come back unit-normalised (float32).

Never call `embed()` inside a database transaction: remote calls are slow and
may fail; callers embed first, then write.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from yullu_core.errors import Unavailable, optional_module

from ..usage import EMBED_PRICES, record_usage
from .batching import Batcher, VectorCache

log = logging.getLogger(__name__)

DEFAULT_MODELS = {
    "local": "all-MiniLM-L6-v2",
    "voyage": "voyage-code-3",
    "openai": "text-embedding-3-small",
    "none": "keyword-only",
}


class Embedder(Protocol):
    id: str
    provider: str
    model: str

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]: ...


def normalise(matrix: np.ndarray) -> list[np.ndarray]:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return list(matrix / norms)


# Measured on 2 CPU cores with conversation turns: 96/s one by one, 164/s at 16, 134/s at 64, 101/s at 128.
LOCAL_BATCH = 16


class LocalEmbedder:
    """A sentence-transformers model as ONNX (default all-MiniLM-L6-v2, shipped in this package;
    others exported from their PyPI wheel); offline, no usage cost. Runs on ONNX Runtime
    (memories/embedding/onnx_model.py) unless [embedding].runtime = "torch" (the export extra). Concurrent
    calls share forward passes (memories/embedding/batching.py), run on one model thread per runtime:
    questions (kind "query") go through the shipped int8 file when [embedding].query_runtime says so, stored
    texts through `runtime`, so stored vectors never change with the setting."""

    provider = "local"
    _lock = threading.Lock()
    _models: dict[tuple[str, str], Any] = {}

    def __init__(self, model: str) -> None:
        self.model = model
        self.id = f"local:{model}"

    def _load(self, kind: str = "document") -> Any:
        wanted = runtime_for(self.model, kind)
        with self._lock:
            if (self.model, wanted) not in self._models:
                started = time.monotonic()
                self._models[self.model, wanted] = _load_local(self.model, wanted)
                log.info("local embedder (%s) loaded in %.1fs", wanted, time.monotonic() - started)
            return self._models[self.model, wanted]

    def loaded(self) -> bool:
        return any(loaded == self.model for loaded, _ in self._models)

    calls = 0  # embed calls made by this process (benchmarks read it)

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        if not texts:
            return []
        LocalEmbedder.calls += 1
        return normalise(np.asarray(self._load(kind).embed(texts)))


def runtime() -> str:
    return settings.YULLU["embedding"].get("runtime", "onnx")


QUERY_INT8 = "onnx-int8-query"  # the shipped int8 file, for questions only (never for stored texts)
_said: set[str] = set()  # models whose fallback to `runtime` for questions was logged (once a process)


def runtime_for(model: str, kind: str) -> str:
    """The runtime that embeds `kind` ("query" or "document"). Questions go through the shipped int8 file when
    query_runtime = "onnx-int8" (opt-in, for a busy team server) and the documents run on plain ONNX
    (docs/decisions.md: it moves question-memory cosines by 0.006 on average; a few prompts at the gate's edge
    change); without that file (another model) they use `runtime()`."""
    base = runtime()
    if kind != "query" or base != "onnx" or settings.YULLU["embedding"].get("query_runtime", "same") != "onnx-int8":
        return base
    from .onnx_model import query_int8_file

    if query_int8_file(model) is None:
        if model not in _said:
            _said.add(model)
            log.info("query_runtime onnx-int8: %s ships no int8 file, questions use the %s runtime", model, base)
        return base
    return QUERY_INT8


def _load_local(model: str, kind: str) -> Batcher:
    from .onnx_model import OnnxModel, load_torch_model, locate, query_int8_file

    # Forward passes of at most LOCAL_BATCH texts: on a CPU, bigger batches only add padding work.
    batch = min(settings.YULLU["embedding"]["batch_size"], LOCAL_BATCH)
    if kind == "torch":
        st = load_torch_model(model)
        return Batcher(
            lambda texts: st.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True),
            max_batch=batch,
            name="torch",
        )
    if kind == QUERY_INT8:
        shipped = query_int8_file(model)
        assert shipped is not None  # runtime_for() checked
        try:
            return Batcher(OnnxModel(shipped.parent, file=shipped.name).encode, max_batch=batch, name=kind)
        except Exception as exc:  # a damaged file: questions still get answered, by the documents' model
            log.warning("query_runtime onnx-int8: %s did not load (%s); questions use the onnx runtime", shipped, exc)
            kind = "onnx"
    # "onnx": the shipped model (or the build export() chose); "onnx-int8": int8.
    build, file = locate(settings.YULLU_HOME, model, int8=kind == "onnx-int8")
    onnx = OnnxModel(build, file=file)
    return Batcher(onnx.encode, max_batch=batch, name=kind)


# Recent query vectors (retrieval asks the same questions again: hooks, retries, dashboards).
query_cache = VectorCache()


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """One query's vector, from the cache when this embedder embedded the same text recently."""
    vec = query_cache.get(embedder.id, text)
    if vec is None:
        vec = query_cache.put(embedder.id, text, embedder.embed([text], kind="query")[0])
    return vec


class RemoteEmbedder:
    """Voyage or any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, llama.cpp, vLLM)."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.id = f"{provider}:{model}"

    def _client(self) -> Any:
        section = settings.YULLU[self.provider]
        key = section["api_key"]
        base_url = section["base_url"] or None
        if self.provider == "openai":
            openai = optional_module("openai", "openai", "the openai embedder")
            return openai.OpenAI(api_key=key or "none", base_url=base_url, timeout=30, max_retries=2)
        voyageai = optional_module("voyageai", "voyage", "the voyage embedder")
        if not key:
            raise Unavailable("the voyage embedder needs an API key: set VOYAGE_API_KEY.")
        return voyageai.Client(api_key=key, max_retries=2, timeout=30)

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        if not texts:
            return []
        started = time.monotonic()
        try:
            vectors, tokens = self._call(texts, kind)
        except Unavailable:
            raise
        except Exception as exc:
            message = _describe_provider_error(self.provider, exc)
            record_usage(self.provider, self.model, "embed", started, error=message)
            raise Unavailable(message) from None
        cost = tokens * EMBED_PRICES.get(self.model, 0) // 10**6
        record_usage(self.provider, self.model, "embed", started, tokens_in=tokens, cost=cost)
        return normalise(np.asarray(vectors))

    def _call(self, texts: list[str], kind: str) -> tuple[list[list[float]], int]:
        client = self._client()
        batch = settings.YULLU["embedding"]["batch_size"]
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), batch):
            chunk = texts[start : start + batch]
            if self.provider == "openai":
                resp = client.embeddings.create(model=self.model, input=chunk)
                vectors.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
                tokens += getattr(resp.usage, "prompt_tokens", 0) or 0
            else:
                resp = client.embed(chunk, model=self.model, input_type="query" if kind == "query" else "document")
                vectors.extend(resp.embeddings)
                tokens += resp.total_tokens or 0
        return vectors, tokens


def _describe_provider_error(provider: str, exc: Exception) -> str:
    name = type(exc).__name__
    text = str(exc).lower()
    if "auth" in name.lower() or "401" in text or "api key" in text:
        return f"the {provider} embedder rejected the API key; check [{provider}].api_key or its environment variable."
    if "connect" in name.lower() or "connection" in text or "timeout" in name.lower():
        return f"the {provider} embedder is unreachable ({name}); check the network or [{provider}].base_url."
    return f"the {provider} embedder failed ({name}); see the server log."


class NoEmbedder:
    """Keyword-only mode: nothing is embedded and search uses full-text only."""

    provider = "none"
    model = "keyword-only"
    id = "none:keyword-only"

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        return []


@dataclass(frozen=True)
class EmbedderSpec:
    provider: str
    model: str


_cache: dict[EmbedderSpec, Embedder] = {}


def active_spec() -> EmbedderSpec:
    cfg = settings.YULLU["embedding"]
    provider = cfg["provider"]
    return EmbedderSpec(provider, cfg["model"] or DEFAULT_MODELS[provider])


def get_embedder(spec: EmbedderSpec | None = None) -> Embedder:
    spec = spec or active_spec()
    if spec not in _cache:
        if spec.provider == "local":
            _cache[spec] = LocalEmbedder(spec.model)
        elif spec.provider == "none":
            _cache[spec] = NoEmbedder()
        else:
            _cache[spec] = RemoteEmbedder(spec.provider, spec.model)
    return _cache[spec]


def embeds(embedder: Embedder) -> bool:
    return embedder.provider != "none"


def warm_up() -> None:
    embedder = get_embedder()
    if isinstance(embedder, LocalEmbedder):
        embedder.embed(["warm up"])
        embedder.embed(["warm up"], kind="query")  # the questions' model, when it is another one


def embedder_status() -> dict[str, Any]:
    embedder = get_embedder()
    info: dict[str, Any] = {"id": embedder.id, "provider": embedder.provider}
    if isinstance(embedder, LocalEmbedder):
        info["loaded"] = embedder.loaded()
        info["ok"] = embedder.loaded()
        info["runtime"] = runtime()
        info["query_runtime"] = runtime_for(embedder.model, "query")
    elif isinstance(embedder, RemoteEmbedder):
        info["key_set"] = bool(settings.YULLU[embedder.provider]["api_key"]) or embedder.provider == "openai"
        info["ok"] = info["key_set"]
    else:
        info["ok"] = True
    return info
