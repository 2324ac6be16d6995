"""Questions embedded through the shipped int8 file ([embedding].query_runtime = "onnx-int8", opt-in),
stored texts through the shipped fp32-computed model: the question side is cheaper, stored vectors never
change, and without the int8 file (another model, a damaged file) questions fall back to the documents'
model with one log line."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memories.embedding import embedders, onnx_model
from memories.embedding.embedders import LocalEmbedder
from yullu_site.monitoring import health

MODEL = "all-MiniLM-L6-v2"
MEMORIES = [
    "We deploy with a blue-green switch behind the load balancer.",
    "Run the migrations before starting the new queue workers.",
    "Why did we pick Postgres over MongoDB for billing?",
    "The cache key must include the tenant id.",
]
QUESTIONS = ["how do we ship to production?", "which database do we use", "what goes into the cache key", "ok"]


def _query_runtime(settings: Any, value: str) -> None:
    settings.YULLU = {**settings.YULLU, "embedding": {**settings.YULLU["embedding"], "query_runtime": value}}


@pytest.fixture(autouse=True)
def _fresh_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test loads its own models (a fallback must not be served by another test's batcher)."""
    monkeypatch.setattr(LocalEmbedder, "_models", {})
    monkeypatch.setattr(embedders, "_said", set())


def test_questions_run_on_the_shipped_int8_file_and_memories_on_the_shipped_model(settings: Any) -> None:
    _query_runtime(settings, "onnx-int8")
    assert onnx_model.query_int8_file(MODEL) == onnx_model.SHIPPED / MODEL / "model-int8.onnx"
    embedder = LocalEmbedder(MODEL)
    assert embedder._load("query").name == "onnx-int8-query"
    assert embedder._load("document").name == "onnx"
    stored = np.stack(embedder.embed(MEMORIES))
    asked = np.stack(embedder.embed(QUESTIONS, kind="query"))
    exact = np.stack(embedder.embed(QUESTIONS))  # the same questions through the documents' model
    assert not np.array_equal(asked, exact), "questions must not go through the fp32 model"
    # What the gate and the ranking read: question-memory cosines, within what the benchmarks measured (max 0.057).
    assert np.abs(asked @ stored.T - exact @ stored.T).max() <= 0.06
    assert (np.argmax(asked @ stored.T, axis=1) == np.argmax(exact @ stored.T, axis=1)).all()


def test_query_runtime_same_embeds_questions_with_the_documents_model(settings: Any) -> None:
    _query_runtime(settings, "same")
    embedder = LocalEmbedder(MODEL)
    assert embedder._load("query") is embedder._load("document")
    assert np.array_equal(np.stack(embedder.embed(QUESTIONS, kind="query")), np.stack(embedder.embed(QUESTIONS)))


def test_without_an_int8_file_questions_use_the_documents_model_said_once(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _query_runtime(settings, "onnx-int8")
    monkeypatch.setattr(onnx_model, "SHIPPED", tmp_path)  # a package without the file (another model's case)
    caplog.set_level(logging.INFO, logger=embedders.__name__)
    assert embedders.runtime_for(MODEL, "query") == "onnx"
    assert embedders.runtime_for(MODEL, "query") == "onnx"
    said = [r.getMessage() for r in caplog.records if "ships no int8 file" in r.getMessage()]
    assert len(said) == 1, said


def test_a_damaged_int8_file_falls_back_to_the_documents_model(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _query_runtime(settings, "onnx-int8")
    shipped = tmp_path / MODEL
    shutil.copytree(onnx_model.SHIPPED / MODEL, shipped, ignore=shutil.ignore_patterns("model*.onnx"))
    (shipped / "model.onnx").symlink_to(onnx_model.SHIPPED / MODEL / "model.onnx")
    (shipped / "model-int8.onnx").write_bytes(b"not a model")
    monkeypatch.setattr(onnx_model, "SHIPPED", tmp_path)
    caplog.set_level(logging.WARNING, logger=embedders.__name__)
    embedder = LocalEmbedder(MODEL)
    assert embedder.embed(["how do we deploy"], kind="query")[0].shape == (384,)
    assert embedder._load("query").name == "onnx"
    assert any("did not load" in r.getMessage() for r in caplog.records)


def test_doctor_says_which_runtime_embeds_questions(settings: Any) -> None:
    assert health.embedder(probe=True).detail.endswith("(onnx; questions: onnx)")
    _query_runtime(settings, "onnx-int8")
    part = health.embedder(probe=True)
    assert part.detail.endswith("(onnx; questions: onnx-int8-query)"), part.detail


def test_the_setting_is_off_by_default_and_has_a_switch() -> None:
    """Off by default: on the tuning sets int8 questions let 5 of 738 prompts that should get nothing through
    (docs/benchmarks.md, issue 34 round twenty-six); a busy team server turns it on for the CPU."""
    from yullu_core.config import ENV_OVERRIDES, SCHEMA

    assert SCHEMA["embedding"]["query_runtime"].default == "same"
    assert ENV_OVERRIDES["YULLU_EMBED_QUERY_RUNTIME"] == ("embedding", "query_runtime")
