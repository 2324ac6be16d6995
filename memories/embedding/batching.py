"""Micro-batching of concurrent embedding calls, and an LRU cache of query vectors.

Web requests embed their query from worker threads (never on the event loop). Instead of each
thread running its own forward pass (and the passes fighting over the same cores), callers
queue their texts and one model thread runs them together: whatever queued up while the
previous pass ran, plus whatever arrives within `wait` seconds, up to `max_batch` texts per
pass. With one caller the only cost is that wait (1 ms); under load, 20 queries cost about
as much as a few. While callers come together (the last pass served two or more), a pass
waits up to `busy_wait` (10 ms) for more: a pass has a fixed cost that its texts share (the
model's weights are read once per pass: ~2.4 of the 3.2 ms CPU of a 3-token text alone, 1.4 ms
a text in a pass of four), and a lone caller still waits only `wait`. A text's vector does
not depend on its batch-mates beyond float rounding (docs/decisions.md), so results are the
same; only the CPU per text falls (docs/benchmarks.md, issue 34 round eighteen).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np

Encode = Callable[[list[str]], np.ndarray]


class Batcher:
    def __init__(
        self, encode: Encode, *, max_batch: int = 16, wait: float = 0.001, busy_wait: float = 0.01, name: str = "embed"
    ) -> None:
        self.encode = encode
        self.name = name
        self.max_batch = max_batch
        self.wait = wait
        self.busy_wait = busy_wait
        self.callers_last_pass = 0  # callers the last pass served: two or more, and the next one waits busy_wait
        self.passes = 0  # forward passes run (tests and benchmarks read it)
        self._queue: queue.Queue[tuple[list[str], Future[list[np.ndarray]]]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"yullu-{name}-batcher", daemon=True)
        self._thread.start()

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Blocks the calling thread until its own vectors are ready (in the order of `texts`)."""
        if not texts:
            return []
        done: Future[list[np.ndarray]] = Future()
        self._queue.put((list(texts), done))
        return done.result()

    def _run(self) -> None:
        while True:
            jobs = [self._queue.get()]
            size = len(jobs[0][0])
            deadline = time.monotonic() + (self.busy_wait if self.callers_last_pass > 1 else self.wait)
            while size < self.max_batch:
                try:
                    job = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                jobs.append(job)
                size += len(job[0])
            self.callers_last_pass = len(jobs)
            self._serve(jobs)

    def _serve(self, jobs: list[tuple[list[str], Future[list[np.ndarray]]]]) -> None:
        texts = [t for job_texts, _ in jobs for t in job_texts]
        try:
            # Similar lengths in one pass: less padding. Passes of at most max_batch texts.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            vectors: list[np.ndarray] = [np.empty(0)] * len(texts)
            for start in range(0, len(order), self.max_batch):
                chunk = order[start : start + self.max_batch]
                out = self.encode([texts[i] for i in chunk])
                self.passes += 1
                for i, vec in zip(chunk, out, strict=True):
                    vectors[i] = vec
        except BaseException as exc:  # every waiting caller gets the error, the thread lives on
            for _, done in jobs:
                done.set_exception(exc)
            return
        at = 0
        for job_texts, done in jobs:
            done.set_result(vectors[at : at + len(job_texts)])
            at += len(job_texts)


class VectorCache:
    """Recent query vectors, keyed by embedder id and text (a different model never hits)."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, embedder_id: str, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._items.get((embedder_id, text))
            if vec is None:
                self.misses += 1
                return None
            self._items.move_to_end((embedder_id, text))
            self.hits += 1
            return vec

    def put(self, embedder_id: str, text: str, vector: np.ndarray) -> np.ndarray:
        vector = np.array(vector, dtype=np.float32)
        vector.flags.writeable = False  # shared between callers: nobody may change it in place
        with self._lock:
            self._items[(embedder_id, text)] = vector
            self._items.move_to_end((embedder_id, text))
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
