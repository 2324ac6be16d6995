"""When are two memories the same fact? Thresholds on cosine similarity, per embedder.

Chosen on the labelled pairs in bench/duplicate_pairs.py (paraphrases that must merge;
near-misses that differ in one fact, such as a port or a command name, that must not):
see docs/benchmarks.md ("Duplicate threshold") and `python -m bench.duplicate_pairs`.
Every write path (MCP, REST, admin, dreaming, import) uses these through
memories.services, so one number decides what counts as a duplicate everywhere.
"""

from __future__ import annotations

from typing import NamedTuple


class Thresholds(NamedTuple):
    duplicate: float  # at or above: the same fact, not stored twice
    related: float  # at or above (and below duplicate): reported back as `similar`


# Measured per embedder (docs/benchmarks.md). Unknown embedders get a strict duplicate bar:
# merging two different facts loses one silently, while a missed paraphrase only costs a row.
MEASURED: dict[str, Thresholds] = {
    "local:all-MiniLM-L6-v2": Thresholds(duplicate=0.90, related=0.60),
}
DEFAULT = Thresholds(duplicate=0.95, related=0.75)
MAX_SIMILAR = 3


def thresholds(embedder_id: str) -> Thresholds:
    return MEASURED.get(embedder_id, DEFAULT)
