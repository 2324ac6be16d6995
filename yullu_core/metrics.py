"""Prometheus instruments: the counters and histograms every layer observes (MCP tools, recall,
reconcile, the supervisor). Scraping them (`GET /metrics`) is yullu_site/monitoring/metrics.py.

Counters and histograms live in the process that observes them; under `yullu serve` every process
(supervisor, web workers, Celery worker) writes them to `$YULLU_HOME/run/metrics/` (prometheus_client's
multiprocess mode, set up by serve through PROMETHEUS_MULTIPROC_DIR) and a scrape sums them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram

T = TypeVar("T")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

HTTP_REQUESTS = Counter("yullu_http_requests", "HTTP requests by route", ["route", "method", "status"])
HTTP_SECONDS = Histogram("yullu_http_request_seconds", "HTTP request latency by route", ["route"])
MCP_CALLS = Counter("yullu_mcp_tool_calls", "MCP tool calls by tool and outcome", ["tool", "outcome"])
MCP_FORWARDED = Counter(
    "yullu_mcp_forwarded", "MCP requests handed to the web worker that owns their session", ["method"]
)
MCP_SECONDS = Histogram("yullu_mcp_tool_seconds", "MCP tool latency by tool", ["tool"])
RECALL_SECONDS = Histogram("yullu_recall_seconds", "Search (recall) latency, embedding included")
RECONCILE_RESULTS = Counter("yullu_reconcile_results", "Reconcile outcomes summed over passes", ["result"])
CHILD_RESTARTS = Counter("yullu_child_restarts", "Children of yullu serve restarted after exiting", ["child"])

RECONCILE_KEYS = ("events_new", "created", "updated", "deleted", "embeddings_reused", "embeddings_computed")


def timed_recall(fn: Callable[..., T]) -> Callable[..., T]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with RECALL_SECONDS.time():
            return fn(*args, **kwargs)

    return wrapper


def count_reconcile(fn: Callable[..., T]) -> Callable[..., T]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        result = fn(*args, **kwargs)
        if isinstance(result, dict):
            RECONCILE_RESULTS.labels(result="passes").inc()
            for key in RECONCILE_KEYS:
                if result.get(key):
                    RECONCILE_RESULTS.labels(result=key).inc(result[key])
            if result.get("parse_errors"):
                RECONCILE_RESULTS.labels(result="parse_errors").inc(len(result["parse_errors"]))
        return result

    return wrapper


class _Outcome:
    error = True  # until the call returns normally
    tool = ""


@contextmanager
def observe_tool(name: str) -> Iterator[_Outcome]:
    """Count and time one MCP tool call; `outcome.error` is set by the caller from the result."""
    outcome = _Outcome()
    outcome.tool = name
    started = time.perf_counter()
    try:
        yield outcome
    finally:
        MCP_SECONDS.labels(tool=outcome.tool).observe(time.perf_counter() - started)
        MCP_CALLS.labels(tool=outcome.tool, outcome="error" if outcome.error else "ok").inc()
