"""The local embedder's runtime: the shipped ONNX model agrees with PyTorch and is the default, concurrent
callers share forward passes but each gets its own vector, and query vectors are cached per embedder."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from django.conf import settings

from memories.embedding import embedders
from memories.embedding.batching import Batcher, VectorCache
from memories.embedding.embedders import LocalEmbedder, embed_query, get_embedder
from tests.processes import REPO

SENTENCES = [
    "We deploy with a blue-green switch behind the load balancer.",
    "Run the migrations before starting the new queue workers.",
    "Why did we pick Postgres over MongoDB for billing?",
    "The cache key must include the tenant id.",
]


def test_the_default_local_embedder_runs_on_onnx_and_agrees_with_pytorch() -> None:
    from memories.embedding.onnx_model import load_torch_model

    embedder = get_embedder(embedders.EmbedderSpec("local", "all-MiniLM-L6-v2"))
    assert settings.YULLU["embedding"]["runtime"] == "onnx"
    onnx = np.stack(embedder.embed(SENTENCES))
    assert isinstance(embedder, embedders.LocalEmbedder) and embedder._load().name == "onnx"
    reference = load_torch_model("all-MiniLM-L6-v2").encode(SENTENCES, normalize_embeddings=True)
    assert np.sum(onnx * reference, axis=1).min() >= 0.99
    # Thresholds compare two vectors: pairwise cosines must match PyTorch's, not only directions.
    assert np.abs(onnx @ onnx.T - reference @ reference.T).max() <= 0.005


def test_the_default_model_ships_in_the_package_and_embeds_without_torch(tmp_path: Any) -> None:
    probe = (
        "import sys; from pathlib import Path; from memories.embedding import onnx_model as m; "
        "build, file = m.locate(Path(sys.argv[1]), 'all-MiniLM-L6-v2'); "
        "assert build == m.SHIPPED / 'all-MiniLM-L6-v2', build; "
        "v = m.OnnxModel(build, file=file).encode(['We deploy with make ship']); "
        "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ran = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], env=env, capture_output=True, text=True)
    assert ran.stdout.strip() == "(1, 384) False False", ran.stderr
    assert not (tmp_path / "models").exists(), "the shipped model needs no export"


def test_int8_is_available_on_request_and_close_to_pytorch(settings: Any) -> None:
    from memories.embedding.onnx_model import load_torch_model

    settings.YULLU = {**settings.YULLU, "embedding": {**settings.YULLU["embedding"], "runtime": "onnx-int8"}}
    batcher = embedders._load_local("all-MiniLM-L6-v2", embedders.runtime())
    assert batcher.name == "onnx-int8"
    int8 = np.stack(batcher.embed(SENTENCES))
    reference = load_torch_model("all-MiniLM-L6-v2").encode(SENTENCES, normalize_embeddings=True)
    assert np.sum(int8 * reference, axis=1).min() >= 0.97


def test_the_onnx_build_is_exported_once_and_reused(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memories.embedding import onnx_model

    build = onnx_model.ensure_build(settings.YULLU_HOME, "all-MiniLM-L6-v2")
    assert (build / "meta.json").exists() and (build / "tokenizer.json").exists()
    monkeypatch.setattr(onnx_model, "export", lambda *a: pytest.fail("a ready build must not be exported again"))
    assert onnx_model.ensure_build(settings.YULLU_HOME, "all-MiniLM-L6-v2") == build


def test_concurrent_callers_share_passes_and_each_gets_its_own_vector() -> None:
    gate = threading.Event()
    entered: list[str] = []
    passes: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        entered.extend(texts)
        gate.wait(60)  # the first pass blocks until every caller has queued behind it
        passes.append(list(texts))
        return np.array([[float(len(t)), float(sum(map(ord, t)))] for t in texts])

    batcher = Batcher(encode, max_batch=16, wait=0.0)
    texts = [f"question number {n}" + "?" * n for n in range(9)]
    with ThreadPoolExecutor(len(texts)) as pool:
        futures = [pool.submit(batcher.embed, [t]) for t in texts]
        deadline = time.monotonic() + 60
        while len(entered) + batcher._queue.qsize() < len(texts) and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()
        results = [f.result(timeout=60) for f in futures]
    for text, (vector,) in zip(texts, results, strict=True):
        assert list(vector) == [float(len(text)), float(sum(map(ord, text)))]
    assert len(passes) <= 2, passes  # whoever came first, then everyone who queued meanwhile
    assert max(len(p) for p in passes) >= 5


def test_while_callers_come_together_a_pass_waits_for_one_arriving_after_it_began() -> None:
    """After a pass that served two callers, the next pass waits (up to busy_wait) for a caller that queues
    after it began; a lone caller's pass (the last one served only it) waits only `wait`."""
    gate, entered = threading.Event(), threading.Event()
    passes: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        if not passes:
            entered.set()
            gate.wait(60)  # the first pass blocks until two more callers queued behind it
        passes.append(sorted(texts))
        return np.ones((len(texts), 2))

    def taken(puts: int) -> bool:  # the model thread took every text queued so far
        return batcher._queue.unfinished_tasks == puts and batcher._queue.qsize() == 0

    batcher = Batcher(encode, max_batch=2, wait=0.0, busy_wait=60.0)
    deadline = time.monotonic() + 60
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.embed, ["first"])
        assert entered.wait(60)
        together = [pool.submit(batcher.embed, [t]) for t in ("second", "third")]
        while batcher._queue.qsize() < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()
        for f in [first, *together]:
            f.result(timeout=60)
        assert passes[1] == ["second", "third"] and batcher.callers_last_pass == 2
        early = pool.submit(batcher.embed, ["early"])
        while not taken(4) and time.monotonic() < deadline:
            time.sleep(0.01)
        late = pool.submit(batcher.embed, ["late"])
        early.result(timeout=60), late.result(timeout=60)
        assert passes[2] == ["early", "late"], passes  # one pass; waiting only `wait`, "early" went alone
        # A full pass (max_batch) goes at once; after a pass that served one caller the next waits only
        # `wait` (0 here: were it busy_wait, "alone" would wait 60 s and the result time out).
        assert len(pool.submit(batcher.embed, ["a", "b"]).result(timeout=30)) == 2
        assert batcher.callers_last_pass == 1
        assert len(pool.submit(batcher.embed, ["alone"]).result(timeout=30)) == 1
    assert passes[-1] == ["alone"]


