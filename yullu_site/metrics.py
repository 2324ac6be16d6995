"""Prometheus metrics (`GET /metrics`, bearer token like /api).

Counters and histograms live in the process that observes them; under `yullu serve` every process
(supervisor, web workers, Celery worker) writes them to `$YULLU_HOME/run/metrics/` (prometheus_client's
multiprocess mode, set up by serve through PROMETHEUS_MULTIPROC_DIR) and a scrape sums them.
Figures that the database already knows (memories per project, dream passes, queue depth) are read
from it at scrape time, so they are right whichever process answers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

T = TypeVar("T")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

HTTP_REQUESTS = Counter("yullu_http_requests", "HTTP requests by route", ["route", "method", "status"])
HTTP_SECONDS = Histogram("yullu_http_request_seconds", "HTTP request latency by route", ["route"])
MCP_CALLS = Counter("yullu_mcp_tool_calls", "MCP tool calls by tool and outcome", ["tool", "outcome"])
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


class DatabaseCollector:
    """What the database knows, read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from django.db.models import Count, Q

        from dreaming.models import DreamPass
        from memories.models import Memory

        per_project = GaugeMetricFamily("yullu_memories", "Memories per project", labels=["project_id"])
        for row in Memory.objects.values("project_id").annotate(n=Count("id")).order_by():
            per_project.add_metric([row["project_id"]], row["n"])
        yield per_project
        passes = CounterMetricFamily("yullu_dream_passes", "Dream passes by trigger", labels=["trigger"])
        failed = CounterMetricFamily("yullu_dream_pass_errors", "Dream passes that failed or reported errors",
                                     labels=["trigger"])  # fmt: skip
        rows = DreamPass.objects.values("trigger").annotate(
            n=Count("id"), bad=Count("id", filter=Q(phase="failed") | ~Q(errors=[]))
        )
        for by_trigger in rows.order_by():
            passes.add_metric([by_trigger["trigger"]], by_trigger["n"])
            failed.add_metric([by_trigger["trigger"]], by_trigger["bad"])
        yield passes
        yield failed
        depth = _queue_depth()
        if depth is not None:
            yield GaugeMetricFamily("yullu_queue_depth", "Tasks waiting in the default broker", value=depth)


def _queue_depth() -> int | None:
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("yullupg://"):
        return None  # Redis: watch it with its own exporter
    from .broker import queue_depth

    return queue_depth()


class _ThisProcess:
    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def render() -> tuple[bytes, str]:
    registry = CollectorRegistry()
    if os.environ.get(MULTIPROC_ENV):
        MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST


def request_metrics(get_response: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Middleware: count and time every Django request by its URL pattern (never the raw path, so
    ids in URLs do not grow the label set)."""

    def middleware(request: Any) -> Any:
        started = time.perf_counter()
        response = get_response(request)
        match = getattr(request, "resolver_match", None)
        route = "/" + match.route if match is not None and match.route else "unmatched"
        HTTP_REQUESTS.labels(route=route, method=request.method, status=str(response.status_code)).inc()
        HTTP_SECONDS.labels(route=route).observe(time.perf_counter() - started)
        return response

    return middleware


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
