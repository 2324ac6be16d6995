"""Auth-failure rate limiting, keyed so that anonymous traffic cannot lock out a token (issue 33).

Requests without a valid token (none, or a wrong one) count against their client address: after
MAX_FAILURES of them within WINDOW seconds, that address's further requests without a valid token
get 429, those without any token before the database is asked. A request with a valid token is never
refused here, whoever else failed from its address: a web page's anonymous POSTs come from the same
loopback address as the user's own assistant, so an address-wide block was a lockout anyone could
cause. A guessed token costs one indexed lookup; tokens are 32 random bytes, so guessing is not a
threat the limit has to stop, and the database check of a token is the same with or without it.

The client address is the TCP peer, or X-Forwarded-For when the peer is one of
`[server].trusted_proxies` (uvicorn applies that, configured by `uvicorn_proxy_options`).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import TypedDict

MAX_FAILURES = 20
WINDOW = 60.0
THROTTLED = "Too many failed token attempts from your address; wait a minute and try again."

_lock = threading.Lock()
_failures: dict[str, deque[float]] = defaultdict(deque)


def _prune(client: str, now: float) -> deque[float]:
    hits = _failures[client]
    while hits and now - hits[0] > WINDOW:
        hits.popleft()
    return hits


def refuse(client: str) -> int:
    """Count a request from `client` that had no valid token; its status: 401, or 429 once over the limit."""
    now = time.monotonic()
    with _lock:
        hits = _prune(client, now)
        over = len(hits) >= MAX_FAILURES
        hits.append(now)
    return 429 if over else 401


def blocked(client: str) -> bool:
    """True when `client` is over the failure limit (only ever asked for requests without a valid token)."""
    with _lock:
        return len(_prune(client, time.monotonic())) >= MAX_FAILURES


def reset() -> None:
    with _lock:
        _failures.clear()


class ProxyOptions(TypedDict):
    proxy_headers: bool
    forwarded_allow_ips: str


def uvicorn_proxy_options(trusted_proxies: list[str]) -> ProxyOptions:
    """uvicorn's proxy settings for `[server].trusted_proxies`. uvicorn's own default believes
    X-Forwarded-For from 127.0.0.1, which let any local client choose the address counted above."""
    return {"proxy_headers": bool(trusted_proxies), "forwarded_allow_ips": ",".join(trusted_proxies)}


def uvicorn_proxy_args(trusted_proxies: list[str]) -> list[str]:
    """The same as command-line flags (`yullu serve` runs uvicorn as a process)."""
    options = uvicorn_proxy_options(trusted_proxies)
    if not options["proxy_headers"]:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", "--forwarded-allow-ips", options["forwarded_allow_ips"]]