def test_concurrent_callers_of_the_real_model_get_the_vector_of_their_own_text() -> None:
    embedder = get_embedder(embedders.EmbedderSpec("local", "all-MiniLM-L6-v2"))
    alone = [embedder.embed([s])[0] for s in SENTENCES]
    with ThreadPoolExecutor(len(SENTENCES)) as pool:
        together = list(pool.map(lambda s: embedder.embed([s])[0], SENTENCES * 3))
    for n, vector in enumerate(together):
        assert float(vector @ alone[n % len(SENTENCES)]) > 0.9999


def test_a_failing_pass_fails_its_callers_and_the_batcher_keeps_working() -> None:
    calls = {"n": 0}

    def encode(texts: list[str]) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("model crashed")
        return np.ones((len(texts), 3))

    batcher = Batcher(encode, wait=0.0)
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed(["first"])
    assert len(batcher.embed(["second", "third"])) == 2


class Counting:
    provider = "local"

    def __init__(self, id: str) -> None:
        self.id, self.model, self.calls = id, id, 0

    def embed(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        self.calls += 1
        return [np.full(4, float(self.calls)) for _ in texts]


def test_the_query_cache_returns_the_same_vector_and_is_keyed_by_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "query_cache", VectorCache(size=8))
    first, second = Counting("local:a"), Counting("local:b")
    v1 = embed_query(first, "how do we deploy?")
    assert np.array_equal(embed_query(first, "how do we deploy?"), v1)
    assert first.calls == 1
    embed_query(second, "how do we deploy?")
    assert second.calls == 1, "another embedder must not get the first one's vector"
    embed_query(first, "how do we release?")
    assert first.calls == 2
    with pytest.raises(ValueError):
        v1[0] = 5.0  # shared between callers: read-only


def test_the_query_cache_forgets_the_least_recently_used() -> None:
    cache = VectorCache(size=2)
    cache.put("e", "a", np.zeros(2))
    cache.put("e", "b", np.zeros(2))
    assert cache.get("e", "a") is not None  # a is now the most recent
    cache.put("e", "c", np.zeros(2))
    assert cache.get("e", "b") is None and cache.get("e", "a") is not None


def test_model_work_never_runs_on_the_calling_thread() -> None:
    seen: list[str] = []

    def model(texts: list[str]) -> np.ndarray:
        seen.append(threading.current_thread().name)
        return np.ones((len(texts), 2))

    batcher = Batcher(model)
    batcher.embed(["x"])
    assert seen and seen[0] != threading.current_thread().name


def test_the_torch_runtime_is_still_available(settings: Any) -> None:
    settings.YULLU = {**settings.YULLU, "embedding": {**settings.YULLU["embedding"], "runtime": "torch"}}
    embedder = LocalEmbedder("all-MiniLM-L6-v2")
    batcher = embedders._load_local(embedder.model, embedders.runtime())
    assert batcher.name == "torch"
    assert len(batcher.embed(["hello"])[0]) == 384
