"""Auth-failure rate limiting (per process, per client address).

After MAX_FAILURES bad tokens within WINDOW seconds from one address, further requests
from it that do not carry a recently verified token get 429 without touching the
database. Recently verified tokens keep working, so a misconfigured hook on the same
loopback address cannot lock out the user's working clients.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

MAX_FAILURES = 20
WINDOW = 60.0
VERIFIED_TTL = 300.0

_lock = threading.Lock()
_failures: dict[str, deque[float]] = defaultdict(deque)
_verified: dict[str, float] = {}


def _prune(client: str, now: float) -> deque[float]:
    hits = _failures[client]
    while hits and now - hits[0] > WINDOW:
        hits.popleft()
    return hits


def record_failure(client: str) -> None:
    now = time.monotonic()
    with _lock:
        _prune(client, now).append(now)


def record_success(token_hash: str) -> None:
    with _lock:
        _verified[token_hash] = time.monotonic() + VERIFIED_TTL


def blocked(client: str, token_hash: str) -> bool:
    """True when `client` is over the failure limit and this token was not verified recently."""
    now = time.monotonic()
    with _lock:
        if _verified.get(token_hash, 0.0) > now:
            return False
        return len(_prune(client, now)) >= MAX_FAILURES


def reset() -> None:
    with _lock:
        _failures.clear()
        _verified.clear()
